// Flight Recorder import and check: dumps written here as JSON (the format of
// docs/pytorch-artifacts.md section 2), expectations derived from the format
// and from Flight Recorder's rules (all_gather out = in x group, reduce_scatter in = out x group).
// The scenario dumps of tests/trace/make_fr_dumps.py are checked end to end by tests/cli/fr_test.sh.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include <unistd.h>

#include "../common/fr_json.hpp"
#include "../common/test_knobs.hpp"
#include "shardscope/error.hpp"
#include "shardscope/trace/check.hpp"
#include "shardscope/trace/chrome_export.hpp"
#include "shardscope/trace/codec.hpp"
#include "shardscope/trace/flight_recorder.hpp"
#include "shardscope/trace/importers.hpp"
#include "shardscope/trace/reader.hpp"
#include "shardscope/trace/summary.hpp"
#include "shardscope/trace/writer.hpp"

namespace fs = std::filesystem;
using namespace shardscope;
using nlohmann::json;

namespace {

using testing::FrDump;

void Write(const fs::path& p, const json& j) { std::ofstream(p) << j.dump(); }

trace::Collective Coll(const trace::Model& m, size_t rank, size_t i) {
  return std::get<trace::Collective>(m.ranks.at(rank).events.at(i));
}

}  // namespace

TEST_CASE("fr: the rank of a dump is the trailing number of its file name", "[trace][fr]") {
  CHECK(trace::FlightRecorderRankOfFileName("nccl_trace_rank_0") == 0);
  CHECK(trace::FlightRecorderRankOfFileName("nccl_trace_rank_12") == 12);
  CHECK(trace::FlightRecorderRankOfFileName("node-7.cluster.local_nccl_trace_rank_3") == 3);
  CHECK(trace::FlightRecorderRankOfFileName("host-1_dump.5.json") == 5);
  CHECK(trace::FlightRecorderRankOfFileName("dump_7.pkl") == 7);
  CHECK(trace::FlightRecorderRankOfFileName("dump_7.pickle") == 7);
  CHECK(trace::FlightRecorderRankOfFileName("README") == -1);
  CHECK(trace::FlightRecorderRankOfFileName("dump_7.txt") == -1);
  CHECK(trace::FlightRecorderRankOfFileName("rank_99999999") == -1);  // past 2^20 ranks
}

