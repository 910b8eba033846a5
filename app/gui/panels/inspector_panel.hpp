#pragma once
// Redistribute inspector: tensor, shape, dtype, planner and why, the notation with the current step
// highlighted, raw and optimized transforms, predicted vs measured time and bytes; step buttons,
// arrow keys and play.

#include "app_state.hpp"

namespace shardscope::app::gui {

/// The inspector panel. Main thread only.
class InspectorPanel {
 public:
  /// Nothing to precompute beyond the RedistributeView; kept for the panel contract. No ImGui calls.
  void Prepare(const ViewContext& ctx);
  /// Draws the inspector; the step buttons and play change ctx.selection.
  void Draw(ViewContext& ctx);
  /// The redistribute and step the last Draw showed.
  PanelShows shows() const { return shows_; }

 private:
  PanelShows shows_;
};

/// The list of redistribute ids of a trace (tensor, src -> dst, steps); click selects.
class RedistributeListPanel {
 public:
  /// Caches one line per redistribute id when the model changed. No ImGui calls.
  void Prepare(const ViewContext& ctx);
  /// Draws the filterable list ("no matches" when the filter hides every row).
  void Draw(ViewContext& ctx);
  /// The redistribute the last Draw highlighted.
  PanelShows shows() const { return shows_; }
  /// Screen rectangles of the rows the last Draw showed: id and x0, y0, x1, y1 (for --geometry).
  struct RowGeometry {
    int64_t id = 0;
    float x0 = 0, y0 = 0, x1 = 0, y1 = 0;
  };
  const std::vector<RowGeometry>& row_geometry() const { return row_geometry_; }

 private:
  struct Row {
    int64_t id = 0;
    std::string text;
    bool failed = false;
  };
  const void* key_model_ = nullptr;
  uint64_t key_serial_ = 0;  // ViewContext::model_serial of key_model_
  std::vector<Row> rows_;
  char filter_[64] = {};
  PanelShows shows_;
  std::vector<RowGeometry> row_geometry_;
};

}  // namespace shardscope::app::gui
