// GUI diff mode under Xvfb: `shardscope-gui --diff BASELINE CANDIDATE --screenshot` on two traces
// that differ in a known way (diff_test_traces.hpp). The rows that show the diff colour are exactly
// the rows trace::DiffTraces reports differences about; identical rows carry no diff colour; the
// selected pair's differing steps are marked; each side's layout shows the engine's layout; a bad
// candidate shows the error panel naming the side and file:line.
#include <catch2/catch.hpp>

#include <set>

#include "diff_test_traces.hpp"
#include "gui_test_support.hpp"
#include "shardscope/trace/diff.hpp"
#include "shardscope/trace/reader.hpp"

using namespace shardscope_gui_test;
using shardscope::app::gui::kDiffColor;
using shardscope::app::gui::kErrorPanelColor;

namespace {

using Ids = std::pair<std::optional<int64_t>, std::optional<int64_t>>;

std::optional<int64_t> OptId(const nlohmann::json& j) {
  return j.is_null() ? std::nullopt : std::optional<int64_t>(j.get<int64_t>());
}

// Pixels of `want` colour inside rectangle [x0,x1) x [y0,y1).
int CountColour(const Image& img, float x0, float y0, float x1, float y1, Rgb want) {
  int n = 0;
  for (int y = std::max(0, static_cast<int>(y0)); y < std::min(img.h, static_cast<int>(y1)); ++y)
    for (int x = std::max(0, static_cast<int>(x0)); x < std::min(img.w, static_cast<int>(x1)); ++x)
      n += Near(img.At(x, y), want) ? 1 : 0;
  return n;
}

}  // namespace

TEST_CASE("diff view: exactly the rows trace::DiffTraces reports are highlighted", "[gui][diff]") {
  fs::path dir = TempDir("diff");
  DiffDirs traces = WriteDiffTraces(dir);
  auto geo = Shoot(
      dir, "--diff " + traces.baseline.string() + " " + traces.candidate.string() + " --size 1600x1000");
  Image img = LoadPng(dir / "shot.png");
  REQUIRE(geo["view"] == "diff");
  REQUIRE(geo["diff"].is_object());
  CHECK(geo["diff"]["error"] == "");

  // What must be highlighted, from the trace library's diff of the files the GUI read.
  namespace trace = shardscope::trace;
  trace::DiffResult expected =
      trace::DiffTraces(trace::ReadTraceDir(traces.baseline), trace::ReadTraceDir(traces.candidate), {});
  std::set<Ids> reported;
  for (const trace::Difference& d : expected.differences)
    if (d.baseline_id || d.candidate_id) reported.insert({d.baseline_id, d.candidate_id});
  // ... and from the definition of the two traces: w changed, x removed, y added.
  CHECK(reported == std::set<Ids>{{1, 1}, {3, std::nullopt}, {std::nullopt, 3}});

  const auto& rows = geo["diff"]["rows"];
  REQUIRE(rows.size() == 5);  // 3 aligned pairs, one removed, one added
  std::set<Ids> highlighted;
  int same_rows = 0;
  for (const auto& row : rows) {
    Ids ids{OptId(row["baseline_id"]), OptId(row["candidate_id"])};
    float x0 = row["rect"][0], y0 = row["rect"][1], x1 = row["rect"][2], y1 = row["rect"][3];
    INFO("row " << row["row"] << " kind " << row["kind"] << " rect " << x0 << "," << y0 << " " << x1 << ","
                << y1);
    REQUIRE(x1 - x0 > 400);
    REQUIRE(y1 - y0 >= 12);
    int diff_pixels = CountColour(img, x0, y0, x1, y1, kDiffColor);
    if (row["kind"] == "same") {
      ++same_rows;
      CHECK(diff_pixels == 0);
      continue;
    }
    // The stripe at the row's left edge has the diff colour; the marker text does not need it.
    float mx0 = row["marker"][0], my0 = row["marker"][1], mx1 = row["marker"][2], my1 = row["marker"][3];
    CHECK(mx0 >= x0);
    CHECK(my0 == y0);
    CHECK(PatchIs(img, static_cast<int>((mx0 + mx1) / 2), static_cast<int>((my0 + my1) / 2), kDiffColor));
    CHECK(diff_pixels >= static_cast<int>((mx1 - mx0 - 2) * (my1 - my0 - 2)));
    highlighted.insert(ids);
  }
  CHECK(same_rows == 2);
  CHECK(highlighted == reported);

  // The first differing row (w) is selected: one flattened all_gather against two all_gathers, so
  // both of its step rows differ on both sides.
  CHECK(geo["diff"]["selected_row"] == 1);
  const auto& steps = geo["diff"]["steps"];
  REQUIRE(steps.size() == 4);
  for (const auto& s : steps) {
    INFO(s["side"] << " step " << s["row"]);
    CHECK(s["kind"] == "changed");
    float mx0 = s["marker"][0], my0 = s["marker"][1], mx1 = s["marker"][2], my1 = s["marker"][3];
    CHECK(PatchIs(img, static_cast<int>((mx0 + mx1) / 2), static_cast<int>((my0 + my1) / 2), kDiffColor));
  }

  // Each side's layout panel shows the selected step: w [8,8] S(0),S(0) before step 0 on both sides.
  REQUIRE(geo["canvases"].size() == 4);
  engine::TensorSpec src = DiffSpec({8, 8}, "S(0),S(0)");
  engine::Plan plan = engine::MakePlan(src, DiffSpec({8, 8}, "R,R"), 0, {});
  auto [before, after] = StepLayouts(src, plan, 0);
  std::set<std::string> sides;
  for (const auto& canvas : geo["canvases"]) {
    sides.insert(canvas["side"].get<std::string>());
    CHECK(canvas["redistribute_id"] == 1);
    CHECK(canvas["step"] == 0);
    if (canvas["which"] == "before") CheckCanvas(img, canvas, before, 4, 4);
  }
  CHECK(sides == std::set<std::string>{"baseline", "candidate"});
}

