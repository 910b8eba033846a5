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

// SplitSizes(length, n, rule) for each {length, n, sizes}.
struct SplitCase {
  int64_t length;
  int64_t n;
  std::vector<int64_t> sizes;
};
void CheckSplits(ChunkRule rule, const std::vector<SplitCase>& cases) {
  for (const SplitCase& c : cases) {
    INFO("L=" << c.length << " n=" << c.n);
    CHECK(SplitSizes(c.length, c.n, rule) == c.sizes);
  }
}

// Rank r's layout holds sizes[r] rows from row offsets[r]; with `cols`, the layouts are 2-d and
// every rank holds all `cols` columns.
void CheckRows(const std::vector<RankLayout>& layouts, const std::vector<int64_t>& sizes,
               const std::vector<int64_t>& offsets, std::optional<int64_t> cols = std::nullopt) {
  REQUIRE(layouts.size() == sizes.size());
  for (size_t r = 0; r < sizes.size(); ++r) {
    INFO("rank " << r);
    if (cols) {
      CHECK(layouts[r].local_shape == Shape{sizes[r], *cols});
      CHECK(layouts[r].global_offset == Shape{offsets[r], 0});
    } else {
      CHECK(layouts[r].local_shape[0] == sizes[r]);
      CHECK(layouts[r].global_offset[0] == offsets[r]);
    }
  }
}

}  // namespace

