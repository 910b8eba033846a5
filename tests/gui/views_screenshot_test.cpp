// Every view on the traces the issue names (issue 18): a 3-D mesh, strided shards, a non-default
// shard order and a program, each under Xvfb with --geometry. Each view exits 0 and its panels
// report the selected redistribute; the layout canvases match the engine's layouts (definition:
// MakeSpec + ComputeLayouts); and Replicate reads as replicas, not as shards.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "diff_test_traces.hpp"
#include "gui_test_support.hpp"
#include "program_test_traces.hpp"
#include "sample_data.hpp"
#include "shardscope/program/runner.hpp"
#include "shardscope/program/scenario.hpp"

using namespace shardscope_gui_test;

namespace {

struct Traced {
  const char* name;
  const char* scenario;  // nullptr: the tp_mlp program sample
  engine::Shape mesh;
  const char* placements;  // the first redistribute's source, nullptr: not checked
  const char* order;
  engine::Shape shape;
};

fs::path TraceOf(const Traced& t, const fs::path& dir) {
  fs::path out = dir / "trace";
  if (fs::exists(out)) return out;
  if (!t.scenario) {
    RunSampleProgram("tp_mlp", out);
    return out;
  }
  program::RunOptions options;
  options.trace_dir = out;
  options.verify = true;
  program::RunReport report = program::RunScenario(program::ParseScenario(t.scenario, "test.json"), options);
  REQUIRE(!report.steps.empty());
  for (const auto& s : report.steps) REQUIRE(s.verified);
  return out;
}

}  // namespace

TEST_CASE("every view on a 3-D mesh, strided shards, a shard order and a program", "[gui][views]") {
  const Traced traces[] = {
      {"mesh3d",
       "{\"mesh\": [2, 2, 2], \"mesh_dim_names\": [\"pp\", \"dp\", \"tp\"], \"tensors\": {\"x\": {\"shape\": "
       "[8, 8, "
       "4], \"placements\": \"S(0),S(1),R\"}}, \"steps\": [{\"redistribute\": \"x\", \"to\": "
       "\"R,S(1),S(0)\"}]}",
       {2, 2, 2},
       "S(0),S(1),R",
       nullptr,
       {8, 8, 4}},
      {"strided",
       "{\"mesh\": [2, 2], \"tensors\": {\"x\": {\"shape\": [16, 4], \"placements\": \"_S(0, 2),S(0)\"}}, "
       "\"steps\": [{\"redistribute\": \"x\", \"to\": \"R,S(0)\"}]}",
       {2, 2},
       "_S(0, 2),S(0)",
       nullptr,
       {16, 4}},
      {"order",
       "{\"mesh\": [2, 2], \"tensors\": {\"x\": {\"shape\": [8, 6], \"placements\": \"S(0),S(0)\", "
       "\"order\": "
       "\"0:1,0\"}}, \"steps\": [{\"redistribute\": \"x\", \"to\": \"S(1),R\"}]}",
       {2, 2},
       "S(0),S(0)",
       "0:1,0",
       {8, 6}},
      {"program", nullptr, {}, nullptr, nullptr, {}},
  };
  const char* views[] = {"main", "timeline", "inspector", "layout", "mesh", "merge", "program", "stats"};
  for (const Traced& t : traces) {
    for (const char* view : views) {
      DYNAMIC_SECTION(t.name << " view " << view) {
        fs::path dir = TempDir(std::string("views_") + t.name);
        fs::path trace_dir = TraceOf(t, dir);
        auto geo = Shoot(dir, trace_dir.string() + " --select 0 --view " + view);
        REQUIRE(!geo["panels"].empty());
        for (const auto& p : geo["panels"]) {
          INFO(p.dump());
          if (p["panel"] != "program") CHECK(p["redistribute_id"] == 0);
        }
        if (!t.placements || (std::string(view) != "layout" && std::string(view) != "main")) continue;
        Image img = LoadPng(dir / "shot.png");
        engine::Mesh mesh(t.mesh);
        auto before = engine::ComputeLayouts(Spec(mesh, t.placements, t.shape, t.order));
        for (const auto& canvas : geo["canvases"])
          if (canvas["which"] == "before") CheckCanvas(img, canvas, before, mesh.size(), 1);
      }
    }
  }
}

