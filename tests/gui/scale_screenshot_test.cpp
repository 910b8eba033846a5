// The mesh view at scale, a 1-D mesh and the search box, under Xvfb with --keys and --geometry
// (issue 18 items 3, 4, 7 and 8). Expected values come from the definitions: the overview of a
// 64x64 mesh has 8x8 blocks of 8x8 ranks (AggregateMesh: the largest block count halves until at
// most kOverviewBlocks = 64 remain), block b covers dp [8*(b/8), +8) x tp [8*(b%8), +8); the data
// and negotiation byte totals are the bytes_sent of the step's collectives with negotiated false /
// true, summed from the trace's events here; a search hit is an entry whose fields contain every
// query term (search_model_test.cpp checks the matching itself).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "gui_test_support.hpp"
#include "program_test_traces.hpp"
#include "shardscope/program/runner.hpp"
#include "shardscope/program/scenario.hpp"
#include "shardscope/trace/reader.hpp"

using namespace shardscope_gui_test;
namespace trace = shardscope::trace;

namespace {

std::string ClickCentre(const nlohmann::json& rect) {
  const int x = static_cast<int>((rect[0].get<float>() + rect[2].get<float>()) / 2);
  const int y = static_cast<int>((rect[1].get<float>() + rect[3].get<float>()) / 2);
  return "click:" + std::to_string(x) + ":" + std::to_string(y) + ",wait";
}

// Bytes sent at `step` of redistribute `id` over every rank, negotiated or not (the definition).
std::pair<int64_t, int64_t> StepBytes(const trace::Model& model, int64_t id, int64_t step) {
  int64_t data = 0, negotiation = 0;
  for (const trace::RedistributeRecord* rec : model.RedistributesWithId(id))
    for (const trace::Collective& c : rec->collectives)
      if (c.step() == step)
        for (int64_t b : c.bytes_sent()) (c.negotiated() ? negotiation : data) += b;
  return {data, negotiation};
}

fs::path RunScenarioText(const std::string& text, const fs::path& dir) {
  const fs::path out = dir / "trace";
  if (fs::exists(out)) return out;
  program::RunOptions options;
  options.trace_dir = out;
  options.verify = true;
  program::RunReport report = program::RunScenario(program::ParseScenario(text, "test.json"), options);
  REQUIRE(!report.steps.empty());
  return out;
}

// The mesh view of a scenario's first redistribute, which must draw `ranks` rank cells.
nlohmann::json MeshShot(const fs::path& dir, const std::string& scenario, size_t ranks,
                        const std::string& keys = "") {
  const fs::path t = RunScenarioText(scenario, dir);
  auto geo = Shoot(dir, t.string() + " --select 0 --view mesh" + (keys.empty() ? "" : " --keys " + keys));
  REQUIRE(geo["mesh"]["cells"].size() == ranks);
  return geo;
}

}  // namespace

