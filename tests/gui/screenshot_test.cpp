// GUI screenshot tests: run shardscope-gui under Xvfb, read the PNG back and check content
// against the definition: the engine's layout says which rank owns a region, the palette says
// which colour that rank has. Exits 77 (ctest SKIP) when xvfb-run is absent.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include <stb_image.h>
#include <nlohmann/json.hpp>

#include "rank_palette.hpp"
#include "sample_data.hpp"
#include "shardscope/engine/layout.hpp"
#include "shardscope/engine/plan.hpp"
#include "shardscope/engine/planner.hpp"
#include "shardscope/trace/writer.hpp"

namespace fs = std::filesystem;
using shardscope::app::gui::RankColor;
using shardscope::app::gui::Rgb;
namespace engine = shardscope::engine;

namespace {

struct RunResult {
  int exit_code = -1;
  std::string output;  // stdout + stderr
};

fs::path TempDir(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / ("shardscope_gui_test_" + std::to_string(::getpid())) / name;
  fs::create_directories(dir);
  return dir;
}

RunResult RunShell(const std::string& command, const fs::path& log) {
  std::string full = command + " >" + log.string() + " 2>&1";
  int status = std::system(full.c_str());
  RunResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream in(log);
  std::stringstream ss;
  ss << in.rdbuf();
  r.output = ss.str();
  return r;
}

// Runs the GUI under a fresh virtual display and returns its exit code and output.
RunResult RunGui(const std::string& args, const fs::path& log) {
  return RunShell("xvfb-run -a -s \"-screen 0 1600x1000x24\" " + std::string(SHARDSCOPE_GUI_BIN) + " " + args,
                  log);
}

struct Image {
  int w = 0, h = 0;
  std::vector<uint8_t> rgba;
  Rgb At(int x, int y) const {
    size_t i = (static_cast<size_t>(y) * static_cast<size_t>(w) + static_cast<size_t>(x)) * 4;
    return {rgba[i], rgba[i + 1], rgba[i + 2]};
  }
};

Image LoadPng(const fs::path& path) {
  Image img;
  int channels = 0;
  unsigned char* data = stbi_load(path.string().c_str(), &img.w, &img.h, &channels, 4);
  REQUIRE(data != nullptr);
  img.rgba.assign(data, data + static_cast<size_t>(img.w) * img.h * 4);
  stbi_image_free(data);
  return img;
}

bool Near(Rgb a, Rgb b, int tol = 3) {
  return std::abs(a.r - b.r) <= tol && std::abs(a.g - b.g) <= tol && std::abs(a.b - b.b) <= tol;
}

// The colour most pixels of a 7x7 patch around (x, y) have within tolerance of `want`: true when
// at least half match (labels and faint grid lines may cover a few pixels).
bool PatchIs(const Image& img, int x, int y, Rgb want) {
  int match = 0, total = 0;
  for (int dy = -3; dy <= 3; ++dy) {
    for (int dx = -3; dx <= 3; ++dx) {
      int px = x + dx, py = y + dy;
      if (px < 0 || py < 0 || px >= img.w || py >= img.h) continue;
      ++total;
      if (Near(img.At(px, py), want)) ++match;
    }
  }
  return total > 0 && match * 2 >= total;
}

nlohmann::json ReadJson(const fs::path& path) {
  std::ifstream in(path);
  REQUIRE(in.good());
  return nlohmann::json::parse(in);
}

// For each rank holding a non-empty region of the projected plane, checks the pixel at the centre
// of the rank's first (row interval x column interval) block has the rank's colour.
void CheckCanvas(const Image& img, const nlohmann::json& canvas,
                 const std::vector<engine::RankLayout>& layouts, int64_t world, int64_t min_ranks_checked) {
  float x0 = canvas["rect"][0], y0 = canvas["rect"][1], x1 = canvas["rect"][2], y1 = canvas["rect"][3];
  int row_dim = canvas["row_dim"], col_dim = canvas["col_dim"];
  double rows = canvas["rows"], cols = canvas["cols"];
  int64_t checked = 0;
  for (const engine::RankLayout& l : layouts) {
    engine::Interval r =
        row_dim >= 0 ? l.indices[static_cast<size_t>(row_dim)].front() : engine::Interval{0, 1};
    engine::Interval c =
        col_dim >= 0 ? l.indices[static_cast<size_t>(col_dim)].front() : engine::Interval{0, 1};
    if (r.size() == 0 || c.size() == 0) continue;
    // Replicated regions are shared; only regions with a single holder have one colour.
    int holders = 0;
    for (const engine::RankLayout& o : layouts) {
      bool overlap = true;
      for (size_t d = 0; d < o.indices.size(); ++d) {
        int64_t at = static_cast<int>(d) == row_dim   ? (r.begin + r.end) / 2
                     : static_cast<int>(d) == col_dim ? (c.begin + c.end) / 2
                                                      : 0;
        bool in = false;
        for (const auto& iv : o.indices[d]) in = in || (at >= iv.begin && at < iv.end);
        overlap = overlap && in;
      }
      holders += overlap ? 1 : 0;
    }
    // Centre of the region's middle element (an even-sized region's exact centre lies on a faint
    // element grid line).
    double cy = static_cast<double>((r.begin + r.end) / 2) + 0.5,
           cx = static_cast<double>((c.begin + c.end) / 2) + 0.5;
    int px = static_cast<int>(x0 + cx / cols * (x1 - x0));
    int py = static_cast<int>(y0 + cy / rows * (y1 - y0));
    Rgb want = RankColor(l.rank, world);
    if (holders != 1) {
      // A shared (replicated) region shows every holder: the rank's colour appears on the row of
      // pixels through the region's centre.
      int from = static_cast<int>(x0 + c.begin / cols * (x1 - x0)),
          to = static_cast<int>(x0 + c.end / cols * (x1 - x0));
      int seen = 0;
      for (int x = from + 1; x < to - 1; ++x) seen += Near(img.At(x, py), want) ? 1 : 0;
      INFO(canvas["which"].get<std::string>()
           << " shared region of rank " << l.rank << " on pixel row " << py);
      CHECK(seen >= 2);
      ++checked;
      continue;
    }
    INFO(canvas["which"].get<std::string>()
         << " rank " << l.rank << " rows [" << r.begin << "," << r.end << ") cols [" << c.begin << ","
         << c.end << ") pixel " << px << "," << py << " got " << int(img.At(px, py).r) << ","
         << int(img.At(px, py).g) << "," << int(img.At(px, py).b));
    CHECK(PatchIs(img, px, py, want));
    ++checked;
  }
  CHECK(checked >= min_ranks_checked);
}

struct Case {
  engine::TensorSpec src, dst;
  engine::Plan plan;
};

// Layouts before and after optimized step `step` of a plan, from the engine alone.
std::pair<std::vector<engine::RankLayout>, std::vector<engine::RankLayout>> StepLayouts(
    const engine::TensorSpec& src, const engine::Plan& plan, size_t step) {
  engine::PlanState state{src.placements, src.EffectiveOrder()};
  for (size_t k = 0; k < step; ++k) state = engine::ApplyTransform(state, plan.optimized[k]);
  engine::PlanState next = engine::ApplyTransform(state, plan.optimized[step]);
  engine::LayoutInput a{&src.mesh, &state.placements, &state.order, &src.shape};
  engine::LayoutInput b{&src.mesh, &next.placements, &next.order, &src.shape};
  return {engine::ComputeLayouts(a), engine::ComputeLayouts(b)};
}

std::string Golden(const std::string& rel) {
  return std::string(SHARDSCOPE_SOURCE_DIR) + "/tests/golden/trace/" + rel;
}

}  // namespace

