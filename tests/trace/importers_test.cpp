// The importer registry (importers.hpp): which reader claims an input, the order importers are
// asked in, and the errors of ReadAnyTrace.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>

#include "../common/temp_dir.hpp"
#include "shardscope/error.hpp"
#include "shardscope/trace/importers.hpp"

namespace fs = std::filesystem;
using namespace shardscope;

namespace {

// A minimal Flight Recorder JSON dump: the importer keys on the file name ending in a rank and on
// a JSON object that is not a shardscope header (docs/flight-recorder.md).
void WriteFrDump(const fs::path& dir) {
  fs::create_directories(dir);
  std::ofstream(dir / "nccl_trace_rank_0.json")
      << R"({"version": "2.4", "pg_config": {"0": {"name": "0", "desc": "default_pg", "ranks": "[0]"}},)"
      << R"( "pg_status": {}, "entries": []})";
}

}  // namespace

TEST_CASE("importers: built-ins are asked Flight Recorder, then Kineto, shardscope last",
          "[trace][importers]") {
  std::vector<trace::Importer> all = trace::Importers();
  REQUIRE(all.size() >= 3);
  CHECK(all[all.size() - 3].name == "flight_recorder");
  CHECK(all[all.size() - 2].name == "kineto");
  CHECK(all.back().name == "shardscope");
}

TEST_CASE("importers: a profiler trace goes to Kineto", "[trace][importers]") {
  fs::path dir = testing::FreshTempDir("importers_kineto");
  fs::create_directories(dir);
  std::ofstream(dir / "rank0.pt.trace.json") << R"({"schemaVersion": 1, "traceEvents": []})"
                                             << "\n";
  CHECK(trace::ImporterFor(dir) == "kineto");
  CHECK(trace::ImporterFor(dir / "rank0.pt.trace.json") == "kineto");
  // A JSON file that is neither a dump nor a profiler trace falls through to shardscope.
  std::ofstream(dir / "other.json") << R"({"hello": 1})"
                                    << "\n";
  CHECK(trace::ImporterFor(dir / "other.json") == "shardscope");
  fs::remove_all(dir);
}

TEST_CASE("importers: a dump directory goes to Flight Recorder, anything else to shardscope",
          "[trace][importers]") {
  fs::path dir = testing::FreshTempDir("importers_fr");
  WriteFrDump(dir);
  CHECK(trace::ImporterFor(dir) == "flight_recorder");
  CHECK(trace::ImporterFor(dir / "nccl_trace_rank_0.json") == "flight_recorder");
  fs::path other = testing::FreshTempDir("importers_other");
  fs::create_directories(other);
  std::ofstream(other / "notes.txt") << "hello\n";
  CHECK(trace::ImporterFor(other) == "shardscope");
  // The fallback's error says what a shardscope trace directory needs.
  CHECK_THROWS_WITH(trace::ReadAnyTrace(other), Catch::Contains("rank"));
  fs::remove_all(dir);
  fs::remove_all(other);
}

TEST_CASE("importers: a missing path is one clear error", "[trace][importers]") {
  CHECK_THROWS_AS(trace::ReadAnyTrace("/nonexistent/shardscope/trace"), Error);
  CHECK_THROWS_WITH(trace::ReadAnyTrace("/nonexistent/shardscope/trace"),
                    Catch::Contains("no such trace file or directory"));
}

TEST_CASE("importers: a registered importer is asked before the built-ins", "[trace][importers]") {
  fs::path dir = testing::FreshTempDir("importers_custom");
  fs::create_directories(dir);
  std::ofstream(dir / "run.custom") << "x";
  trace::RegisterImporter({.name = "test_custom",
                           .description = "a test format: a directory holding run.custom",
                           .recognises = [](const fs::path& p) { return fs::exists(p / "run.custom"); },
                           .read =
                               [](const fs::path&, const trace::ReadOptions&) {
                                 trace::Model m;
                                 m.world = 3;
                                 return m;
                               }});
  CHECK(trace::Importers().front().name == "test_custom");
  CHECK(trace::ImporterFor(dir) == "test_custom");
  CHECK(trace::ReadAnyTrace(dir).world == 3);
  fs::remove_all(dir);
}
