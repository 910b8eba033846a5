// Sizes before allocation (issue 17 item 3): the run's memory estimate and the refusal.
#include <catch2/catch.hpp>
#include <cstdlib>

#include "shardscope/error.hpp"
#include "shardscope/program/runner.hpp"
#include "shardscope/program/scenario.hpp"

using namespace shardscope::engine;
using namespace shardscope::program;

namespace {

// x: 1000 f32 elements (4000 bytes) on 2 ranks, S(0) -> R.
const char* kScenario = R"JSON({"mesh": [2],
 "tensors": {"x": {"shape": [1000], "placements": ["S(0)"]}},
 "steps": [{"redistribute": "x", "to": ["R"]}]})JSON";

}  // namespace

TEST_CASE("memory estimate follows its definition", "[engine][runner][memory]") {
  const Scenario sc = ParseScenario(kScenario, "s.json");
  RunOptions options;
  // Definition (runner.hpp): global 4000; per rank the live shard at its largest placement (R:
  // 4000) plus the largest step's staging (input 2000 + output 4000 = 6000) -> 10000 per rank.
  MemoryEstimate est = EstimateMemory(sc, options);
  CHECK(est.process_bytes == 4000 + 2 * 10000);  // local: both ranks in this process
  CHECK(est.largest_tensor == "x");
  CHECK(est.largest_tensor_bytes_per_rank == 4000);
  CHECK(est.largest_tensor_global_bytes == 4000);
  CHECK(est.largest_tensor_where == "s.json:2:19");
  options.verify = true;  // + a reference copy of the output (4000) per rank
  CHECK(EstimateMemory(sc, options).process_bytes == 4000 + 2 * 14000);
  options.verify = false;
  options.backend = "mpi";  // one rank per process
  CHECK(EstimateMemory(sc, options).process_bytes == 4000 + 10000);
  options.backend = "local";
  // With repeats the step runs again from where it ended, R -> R: staging 4000 + 4000 = 8000,
  // 12000 per rank, and every later repetition is that same step again.
  options.repeat = 2;
  CHECK(EstimateMemory(sc, options).process_bytes == 4000 + 2 * 12000);
  options.repeat = 100000;
  CHECK(EstimateMemory(sc, options).process_bytes == 4000 + 2 * 12000);
}

TEST_CASE("a run that cannot fit is refused before allocating", "[engine][runner][memory]") {
  const Scenario sc = ParseScenario(kScenario, "s.json");
  ::setenv("SHARDSCOPE_MEMORY_LIMIT", "10000", 1);
  try {
    RunScenario(sc, RunOptions{});
    FAIL("expected a refusal");
  } catch (const shardscope::Error& e) {
    CHECK(e.code() == shardscope::ErrorCode::kInvalidInput);
    CHECK_THAT(e.what(),
               Catch::StartsWith("s.json:2:19: tensor 'x' needs up to 0.00 GiB (4000 bytes) per rank"));
    CHECK_THAT(e.what(),
               Catch::Contains("about 0.00 GiB (24000 bytes) in this process but 0.00 GiB (10000 bytes)"));
  }
  ::setenv("SHARDSCOPE_MEMORY_LIMIT", "24000", 1);  // exactly enough
  CHECK_NOTHROW(RunScenario(sc, RunOptions{}));
  ::setenv("SHARDSCOPE_MEMORY_LIMIT", "lots", 1);
  CHECK_THROWS_WITH(RunScenario(sc, RunOptions{}),
                    Catch::Contains("SHARDSCOPE_MEMORY_LIMIT='lots' is not a positive number of bytes"));
  ::unsetenv("SHARDSCOPE_MEMORY_LIMIT");
  // 2^45 f64 elements (256 TiB) fit on no machine: refused from the machine's own figure.
  const Scenario huge = ParseScenario(R"JSON({"mesh": [2],
 "tensors": {"w": {"shape": [35184372088832], "dtype": "f64", "placements": ["S(0)"]}},
 "steps": [{"redistribute": "w", "to": ["R"]}]})JSON",
                                      "h.json");
  // Its largest shard is the replicated whole: 2^45 x 8 = 2^48 bytes = 262144 GiB per rank.
  CHECK_THROWS_WITH(
      RunScenario(huge, RunOptions{}),
      Catch::StartsWith(
          "h.json:2:19: tensor 'w' needs up to 262144.00 GiB (281474976710656 bytes) per rank"));
}
