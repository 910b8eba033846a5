// GUI screenshot tests: run shardscope-gui under Xvfb, read the PNG back and check content
// against the definition: the engine's layout says which rank owns a region, the palette says
// which colour that rank has. Exits 77 (ctest SKIP) when xvfb-run is absent.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "gui_test_support.hpp"
#include "sample_data.hpp"
#include "shardscope/program/runner.hpp"
#include "shardscope/program/scenario.hpp"
#include "shardscope/trace/writer.hpp"

using namespace shardscope_gui_test;

TEST_CASE("layout view of two_rank: rank regions have rank colours before and after the step",
          "[gui][layout]") {
  fs::path dir = TempDir("two_rank");
  // Redistribute 1 of the fixture is y [5,3] S(0) -> S(1) on a 1-d mesh of 2 (one all_to_all step).
  auto geo = Shoot(dir, Golden("two_rank") + " --view layout --select 1 --step 0 --size 1600x1000");
  Image img = LoadPng(dir / "shot.png");
  CHECK(img.w == 1600);
  CHECK(img.h == 1000);
  REQUIRE(geo["canvases"].size() == 2);
  engine::Mesh mesh({2});
  auto before = Spec(mesh, "S(0)", {5, 3}, nullptr, engine::DType::kI64);
  auto after = Spec(mesh, "S(1)", {5, 3}, nullptr, engine::DType::kI64);
  for (const auto& canvas : geo["canvases"]) {
    bool is_before = canvas["which"] == "before";
    CHECK(canvas["redistribute_id"] == 1);
    CheckCanvas(img, canvas, engine::ComputeLayouts(is_before ? before : after), 2, 2);
  }
}

TEST_CASE("layout view of a 2x2 trace written by the trace writer: rank 3's region has rank 3's colour",
          "[gui][layout]") {
  fs::path dir = TempDir("mesh2x2");
  fs::path trace_dir = dir / "trace";
  engine::Mesh mesh({2, 2}, {"dp", "tp"});
  auto src = Spec(mesh, "S(0),S(1)", {8, 6}), dst = Spec(mesh, "R,S(0)", {8, 6});
  engine::Plan plan = engine::MakePlan(src, dst, 0, {});
  REQUIRE(plan.optimized.size() >= 2);
  // The trace file content comes from the engine's plans, written through trace::Writer.
  auto model = shardscope::app::gui::ModelFromPlans({{"t", src, dst, {}}}, "test");
  for (const auto& rank : model->ranks) {
    shardscope::trace::Writer w(trace_dir, rank.header);
    for (const auto& e : rank.events) w.Emit(e);
    w.Close();
  }
  for (size_t step = 0; step < plan.optimized.size(); ++step) {
    DYNAMIC_SECTION("step " << step) {
      auto r =
          RunGui(trace_dir.string() + " --screenshot " + (dir / "shot.png").string() + " --geometry " +
                     (dir / "geo.json").string() + " --view layout --select 0 --step " + std::to_string(step),
                 dir / "log.txt");
      INFO(r.output);
      REQUIRE(r.exit_code == 0);
      Image img = LoadPng(dir / "shot.png");
      auto geo = ReadJson(dir / "geo.json");
      REQUIRE(geo["canvases"].size() == 2);
      auto [lb, la] = StepLayouts(src, plan, step);
      for (const auto& canvas : geo["canvases"]) {
        CHECK(canvas["step"] == static_cast<int64_t>(step));
        CheckCanvas(img, canvas, canvas["which"] == "before" ? lb : la, 4, 1);
      }
      if (step == 0) {
        // S(0),S(1) on [8,6]: rank 3 = coordinate (1,1) owns rows [4,8) x cols [3,6).
        REQUIRE(lb[3].indices[0] == engine::IndexSet{{4, 8}});
        const auto& c = geo["canvases"][0];
        float x0 = c["rect"][0], y0 = c["rect"][1], x1 = c["rect"][2], y1 = c["rect"][3];
        int px = static_cast<int>(x0 + 4.5 / 6.0 * (x1 - x0)),
            py = static_cast<int>(y0 + 6.0 / 8.0 * (y1 - y0));
        CHECK(PatchIs(img, px, py, RankColor(3, 4)));
      }
    }
  }
}

