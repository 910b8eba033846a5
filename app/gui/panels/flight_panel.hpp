#pragma once
// Flight Recorder view: a trace read from NCCL Flight Recorder dumps (trace::ReadAnyTrace) drawn as
// one lane per rank with its collectives on the time axis, the incomplete ones (scheduled or
// started, never completed) filled red and run to the end of the axis, an empty dashed slot in a
// missing rank's lane where the others entered the collective it never joined, size / dtype / kind
// mismatches badged on the offending rank's collective, and the mismatch list of trace::CheckTrace
// beside it. Above 64 ranks the lanes are grouped as the timeline groups them (a group lane shows
// its members' finished and stuck collectives; click its label to expand it). Opening dumps lands on
// trace::TriageModel's result (docs/triage.md): the culprits' groups expanded, their lanes marked and
// scrolled into view, the victims' labels dimmed, the verdict and root causes above the list.
// Lanes scroll (only the visible ones are drawn); "go to rank" (G focuses it) and "culprit" scroll
// to a lane.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "app_state.hpp"
#include "flight_load.hpp"
#include "flight_view_model.hpp"
#include "rank_palette.hpp"
#include "shardscope/trace/check.hpp"
#include "shardscope/trace/triage.hpp"

namespace shardscope::app::gui {

/// Fill of an incomplete collective and outline of a missing rank's slot.
inline constexpr Rgb kFlightIncomplete{225, 60, 60};
/// Lane background of the flight view (what an empty slot shows inside its outline).
inline constexpr Rgb kFlightLaneBackground{34, 36, 42};
/// Marks of a culprit lane (triage's root cause) and its label.
inline constexpr Rgb kFlightCulprit{255, 64, 160};
/// Badge and outline of a collective whose size, dtype or kind differs from its group's.
inline constexpr Rgb kFlightMismatch{255, 196, 40};

/// What the last Draw put on screen, for --geometry and the tests: "span", "label", "slot",
/// "mark" (label: size, dtype or kind), "row" (a lane's label cell; rank -1 for a group row, seq =
/// the group, label the text), "culprit_lane" (a culprit's lane when it is in view: its swatch),
/// "lanes" (the visible lane area under the axis), "goto" and "goto_culprit" (the controls),
/// "mismatch", "triage" (the verdict box).
struct FlightItemGeometry {
  std::string kind;
  int64_t rank = -1, seq = -1;
  bool incomplete = false;
  float x0 = 0, y0 = 0, x1 = 0, y1 = 0;
  std::string label;
};

/// The flight panel. Main thread only.
class FlightPanel {
 public:
  /// Takes the model's check, triage and lanes when the model changed: `analysis` when given (the
  /// loader computed it off the main thread), else computed here. No ImGui calls.
  void Prepare(const ViewContext& ctx, std::shared_ptr<const FlightAnalysis> analysis = nullptr);
  /// Draws what is read so far while Flight Recorder dumps load (`loader_path`: what is loading):
  /// a cell per rank (read, stuck, not read yet), go to rank, triage's verdict once known, and the
  /// process groups with where their read ranks stand, least advanced first.
  void DrawLoading(const FlightLoadSnapshot& snapshot, const std::string& loader_path, double elapsed_s);
  /// Draws the lanes and the mismatch list into the remaining region of the current window.
  void Draw(ViewContext& ctx);
  /// True when some collective of the model carries a flight record (trace::HasFlightRecords).
  bool Active() const { return active_; }
  /// True when those collectives are all the model holds (no redistribute, no op: a Flight Recorder
  /// import): the flight view then fills the main window. Otherwise it is one panel among the others.
  bool OwnsMain() const { return owns_main_; }
  const std::vector<FlightItemGeometry>& geometry() const { return geometry_; }

 private:
  void DrawControls();
  void DrawLegend();
  void DrawLanes(float width, float height);
  void DrawMismatches(float height);
  void GoToRank(int64_t rank);
  void RebuildRows();

  const void* key_model_ = nullptr;
  uint64_t key_serial_ = 0;  // ViewContext::model_serial of key_model_
  bool active_ = false, owns_main_ = false;
  const FlightViewData& data() const { return analysis_ ? analysis_->data : kNoData; }
  const trace::CheckResult& check() const { return analysis_ ? analysis_->check : kNoCheck; }
  const trace::TriageResult& triage() const { return analysis_ ? analysis_->triage : kNoTriage; }
  void DrawLoadingGrid(const FlightLoadSnapshot& s, float width, float height);
  void DrawLoadingGroups(const FlightLoadSnapshot& s, float height);

  static inline const FlightViewData kNoData{};
  static inline const trace::CheckResult kNoCheck{};
  static inline const trace::TriageResult kNoTriage{};
  std::shared_ptr<const FlightAnalysis> analysis_;
  std::vector<bool> expanded_;  // per group
  std::vector<TimelineRow> rows_;
  std::vector<int32_t> row_of_rank_;
  std::vector<FlightItemGeometry> geometry_;
  int64_t scroll_to_rank_ = -1;  // the lane to bring into view on the next Draw
  int scroll_tries_ = 0;         // frames spent bringing it into view
  int64_t goto_rank_ = -1;       // the rank gone to (outlined)
  size_t next_culprit_ = 0;      // the culprit the "culprit" button goes to next
  int go_to_rank_ = 0;
  bool focus_goto_ = false;
};

}  // namespace shardscope::app::gui
