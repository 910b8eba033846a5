// Navigation (issue 38, item 2), driven by --keys and checked with --geometry and pixels:
// Esc clears the selection instead of quitting and Ctrl+Q quits; W/S zoom by the timeline's factor
// (0.8 in, 1.25 out, around the centre) and A/D pan by a tenth of the view; go-to-rank names a rank
// out of range instead of clamping it, and an in-range rank reaches the timeline, the layout (its
// table row on screen and highlighted, its shards outlined where the engine's layout puts them)
// and the mesh; a selection made in the list brings the timeline to it.
#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>
#include <limits>

#include "diff_test_traces.hpp"
#include "gui_test_support.hpp"
#include "sample_data.hpp"
#include "shardscope/trace/reader.hpp"

using namespace shardscope_gui_test;

namespace {

namespace trace = shardscope::trace;

// 64 ranks on an 8x8 mesh: the layout's table cannot show every row at once.
fs::path WideTrace(const fs::path& dir) { return ManyRankTrace(dir, "wide", 8, 8); }

// [start, end) of redistribute `id` over every rank, ns from the trace's first event, as the
// timeline defines its axis (rank clocks shifted by their offsets).
std::pair<double, double> IdRangeNs(const trace::Model& model, int64_t id) {
  int64_t t0 = std::numeric_limits<int64_t>::max(), a = t0, b = std::numeric_limits<int64_t>::min();
  std::map<int64_t, int64_t> offset;
  for (const auto& r : model.ranks) offset[r.header.rank] = r.header.clock.offset_ns;
  for (const trace::RedistributeRecord& rec : model.redistributes) {
    const int64_t off = offset[rec.rank];
    const int64_t start = rec.begin->t_ns + off;
    int64_t end = rec.end ? rec.end->t_ns + off : start;
    for (const auto& s : rec.steps) end = std::max(end, (s.end ? s.end->t_ns : s.begin->t_ns) + off);
    for (const auto& c : rec.collectives) end = std::max(end, c.end_ns + off);
    t0 = std::min(t0, start);
    if (rec.begin->id == id) a = std::min(a, start), b = std::max(b, end);
  }
  return {static_cast<double>(a - t0), static_cast<double>(b - t0)};
}

}  // namespace

TEST_CASE("Esc clears the selection and does not quit; Down / Up then pick the first / last",
          "[gui][input][navigation]") {
  fs::path dir = TempDir("esc");
  fs::path t = SmallTrace(dir);
  const auto ids = trace::ReadTraceDir(t).RedistributeIds();
  REQUIRE(ids.size() >= 3);
  auto geo = Shoot(dir, t.string() + " --keys Down,Escape");  // Shoot requires the screenshot: no quit
  CHECK(geo["selected_redistribute"] == -1);
  CHECK(geo["selected_op"] == -1);
  for (const auto& p : geo["panels"]) CHECK(p["redistribute_id"] == -1);
  CHECK(Shoot(dir, t.string() + " --keys Down,Escape,Down")["selected_redistribute"] == ids.front());
  CHECK(Shoot(dir, t.string() + " --keys Down,Escape,Up")["selected_redistribute"] == ids.back());
}

TEST_CASE("Ctrl+Q quits at once", "[gui][input][navigation]") {
  fs::path dir = TempDir("ctrlq");
  fs::path t = SmallTrace(dir);
  const auto begin = std::chrono::steady_clock::now();
  auto r = RunGui(t.string() + " --quit-after 30 --keys CtrlQ", dir / "log.txt", dir);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(s < 20);  // far from the 30 s --quit-after would take
}

TEST_CASE("W / S zoom around the centre and A / D pan the timeline", "[gui][input][navigation]") {
  fs::path dir = TempDir("wasd");
  fs::path t = SmallTrace(dir);
  const auto whole = Shoot(dir, t.string())["timeline"];
  const double start0 = whole["view_start_ns"], end0 = whole["view_end_ns"];
  const double span0 = end0 - start0, mid0 = (start0 + end0) / 2;
  struct Want {
    const char* keys;
    double span, mid;
  };
  const Want cases[] = {{"W", span0 * 0.8, mid0},
                        {"W,W,W", span0 * 0.8 * 0.8 * 0.8, mid0},
                        {"W,W,S", span0 * 0.8, mid0},
                        {"W,D", span0 * 0.8, mid0 + span0 * 0.8 * 0.1},
                        {"W,A,A", span0 * 0.8, mid0 - 2 * span0 * 0.8 * 0.1}};
  for (const Want& w : cases) {
    DYNAMIC_SECTION(w.keys) {
      const auto tl = Shoot(dir, t.string() + " --keys " + w.keys)["timeline"];
      const double a = tl["view_start_ns"], b = tl["view_end_ns"];
      CHECK(b - a == Approx(w.span).epsilon(1e-9));
      CHECK((a + b) / 2 == Approx(w.mid).epsilon(1e-9));
    }
  }
}

