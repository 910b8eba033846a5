// CheckFlightRecorder: by its contract (flight_recorder.hpp), the result of CheckTrace on the model
// ReadFlightRecorder makes of the same dumps, and that model's diagnostics, for any thread count.
// The dumps are random jobs with faults of every kind the rules know (a rank that stops, sizes,
// dtypes, kinds, states, mixed dtypes, p2p without a peer, wrapped ring buffers, repeated seq ids,
// ranks without a file), written as JSON (docs/pytorch-artifacts.md section 2).
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>

#include "../common/fr_json.hpp"
#include "shardscope/trace/check.hpp"
#include "shardscope/trace/flight_recorder.hpp"

namespace fs = std::filesystem;
using namespace shardscope;
using nlohmann::json;

namespace {

struct Job {
  int64_t world = 4;
  int collectives = 10;  // per rank on the default group
};

std::string RankList(const std::vector<int64_t>& ranks) {
  std::string s = "[";
  for (size_t i = 0; i < ranks.size(); ++i) s += (i ? ", " : "") + std::to_string(ranks[i]);
  return s + "]";
}

// Rank `rank`'s dump of a job on the default group "0" and the pair groups "1" (ranks 2k, 2k+1),
// each fault drawn at random.
json RandomDump(std::mt19937& rng, int64_t rank, const Job& job) {
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  std::vector<int64_t> all;
  for (int64_t r = 0; r < job.world; ++r) all.push_back(r);
  const int64_t first = rank - rank % 2;
  std::vector<int64_t> pair = {first, std::min(job.world - 1, first + 1)};
  json pg = {{"0", {{"name", "0"}, {"desc", "default_pg"}, {"ranks", RankList(all)}}},
             {"1", {{"name", "1"}, {"desc", "pair"}, {"ranks", RankList(pair)}}}};
  const char* kinds[] = {"nccl:all_reduce", "nccl:_all_gather_base", "nccl:_reduce_scatter_base",
                         "nccl:all_to_all", "nccl:broadcast"};
  const int64_t w = job.world;
  json list = json::array();
  int64_t record = 0, pair_seq = 0, p2p_seq = 0;
  const int stop = pick(4) == 0 ? pick(job.collectives + 1) : job.collectives;  // a rank that stops
  for (int seq = 1; seq <= stop; ++seq) {
    // The program every rank runs: the kind and sizes follow from seq; faults change one field.
    std::string name = kinds[seq % 5];
    int64_t n = 4 + seq % 3;
    json in = json::array({json::array({n, 8})});
    json out = json::array({json::array({n, 8})});
    if (name == "nccl:_all_gather_base") out = json::array({json::array({n * w, 8})});
    if (name == "nccl:_reduce_scatter_base") in = json::array({json::array({n * w, 8})});
    std::string state = seq < stop ? "completed" : (pick(2) ? "started" : "scheduled");
    std::string dtype = "Float", out_dtype = "Float";
    switch (pick(40)) {
      case 0:
        name = kinds[pick(5)];
        break;
      case 1:
        in = json::array({json::array({n + 1, 8})});
        break;
      case 2:
        dtype = out_dtype = "BFloat16";
        break;
      case 3:
        out_dtype = "Half";
        break;
      case 4:
        state = "scheduled";
        break;
      case 5:
        out = json::array({json::array({n, 8}), json::array({1})});
        break;
      default:
        break;
    }
    json e = testing::FrEntry(record++, seq, name, in, out, state, dtype);
    e["output_dtypes"] = json::array({out_dtype});
    list.push_back(e);
    if (pick(8) == 0)
      list.push_back(testing::FrEntry(record++, seq, name, in, out, state, dtype));  // repeated
    if (seq % 3 == 0) {  // the pair group: a collective, then a send to or a recv from the other
      json p = testing::FrEntry(record++, ++pair_seq, "nccl:all_reduce", json::array({json::array({2})}),
                                json::array({json::array({2})}));
      p["pg_id"] = 1;
      p["process_group"] = {"1", "pair"};
      if (pick(20) != 0) list.push_back(p);
      if (pair[0] != pair[1] && pick(10) != 0) {
        const bool send = rank == pair[0];
        json q = testing::FrEntry(record++, 0, send ? "nccl:send 0->1" : "nccl:recv 1<-0",
                                  json::array({json::array({3 + pick(20) / 19})}), json::array());
        q["pg_id"] = 1;
        q["process_group"] = {"1", "pair"};
        q["p2p_seq_id"] = ++p2p_seq;
        q["is_p2p"] = true;
        list.push_back(q);
      }
    }
  }
  // A wrapped ring buffer keeps only its newest entries.
  if (pick(5) == 0 && !list.empty())
    list.erase(list.begin(), list.begin() + pick(static_cast<int>(list.size())));
  return {{"version", "2.4"}, {"pg_config", pg}, {"pg_status", json::object()}, {"entries", list}};
}

}  // namespace

