#pragma once
// Timeline: one lane per rank, redistributes as bars and their collectives as slices on a shared
// time axis; wheel or +/- zooms, drag or A/D pans, hover for details, click to select.

#include <cstdint>
#include <string>
#include <vector>

#include "app_state.hpp"
#include "timeline_model.hpp"

struct ImDrawList;

namespace shardscope::app::gui {

/// The timeline panel. Main thread only.
class TimelinePanel {
 public:
  /// Rebuilds lanes when the model changed. No ImGui calls.
  void Prepare(const ViewContext& ctx);
  /// Draws lanes into the remaining region of the current window.
  void Draw(ViewContext& ctx);
  /// The redistribute whose bars the last Draw highlighted.
  PanelShows shows() const { return shows_; }

 private:
  PanelShows shows_;
  void PrepareCursor(const ViewContext& ctx);
  void DrawCursorAndLegend(ImDrawList* list, float x0, float x1, float top, float bottom, float axis_y,
                           double view_start, double span, float lane_h, float scroll_y) const;

  const void* key_model_ = nullptr;

  uint64_t key_serial_ = 0;  // ViewContext::model_serial of key_model_
  TimelineData data_;
  std::vector<std::string> kinds_;  ///< collective kinds in the model (the legend)
  // The selected step's cursor: from the first rank entering it to the last leaving it, and the
  // skew between the first and the last rank to enter (stragglers), absolute ns.
  const void* cursor_model_ = nullptr;
  uint64_t cursor_serial_ = 0;  // ViewContext::model_serial of cursor_model_
  int64_t cursor_id_ = -2, cursor_step_ = -2;
  bool has_cursor_ = false;
  int64_t cursor_t0_ = 0, cursor_t1_ = 0, cursor_last_enter_ = 0;
  /// Flow lines: per group of the step's first collective, (rank, start ns) of each member, by rank.
  std::vector<std::vector<std::pair<int64_t, int64_t>>> flows_;
  double view_start_ = 0, view_end_ = 1;  ///< visible range, ns relative to t0
  float scroll_y_ = 0;
  bool dragging_ = false;
};

}  // namespace shardscope::app::gui
