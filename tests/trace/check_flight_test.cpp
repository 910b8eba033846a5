// Collectives that carry a flight record are ordinary collectives: check, show and diff apply
// Flight Recorder's rules wherever such collectives are, also in a trace that mixes them with
// shardscope's own. Dumps are written here as JSON (docs/pytorch-artifacts.md section 2); the
// ordinary half is the hand-made 2x2 trace of tests/golden/check (its counts derived in
// check_test.cpp). Expectations follow from Flight Recorder's rules (docs/flight-recorder.md).
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

#include "../common/check_figures.hpp"
#include "../common/fr_json.hpp"
#include "shardscope/trace/check.hpp"
#include "shardscope/trace/diff.hpp"
#include "shardscope/trace/flight_recorder.hpp"
#include "shardscope/trace/reader.hpp"
#include "shardscope/trace/summary.hpp"
#include "shardscope/trace/writer.hpp"

namespace fs = std::filesystem;
using namespace shardscope;
using nlohmann::json;

namespace {

const fs::path kCases = fs::path(SHARDSCOPE_SOURCE_DIR) / "tests" / "golden" / "check";

struct TempDir : testing::ScopedTempDir {
  explicit TempDir(const std::string& name) : ScopedTempDir("frmix_" + name) {}
};

void WriteDump(const fs::path& p, json entries, const std::string& ranks) {
  json d = {{"version", "2.4"},
            {"comm_lib_version", "2.21.5"},
            {"pg_config", {{"0", {{"name", "0"}, {"desc", "default_pg"}, {"ranks", ranks}}}}},
            {"pg_status", json::object()},
            {"entries", entries}};
  std::ofstream(p) << d.dump();
}

// Four dumps of process group 0 = [0, 1, 2, 3]: seq 1 an all_gather of [2, 4] into [8, 4]
// (numel 8 -> 32 = 8 x 4), seq 2 an all_reduce of [8]. Rank 3's buffer (from record 0, so not
// wrapped) ends after seq 1 when `rank3_stops`.
void WriteFourDumps(const fs::path& dir, bool rank3_stops) {
  for (int r = 0; r < 4; ++r) {
    json entries = {testing::FrEntry(0, 1, "nccl:_allgather_base", {{2, 4}}, {{8, 4}})};
    if (!(rank3_stops && r == 3)) entries.push_back(testing::FrEntry(1, 2, "nccl:all_reduce", {{8}}, {{8}}));
    WriteDump(dir / ("d" + std::to_string(r)), entries, "[0, 1, 2, 3]");
  }
}

// One trace: each rank's ordinary events from the golden `ordinary` case, then the collectives of
// the Flight Recorder dumps in `dumps`, under the ordinary header.
trace::Model Mixed(const std::string& ordinary, const fs::path& dumps, const fs::path& out) {
  trace::Model a = trace::ReadTraceDir(kCases / ordinary);
  trace::Model b = trace::ReadFlightRecorder({dumps});
  REQUIRE(a.ranks.size() == b.ranks.size());
  for (size_t i = 0; i < a.ranks.size(); ++i) {
    REQUIRE(a.ranks[i].header.rank == b.ranks[i].header.rank);
    trace::Writer w(out, a.ranks[i].header);
    for (const trace::Event& e : a.ranks[i].events) w.Emit(e);
    for (const trace::Event& e : b.ranks[i].events) w.Emit(e);
  }
  return trace::ReadTraceDir(out);
}

bool Contains(const std::string& text, const std::string& needle) {
  return text.find(needle) != std::string::npos;
}

}  // namespace

