// The GUI diff view's model (diff_view_model.hpp), without a display: its rows follow
// trace::DiffTraces' alignment, exactly the rows with reported differences are highlighted, its
// lines are the CLI's, and differing steps are the ones that differ by definition.
#include <catch2/catch.hpp>

#include <set>
#include <sstream>
#include <tuple>

#include "diff_test_traces.hpp"
#include "diff_view_model.hpp"

namespace gui = shardscope::app::gui;
namespace trace = shardscope::trace;
using shardscope_gui_test::DiffItems;
using shardscope_gui_test::DiffSpec;

namespace {

using Ids = std::pair<std::optional<int64_t>, std::optional<int64_t>>;

// (baseline id, candidate id) of every row that shows a difference.
std::set<Ids> HighlightedRows(const gui::DiffView& view) {
  std::set<Ids> out;
  for (const gui::DiffRow& r : view.rows)
    if (r.differs()) out.insert({r.baseline_id, r.candidate_id});
  return out;
}

// (baseline id, candidate id) of every difference trace::DiffTraces reports about a redistribute.
std::set<Ids> ReportedRows(const trace::DiffResult& result) {
  std::set<Ids> out;
  for (const trace::Difference& d : result.differences)
    if (d.baseline_id || d.candidate_id) out.insert({d.baseline_id, d.candidate_id});
  return out;
}

std::vector<std::tuple<gui::DiffRowKind, std::optional<int64_t>, std::optional<int64_t>>> Shape(
    const gui::DiffView& view) {
  std::vector<std::tuple<gui::DiffRowKind, std::optional<int64_t>, std::optional<int64_t>>> out;
  for (const gui::DiffRow& r : view.rows) out.emplace_back(r.kind, r.baseline_id, r.candidate_id);
  return out;
}

}  // namespace

TEST_CASE("diff view rows: aligned pairs, a changed plan, a removed and an added redistribute",
          "[gui][diff]") {
  auto baseline = gui::ModelFromPlans(DiffItems(false), "baseline");
  auto candidate = gui::ModelFromPlans(DiffItems(true), "candidate");
  // Precondition from the engine: the optimizer merges w's gathers (one step), without it two.
  REQUIRE(baseline->redistributes.size() == 16);
  REQUIRE(gui::FirstRecord(*baseline, 1)->begin->optimized_plan().size() == 1);
  REQUIRE(gui::FirstRecord(*candidate, 1)->begin->optimized_plan().size() == 2);

  gui::DiffView view = gui::BuildDiffView(*baseline, *candidate);
  CHECK(view.error.empty());
  using K = gui::DiffRowKind;
  using Row = std::tuple<K, std::optional<int64_t>, std::optional<int64_t>>;
  CHECK(Shape(view) == std::vector<Row>{{K::kSame, 0, 0},
                                        {K::kChanged, 1, 1},
                                        {K::kSame, 2, 2},
                                        {K::kRemoved, 3, std::nullopt},
                                        {K::kAdded, std::nullopt, 3}});
  // The highlighted rows are exactly the ones trace::DiffTraces reports differences about.
  CHECK(HighlightedRows(view) == ReportedRows(trace::DiffTraces(*baseline, *candidate, {})));
  CHECK(view.result.aligned == 3);
  CHECK(view.rows[1].baseline_text == "#1  w  S(0),S(0) -> R,R  1 step");
  CHECK(view.rows[1].candidate_text == "#1  w  S(0),S(0) -> R,R  2 steps");

  // Every line is one the CLI prints, in the same order, and the summary is the CLI's last line.
  std::string cli = trace::FormatDiffText(view.result);
  std::istringstream in(cli);
  std::vector<std::string> cli_lines;
  for (std::string line; std::getline(in, line);) cli_lines.push_back(line);
  REQUIRE(cli_lines.size() == view.lines.size() + 1);
  for (size_t i = 0; i < view.lines.size(); ++i) CHECK(view.lines[i] == cli_lines[i]);
  CHECK(view.summary == cli_lines.back());
  bool notation = false;
  for (size_t d : view.rows[1].differences)
    notation =
        notation || view.lines[d].find("#1 w [8, 8] S(0),S(0) -> R,R: notation: ") != std::string::npos;
  CHECK(notation);
  REQUIRE(view.rows[3].differences.size() == 1);
  CHECK(view.lines[view.rows[3].differences[0]].find("-#3 x [4, 4] S(0),R -> R,R: removed") !=
        std::string::npos);
  REQUIRE(view.rows[4].differences.size() == 1);
  CHECK(view.lines[view.rows[4].differences[0]].find("+#3 y [4, 4] R,R -> R,S(1): added") !=
        std::string::npos);
  CHECK(view.rows[0].differences.empty());
  CHECK(view.rows[2].differences.empty());

  // Identical traces: every row the same, nothing highlighted.
  gui::DiffView same = gui::BuildDiffView(*baseline, *baseline);
  CHECK(same.rows.size() == 4);
  CHECK(HighlightedRows(same).empty());
  CHECK(same.summary.rfind("no differences;", 0) == 0);
}

