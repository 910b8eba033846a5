// ReadFlightRecorderEach: per rank, the same trace and diagnostics as ReadFlightRecorder (its
// definition in flight_recorder.hpp), whatever the thread count; the failing file of the lowest
// rank is the one reported. Dumps are written here as JSON (docs/pytorch-artifacts.md section 2).
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "../common/fr_json.hpp"
#include "shardscope/error.hpp"
#include "shardscope/trace/flight_recorder.hpp"

namespace fs = std::filesystem;
using namespace shardscope;
using nlohmann::json;

namespace {

// A random but valid dump of `rank` in a world of `world` ranks: the default group and one
// two-rank group, entries of random kinds, sizes, dtypes and states.
json RandomDump(std::mt19937& rng, int64_t rank, int64_t world, int entries) {
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  std::string all = "[";
  for (int64_t r = 0; r < world; ++r) all += (r ? ", " : "") + std::to_string(r);
  all += "]";
  const int64_t pair_first = rank - rank % 2;
  const int64_t pair_second = std::min(world - 1, pair_first + 1);
  json pg = {{"0", {{"name", "0"}, {"desc", "default_pg"}, {"ranks", all}}},
             {"1",
              {{"name", "1"},
               {"desc", "pair"},
               {"ranks", "[" + std::to_string(pair_first) + ", " + std::to_string(pair_second) + "]"}}}};
  const char* names[] = {"nccl:all_reduce", "nccl:_all_gather_base", "nccl:_reduce_scatter_base",
                         "nccl:broadcast"};
  const char* dtypes[] = {"Float", "BFloat16", "Half", "Long"};
  const char* states[] = {"completed", "started", "scheduled"};
  json list = json::array();
  for (int i = 0; i < entries; ++i) {
    const std::string state = states[pick(4) == 0 ? 1 + pick(2) : 0];
    const int64_t n = 1 + pick(3) * 512;
    const bool pair = pick(3) == 0;
    list.push_back({{"record_id", i},
                    {"pg_id", pair ? 1 : 0},
                    {"process_group", {pair ? "1" : "0", pair ? "pair" : "default_pg"}},
                    {"collective_seq_id", i},
                    {"p2p_seq_id", 0},
                    {"op_id", i + 1},
                    {"profiling_name", names[pick(4)]},
                    {"time_created_ns", 1000000 + 1000 * i},
                    {"input_sizes", json::array({json::array({n, 4})})},
                    {"output_sizes", json::array({json::array({n, 4})})},
                    {"input_dtypes", json::array({dtypes[pick(4)]})},
                    {"output_dtypes", json::array({dtypes[pick(4)]})},
                    {"state", state},
                    {"time_discovered_started_ns", state == "scheduled" ? 0 : 1000000 + 1000 * i + 10},
                    {"time_discovered_completed_ns", state == "completed" ? 1000000 + 1000 * i + 500 : 0},
                    {"timeout_ms", 600000},
                    {"is_p2p", false},
                    {"frames", json::array({{{"name", "f"}, {"filename", "x.py"}, {"line", i}}})}});
  }
  return {{"version", "2.4"}, {"pg_config", pg}, {"pg_status", json::object()}, {"entries", list}};
}

void Write(const fs::path& p, const json& j) { std::ofstream(p) << j.dump(); }

}  // namespace

TEST_CASE("fr each: every rank's dump equals ReadFlightRecorder's, for any thread count", "[trace][fr]") {
  std::mt19937 rng(34);
  for (int trial = 0; trial < 40; ++trial) {
    testing::ScopedTempDir dir("fr_each_same" + std::to_string(trial));
    const int64_t world = 1 + static_cast<int64_t>(rng() % 9);
    for (int64_t r = 0; r < world; ++r)
      Write(dir.path / ("nccl_trace_rank_" + std::to_string(r)),
            RandomDump(rng, r, world, 1 + static_cast<int>(rng() % 40)));
    const trace::Model model = trace::ReadFlightRecorder({dir.path});
    const int jobs = static_cast<int>(rng() % 5);  // 0: one per core
    std::mutex mutex;
    std::map<int64_t, trace::FlightRecorderDump> got;
    trace::ReadFlightRecorderEach({dir.path}, jobs, [&](trace::FlightRecorderDump& d) {
      std::lock_guard<std::mutex> lock(mutex);
      const int64_t rank = d.trace.header.rank;
      REQUIRE(got.count(rank) == 0);
      got.emplace(rank, std::move(d));
    });
    REQUIRE(static_cast<int64_t>(got.size()) == world);
    int64_t max_rank = 0;
    std::vector<trace::Diagnostic> diagnostics;
    for (const trace::RankTrace& rt : model.ranks) {
      const trace::FlightRecorderDump& d = got.at(rt.header.rank);
      CHECK(d.trace.file == rt.file);
      CHECK(d.trace.header.host == rt.header.host);
      CHECK(d.trace.events == rt.events);
      max_rank = std::max(max_rank, d.max_rank);
      diagnostics.insert(diagnostics.end(), d.diagnostics.begin(), d.diagnostics.end());
    }
    CHECK(max_rank + 1 == model.world);
    // The model's diagnostics are the files' in rank order (no rank is missing here).
    CHECK(diagnostics == model.diagnostics);
  }
}

