// Repeats are streamed (issue 17 item 4): two repetitions describe any number of them.
#include <catch2/catch.hpp>
#include <filesystem>

#include "shardscope/program/runner.hpp"
#include "shardscope/program/scenario.hpp"
#include "shardscope/trace/reader.hpp"

using namespace shardscope::engine;
using namespace shardscope::program;

TEST_CASE("repeats are streamed: one row per first-repetition step, one per later step", "[engine][runner]") {
  // x: 4 f32 on 2 ranks. S(0) -> R all_gathers: each rank receives the other's 2 elements (8
  // bytes), 16 bytes in all; R -> S(0) is a local chunk (0 bytes). Every repetition after the
  // first starts from S(0) again, so the later ones repeat the same two steps.
  const Scenario sc = ParseScenario(R"JSON({"mesh": [2],
 "tensors": {"x": {"shape": [4], "placements": ["S(0)"]}},
 "steps": [{"redistribute": "x", "to": ["R"]}, {"redistribute": "x", "to": ["S(0)"]}]})JSON",
                                    "s.json");
  const auto dir = std::filesystem::temp_directory_path() / "shardscope_runner_repeat";
  std::filesystem::remove_all(dir);
  RunOptions options;
  options.repeat = 5;
  options.verify = true;
  options.trace_dir = dir;
  int64_t last_done = 0, last_total = 0;
  options.progress = [&](int64_t done, int64_t total) {
    last_done = done;
    last_total = total;
  };
  RunReport report = RunScenario(sc, options);
  REQUIRE(report.steps.size() == 4);
  CHECK(report.steps[0].repetition == 0);
  CHECK(report.steps[0].repetitions == 1);
  CHECK(report.steps[0].bytes_moved == 16);
  CHECK(report.steps[2].repetition == 1);
  CHECK(report.steps[2].repetitions == 4);
  CHECK(report.steps[2].bytes_moved == 4 * 16);
  CHECK(report.steps[3].bytes_moved == 0);
  for (const StepReport& s : report.steps) CHECK(s.verified);
  CHECK(last_done == 10);  // 5 repetitions x 2 steps, each executed step reported
  CHECK(last_total == 10);
  // The trace holds every executed redistribute with its own id.
  shardscope::trace::Model model = shardscope::trace::ReadTraceDir(dir);
  CHECK(model.redistributes.size() == 2 * 10);  // 10 per rank
  CHECK(model.RedistributeIds().size() == 10);
  std::filesystem::remove_all(dir);
}