TEST_CASE("mesh view at 4096 ranks: blocks by mesh dim, a click expands one", "[gui][views][scale][mesh]") {
  fs::path dir = TempDir("mesh4096");
  auto gen = RunShell("python3 " + std::string(SHARDSCOPE_SOURCE_DIR) +
                          "/scripts/gen_synthetic_trace.py --mesh 64x64 --redistributes 1 --out " +
                          (dir / "trace").string(),
                      dir / "gen.txt");
  INFO(gen.output);
  REQUIRE(gen.exit_code == 0);
  const trace::Model model = trace::ReadTraceDir(dir / "trace");
  const auto [data, negotiation] = StepBytes(model, 0, 0);
  REQUIRE(data > 0);

  auto geo = Shoot(dir, (dir / "trace").string() + " --select 0 --view mesh --size 1400x900");
  const auto& mesh = geo["mesh"];
  CHECK(mesh["blocks"] == 64);
  CHECK(mesh["drill_block"] == -1);
  CHECK(mesh["data_bytes"] == data);
  CHECK(mesh["negotiation_bytes"] == negotiation);
  CHECK(mesh["matrix_total"] == data);  // the block matrix sums every data byte
  REQUIRE(mesh["cells"].size() == 64);
  // Every rank sends in this trace, so every block is drawn in a heat colour, not the background:
  // the view is not empty.
  Image img = LoadPng(dir / "shot.png");
  for (const auto& c : mesh["cells"]) {
    CHECK(c["kind"] == "block");
    const int x = static_cast<int>((c["rect"][0].get<float>() + c["rect"][2].get<float>()) / 2);
    const int y = static_cast<int>((c["rect"][1].get<float>() + c["rect"][3].get<float>()) / 2);
    const Rgb p = img.At(x, y);
    INFO("block " << c["id"] << " pixel " << int(p.r) << "," << int(p.g) << "," << int(p.b));
    CHECK(p.r + p.g + p.b > 200);
  }
  // Cells do not overlap and have room (at least 8 px).
  for (const auto& c : mesh["cells"]) CHECK(c["rect"][2].get<float>() - c["rect"][0].get<float>() >= 8);

  // Click block 9 (dp 8-15, tp 8-15): the panel shows its 64 ranks.
  std::string click;
  for (const auto& c : mesh["cells"])
    if (c["id"] == 9) click = ClickCentre(c["rect"]);
  REQUIRE(!click.empty());
  auto expanded =
      Shoot(dir, (dir / "trace").string() + " --select 0 --view mesh --size 1400x900 --keys " + click);
  CHECK(expanded["mesh"]["drill_block"] == 9);
  CHECK(expanded["mesh"]["focus_rank"] == 8 * 64 + 8);  // the block's first rank takes the focus
  std::set<int64_t> ranks;
  for (const auto& c : expanded["mesh"]["cells"]) {
    CHECK(c["kind"] == "rank");
    ranks.insert(c["id"].get<int64_t>());
  }
  std::set<int64_t> want;
  for (int64_t dp = 8; dp < 16; ++dp)
    for (int64_t tp = 8; tp < 16; ++tp) want.insert(dp * 64 + tp);
  CHECK(ranks == want);
}

TEST_CASE("mesh view: shape negotiation bytes apart from data", "[gui][views][mesh]") {
  // two_rank's redistribute 1 negotiates shapes (shape_exchange) before its all_to_all.
  fs::path dir = TempDir("mesh_negotiation");
  const std::string t = std::string(SHARDSCOPE_SOURCE_DIR) + "/tests/golden/trace/two_rank";
  const trace::Model model = trace::ReadTraceDir(t);
  const auto [data, negotiation] = StepBytes(model, 1, 0);
  REQUIRE(negotiation > 0);
  auto geo = Shoot(dir, t + " --select 1 --view mesh");
  CHECK(geo["mesh"]["blocks"] == 0);  // two ranks: no overview
  CHECK(geo["mesh"]["data_bytes"] == data);
  CHECK(geo["mesh"]["negotiation_bytes"] == negotiation);
  CHECK(geo["mesh"]["matrix_total"] == data);
  CHECK(geo["mesh"]["cells"].size() == 2);
}

TEST_CASE("a 1-D mesh lays its ranks on a ring, so group arrows do not share one line",
          "[gui][views][mesh]") {
  const auto geo =
      MeshShot(TempDir("mesh1d"),
               "{\"mesh\": [8], \"mesh_dim_names\": [\"dp\"], \"tensors\": {\"x\": {\"shape\": [16, 4], "
               "\"placements\": \"S(0)\"}}, \"steps\": [{\"redistribute\": \"x\", \"to\": \"S(1)\"}]}",
               8);
  const auto& cells = geo["mesh"]["cells"];
  // On a ring: the centres take more than two distinct rows and columns, and all lie at one
  // distance from their mean.
  std::vector<std::pair<float, float>> c;
  for (const auto& cell : cells)
    c.push_back({(cell["rect"][0].get<float>() + cell["rect"][2].get<float>()) / 2,
                 (cell["rect"][1].get<float>() + cell["rect"][3].get<float>()) / 2});
  std::set<int> xs, ys;
  float mx = 0, my = 0;
  for (auto [x, y] : c)
    xs.insert(static_cast<int>(x)), ys.insert(static_cast<int>(y)), mx += x / 8, my += y / 8;
  CHECK(xs.size() > 2);
  CHECK(ys.size() > 2);
  const float r0 = std::hypot(c[0].first - mx, c[0].second - my);
  CHECK(r0 > 20);
  for (auto [x, y] : c) CHECK(std::hypot(x - mx, y - my) == Approx(r0).margin(2));
}

