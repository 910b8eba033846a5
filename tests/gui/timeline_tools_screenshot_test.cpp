// The timeline's tools driven by --keys and checked with --geometry (issue 38): a drag on the time
// axis selects a range and the box beside it counts what overlaps the range (redistributes,
// collective calls, bytes) with a per-rank breakdown, as worked out here from the trace's records.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "diff_test_traces.hpp"
#include "gui_test_support.hpp"
#include "sample_data.hpp"
#include "shardscope/trace/reader.hpp"

using namespace shardscope_gui_test;

namespace {

namespace trace = shardscope::trace;

std::string Px(double v) { return std::to_string(static_cast<int>(std::lround(v))); }

struct RankWant {
  int64_t redistributes = 0, collectives = 0, bytes = 0, busy = 0;
};

// Redistributes and collectives overlapping [a, b] (ns from the trace's first event, each rank's
// clock offset applied): start <= b and end >= a; bytes whole, busy time clipped to the range.
struct Want {
  std::set<int64_t> ids;
  int64_t collectives = 0, bytes = 0;
  std::map<int64_t, RankWant> ranks;
};

Want Expected(const trace::Model& m, int64_t a, int64_t b) {
  std::map<int64_t, int64_t> off;
  for (const auto& r : m.ranks) off[r.header.rank] = r.header.clock.offset_ns;
  int64_t t0 = std::numeric_limits<int64_t>::max();
  for (const auto& rec : m.redistributes) t0 = std::min(t0, rec.begin->t_ns + off[rec.rank]);
  Want w;
  for (const auto& rec : m.redistributes) {
    const int64_t o = off[rec.rank] - t0;
    const int64_t s = rec.begin->t_ns + o;
    int64_t e = rec.end ? rec.end->t_ns + o : s;
    for (const auto& st : rec.steps) e = std::max(e, (st.end ? st.end->t_ns : st.begin->t_ns) + o);
    for (const auto& c : rec.collectives) e = std::max(e, c.end_ns + o);
    if (s <= b && e >= a) w.ids.insert(rec.begin->id), ++w.ranks[rec.rank].redistributes;
    for (const auto& c : rec.collectives) {
      const int64_t cs = c.start_ns + o, ce = c.end_ns + o;
      if (cs > b || ce < a) continue;
      RankWant& r = w.ranks[rec.rank];
      ++r.collectives, ++w.collectives;
      for (int64_t x : c.bytes_sent()) r.bytes += x, w.bytes += x;
      r.busy += std::max<int64_t>(0, std::min(ce, b) - std::max(cs, a));
    }
  }
  return w;
}

}  // namespace

TEST_CASE("a drag on the time axis selects a range and shows its counts, bytes and ranks",
          "[gui][input][timeline][range]") {
  fs::path dir = TempDir("range");
  fs::path t = SmallTrace(dir);
  const trace::Model model = trace::ReadTraceDir(t);
  const auto first = Shoot(dir, t.string())["timeline"];
  CHECK(first["range"].is_null());
  const float x0 = first["plot"][0], y0 = first["plot"][1], x1 = first["plot"][2], y1 = first["plot"][3];
  const double vs = first["view_start_ns"], ve = first["view_end_ns"];
  // On the axis row, from a quarter to 70% of the plot's width.
  const double fa = 0.25, fb = 0.70;
  const std::string drag = "drag:" + Px(x0 + fa * (x1 - x0)) + ":" + Px(y0 - 10) + ":" +
                           Px(x0 + fb * (x1 - x0)) + ":" + Px(y0 - 10);
  const auto geo = Shoot(dir, t.string() + " --keys " + drag);
  const auto& tl = geo["timeline"];
  REQUIRE(tl["measure"].is_array());
  REQUIRE(tl["range"].is_object());
  const double ma = tl["measure"][0], mb = tl["measure"][1];
  const double px_ns = (ve - vs) / (x1 - x0);
  CHECK(ma == Approx(vs + fa * (ve - vs)).margin(2 * px_ns));
  CHECK(mb == Approx(vs + fb * (ve - vs)).margin(2 * px_ns));
  const auto& range = tl["range"];
  const int64_t a = range["start_ns"], b = range["end_ns"];
  CHECK(a == static_cast<int64_t>(std::floor(ma)));
  CHECK(b == static_cast<int64_t>(std::ceil(mb)));
  const Want want = Expected(model, a, b);
  CHECK(want.collectives > 0);  // the range is not empty: the test means something
  CHECK(range["redistributes"] == static_cast<int64_t>(want.ids.size()));
  CHECK(range["ops"] == 0);
  CHECK(range["collectives"] == want.collectives);
  CHECK(range["bytes_sent"] == want.bytes);
  REQUIRE(range["ranks"].size() == want.ranks.size());
  size_t i = 0;
  for (const auto& [rank, w] : want.ranks) {
    const auto& r = range["ranks"][i++];
    INFO("rank " << rank);
    CHECK(r["rank"] == rank);
    CHECK(r["redistributes"] == w.redistributes);
    CHECK(r["collectives"] == w.collectives);
    CHECK(r["bytes_sent"] == w.bytes);
    CHECK(r["busy_ns"] == w.busy);
  }
  // The box lies inside the plot, under the axis.
  const auto& box = range["box"];
  CHECK(box[0].get<float>() >= x0);
  CHECK(box[2].get<float>() <= x1);
  CHECK(box[1].get<float>() >= y0);
  CHECK(box[3].get<float>() <= y1);
  // Esc drops the range with the selection.
  const auto cleared = Shoot(dir, t.string() + " --keys " + drag + ",Escape")["timeline"];
  CHECK(cleared["range"].is_null());
  CHECK(cleared["measure"].is_null());
}

