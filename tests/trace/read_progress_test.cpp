// The load counters (trace::ReadProgress) that the CLI's progress line and the GUI's bar show:
// every importer that ReadAnyTrace hands a directory to fills them, counting only the files it
// reads. Expected values are the files' sizes on disk, as the counters' contract says.
#include <catch2/catch.hpp>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "../common/temp_dir.hpp"
#include "shardscope/trace/importers.hpp"
#include "shardscope/trace/reader.hpp"

namespace fs = std::filesystem;
using namespace shardscope;
using nlohmann::json;

namespace {

// A Flight Recorder dump (docs/pytorch-artifacts.md section 2) with one completed all_reduce.
std::string Dump(int64_t rank) {
  json entry = {{"record_id", 0},
                {"pg_id", 0},
                {"process_group", {"0", "default_pg"}},
                {"collective_seq_id", 1},
                {"p2p_seq_id", 0},
                {"op_id", 1},
                {"profiling_name", "nccl:all_reduce"},
                {"time_created_ns", 1000000 + rank},
                {"input_sizes", {{8}}},
                {"output_sizes", {{8}}},
                {"input_dtypes", {"Float"}},
                {"output_dtypes", {"Float"}},
                {"state", "completed"},
                {"time_discovered_started_ns", 1000010},
                {"time_discovered_completed_ns", 1000500},
                {"retired", true},
                {"timeout_ms", 600000},
                {"is_p2p", false}};
  return json{{"version", "2.4"},
              {"pg_config", {{"0", {{"name", "0"}, {"desc", "default_pg"}, {"ranks", "[0, 1]"}}}}},
              {"pg_status", json::object()},
              {"entries", json::array({entry})}}
      .dump();
}

int64_t Size(const fs::path& p) { return static_cast<int64_t>(fs::file_size(p)); }

}  // namespace

TEST_CASE("progress: a Flight Recorder load counts its dump files and their bytes", "[trace][fr][progress]") {
  const fs::path dir = testing::FreshTempDir("fr_progress");
  fs::create_directories(dir);
  int64_t bytes = 0;
  for (int64_t rank : {0, 1}) {
    const fs::path p = dir / ("nccl_trace_rank_" + std::to_string(rank));
    std::ofstream(p) << Dump(rank);
    bytes += Size(p);
  }
  std::ofstream(dir / "README") << std::string(4096, 'x');  // not a dump: not counted
  trace::ReadProgress progress;
  trace::Model model = trace::ReadAnyTrace(dir, {.progress = &progress});
  CHECK(model.ranks.size() == 2);
  CHECK(progress.files_total == 2);
  CHECK(progress.files_done == 2);
  CHECK(progress.bytes_total == bytes);
  CHECK(progress.bytes_done == bytes);
  fs::remove_all(dir);
}

TEST_CASE("progress: a trace directory load counts its rank files only", "[trace][progress]") {
  const fs::path dir = testing::FreshTempDir("trace_progress");
  fs::create_directories(dir);
  int64_t bytes = 0;
  for (const auto& e : fs::directory_iterator(fs::path(SHARDSCOPE_SOURCE_DIR) / "tests/golden/check/clean")) {
    fs::copy_file(e.path(), dir / e.path().filename());
    bytes += Size(e.path());
  }
  std::ofstream(dir / "notes.txt") << std::string(4096, 'x');
  trace::ReadProgress progress;
  trace::Model model = trace::ReadAnyTrace(dir, {.progress = &progress});
  CHECK(model.ranks.size() == 4);
  CHECK(progress.files_total == 4);
  CHECK(progress.files_done == 4);
  CHECK(progress.bytes_total == bytes);
  CHECK(progress.bytes_done == bytes);
  fs::remove_all(dir);
}
