#include "shardscope/engine/core/layout.hpp"

#include <algorithm>

#include "shardscope/error.hpp"

namespace shardscope::engine {
namespace {

// Positions [begin, end) of a set's storage order, as global indices.
IndexSet Slice(const IndexSet& set, int64_t begin, int64_t end) {
  IndexSet out;
  int64_t pos = 0;
  for (const Interval& iv : set) {
    int64_t lo = std::max(begin, pos);
    int64_t hi = std::min(end, pos + iv.size());
    if (lo < hi) out.push_back({iv.begin + (lo - pos), iv.begin + (hi - pos)});
    pos += iv.size();
    if (pos >= end) break;
  }
  return out;
}

void AppendMerged(IndexSet& out, Interval iv) {
  if (iv.size() <= 0) return;
  if (!out.empty() && out.back().end == iv.begin) {
    out.back().end = iv.end;
  } else {
    out.push_back(iv);
  }
}

}  // namespace

int64_t IndexSetSize(const IndexSet& set) {
  int64_t n = 0;
  for (const auto& iv : set) n += iv.size();
  return n;
}

std::vector<int64_t> SplitSizes(int64_t extent, int64_t n, ChunkRule rule) {
  std::vector<int64_t> sizes(static_cast<size_t>(n), 0);
  if (n <= 0) return sizes;
  if (rule == ChunkRule::kTorch) {
    // torch.chunk: every chunk ceil(L/n) except the tail; trailing chunks may be empty.
    int64_t c = (extent + n - 1) / n;
    for (int64_t i = 0; i < n; ++i)
      sizes[static_cast<size_t>(i)] = std::max<int64_t>(0, std::min(extent, c * (i + 1)) - c * i);
  } else {
    // PhysicsNeMo compute_split_shapes: ceil(L/n) with the remainder last; when that remainder
    // would be <= 0, floor(L/n) each and the remainder in the last chunk.
    int64_t c = (extent + n - 1) / n;
    int64_t last = extent - c * (n - 1);
    if (last <= 0) {
      c = extent / n;
      last = extent - c * (n - 1);
    }
    for (int64_t i = 0; i + 1 < n; ++i) sizes[static_cast<size_t>(i)] = c;
    sizes[static_cast<size_t>(n - 1)] = last;
  }
  return sizes;
}

std::pair<int64_t, int64_t> LocalShardSizeAndOffset(int64_t extent, int64_t n, int64_t index,
                                                    ChunkRule rule) {
  // Closed forms of SplitSizes' entry `index` and the sum of the entries before it, so one
  // rank's layout costs O(mesh dims x tensor dims), not O(mesh size) (a 2^20-rank mesh).
  if (n <= 0 || index < 0 || index >= n) {
    throw InternalError("layout: shard index " + std::to_string(index) + " outside 0.." +
                        std::to_string(n - 1));
  }
  const int64_t c = extent / n + (extent % n != 0 ? 1 : 0);  // ceil(L/n); c*n < L + n: no overflow
  if (rule == ChunkRule::kTorch) {
    // Chunk i covers [c*i, c*(i+1)) clipped to the extent (empty past it, offset L).
    const int64_t begin = std::min(extent, c * index);
    const int64_t end = std::min(extent, c * (index + 1));
    return {end - begin, begin};
  }
  // physicsnemo: n-1 chunks of c and the remainder last, or floor(L/n) each when that
  // remainder would be <= 0 (see SplitSizes).
  const int64_t chunk = extent - c * (n - 1) <= 0 ? extent / n : c;
  const int64_t size = index + 1 < n ? chunk : extent - chunk * (n - 1);
  return {size, std::min(chunk * index, extent)};
}

IndexSet StridedShardPositions(int64_t extent, int64_t n, int64_t index, int64_t split_factor,
                               ChunkRule rule) {
  // PyTorch _StridedShard._split_tensor: chunk into sf pieces, chunk each piece into n, and
  // shard i is the concatenation of chunk i of every piece.
  IndexSet out;
  std::vector<int64_t> pieces = SplitSizes(extent, split_factor, rule);
  int64_t piece_start = 0;
  for (int64_t piece : pieces) {
    auto [size, offset] = LocalShardSizeAndOffset(piece, n, index, rule);
    AppendMerged(out, {piece_start + offset, piece_start + offset + size});
    piece_start += piece;
  }
  return out;
}

RankLayout ComputeRankLayout(const LayoutInput& in, int64_t rank) {
  const Mesh& mesh = *in.mesh;
  const Placements& placements = *in.placements;
  const Shape& shape = *in.shape;
  RankLayout out;
  out.rank = rank;
  out.coord = mesh.Coordinate(rank);
  out.indices.resize(shape.size());
  for (size_t d = 0; d < shape.size(); ++d)
    out.indices[d] = shape[d] > 0 ? IndexSet{{0, shape[d]}} : IndexSet{};

  // The given order, completed with any shard-like mesh dim it leaves out (appended left to
  // right, the default rule; StridedShards without an order are applied that way).
  ShardOrder order = in.order ? *in.order : ShardOrder{};
  {
    auto lists = OrderToLists(order, static_cast<int>(shape.size()));
    for (size_t md = 0; md < placements.size(); ++md) {
      const Placement& p = placements[md];
      if (!p.IsShardLike() || p.dim < 0 || static_cast<size_t>(p.dim) >= lists.size()) continue;
      auto& list = lists[static_cast<size_t>(p.dim)];
      if (std::find(list.begin(), list.end(), static_cast<int>(md)) == list.end())
        list.push_back(static_cast<int>(md));
    }
    order = ListsToOrder(lists);
  }
  for (const ShardOrderEntry& e : order) {
    if (e.tensor_dim < 0 || static_cast<size_t>(e.tensor_dim) >= shape.size()) {
      throw InternalError("layout: shard order names tensor dim " + std::to_string(e.tensor_dim));
    }
    IndexSet& set = out.indices[static_cast<size_t>(e.tensor_dim)];
    for (int md : e.mesh_dims) {
      const Placement& p = placements[static_cast<size_t>(md)];
      int64_t n = mesh.size(md);
      int64_t i = out.coord[static_cast<size_t>(md)];
      int64_t extent = IndexSetSize(set);
      if (p.IsStridedShard()) {
        IndexSet next;
        for (const Interval& pos : StridedShardPositions(extent, n, i, p.split_factor, in.chunking)) {
          for (const Interval& iv : Slice(set, pos.begin, pos.end)) AppendMerged(next, iv);
        }
        set = std::move(next);
        continue;
      }
      if (in.explicit_sizes && in.explicit_sizes->count(md)) {
        const std::vector<int64_t>& sizes = in.explicit_sizes->at(md);
        int64_t total = 0;
        for (int64_t s : sizes) total += s;
        if (total != extent) {
          throw InvalidInput("explicit sizes for mesh dim " + std::to_string(md) + " add up to " +
                             std::to_string(total) + " but the extent they split is " +
                             std::to_string(extent));
        }
        int64_t offset = 0;
        for (int64_t k = 0; k < i; ++k) offset += sizes[static_cast<size_t>(k)];
        set = Slice(set, offset, offset + sizes[static_cast<size_t>(i)]);
        continue;
      }
      auto [size, offset] = LocalShardSizeAndOffset(extent, n, i, in.chunking);
      set = Slice(set, offset, offset + size);
    }
  }
  out.local_shape.resize(shape.size());
  out.global_offset.resize(shape.size());
  for (size_t d = 0; d < shape.size(); ++d) {
    out.local_shape[d] = IndexSetSize(out.indices[d]);
    out.global_offset[d] = out.indices[d].empty() ? shape[d] : out.indices[d].front().begin;
  }
  return out;
}

LayoutInput LayoutInputFor(const TensorSpec& spec, const Placements& placements, const ShardOrder& order) {
  LayoutInput in;
  in.mesh = &spec.mesh;
  in.placements = &placements;
  in.order = &order;
  in.shape = &spec.shape;
  in.chunking = spec.chunking;
  in.explicit_sizes = &spec.explicit_sizes;
  return in;
}

RankLayout ComputeRankLayout(const TensorSpec& spec, int64_t rank) {
  ShardOrder order = spec.EffectiveOrder();
  return ComputeRankLayout(LayoutInputFor(spec, spec.placements, order), rank);
}

std::vector<RankLayout> ComputeLayouts(const LayoutInput& input) {
  std::vector<RankLayout> out;
  out.reserve(static_cast<size_t>(input.mesh->size()));
  for (int64_t r = 0; r < input.mesh->size(); ++r) out.push_back(ComputeRankLayout(input, r));
  return out;
}

std::vector<RankLayout> ComputeLayouts(const TensorSpec& spec) {
  ShardOrder order = spec.EffectiveOrder();
  return ComputeLayouts(LayoutInputFor(spec, spec.placements, order));
}

IndexSet Intersect(const IndexSet& a, const IndexSet& b) {
  IndexSet out;
  for (const Interval& x : a) {
    // b is ascending and disjoint (every layout set is), so binary search the first overlap.
    auto it = std::upper_bound(b.begin(), b.end(), x.begin,
                               [](int64_t v, const Interval& iv) { return v < iv.end; });
    for (; it != b.end() && it->begin < x.end; ++it) {
      AppendMerged(out, {std::max(x.begin, it->begin), std::min(x.end, it->end)});
    }
  }
  return out;
}

IndexSet PositionsOf(const IndexSet& holder, const IndexSet& wanted) {
  std::vector<int64_t> starts(holder.size());
  int64_t pos = 0;
  for (size_t k = 0; k < holder.size(); ++k) {
    starts[k] = pos;
    pos += holder[k].size();
  }
  IndexSet out;
  for (const Interval& w : wanted) {
    auto it = std::upper_bound(holder.begin(), holder.end(), w.begin,
                               [](int64_t v, const Interval& iv) { return v < iv.end; });
    int64_t covered = w.begin;
    for (; it != holder.end() && it->begin < w.end; ++it) {
      int64_t lo = std::max(w.begin, it->begin);
      int64_t hi = std::min(w.end, it->end);
      if (lo != covered) throw InternalError("layout: wanted indices are not all held");
      size_t k = static_cast<size_t>(it - holder.begin());
      AppendMerged(out, {starts[k] + (lo - it->begin), starts[k] + (hi - it->begin)});
      covered = hi;
    }
    if (covered != w.end) throw InternalError("layout: wanted indices are not all held");
  }
  return out;
}

std::string FormatIndexSet(const IndexSet& set) {
  std::string s;
  for (const auto& iv : set) {
    if (iv.size() <= 0) continue;
    if (!s.empty()) s += "+";
    s += "[" + std::to_string(iv.begin) + "," + std::to_string(iv.end) + ")";
  }
  return s.empty() ? "{}" : s;
}

std::string FormatIndices(const std::vector<IndexSet>& indices) {
  if (indices.empty()) return "()";
  std::string s;
  for (size_t i = 0; i < indices.size(); ++i) s += (i ? " x " : "") + FormatIndexSet(indices[i]);
  return s;
}

}  // namespace shardscope::engine
