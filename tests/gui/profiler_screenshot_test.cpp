// Opening PyTorch profiler traces (tests/trace/make_kineto_traces.py) in the GUI as a user does:
// the profiler view fills the window with a CPU-op and a GPU-kernel lane per rank; the straggler's
// kernels carry the red mark; a click on a kernel selects its collective on every rank (outlined,
// joined by the connector) and the side panel lists every rank's wait; keys move along a lane,
// change rank, zoom and clear; at 64 ranks the straggler button scrolls to its lane. Expected
// values come from the generator's definition (its --help): the --straggler rank starts every
// collective of its groups --delay-us late, so it arrives last at each of them and every other
// member waits --delay-us; a transfer takes --transfer-us (default 100 us); S of an all_reduce is
// --elems (default 2^20) x 4 bytes of Float.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "gui_test_support.hpp"
#include "panels/profiler_panel.hpp"
#include "shardscope/trace/importers.hpp"
#include "shardscope/trace/writer.hpp"

using namespace shardscope_gui_test;
namespace trace = shardscope::trace;
using shardscope::app::gui::kProfilerConnector;
using shardscope::app::gui::kProfilerSelected;
using shardscope::app::gui::kProfilerStraggler;

namespace {

// 8 ranks, 3 steps, tp groups of 4 for all_gather / reduce_scatter, rank 5 late by 300 us.
constexpr int kRanks = 8, kSteps = 3, kStraggler = 5;
constexpr int64_t kDelayNs = 300'000, kTransferNs = 100'000;

fs::path Generate(const fs::path& dir, const std::string& args) {
  RunGenerator("make_kineto_traces.py " + (dir / "traces").string() + " " + args, dir / "gen.txt");
  return dir / "traces";
}

std::vector<nlohmann::json> Items(const nlohmann::json& geo, const std::string& kind) {
  std::vector<nlohmann::json> out;
  for (const auto& item : geo["profiler"]["items"])
    if (item["kind"] == kind) out.push_back(item);
  std::sort(out.begin(), out.end(), [](const nlohmann::json& a, const nlohmann::json& b) {
    return a["rect"][0].get<float>() < b["rect"][0].get<float>();
  });
  return out;
}

// Some pixel within `r` of (x, y) is near `want` (thin marks: outlines, 3-pixel bars, lines).
bool AnyNear(const Image& img, int x, int y, int r, Rgb want, int tol = 8) {
  for (int dy = -r; dy <= r; ++dy)
    for (int dx = -r; dx <= r; ++dx) {
      const int px = x + dx, py = y + dy;
      if (px >= 0 && py >= 0 && px < img.w && py < img.h && Near(img.At(px, py), want, tol)) return true;
    }
  return false;
}

int Mid(const nlohmann::json& rect, int a, int b) {
  return static_cast<int>((rect[a].get<float>() + rect[b].get<float>()) / 2);
}

}  // namespace

TEST_CASE("profiler view: lanes per rank, steps, and the straggler marked on its kernels",
          "[gui][profiler]") {
  fs::path dir = TempDir("profiler_open");
  const fs::path traces = Generate(dir, "--ranks 8 --steps 3 --ops 3 --tp 4 --straggler 5 --delay-us 300");
  auto geo = Shoot(dir, traces.string() + " --size 1600x1000");
  Image img = LoadPng(dir / "shot.png");
  const auto& p = geo["profiler"];
  REQUIRE(p.is_object());
  CHECK(p["active"] == true);
  CHECK(p["lanes"] == kRanks);
  CHECK(p["depth"] == 2);  // aten::linear holds aten::mm
  // Per step: all_reduce, broadcast, all_to_all on the world; all_gather and reduce_scatter on
  // each of the two tp groups; one send/recv per pair of ranks (4 pairs).
  CHECK(p["matched"] == kSteps * (3 + 2 * 2 + kRanks / 2));
  CHECK(p["unmatched"] == 0);
  // Rank 5 is in every collective's group (the world, tp group 4-7, pair 4-5): last at 6 a step.
  REQUIRE(p["stragglers"].size() == 1);
  CHECK(p["stragglers"][0][0] == kStraggler);
  CHECK(p["stragglers"][0][1] == 6 * kSteps);
  // Every rank's 6 kernels a step are drawn; the red marks sit on rank 5's and nowhere else.
  const auto kernels = Items(geo, "kernel");
  CHECK(kernels.size() == static_cast<size_t>(kRanks * 6 * kSteps));
  for (const auto& k : kernels) CHECK(k["last"] == (k["rank"] == kStraggler));
  const auto marks = Items(geo, "straggler");
  CHECK(marks.size() == static_cast<size_t>(6 * kSteps));
  for (const auto& m : marks) {
    CHECK(m["rank"] == kStraggler);
    CHECK(AnyNear(img, Mid(m["rect"], 0, 2), Mid(m["rect"], 1, 3), 1, kProfilerStraggler));
  }
  // A rank that did not arrive last has no red over its kernels.
  for (const auto& k : kernels) {
    if (k["rank"] == kStraggler) continue;
    const auto& r = k["rect"];
    CHECK_FALSE(Near(img.At(Mid(r, 0, 2), static_cast<int>(r[1].get<float>()) - 1), kProfilerStraggler, 30));
  }
  // Step boundaries: ProfilerStep#0..2 on the axis.
  const auto steps = Items(geo, "step");
  REQUIRE(steps.size() == static_cast<size_t>(kSteps));
  for (int s = 0; s < kSteps; ++s) {
    CHECK(steps[static_cast<size_t>(s)]["seq"] == s);
    CHECK(steps[static_cast<size_t>(s)]["label"] == "ProfilerStep#" + std::to_string(s));
  }
  // Every lane labelled, the straggler's with its count.
  const auto lanes = Items(geo, "lane");
  CHECK(lanes.size() == static_cast<size_t>(kRanks));
  for (const auto& l : lanes) CHECK(l["seq"] == (l["rank"] == kStraggler ? 6 * kSteps : 0));
}

