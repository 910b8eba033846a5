#pragma once
// Timeline: one lane per rank (above kTimelineGroupAbove ranks one lane per group of the leading
// mesh dim, expandable), redistributes as bars and their collectives as slices on a shared time
// axis; spans narrower than a pixel are merged. Wheel or +/- zooms, drag or A/D pans, F zooms to
// the selection, 0 fits the trace, G or Ctrl+G goes to a rank, dragging on the time axis (or with
// Shift) measures a range; hover for details, click to select; the scrollbar or the wheel over the
// labels scrolls the lanes.

#include <cstdint>
#include <string>
#include <vector>

#include "app_state.hpp"
#include "timeline_model.hpp"

struct ImDrawList;

namespace shardscope::app::gui {

/// A row the last Draw put on screen (for --geometry).
struct TimelineRowGeometry {
  int32_t group = -1;  ///< the group of a group row, or of a rank row (-1: no groups)
  int64_t rank = -1;   ///< -1 for a group row
  std::string label;
  float x0 = 0, y0 = 0, x1 = 0, y1 = 0;  ///< the row's label cell
};

/// What the last Draw showed (for --geometry): the plot's pixels and time range, the rows.
struct TimelineGeometry {
  float plot_x0 = 0, plot_x1 = 0, y0 = 0, y1 = 0;  ///< time plot (right of the labels, under the axis)
  double view_start_ns = 0, view_end_ns = 0;       ///< visible range, ns from the trace start
  int64_t trace_ns = 0;                            ///< t1 - t0
  size_t rows = 0, first_row = 0;                  ///< rows in all, first one drawn
  std::vector<int32_t> expanded;                   ///< expanded groups
  std::vector<TimelineRowGeometry> visible;        ///< rows drawn, top to bottom
  bool has_measure = false;
  double measure_start_ns = 0, measure_end_ns = 0;  ///< ns from the trace start, start <= end
  int64_t goto_rank = -1;                           ///< last rank gone to (-1: none)
  std::string goto_error;                           ///< "" unless the rank typed is out of range
  bool scrollbar = false;                           ///< drawn (more rows than fit)
};

/// The timeline panel. Main thread only.
class TimelinePanel {
 public:
  /// Rebuilds lanes when the model changed. No ImGui calls.
  void Prepare(const ViewContext& ctx);
  /// Draws lanes into the remaining region of the current window.
  void Draw(ViewContext& ctx);
  /// The redistribute whose bars the last Draw highlighted.
  PanelShows shows() const { return shows_; }
  const TimelineGeometry& geometry() const { return geometry_; }
  /// The next model is the same trace re-read (--follow): keep the visible time range, lanes and
  /// groups, or follow the newest time when the view reached the trace's end.
  void KeepViewAcrossReload() { keep_view_ = true; }
  /// Drops the measured range (Esc).
  void ClearMeasure() { has_measure_ = measuring_ = false; }

 private:
  /// The hovered item of a lane: a span (rank lane) or a union (group lane), `count` > 1 when
  /// sub-pixel spans were merged into it.
  struct Hit {
    const TimelineSpan* span = nullptr;
    const GroupSpan* group_span = nullptr;
    size_t count = 0;
    int64_t start = 0, end = 0;
    TimelineRow row;
  };
  /// Pixels and range of the frame being drawn.
  struct Frame {
    float x0 = 0, x1 = 0, y0 = 0, bottom = 0, lane_h = 0, label_x = 0;
    double span = 1;
    int64_t vs = 0, ve = 0;
    float to_x(int64_t t, const TimelineData& d, double view_start) const {
      return x0 + static_cast<float>((static_cast<double>(t - d.t0) - view_start) / span * (x1 - x0));
    }
  };

  PanelShows shows_;
  TimelineGeometry geometry_;
  void PrepareCursor(const ViewContext& ctx);
  void DrawCursorAndLegend(ImDrawList* list, float x0, float x1, float top, float bottom, float axis_y,
                           double view_start, double span, float lane_h, float scroll_y) const;
  void HandleNavigation(const ViewContext& ctx, const Frame& f, float scrollbar_x);
  void DrawGoTo(float x, float y, float w);
  void GoToRank(ViewContext& ctx, int64_t rank, float lane_h, float plot_h);
  void ZoomToSelection(const ViewContext& ctx);
  /// A selection made elsewhere (list, search, keys, program) that lies outside the visible range
  /// brings it into view: centred at the same zoom when it fits, else zoomed to.
  void FollowSelection(const ViewContext& ctx);
  void DrawLanes(ViewContext& ctx, ImDrawList* list, const Frame& f, bool hovered, Hit& hit);
  void DrawLabels(ViewContext& ctx, ImDrawList* list, const Frame& f);
  void DrawMeasure(ImDrawList* list, const Frame& f, float axis_top) const;
  void DrawScrollbar(ImDrawList* list, const Frame& f, float x, float content_h) const;
  void DrawTooltip(const ViewContext& ctx, const Hit& hit) const;
  void DrawGroupTooltip(const Frame& f) const;  ///< hovering a group's label
  void RecordGeometry(const Frame& f, bool scrollbar);
  void Select(ViewContext& ctx, const Hit& hit) const;
  void RebuildRows();
  float RowY(int64_t rank, float lane_h) const;  ///< top of a rank's row (or its group's), before scrolling

  const void* key_model_ = nullptr;

  uint64_t key_serial_ = 0;  // ViewContext::model_serial of key_model_
  TimelineData data_;
  std::vector<std::string> kinds_;  ///< collective kinds in the model (the legend)
  std::vector<bool> expanded_;      ///< per group
  std::vector<TimelineRow> rows_;
  std::vector<int32_t> row_of_rank_;  ///< each rank's row, or its collapsed group's
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
  bool scrolling_ = false;  ///< dragging the scrollbar
  bool measuring_ = false;  ///< dragging a measured range
  bool has_measure_ = false;
  double measure_a_ = 0, measure_b_ = 0;  ///< ns relative to t0, in drag order
  char goto_text_[16] = {};
  bool focus_goto_ = false;
  bool goto_active_ = false;  ///< the go-to field has the keyboard
  int64_t goto_rank_ = -1;
  int64_t pending_goto_ = -1;                    ///< rank to scroll to on the next Draw
  std::string goto_error_;                       ///< the rank typed is out of range: said beside the field
  bool keep_view_ = false;                       ///< see KeepViewAcrossReload
  int64_t followed_id_ = -2, followed_op_ = -2;  ///< the selection FollowSelection last saw
};

}  // namespace shardscope::app::gui
