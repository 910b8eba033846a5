#include <catch2/catch.hpp>
#include <filesystem>

#include "shardscope/error.hpp"
#include "shardscope/program/scenario.hpp"

using namespace shardscope::engine;
using namespace shardscope::program;

namespace {
std::string ErrorOf(const std::string& text) {
  try {
    ParseScenario(text, "s.json");
  } catch (const shardscope::Error& e) {
    return e.what();
  }
  return "no error";
}
}  // namespace

TEST_CASE("every sample scenario parses", "[engine][scenario]") {
  int count = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(SHARDSCOPE_SOURCE_DIR) + "/samples")) {
    if (entry.path().extension() != ".json") continue;
    INFO(entry.path());
    CHECK_NOTHROW(LoadScenario(entry.path().string()));
    ++count;
  }
  CHECK(count >= 6);
}

TEST_CASE("a scenario carries mesh, flattening, tensors and steps", "[engine][scenario]") {
  Scenario sc = ParseScenario(R"JSON({
    "mesh": [2, 2], "mesh_dim_names": ["dp", "tp"], "flatten": [["dp", "tp"]],
    "tensors": {"x": {"shape": [8, 4], "dtype": "bf16", "placements": "S(0),S(-1)", "shapes": "infer", "seed": 9}},
    "steps": [{"redistribute": "x", "to": ["R", "S(1)"], "planner": "graph", "optimize": false}]
  })JSON",
                              "s.json");
  CHECK(sc.mesh.HasFlattened({0, 1}));
  REQUIRE(sc.tensors.size() == 1);
  CHECK(sc.tensors[0].spec.placements[1] == Placement::Shard(1));  // S(-1) normalized
  CHECK(sc.tensors[0].spec.dtype == DType::kBF16);
  CHECK(sc.tensors[0].shapes == ShapeMode::kInfer);
  CHECK(sc.tensors[0].seed == 9);
  REQUIRE(sc.steps.size() == 1);
  CHECK(sc.steps[0].options.planner == PlannerChoice::kGraph);
  CHECK_FALSE(sc.steps[0].options.optimize);
}

TEST_CASE("scenario errors name file, line, column and the value", "[engine][scenario]") {
  // Syntax error: the missing comma before "tensors" on line 2; parsing stops on the closing
  // quote of the unexpected "tensors" (column 10).
  CHECK_THAT(ErrorOf("{\"mesh\": [4]\n \"tensors\": {}}"), Catch::StartsWith("s.json:2:10: invalid JSON"));
  // A bad placement: line 3, column of the string value.
  std::string bad_placement =
      "{\"mesh\": [4],\n \"tensors\": {\"x\": {\"shape\": [4],\n   \"placements\": [\"S(3)\"]}},\n "
      "\"steps\": []}";
  CHECK_THAT(
      ErrorOf(bad_placement),
      Catch::StartsWith(
          "s.json:3:19: /tensors/x/placements/0: placement: 'S(3)' shards dim 3 but the tensor has 1 dims"));
  // Unknown tensor in a step.
  std::string bad_step =
      "{\"mesh\": [2], \"tensors\": {\"x\": {\"shape\": [4], \"placements\": [\"R\"]}},\n"
      " \"steps\": [{\"redistribute\": \"y\", \"to\": [\"S(0)\"]}]}";
  CHECK_THAT(ErrorOf(bad_step), Catch::StartsWith("s.json:2:29: /steps/0/redistribute: no tensor named 'y'"));
  CHECK_THAT(ErrorOf("{\"mesh\": [2, 0], \"tensors\": {}, \"steps\": []}"),
             Catch::Contains("/mesh/1: extent 0 must be >= 1"));
  CHECK_THAT(ErrorOf("{\"mesh\": [2], \"steps\": []}"), Catch::Contains("missing required field 'tensors'"));
  CHECK_THAT(ErrorOf("{\"mesh\": [2], \"tensors\": {\"x\": {\"shape\": [4], \"placements\": [\"R\"], "
                     "\"shapes\": \"guess\"}}, \"steps\": []}"),
             Catch::Contains("'guess' is not a shape mode"));
  CHECK_THAT(ErrorOf("{\"mesh\": [2], \"tensors\": {\"x\": {\"shape\": [4], \"placements\": [\"R\", "
                     "\"R\"]}}, \"steps\": []}"),
             Catch::Contains("2 placements 'R,R' for a 1-d mesh"));
  CHECK_THAT(ErrorOf("{\"mesh\": [2], \"mesh\": [3], \"tensorz\": {}}"),
             Catch::Contains("unknown field 'tensorz'"));
  // Extents above 2^48 (the limit of layouts and traces) are refused, not overflowed: the fuzzer
  // found an extent of 2^63-1 overflowing torch.chunk's ceil division.
  CHECK_THAT(ErrorOf("{\"mesh\": [2], \"tensors\": {\"x\": {\"shape\": [3, 9223372036854775807], "
                     "\"placements\": [\"S(1)\"]}}, \"steps\": []}"),
             Catch::Contains("extent 9223372036854775807 of tensor dim 1 is above 2^48 = 281474976710656"));
  CHECK_NOTHROW(
      ParseScenario("{\"mesh\": [2], \"tensors\": {\"x\": {\"shape\": [281474976710656], "
                    "\"placements\": [\"S(0)\"]}}, \"steps\": []}",
                    "s.json"));
  CHECK_THAT(ErrorOf("[1, 2]"), Catch::Contains("must be a JSON object"));
  CHECK_THAT(ErrorOf(""), Catch::StartsWith("s.json:1:1: invalid JSON"));
  CHECK_THROWS_WITH(LoadScenario("/nonexistent/x.json"), Catch::Contains("cannot open scenario file"));
}