TEST_CASE("diff view: --select picks a row by baseline id and identical rows stay unmarked", "[gui][diff]") {
  fs::path dir = TempDir("diff_select");
  DiffDirs traces = WriteDiffTraces(dir);
  auto geo =
      Shoot(dir, "--diff " + traces.baseline.string() + " " + traces.candidate.string() + " --select 2");
  CHECK(geo["diff"]["selected_row"] == 2);
  Image img = LoadPng(dir / "shot.png");
  // b's plans are identical: no step row is marked and no step row has the diff colour.
  REQUIRE(geo["diff"]["steps"].size() >= 2);
  for (const auto& s : geo["diff"]["steps"]) {
    CHECK(s["kind"] == "same");
    float x0 = s["rect"][0], y0 = s["rect"][1], x1 = s["rect"][2], y1 = s["rect"][3];
    CHECK(CountColour(img, x0, y0, x1, y1, kDiffColor) == 0);
  }
}

TEST_CASE("diff view: a bad candidate shows the error panel naming the side and file:line",
          "[gui][diff][errors]") {
  fs::path dir = TempDir("diff_corrupt");
  DiffDirs traces = WriteDiffTraces(dir);
  auto r = RunGui("--diff " + traces.baseline.string() + " " + Golden("corrupt/malformed_middle.jsonl") +
                      " --screenshot " + (dir / "shot.png").string() + " --geometry " +
                      (dir / "geo.json").string(),
                  dir / "log.txt");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);  // as for one corrupt trace: the screenshot shows the error
  CHECK(r.output.find("candidate: ") != std::string::npos);
  CHECK(r.output.find("malformed_middle.jsonl:") != std::string::npos);
  CHECK(r.output.find("baseline: ") == std::string::npos);
  auto geo = ReadJson(dir / "geo.json");
  REQUIRE(geo["error_panel"].is_array());
  int x0 = geo["error_panel"][0].get<float>(), y0 = geo["error_panel"][1].get<float>();
  int x1 = geo["error_panel"][2].get<float>(), y1 = geo["error_panel"][3].get<float>();
  REQUIRE(x1 - x0 > 100);
  REQUIRE(y1 - y0 > 20);
  Image img = LoadPng(dir / "shot.png");
  CHECK(CountColour(img, x0 + 2, y0 + 2, x1 - 2, y1 - 2, kErrorPanelColor) > (x1 - x0) * (y1 - y0) / 2);
  CHECK(geo["diff"]["rows"].empty());  // no diff without a candidate

  // A directory that does not exist: the same panel, naming the side and the path.
  auto missing =
      RunGui("--diff " + traces.baseline.string() + " " + (dir / "nowhere").string() + " --screenshot " +
                 (dir / "shot2.png").string() + " --geometry " + (dir / "geo2.json").string(),
             dir / "log2.txt");
  INFO(missing.output);
  REQUIRE(missing.exit_code == 0);
  CHECK(missing.output.find("candidate: " + (dir / "nowhere").string()) != std::string::npos);
  CHECK(ReadJson(dir / "geo2.json")["error_panel"].is_array());
}

TEST_CASE("diff mode usage errors exit 2", "[gui][diff]") {
  fs::path dir = TempDir("diff_usage");
  auto one = RunGui("--diff " + Golden("two_rank") + " --screenshot " + (dir / "shot.png").string(),
                    dir / "log.txt");
  CHECK(one.exit_code == 2);
  CHECK(one.output.find("--diff needs two traces") != std::string::npos);
  auto view = RunGui("--diff " + Golden("two_rank") + " " + Golden("two_rank") +
                         " --view layout --screenshot " + (dir / "shot.png").string(),
                     dir / "log.txt");
  CHECK(view.exit_code == 2);
  CHECK_FALSE(fs::exists(dir / "shot.png"));
}

TEST_CASE("an unknown --view exits 2 naming every view --help lists", "[gui]") {
  fs::path dir = TempDir("view_usage");
  auto bad = RunGui("--view nosuch " + Golden("two_rank"), dir / "log.txt");
  CHECK(bad.exit_code == 2);
  CHECK(bad.output.find("--view: 'nosuch' is not one of") != std::string::npos);
  auto help = RunGui("--help", dir / "help.txt");
  // The same twelve views as the usage line "[--view main|timeline|...|stats]".
  for (const char* view : {"main", "timeline", "inspector", "layout", "mesh", "merge", "program", "gallery",
                           "sandbox", "diff", "flight", "stats"}) {
    INFO(view);
    CHECK(bad.output.find(std::string(view)) != std::string::npos);
    CHECK(help.output.find(std::string(view)) != std::string::npos);
  }
}