TEST_CASE("flight records: a clean mixed trace is checked by both rule sets", "[trace][fr][mixed]") {
  TempDir dumps("clean_dumps"), out("clean_out");
  WriteFourDumps(dumps.path, false);
  trace::Model m = Mixed("clean", dumps.path, out.path);
  REQUIRE(trace::HasFlightRecords(m));
  // Mixed: a rank of a shardscope run beside the imported dumps.
  CHECK(std::any_of(m.ranks.begin(), m.ranks.end(),
                    [](const trace::RankTrace& r) { return r.header.backend != "flight_recorder"; }));
  trace::CheckResult r = trace::CheckTrace(m);
  // The 2x2 trace's 3 groups and 9 paired calls (check_test.cpp), plus process group 0 and its two
  // collectives: the flight records do not enter the ordinary pairing of group {0, 1, 2, 3}.
  testing::CheckClean(r, {.ranks = 4, .world = 4, .groups = 4, .collectives = 11, .redistributes = 5});
}

TEST_CASE("flight records: in a mixed trace each mismatch is found by the rules of its fields",
          "[trace][fr][mixed]") {
  TempDir dumps("stop_dumps"), out("stop_out");
  WriteFourDumps(dumps.path, true);
  // The golden "dtype" case: rank 3 moves bf16 in redistribute #0's all_gather.
  trace::Model m = Mixed("dtype", dumps.path, out.path);
  trace::CheckResult r = trace::CheckTrace(m);
  REQUIRE(r.mismatches.size() == 2);
  // Run-level and process group findings come before redistributes.
  const trace::Mismatch& fr = r.mismatches[0];
  CHECK(fr.kind == trace::MismatchClass::kMissingRanks);
  CHECK(fr.culprits == std::vector<int64_t>{3});
  CHECK(fr.process_group == "0");
  CHECK(fr.seq_id == 2);
  CHECK_FALSE(fr.redistribute_id);
  CHECK(Contains(fr.message,
                 "collective seq 2 (nccl:all_reduce): not all ranks joined: rank 3 never joined it; "
                 "ranks 0, 1, 2 did"));
  CHECK(Contains(fr.message, "rank 3's last collective of this group is seq 1"));
  const trace::Mismatch& own = r.mismatches[1];
  CHECK(own.kind == trace::MismatchClass::kDtype);
  CHECK(own.culprits == std::vector<int64_t>{3});
  CHECK(own.redistribute_id == 0);
  CHECK(own.process_group.empty());
  CHECK(Contains(own.message, "rank 3 has 'bf16'; rank 1 has 'f32'"));
  const std::string text = trace::FormatCheckText(r, 20);
  CHECK(Contains(text, "first divergence: process group 0 seq 2, culprit rank 3"));
  CHECK(Contains(text, "2 mismatches: 4 of 4 rank files, 4 groups"));
}

TEST_CASE("flight records: show prints the process group section wherever they are", "[trace][fr][mixed]") {
  TempDir dumps("show_dumps"), out("show_out");
  WriteFourDumps(dumps.path, true);
  trace::Model mixed = Mixed("clean", dumps.path, out.path);
  const std::string text = trace::FormatShowText(mixed);
  CHECK(Contains(text, "process group 0 (default_pg) ranks [0, 1, 2, 3]: 2 collective(s), 0 p2p entries"));
  CHECK(Contains(text, "absent: 3"));
  CHECK(trace::ShowJson(mixed).contains("flight"));
  trace::Model ordinary = trace::ReadTraceDir(kCases / "clean");
  CHECK_FALSE(trace::HasFlightRecords(ordinary));
  CHECK_FALSE(Contains(trace::FormatShowText(ordinary), "process group"));
  CHECK_FALSE(trace::ShowJson(ordinary).contains("flight"));
}