TEST_CASE("Replicate reads as replicas: S(1),R on 2x2 is two column blocks, each banded by its two holders",
          "[gui][layout][replicate]") {
  fs::path dir = TempDir("replicate");
  engine::Mesh mesh({2, 2});
  auto spec = [&](const char* p) { return Spec(mesh, p, {8, 8}); };
  WriteTraceDir(*shardscope::app::gui::ModelFromPlans({{"t", spec("S(1),R"), spec("R,R"), {}}}, "test"),
                dir / "trace");
  auto geo = Shoot(dir, (dir / "trace").string() + " --view layout --select 0");
  Image img = LoadPng(dir / "shot.png");
  const nlohmann::json* before = nullptr;
  for (const auto& c : geo["canvases"])
    if (c["which"] == "before") before = &c;
  REQUIRE(before != nullptr);
  float x0 = (*before)["rect"][0], y0 = (*before)["rect"][1], x1 = (*before)["rect"][2],
        y1 = (*before)["rect"][3];
  // S(1) on mesh dim 0, R on mesh dim 1: ranks 0 and 1 (coordinate 0 on dim 0) both hold columns
  // [0,4), ranks 2 and 3 columns [4,8) (definition: MakeSpec + ComputeLayouts).
  auto layouts = engine::ComputeLayouts(spec("S(1),R"));
  REQUIRE(layouts[0].indices[1] == engine::IndexSet{{0, 4}});
  REQUIRE(layouts[1].indices[1] == engine::IndexSet{{0, 4}});
  REQUIRE(layouts[2].indices[1] == engine::IndexSet{{4, 8}});
  for (int block = 0; block < 2; ++block) {
    const int64_t a = block * 2, b = block * 2 + 1;
    // A vertical and a horizontal line through element centres of the block (off the element grid
    // lines, below the label): a shard stripe would be one colour along one of them; replica bands
    // show both holders along both, and no other rank's colour.
    const int cx = static_cast<int>(x0 + (block * 4 + 2.5f) / 8.0f * (x1 - x0));  // an element centre
    const int cy = static_cast<int>(y0 + 0.7f * (y1 - y0));
    auto count = [&](int64_t rank, bool vertical) {
      int n = 0;
      const int from = vertical ? static_cast<int>(y0 + 0.5f * (y1 - y0))
                                : static_cast<int>(x0 + block * (x1 - x0) / 2 + 4);
      const int to =
          vertical ? static_cast<int>(y1 - 2) : static_cast<int>(x0 + (block + 1) * (x1 - x0) / 2 - 4);
      for (int v = from; v < to; ++v)
        n += Near(vertical ? img.At(cx, v) : img.At(v, cy), RankColor(rank, 4)) ? 1 : 0;
      return n;
    };
    INFO("block " << block);
    for (bool vertical : {true, false}) {
      CHECK(count(a, vertical) >= 3);
      CHECK(count(b, vertical) >= 3);
      CHECK(count(block == 0 ? 2 : 0, vertical) == 0);
      CHECK(count(block == 0 ? 3 : 1, vertical) == 0);
    }
  }
}

TEST_CASE("every view on a 4096-rank trace (64x64 mesh)", "[gui][views][scale]") {
  fs::path dir = TempDir("ranks4096");
  engine::Mesh mesh({64, 64}, {"dp", "tp"});
  auto spec = [&](const char* p) { return Spec(mesh, p, {128, 128}); };
  WriteTraceDir(*shardscope::app::gui::ModelFromPlans({{"t", spec("S(0),S(1)"), spec("S(0),R"), {}}}, "test"),
                dir / "trace");
  for (const char* view : {"main", "timeline", "inspector", "layout", "mesh", "merge", "stats"}) {
    DYNAMIC_SECTION("view " << view) {
      auto geo = Shoot(dir, (dir / "trace").string() + " --select 0 --view " + view);
      REQUIRE(!geo["panels"].empty());
      for (const auto& p : geo["panels"]) CHECK(p["redistribute_id"] == 0);
      if (std::string(view) != "layout") continue;
      // S(0),S(1) on [128,128] over 64x64: rank r holds rows [2*(r/64), +2) x cols [2*(r%64), +2);
      // the canvas spans the whole tensor, so rank 0's block is its top-left 1/64 x 1/64.
      const auto layouts = engine::ComputeLayouts(spec("S(0),S(1)"));
      REQUIRE(layouts[65].indices[0] == engine::IndexSet{{2, 4}});
      REQUIRE(layouts[65].indices[1] == engine::IndexSet{{2, 4}});
      for (const auto& c : geo["canvases"]) {
        CHECK(c["rows"] == 128);
        CHECK(c["cols"] == 128);
      }
    }
  }
}

