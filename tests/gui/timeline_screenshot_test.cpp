// The timeline at 4096 ranks (issue 18 items 3 and 8), under Xvfb: one lane per dp coordinate with
// its collectives drawn and a scrollbar; a click on a group's label expands it; F zooms to the
// selected redistribute; G and a typed rank expand that rank's group and bring its lane into view;
// a drag on the time axis measures a range. Expected values come from the definitions (Help text):
// the group of rank r on a 64x64 (dp, tp) mesh is r / 64, the zoom range is the redistribute's
// earliest start and latest end on any rank padded by 5% on each side (at least 25 ns), and a
// measured range is the time under the drag's two ends.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

#include "diff_test_traces.hpp"
#include "gui_test_support.hpp"
#include "sample_data.hpp"
#include "shardscope/trace/reader.hpp"
#include "timeline_model.hpp"

using namespace shardscope_gui_test;
namespace gui = shardscope::app::gui;

namespace {

std::string Px(double v) { return std::to_string(static_cast<int>(v)); }

// Group dp=0's widest collective union is drawn in the lower half of its lane; where none of its
// ranks is busy (after the last span) the lane shows its background.
void CheckGroupLane(const fs::path& dir, const nlohmann::json& tl, const gui::TimelineData& data) {
  const float px0 = tl["plot"][0], px1 = tl["plot"][2];
  const double vs = tl["view_start_ns"], ve = tl["view_end_ns"];
  const gui::TimelineGroup& g = data.groups[0];
  REQUIRE(!g.collectives.empty());
  const gui::GroupSpan& widest = *std::max_element(
      g.collectives.begin(), g.collectives.end(),
      [](const gui::GroupSpan& a, const gui::GroupSpan& b) { return a.end - a.start < b.end - b.start; });
  auto x_of = [&](int64_t t) {
    return px0 + (static_cast<double>(t - data.t0) - vs) / (ve - vs) * (px1 - px0);
  };
  const auto& row = tl["visible_rows"][0]["rect"];
  const float ry0 = row[1], ry1 = row[3];
  static Image img = LoadPng(dir / "shot.png");
  const int cy = static_cast<int>(ry0 + (ry1 - ry0) * 0.75f);
  INFO("collective union " << widest.start << ".." << widest.end);
  REQUIRE(x_of(widest.end) - x_of(widest.start) >= 8);
  CHECK_FALSE(PatchIs(img, static_cast<int>((x_of(widest.start) + x_of(widest.end)) / 2), cy,
                      gui::kTimelineGroupBackground));
  const int64_t last = g.bars.back().end;
  CHECK(PatchIs(img, static_cast<int>((x_of(last) + px1) / 2), cy, gui::kTimelineGroupBackground));
}

}  // namespace

