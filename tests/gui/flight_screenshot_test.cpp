// Flight Recorder view under Xvfb: `shardscope-gui DUMP_DIR --screenshot` on dumps written by
// tests/trace/make_fr_dumps.py ("missing": 4 ranks, seq 1..5 on default_pg, rank 3 never joins
// seq 5 and ranks 0-2 are stuck in it, "started"). Expected from the scenario's definition: 19
// spans (5 + 5 + 5 + 4), exactly the three seq-5 spans of ranks 0-2 incomplete and filled with the
// incomplete colour, one empty dashed slot in rank 3's lane at seq 5, one mismatch naming rank 3.
#include <catch2/catch.hpp>

#include "gui_test_support.hpp"
#include "panels/flight_panel.hpp"
#include "shardscope/trace/flight_recorder.hpp"
#include "shardscope/trace/reader.hpp"
#include "shardscope/trace/writer.hpp"

using namespace shardscope_gui_test;
using shardscope::app::gui::kFlightIncomplete;
using shardscope::app::gui::kFlightLaneBackground;

TEST_CASE("flight view: lanes per rank, incomplete collectives, the missing rank's slot, mismatches",
          "[gui][flight]") {
  fs::path dir = TempDir("flight_missing");
  RunGenerator("make_fr_dumps.py missing " + (dir / "dumps").string(), dir / "gen.txt");
  auto geo = Shoot(dir, (dir / "dumps").string() + " --size 1400x700");
  Image img = LoadPng(dir / "shot.png");
  int spans = 0, incomplete = 0, slots = 0, mismatches = 0;
  for (const auto& item : geo["flight"]) {
    const auto& rect = item["rect"];
    int cx = static_cast<int>((rect[0].get<float>() + rect[2].get<float>()) / 2);
    int cy = static_cast<int>((rect[1].get<float>() + rect[3].get<float>()) / 2);
    if (item["kind"] == "span") {
      ++spans;
      if (item["incomplete"].get<bool>()) {
        ++incomplete;
        CHECK(item["seq"] == 5);
        CHECK(item["rank"] != 3);
        // Right of the label text, inside the bar.
        CHECK(PatchIs(img, static_cast<int>(rect[2].get<float>()) - 6, cy, kFlightIncomplete));
      } else {
        CHECK_FALSE(Near(img.At(cx, cy), kFlightIncomplete));
      }
    } else if (item["kind"] == "slot") {
      ++slots;
      CHECK(item["rank"] == 3);
      CHECK(item["seq"] == 5);
      // Empty inside (lane background right of its label), dashed outline in the incomplete colour.
      CHECK(PatchIs(img, static_cast<int>(rect[2].get<float>()) - 8, cy, kFlightLaneBackground));
      CHECK(
          Near(img.At(static_cast<int>(rect[0].get<float>()) + 2, static_cast<int>(rect[1].get<float>()) + 1),
               kFlightIncomplete, 40));
    } else if (item["kind"] == "mismatch") {
      ++mismatches;
      CHECK(item["rank"] == 3);
      CHECK(item["seq"] == 5);
    }
  }
  CHECK(spans == 19);
  CHECK(incomplete == 3);
  CHECK(slots == 1);
  CHECK(mismatches == 1);
}

// The same dumps' collectives written into the hand-made clean 2x2 trace of tests/golden/check
// (each rank file: its own events, then the flight records): the view opens on the main panels,
// and --view flight shows the flight records' lanes and the check's one process group finding.
TEST_CASE("flight view: collectives with flight records beside a program's own events", "[gui][flight]") {
  fs::path dir = TempDir("flight_mixed");
  RunGenerator("make_fr_dumps.py missing " + (dir / "dumps").string(), dir / "gen.txt");
  namespace trace = shardscope::trace;
  trace::Model own = trace::ReadTraceDir(fs::path(SHARDSCOPE_SOURCE_DIR) / "tests/golden/check/clean");
  trace::Model fr = trace::ReadFlightRecorder({dir / "dumps"});
  REQUIRE(own.ranks.size() == fr.ranks.size());
  for (size_t i = 0; i < own.ranks.size(); ++i) {
    trace::Writer w(dir / "mixed", own.ranks[i].header);
    for (const trace::Event& e : own.ranks[i].events) w.Emit(e);
    for (const trace::Event& e : fr.ranks[i].events) w.Emit(e);
  }
  auto main_geo = Shoot(dir, (dir / "mixed").string() + " --size 1400x700");
  CHECK(main_geo["flight"].empty());
  auto geo = Shoot(dir, (dir / "mixed").string() + " --view flight --size 1400x700");
  int spans = 0, mismatches = 0;
  for (const auto& item : geo["flight"]) {
    if (item["kind"] == "span") ++spans;
    if (item["kind"] == "mismatch") {
      ++mismatches;
      CHECK(item["rank"] == 3);
      CHECK(item["seq"] == 5);
    }
  }
  CHECK(spans == 19);  // the flight records only, as from the dumps alone
  CHECK(mismatches == 1);
}