TEST_CASE("profiler view: clicking a kernel selects its collective on every rank; keys move and clear",
          "[gui][profiler]") {
  fs::path dir = TempDir("profiler_click");
  const fs::path traces = Generate(dir, "--ranks 8 --steps 3 --ops 3 --tp 4 --straggler 5 --delay-us 300");
  auto geo = Shoot(dir, traces.string() + " --size 1600x1000");
  // Rank 2's kernels left to right: step 1's all_reduce is its 7th (6 kernels a step).
  std::vector<nlohmann::json> r2;
  for (const auto& k : Items(geo, "kernel"))
    if (k["rank"] == 2) r2.push_back(k);
  REQUIRE(r2.size() == static_cast<size_t>(6 * kSteps));
  REQUIRE(r2[6]["label"] == "all_reduce");
  const std::string click =
      "click:" + std::to_string(Mid(r2[6]["rect"], 0, 2)) + ":" + std::to_string(Mid(r2[6]["rect"], 1, 3));

  auto sel = Shoot(dir, traces.string() + " --size 1600x1000 --keys " + click);
  Image img = LoadPng(dir / "shot.png");
  const auto& p = sel["profiler"];
  CHECK(p["selected_kind"] == "all_reduce");
  CHECK(p["selected_step"] == 1);
  CHECK(p["selected_pg"] == "0");
  CHECK(p["last_rank"] == kStraggler);
  CHECK(p["selected_bytes"] == (int64_t{1} << 20) * 4);
  CHECK(p["selected_time_ns"] == kTransferNs);
  CHECK(p["focus_rank"] == 2);
  REQUIRE(p["waits"].size() == static_cast<size_t>(kRanks));
  for (int r = 0; r < kRanks; ++r) CHECK(p["waits"][std::to_string(r)] == (r == kStraggler ? 0 : kDelayNs));
  // Outlined on all 8 ranks (the straggler in red, the others in white), joined by 7 segments.
  std::set<int64_t> outlined;
  for (const auto& k : Items(sel, "kernel")) {
    if (k["selected"] != true) continue;
    outlined.insert(k["rank"].get<int64_t>());
    const auto& r = k["rect"];
    const Rgb want = k["rank"] == kStraggler ? kProfilerStraggler : kProfilerSelected;
    CHECK(AnyNear(img, static_cast<int>(r[0].get<float>()) - 1, Mid(r, 1, 3), 2, want));
  }
  CHECK(outlined.size() == static_cast<size_t>(kRanks));
  const auto connectors = Items(sel, "connector");
  CHECK(connectors.size() == static_cast<size_t>(kRanks - 1));
  for (const auto& c : connectors) {
    const auto& r = c["rect"];  // a segment from (x0, y0) to (x1, y1): its midpoint is on the line
    CHECK(AnyNear(img, Mid(r, 0, 2), Mid(r, 1, 3), 2, kProfilerConnector));
  }

  // Right: the next kernel on rank 2's lane is step 1's all_gather, on tp group 0-3, which
  // started together (no straggler, nobody waited). Down: rank 3, the same collective.
  auto moved = Shoot(dir, traces.string() + " --size 1600x1000 --keys " + click + ",Right,Down");
  CHECK(moved["profiler"]["selected_kind"] == "all_gather");
  CHECK(moved["profiler"]["selected_step"] == 1);
  CHECK(moved["profiler"]["focus_rank"] == 3);
  REQUIRE(moved["profiler"]["waits"].size() == 4u);
  for (const auto& [rank, wait] : moved["profiler"]["waits"].items()) CHECK(wait == 0);
  CHECK(Items(moved, "straggler").size() == static_cast<size_t>(6 * kSteps));  // still marked

  // W zooms in 0.8x around the centre three times; Esc clears the selection.
  auto zoomed = Shoot(dir, traces.string() + " --size 1600x1000 --keys " + click + ",W,W,W,Esc");
  const auto& z = zoomed["profiler"];
  CHECK(z["selected"] == -1);
  const double fit = z["trace_ns"].get<double>() * 1.02;
  CHECK(z["view_end_ns"].get<double>() - z["view_start_ns"].get<double>() ==
        Approx(fit * 0.512).epsilon(1e-6));

  // F zooms to the selected collective: every member's kernel in view, wide enough to be labelled,
  // and the ops before it on the lanes with their names (aten::linear over aten::mm).
  auto focused = Shoot(dir, traces.string() + " --size 1600x1000 --keys " + click + ",F");
  const auto& fp = focused["profiler"];
  CHECK(fp["view_end_ns"].get<double>() - fp["view_start_ns"].get<double>() < 2e6);
  int in_view = 0;
  for (const auto& k : Items(focused, "kernel")) {
    if (k["selected"] != true) continue;
    ++in_view;
    CHECK(k["rect"][0].get<float>() >= fp["plot"][0].get<float>());
    CHECK(k["rect"][2].get<float>() <= fp["plot"][2].get<float>());
  }
  CHECK(in_view == kRanks);
  std::map<std::string, std::set<int64_t>> op_depths;
  for (const auto& o : Items(focused, "op")) op_depths[o["label"]].insert(o["seq"].get<int64_t>());
  CHECK(op_depths["aten::linear"] == std::set<int64_t>{0});
  CHECK(op_depths["aten::mm"] == std::set<int64_t>{1});
}

