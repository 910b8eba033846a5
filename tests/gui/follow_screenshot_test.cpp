// Opening traces while the GUI runs (issue 38, item 6): a path dropped on the window (drop:PATH
// replays what the window system reports) opens and becomes the active trace; --follow DIR keeps
// re-reading a directory that a running job writes, so redistributes written after the GUI opened
// appear, the selection stays, and a timeline that showed the whole trace shows the whole new one.
#include <catch2/catch.hpp>

#include <regex>

#include "diff_test_traces.hpp"
#include "gui_test_support.hpp"
#include "sample_data.hpp"
#include "shardscope/trace/reader.hpp"

using namespace shardscope_gui_test;

namespace {

namespace trace = shardscope::trace;

std::vector<int64_t> ListIds(const nlohmann::json& geo) {
  std::vector<int64_t> ids;
  for (const auto& r : geo["list_rows"])
    if (r["kind"] == "redistribute") ids.push_back(r["id"]);
  return ids;
}

}  // namespace

TEST_CASE("drop: a trace dropped on the window opens and becomes the active trace", "[gui][input][open]") {
  fs::path dir = TempDir("drop");
  fs::path a = dir / "a", b = dir / "b";
  WritePlansTrace(DiffItems(false), a);
  auto items = DiffItems(true);
  items.erase(items.begin());  // b: three redistributes (w, b, y)
  WritePlansTrace(items, b);
  auto geo = Shoot(dir, a.string() + " --keys drop:" + b.string() + ",wait,wait,wait");
  CHECK(geo["traces"] == 2);
  CHECK(geo["trace"] == b.string());
  CHECK(ListIds(geo) == trace::ReadTraceDir(b).RedistributeIds());
  SECTION("a path that is no trace is named, and the open trace stays") {
    auto bad = Shoot(dir, a.string() + " --keys drop:" + (dir / "nothing").string() + ",wait,wait,wait");
    CHECK(bad["traces"] == 1);
    CHECK(bad["trace"] == a.string());
    CHECK(bad["error_panel"].is_array());
  }
}

TEST_CASE("--follow: redistributes a running job writes after the GUI opened appear", "[gui][follow]") {
  fs::path dir = TempDir("follow");
  fs::path job = dir / "job", full = dir / "full";
  auto items = DiffItems(false);
  const auto all = shardscope::app::gui::ModelFromPlans(items, "test");
  items.resize(2);
  WritePlansTrace(items, job);
  WriteTraceDir(*all, full);
  const auto first_ids = trace::ReadTraceDir(job).RedistributeIds();
  const trace::Model whole = trace::ReadTraceDir(full);
  REQUIRE(first_ids.size() == 2);
  REQUIRE(whole.RedistributeIds().size() == 4);
  // The "job": once the GUI has read the directory, each rank file grows to the full run (written
  // aside and renamed, as a rank's appends land whole lines).
  const fs::path log = dir / "log.txt";
  const std::string writer = "(until grep -q 'follow:' '" + log.string() +
                             "' 2>/dev/null; do sleep 0.2; done; sleep 1; for f in '" + full.string() +
                             "'/*; do cp \"$f\" '" + job.string() + "/.part' && mv '" + job.string() +
                             "/.part' '" + job.string() + "'/\"${f##*/}\"; done) & ";
  // The writer runs in the background; the GUI in `dir` too (its imgui.ini lands there).
  const std::string command = writer + "cd '" + dir.string() + "' && " +
                              "xvfb-run -a -s \"-screen 0 1600x1000x24\" " + SHARDSCOPE_GUI_BIN +
                              " --follow " + job.string() + " --quit-after 10 --geometry " +
                              (dir / "geo.json").string();
  auto r = RunShell(command, log);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  // First read: the two redistributes written before; a later read: all four.
  std::vector<long> counts;
  const std::regex line("follow: [^\\n]*: (\\d+) redistributes");
  for (auto it = std::sregex_iterator(r.output.begin(), r.output.end(), line); it != std::sregex_iterator();
       ++it)
    counts.push_back(std::stol((*it)[1]));
  REQUIRE(counts.size() >= 2);
  CHECK(counts.front() == 2);
  CHECK(counts.back() == 4);
  auto geo = ReadJson(dir / "geo.json");
  CHECK(ListIds(geo) == whole.RedistributeIds());
  CHECK(geo["selected_redistribute"] == first_ids.front());  // the selection stayed
  CHECK(geo["traces"] == 1);                                 // re-read in place, not opened again
  // The timeline showed the whole trace, so it shows the whole new one.
  const double view_end = geo["timeline"]["view_end_ns"];
  CHECK(view_end >= geo["timeline"]["trace_ns"].get<double>());
}
