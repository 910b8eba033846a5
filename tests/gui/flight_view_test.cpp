// The flight view's data (app/gui/flight_view_model.hpp) on dumps of tests/trace/make_fr_faults.py:
// above 64 ranks the lanes are the timeline's groups (MeshGroups), the injected size / dtype / kind
// mismatch is badged on the injected culprit's collective and on no other rank, the culprit's
// group counts it, and the tooltip shows the sizes and dtypes the generator wrote (its STEP table:
// the tp _reduce_scatter_base takes [256*tp, 1024] BFloat16, the size fault gives one rank
// [256*tp + 128, 1024]; the tp all_reduce takes [4096] Float, the dtype fault makes it BFloat16,
// the kind fault an _all_gather_base). And BuildRows / RowOfRank, shared with the timeline, sweep
// random groupings: every rank's row is its own when its group is expanded, else its group's.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include <nlohmann/json.hpp>

#include "flight_view_model.hpp"
#include "shardscope/trace/check.hpp"
#include "shardscope/trace/importers.hpp"
#include "shardscope/trace/triage.hpp"

namespace fs = std::filesystem;
using namespace shardscope::app::gui;
namespace trace = shardscope::trace;

namespace {

struct Case {
  std::string scenario, what;
  std::string in, dtype, name;  // the culprit's marked collective, from the generator's definition
};

bool Has(const std::vector<std::string>& lines, const std::string& text) {
  return std::any_of(lines.begin(), lines.end(),
                     [&](const std::string& l) { return l.find(text) != std::string::npos; });
}

}  // namespace

TEST_CASE("flight view: groups, mismatch marks and tooltips at 128 ranks", "[gui][flight]") {
  const Case c =
      GENERATE(Case{"size", "size", "in:  [2176, 1024] BFloat16", "out: [256, 1024] BFloat16",
                    "nccl:_reduce_scatter_base"},
               Case{"dtype", "dtype", "in:  [4096] BFloat16", "out: [4096] BFloat16", "nccl:all_reduce"},
               Case{"kind", "kind", "in:  [4096] Float", "out: [32768] Float", "nccl:_all_gather_base"});
  const fs::path dir =
      fs::temp_directory_path() / ("shardscope_flight_view_" + std::to_string(::getpid())) / c.scenario;
  fs::remove_all(dir);
  const std::string cmd = "python3 " + std::string(SHARDSCOPE_SOURCE_DIR) +
                          "/tests/trace/make_fr_faults.py " + c.scenario + " " + dir.string() +
                          " --ranks 128 --entries 24 --seed 3 --no-wrap >/dev/null";
  REQUIRE(std::system(cmd.c_str()) == 0);
  std::ifstream in(dir / "triage_expected.json");
  const auto want = nlohmann::json::parse(in);
  const int64_t culprit = want["culprits"][0].get<int64_t>();
  const std::string pg = want["process_group"].get<std::string>();
  const int64_t seq = want["seq"].get<int64_t>();

  const trace::Model model = trace::ReadAnyTrace(dir);
  const trace::CheckResult check = trace::CheckTrace(model);
  const trace::TriageResult triage = trace::TriageModel(model);
  const FlightViewData d = BuildFlightView(model, check, triage);
  INFO(c.scenario);
  REQUIRE(d.world == 128);

  // The timeline's grouping, unchanged.
  const trace::Header& h = model.ranks.front().header;
  const std::vector<TimelineGroup> groups = MeshGroups(128, h.mesh_shape, h.mesh_dim_names);
  REQUIRE(d.groups.size() == groups.size());
  for (size_t g = 0; g < groups.size(); ++g) {
    CHECK(d.groups[g].first_rank == groups[g].first_rank);
    CHECK(d.groups[g].size == groups[g].size);
    const bool holds = culprit >= groups[g].first_rank && culprit < groups[g].first_rank + groups[g].size;
    CHECK(d.group_lanes[g].culprits == (holds ? 1 : 0));
    CHECK((d.group_lanes[g].marks > 0) == holds);
  }

  // Exactly one mark of the class, on the culprit's collective `seq` of group `pg`.
  int marks = 0;
  for (const FlightMark& m : d.marks) {
    CHECK(m.rank == culprit);
    if (m.what != c.what) continue;
    ++marks;
    const FlightSpan& s = d.spans[m.span];
    CHECK(s.rank == culprit);
    CHECK(s.pg() == pg);
    CHECK(s.seq == seq);
    CHECK(m.letter == (c.what == "size" ? 'S' : c.what == "dtype" ? 'D' : 'K'));
    const std::vector<std::string> lines = FlightSpanDetails(d, m.span);
    INFO(nlohmann::json(lines).dump(1));
    CHECK(Has(lines, "rank " + std::to_string(culprit) + "  process group " + pg + " (mesh_tp)"));
    CHECK(Has(lines, "seq " + std::to_string(seq)));
    CHECK(Has(lines, c.name + "  state "));
    CHECK(Has(lines, c.in));
    CHECK(Has(lines, c.dtype));
    CHECK(Has(lines, std::string(1, m.letter) + ": " + c.what + " mismatch"));
    CHECK((Has(lines, "never completed") || Has(lines, "completed at ")));
  }
  CHECK(marks == 1);

  // Spans sorted by (rank, start), indexed per rank.
  for (int64_t r = 0; r < d.world; ++r)
    for (size_t i = d.rank_begin[static_cast<size_t>(r)]; i < d.rank_begin[static_cast<size_t>(r) + 1]; ++i) {
      CHECK(d.spans[i].rank == r);
      if (i > d.rank_begin[static_cast<size_t>(r)]) CHECK(d.spans[i - 1].start <= d.spans[i].start);
    }
}