TEST_CASE("torch.chunk split sizes match the reference examples", "[engine][layout]") {
  // semantics §8.1: 10 on 4 -> 3,3,3,1; 13 -> 4,4,4,1; 14 -> 4,4,4,2; 2 on 4 -> 1,1,0,0.
  CheckSplits(ChunkRule::kTorch, {{10, 4, {3, 3, 3, 1}},
                                  {13, 4, {4, 4, 4, 1}},
                                  {14, 4, {4, 4, 4, 2}},
                                  {2, 4, {1, 1, 0, 0}},
                                  {5, 4, {2, 2, 1, 0}},
                                  {0, 3, {0, 0, 0}}});
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
  // docs/pytorch-semantics.md section 8.1a: (3,4) -> 0,0,0,3; (2,4) -> 0,0,0,2; (5,4) -> 1,1,1,2; (10,4) ->
  // 3,3,3,1.
  CheckSplits(ChunkRule::kPhysicsNemo, {{3, 4, {0, 0, 0, 3}},
                                        {2, 4, {0, 0, 0, 2}},
                                        {5, 4, {1, 1, 1, 2}},
                                        {10, 4, {3, 3, 3, 1}},
                                        {8, 4, {2, 2, 2, 2}}});
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
  CheckRows(ComputeLayouts(spec), {3, 2, 3, 2, 3, 2, 2, 1}, {0, 3, 5, 8, 10, 13, 15, 17}, 2);
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
  CheckRows(ComputeLayouts(spec), {2, 2, 2, 2, 2, 2, 2, 1}, {0, 8, 2, 10, 4, 12, 6, 14});
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

TEST_CASE("closed-form shard size and offset equal the prefix sums of SplitSizes",
          "[engine][layout][scale]") {
  // The slow definition: entry i of SplitSizes and the sum of the entries before it.
  for (ChunkRule rule : {ChunkRule::kTorch, ChunkRule::kPhysicsNemo}) {
    for (int64_t n = 1; n <= 19; ++n) {
      for (int64_t L = 0; L <= 80; ++L) {
        std::vector<int64_t> sizes = SplitSizes(L, n, rule);
        int64_t before = 0;
        for (int64_t i = 0; i < n; ++i) {
          INFO("rule=" << ChunkRuleName(rule) << " L=" << L << " n=" << n << " i=" << i);
          CHECK(LocalShardSizeAndOffset(L, n, i, rule) ==
                std::pair<int64_t, int64_t>{sizes[static_cast<size_t>(i)], std::min(before, L)});
          before += sizes[static_cast<size_t>(i)];
        }
      }
    }
  }
}

namespace {

// Every rank's interval per tensor dim computed the slow way: for each shard in shard order,
// the whole SplitSizes vector of the current extent and the prefix sum up to this rank.
std::vector<std::vector<Interval>> SlowLayouts(const TensorSpec& spec) {
  const ShardOrder order = spec.EffectiveOrder();
  std::vector<std::vector<Interval>> out;
  for (int64_t r = 0; r < spec.mesh.size(); ++r) {
    std::vector<int64_t> coord = spec.mesh.Coordinate(r);
    std::vector<Interval> dims;
    for (int64_t e : spec.shape) dims.push_back({0, e});
    for (const ShardOrderEntry& entry : order) {
      Interval& iv = dims[static_cast<size_t>(entry.tensor_dim)];
      for (int md : entry.mesh_dims) {
        std::vector<int64_t> sizes = SplitSizes(iv.size(), spec.mesh.size(md), spec.chunking);
        int64_t prefix = 0;
        for (int64_t k = 0; k < coord[static_cast<size_t>(md)]; ++k) prefix += sizes[static_cast<size_t>(k)];
        const int64_t begin = iv.begin + prefix;
        iv = {begin, begin + sizes[static_cast<size_t>(coord[static_cast<size_t>(md)])]};
      }
    }
    out.push_back(dims);
  }
  return out;
}

}  // namespace

TEST_CASE("per-rank layouts equal the slow all-ranks reference on sweeps", "[engine][layout][scale]") {
  const std::vector<Shape> meshes = {{5}, {3, 4}, {2, 3, 2}, {4, 1, 3}};
  const std::vector<Shape> shapes = {{0, 3}, {7, 5}, {13, 1}, {24, 9}};
  const char* two_d[] = {"S(0)", "S(1)", "R", "P(sum)"};
  for (ChunkRule rule : {ChunkRule::kTorch, ChunkRule::kPhysicsNemo}) {
    for (const Shape& mesh : meshes) {
      // Every assignment of the four placements to the mesh dims.
      size_t combos = 1;
      for (size_t d = 0; d < mesh.size(); ++d) combos *= 4;
      for (size_t c = 0; c < combos; ++c) {
        std::string placements;
        size_t code = c;
        for (size_t d = 0; d < mesh.size(); ++d, code /= 4)
          placements += (d ? "," : "") + std::string(two_d[code % 4]);
        for (const Shape& shape : shapes) {
          for (bool reversed : {false, true}) {
            Placements parsed = ParsePlacements(placements, "test");
            std::optional<ShardOrder> order;
            if (reversed) {  // every sharded tensor dim sharded by its mesh dims right to left
              std::vector<std::vector<int>> lists(shape.size());
              for (size_t md = parsed.size(); md-- > 0;)
                if (parsed[md].IsShard())
                  lists[static_cast<size_t>(parsed[md].dim)].push_back(static_cast<int>(md));
              order = ListsToOrder(lists);
            }
            TensorSpec spec = MakeSpec(Mesh(mesh), parsed, order, shape, DType::kF32, rule, {}, "test");
            INFO(placements << " on " << FormatShape(mesh) << " shape " << FormatShape(shape)
                            << (reversed ? " reversed order" : "") << " " << ChunkRuleName(rule));
            std::vector<std::vector<Interval>> slow = SlowLayouts(spec);
            std::vector<RankLayout> fast = ComputeLayouts(spec);
            REQUIRE(fast.size() == slow.size());
            for (size_t r = 0; r < fast.size(); ++r) {
              for (size_t d = 0; d < shape.size(); ++d) {
                const Interval want = slow[r][d];
                CHECK(fast[r].local_shape[d] == want.size());
                CHECK(fast[r].global_offset[d] == (want.size() > 0 ? want.begin : shape[d]));
                CHECK(IndexSetSize(fast[r].indices[d]) == want.size());
                if (want.size() > 0) CHECK(fast[r].indices[d] == IndexSet{want});
              }
            }
          }
        }
      }
    }
  }
}

TEST_CASE("one rank of a 2^20-rank mesh is laid out without visiting the others", "[engine][layout][scale]") {
  // Chunk c = ceil(3000000 / 2^20) = 3: rank r holds [3r, 3r+3) while 3r < 3000000, so the
  // last non-empty rank is 999999 and every later rank is empty at offset 3000000.
  TensorSpec spec = Spec({int64_t{1} << 20}, "S(0)", {3000000, 2});
  for (int64_t r : {int64_t{0}, int64_t{999999}, int64_t{1000000}, (int64_t{1} << 20) - 1}) {
    RankLayout l = ComputeRankLayout(spec, r);
    const int64_t begin = std::min<int64_t>(3 * r, 3000000);
    const int64_t end = std::min<int64_t>(3 * r + 3, 3000000);
    CHECK(l.local_shape == Shape{end - begin, 2});
    CHECK(l.global_offset[0] == (end > begin ? begin : 3000000));
  }
}

TEST_CASE("index ranges print in the notation of shardscope layout and the GUI range table", "[layout]") {
  // A strided rank: rows [0,2) and [4,6) of dim 0, all 3 columns of dim 1.
  CHECK(FormatIndices({{{0, 2}, {4, 6}}, {{0, 3}}}) == "[0,2)+[4,6) x [0,3)");
  CHECK(FormatIndices({{}, {{0, 3}}}) == "{} x [0,3)");
  CHECK(FormatIndices({}) == "()");
}
