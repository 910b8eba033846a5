#pragma once
// Mesh view: the device mesh as a grid of ranks with the current step's groups highlighted, and
// the bytes sent between ranks as a rank x rank matrix and as arrows on the grid.

#include <cstdint>
#include <vector>

#include "app_state.hpp"

namespace shardscope::app::gui {

/// Bytes rank i sent to rank j during one step (or a whole redistribute), from its collectives.
struct BytesMatrix {
  int64_t world = 0;
  std::vector<int64_t> bytes;  ///< world * world, row = sender; empty when world is too large
  int64_t max = 0;
  int64_t total = 0;
  int64_t At(int64_t from, int64_t to) const { return bytes[static_cast<size_t>(from * world + to)]; }
};

/// Sums Collective::bytes_sent of redistribute `view` at `step` (-1: all steps) per (sender, peer).
BytesMatrix ComputeBytesMatrix(const RedistributeView& view, int64_t world, int64_t step);

/// The mesh panel. Main thread only.
class MeshPanel {
 public:
  /// Recomputes groups and the bytes matrix when the selection changed. No ImGui calls.
  void Prepare(const ViewContext& ctx);
  /// Draws the mesh grid and the bytes matrix side by side.
  void Draw(ViewContext& ctx);
  /// The redistribute and step whose groups and bytes the panel holds.
  PanelShows shows() const { return {key_id_, key_step_, -1}; }

 private:
  // Keyed on the model and the id, never on the view's address: the app rebuilds its one view in
  // place when the selection changes.
  const trace::Model* key_model_ = nullptr;
  uint64_t key_serial_ = 0;  // ViewContext::model_serial of key_model_
  int64_t key_id_ = -1;
  int64_t key_step_ = -1, key_focus_ = -1;
  std::vector<int> step_dims_;
  std::vector<int64_t> group_of_;  ///< per rank: index of its group for the step's mesh dims
  std::vector<int64_t> focus_group_;
  BytesMatrix matrix_;
};

}  // namespace shardscope::app::gui