TEST_CASE("the timeline at 4096 ranks: group lanes, expand, zoom to selection, go to rank, measure",
          "[gui][timeline][scale]") {
  fs::path dir = TempDir("timeline4096");
  engine::Mesh mesh({64, 64}, {"dp", "tp"});
  auto spec = [&](const char* p) { return Spec(mesh, p, {128, 128}); };
  WriteTraceDir(
      *gui::ModelFromPlans(
          {{"t", spec("S(0),S(1)"), spec("S(0),R"), {}}, {"u", spec("S(0),R"), spec("R,R"), {}}}, "test"),
      dir / "trace");
  const shardscope::trace::Model model = shardscope::trace::ReadTraceDir(dir / "trace");
  const gui::TimelineData data = gui::BuildTimeline(model);
  const std::string args = (dir / "trace").string() + " --view timeline";

  // At rest: 64 group lanes (one per dp coordinate), more than fit, so a scrollbar. (Run once: Catch
  // enters the test case again for each section.)
  static nlohmann::json geo;
  if (geo.is_null()) geo = Shoot(dir, args);
  const auto& tl = geo["timeline"];
  REQUIRE(tl.is_object());
  CHECK(tl["rows"] == 64);
  CHECK(tl["scrollbar"] == true);
  CHECK(tl["expanded"].empty());
  REQUIRE(tl["visible_rows"].size() >= 10);
  CHECK(tl["visible_rows"][0]["label"] == "+ dp=0");
  CHECK(tl["visible_rows"][3]["rank"] == -1);
  const float px0 = tl["plot"][0], py0 = tl["plot"][1], px1 = tl["plot"][2];
  const double vs = tl["view_start_ns"], ve = tl["view_end_ns"];
  CHECK(vs == 0.0);
  CheckGroupLane(dir, tl, data);

  SECTION("a click on a group's label expands it; F zooms to the selected redistribute") {
    const auto& label = tl["visible_rows"][1];  // dp=1
    const std::string click =
        "click:" + Px((label["rect"][0].get<float>() + label["rect"][2].get<float>()) / 2) + ":" +
        Px((label["rect"][1].get<float>() + label["rect"][3].get<float>()) / 2);
    auto g2 = Shoot(dir, args + " --keys \"Down,F," + click + ",wait\"");
    const auto& t2 = g2["timeline"];
    CHECK(t2["expanded"] == nlohmann::json::array({1}));
    CHECK(t2["rows"] == 64 + 64);
    CHECK(t2["visible_rows"][2]["rank"] == 64);  // dp=1's first rank, right under its group row
    for (const auto& p : g2["panels"]) CHECK(p["redistribute_id"] == 1);
    int64_t a = 0, b = 0;
    REQUIRE(gui::IdRange(data.bars, 1, a, b));
    const double pad = std::max(25.0, static_cast<double>(b - a) * 0.05);
    CHECK(t2["view_start_ns"].get<double>() == Approx(static_cast<double>(a - data.t0) - pad));
    CHECK(t2["view_end_ns"].get<double>() == Approx(static_cast<double>(b - data.t0) + pad));
  }

  SECTION("G and a rank expand its group and scroll its lane into view; a drag on the axis measures") {
    const float ax = px0 + 100, bx = px0 + 500, ay = py0 - 8;
    auto g3 = Shoot(dir, args + " --keys \"drag:" + Px(ax) + ":" + Px(ay) + ":" + Px(bx) + ":" + Px(ay) +
                             ",type:g,wait,wait,wait,type:3000,wait,wait\"");
    const auto& t3 = g3["timeline"];
    CHECK(t3["goto_rank"] == 3000);
    CHECK(t3["expanded"] == nlohmann::json::array({3000 / 64}));
    bool shown = false;
    for (const auto& r : t3["visible_rows"]) {
      if (r["rank"] != 3000) continue;
      shown = r["rect"][1].get<float>() >= t3["plot"][1].get<float>() &&
              r["rect"][3].get<float>() <= t3["plot"][3].get<float>();
    }
    CHECK(shown);
    REQUIRE(t3["measure"].is_array());
    const double span = ve - vs, w = px1 - px0;
    CHECK(t3["measure"][0].get<double>() == Approx(vs + (ax - px0) / w * span));
    CHECK(t3["measure"][1].get<double>() == Approx(vs + (bx - px0) / w * span));
  }

  SECTION("dragging the scrollbar's thumb to the bottom shows the last group") {
    const float sx = px1 + 7, top = py0 + 5, bottom = tl["plot"][3].get<float>() - 1;
    auto g4 = Shoot(
        dir, args + " --keys \"drag:" + Px(sx) + ":" + Px(top) + ":" + Px(sx) + ":" + Px(bottom) + "\"");
    const auto& t4 = g4["timeline"];
    CHECK(t4["first_row"].get<int>() > 0);
    CHECK(t4["visible_rows"].back()["label"] == "+ dp=63");
    CHECK(t4["measure"].is_null());  // the scrollbar scrolls, it does not measure
  }
}