namespace {

std::string Centre(const nlohmann::json& rect) {
  return Px((rect[0].get<double>() + rect[2].get<double>()) / 2) + ":" +
         Px((rect[1].get<double>() + rect[3].get<double>()) / 2);
}

const nlohmann::json* RowOf(const nlohmann::json& timeline, int64_t rank) {
  for (const auto& r : timeline["visible_rows"])
    if (r["rank"] == rank) return &r;
  return nullptr;
}

}  // namespace

TEST_CASE("a lane pinned from its context menu stays at the top while the others scroll",
          "[gui][input][timeline][pin]") {
  fs::path dir = TempDir("pin");
  // 128 ranks on an 8x16 (dp, tp) mesh: the timeline shows one lane per dp coordinate until a group
  // is expanded, and then more rows than fit.
  fs::path t = ManyRankTrace(dir, "grouped", 8, 16);
  // Go to rank 45: its group (dp=2, ranks 32-47) expands and the lanes need a scrollbar.
  const std::string go = "G,wait,wait,wait,type:45";
  const auto at45 = Shoot(dir, t.string() + " --keys " + go)["timeline"];
  REQUIRE(at45["scrollbar"] == true);
  const auto* row45 = RowOf(at45, 45);
  REQUIRE(row45 != nullptr);
  // A right click on its label opens the lane menu.
  const std::string menu_keys = go + ",rclick:" + Centre((*row45)["rect"]);
  const auto menu = Shoot(dir, t.string() + " --keys " + menu_keys)["timeline"]["lane_menu"];
  REQUIRE(menu.size() == 1);
  CHECK(menu[0]["label"] == "Pin r45 to the top");
  const std::string pin_keys = menu_keys + ",click:" + Centre(menu[0]["rect"]);
  const auto pinned = Shoot(dir, t.string() + " --keys " + pin_keys)["timeline"];
  CHECK(pinned["pinned"] == nlohmann::json::array({45}));
  const float y0 = pinned["plot"][1], y1 = pinned["plot"][3], x1 = pinned["plot"][2];
  // Scroll the lanes to the bottom with the scrollbar (right of the plot).
  const std::string sx = Px(x1 + 7);
  const std::string scroll = ",drag:" + sx + ":" + Px(y0 + 3) + ":" + sx + ":" + Px(y1 - 2);
  auto geo = Shoot(dir, t.string() + " --keys " + pin_keys + scroll);
  const auto& tl = geo["timeline"];
  CHECK(tl["pinned"] == nlohmann::json::array({45}));
  CHECK(tl["first_row"].get<size_t>() > 3);  // scrolled well down
  // The first row drawn is r45, pinned, at the plot's top; the rows under it are scrolled ones
  // and none of them is r45 again.
  REQUIRE(!tl["visible_rows"].empty());
  const auto& top = tl["visible_rows"][0];
  CHECK(top["rank"] == 45);
  CHECK(top["pinned"] == true);
  CHECK(top["rect"][1].get<float>() == Approx(y0));
  int seen45 = 0;
  for (const auto& r : tl["visible_rows"]) seen45 += r["rank"] == 45 ? 1 : 0;
  CHECK(seen45 == 1);
  // The last group (dp=7) is on screen after scrolling to the bottom.
  bool last_group = false;
  for (const auto& r : tl["visible_rows"]) last_group = last_group || r["label"] == "+ dp=7";
  CHECK(last_group);
  // The pin mark (amber) sits at the label's right end, 8 px left of the plot.
  const Image img = LoadPng(dir / "shot.png");
  const float mid = (top["rect"][1].get<float>() + top["rect"][3].get<float>()) / 2;
  const float px = tl["plot"][0].get<float>() - 8;
  CHECK(Near(img.At(static_cast<int>(px), static_cast<int>(mid)), Rgb{235, 200, 90}, 30));

  // The same menu on the pinned lane unpins it.
  const std::string unpin_menu = pin_keys + scroll + ",rclick:" + Centre(top["rect"]);
  const auto menu2 = Shoot(dir, t.string() + " --keys " + unpin_menu)["timeline"]["lane_menu"];
  REQUIRE(menu2.size() >= 1);
  CHECK(menu2[0]["label"] == "Unpin r45");
  const auto unpinned =
      Shoot(dir, t.string() + " --keys " + unpin_menu + ",click:" + Centre(menu2[0]["rect"]));
  CHECK(unpinned["timeline"]["pinned"].empty());
}
