// Input scripts under Xvfb (issue 18, item 1): `--keys` replays key taps (press and release within
// one frame) and clicks through the same callbacks as real input before the screenshot; --geometry
// reports per panel which redistribute / step / op it shows. After any sequence every panel must
// show the selection the sequence defines: Down/Up move along the trace's redistribute ids (ascending),
// Right/Left along the optimized plan's steps (clamped), a click on a row or badge selects its
// redistribute. Also: --step in diff mode, every view on 3-D / strided / ordered / program traces,
// and Replicate drawn as replicas rather than shards.
#include <catch2/catch.hpp>

#include <algorithm>

#include "diff_test_traces.hpp"
#include "gui_test_support.hpp"
#include "program_test_traces.hpp"
#include "sample_data.hpp"
#include "shardscope/program/runner.hpp"
#include "shardscope/program/scenario.hpp"
#include "shardscope/trace/reader.hpp"

using namespace shardscope_gui_test;

namespace {

namespace trace = shardscope::trace;

int64_t StepsOf(const trace::Model& model, int64_t id) {
  return static_cast<int64_t>(model.RedistributesWithId(id).front()->begin->optimized_plan().size());
}

// Every panel that shows a redistribute shows `id`; those that show a step show `step`.
void CheckPanelsAgree(const nlohmann::json& geo, int64_t id, int64_t step,
                      const std::vector<std::string>& expect) {
  INFO(geo["panels"].dump());
  CHECK(geo["selected_redistribute"] == id);
  std::vector<std::string> seen;
  for (const auto& p : geo["panels"]) {
    const std::string name = p["panel"];
    seen.push_back(name);
    INFO("panel " << name);
    CHECK(p["redistribute_id"] == id);
    if (p["step"] != -1) CHECK(p["step"] == step);
  }
  for (const std::string& e : expect) CHECK(std::count(seen.begin(), seen.end(), e) == 1);
  for (const auto& c : geo["canvases"]) {
    CHECK(c["redistribute_id"] == id);
    CHECK(c["step"] == step);
  }
}

const std::vector<std::string> kMainPanels = {"list", "inspector", "timeline", "layout", "mesh", "merge"};

fs::path SampleTrace(const fs::path& dir) {
  fs::path t = dir / "trace";
  if (!fs::exists(t)) WritePlansTrace(DiffItems(false), t);
  return t;
}

// The sample trace (four redistributes), its model as the reader reads it, and its ids ascending.
struct SampleTraceInfo {
  fs::path dir;
  trace::Model model;
  std::vector<int64_t> ids;
};
SampleTraceInfo SampleTraceAndIds(const fs::path& dir) {
  SampleTraceInfo info{SampleTrace(dir), {}, {}};
  info.model = trace::ReadTraceDir(info.dir);
  info.ids = info.model.RedistributeIds();
  REQUIRE(info.ids.size() >= 3);
  return info;
}

std::string CentreClick(const nlohmann::json& rect) {
  const int x = static_cast<int>((rect[0].get<float>() + rect[2].get<float>()) / 2);
  const int y = static_cast<int>((rect[1].get<float>() + rect[3].get<float>()) / 2);
  return "click:" + std::to_string(x) + ":" + std::to_string(y);
}

}  // namespace

