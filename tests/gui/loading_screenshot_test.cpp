// Opening a Flight Recorder dump directory as a user does: the window shows the ranks read so far
// while the dumps load (a cell per rank, coloured by what its dump says; the process groups with
// where their read ranks stand), keys and clicks work during the load (G and a rank number outline
// that rank's cell; a click on a cell goes to it), and when the load ends the flight view lands on
// triage's culprit (the generator's injected one). --dump-delay-ms makes a 256-rank directory load
// as slowly as a big one, so the load is seen midway.
#include <catch2/catch.hpp>

#include <fstream>
#include <regex>

#include "gui_test_support.hpp"
#include "panels/flight_panel.hpp"

using namespace shardscope_gui_test;
using shardscope::app::gui::kFlightCulprit;
using shardscope::app::gui::kFlightIncomplete;
using shardscope::app::gui::kFlightMismatch;

namespace {

// The first flight item of `kind`.
nlohmann::json FindItem(const nlohmann::json& geo, const std::string& kind) {
  for (const auto& item : geo["flight"])
    if (item["kind"] == kind) return item;
  FAIL("no flight item " << kind);
  return {};
}

// Cells of the loading grid in a read rank's colours (read, waiting in a collective, behind) or in
// the culprit's (triage's culprit is marked once known, read or not), from the pixels.
int64_t ReadCells(const Image& img, const nlohmann::json& grid) {
  const auto& rect = grid["rect"];
  const int64_t world = grid["seq"].get<int64_t>(), cols = std::stoll(grid["label"].get<std::string>());
  const float cell = (rect[2].get<float>() - rect[0].get<float>()) / static_cast<float>(cols);
  const Rgb read_colors[] = {{70, 130, 180}, kFlightIncomplete, kFlightMismatch, kFlightCulprit};
  int64_t read = 0;
  for (int64_t r = 0; r < world; ++r) {
    const int x = static_cast<int>(rect[0].get<float>() + (static_cast<float>(r % cols) + 0.4f) * cell);
    const int y = static_cast<int>(rect[1].get<float>() + (static_cast<float>(r / cols) + 0.4f) * cell);
    for (const Rgb& c : read_colors) read += Near(img.At(x, y), c, 2) ? 1 : 0;
  }
  return read;
}

}  // namespace

TEST_CASE("opening dumps: ranks read so far while loading, keys and clicks during the load, then triage",
          "[gui][flight][loading]") {
  fs::path dir = TempDir("loading");
  const auto [culprit, far] = WriteNotEnqueuedDumps(dir, 256, 7);
  const std::string base = (dir / "dumps").string() + " --size 1400x800 --dump-delay-ms 40 --load-times";

  // 1. G and a rank number typed while loading: that rank's cell outlined, the rest of the load
  // goes on, the final view lands on the culprit.
  const fs::path keys = SubDir(dir, "keys");
  auto r = RunGui(base + " --keys loading,type:g,wait,type:" + std::to_string(far) +
                      ",wait,wait,ready --loading-screenshot " + (keys / "loading.png").string() +
                      " --screenshot " + (keys / "shot.png").string() + " --geometry " +
                      (keys / "geo.json").string(),
                  keys / "log.txt");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto loading = ReadJson(keys / "loading.json");
  const auto grid = FindItem(loading, "loading_grid");
  const int64_t read = grid["rank"].get<int64_t>();
  CHECK(grid["seq"] == 256);  // the world: a cell per rank
  CHECK(read > 0);
  CHECK(read < 256);  // midway
  // The picture shows as many read cells as the frame had read ranks.
  const Image shot = LoadPng(keys / "loading.png");
  bool verdict = false;  // triage streams beside the read: its culprit may be marked before it is read
  for (const auto& item : loading["flight"]) verdict = verdict || item["kind"] == "triage";
  const int64_t cells = ReadCells(shot, grid);
  CHECK((cells == read || (verdict && cells == read + 1)));
  CHECK(FindItem(loading, "loading_goto")["rank"] == far);
  CHECK(loading["flight"].size() > 3);  // process groups listed beside the grid
  // The first frame with loaded data came before the end, and says how far the load was.
  std::smatch m;
  const std::regex times(
      R"(first frame with loaded data ([0-9.]+) s \(ranks ([0-9]+)/256\), verdict ([0-9.]+) s, everything loaded ([0-9.]+) s)");
  REQUIRE(std::regex_search(r.output, m, times));
  CHECK(std::stod(m[1]) < std::stod(m[4]));
  CHECK(std::stoll(m[2]) < 256);
  // The full view: triage's culprit, its lane marked.
  const auto geo = ReadJson(keys / "geo.json");
  CHECK(FindItem(geo, "triage")["rank"] == culprit);
  CHECK(FindItem(geo, "culprit_lane")["rank"] == culprit);

  // 2. A click on a cell during the load goes to that rank (the grid stays where it was drawn).
  const auto& rect = grid["rect"];
  const int64_t cols = std::stoll(grid["label"].get<std::string>());
  const float cell = (rect[2].get<float>() - rect[0].get<float>()) / static_cast<float>(cols);
  const int64_t target = 37;
  const int cx = static_cast<int>(rect[0].get<float>() + (static_cast<float>(target % cols) + 0.5f) * cell);
  const int cy = static_cast<int>(rect[1].get<float>() + (static_cast<float>(target / cols) + 0.5f) * cell);
  const fs::path click = SubDir(dir, "click");
  r = RunGui(base + " --keys loading,click:" + std::to_string(cx) + ":" + std::to_string(cy) +
                 ",wait,wait,ready --loading-screenshot " + (click / "loading.png").string() +
                 " --geometry " + (click / "geo.json").string(),
             click / "log.txt");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(FindItem(ReadJson(click / "loading.json"), "loading_goto")["rank"] == target);
}

TEST_CASE("a loading screenshot of a trace that never shows a partial load is refused", "[gui][loading]") {
  fs::path dir = TempDir("loading_none");
  auto r = RunGui(std::string(SHARDSCOPE_SOURCE_DIR) + "/tests/golden/check/clean --loading-screenshot " +
                      (dir / "l.png").string() + " --screenshot " + (dir / "s.png").string(),
                  dir / "log.txt");
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("--loading-screenshot") != std::string::npos);
}