TEST_CASE("flight records: diff of two Flight Recorder imports compares per process group and seq",
          "[trace][fr][diff]") {
  TempDir a("diff_a"), b("diff_b");
  // Baseline: 2 ranks, seq 1 all_gather [2, 4] -> [4, 4], seq 2 all_reduce [8], both completed.
  // Candidate: rank 1 is still in seq 2 ("started") and both ranks ran a seq 3 all_reduce.
  for (int r = 0; r < 2; ++r) {
    WriteDump(a.path / ("d" + std::to_string(r)),
              {testing::FrEntry(0, 1, "nccl:_allgather_base", {{2, 4}}, {{4, 4}}),
               testing::FrEntry(1, 2, "nccl:all_reduce", {{8}}, {{8}})},
              "[0, 1]");
    WriteDump(b.path / ("d" + std::to_string(r)),
              {testing::FrEntry(0, 1, "nccl:_allgather_base", {{2, 4}}, {{4, 4}}),
               testing::FrEntry(1, 2, "nccl:all_reduce", {{8}}, {{8}}, r == 1 ? "started" : "completed"),
               testing::FrEntry(2, 3, "nccl:all_reduce", {{8}}, {{8}})},
              "[0, 1]");
  }
  const trace::Model base = trace::ReadFlightRecorder({a.path}), cand = trace::ReadFlightRecorder({b.path});
  CHECK(trace::DiffTraces(base, base, {}).differences.empty());
  const trace::DiffResult d = trace::DiffTraces(base, cand, {});
  CHECK(d.Failed());
  std::vector<trace::Difference> by_group;
  for (const trace::Difference& x : d.differences)
    if (x.subject == "process group 0 (default_pg) [0, 1] collective") by_group.push_back(x);
  REQUIRE(by_group.size() == 2);
  CHECK(by_group[0].category == trace::DiffCategory::kCollectives);
  CHECK(by_group[0].what == "rank 1 state");
  CHECK(by_group[0].baseline == "completed");
  CHECK(by_group[0].candidate == "started");
  CHECK(by_group[0].baseline_id == 2);
  CHECK(by_group[0].candidate_id == 2);
  CHECK(by_group[1].what == "added");
  CHECK_FALSE(by_group[1].baseline_id);
  CHECK(by_group[1].candidate_id == 3);
  CHECK(by_group[1].candidate == "nccl:all_reduce");
}

TEST_CASE("flight records: diff reports a rank whose sizes differ, by their text", "[trace][fr][diff]") {
  TempDir a("diff_sizes_a"), b("diff_sizes_b");
  // Rank 0 of the candidate gathered [2, 8] -> [4, 8] where the baseline gathered [2, 4] -> [4, 4];
  // rank 1 and seq 2 are the same in both.
  for (int r = 0; r < 2; ++r) {
    WriteDump(a.path / ("d" + std::to_string(r)),
              {testing::FrEntry(0, 1, "nccl:_allgather_base", {{2, 4}}, {{4, 4}}),
               testing::FrEntry(1, 2, "nccl:all_reduce", {{8}}, {{8}})},
              "[0, 1]");
    WriteDump(b.path / ("d" + std::to_string(r)),
              {r == 0 ? testing::FrEntry(0, 1, "nccl:_allgather_base", {{2, 8}}, {{4, 8}})
                      : testing::FrEntry(0, 1, "nccl:_allgather_base", {{2, 4}}, {{4, 4}}),
               testing::FrEntry(1, 2, "nccl:all_reduce", {{8}}, {{8}})},
              "[0, 1]");
  }
  const trace::Model base = trace::ReadFlightRecorder({a.path}), cand = trace::ReadFlightRecorder({b.path});
  const trace::DiffResult d = trace::DiffTraces(base, cand, {});
  std::vector<trace::Difference> by_group;
  for (const trace::Difference& x : d.differences)
    if (x.subject == "process group 0 (default_pg) [0, 1] collective") by_group.push_back(x);
  REQUIRE(by_group.size() == 1);
  CHECK(by_group[0].category == trace::DiffCategory::kBytes);
  CHECK(by_group[0].what == "rank 0 sizes");
  CHECK(by_group[0].baseline == "[2, 4] -> [4, 4]");
  CHECK(by_group[0].candidate == "[2, 8] -> [4, 8]");
  CHECK(by_group[0].baseline_id == 1);
}