TEST_CASE("a selection in the list brings the zoomed timeline to it", "[gui][input][navigation]") {
  fs::path dir = TempDir("follow");
  fs::path t = SmallTrace(dir);
  const trace::Model model = trace::ReadTraceDir(t);
  const auto ids = model.RedistributeIds();
  auto first = Shoot(dir, t.string());
  std::string click;
  for (const auto& row : first["list_rows"]) {
    if (row["id"] != ids.back()) continue;
    const auto& rect = row["rect"];
    click = "click:" + std::to_string(static_cast<int>((rect[0].get<float>() + rect[2].get<float>()) / 2)) +
            ":" + std::to_string(static_cast<int>((rect[1].get<float>() + rect[3].get<float>()) / 2));
  }
  REQUIRE(!click.empty());
  // Zoomed in on the centre, the first and the last redistribute lie outside the view.
  const std::string zoom = "W,W,W,W,W,W,W,W,W,W";
  const auto zoomed = Shoot(dir, t.string() + " --keys " + zoom)["timeline"];
  const auto [la, lb] = IdRangeNs(model, ids.back());
  REQUIRE(!(la >= zoomed["view_start_ns"].get<double>() && lb <= zoomed["view_end_ns"].get<double>()));
  for (const std::string& pick : {click, std::string("Down,Down,Down")}) {
    DYNAMIC_SECTION(pick) {
      auto geo = Shoot(dir, t.string() + " --keys " + zoom + "," + pick);
      const int64_t id = geo["selected_redistribute"];
      const auto [a, b] = IdRangeNs(model, id);
      INFO("redistribute " << id << " [" << a << ", " << b << ")");
      CHECK(geo["timeline"]["view_start_ns"].get<double>() <= a);
      CHECK(geo["timeline"]["view_end_ns"].get<double>() >= b);
    }
  }
}

TEST_CASE("go to rank: out of range is said, in range reaches timeline, layout and mesh",
          "[gui][input][navigation]") {
  fs::path dir = TempDir("goto");
  fs::path t = WideTrace(dir);
  SECTION("out of range") {
    auto geo = Shoot(dir, t.string() + " --keys type:g,wait,wait,wait,type:99");
    CHECK(geo["timeline"]["goto_rank"] == -1);
    const std::string error = geo["timeline"]["goto_error"];
    CHECK(error.find("99") != std::string::npos);
    CHECK(error.find("0..63") != std::string::npos);
    CHECK(geo["mesh"]["focus_rank"] == 0);
  }
  SECTION("rank 45") {
    const int64_t rank = 45;
    auto geo = Shoot(dir, t.string() + " --keys type:g,wait,wait,wait,type:45");
    CHECK(geo["timeline"]["goto_rank"] == rank);
    CHECK(geo["timeline"]["goto_error"] == "");
    CHECK(geo["mesh"]["focus_rank"] == rank);
    REQUIRE(geo["layout_table"].is_object());
    CHECK(geo["layout_table"]["focus_rank"] == rank);
    CHECK(geo["layout_table"]["first_row"].get<int64_t>() <= rank);
    CHECK(geo["layout_table"]["last_row"].get<int64_t>() > rank);
    CHECK(geo["layout_table"]["last_row"].get<int64_t>() - geo["layout_table"]["first_row"].get<int64_t>() <
          64);
    // The outlined shard is rank 45's region of the engine's layout before step 0.
    engine::Mesh mesh({8, 8}, {"dp", "tp"});
    engine::TensorSpec from = Spec(mesh, "S(0),S(1)", {64, 64});
    engine::Plan plan = engine::MakePlan(from, Spec(mesh, "R,S(1)", {64, 64}), 0, {});
    auto [before, after] = StepLayouts(from, plan, 0);
    const Image img = LoadPng(dir / "shot.png");
    for (const auto& c : geo["canvases"]) {
      if (c["which"] != "before") continue;
      CHECK(c["focus_rank"] == rank);
      REQUIRE(c["focus_rect"].is_array());
      const auto& l = before[static_cast<size_t>(rank)];
      const engine::Interval r = l.indices[0].front(), k = l.indices[1].front();
      const float x0 = c["rect"][0], y0 = c["rect"][1], x1 = c["rect"][2], y1 = c["rect"][3];
      const double rows = c["rows"], cols = c["cols"];
      CHECK(c["focus_rect"][0].get<float>() == Approx(x0 + k.begin / cols * (x1 - x0)).margin(1));
      CHECK(c["focus_rect"][2].get<float>() == Approx(x0 + k.end / cols * (x1 - x0)).margin(1));
      CHECK(c["focus_rect"][1].get<float>() == Approx(y0 + r.begin / rows * (y1 - y0)).margin(1));
      CHECK(c["focus_rect"][3].get<float>() == Approx(y0 + r.end / rows * (y1 - y0)).margin(1));
      // The outline is white on the region's left edge, 2 px in.
      const int ox = static_cast<int>(c["focus_rect"][0].get<float>()) + 2;
      const int oy =
          static_cast<int>((c["focus_rect"][1].get<float>() + c["focus_rect"][3].get<float>()) / 2);
      CHECK(Near(img.At(ox, oy), Rgb{255, 255, 255}, 40));
    }
  }
}

TEST_CASE("the documented keys G, Ctrl+G and 0 can be pressed by a script", "[gui][input][navigation]") {
  fs::path dir = TempDir("keys_g0");
  fs::path t = WideTrace(dir);
  SECTION("0 fits the whole trace after zooming in") {
    const auto tl = Shoot(dir, t.string() + " --keys W,W,W,D,D,0")["timeline"];
    // Fit: from the trace start to 2% past its end (the same view the trace opens on).
    const double trace_ns = tl["trace_ns"];
    CHECK(tl["view_start_ns"].get<double>() == 0);
    CHECK(tl["view_end_ns"].get<double>() == Approx(trace_ns * 1.02).epsilon(1e-9));
  }
  for (const char* key : {"G", "CtrlG"}) {
    DYNAMIC_SECTION(key << " opens go to rank") {
      auto geo = Shoot(dir, t.string() + " --keys " + key + ",wait,wait,wait,type:45");
      CHECK(geo["timeline"]["goto_rank"] == 45);
      CHECK(geo["mesh"]["focus_rank"] == 45);
    }
  }
  SECTION("without G, typed digits go nowhere") {
    auto geo = Shoot(dir, t.string() + " --keys type:45");
    CHECK(geo["timeline"]["goto_rank"] == -1);
  }
}