TEST_CASE("a 3-D mesh: one grid per leading coordinate, cells apart, a click focuses a rank",
          "[gui][views][mesh]") {
  const fs::path dir = TempDir("mesh3d_cells");
  const std::string scenario =
      "{\"mesh\": [2, 2, 2], \"mesh_dim_names\": [\"pp\", \"dp\", \"tp\"], \"tensors\": {\"x\": "
      "{\"shape\": [8, 8, 4], \"placements\": \"S(0),S(1),R\"}}, \"steps\": [{\"redistribute\": \"x\", "
      "\"to\": \"R,S(1),S(0)\"}]}";
  const auto geo = MeshShot(dir, scenario, 8);
  const auto& cells = geo["mesh"]["cells"];
  CHECK(geo["mesh"]["focus_rank"] == 0);
  // No two cells overlap; ranks 0-3 (pp=0) and 4-7 (pp=1) are two separate 2x2 grids side by side.
  for (size_t a = 0; a < cells.size(); ++a) {
    for (size_t b = a + 1; b < cells.size(); ++b) {
      const auto &p = cells[a]["rect"], &q = cells[b]["rect"];
      const bool apart = p[2].get<float>() <= q[0].get<float>() || q[2].get<float>() <= p[0].get<float>() ||
                         p[3].get<float>() <= q[1].get<float>() || q[3].get<float>() <= p[1].get<float>();
      CHECK(apart);
    }
  }
  float right_of_pp0 = 0, left_of_pp1 = 1e9f;
  for (const auto& c : cells) {
    if (c["id"].get<int64_t>() < 4) right_of_pp0 = std::max(right_of_pp0, c["rect"][2].get<float>());
    if (c["id"].get<int64_t>() >= 4) left_of_pp1 = std::min(left_of_pp1, c["rect"][0].get<float>());
  }
  CHECK(right_of_pp0 < left_of_pp1);
  std::string click;
  for (const auto& c : cells)
    if (c["id"] == 5) click = ClickCentre(c["rect"]);
  CHECK(MeshShot(dir, scenario, 8, click)["mesh"]["focus_rank"] == 5);
}

TEST_CASE("search: hits, no matches, a click selects, Ctrl+F focuses the box", "[gui][input][search]") {
  fs::path dir = TempDir("search");
  const std::string two_rank = std::string(SHARDSCOPE_SOURCE_DIR) + "/tests/golden/trace/two_rank";
  SECTION("a collective kind finds its redistribute; a click selects it in every panel") {
    auto geo = Shoot(dir, two_rank + " --search all_to_all");
    CHECK(geo["search"]["query"] == "all_to_all");
    CHECK(geo["search"]["hits"] == 1);
    REQUIRE(geo["list_rows"].size() == 1);
    CHECK(geo["list_rows"][0]["id"] == 1);
    CHECK(geo["list_rows"][0]["kind"] == "redistribute");
    auto clicked =
        Shoot(dir, two_rank + " --search all_to_all --keys " + ClickCentre(geo["list_rows"][0]["rect"]));
    CHECK(clicked["selected_redistribute"] == 1);
    for (const auto& p : clicked["panels"]) CHECK(p["redistribute_id"] == 1);
  }
  SECTION("no matches") {
    auto geo = Shoot(dir, two_rank + " --search broadcast");
    CHECK(geo["search"]["hits"] == 0);
    CHECK(geo["list_rows"].empty());
  }
  SECTION("an op by name; a click selects the op") {
    const std::string program = std::string(SHARDSCOPE_SOURCE_DIR) + "/tests/golden/trace/program";
    auto geo = Shoot(dir, program + " --search conv2d");
    REQUIRE(geo["list_rows"].size() == 1);
    CHECK(geo["list_rows"][0]["kind"] == "op");
    CHECK(geo["list_rows"][0]["id"] == 1);
    auto clicked =
        Shoot(dir, program + " --search conv2d --keys " + ClickCentre(geo["list_rows"][0]["rect"]));
    CHECK(clicked["selected_op"] == 1);
  }
  SECTION("Ctrl+F gives the search box the keyboard focus") {
    CHECK(Shoot(dir, two_rank)["search"]["focused"] == false);
    CHECK(Shoot(dir, two_rank + " --keys CtrlF,wait")["search"]["focused"] == true);
  }
}
