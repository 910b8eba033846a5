// GL-free pieces of the mesh and layout panels at scale (issue 18 items 3 and 7): bytes matrices
// with shape negotiation apart from data, the aggregation of a mesh into blocks along its dims, and
// the thinning of layout axis labels. Expected values come from the definitions in the headers and
// from the events of tests/golden/trace/two_rank:
//   redistribute 1, step 0: shape_exchange (negotiated) r0 sends [0, 16], r1 sends [16, 0];
//                           all_to_all r0 sends [0, 24], r1 sends [32, 0] (to group [0, 1]).
#include <catch2/catch.hpp>

#include <set>
#include <string>
#include <vector>

#include "axis_labels.hpp"
#include "mesh_view_model.hpp"
#include "shardscope/trace/reader.hpp"

namespace {

namespace trace = shardscope::trace;
using namespace shardscope::app::gui;  // ComputeBytesMatrix, AggregateMesh, PlaceAxisLabels, ...

}  // namespace

TEST_CASE("bytes matrix: data and shape negotiation apart, by rank and by block", "[gui][mesh]") {
  const trace::Model model = trace::ReadTraceDir(SHARDSCOPE_SOURCE_DIR "/tests/golden/trace/two_rank");
  const RedistributeView view = BuildRedistributeView(model, 1);
  REQUIRE(view.ok());
  const std::vector<int64_t> identity = {0, 1};
  const BytesMatrix data = ComputeBytesMatrix(view, 0, false, identity, 2, identity, 2);
  CHECK(data.bytes == std::vector<int64_t>{0, 24, 32, 0});
  CHECK(data.total == 56);
  CHECK(data.max == 32);
  const BytesMatrix negotiation = ComputeBytesMatrix(view, 0, true, identity, 2, identity, 2);
  CHECK(negotiation.bytes == std::vector<int64_t>{0, 16, 16, 0});
  const ByteTotals totals = ComputeByteTotals(view, 0);
  CHECK(totals.data == 24 + 32);
  CHECK(totals.negotiation == 16 + 16);
  // Both ranks in one block: the block matrix is the sum of every entry.
  const std::vector<int64_t> one_block = {0, 0};
  CHECK(ComputeBytesMatrix(view, 0, false, one_block, 1, one_block, 1).bytes == std::vector<int64_t>{56});
  // A rank mapped to -1 is left out.
  CHECK(ComputeBytesMatrix(view, 0, false, {0, -1}, 1, identity, 2).bytes == std::vector<int64_t>{0, 24});
  CHECK(ComputeBytesMatrix(view, 5, false, identity, 2, identity, 2).total == 0);  // no such step
}

TEST_CASE("mesh blocks: equal boxes along every mesh dim, each rank in exactly one", "[gui][mesh]") {
  SECTION("64x64 -> 8x8 blocks of 8x8 ranks") {
    const MeshBlocks b = AggregateMesh({64, 64}, 64);
    CHECK(b.block == std::vector<int64_t>{8, 8});
    CHECK(b.blocks == std::vector<int64_t>{8, 8});
    // Rank 8*64 + 9 has coordinate (8, 9): block (1, 1) = 9.
    CHECK(b.BlockOf(8 * 64 + 9) == 9);
    const std::vector<int64_t> ranks = b.Ranks(9);
    REQUIRE(ranks.size() == 64);
    CHECK(ranks.front() == 8 * 64 + 8);
    CHECK(ranks.back() == 15 * 64 + 15);
    CHECK(b.Origin(9) == std::vector<int64_t>{8, 8});
  }
  SECTION("128x128 (16,384 ranks) -> 8x8 blocks of 16x16; a 3-D mesh with an odd size") {
    CHECK(AggregateMesh({128, 128}, 64).block == std::vector<int64_t>{16, 16});
    const MeshBlocks b = AggregateMesh({3, 20, 7}, 16);
    CHECK(b.count() <= 16);
    // Every rank lands in the block whose box contains its coordinate, and once.
    std::vector<int> seen(3 * 20 * 7, 0);
    for (int64_t k = 0; k < b.count(); ++k) {
      const auto origin = b.Origin(k), extent = b.Extent(k);
      for (int64_t r : b.Ranks(k)) {
        ++seen[static_cast<size_t>(r)];
        CHECK(b.BlockOf(r) == k);
        const int64_t c[3] = {r / 140, (r / 7) % 20, r % 7};
        for (size_t d = 0; d < 3; ++d) {
          CHECK(c[d] >= origin[d]);
          CHECK(c[d] < origin[d] + extent[d]);
        }
      }
    }
    for (int n : seen) CHECK(n == 1);
  }
  SECTION("a small mesh stays one rank per block") {
    CHECK(AggregateMesh({4, 4}, 64).block == std::vector<int64_t>{1, 1});
  }
}

TEST_CASE("layout axis labels never overlap, keep the last index, and sit on their index", "[gui][layout]") {
  for (int64_t n : {4, 64, 128, 4096}) {
    std::vector<int64_t> breaks;
    for (int64_t i = 0; i <= n; ++i) breaks.push_back(i * 2);  // a shard boundary every 2 elements
    const float origin = 40, width = 500, scale = width / static_cast<float>(2 * n);
    auto extent = [](int64_t v) { return 7.0f * static_cast<float>(std::to_string(v).size()); };
    const auto labels = PlaceAxisLabels(breaks, origin, scale, extent, 6.0f);
    INFO(n << " shards");
    REQUIRE(!labels.empty());
    CHECK(labels.front().value == 0);
    CHECK(labels.back().value == 2 * n);
    for (size_t i = 0; i < labels.size(); ++i) {
      const float at = origin + static_cast<float>(labels[i].value) * scale;
      CHECK(labels[i].lo == Approx(at - extent(labels[i].value) / 2));
      CHECK(labels[i].hi == Approx(at + extent(labels[i].value) / 2));
      if (i > 0) CHECK(labels[i - 1].hi + 6.0f <= labels[i].lo + 1e-3f);
    }
    if (n == 4) CHECK(labels.size() == breaks.size());  // room for every one
  }
}
