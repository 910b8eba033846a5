// Load diagnostics in the GUI: many of them (a wrapped ring buffer on each of 16 ranks' Flight
// Recorder dumps, tests/trace/make_fr_faults.py) are folded under one header with the first one
// shown, so the views stay where a user looks; a click on the header lists them all. Expected from
// the definition: folded, the lanes start below two text lines of diagnostics; opened, 15 more
// bullet lines (at least a font height each) push them down.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include "gui_test_support.hpp"

using namespace shardscope_gui_test;

namespace {

// Top of the highest flight span (the first lane), from the geometry.
float LanesTop(const nlohmann::json& geo) {
  float top = 1e9f;
  for (const auto& item : geo["flight"])
    if (item["kind"] == "span") top = std::min(top, item["rect"][1].get<float>());
  return top;
}

// 16 ranks' dumps of a dp x tp job in which rank 1 never started seq 36 of its tensor-parallel
// group (make_fr_faults.py not_started, 40 entries a rank: every ring buffer wrapped), in DIR/dumps.
void WriteNotStartedDumps(const fs::path& dir) {
  RunGenerator("make_fr_faults.py not_started " + (dir / "dumps").string() + " --ranks 16 --entries 40",
               dir / "gen.txt");
}

}  // namespace

TEST_CASE("diagnostics: many are folded to one line; a click on the header lists them all",
          "[gui][diagnostics]") {
  fs::path dir = TempDir("diagnostics_fold");
  WriteNotStartedDumps(dir);
  const std::string args = (dir / "dumps").string() + " --size 1600x1000";
  fs::create_directories(dir / "folded");
  fs::create_directories(dir / "open");
  const float folded = LanesTop(Shoot(dir / "folded", args));
  // The header is the first line under the menu bar (menu about 19 px, window padding 8 px).
  const float opened = LanesTop(Shoot(dir / "open", args + " --keys click:100:32,wait"));
  REQUIRE(folded < 1e9f);
  REQUIRE(opened < 1e9f);
  const float font = 13.0f;  // ImGui's default font height
  // Folded: menu bar, header and one bullet line, then the flight panel's title and controls.
  CHECK(folded < 19 + 8 * (font + 4) + 60);
  // Opened: the other 15 diagnostics are listed above the lanes.
  CHECK(opened - folded >= 15 * font);
}

// The same dumps' flight view: rank 1 never started seq 36 of its tensor-parallel group, every
// other rank waits behind it (make_fr_faults.py not_started). Several incomplete collectives per
// rank run to the axis end on top of each other: their "seq N" labels must not overprint, and the
// mismatch list starts with the one naming triage's culprit.
TEST_CASE("flight view: stacked incomplete spans keep their labels apart; triage's culprit first",
          "[gui][flight]") {
  fs::path dir = TempDir("flight_labels");
  WriteNotStartedDumps(dir);
  auto geo = Shoot(dir, (dir / "dumps").string() + " --size 1600x1000");
  std::map<int, std::vector<std::pair<float, float>>> labels;  // rank -> [x0, x1) of its labels
  int first_mismatch_rank = -2;
  for (const auto& item : geo["flight"]) {
    if (item["kind"] == "label")
      labels[item["rank"].get<int>()].push_back({item["rect"][0].get<float>(), item["rect"][2].get<float>()});
    if (item["kind"] == "mismatch" && first_mismatch_rank == -2)
      first_mismatch_rank = item["rank"].get<int>();
  }
  REQUIRE(labels.size() == 16);
  for (auto& [rank, spans] : labels) {
    std::sort(spans.begin(), spans.end());
    for (size_t i = 1; i < spans.size(); ++i) {
      INFO("rank " << rank << " label " << i);
      CHECK(spans[i].first >= spans[i - 1].second);
    }
  }
  CHECK(first_mismatch_rank == 1);
}