// Issue 16: traces of real runs with a non-default shard order or _StridedShard placements showed
// "layout unavailable" in the Layout and Mesh panels. The expected layouts are the definition's
// (MakeSpec + ComputeLayouts) for the states the plan's notation names.
TEST_CASE("layout view of traced runs with a shard order and with strided shards", "[gui][layout][order]") {
  struct Case {
    const char* name;
    const char* scenario;
    engine::Shape mesh;
    const char* before;
    const char* before_order;
    const char* after;  // the state after step 0
    engine::Shape shape;
  };
  // S(0)[1]S(0)[0] -> RS(0) -> RR: the newest mesh dim of the order (0) is gathered first.
  const char* order_json =
      "{\"mesh\": [2, 2], \"tensors\": {\"x\": {\"shape\": [8, 6], \"placements\": \"S(0),S(0)\", \"order\": "
      "\"0:1,0\"}}, \"steps\": [{\"redistribute\": \"x\", \"to\": \"R,R\"}]}";
  // _S(0,2),S(0) on (4,2) decodes to S0S0 order 0:1,0 (T0), so mesh dim 0 is gathered first.
  const char* strided_json =
      "{\"mesh\": [4, 2], \"tensors\": {\"x\": {\"shape\": [15, 4], \"placements\": \"_S(0, 2),S(0)\"}}, "
      "\"steps\": [{\"redistribute\": \"x\", \"to\": \"R,R\"}]}";
  const Case cases[] = {
      {"order", order_json, {2, 2}, "S(0),S(0)", "0:1,0", "R,S(0)", {8, 6}},
      {"strided", strided_json, {4, 2}, "_S(0, 2),S(0)", nullptr, "R,S(0)", {15, 4}},
  };
  for (const Case& c : cases) {
    DYNAMIC_SECTION(c.name) {
      fs::path dir = TempDir(std::string("traced_") + c.name);
      program::RunOptions options;
      options.trace_dir = dir / "trace";
      options.verify = true;
      program::RunReport report =
          program::RunScenario(program::ParseScenario(c.scenario, "test.json"), options);
      REQUIRE(report.steps.size() == 1);
      REQUIRE(report.steps[0].verified);
      auto geo = Shoot(dir, (dir / "trace").string() + " --view layout --select 0 --step 0");
      Image img = LoadPng(dir / "shot.png");
      REQUIRE(geo["canvases"].size() == 2);  // "layout unavailable" draws no canvas
      engine::Mesh mesh(c.mesh);
      auto layouts = [&](const char* placements, const char* order) {
        return engine::ComputeLayouts(Spec(mesh, placements, c.shape, order));
      };
      for (const auto& canvas : geo["canvases"]) {
        const bool before = canvas["which"] == "before";
        CheckCanvas(img, canvas, before ? layouts(c.before, c.before_order) : layouts(c.after, nullptr),
                    mesh.size(), 2);
      }
    }
  }
}

TEST_CASE("gallery renders every panel on sample data with engine-consistent layouts", "[gui][gallery]") {
  fs::path dir = TempDir("gallery");
  auto geo = Shoot(dir, "--view gallery");
  Image img = LoadPng(dir / "shot.png");
  REQUIRE(geo["canvases"].size() == 2);
  // The gallery's first sample is h [8,6] S(0),S(1) -> S(1),S(0) on a 2x2 mesh, step 0.
  engine::Mesh mesh({2, 2}, {"dp", "tp"});
  mesh.RegisterFlattened({0, 1});
  CheckFirstStepCanvases(img, geo, mesh, {8, 6}, "S(0),S(1)", "S(1),S(0)", 1);
}

