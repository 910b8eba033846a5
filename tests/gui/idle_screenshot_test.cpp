// Idle costs nothing (issue 38, item 1): an interactive run (--quit-after) draws frames only while
// events arrive, for a few settle frames after each, or while something animates. Definition: with
// no input for the whole run, the frames drawn once the trace is loaded are at most the settle
// frames after loading and after the window system's start-up events (map, focus, enter, size),
// far from the ~60 frames a second of a loop that redraws continuously.
#include <catch2/catch.hpp>

#include <regex>

#include "diff_test_traces.hpp"
#include "gui_test_support.hpp"
#include "shardscope/trace/reader.hpp"

using namespace shardscope_gui_test;

namespace {

// "frames drawn N, M with the traces loaded" -> {N, M}.
std::pair<long, long> FramesDrawn(const std::string& output) {
  std::smatch m;
  REQUIRE(std::regex_search(output, m, std::regex("frames drawn (\\d+), (\\d+) with the traces loaded")));
  return {std::stol(m[1]), std::stol(m[2])};
}

}  // namespace

TEST_CASE("idle: an interactive run without input draws a handful of frames, not one per refresh",
          "[gui][idle]") {
  fs::path dir = TempDir("idle");
  fs::path t = dir / "trace";
  WritePlansTrace(DiffItems(false), t);
  const double seconds = 3;
  auto r =
      RunGui(t.string() + " --quit-after 3 --geometry " + (dir / "geo.json").string(), dir / "log.txt", dir);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto [total, ready] = FramesDrawn(r.output);
  // Settle frames after loading and after each start-up event: a few dozen at most, against the
  // 180 a 60 Hz loop draws in 3 s (and thousands without vsync).
  CHECK(ready <= 24);
  CHECK(ready < static_cast<long>(seconds * 60) / 4);
  CHECK(total >= ready);
  // The run was a real one: the trace loaded and the geometry written at exit shows it.
  auto geo = ReadJson(dir / "geo.json");
  CHECK(geo["selected_redistribute"] == 0);
}

TEST_CASE("idle: input still draws frames and takes effect; the loop goes idle again after",
          "[gui][idle][input]") {
  fs::path dir = TempDir("idle_keys");
  fs::path t = dir / "trace";
  WritePlansTrace(DiffItems(false), t);
  const auto ids = shardscope::trace::ReadTraceDir(t).RedistributeIds();
  REQUIRE(ids.size() >= 3);
  auto r = RunGui(t.string() + " --quit-after 3 --keys Down,Down --geometry " + (dir / "geo.json").string(),
                  dir / "log.txt", dir);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  // Two key steps (one frame each) and their settle frames on top of the idle run's.
  CHECK(FramesDrawn(r.output).second <= 24 + 2 * 5);
  auto geo = ReadJson(dir / "geo.json");
  CHECK(geo["selected_redistribute"] == ids[2]);
}