TEST_CASE("fr: entries become collectives with the flight fields, times and bytes", "[trace][fr]") {
  testing::ScopedTempDir dir("fr_import");
  // Rank 0: an all_gather of [2, 4] f32 into [4, 4] over 2 ranks, completed; then an all_reduce
  // still "started" (no completion time). Rank 1's buffer wrapped (first record id 5).
  Write(dir.path / "host_a_trace_0",
        FrDump({testing::FrEntry(0, 1, "nccl:_allgather_base", {{2, 4}}, {{4, 4}}),
                testing::FrEntry(1, 2, "nccl:all_reduce", {{8}}, {{8}}, "started")}));
  Write(dir.path / "host_b_trace_1",
        FrDump({testing::FrEntry(6, 2, "nccl:all_reduce", {{8}}, {{8}}, "started"),
                testing::FrEntry(5, 1, "nccl:_allgather_base", {{2, 4}}, {{4, 4}})}));
  REQUIRE(trace::IsFlightRecorderDump(dir.path));
  trace::Model m = trace::ReadFlightRecorder({dir.path});
  REQUIRE(m.world == 2);
  REQUIRE(m.ranks.size() == 2);
  CHECK(m.ranks[0].header.backend == "flight_recorder");
  CHECK(m.ranks[0].header.mesh_shape == std::vector<int64_t>{2});
  const trace::Collective& ag = Coll(m, 0, 0);
  CHECK(ag.kind() == "all_gather");
  CHECK(ag.group() == std::vector<int64_t>{0, 1});
  CHECK(ag.dtype() == "f32");
  CHECK(ag.redistribute_id == -1);
  // An all_gather sends its input (2 x 4 x 4 bytes = 32) to the one peer and receives as much.
  CHECK(ag.bytes_sent() == std::vector<int64_t>{0, 32});
  CHECK(ag.bytes_recv() == std::vector<int64_t>{0, 32});
  CHECK(ag.start_ns == 1000010);
  CHECK(ag.end_ns == 1000500);
  REQUIRE(ag.HasFlight());
  CHECK(ag.flight.seq_id == 1);
  CHECK(ag.flight_shape().pg_desc == "default_pg");
  CHECK(ag.flight_shape().input_sizes == std::vector<std::vector<int64_t>>{{2, 4}});
  const trace::Collective& ar = Coll(m, 0, 1);
  CHECK(ar.flight_shape().state == "started");
  CHECK(ar.end_ns == ar.start_ns);  // no completion known
  // Rank 1's entries come in record_id order whatever the file order.
  CHECK(Coll(m, 1, 0).flight.record_id == 5);
  bool wrapped = false;
  for (const auto& d : m.diagnostics) wrapped = wrapped || d.message.find("record_id 5") != std::string::npos;
  CHECK(wrapped);
  CHECK(trace::CheckTrace(m).Clean());

  // Written as a trace and read back, the collectives (flight included) are unchanged.
  testing::ScopedTempDir out("fr_roundtrip");
  for (const trace::RankTrace& rt : m.ranks) {
    trace::Writer w(out.path, rt.header);
    for (const trace::Event& e : rt.events) w.Emit(e);
  }
  trace::Model back = trace::ReadTraceDir(out.path);
  REQUIRE(back.ranks.size() == 2);
  CHECK(back.ranks[0].events == m.ranks[0].events);
  CHECK(back.ranks[1].events == m.ranks[1].events);
  CHECK(back.diagnostics.empty());
  CHECK(trace::HasFlightRecords(back));
}

TEST_CASE("fr: reduce_scatter sizes, mixed dtypes and type mismatches name the culprit", "[trace][fr]") {
  testing::ScopedTempDir dir("fr_check");
  // reduce_scatter over 2 ranks needs input numel = output numel x 2; rank 1 has 8 -> 8.
  Write(dir.path / "d0", FrDump({testing::FrEntry(0, 1, "nccl:reduce_scatter_tensor", {{8}}, {{4}}),
                                 testing::FrEntry(1, 2, "nccl:all_reduce", {{4}}, {{4}})}));
  Write(dir.path / "d1", FrDump({testing::FrEntry(0, 1, "nccl:reduce_scatter_tensor", {{8}}, {{8}}),
                                 testing::FrEntry(1, 2, "nccl:broadcast", {{4}}, {{4}})}));
  trace::CheckResult r = trace::CheckTrace(trace::ReadAnyTrace(dir.path));
  REQUIRE(r.mismatches.size() == 2);
  CHECK(r.mismatches[0].kind == trace::MismatchClass::kSizeOrSyntax);
  CHECK(r.mismatches[0].culprits == std::vector<int64_t>{1});
  CHECK(r.mismatches[0].seq_id == 1);
  CHECK(r.mismatches[0].process_group == "0");
  CHECK_THAT(r.mismatches[0].message, Catch::Contains("input numel = output numel x group size 2"));
  // Seq 2: a tie of one rank each goes to the lowest rank's value, so rank 1 deviates.
  CHECK(r.mismatches[1].kind == trace::MismatchClass::kCollectiveType);
  CHECK(r.mismatches[1].culprits == std::vector<int64_t>{1});
  CHECK(r.mismatches[1].seq_id == 2);
}