TEST_CASE("check of dumps read one at a time equals CheckTrace of their model", "[trace][fr][check]") {
  std::mt19937 rng(33);
  std::map<trace::MismatchClass, int> seen;  // the trials reach every rule
  int with_notes = 0;
  for (int trial = 0; trial < 60; ++trial) {
    testing::ScopedTempDir dir("check_dumps" + std::to_string(trial));
    Job job;
    job.world = 1 + static_cast<int64_t>(rng() % 9);
    job.collectives = 1 + static_cast<int>(rng() % 30);
    int written = 0;
    for (int64_t r = 0; r < job.world; ++r) {
      const json dump = RandomDump(rng, r, job);
      if (job.world > 1 && rng() % 7 == 0 && (written > 0 || r + 1 < job.world)) continue;  // no file
      std::ofstream(dir.path / ("nccl_trace_rank_" + std::to_string(r))) << dump.dump();
      ++written;
    }
    const trace::Model model = trace::ReadFlightRecorder({dir.path});
    const trace::CheckResult want = trace::CheckTrace(model);
    for (const trace::Mismatch& m : want.mismatches) ++seen[m.kind];
    with_notes += want.notes.empty() ? 0 : 1;
    for (int jobs : {1, 2, 3}) {
      std::vector<trace::Diagnostic> diagnostics;
      const trace::CheckResult got = trace::CheckFlightRecorder({dir.path}, {.jobs = jobs}, diagnostics);
      INFO("trial " << trial << ", jobs " << jobs << "\n" << trace::FormatCheckText(want, 1000));
      CHECK(trace::FormatCheckText(got, 1000) == trace::FormatCheckText(want, 1000));
      CHECK(got.mismatches == want.mismatches);
      CHECK(got.notes == want.notes);
      CHECK(got.ranks == want.ranks);
      CHECK(got.world == want.world);
      CHECK(got.groups == want.groups);
      CHECK(got.collectives == want.collectives);
      CHECK(got.undecided == want.undecided);
      CHECK(diagnostics == model.diagnostics);
    }
  }
  for (trace::MismatchClass c : {trace::MismatchClass::kMissingRankFile, trace::MismatchClass::kMissingRanks,
                                 trace::MismatchClass::kCollectiveType, trace::MismatchClass::kDtype,
                                 trace::MismatchClass::kSizeOrSyntax, trace::MismatchClass::kState}) {
    INFO(trace::MismatchClassName(c));
    CHECK(seen[c] > 0);
  }
  CHECK(with_notes > 0);
}

TEST_CASE("check of dumps read one at a time refuses what ReadFlightRecorder refuses", "[trace][fr][check]") {
  testing::ScopedTempDir dir("check_dumps_bad");
  std::ofstream(dir.path / "nccl_trace_rank_0") << "{\"version\": \"2.4\", \"entries\": 5}";
  std::string want;
  try {
    trace::ReadFlightRecorder({dir.path});
  } catch (const std::exception& e) {
    want = e.what();
  }
  REQUIRE(!want.empty());
  std::vector<trace::Diagnostic> diagnostics;
  CHECK_THROWS_WITH(trace::CheckFlightRecorder({dir.path}, {}, diagnostics), want);
}
