#pragma once
// Mesh view: the device mesh as a grid of ranks with the current step's groups highlighted, and
// the bytes sent between ranks as a rank x rank matrix and as arrows on the grid. A large mesh
// (more than kDetailRanks ranks) shows blocks of ranks cut along its mesh dims, as a heat map with
// the step's groups outlined and a block x block bytes matrix; clicking a block expands it.

#include <cstdint>
#include <string>
#include <vector>

#include "app_state.hpp"
#include "mesh_view_model.hpp"

struct ImDrawList;

namespace shardscope::app::gui {

struct MeshGridLayout;  // where the grid's cells go (mesh_panel.cpp)

/// Meshes with more ranks are shown as blocks first.
inline constexpr int64_t kDetailRanks = 256;
/// The overview of a large mesh has at most this many blocks.
inline constexpr int64_t kOverviewBlocks = 64;

/// One cell of the mesh grid as drawn (--geometry): a rank, or a block of the overview.
struct MeshCellGeometry {
  bool block = false;
  int64_t id = 0;  ///< rank or block index
  float x0 = 0, y0 = 0, x1 = 0, y1 = 0;
};

/// A bytes arrow the last Draw put on the grid: from and to rank, and points along its curve.
struct MeshArrowGeometry {
  int64_t from = 0, to = 0;
  std::vector<std::pair<float, float>> points;
};

/// A text label on the grid (r3, g1): its box.
struct MeshLabelGeometry {
  std::string text;
  float x0 = 0, y0 = 0, x1 = 0, y1 = 0;
};

/// The mesh panel. Main thread only.
class MeshPanel {
 public:
  /// Recomputes groups, blocks and the bytes matrices when the selection changed. No ImGui calls.
  void Prepare(const ViewContext& ctx);
  /// Draws the mesh grid and the bytes matrix side by side.
  void Draw(ViewContext& ctx);
  /// The redistribute and step whose groups and bytes the panel holds.
  PanelShows shows() const { return {key_id_, key_step_, -1}; }
  /// For --geometry: the cells drawn, the expanded block (-1: none or no overview), the number of
  /// overview blocks (0: ranks shown directly), the step's byte totals and the matrix shown.
  const std::vector<MeshCellGeometry>& cells() const { return cells_; }
  const std::vector<MeshArrowGeometry>& arrows() const { return arrows_; }
  const std::vector<MeshLabelGeometry>& labels() const { return labels_; }
  int64_t drill_block() const { return blocks_.blocks.empty() ? -1 : drill_; }
  int64_t block_count() const { return blocks_.blocks.empty() ? 0 : blocks_.count(); }
  ByteTotals totals() const { return totals_; }
  int64_t matrix_total() const { return matrix_.total; }
  int64_t focus_rank() const { return key_focus_; }

 private:
  void DrawGrid(ViewContext& ctx, float width, float height);
  void DrawMatrix(ViewContext& ctx);
  void DrawRankLabels(ImDrawList* list, const MeshGridLayout& g, int64_t world);
  void GridTooltip(const ViewContext& ctx, int64_t cell) const;
  void ExpandBlock(ViewContext& ctx, int64_t block);  // drill down; its first rank takes the focus
  std::string BlockText(const engine::Mesh& mesh, int64_t block) const;  // "dp=0-7, tp=8-15"

  // Keyed on the model and the id, never on the view's address: the app rebuilds its one view in
  // place when the selection changes.
  const trace::Model* key_model_ = nullptr;
  uint64_t key_serial_ = 0;  // ViewContext::model_serial of key_model_
  int64_t key_id_ = -1;
  int64_t key_step_ = -1, key_focus_ = -1, key_drill_ = -1;
  bool key_negotiation_ = false;
  bool negotiation_ = false;  // the matrix shows shape-negotiation bytes instead of data bytes
  int64_t drill_ = -1;        // expanded overview block
  std::vector<int> step_dims_;
  std::vector<int64_t> group_of_;  ///< per rank: index of its group for the step's mesh dims
  std::vector<int64_t> focus_group_;
  std::vector<char> in_focus_;  ///< per rank: highlighted (in focus_group_, or every rank without a step)
  MeshBlocks blocks_;           // empty blocks: the mesh is shown rank by rank
  std::vector<int64_t> focus_blocks_;             // blocks holding a rank of focus_group_
  std::vector<int64_t> shown_;                    // ranks drawn one by one (all, or the expanded block's)
  std::vector<int64_t> box_origin_, box_extent_;  // the mesh box shown_ covers
  BytesMatrix matrix_;                            // between shown_ ranks, or between blocks in the overview
  std::vector<int64_t> block_sent_;               // overview: data bytes each block sent
  ByteTotals totals_;
  std::vector<MeshCellGeometry> cells_;
  std::vector<MeshArrowGeometry> arrows_;
  std::vector<MeshLabelGeometry> labels_;
};

}  // namespace shardscope::app::gui
