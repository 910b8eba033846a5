#pragma once
// Layouts: which global indices each rank holds along every tensor dim. The one home of the
// layout math (PyTorch compute_local_shape_and_global_offset semantics), used by the planners'
// logical shapes, the executor, the checker and the GUI alike.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "shardscope/engine/core/mesh.hpp"
#include "shardscope/engine/core/placement.hpp"
#include "shardscope/engine/core/shard_order.hpp"
#include "shardscope/engine/core/spec.hpp"

namespace shardscope::engine {

/// Half-open range of global indices [begin, end).
struct Interval {
  int64_t begin = 0;
  int64_t end = 0;
  int64_t size() const { return end - begin; }
  bool operator==(const Interval&) const = default;
};
/// The global indices a rank holds along one tensor dim, in local (storage) order. Plain
/// shards give one interval; strided shards several.
using IndexSet = std::vector<Interval>;
int64_t IndexSetSize(const IndexSet& set);

/// Per-rank extents of splitting `extent` over `n` ranks with `rule` (always n entries, some
/// possibly 0). torch: ceil(L/n) each with an empty tail; physicsnemo: compute_split_shapes.
std::vector<int64_t> SplitSizes(int64_t extent, int64_t n, ChunkRule rule);
/// PyTorch Shard.local_shard_size_and_offset under `rule`: (size, offset within the extent);
/// an empty shard's offset is min(L, start) as in torch.
std::pair<int64_t, int64_t> LocalShardSizeAndOffset(int64_t extent, int64_t n, int64_t index, ChunkRule rule);
/// Positions (into a local extent) that StridedShard(sf) gives index `index` of `n`: chunk
/// i of each of the sf pieces, concatenated (PyTorch _StridedShard._split_tensor).
IndexSet StridedShardPositions(int64_t extent, int64_t n, int64_t index, int64_t split_factor,
                               ChunkRule rule);

/// Everything one rank holds of a tensor.
struct RankLayout {
  int64_t rank = 0;
  std::vector<int64_t> coord;
  Shape local_shape;
  /// First global index per dim; an empty shard's offset is the global extent (PyTorch / DCP).
  Shape global_offset;
  std::vector<IndexSet> indices;  ///< per tensor dim
};

/// Describes a distribution for layout purposes; a TensorSpec converts to it, and so does any
/// intermediate planner state.
struct LayoutInput {
  const Mesh* mesh = nullptr;
  const Placements* placements = nullptr;
  /// Shard order; mesh dims it leaves out are applied after it, left to right (null: default).
  const ShardOrder* order = nullptr;
  const Shape* shape = nullptr;
  ChunkRule chunking = ChunkRule::kTorch;
  const std::map<int, std::vector<int64_t>>* explicit_sizes = nullptr;  ///< optional
};

/// The input of `spec`'s mesh, shape, chunking and explicit sizes with `placements` in `order`
/// (the spec's own, or a state a plan passes through). Points into its arguments.
LayoutInput LayoutInputFor(const TensorSpec& spec, const Placements& placements, const ShardOrder& order);

/// Layout of one rank. Partial and Replicate mesh dims do not split. Shard-like placements apply
/// per tensor dim in shard order, each with its own rule (StridedShard splits by its factor). Throws
/// Error(kInvalidInput) when explicit sizes do not add up to the extent they split.
RankLayout ComputeRankLayout(const LayoutInput& input, int64_t rank);
RankLayout ComputeRankLayout(const TensorSpec& spec, int64_t rank);
/// Layouts of every rank of the mesh, ordered by rank.
std::vector<RankLayout> ComputeLayouts(const TensorSpec& spec);
std::vector<RankLayout> ComputeLayouts(const LayoutInput& input);

/// Intersection of two index sets, in the order of `a`.
/// "[0,2)+[4,6)": the intervals of one dim, empty ones skipped; "{}" when none is left.
std::string FormatIndexSet(const IndexSet& set);
/// Per tensor dim, joined by " x ": "[0,2)+[4,6) x [0,3)"; "()" for a 0-d tensor. What
/// `shardscope plan/layout` and the GUI's range table print.
std::string FormatIndices(const std::vector<IndexSet>& indices);
IndexSet Intersect(const IndexSet& a, const IndexSet& b);
/// Positions in `holder`'s storage order of the global indices `wanted` (must be a subset),
/// as position intervals, ordered like `wanted`.
IndexSet PositionsOf(const IndexSet& holder, const IndexSet& wanted);

}  // namespace shardscope::engine
