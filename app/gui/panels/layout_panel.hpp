#pragma once
// Layout view: the global tensor projected on two chosen dims (sliders fix the others), every
// rank's region in its rank colour, before and after the current step side by side. All layout
// math comes from engine::ComputeLayouts via view_model.hpp.

#include <cstdint>
#include <string>
#include <vector>

#include "app_state.hpp"
#include "shardscope/engine/core/layout.hpp"
#include "view_model.hpp"

struct ImDrawList;

namespace shardscope::app::gui {

/// Where a layout canvas landed on screen in the last Draw (for --geometry and the tests).
struct CanvasGeometry {
  std::string which;                     ///< "before" or "after"
  float x0 = 0, y0 = 0, x1 = 0, y1 = 0;  ///< pixels, window coordinates, top-left origin
  int row_dim = -1, col_dim = -1;        ///< tensor dims along y and x (-1: none)
  int64_t rows = 1, cols = 1;            ///< extents along y and x
  int64_t redistribute_id = -1, step = 0;
  std::vector<int64_t> slice;  ///< fixed index of every tensor dim (view dims hold 0)
  int64_t focus_rank = -1;     ///< the rank whose shards are outlined (Selection::focus_rank)
  /// Bounding box of the focus rank's outlined cells (pixels; all 0 when it holds none here).
  float focus_x0 = 0, focus_y0 = 0, focus_x1 = 0, focus_y1 = 0;
};

/// The ranges table's rows on screen in the last Draw (for --geometry): [first, last), the focus.
struct LayoutTableGeometry {
  bool shown = false;
  int64_t first = 0, last = 0;
  int64_t focus_rank = -1;
};

/// One side-by-side before/after layout view. Main thread only.
class LayoutPanel {
 public:
  /// Recomputes layouts and projections when the redistribute, step, view dims or slice changed.
  /// No ImGui calls.
  void Prepare(const ViewContext& ctx);
  /// Draws the controls and both canvases into the current ImGui window's remaining region.
  void Draw(ViewContext& ctx);
  /// Canvases drawn by the last Draw.
  const std::vector<CanvasGeometry>& geometry() const { return geometry_; }
  const LayoutTableGeometry& table_geometry() const { return table_geometry_; }
  /// The redistribute and step whose layouts the panel holds.
  PanelShows shows() const { return key_model_ ? PanelShows{key_id_, key_step_, -1} : PanelShows{}; }
  /// Chooses the projected dims (-1 for none); clamped on the next Prepare.
  void SetViewDims(int row_dim, int col_dim) {
    row_dim_ = row_dim;
    col_dim_ = col_dim;
    dims_chosen_ = true;
  }

 private:
  struct Side {
    std::string title;
    std::string placements;
    std::vector<engine::RankLayout> layouts;
    LayoutGrid grid;
  };
  void DrawSide(ViewContext& ctx, const Side& side, const char* which, float width, float height);
  static void DrawAxes(ImDrawList* list, const LayoutGrid& grid, float x0, float y0, float w, float h);
  /// Width the ranges table needs to show every column uncut (headers and the first 256 ranks).
  float RangesTableWidth(int64_t world) const;
  void DrawRanges(int64_t world, int64_t focus);

  const void* key_model_ = nullptr;

  uint64_t key_serial_ = 0;  // ViewContext::model_serial of key_model_
  int64_t key_id_ = -2, key_step_ = -1;
  int key_row_ = -2, key_col_ = -2;
  std::vector<int64_t> key_slice_;
  int row_dim_ = 0, col_dim_ = 1;
  bool dims_chosen_ = false;  // the user (or SetViewDims) picked the dims: new tensors keep them
  int64_t dims_for_id_ = -2;  // the redistribute the dims were last chosen for
  bool show_ranges_ = true;
  std::vector<int64_t> slice_;
  Side before_, after_;
  std::vector<std::string> warnings_;
  std::string error_;
  std::vector<CanvasGeometry> geometry_;
  LayoutTableGeometry table_geometry_;
  int64_t table_focus_ = -1;  // the focus rank the table last scrolled to
};

}  // namespace shardscope::app::gui