TEST_CASE("sandbox runs its redistribute on the local backend and shows the new trace", "[gui][sandbox]") {
  fs::path dir = TempDir("sandbox");
  auto r = RunGui("--sandbox-run --screenshot " + (dir / "shot.png").string() + " --geometry " +
                      (dir / "geo.json").string(),
                  dir / "log.txt");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("sandbox:") == std::string::npos);  // no sandbox error reported
  Image img = LoadPng(dir / "shot.png");
  auto geo = ReadJson(dir / "geo.json");
  REQUIRE(geo["canvases"].size() == 2);
  // The sandbox's default form: 15x6 f32 S(0),S(0) -> R,R on a 2x2 (dp,tp) mesh, every flattened
  // sub-mesh registered.
  engine::Mesh mesh({2, 2}, {"dp", "tp"});
  mesh.RegisterAllFlattened();
  CheckFirstStepCanvases(img, geo, mesh, {15, 6}, "S(0),S(0)", "R,R", 4);
}

TEST_CASE("a corrupt trace shows the error panel naming file:line", "[gui][errors]") {
  fs::path dir = TempDir("corrupt");
  std::string trace = Golden("corrupt/malformed_middle.jsonl");
  auto r = RunGui(trace + " --screenshot " + (dir / "shot.png").string() + " --geometry " +
                      (dir / "geo.json").string() + " --view layout",
                  dir / "log.txt");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  // The reader's message names the file and line; the GUI repeats it on stderr and in the panel.
  CHECK(r.output.find("malformed_middle.jsonl:") != std::string::npos);
  auto geo = ReadJson(dir / "geo.json");
  REQUIRE(geo["error_panel"].is_array());
  Image img = LoadPng(dir / "shot.png");
  int x0 = geo["error_panel"][0].get<float>(), y0 = geo["error_panel"][1].get<float>();
  int x1 = geo["error_panel"][2].get<float>(), y1 = geo["error_panel"][3].get<float>();
  REQUIRE(x1 - x0 > 100);
  REQUIRE(y1 - y0 > 20);
  int background = 0, text = 0;
  for (int y = y0 + 2; y < y1 - 2; ++y) {
    for (int x = x0 + 2; x < x1 - 2; ++x) {
      Rgb p = img.At(x, y);
      if (Near(p, shardscope::app::gui::kErrorPanelColor)) {
        ++background;
      } else if (p.r > 200 && p.g > 120) {
        ++text;  // light glyph pixels: the message is in the picture
      }
    }
  }
  CHECK(background > (x1 - x0) * (y1 - y0) / 2);
  CHECK(text > 200);
}

TEST_CASE("without a display the GUI prints one line and exits 2", "[gui][display]") {
  fs::path dir = TempDir("nodisplay");
  auto r = RunShell("env -u DISPLAY -u WAYLAND_DISPLAY " + std::string(SHARDSCOPE_GUI_BIN) + " " +
                        Golden("two_rank") + " --screenshot " + (dir / "shot.png").string(),
                    dir / "log.txt");
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK(std::count(r.output.begin(), r.output.end(), '\n') == 1);
  CHECK(r.output.find("display") != std::string::npos);
  CHECK_FALSE(fs::exists(dir / "shot.png"));
}

int main(int argc, char** argv) {
  if (std::system("command -v xvfb-run >/dev/null 2>&1") != 0) {
    std::printf("skipped: xvfb-run not found; install xvfb (and xauth) to run the GUI screenshot tests\n");
    return 77;
  }
  int rc = Catch::Session().run(argc, argv);
  std::error_code ec;
  fs::remove_all(fs::temp_directory_path() / ("shardscope_gui_test_" + std::to_string(::getpid())), ec);
  return rc;
}

TEST_CASE("a --select or --select-op the trace lacks is one line and exit 2", "[gui][options]") {
  // two_rank holds redistribute ids 0 and 1 only (tests/golden/trace/two_rank).
  fs::path dir = TempDir("bad_select");
  auto r = RunGui(Golden("two_rank") + " --select 99 --screenshot " + (dir / "shot.png").string(),
                  dir / "log.txt");
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("shardscope-gui: --select: redistribute 99 is not in the trace") != std::string::npos);
  CHECK_FALSE(fs::exists(dir / "shot.png"));
  auto op = RunGui(Golden("two_rank") + " --select-op 5 --screenshot " + (dir / "shot.png").string(),
                   dir / "log2.txt");
  INFO(op.output);
  CHECK(op.exit_code == 2);
  CHECK(op.output.find("shardscope-gui: --select-op: op 5 is not in the trace (its ids: none)") !=
        std::string::npos);
}
