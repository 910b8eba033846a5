#pragma once
// Flight Recorder view: a trace read from NCCL Flight Recorder dumps (trace::ReadAnyTrace) drawn as
// one lane per rank with its collectives on the time axis, the incomplete ones (scheduled or
// started, never completed) filled red and run to the end of the axis, an empty dashed slot in a
// missing rank's lane where the others entered the collective it never joined, and the mismatch
// list of trace::CheckTrace (Flight Recorder's classes, culprits, first divergent seq) beside it.
// Opening dumps lands on trace::TriageModel's result (docs/triage.md): the culprits' lanes marked
// and scrolled into view, the victims' labels dimmed, the verdict and root causes above the list.
// Lanes scroll (only the visible ones are drawn) and "go to rank" scrolls to a lane.

#include <cstdint>
#include <string>
#include <vector>

#include "app_state.hpp"
#include "rank_palette.hpp"
#include "shardscope/trace/check.hpp"
#include "shardscope/trace/triage.hpp"

namespace shardscope::app::gui {

/// Fill of an incomplete collective and outline of a missing rank's slot.
inline constexpr Rgb kFlightIncomplete{225, 60, 60};
/// Lane background of the flight view (what an empty slot shows inside its outline).
inline constexpr Rgb kFlightLaneBackground{34, 36, 42};

/// One collective of one rank on the time axis (ns relative to the view's t0).
struct FlightSpan {
  int64_t rank = 0, start = 0, end = 0, seq = 0;
  bool incomplete = false;
  std::string kind, pg, label;
};

/// A rank's empty slot at a collective it never joined (from a missing_ranks mismatch).
struct FlightSlot {
  int64_t rank = 0, start = 0, end = 0, seq = 0;
  std::string pg;
};

/// Marks of a culprit lane (triage's root cause) and its label.
inline constexpr Rgb kFlightCulprit{255, 64, 160};

/// What the last Draw put on screen ("span", "slot", "mismatch", "culprit_lane": a culprit's lane
/// when it is in view, "triage": the triage verdict box), for --geometry and the tests.
struct FlightItemGeometry {
  std::string kind;
  int64_t rank = -1, seq = -1;
  bool incomplete = false;
  float x0 = 0, y0 = 0, x1 = 0, y1 = 0;
};

/// The flight panel. Main thread only.
class FlightPanel {
 public:
  /// Rebuilds spans, slots and the check when the model changed. No ImGui calls.
  void Prepare(const ViewContext& ctx);
  /// Draws the lanes and the mismatch list into the remaining region of the current window.
  void Draw(ViewContext& ctx);
  /// True when some collective of the model carries a flight record (trace::HasFlightRecords).
  bool Active() const { return active_; }
  /// True when those collectives are all the model holds (no redistribute, no op: a Flight Recorder
  /// import): the flight view then fills the main window. Otherwise it is one panel among the others.
  bool OwnsMain() const { return owns_main_; }
  const std::vector<FlightItemGeometry>& geometry() const { return geometry_; }

 private:
  void DrawLanes(float width, float height);
  void DrawMismatches(float height);

  const void* key_model_ = nullptr;
  uint64_t key_serial_ = 0;  // ViewContext::model_serial of key_model_
  bool active_ = false, owns_main_ = false;
  int64_t world_ = 0, t_end_ = 1;
  std::vector<FlightSpan> spans_;
  std::vector<FlightSlot> slots_;
  trace::CheckResult check_;
  std::vector<FlightItemGeometry> geometry_;
  trace::TriageResult triage_;
  std::vector<char> is_culprit_, is_victim_;  // per rank
  int64_t scroll_to_rank_ = -1;               // the lane to bring into view on the next Draw
  int go_to_rank_ = 0;
};

}  // namespace shardscope::app::gui
