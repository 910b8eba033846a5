#include <catch2/catch.hpp>

#include "shardscope/engine/core/layout.hpp"
#include "shardscope/error.hpp"

using namespace shardscope::engine;

namespace {

// torch.chunk rule as written in PyTorch's test_partial_to_shard:
// full_chunk = (L + n - 1) // n; size_i = max(min(L, full * (i + 1)) - full * i, 0).
std::vector<int64_t> TorchChunkFormula(int64_t L, int64_t n) {
  std::vector<int64_t> out;
  int64_t full = (L + n - 1) / n;
  for (int64_t i = 0; i < n; ++i) out.push_back(std::max<int64_t>(std::min(L, full * (i + 1)) - full * i, 0));
  return out;
}

TensorSpec Spec(Shape mesh, const char* placements, Shape shape, ChunkRule rule = ChunkRule::kTorch,
                std::optional<ShardOrder> order = std::nullopt) {
  return MakeSpec(Mesh(std::move(mesh)), ParsePlacements(placements, "test"), std::move(order),
                  std::move(shape), DType::kF32, rule, {}, "test");
}

}  // namespace

TEST_CASE("torch.chunk split sizes match the reference examples", "[engine][layout]") {
  // semantics §8.1: 10 on 4 -> 3,3,3,1; 13 -> 4,4,4,1; 14 -> 4,4,4,2; 2 on 4 -> 1,1,0,0.
  CHECK(SplitSizes(10, 4, ChunkRule::kTorch) == std::vector<int64_t>{3, 3, 3, 1});
  CHECK(SplitSizes(13, 4, ChunkRule::kTorch) == std::vector<int64_t>{4, 4, 4, 1});
  CHECK(SplitSizes(14, 4, ChunkRule::kTorch) == std::vector<int64_t>{4, 4, 4, 2});
  CHECK(SplitSizes(2, 4, ChunkRule::kTorch) == std::vector<int64_t>{1, 1, 0, 0});
  CHECK(SplitSizes(5, 4, ChunkRule::kTorch) == std::vector<int64_t>{2, 2, 1, 0});
  CHECK(SplitSizes(0, 3, ChunkRule::kTorch) == std::vector<int64_t>{0, 0, 0});
}

TEST_CASE("torch.chunk split sizes follow PyTorch's formula for every small case", "[engine][layout]") {
  for (int64_t n = 1; n <= 17; ++n) {
    for (int64_t L = 0; L <= 70; ++L) {
      INFO("L=" << L << " n=" << n);
      CHECK(SplitSizes(L, n, ChunkRule::kTorch) == TorchChunkFormula(L, n));
    }
  }
}

TEST_CASE("PhysicsNeMo compute_split_shapes differs from torch.chunk", "[engine][layout]") {
  // shardtensor-and-collective-perf.md: (3,4) -> 0,0,0,3; (2,4) -> 0,0,0,2; (5,4) -> 1,1,1,2; (10,4) ->
  // 3,3,3,1.
  CHECK(SplitSizes(3, 4, ChunkRule::kPhysicsNemo) == std::vector<int64_t>{0, 0, 0, 3});
  CHECK(SplitSizes(2, 4, ChunkRule::kPhysicsNemo) == std::vector<int64_t>{0, 0, 0, 2});
  CHECK(SplitSizes(5, 4, ChunkRule::kPhysicsNemo) == std::vector<int64_t>{1, 1, 1, 2});
  CHECK(SplitSizes(10, 4, ChunkRule::kPhysicsNemo) == std::vector<int64_t>{3, 3, 3, 1});
  CHECK(SplitSizes(8, 4, ChunkRule::kPhysicsNemo) == std::vector<int64_t>{2, 2, 2, 2});
}

TEST_CASE("local shard size and offset: empty shards sit at the end", "[engine][layout]") {
  // PyTorch: offset = min(L, c*r); 2 on 4 -> sizes 1,1,0,0 offsets 0,1,2,2.
  CHECK(LocalShardSizeAndOffset(2, 4, 2, ChunkRule::kTorch) == std::pair<int64_t, int64_t>{0, 2});
  CHECK(LocalShardSizeAndOffset(2, 4, 3, ChunkRule::kTorch) == std::pair<int64_t, int64_t>{0, 2});
  CHECK(LocalShardSizeAndOffset(10, 4, 3, ChunkRule::kTorch) == std::pair<int64_t, int64_t>{1, 9});
  CHECK(LocalShardSizeAndOffset(12, 4, 2, ChunkRule::kTorch) == std::pair<int64_t, int64_t>{3, 6});
}

