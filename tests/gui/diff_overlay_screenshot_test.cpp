// The diff view's overlaid timelines (issue 38: Tracy's compare), under Xvfb: both runs on one
// time axis measured from each run's first event, each rank's lane holding the baseline's
// redistribute bars in its upper half and the candidate's in its lower half, where the trace's
// own records put them; the selected pair is marked on both sides, and a click on a bar selects
// its row.
#include <catch2/catch.hpp>

#include <limits>
#include <map>

#include "diff_test_traces.hpp"
#include "gui_test_support.hpp"
#include "sample_data.hpp"
#include "shardscope/trace/reader.hpp"

using namespace shardscope_gui_test;

namespace {

namespace trace = shardscope::trace;

struct Bar {
  int64_t start = 0, end = 0;  // ns from the run's first event
};

// Per (rank, id): the redistribute's bar from its begin to the last of its end, step ends and
// collective ends, each rank's clock offset applied; and the run's duration.
struct Run {
  std::map<std::pair<int64_t, int64_t>, Bar> bars;
  int64_t duration = 0;
};

Run ReadRun(const fs::path& dir) {
  const trace::Model m = trace::ReadTraceDir(dir);
  std::map<int64_t, int64_t> off;
  for (const auto& r : m.ranks) off[r.header.rank] = r.header.clock.offset_ns;
  int64_t t0 = std::numeric_limits<int64_t>::max(), t1 = std::numeric_limits<int64_t>::min();
  Run run;
  for (const auto& rec : m.redistributes) {
    const int64_t o = off[rec.rank];
    int64_t s = rec.begin->t_ns + o, e = rec.end ? rec.end->t_ns + o : s;
    for (const auto& st : rec.steps) e = std::max(e, (st.end ? st.end->t_ns : st.begin->t_ns) + o);
    for (const auto& c : rec.collectives) e = std::max(e, c.end_ns + o);
    run.bars[{rec.rank, rec.begin->id}] = {s, e};
    t0 = std::min(t0, s), t1 = std::max(t1, e);
  }
  for (auto& [key, bar] : run.bars) bar.start -= t0, bar.end -= t0;
  run.duration = t1 - t0;
  return run;
}

}  // namespace

TEST_CASE("diff: both runs' timelines overlaid on one time axis", "[gui][diff][input][overlay]") {
  fs::path dir = TempDir("diff_overlay");
  const auto [base, cand] = WriteDiffTraces(dir);
  const Run runs[2] = {ReadRun(base), ReadRun(cand)};
  const std::string args = "--diff " + base.string() + " " + cand.string();
  auto geo = Shoot(dir, args);
  const auto& o = geo["diff"]["overlay"];
  REQUIRE(o.is_object());
  CHECK(o["lanes"] == 4);  // 2x2 mesh: one lane per rank
  CHECK(o["per_rank"] == true);
  CHECK(o["duration_ns"][0] == runs[0].duration);
  CHECK(o["duration_ns"][1] == runs[1].duration);
  // One axis for both: from 0 to 2% past the longer run.
  const double vs = o["view_start_ns"], ve = o["view_end_ns"];
  CHECK(vs == 0);
  CHECK(ve == Approx(static_cast<double>(std::max(runs[0].duration, runs[1].duration)) * 1.02));
  const float x0 = o["plot"][0], y0 = o["plot"][1], x1 = o["plot"][2], y1 = o["plot"][3];
  const float lane_h = (y1 - y0) / 4;
  auto x_of = [&](int64_t t) { return x0 + static_cast<double>(t - vs) / (ve - vs) * (x1 - x0); };
  // Every redistribute bar of both runs is drawn where its run's records put it: its rank's lane,
  // its side's half, from its start to its end on the shared axis.
  size_t checked[2] = {0, 0};
  for (const auto& b : o["bars"]) {
    if (b["op"] == true) continue;
    const int side = b["side"] == "baseline" ? 0 : 1;
    const int64_t lane = b["lane"], id = b["id"];
    auto it = runs[side].bars.find({lane, id});
    INFO(b.dump());
    REQUIRE(it != runs[side].bars.end());
    CHECK(b["rect"][0].get<double>() == Approx(x_of(it->second.start)).margin(1.0));
    const double want_x1 = std::max(x_of(it->second.end), x_of(it->second.start) + 1);
    CHECK(b["rect"][2].get<double>() == Approx(want_x1).margin(1.0));
    const double mid = (b["rect"][1].get<double>() + b["rect"][3].get<double>()) / 2;
    const double lane_top = y0 + lane * lane_h;
    CHECK(mid > lane_top + (side == 0 ? 0 : lane_h / 2));
    CHECK(mid < lane_top + (side == 0 ? lane_h / 2 : lane_h));
    ++checked[side];
  }
  CHECK(checked[0] == runs[0].bars.size());
  CHECK(checked[1] == runs[1].bars.size());

  // The first differing row (w, id 1 on both sides) is selected: its bars are marked on both sides,
  // drawn opaque in their side's colour.
  CHECK(geo["diff"]["selected_row"] == 1);
  const Image img = LoadPng(dir / "shot.png");
  const Rgb colours[2] = {{90, 150, 230}, {240, 150, 60}};
  int selected[2] = {0, 0};
  for (const auto& b : o["bars"]) {
    const int side = b["side"] == "baseline" ? 0 : 1;
    CHECK(b["selected"] == (b["id"] == 1 && b["op"] == false));
    if (b["selected"] != true) continue;
    ++selected[side];
    const auto& r = b["rect"];
    if (r[2].get<float>() - r[0].get<float>() < 8) continue;
    const int cx = static_cast<int>((r[0].get<float>() + r[2].get<float>()) / 2);
    const int cy = static_cast<int>((r[1].get<float>() + r[3].get<float>()) / 2);
    INFO("side " << side << " pixel " << cx << "," << cy);
    CHECK(Near(img.At(cx, cy), colours[side], 12));
  }
  CHECK(selected[0] == 4);
  CHECK(selected[1] == 4);

  // A click on the candidate-only redistribute's bar (y, id 3) selects its row.
  std::string click;
  for (const auto& b : o["bars"]) {
    if (b["side"] != "candidate" || b["id"] != 3 || !click.empty()) continue;
    const auto& r = b["rect"];
    click = "click:" + std::to_string(static_cast<int>((r[0].get<float>() + r[2].get<float>()) / 2)) + ":" +
            std::to_string(static_cast<int>((r[1].get<float>() + r[3].get<float>()) / 2));
  }
  REQUIRE(!click.empty());
  auto after = Shoot(dir, args + " --keys " + click);
  const int64_t row = after["diff"]["selected_row"];
  const auto& picked = after["diff"]["rows"][static_cast<size_t>(row)];
  CHECK(picked["candidate_id"] == 3);
  CHECK(picked["baseline_id"].is_null());
  for (const auto& b : after["diff"]["overlay"]["bars"])
    CHECK(b["selected"] == (b["side"] == "candidate" && b["id"] == 3 && b["op"] == false));
}
