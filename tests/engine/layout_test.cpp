#include <catch2/catch.hpp>

#include "shardscope/engine/layout.hpp"

using namespace shardscope::engine;

TEST_CASE("torch.chunk sizes", "[engine][layout]") {
  CHECK(SplitSizes(10, 4, ChunkRule::kTorch) == std::vector<int64_t>{3, 3, 3, 1});
}