TEST_CASE("diff view rows: a redistribute inserted in the middle leaves one gap", "[gui][diff]") {
  auto items = DiffItems(false);
  items.pop_back();  // a, w, b
  auto baseline = gui::ModelFromPlans(items, "baseline");
  items.insert(items.begin() + 1, {"z", DiffSpec({4, 4}, "S(1),R"), DiffSpec({4, 4}, "R,R"), {}});
  auto candidate = gui::ModelFromPlans(items, "candidate");  // a, z, w, b: ids shift by one after z
  gui::DiffView view = gui::BuildDiffView(*baseline, *candidate);
  using K = gui::DiffRowKind;
  using Row = std::tuple<K, std::optional<int64_t>, std::optional<int64_t>>;
  CHECK(Shape(view) ==
        std::vector<Row>{{K::kSame, 0, 0}, {K::kAdded, std::nullopt, 1}, {K::kSame, 1, 2}, {K::kSame, 2, 3}});
  CHECK(HighlightedRows(view) == ReportedRows(view.result));
}

TEST_CASE("diff view steps: missing, different and named steps differ, equal ones do not", "[gui][diff]") {
  auto baseline = gui::ModelFromPlans(DiffItems(false), "baseline");
  auto candidate = gui::ModelFromPlans(DiffItems(true), "candidate");
  gui::DiffView view = gui::BuildDiffView(*baseline, *candidate);
  REQUIRE(view.rows.size() == 5);
  auto steps_of = [&](size_t row) {
    const gui::DiffRow& r = view.rows[row];
    const trace::RedistributeBegin* b =
        r.baseline_id ? &*gui::FirstRecord(*baseline, *r.baseline_id)->begin : nullptr;
    const trace::RedistributeBegin* c =
        r.candidate_id ? &*gui::FirstRecord(*candidate, *r.candidate_id)->begin : nullptr;
    return gui::DiffSteps(view, r, b, c);
  };
  // w: one flattened all_gather against two all_gathers: step 0 differs, step 1 exists on one side.
  auto w = steps_of(1);
  REQUIRE(w.size() == 2);
  CHECK((w[0].differs && w[0].in_baseline && w[0].in_candidate));
  CHECK((w[1].differs && !w[1].in_baseline && w[1].in_candidate));
  // a: identical plans, no step differs.
  auto a = steps_of(0);
  REQUIRE_FALSE(a.empty());
  for (const auto& s : a) CHECK_FALSE(s.differs);
  // The removed x: every step exists on the baseline side only.
  for (const auto& s : steps_of(3)) CHECK((s.differs && s.in_baseline && !s.in_candidate));

  // Same transforms, but a difference names step 1 (shard after it) and one names a raw-plan step:
  // only step 1 differs.
  const trace::RedistributeBegin& two = gui::FirstRecord(*candidate, 1)->begin;
  gui::DiffView named;
  named.result.differences.push_back(
      {trace::DiffCategory::kShapes, false, 1, 1, "w", "rank 2 shard after step 1", "x", "y"});
  named.result.differences.push_back(
      {trace::DiffCategory::kPlan, false, 1, 1, "w", "raw plan step 0", "x", "y"});
  gui::DiffRow row;
  row.kind = gui::DiffRowKind::kChanged;
  row.differences = {0, 1};
  auto steps = gui::DiffSteps(named, row, &two, &two);
  REQUIRE(steps.size() == 2);
  CHECK_FALSE(steps[0].differs);
  CHECK(steps[1].differs);
}