TEST_CASE("fr each: the failing file of the lowest rank is reported, a sink's error included",
          "[trace][fr]") {
  std::mt19937 rng(7);
  testing::ScopedTempDir dir("fr_each_errors");
  const int64_t world = 8;
  for (int64_t r = 0; r < world; ++r)
    Write(dir.path / ("nccl_trace_rank_" + std::to_string(r)), RandomDump(rng, r, world, 5));
  std::ofstream(dir.path / "nccl_trace_rank_3") << "{\"version\": \"2.4\", \"entries\": 5}";
  std::ofstream(dir.path / "nccl_trace_rank_6") << "{\"version\": \"2.4\"";
  std::string expected;
  try {
    trace::ReadFlightRecorder({dir.path});
  } catch (const Error& e) {
    expected = e.what();
  }
  REQUIRE(expected.find("nccl_trace_rank_3") != std::string::npos);
  for (int jobs : {1, 2, 4, 8}) {
    try {
      trace::ReadFlightRecorderEach({dir.path}, jobs, [](trace::FlightRecorderDump&) {});
      FAIL("no error");
    } catch (const Error& e) {
      CHECK(std::string(e.what()) == expected);
    }
    // A sink that refuses rank 1: that failure comes first in rank order.
    try {
      trace::ReadFlightRecorderEach({dir.path}, jobs, [](trace::FlightRecorderDump& d) {
        if (d.trace.header.rank == 1) throw InvalidInput("sink refuses rank 1");
      });
      FAIL("no error");
    } catch (const Error& e) {
      CHECK(std::string(e.what()) == "sink refuses rank 1");
    }
  }
}

TEST_CASE("fr each: the dumps it hands over assemble into ReadFlightRecorder's model", "[trace][fr]") {
  // What the GUI does: triage's pass keeps every rank's dump and the model is made of them, with no
  // second read. Ranks may be missing (a hole, the last ones), so the missing-rank diagnostic and
  // the world come from the assembly too.
  std::mt19937 rng(35);
  for (int trial = 0; trial < 30; ++trial) {
    testing::ScopedTempDir dir("fr_each_assemble" + std::to_string(trial));
    const int64_t world = 2 + static_cast<int64_t>(rng() % 8);
    for (int64_t r = 0; r < world; ++r) {
      if (r > 0 && rng() % 4 == 0) continue;  // this rank left no dump
      Write(dir.path / ("nccl_trace_rank_" + std::to_string(r)),
            RandomDump(rng, r, world, 1 + static_cast<int>(rng() % 30)));
    }
    const trace::Model model = trace::ReadFlightRecorder({dir.path});
    std::mutex mutex;
    std::vector<trace::FlightRecorderDump> kept;
    trace::ReadFlightRecorderEach({dir.path}, static_cast<int>(rng() % 4), [&](trace::FlightRecorderDump& d) {
      std::lock_guard<std::mutex> lock(mutex);
      kept.push_back(std::move(d));  // in the order the threads finish
    });
    std::shuffle(kept.begin(), kept.end(), rng);
    const trace::Model assembled = trace::AssembleFlightRecorderModel({dir.path}, std::move(kept));
    CHECK(assembled.source == model.source);
    CHECK(assembled.world == model.world);
    CHECK(assembled.diagnostics == model.diagnostics);
    REQUIRE(assembled.ranks.size() == model.ranks.size());
    for (size_t i = 0; i < model.ranks.size(); ++i) {
      CHECK(assembled.ranks[i].file == model.ranks[i].file);
      CHECK(assembled.ranks[i].header.rank == model.ranks[i].header.rank);
      CHECK(assembled.ranks[i].header.world == model.ranks[i].header.world);
      CHECK(assembled.ranks[i].header.mesh_shape == model.ranks[i].header.mesh_shape);
      CHECK(assembled.ranks[i].events == model.ranks[i].events);
    }
  }
}
