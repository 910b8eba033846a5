#pragma once
// Diff view: a baseline and a candidate trace side by side, their redistributes aligned as
// `shardscope diff` aligns them (diff_view_model.hpp over trace::DiffTraces). Differing rows carry
// a colour stripe and a textual marker (!=, -, +); unmatched redistributes leave a gap on the other
// side. The selected pair shows its difference lines, both optimized plans step by step with the
// differing steps marked, and each side's layout before/after the selected step.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "app_state.hpp"
#include "diff_compare_model.hpp"
#include "diff_view_model.hpp"
#include "input_script.hpp"
#include "panels/layout_panel.hpp"
#include "timeline_model.hpp"

namespace shardscope::app::gui {

/// Where a diff row or step row landed on screen in the last Draw (for --geometry and the tests).
struct DiffRowGeometry {
  int64_t row = 0;   ///< index into DiffView::rows, or the step index
  std::string kind;  ///< DiffRowKindName, or "same"/"changed" for steps
  std::string side;  ///< "" for list rows; "baseline"/"candidate" for steps
  std::optional<int64_t> baseline_id, candidate_id;
  float x0 = 0, y0 = 0, x1 = 0, y1 = 0;      ///< the whole row, window pixels
  float mx0 = 0, my0 = 0, mx1 = 0, my1 = 0;  ///< the colour stripe (zero size on an unmarked row)
};

/// The overlaid timelines as the last Draw showed them: one time axis from each run's first event,
/// each lane's upper half the baseline's redistribute bars and its lower half the candidate's.
struct DiffOverlayBar {
  int side = 0;      ///< 0 baseline, 1 candidate
  int64_t lane = 0;  ///< rank (or 0 for the all-ranks lane)
  int64_t id = 0;    ///< redistribute id (or op id when op)
  bool op = false;
  bool selected = false;  ///< part of the selected pair
  float x0 = 0, y0 = 0, x1 = 0, y1 = 0;
};
struct DiffOverlayGeometry {
  bool shown = false;
  float x0 = 0, y0 = 0, x1 = 0, y1 = 0;  ///< the plot (under the axis, right of the labels)
  double view_start_ns = 0, view_end_ns = 0;
  int64_t duration_ns[2] = {0, 0};  ///< each run's last event end - its first event start
  int64_t lanes = 0;
  bool per_rank = true;              ///< false: one lane holds every rank's bars (many ranks)
  std::vector<DiffOverlayBar> bars;  ///< unmerged bars drawn (the first 2000)
};

/// A layout canvas of one side.
struct DiffCanvasGeometry {
  std::string side;  ///< "baseline" or "candidate"
  CanvasGeometry canvas;
};

/// The diff view. Main thread only.
class DiffPanel {
 public:
  /// Takes the two traces (null while loading or after a failure) and their labels, rebuilds the
  /// diff when either changed, and prepares the selected pair's steps and layouts. No ImGui calls.
  void Prepare(const trace::Model* baseline, const std::string& baseline_label, const trace::Model* candidate,
               const std::string& candidate_label, GlRenderer* renderer);
  /// Draws the view into the current window's remaining region.
  void Draw();
  /// Up/Down move between rows, Left/Right between steps (every tap of the frame counts).
  void HandleKeys(const KeyTaps& taps);
  /// Selects the row whose baseline id (else candidate id) is `id`, and step `step`; applied once
  /// the diff is built. -1 keeps the default (the first differing row).
  void Select(int64_t id, int64_t step) {
    pending_id_ = id;
    step_ = step;
  }
  const DiffView& view() const { return diff_; }
  int64_t selected_row() const { return selected_; }
  /// Rows of the aligned list drawn by the last Draw.
  const std::vector<DiffRowGeometry>& row_geometry() const { return row_geometry_; }
  /// Step rows of both sides drawn by the last Draw.
  const std::vector<DiffRowGeometry>& step_geometry() const { return step_geometry_; }
  /// Layout canvases of both sides drawn by the last Draw.
  std::vector<DiffCanvasGeometry> canvases() const;
  /// The selected pair compared side by side, and the runs' per-kind totals (as drawn).
  const std::vector<DiffCompareRow>& compare() const { return compare_; }
  const std::vector<KindTotals>& totals() const { return totals_; }
  const DiffOverlayGeometry& overlay() const { return overlay_; }

 private:
  struct Side {
    const trace::Model* model = nullptr;
    std::string label;
    uint64_t serial = 0;  // ViewContext::model_serial of this side: bumped when its model changes
    const void* view_model = nullptr;
    uint64_t view_serial = 0;
    int64_t view_id = -2;
    RedistributeView view;
    Selection selection;
    ViewContext ctx;
    LayoutPanel layout;
  };
  void DrawRows(float height);
  void DrawDifferences(float height);
  void DrawCompare(float width, float height);
  void DrawTotals(float height);
  void DrawOverlay(float height);
  void DrawSteps(int side, float width, float height);
  void DrawLayout(int side, float width, float height);
  const DiffRow* SelectedRow() const {
    return selected_ >= 0 && selected_ < static_cast<int64_t>(diff_.rows.size())
               ? &diff_.rows[static_cast<size_t>(selected_)]
               : nullptr;
  }

  Side sides_[2];
  const void* key_baseline_ = nullptr;
  const void* key_candidate_ = nullptr;
  bool built_ = false;
  DiffView diff_;
  int64_t selected_ = -1, pending_id_ = -1, step_ = 0;
  int64_t steps_row_ = -2;
  std::vector<DiffStepRow> steps_;
  std::vector<DiffCompareRow> compare_;
  std::vector<KindTotals> totals_;
  bool scroll_to_selected_ = false;
  TimelineData timelines_[2];                   ///< each side's lanes (BuildTimeline)
  double overlay_start_ = 0, overlay_end_ = 1;  ///< the overlay's visible range, ns from each run's start
  DiffOverlayGeometry overlay_;
  std::vector<DiffRowGeometry> row_geometry_, step_geometry_;
};

}  // namespace shardscope::app::gui
