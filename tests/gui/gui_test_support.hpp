#pragma once
// Helpers of the GUI screenshot tests: run shardscope-gui under Xvfb, read its PNG and geometry
// JSON back, and compare pixels with colours that come from the definition (engine layouts, the
// rank palette). Header-only; every test file of shardscope_gui_tests includes it.

#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <stb_image.h>
#include <nlohmann/json.hpp>

#include "rank_palette.hpp"
#include "shardscope/engine/core/layout.hpp"
#include "shardscope/engine/plan/plan.hpp"
#include "shardscope/engine/plan/planner.hpp"

namespace shardscope::program {}  // namespace shardscope::program

namespace shardscope_gui_test {

namespace fs = std::filesystem;
using shardscope::app::gui::RankColor;
using shardscope::app::gui::Rgb;
namespace engine = shardscope::engine;
namespace program = shardscope::program;

struct RunResult {
  int exit_code = -1;
  std::string output;  // stdout + stderr
};

// `parent`/`name`, created (with `parent`) when missing.
inline fs::path SubDir(const fs::path& parent, const std::string& name) {
  fs::path dir = parent / name;
  fs::create_directories(dir);
  return dir;
}

// This test process's directory `name` under the system temp directory, created when missing.
inline fs::path TempDir(const std::string& name) {
  return SubDir(fs::temp_directory_path() / ("shardscope_gui_test_" + std::to_string(::getpid())), name);
}

inline RunResult RunShell(const std::string& command, const fs::path& log) {
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

// Runs one of the repository's generators, `tests/trace/SCRIPT ARGS` (make_fr_dumps.py,
// make_fr_faults.py, make_kineto_traces.py), with its output in `log`; the test stops when it fails.
inline void RunGenerator(const std::string& script_and_args, const fs::path& log) {
  const RunResult gen =
      RunShell("python3 " + std::string(SHARDSCOPE_SOURCE_DIR) + "/tests/trace/" + script_and_args, log);
  INFO(gen.output);
  REQUIRE(gen.exit_code == 0);
}

// The culprit ranks make_fr_faults.py wrote into DUMPS/triage_expected.json (its definition of the
// fault it injected).
inline std::vector<int64_t> ExpectedCulprits(const fs::path& dumps) {
  std::ifstream in(dumps / "triage_expected.json");
  return nlohmann::json::parse(in)["culprits"].get<std::vector<int64_t>>();
}

// What WriteNotEnqueuedDumps wrote: the culprit, and the rank half the world away from it (a lane
// far from the culprit's, for the go-to tests).
struct NotEnqueuedHang {
  int64_t culprit = -1;
  int64_t far = -1;
};

// Writes DIR/dumps, a hang of `ranks` ranks (make_fr_faults.py not_enqueued: one rank stuck in
// compute, never enqueuing the collective its peers wait in; 24 entries, no wrap, `seed`), and
// returns its culprit as the generator defines it; the test stops unless there is exactly one.
inline NotEnqueuedHang WriteNotEnqueuedDumps(const fs::path& dir, int64_t ranks, int seed) {
  RunGenerator("make_fr_faults.py not_enqueued " + (dir / "dumps").string() + " --ranks " +
                   std::to_string(ranks) + " --entries 24 --seed " + std::to_string(seed) + " --no-wrap",
               dir / "gen.txt");
  const std::vector<int64_t> culprits = ExpectedCulprits(dir / "dumps");
  REQUIRE(culprits.size() == 1);
  return {culprits.at(0), (culprits.at(0) + ranks / 2) % ranks};
}

// Runs the GUI under a fresh virtual display and returns its exit code and output. `xvfb-run -a`
// picks the first display number without a lock file, so two GUI tests starting together (ctest -j,
// or another build's tests) can pick the same one and the second Xvfb fails to start; and under
// load xvfb-run's own clean-up has been seen to fail ("problem while cleaning up temporary
// directory", exit 5, replacing the GUI's exit code). A run in which xvfb-run itself reports an
// error is retried after a pause instead of failing the test; the GUI's own errors are not retried.
// `cwd`: the directory to run in (an interactive run reads and writes imgui.ini there).
inline RunResult RunGui(const std::string& args, const fs::path& log, const fs::path& cwd = {}) {
  const std::string command = (cwd.empty() ? std::string() : "cd '" + cwd.string() + "' && ") +
                              "xvfb-run -a -s \"-screen 0 1600x1000x24\" " + std::string(SHARDSCOPE_GUI_BIN) +
                              " " + args;
  RunResult r;
  for (int attempt = 0; attempt < 5; ++attempt) {
    r = RunShell(command, log);
    if (r.output.find("xvfb-run: error:") == std::string::npos) break;
    ::usleep(static_cast<useconds_t>(200000 * (attempt + 1) + 50000 * (::getpid() % 4)));
  }
  return r;
}

struct Image {
  int w = 0, h = 0;
  std::vector<uint8_t> rgba;
  Rgb At(int x, int y) const {
    size_t i = (static_cast<size_t>(y) * static_cast<size_t>(w) + static_cast<size_t>(x)) * 4;
    return {rgba[i], rgba[i + 1], rgba[i + 2]};
  }
};

inline Image LoadPng(const fs::path& path) {
  Image img;
  int channels = 0;
  unsigned char* data = stbi_load(path.string().c_str(), &img.w, &img.h, &channels, 4);
  REQUIRE(data != nullptr);
  img.rgba.assign(data, data + static_cast<size_t>(img.w) * img.h * 4);
  stbi_image_free(data);
  return img;
}

inline bool Near(Rgb a, Rgb b, int tol = 3) {
  return std::abs(a.r - b.r) <= tol && std::abs(a.g - b.g) <= tol && std::abs(a.b - b.b) <= tol;
}

// The colour most pixels of a 7x7 patch around (x, y) have within tolerance of `want`: true when
// at least half match (labels and faint grid lines may cover a few pixels).
inline bool PatchIs(const Image& img, int x, int y, Rgb want) {
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

inline nlohmann::json ReadJson(const fs::path& path) {
  std::ifstream in(path);
  REQUIRE(in.good());
  return nlohmann::json::parse(in);
}

// For each rank holding a non-empty region of the projected plane, checks the pixel at the centre
// of the rank's first (row interval x column interval) block has the rank's colour.
inline void CheckCanvas(const Image& img, const nlohmann::json& canvas,
                        const std::vector<engine::RankLayout>& layouts, int64_t world,
                        int64_t min_ranks_checked) {
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

// Runs the GUI with `args` plus --screenshot DIR/shot.png --geometry DIR/geo.json; requires exit 0
// and returns the geometry.
inline nlohmann::json Shoot(const fs::path& dir, const std::string& args) {
  auto r = RunGui(
      args + " --screenshot " + (dir / "shot.png").string() + " --geometry " + (dir / "geo.json").string(),
      dir / "log.txt");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  return ReadJson(dir / "geo.json");
}

struct Case {
  engine::TensorSpec src, dst;
  engine::Plan plan;
};

// Layouts before and after optimized step `step` of a plan, from the engine alone.
inline std::pair<std::vector<engine::RankLayout>, std::vector<engine::RankLayout>> StepLayouts(
    const engine::TensorSpec& src, const engine::Plan& plan, size_t step) {
  engine::PlanState state{src.placements, src.EffectiveOrder()};
  for (size_t k = 0; k < step; ++k) state = engine::ApplyTransform(state, plan.optimized[k]);
  engine::PlanState next = engine::ApplyTransform(state, plan.optimized[step]);
  engine::LayoutInput a{&src.mesh, &state.placements, &state.order, &src.shape};
  engine::LayoutInput b{&src.mesh, &next.placements, &next.order, &src.shape};
  return {engine::ComputeLayouts(a), engine::ComputeLayouts(b)};
}

// A tensor spec on `mesh` from placement text: torch chunking, the default shard order unless
// `order` ("0:1,0") is given.
inline engine::TensorSpec Spec(const engine::Mesh& mesh, const char* placements, engine::Shape shape,
                               const char* order = nullptr, engine::DType dtype = engine::DType::kF32) {
  std::optional<engine::ShardOrder> o;
  if (order) o = engine::ParseShardOrder(order, "t");
  return engine::MakeSpec(mesh, engine::ParsePlacements(placements, "t"), std::move(o), std::move(shape),
                          dtype, engine::ChunkRule::kTorch, {}, "t");
}

// Checks the screenshot's before and after canvases against the layouts around step 0 of the
// engine's plan `src` -> `dst` for a tensor of `shape` on `mesh`.
inline void CheckFirstStepCanvases(const Image& img, const nlohmann::json& geo, const engine::Mesh& mesh,
                                   const engine::Shape& shape, const char* src, const char* dst,
                                   int64_t min_ranks_checked) {
  engine::TensorSpec from = Spec(mesh, src, shape);
  engine::Plan plan = engine::MakePlan(from, Spec(mesh, dst, shape), 0, {});
  auto [lb, la] = StepLayouts(from, plan, 0);
  for (const auto& canvas : geo["canvases"])
    CheckCanvas(img, canvas, canvas["which"] == "before" ? lb : la, mesh.size(), min_ranks_checked);
}

inline std::string Golden(const std::string& rel) {
  return std::string(SHARDSCOPE_SOURCE_DIR) + "/tests/golden/trace/" + rel;
}

}  // namespace shardscope_gui_test
