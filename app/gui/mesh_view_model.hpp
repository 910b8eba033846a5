#pragma once
// GL-free model of the mesh panel: bytes matrices between ranks or blocks of ranks (data and
// shape-negotiation collectives apart), and the aggregation of a large mesh into blocks along its
// mesh dims (the overview the panel drills down from).

#include <cstdint>
#include <vector>

#include "view_model.hpp"

namespace shardscope::app::gui {

/// Bytes sent from row item i to column item j (items are ranks or blocks of ranks).
struct BytesMatrix {
  int64_t rows = 0, cols = 0;
  std::vector<int64_t> bytes;  ///< rows * cols, row = sender
  int64_t max = 0;
  int64_t total = 0;
  int64_t At(int64_t from, int64_t to) const { return bytes[static_cast<size_t>(from * cols + to)]; }
};

/// Sums Collective::bytes_sent of redistribute `view` at `step` (-1: all steps) over collectives
/// whose `negotiated` flag equals `negotiation`, per (row_of[sender], col_of[peer]); a rank whose
/// row_of / col_of is -1 (or outside the vectors) is left out.
BytesMatrix ComputeBytesMatrix(const RedistributeView& view, int64_t step, bool negotiation,
                               const std::vector<int64_t>& row_of, int64_t rows,
                               const std::vector<int64_t>& col_of, int64_t cols);

/// Bytes sent at `step` (-1: all steps): data collectives and shape-negotiation collectives.
struct ByteTotals {
  int64_t data = 0;
  int64_t negotiation = 0;
};
ByteTotals ComputeByteTotals(const RedistributeView& view, int64_t step);

/// A mesh cut into boxes along every mesh dim: block b covers, on dim d, coordinates
/// [c_d * block[d], min((c_d + 1) * block[d], shape[d])) where c is b's row-major coordinate in
/// `blocks`.
struct MeshBlocks {
  std::vector<int64_t> shape;   ///< the mesh shape
  std::vector<int64_t> block;   ///< per mesh dim: ranks per block along it
  std::vector<int64_t> blocks;  ///< per mesh dim: ceil(shape / block)
  int64_t count() const;
  /// The block holding `rank` (rank row-major over `shape`).
  int64_t BlockOf(int64_t rank) const;
  /// The ranks of block `b`, ascending.
  std::vector<int64_t> Ranks(int64_t b) const;
  /// Block `b`'s first coordinate and its extent on every mesh dim.
  std::vector<int64_t> Origin(int64_t b) const;
  std::vector<int64_t> Extent(int64_t b) const;
  /// BlockOf for every rank of the mesh.
  std::vector<int64_t> BlockOfEach() const;
};

/// Blocks of equal size along each mesh dim, at most `max_blocks` in all: starting from one rank
/// per block, the dim with the most blocks has its block size doubled until the count fits.
MeshBlocks AggregateMesh(const std::vector<int64_t>& shape, int64_t max_blocks);

}  // namespace shardscope::app::gui
