// Regressions found by the property tests, each with its expected value derived by hand.
#include <catch2/catch.hpp>

#include "shardscope/engine/plan/planner.hpp"
#include "shardscope/program/runner.hpp"
#include "shardscope/program/scenario.hpp"

using namespace shardscope::engine;
using namespace shardscope::program;

namespace {
TensorSpec Spec(const Mesh& mesh, const char* placements, Shape shape, DType dtype = DType::kF32) {
  return MakeSpec(mesh, ParsePlacements(placements, "t"), std::nullopt, std::move(shape), dtype,
                  ChunkRule::kTorch, {}, "t");
}
}  // namespace

TEST_CASE("size-1 mesh dims may leave the shard order out of turn", "[engine][regression]") {
  // 3x1, [R,S(0)] -> [S(0),R]: the source has one shard (num_shards == 1), so greedy runs only
  // pass 2: (0, R->S(0)) then (1, S(0)->R). Mesh dim 1 is not the newest in dim 0's order
  // [1,0] when it leaves, which is harmless because it has size 1 and never split anything.
  Mesh mesh({3, 1});
  Plan plan = MakePlan(Spec(mesh, "R,S(0)", {6}), Spec(mesh, "S(0),R", {6}), 0, {});
  REQUIRE(plan.optimized.size() == 2);
  CHECK(plan.notation == "RS(0)->S(0)[1]S(0)[0]->S(0)R");
  CHECK(CountCollectives(plan.optimized, mesh) == 0);
}

TEST_CASE("a flattened sum/avg merge whose avg dims have size 1 is a plain sum", "[engine][regression]") {
  // 1x3x3 with every flattened mesh, [P(avg),P(sum),P(sum)] -> R,R,R: greedy emits three
  // all_reduces in mesh-dim order, merged into one over dims 0,1,2. The avg dim has size 1, so
  // the value is the sum over the 9 ranks divided by 1 (not the average over 9).
  Mesh mesh({1, 3, 3});
  mesh.RegisterAllFlattened();
  Plan plan = MakePlan(Spec(mesh, "P(avg),P(sum),P(sum)", {4}, DType::kI64),
                       Spec(mesh, "R,R,R", {4}, DType::kI64), 0, {});
  REQUIRE(plan.optimized.size() == 1);
  CHECK(plan.optimized[0].flattened);
  CHECK(plan.optimized[0].src == Placement::Partial(ReduceOp::kSum));
  CHECK(plan.optimized[0].avg_scale == 1);
  // Executed end to end: --verify compares the full tensor with the seeded global tensor.
  Scenario sc = ParseScenario(R"JSON({"mesh": [1, 3, 3], "flatten": "all",
    "tensors": {"x": {"shape": [4], "dtype": "i64", "placements": ["P(avg)", "P(sum)", "P(sum)"]}},
    "steps": [{"redistribute": "x", "to": ["R", "R", "R"]}]})JSON",
                              "regression.json");
  RunOptions options;
  options.verify = true;
  RunReport report = RunScenario(sc, options);
  REQUIRE(report.steps.size() == 1);
  CHECK(report.steps[0].verified);
}