TEST_CASE("BuildRows and RowOfRank over random groupings", "[gui][flight][timeline]") {
  std::mt19937 rng(34);
  for (int iter = 0; iter < 2000; ++iter) {
    const int64_t world = std::uniform_int_distribution<int64_t>(1, 300)(rng);
    std::vector<int64_t> shape;
    if (rng() % 2) {
      const int64_t a = std::uniform_int_distribution<int64_t>(1, 12)(rng);
      if (world % a == 0) shape = {a, world / a};
    }
    const std::vector<TimelineGroup> groups =
        rng() % 4 ? MeshGroups(world, shape, {}) : std::vector<TimelineGroup>{};
    std::vector<bool> expanded(groups.size());
    for (size_t g = 0; g < expanded.size(); ++g) expanded[g] = rng() % 3 == 0;
    std::vector<int64_t> ranks(static_cast<size_t>(world));
    for (size_t r = 0; r < ranks.size(); ++r) ranks[r] = static_cast<int64_t>(r);
    const std::vector<TimelineRow> rows = BuildRows(ranks, groups, expanded);
    const std::vector<int32_t> row_of = RowOfRank(rows, groups, ranks.size());
    size_t want_rows = groups.empty() ? ranks.size() : groups.size();
    for (size_t g = 0; g < groups.size(); ++g)
      if (expanded[g]) want_rows += static_cast<size_t>(groups[g].size);
    REQUIRE(rows.size() == want_rows);
    for (int64_t r = 0; r < world; ++r) {
      REQUIRE(row_of[static_cast<size_t>(r)] >= 0);
      const TimelineRow& row = rows[static_cast<size_t>(row_of[static_cast<size_t>(r)])];
      if (groups.empty()) {
        REQUIRE(row == TimelineRow{-1, r});
        continue;
      }
      // The group holding r: the one whose range contains it.
      size_t g = 0;
      while (!(r >= groups[g].first_rank && r < groups[g].first_rank + groups[g].size)) ++g;
      REQUIRE(row == TimelineRow{static_cast<int32_t>(g), expanded[g] ? r : -1});
    }
  }
}
