// Opening a 4096-rank hang (tests/trace/make_fr_faults.py not_enqueued: one rank stuck in compute,
// the rest of the dp x tp job blocked behind it) lands the flight view on the triage result: the
// injected culprit's lane is scrolled into the window and marked in the culprit colour, the triage
// box names it, and the victims are not marked. The culprit comes from the generator's answer.
#include <catch2/catch.hpp>

#include <fstream>

#include "gui_test_support.hpp"
#include "panels/flight_panel.hpp"

using namespace shardscope_gui_test;
using shardscope::app::gui::kFlightCulprit;

TEST_CASE("flight view at 4096 ranks lands on the triage culprit's lane", "[gui][flight][triage]") {
  fs::path dir = TempDir("flight_triage");
  const int64_t culprit = WriteNotEnqueuedDumps(dir, 4096, 5).culprit;
  auto geo = Shoot(dir, (dir / "dumps").string() + " --size 1400x700");
  Image img = LoadPng(dir / "shot.png");
  int culprit_lanes = 0, triage_boxes = 0;
  for (const auto& item : geo["flight"]) {
    const auto& rect = item["rect"];
    if (item["kind"] == "culprit_lane") {
      ++culprit_lanes;
      CHECK(item["rank"] == culprit);
      const float cy = (rect[1].get<float>() + rect[3].get<float>()) / 2;
      CHECK(cy > 0);
      CHECK(cy < 700);
      CHECK(PatchIs(img, static_cast<int>((rect[0].get<float>() + rect[2].get<float>()) / 2),
                    static_cast<int>(cy), kFlightCulprit));
    } else if (item["kind"] == "triage") {
      ++triage_boxes;
      CHECK(item["rank"] == culprit);
    }
  }
  CHECK(culprit_lanes == 1);
  CHECK(triage_boxes == 1);
}