TEST_CASE("keys: every panel follows Down, Up, Right and Left taps shorter than a frame", "[gui][input]") {
  fs::path dir = TempDir("keys");
  const auto [t, model, ids] = SampleTraceAndIds(dir);
  // The definition of the keys, one tap at a time: Down/Up move to the next/previous id (if any)
  // and restart at step 0; Right/Left move one step within the plan (never past either end).
  auto expect = [&](const std::vector<std::string>& keys) {
    size_t index = 0;
    int64_t step = 0;
    for (const std::string& k : keys) {
      const int64_t last = std::max<int64_t>(0, StepsOf(model, ids[index]) - 1);
      if (k == "Down" && index + 1 < ids.size()) ++index, step = 0;
      if (k == "Up" && index > 0) --index, step = 0;
      if (k == "Right" && step < last) ++step;
      if (k == "Left" && step > 0) --step;
    }
    return std::make_pair(ids[index], step);
  };
  const std::vector<std::vector<std::string>> cases = {
      {"Down"},
      {"Down", "Down", "Right"},
      {"Down", "Down", "Down", "Up", "Right", "Right", "Left"},
      {"Down", "Right", "Down"},
      {"Down", "Down", "Down", "Down", "Right", "Up"}};
  for (const auto& keys : cases) {
    std::string script;
    for (const std::string& k : keys) script += (script.empty() ? "" : ",") + k;
    DYNAMIC_SECTION(script) {
      auto geo = Shoot(dir, t.string() + " --keys " + script);
      const auto [id, step] = expect(keys);
      CheckPanelsAgree(geo, id, step, kMainPanels);
    }
  }
}

TEST_CASE("clicks: a list row click, then keys, and every panel agrees", "[gui][input]") {
  fs::path dir = TempDir("clicks");
  const auto [t, model, ids] = SampleTraceAndIds(dir);
  auto first = Shoot(dir, t.string());
  CheckPanelsAgree(first, ids[0], 0, kMainPanels);
  std::string click_last;
  for (const auto& row : first["list_rows"])
    if (row["id"] == ids.back()) click_last = CentreClick(row["rect"]);
  REQUIRE(!click_last.empty());
  SECTION("click the last row") {
    CheckPanelsAgree(Shoot(dir, t.string() + " --keys " + click_last), ids.back(), 0, kMainPanels);
  }
  SECTION("click the last row, Up, Right") {
    const int64_t id = ids[ids.size() - 2];
    const int64_t step = std::min<int64_t>(1, StepsOf(model, id) - 1);
    CheckPanelsAgree(Shoot(dir, t.string() + " --keys " + click_last + ",Up,Right"), id, step, kMainPanels);
  }
}

TEST_CASE("clicks: a program badge selects its redistribute in every panel and its op",
          "[gui][input][program]") {
  fs::path dir = TempDir("program_click");
  fs::path t = dir / "trace";
  RunSampleProgram("attention", t);  // three implicit redistributes, badges on three ops
  auto first = Shoot(dir, t.string());
  const nlohmann::json* marker = nullptr;
  for (const auto& g : first["program"]) {
    if (g["kind"] == "marker" && g["redistribute_id"] != first["selected_redistribute"]) marker = &g;
  }
  REQUIRE(marker != nullptr);
  const int64_t id = (*marker)["redistribute_id"];
  auto geo = Shoot(dir, t.string() + " --keys " + CentreClick((*marker)["rect"]));
  CheckPanelsAgree(geo, id, 0, {"list", "inspector", "program", "layout", "mesh", "merge"});
  const trace::Model model = trace::ReadTraceDir(t);
  // The op that caused the redistribute (its op_id) is the program panel's op.
  for (const auto& p : geo["panels"]) {
    if (p["panel"] == "program") CHECK(p["op_id"] == model.RedistributesWithId(id).front()->begin->op_id);
  }
}

TEST_CASE("diff mode: --step selects the step on both sides, clamped to each side's plan",
          "[gui][diff][input]") {
  fs::path dir = TempDir("diff_step");
  const DiffDirs sides = WriteDiffTraces(dir);
  // Redistribute 1 ("w"): the candidate runs without the optimizer, so it has more steps.
  const trace::Model b = trace::ReadTraceDir(sides.baseline), c = trace::ReadTraceDir(sides.candidate);
  REQUIRE(StepsOf(c, 1) >= 2);
  auto geo = Shoot(
      dir, "--diff " + sides.baseline.string() + " " + sides.candidate.string() + " --select 1 --step 1");
  REQUIRE(geo["canvases"].size() == 4);
  for (const auto& canvas : geo["canvases"]) {
    const int64_t steps = StepsOf(canvas["side"] == "baseline" ? b : c, 1);
    INFO(canvas.dump());
    CHECK(canvas["step"] == std::min<int64_t>(1, steps - 1));
  }
}