TEST_CASE("profiler view: at 64 ranks the straggler button scrolls to the straggler's lane",
          "[gui][profiler]") {
  fs::path dir = TempDir("profiler_64");
  const fs::path traces = Generate(dir, "--ranks 64 --steps 2 --ops 20 --tp 8 --straggler 37 --delay-us 200");
  auto geo = Shoot(dir, traces.string() + " --size 1400x800");
  const auto& p = geo["profiler"];
  CHECK(p["lanes"] == 64);
  // Only the lanes in view are drawn: rank 37's is below them.
  std::set<int64_t> drawn;
  for (const auto& l : Items(geo, "lane")) drawn.insert(l["rank"].get<int64_t>());
  CHECK(drawn.size() < 64u);
  CHECK(drawn.count(37) == 0);
  const auto button = Items(geo, "straggler_button");
  REQUIRE(button.size() == 1u);
  CHECK(button[0]["rank"] == 37);
  const std::string click = "click:" + std::to_string(Mid(button[0]["rect"], 0, 2)) + ":" +
                            std::to_string(Mid(button[0]["rect"], 1, 3));
  auto went = Shoot(dir, traces.string() + " --size 1400x800 --keys " + click);
  Image img = LoadPng(dir / "shot.png");
  bool lane37 = false;
  for (const auto& l : Items(went, "lane")) {
    if (l["rank"] != 37) continue;
    lane37 = true;
    CHECK(l["selected"] == true);  // the focused lane
    CHECK(l["rect"][1].get<float>() >= went["profiler"]["plot"][1].get<float>());
    CHECK(l["rect"][3].get<float>() <= went["profiler"]["plot"][3].get<float>());
  }
  CHECK(lane37);
  // Rank 37 is in the world and in tp group 32-39 and pair 36-37: last at all 6 kinds a step.
  const auto marks = Items(went, "straggler");
  CHECK(marks.size() == 12u);
  for (const auto& m : marks) {
    CHECK(m["rank"] == 37);
    CHECK(AnyNear(img, Mid(m["rect"], 0, 2), Mid(m["rect"], 1, 3), 1, kProfilerStraggler));
  }
}

// The trace `shardscope import kineto DIR -o T` writes (DIR's events through trace::Writer, as that
// command writes them) opens as DIR does: on the profiler view, with the same lanes, ops, kernels
// and matches.
TEST_CASE("profiler view: a profiler directory's imported trace opens as the directory does",
          "[gui][profiler]") {
  fs::path dir = TempDir("profiler_imported");
  const fs::path traces = Generate(dir, "--ranks 4 --steps 2 --straggler 1 --delay-us 300");
  const fs::path imported = dir / "imported";
  for (const trace::RankTrace& rt : trace::ReadAnyTrace(traces).ranks) {
    trace::Writer writer(imported, rt.header);
    for (const trace::Event& e : rt.events) writer.Emit(e);
    writer.Close();
  }
  const nlohmann::json a = Shoot(dir, traces.string() + " --size 1200x800")["profiler"];
  const nlohmann::json b = Shoot(dir, imported.string() + " --size 1200x800")["profiler"];
  REQUIRE(a.is_object());
  REQUIRE(b.is_object());
  CHECK(a["active"] == true);
  CHECK(b["active"] == true);
  CHECK(b["lanes"] == 4);
  for (const char* key : {"lanes", "ops", "kernels", "depth", "matched", "unmatched", "stragglers"}) {
    INFO(key);
    CHECK(a[key] == b[key]);
  }
}
