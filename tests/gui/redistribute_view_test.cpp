// GL-free redistribute view model (issue 16): traces written by a real run with a non-default
// shard order or with _StridedShard placements give every step a state whose layouts are the
// definition's (MakeSpec + ComputeLayouts of the placements the notation names), instead of
// "layout unavailable". The engine's one parser reads the trace's order text both ways.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <string>

#include "shardscope/engine/core/layout.hpp"
#include "shardscope/engine/core/shard_order.hpp"
#include "shardscope/program/runner.hpp"
#include "shardscope/program/scenario.hpp"
#include "shardscope/trace/reader.hpp"
#include "view_model.hpp"

namespace {

namespace fs = std::filesystem;
namespace engine = shardscope::engine;
namespace program = shardscope::program;
namespace trace = shardscope::trace;
using shardscope::app::gui::BuildRedistributeView;
using shardscope::app::gui::LayoutsFor;
using shardscope::app::gui::RedistributeView;

fs::path Temp(const std::string& name) {
  fs::path dir =
      fs::temp_directory_path() / ("shardscope_redistribute_view_" + std::to_string(::getpid())) / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// Runs `scenario_json` on the local backend with a trace in a fresh temporary directory `name`,
// verified, and loads the trace.
trace::Model RunTraced(const std::string& scenario_json, const std::string& name) {
  const fs::path dir = Temp(name);
  program::Scenario scenario = program::ParseScenario(scenario_json, "test.json");
  program::RunOptions options;
  options.trace_dir = dir;
  options.verify = true;
  program::RunReport report = program::RunScenario(scenario, options);
  REQUIRE(report.steps.size() == 1);
  CHECK(report.steps[0].verified);
  return trace::ReadTraceDir(dir);
}

std::vector<engine::RankLayout> Layouts(const engine::Mesh& mesh, const char* placements, const char* order,
                                        engine::Shape shape) {
  std::optional<engine::ShardOrder> o;
  if (order) o = engine::ParseShardOrder(order, "test");
  return engine::ComputeLayouts(engine::MakeSpec(mesh, engine::ParsePlacements(placements, "test"), o,
                                                 std::move(shape), engine::DType::kF32,
                                                 engine::ChunkRule::kTorch, {}, "test"));
}

bool SameIndices(const std::vector<engine::RankLayout>& a, const std::vector<engine::RankLayout>& b) {
  if (a.size() != b.size()) return false;
  for (size_t r = 0; r < a.size(); ++r) {
    if (a[r].indices != b[r].indices) return false;
  }
  return true;
}

// The view of redistribute 0, which must have been built without an error.
RedistributeView OkView(const trace::Model& model) {
  RedistributeView view = BuildRedistributeView(model, 0);
  INFO(view.error);
  REQUIRE(view.ok());
  return view;
}

// True when the view's layouts at `state` hold the definition's indices for these placements.
bool LayoutsAre(const RedistributeView& view, const engine::PlanState& state, const engine::Mesh& mesh,
                const char* placements, const char* order, engine::Shape shape) {
  return SameIndices(LayoutsFor(view, state), Layouts(mesh, placements, order, std::move(shape)));
}

}  // namespace

TEST_CASE("a non-default shard order is traced in PyTorch's notation and every step has layouts",
          "[gui][view][order]") {
  // The issue's case: 2x2, "order": "0:1,0". Tensor dim 0 is split by mesh dim 1 first, so
  // the trace's src_order is S(0)[1]S(0)[0] (format_shard_order_str: [k] is the position).
  trace::Model model = RunTraced(
      "{\"mesh\": [2, 2], \"tensors\": {\"x\": {\"shape\": [8, 6], \"placements\": \"S(0),S(0)\", \"order\": "
      "\"0:1,0\"}}, \"steps\": [{\"redistribute\": \"x\", \"to\": \"R,R\"}]}",
      "order");
  RedistributeView view = OkView(model);
  CHECK(view.first->begin->src_order() == "S(0)[1]S(0)[0]");
  CHECK(view.first->begin->dst_order() == "");
  // Graph plan (non-default order): the newest mesh dim of the order (0) is gathered first,
  // then mesh dim 1: S(0)[1]S(0)[0] -> RS(0) -> RR.
  CHECK(view.first->begin->notation() == "S(0)[1]S(0)[0]->RS(0)->RR");
  REQUIRE(view.states.size() == 3);
  engine::Mesh mesh({2, 2});
  CHECK(LayoutsAre(view, view.states[0], mesh, "S(0),S(0)", "0:1,0", {8, 6}));
  CHECK(LayoutsAre(view, view.states[1], mesh, "R,S(0)", nullptr, {8, 6}));
  CHECK(LayoutsAre(view, view.states[2], mesh, "R,R", nullptr, {8, 6}));
}

TEST_CASE("strided shards: a 4x2 mesh, 15 rows, _S(0,2),S(0) -> R,R has layouts at every step",
          "[gui][view][strided]") {
  // U1: [_S(0,2), S(0)] on (4,2) with 15 rows holds rows at offsets 0,8,2,10,4,12,6,14; it
  // decodes to S0S0 with order 0:1,0 (T0 test_shard_order_same_data_as_strided_shard), so the
  // graph planner gathers mesh dim 0 first, leaving R,S(0).
  trace::Model model = RunTraced(
      "{\"mesh\": [4, 2], \"tensors\": {\"x\": {\"shape\": [15], \"placements\": \"_S(0, 2),S(0)\"}}, "
      "\"steps\": [{\"redistribute\": \"x\", \"to\": \"R,R\"}]}",
      "strided");
  RedistributeView view = OkView(model);
  REQUIRE(view.states.size() == 3);
  engine::Mesh mesh({4, 2});
  auto before = LayoutsFor(view, view.states[0]);
  CHECK(SameIndices(before, Layouts(mesh, "_S(0, 2),S(0)", nullptr, {15})));
  const int64_t offsets[] = {0, 8, 2, 10, 4, 12, 6, 14};
  for (int r = 0; r < 8; ++r) CHECK(before[static_cast<size_t>(r)].global_offset[0] == offsets[r]);
  CHECK(LayoutsAre(view, view.states[1], mesh, "R,S(0)", nullptr, {15}));
  CHECK(LayoutsAre(view, view.states[2], mesh, "R,R", nullptr, {15}));
}

TEST_CASE("literal _StridedShard with an explicit order is traced and drawn in that order",
          "[gui][view][strided]") {
  // Mesh 2x2x2, 31 rows: S(0),S(0),_S(0,3) applied in order 0,1,2 (explicit, so literal).
  trace::Model model = RunTraced(
      "{\"mesh\": [2, 2, 2], \"tensors\": {\"x\": {\"shape\": [31], \"placements\": \"S(0),S(0),_S(0,3)\", "
      "\"order\": \"0:0,1,2\"}}, \"steps\": [{\"redistribute\": \"x\", \"to\": \"R,S(0),S(0)\", \"order\": "
      "\"0:1,2\"}]}",
      "literal");
  RedistributeView view = OkView(model);
  CHECK(view.first->begin->src_order() == "S(0)[0]S(0)[1]_S(0, 3)[2]");
  engine::Mesh mesh({2, 2, 2});
  CHECK(LayoutsAre(view, view.states.front(), mesh, "S(0),S(0),_S(0,3)", "0:0,1,2", {31}));
  CHECK(LayoutsAre(view, view.states.back(), mesh, "R,S(0),S(0)", nullptr, {31}));
}

TEST_CASE("the trace's order text round-trips through the engine's one parser", "[gui][view][order]") {
  const engine::Placements p = engine::ParsePlacements("S(0),S(0),R,S(1)", "t");
  const engine::ShardOrder order = engine::ParseShardOrder("0:1,0;1:3", "t");
  const std::string text = engine::FormatShardOrderStr(p, order);
  CHECK(text == "S(0)[1]S(0)[0]RS(1)");
  CHECK(engine::ParseShardOrderStr(text, p, "t") == order);
  // Traces written before the notation stored the "0:1,0" form.
  CHECK(engine::ParseShardOrderStr("0:1,0;1:3", p, "t") == order);
  CHECK_FALSE(engine::ParseShardOrderStr("", p, "t").has_value());
  CHECK_THROWS_WITH(engine::ParseShardOrderStr("S(0)[1]S(0)[1]RS(1)", p, "src_order"),
                    Catch::Contains("src_order") && Catch::Contains("no valid position"));
  CHECK_THROWS_WITH(engine::ParseShardOrderStr("S(0)[1]S(1)[0]RS(1)", p, "src_order"),
                    Catch::Contains("names S(1) on mesh dim 1"));
}

TEST_CASE("a step's measured time names its slowest rank", "[gui][view]") {
  const trace::Model model = RunTraced(
      "{\"mesh\": [4], \"tensors\": {\"x\": {\"shape\": [8, 4], \"placements\": \"S(0)\"}}, \"steps\": "
      "[{\"redistribute\": \"x\", \"to\": \"R\"}]}",
      "slowest");
  const RedistributeView view = BuildRedistributeView(model, 0);
  REQUIRE(view.steps.size() == 1);
  // Definition: the rank with the largest end - begin of step 0 (the lowest such rank on a tie).
  int64_t want = -1, longest = -1;
  for (const trace::RedistributeRecord* rec : view.per_rank) {
    for (const trace::StepRecord& s : rec->steps) {
      if (s.begin->step != 0 || !s.end) continue;
      const int64_t d = s.end->t_ns - s.begin->t_ns;
      if (d > longest || (d == longest && rec->rank < want)) longest = d, want = rec->rank;
    }
  }
  REQUIRE(want >= 0);
  CHECK(view.steps[0].slowest_rank == want);
  CHECK(*view.steps[0].measured_max_ns == static_cast<double>(longest));
}
