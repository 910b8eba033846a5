#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

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

TEST_CASE("duplicate JSON keys are refused with both positions", "[engine][scenario][json]") {
  // A tensor defined twice: nlohmann would keep the second definition silently. The second "x"
  // is on line 3 column 3, the first on line 2 column 3 (columns count from 1).
  const std::string twice =
      "{\"mesh\": [2], \"tensors\": {\n"
      "  \"x\": {\"shape\": [4], \"placements\": [\"S(0)\"]},\n"
      "  \"x\": {\"shape\": [8], \"placements\": [\"R\"]}},\n"
      " \"steps\": []}";
  CHECK(ErrorOf(twice) ==
        "s.json:3:3: /tensors/x: duplicate key 'x' (first at 2:3); a JSON object's keys must be unique");
  // A step with two "to" keys: the second "to" starts at byte 57 of line 1 -> column 58.
  const std::string two_to =
      "{\"mesh\": [2], \"tensors\": {\"x\": {\"shape\": [4], \"placements\": [\"R\"]}}, \"steps\": "
      "[{\"redistribute\": "
      "\"x\", \"to\": [\"S(0)\"], \"to\": [\"R\"]}]}";
  const size_t first_to = two_to.find("\"to\"");
  const size_t second_to = two_to.find("\"to\"", first_to + 1);
  CHECK(ErrorOf(two_to) == "s.json:1:" + std::to_string(second_to + 1) +
                               ": /steps/0/to: duplicate key 'to' (first at 1:" +
                               std::to_string(first_to + 1) + "); a JSON object's keys must be unique");
  // Keys compare decoded: "\u0078" is "x".
  CHECK_THAT(ErrorOf("{\"mesh\": [2], \"tensors\": {\"x\": {\"shape\": [4], \"placements\": [\"R\"]}, "
                     "\"\\u0078\": {\"shape\": [4], \"placements\": [\"R\"]}}, \"steps\": []}"),
             Catch::Contains("/tensors/x: duplicate key 'x'"));
  // Equal keys in different objects are fine.
  CHECK_NOTHROW(
      ParseScenario("{\"mesh\": [2], \"tensors\": {\"x\": {\"shape\": [4], \"placements\": [\"R\"]}, "
                    "\"y\": {\"shape\": [4], \"placements\": [\"R\"]}}, \"steps\": []}",
                    "s.json"));
  // Program files go through the same parser: an op step with two "inputs".
  CHECK_THAT(ErrorOf("{\"mesh\": [2], \"tensors\": {\"a\": {\"shape\": [4, 4], \"placements\": [\"R\"]}}, "
                     "\"steps\": [{\"op\": \"mm\", \"inputs\": [\"a\", \"a\"], \"inputs\": [\"a\", \"a\"], "
                     "\"output\": \"y\"}]}"),
             Catch::Contains("/steps/0/inputs: duplicate key 'inputs'"));
}

TEST_CASE("tensor names with control characters are refused", "[engine][scenario][json]") {
  CHECK_THAT(
      ErrorOf("{\"mesh\": [2], \"tensors\": {\"a\\u001b[2J\": {\"shape\": [4], \"placements\": [\"R\"]}}, "
              "\"steps\": []}"),
      Catch::Contains("/tensors/a\\x1b[2J: tensor name contains the control character \\x1b"));
}

TEST_CASE("scenario files must be regular files under the size limit", "[engine][scenario][json]") {
  auto error_of_file = [](const std::string& path) {
    try {
      LoadScenario(path);
    } catch (const shardscope::Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(
      error_of_file("/dev/zero") ==
      "/dev/zero: is not a regular file (a device, FIFO or socket); a scenario file must be a regular file");
  CHECK(error_of_file("/") == "/: is a directory, not a scenario file");
  CHECK_THAT(error_of_file("/nonexistent/s.json"),
             Catch::Contains("/nonexistent/s.json: cannot open scenario file"));
  // A sparse file one byte over the 64 MiB limit is refused before it is read.
  const auto big = std::filesystem::temp_directory_path() / "shardscope_scenario_big.json";
  std::filesystem::remove(big);
  { std::ofstream(big).put(' '); }
  std::filesystem::resize_file(big, (uint64_t{64} << 20) + 1);
  CHECK(error_of_file(big.string()) == big.string() + ": scenario file is " +
                                           std::to_string((uint64_t{64} << 20) + 1) +
                                           " bytes, over the limit (limit 64 MiB)");
  std::filesystem::remove(big);
}

TEST_CASE("planning errors in scenario files carry file:line:column and the step's pointer",
          "[engine][scenario][json]") {
  // S(0) -> P(sum) is refused by PyTorch ("not supported yet"); the "to" value of step 0 is on
  // line 2 at column 39 (counted by hand: "steps" 1-7, ": [{" 8-11, "redistribute" 12-25, ...).
  CHECK_THAT(ErrorOf("{\"mesh\": [2], \"tensors\": {\"x\": {\"shape\": [4], \"placements\": [\"S(0)\"]}},\n"
                     "\"steps\": [{\"redistribute\": \"x\", \"to\": [\"P(sum)\"]}]}"),
             Catch::StartsWith("s.json:2:39: /steps/0/to: mesh dim 0: S(0) -> P(sum) is not supported"));
  // Greedy with a non-default order is planned by the graph planner, as PyTorch's
  // _gen_transform_infos_non_cached does before it reads the requested planner.
  const std::string greedy = ErrorOf(
      "{\"mesh\": [2, 2], \"tensors\": {\"x\": {\"shape\": [8], \"placements\": [\"S(0)\", \"S(0)\"], "
      "\"order\": "
      "\"0:1,0\"}},\n\"steps\": [{\"redistribute\": \"x\", \"to\": [\"R\", \"R\"], \"planner\": "
      "\"greedy\"}]}");
  CHECK(greedy == "no error");
}
