#pragma once
// Timeline: one lane per rank (above kTimelineGroupAbove ranks one lane per group of the leading
// mesh dim, expandable), redistributes as bars and their collectives as slices on a shared time
// axis; spans narrower than a pixel are merged. Wheel or +/- zooms, drag or A/D pans, F zooms to
// the selection, 0 fits the trace, G or Ctrl+G goes to a rank, dragging on the time axis (or with
// Shift) measures a range; hover for details, click to select; the scrollbar or the wheel over the
// labels scrolls the lanes.

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "app_state.hpp"
#include "timeline_model.hpp"
#include "timeline_range.hpp"

struct ImDrawList;

namespace shardscope::app::gui {

/// A row the last Draw put on screen (for --geometry).
struct TimelineRowGeometry {
  int32_t group = -1;  ///< the group of a group row, or of a rank row (-1: no groups)
  int64_t rank = -1;   ///< -1 for a group row
  std::string label;
  bool pinned = false;                   ///< pinned to the top of the plot (does not scroll)
  float x0 = 0, y0 = 0, x1 = 0, y1 = 0;  ///< the row's label cell
};

/// What the last Draw showed (for --geometry): the plot's pixels and time range, the rows.
struct TimelineGeometry {
  float plot_x0 = 0, plot_x1 = 0, y0 = 0, y1 = 0;  ///< time plot (right of the labels, under the axis)
  double view_start_ns = 0, view_end_ns = 0;       ///< visible range, ns from the trace start
  int64_t trace_ns = 0;                            ///< t1 - t0
  int64_t t0_ns = 0;                               ///< the trace start, absolute (the first event)
  size_t rows = 0, first_row = 0;                  ///< rows in all, first scrolled row drawn
  std::vector<int64_t> pinned;                     ///< ranks pinned to the top, top to bottom
  /// The lane context menu's items (right click on a lane), while it is open.
  struct MenuItem {
    std::string label;
    float x0 = 0, y0 = 0, x1 = 0, y1 = 0;
  };
  std::vector<MenuItem> menu;
  std::vector<int32_t> expanded;             ///< expanded groups
  std::vector<TimelineRowGeometry> visible;  ///< rows drawn, top to bottom
  bool has_measure = false;
  double measure_start_ns = 0, measure_end_ns = 0;  ///< ns from the trace start, start <= end
  int64_t goto_rank = -1;                           ///< last rank gone to (-1: none)
  std::string goto_error;                           ///< "" unless the rank typed is out of range
  bool scrollbar = false;                           ///< drawn (more rows than fit)
  /// The measured range's contents (valid when has_measure) and the box that shows them.
  RangeStats range;
  float range_box_x0 = 0, range_box_y0 = 0, range_box_x1 = 0, range_box_y1 = 0;
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
  /// Pins rank `rank`'s lane to the top of the plot (it stays there while the other lanes scroll),
  /// or unpins it; false for a rank out of range.
  bool TogglePin(int64_t rank);
  /// Puts the keyboard in the go-to-rank field (Ctrl+G; a plain G is read as a character).
  void FocusGoTo() { focus_goto_ = true; }
  /// Drops the measured range (Esc).
  void ClearMeasure() { has_measure_ = measuring_ = false; }
  /// The measured range's contents, as the box beside it shows them (valid while one is measured).
  const RangeStats& range_stats() const { return range_stats_; }

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
  /// The measured range's counts, bytes and per-rank breakdown, in a box at the plot's top right.
  void DrawRangeStats(const ViewContext& ctx, const Frame& f);
  void DrawScrollbar(ImDrawList* list, const Frame& f, float x, float content_h) const;
  void DrawTooltip(const ViewContext& ctx, const Hit& hit) const;
  void DrawGroupTooltip(const Frame& f) const;  ///< hovering a group's label
  void RecordGeometry(const Frame& f, bool scrollbar);
  void Select(ViewContext& ctx, const Hit& hit) const;
  void RebuildRows();
  float RowY(int64_t rank, float lane_h) const;  ///< top of a rank's row (or its group's), before scrolling
  /// Pinned rows come first and never scroll; the rest scroll under them.
  float RowTop(size_t row, const Frame& f) const {
    return f.y0 + static_cast<float>(row) * f.lane_h - (row < pinned_rows_ ? 0.0f : scroll_y_);
  }
  /// Where the scrolled rows start (under the pinned ones).
  float ScrollTop(const Frame& f) const {
    return std::min(f.bottom, f.y0 + static_cast<float>(pinned_rows_) * f.lane_h);
  }
  /// The row at window y (rows_.size() when none), and the rows on screen (pinned first).
  size_t RowAt(float y, const Frame& f) const;
  std::vector<size_t> VisibleRows(const Frame& f) const;
  /// The part of a row on screen: a scrolled row is cut where it slides under the pinned rows.
  std::pair<float, float> RowClip(size_t row, const Frame& f) const;
  void DrawLaneMenu(const Frame& f, bool canvas_hovered);

  const void* key_model_ = nullptr;

  uint64_t key_serial_ = 0;  // ViewContext::model_serial of key_model_
  TimelineData data_;
  std::vector<std::string> kinds_;  ///< collective kinds in the model (the legend)
  std::vector<bool> expanded_;      ///< per group
  std::vector<TimelineRow> rows_;
  std::vector<int64_t> pinned_;  ///< pinned ranks, in the order pinned (kept across reloads of one trace)
  size_t pinned_rows_ = 0;       ///< rows_ starts with this many pinned rows
  int64_t menu_rank_ = -1;       ///< the lane the context menu is for
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
  RangeStats range_stats_;                ///< of the measured range (absolute ns)
  bool range_stats_valid_ = false;        ///< range_stats_ is of the current range and model
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