TEST_CASE("nested uneven sharding matches PyTorch's U1 example", "[engine][layout]") {
  // U1: (18,2) on a (4,2) mesh with [S0,S0]: dim-0 chunks 5,5,5,3; each DP row splits its chunk
  // again: 5 -> 3,2 and 3 -> 2,1.
  TensorSpec spec = Spec({4, 2}, "S(0),S(0)", {18, 2});
  auto layouts = ComputeLayouts(spec);
  const int64_t sizes[8] = {3, 2, 3, 2, 3, 2, 2, 1};
  const int64_t offsets[8] = {0, 3, 5, 8, 10, 13, 15, 17};
  for (int r = 0; r < 8; ++r) {
    INFO("rank " << r);
    CHECK(layouts[r].local_shape == Shape{sizes[r], 2});
    CHECK(layouts[r].global_offset == Shape{offsets[r], 0});
  }
}

TEST_CASE("empty shard offset is the global extent", "[engine][layout]") {
  // semantics §8.1: a zero-size shard's offset is global_shape[dim].
  TensorSpec spec = Spec({4}, "S(0)", {2, 3});
  auto layouts = ComputeLayouts(spec);
  CHECK(layouts[2].local_shape == Shape{0, 3});
  CHECK(layouts[2].global_offset == Shape{2, 0});
  CHECK(layouts[3].indices[0].empty());
  CHECK(layouts[1].indices[0] == IndexSet{{1, 2}});
}

TEST_CASE("strided shard layouts match PyTorch's U1 examples", "[engine][layout]") {
  // arange(8) with _S(0,2) on 4 ranks: [0,4 | 1,5 | 2,6 | 3,7].
  for (int64_t i = 0; i < 4; ++i) {
    CHECK(StridedShardPositions(8, 4, i, 2, ChunkRule::kTorch) == IndexSet{{i, i + 1}, {4 + i, 5 + i}});
  }
  // (4,2) mesh, [_S(0,2), S(0)], (15,5): dim-0 sizes 2,2,2,2,2,2,2,1, offsets 0,8,2,10,4,12,6,14.
  TensorSpec spec = Spec({4, 2}, "_S(0, 2),S(0)", {15, 5});
  auto layouts = ComputeLayouts(spec);
  const int64_t sizes[8] = {2, 2, 2, 2, 2, 2, 2, 1};
  const int64_t offsets[8] = {0, 8, 2, 10, 4, 12, 6, 14};
  for (int r = 0; r < 8; ++r) {
    INFO("rank " << r);
    CHECK(layouts[r].local_shape[0] == sizes[r]);
    CHECK(layouts[r].global_offset[0] == offsets[r]);
  }
  // Issue #168134: [0..4] with _S(0,2) on 2 ranks gives rank0 [0,1,3] and rank1 [2,4].
  CHECK(StridedShardPositions(5, 2, 0, 2, ChunkRule::kTorch) == IndexSet{{0, 2}, {3, 4}});
  CHECK(StridedShardPositions(5, 2, 1, 2, ChunkRule::kTorch) == IndexSet{{2, 3}, {4, 5}});
}

TEST_CASE("strided shard with 4096 rows: sizes 18, dp 28 has 8, dp 29 is empty", "[engine][layout]") {
  // U1: [_S(0,8), S(0)] on a (30,8) mesh with 4096 rows.
  TensorSpec spec = Spec({30, 8}, "_S(0, 8),S(0)", {4096});
  auto layout_of = [&](int64_t dp, int64_t tp) { return ComputeRankLayout(spec, dp * 8 + tp); };
  CHECK(layout_of(0, 0).local_shape[0] == 18);
  int64_t total28 = 0;
  for (int tp = 0; tp < 8; ++tp) total28 += layout_of(28, tp).local_shape[0];
  CHECK(total28 == 8 * 8);  // dp 28 holds 8 rows of each of the 8 pieces
  CHECK(layout_of(29, 0).local_shape[0] == 0);
  CHECK(layout_of(29, 0).global_offset[0] == 4096);
}