TEST_CASE("layout view of two_rank: rank regions have rank colours before and after the step",
          "[gui][layout]") {
  fs::path dir = TempDir("two_rank");
  // Redistribute 1 of the fixture is y [5,3] S(0) -> S(1) on a 1-d mesh of 2 (one all_to_all step).
  auto r = RunGui(Golden("two_rank") + " --screenshot " + (dir / "shot.png").string() + " --geometry " +
                      (dir / "geo.json").string() + " --view layout --select 1 --step 0 --size 1600x1000",
                  dir / "log.txt");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  Image img = LoadPng(dir / "shot.png");
  CHECK(img.w == 1600);
  CHECK(img.h == 1000);
  auto geo = ReadJson(dir / "geo.json");
  REQUIRE(geo["canvases"].size() == 2);
  engine::Mesh mesh({2});
  auto before = engine::MakeSpec(mesh, engine::ParsePlacements("S(0)", "t"), std::nullopt, {5, 3},
                                 engine::DType::kI64, engine::ChunkRule::kTorch, {}, "t");
  auto after = engine::MakeSpec(mesh, engine::ParsePlacements("S(1)", "t"), std::nullopt, {5, 3},
                                engine::DType::kI64, engine::ChunkRule::kTorch, {}, "t");
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
  auto spec = [&](const char* p) {
    return engine::MakeSpec(mesh, engine::ParsePlacements(p, "t"), std::nullopt, {8, 6}, engine::DType::kF32,
                            engine::ChunkRule::kTorch, {}, "t");
  };
  auto src = spec("S(0),S(1)"), dst = spec("R,S(0)");
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

TEST_CASE("gallery renders every panel on sample data with engine-consistent layouts", "[gui][gallery]") {
  fs::path dir = TempDir("gallery");
  auto r = RunGui("--screenshot " + (dir / "shot.png").string() + " --geometry " +
                      (dir / "geo.json").string() + " --view gallery",
                  dir / "log.txt");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  Image img = LoadPng(dir / "shot.png");
  auto geo = ReadJson(dir / "geo.json");
  REQUIRE(geo["canvases"].size() == 2);
  // The gallery's first sample is h [8,6] S(0),S(1) -> S(1),S(0) on a 2x2 mesh, step 0.
  engine::Mesh mesh({2, 2}, {"dp", "tp"});
  mesh.RegisterFlattened({0, 1});
  auto spec = [&](const char* p) {
    return engine::MakeSpec(mesh, engine::ParsePlacements(p, "t"), std::nullopt, {8, 6}, engine::DType::kF32,
                            engine::ChunkRule::kTorch, {}, "t");
  };
  auto src = spec("S(0),S(1)");
  engine::Plan plan = engine::MakePlan(src, spec("S(1),S(0)"), 0, {});
  auto [lb, la] = StepLayouts(src, plan, 0);
  for (const auto& canvas : geo["canvases"])
    CheckCanvas(img, canvas, canvas["which"] == "before" ? lb : la, 4, 1);
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
  auto spec = [&](const char* p) {
    return engine::MakeSpec(mesh, engine::ParsePlacements(p, "t"), std::nullopt, {15, 6}, engine::DType::kF32,
                            engine::ChunkRule::kTorch, {}, "t");
  };
  auto src = spec("S(0),S(0)");
  engine::Plan plan = engine::MakePlan(src, spec("R,R"), 0, {});
  auto [lb, la] = StepLayouts(src, plan, 0);
  for (const auto& canvas : geo["canvases"])
    CheckCanvas(img, canvas, canvas["which"] == "before" ? lb : la, 4, 4);
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