namespace {

// The stats geometry entries of one table: its rows' labels top to bottom, or a header's centre.
std::vector<std::string> StatsRows(const nlohmann::json& geo, const std::string& table) {
  std::vector<std::pair<float, std::string>> rows;
  for (const auto& g : geo["stats"])
    if (g["table"] == table && !g["header"]) rows.emplace_back(g["rect"][1].get<float>(), g["text"]);
  std::sort(rows.begin(), rows.end());
  std::vector<std::string> out;
  for (const auto& r : rows) out.push_back(r.second);
  return out;
}

std::string ClickOn(const nlohmann::json& geo, const std::string& table, const std::string& text) {
  for (const auto& g : geo["stats"]) {
    if (g["table"] != table || g["text"] != text) continue;
    const int x = static_cast<int>((g["rect"][0].get<float>() + g["rect"][2].get<float>()) / 2);
    const int y = static_cast<int>((g["rect"][1].get<float>() + g["rect"][3].get<float>()) / 2);
    return "click:" + std::to_string(x) + ":" + std::to_string(y) + ",wait";
  }
  FAIL("no " << table << " item " << text);
  return "";
}

}  // namespace

TEST_CASE("the statistics view renders its tables, sorts on a header click and --geometry reports it",
          "[gui][views][stats]") {
  // tests/golden/trace/two_rank, derived by hand (see stats_view_test.cpp): kind totals
  // all_gather 25000 ns, all_to_all 16000, shape_exchange 2000, every kind's slowest rank 0
  // (all_gather 13000 ns on r0 vs 12000 on r1, the others tie: the lowest rank); redistribute
  // #0's slowest rank is 0 (15000 vs 13000 ns), #1's is 1 (12500 vs 10000).
  fs::path dir = TempDir("stats");
  const std::string trace = std::string(SHARDSCOPE_SOURCE_DIR) + "/tests/golden/trace/two_rank";
  auto geo = Shoot(dir, trace + " --select 1 --view stats");
  REQUIRE(geo["panels"].size() == 1);
  const auto& panel = geo["panels"][0];
  CHECK(panel["panel"] == "stats");
  CHECK(panel["redistribute_id"] == 1);
  float x0 = panel["rect"][0], y0 = panel["rect"][1], x1 = panel["rect"][2], y1 = panel["rect"][3];
  REQUIRE(x1 - x0 > 200);
  REQUIRE(y1 - y0 > 100);
  // Sorted by label at first.
  CHECK(StatsRows(geo, "kinds") == std::vector<std::string>{"all_gather", "all_to_all", "shape_exchange"});
  CHECK(StatsRows(geo, "redistributes") == std::vector<std::string>{"#0 x", "#1 y"});
  // The slowest-rank column draws a swatch in the rank's colour: rank 0's on four rows, rank 1's
  // on one (#1), so both colours are in the panel.
  Image img = LoadPng(dir / "shot.png");
  int r0 = 0, r1 = 0;
  for (int y = static_cast<int>(y0); y < static_cast<int>(y1); ++y) {
    for (int x = static_cast<int>(x0); x < static_cast<int>(x1); ++x) {
      r0 += Near(img.At(x, y), RankColor(0, 2)) ? 1 : 0;
      r1 += Near(img.At(x, y), RankColor(1, 2)) ? 1 : 0;
    }
  }
  CHECK(r1 >= 25);      // one swatch of at least 5x5 pixels
  CHECK(r0 >= 4 * 25);  // four swatches

  // One click on a header sorts descending on it, a second ascending; a click on a redistribute
  // row (#0 x, second after the sort: its slowest rank 0 < 1) selects it.
  const std::string second_row = ClickOn(geo, "redistributes", "#1 y");  // the second row's place
  const std::string keys = ClickOn(geo, "redistributes", "Slowest rank") + "," +
                           ClickOn(geo, "kinds", "Total") + "," + ClickOn(geo, "kinds", "Total") + "," +
                           second_row;
  auto sorted = Shoot(dir, trace + " --select 1 --view stats --keys \"" + keys + "\"");
  CHECK(StatsRows(sorted, "kinds") == std::vector<std::string>{"shape_exchange", "all_to_all", "all_gather"});
  CHECK(StatsRows(sorted, "redistributes") == std::vector<std::string>{"#1 y", "#0 x"});
  CHECK(sorted["selected_redistribute"] == 0);
  CHECK(sorted["panels"][0]["redistribute_id"] == 0);
}