TEST_CASE("shard order decides the nesting of a tensor dim", "[engine][layout]") {
  // S(0)[1]S(0)[0] on a 2x2 mesh: mesh dim 1 splits first, then mesh dim 0 splits each half.
  // Row r of 8 belongs to coordinate (c0, c1) with c1 = r / 4, c0 = (r % 4) / 2.
  TensorSpec spec = Spec({2, 2}, "S(0),S(0)", {8}, ChunkRule::kTorch, ParseShardOrder("0:1,0", "test"));
  auto layouts = ComputeLayouts(spec);
  CHECK(layouts[0].indices[0] == IndexSet{{0, 2}});  // (0,0)
  CHECK(layouts[1].indices[0] == IndexSet{{4, 6}});  // (0,1)
  CHECK(layouts[2].indices[0] == IndexSet{{2, 4}});  // (1,0)
  CHECK(layouts[3].indices[0] == IndexSet{{6, 8}});  // (1,1)
}

TEST_CASE("strided placements and decoded shard order give the same layout", "[engine][layout]") {
  // T0 test_shard_order_same_data_as_strided_shard: on (4,2), [_S(0,2), S(0)] == [S0,S0] with
  // order ((0,(1,0)),).
  // Only for even splits: uneven strided shards have "gaps" (issue #168134), so the two differ.
  for (int64_t rows : {16, 8, 32, 0}) {
    auto a = ComputeLayouts(Spec({4, 2}, "_S(0, 2),S(0)", {rows, 3}));
    auto b = ComputeLayouts(
        Spec({4, 2}, "S(0),S(0)", {rows, 3}, ChunkRule::kTorch, ParseShardOrder("0:1,0", "t")));
    for (size_t r = 0; r < a.size(); ++r) {
      INFO("rows " << rows << " rank " << r);
      CHECK(a[r].indices == b[r].indices);
    }
  }
  // rows = 9: strided gives dp 3 one row from piece 1 on tp 0; the order-based split gives it to tp 1.
  auto a = ComputeLayouts(Spec({4, 2}, "_S(0, 2),S(0)", {9}));
  auto b = ComputeLayouts(Spec({4, 2}, "S(0),S(0)", {9}, ChunkRule::kTorch, ParseShardOrder("0:1,0", "t")));
  CHECK(a[6].local_shape == Shape{1});
  CHECK(b[6].local_shape == Shape{0});
}

TEST_CASE("explicit per-rank sizes override the chunk rule and must add up", "[engine][layout]") {
  auto spec = MakeSpec(Mesh({3}), ParsePlacements("S(0)", "t"), std::nullopt, {7, 2}, DType::kF32,
                       ChunkRule::kTorch, {{0, {1, 4, 2}}}, "t");
  auto layouts = ComputeLayouts(spec);
  CHECK(layouts[1].indices[0] == IndexSet{{1, 5}});
  CHECK(layouts[2].global_offset == Shape{5, 0});
  auto bad = MakeSpec(Mesh({3}), ParsePlacements("S(0)", "t"), std::nullopt, {7, 2}, DType::kF32,
                      ChunkRule::kTorch, {{0, {1, 4, 1}}}, "t");
  CHECK_THROWS_AS(ComputeLayouts(bad), shardscope::Error);
}

TEST_CASE("Replicate and Partial mesh dims do not split", "[engine][layout]") {
  auto layouts = ComputeLayouts(Spec({2, 3}, "R,P(sum)", {5, 4}));
  for (const auto& l : layouts) {
    CHECK(l.local_shape == Shape{5, 4});
    CHECK(l.global_offset == Shape{0, 0});
  }
}

TEST_CASE("intersections and positions follow storage order", "[engine][layout]") {
  IndexSet holder{{2, 4}, {8, 11}};
  CHECK(Intersect(holder, IndexSet{{3, 9}}) == IndexSet{{3, 4}, {8, 9}});
  CHECK(PositionsOf(holder, IndexSet{{3, 4}, {8, 10}}) == IndexSet{{1, 4}});
  CHECK_THROWS_AS(PositionsOf(holder, IndexSet{{4, 5}}), shardscope::Error);
}