TEST_CASE("fr: bad dumps are refused with the file and field named", "[trace][fr]") {
  testing::ScopedTempDir dir("fr_bad");
  auto error_of = [&](const json& dump) {
    fs::remove_all(dir.path);
    fs::create_directories(dir.path);
    Write(dir.path / "rank_0", dump);
    try {
      (void)trace::ReadFlightRecorder({dir.path});
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  json d = FrDump({testing::FrEntry(0, 1, "nccl:all_reduce", {{4}}, {{4}})});
  json v1 = d;
  v1["version"] = "1.0";
  CHECK_THAT(error_of(v1), Catch::Contains("rank_0: Flight Recorder dump version '1.0' is not supported"));
  json bad_state = d;
  bad_state["entries"][0]["state"] = "done";
  CHECK_THAT(error_of(bad_state), Catch::Contains("rank_0: entries[0].state: 'done' is not scheduled"));
  json bad_ranks = d;
  bad_ranks["pg_config"]["0"]["ranks"] = "[1, 2]";
  CHECK_THAT(error_of(bad_ranks), Catch::Contains("does not contain this dump's rank 0"));
  json negative = d;
  negative["entries"][0]["input_sizes"] = {{-4}};
  CHECK_THAT(error_of(negative), Catch::Contains("entries[0].input_sizes[0]"));
  json no_entries = d;
  no_entries.erase("entries");
  CHECK_THAT(error_of(no_entries), Catch::Contains("rank_0: entries: missing"));
}

TEST_CASE("fuzz: mutated Flight Recorder dumps are read or rejected with shardscope::Error",
          "[trace][fr][fuzz]") {
  testing::ScopedTempDir dir("fr_fuzz");
  const std::string seed = FrDump({testing::FrEntry(3, 1, "nccl:_allgather_base", {{2, 4}}, {{4, 4}}),
                                   testing::FrEntry(4, 2, "nccl:send 0->1", {{4}}, {{4}}),
                                   testing::FrEntry(5, 2, "nccl:all_to_all", {{8}}, {{8}}, "started")})
                               .dump();
  const std::string other =
      FrDump({testing::FrEntry(0, 1, "nccl:_allgather_base", {{2, 4}}, {{4, 4}})}).dump();
  const auto deadline =
      std::chrono::steady_clock::now() +
      std::chrono::seconds(shardscope::KnobInteger(shardscope::knobs::FuzzSeconds()).value_or(5));
  std::mt19937_64 rng(7);
  const std::vector<std::string> tokens = {
      "-1",   "null",    "[]",          "{}",           "\"x\"", "1e300", "99999999999999999999",
      "true", "\"3.0\"", "[[1,2],[3]]", "\"[0, 1, 7]\""};
  int64_t accepted = 0, rejected = 0;
  for (int i = 0; i < 5000 && std::chrono::steady_clock::now() < deadline; ++i) {
    std::string s = seed;
    for (int k = 0, n = 1 + static_cast<int>(rng() % 3); k < n; ++k) {
      size_t at = rng() % (s.size() + 1);
      if (rng() % 2 == 0) {
        // Replace a value after a colon by a hostile token.
        size_t colon = s.find(':', at);
        if (colon == std::string::npos) continue;
        size_t end = s.find_first_of(",}", colon);
        s = s.substr(0, colon + 1) + tokens[rng() % tokens.size()] +
            (end == std::string::npos ? "" : s.substr(end));
      } else if (!s.empty()) {
        s[rng() % s.size()] = static_cast<char>(rng() & 0xff);
      }
    }
    std::ofstream(dir.path / "d_0") << s;
    std::ofstream(dir.path / "d_1") << other;
    try {
      trace::Model m = trace::ReadFlightRecorder({dir.path});
      ++accepted;
      trace::CheckResult r = trace::CheckTrace(m);
      (void)trace::FormatCheckText(r, 5);
      (void)trace::CheckJson(r, 5).dump();
      (void)trace::FormatShowText(m);
      (void)trace::ShowJson(m).dump();
      (void)trace::ChromeTraceJson(m).dump();
      for (const auto& e : m.ranks[0].events) (void)trace::ToLine(trace::ToJson(e));
    } catch (const Error&) {
      ++rejected;
    }
  }
  WARN("fr fuzz: " << accepted << " accepted, " << rejected << " rejected");
  CHECK(accepted + rejected > 0);
}
