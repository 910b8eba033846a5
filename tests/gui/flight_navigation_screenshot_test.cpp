// Keys and clicks in the flight view at 4096 ranks (tests/trace/make_fr_faults.py not_enqueued: one
// rank stuck in compute, the rest of the dp x tp job blocked behind it), checked with --geometry and
// the PNG. Opening lands on the culprit: its group is expanded and its lane is inside the visible
// lane area, outlined in the culprit colour. The lanes are grouped as the timeline groups them
// (4096 ranks: blocks of ceil(sqrt(4096)) = 64, docs/gui.md), labels never overlap. "G" then typed
// digits go to a far rank: its lane comes into view outlined and the culprit's leaves the view; a
// click on the culprit button brings the culprit's lane back, marked. The culprit comes from the
// generator's answer, never from the GUI.
#include <catch2/catch.hpp>

#include <fstream>

#include "gui_test_support.hpp"
#include "panels/flight_panel.hpp"

using namespace shardscope_gui_test;
using shardscope::app::gui::kFlightCulprit;

namespace {

struct Box {
  float x0 = 0, y0 = 0, x1 = 0, y1 = 0;
};

Box RectOf(const nlohmann::json& item) {
  const auto& r = item["rect"];
  return {r[0].get<float>(), r[1].get<float>(), r[2].get<float>(), r[3].get<float>()};
}

// The first item of `kind` (and `rank` when >= 0); REQUIREs one.
nlohmann::json Find(const nlohmann::json& geo, const std::string& kind, int64_t rank = -1) {
  for (const auto& item : geo["flight"])
    if (item["kind"] == kind && (rank < 0 || item["rank"] == rank)) return item;
  FAIL("no flight item " << kind << " rank " << rank);
  return {};
}

bool Has(const nlohmann::json& geo, const std::string& kind, int64_t rank) {
  for (const auto& item : geo["flight"])
    if (item["kind"] == kind && item["rank"] == rank) return true;
  return false;
}

// The culprit's lane is on screen: its swatch inside the lane area, in the culprit colour.
void CheckCulpritShown(const nlohmann::json& geo, const Image& img, int64_t culprit) {
  const Box lanes = RectOf(Find(geo, "lanes"));
  const Box swatch = RectOf(Find(geo, "culprit_lane", culprit));
  CHECK(swatch.y0 >= lanes.y0);
  CHECK(swatch.y1 <= lanes.y1);
  CHECK(swatch.x0 >= lanes.x0);
  CHECK(PatchIs(img, static_cast<int>((swatch.x0 + swatch.x1) / 2),
                static_cast<int>((swatch.y0 + swatch.y1) / 2), kFlightCulprit));
  const Box row = RectOf(Find(geo, "row", culprit));
  CHECK(row.y0 >= lanes.y0 - 1);
  CHECK(row.y1 <= lanes.y1 + 1);
}

// Row label cells never overlap and rows are at least 14 px tall.
void CheckRowsLegible(const nlohmann::json& geo) {
  std::vector<Box> rows;
  for (const auto& item : geo["flight"])
    if (item["kind"] == "row") rows.push_back(RectOf(item));
  REQUIRE(rows.size() > 4);
  for (size_t i = 1; i < rows.size(); ++i) {
    CHECK(rows[i].y1 - rows[i].y0 >= 14);
    CHECK(rows[i].y0 >= rows[i - 1].y1 - 0.5f);
  }
}

}  // namespace

TEST_CASE("flight view at 4096 ranks: go to a rank by keys, back to the culprit by a click",
          "[gui][flight][triage]") {
  fs::path dir = TempDir("flight_navigation");
  const auto [culprit, far] = WriteNotEnqueuedDumps(dir, 4096, 11);
  const std::string dumps = (dir / "dumps").string() + " --size 1400x760";

  // Opening: grouped lanes, the culprit's group expanded and its lane in view.
  const fs::path open = SubDir(dir, "open");
  auto geo = Shoot(open, dumps);
  Image img = LoadPng(open / "shot.png");
  CheckCulpritShown(geo, img, culprit);
  CheckRowsLegible(geo);
  // Its group expanded (the culprit's row is a member row, indented), other groups collapsed and
  // labelled with their 64 ranks.
  CHECK(Find(geo, "row", culprit)["label"] == "  r" + std::to_string(culprit));
  int groups = 0;
  for (const auto& item : geo["flight"]) {
    if (item["kind"] != "row" || item["rank"] != -1) continue;
    ++groups;
    const std::string label = item["label"].get<std::string>();
    const int64_t first = std::stoll(label.substr(3, label.find('-', 3) - 3));
    CHECK(first % 64 == 0);
    const bool holds = culprit >= first && culprit < first + 64;
    CHECK(label == (holds ? "- r" : "+ r") + std::to_string(first) + "-" + std::to_string(first + 63));
  }
  CHECK(groups > 0);
  const Box button = RectOf(Find(geo, "goto_culprit", culprit));

  // G, the far rank's digits: its lane in view and outlined, the culprit's gone.
  const std::string go_far = "type:g,wait,type:" + std::to_string(far) + ",wait,wait,wait";
  const fs::path away = SubDir(dir, "away");
  geo = Shoot(away, dumps + " --keys " + go_far);
  CHECK(Find(geo, "goto")["rank"] == far);
  CHECK(Has(geo, "row", far));
  CHECK_FALSE(Has(geo, "culprit_lane", culprit));
  {
    const Box lanes = RectOf(Find(geo, "lanes"));
    const Box row = RectOf(Find(geo, "row", far));
    CHECK(row.y0 >= lanes.y0 - 1);
    CHECK(row.y1 <= lanes.y1 + 1);
  }

  // A click on the culprit button: back on the culprit's lane.
  const fs::path back = SubDir(dir, "back");
  const std::string click = ",click:" + std::to_string(static_cast<int>((button.x0 + button.x1) / 2)) + ":" +
                            std::to_string(static_cast<int>((button.y0 + button.y1) / 2)) + ",wait,wait,wait";
  geo = Shoot(back, dumps + " --keys " + go_far + click);
  img = LoadPng(back / "shot.png");
  CHECK(Find(geo, "goto")["rank"] == culprit);
  CheckCulpritShown(geo, img, culprit);
  CheckRowsLegible(geo);
}
