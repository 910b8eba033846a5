// The load counters (trace::ReadProgress) that the CLI's progress line and the GUI's bar show:
// every importer that ReadAnyTrace hands a directory to fills them, counting only the files it
// reads. Expected values are the files' sizes on disk, as the counters' contract says.
#include <catch2/catch.hpp>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "../common/fr_json.hpp"
#include "../common/temp_dir.hpp"
#include "shardscope/trace/importers.hpp"
#include "shardscope/trace/reader.hpp"

namespace fs = std::filesystem;
using namespace shardscope;
using nlohmann::json;

namespace {

// A Flight Recorder dump (docs/pytorch-artifacts.md section 2) with one completed all_reduce.
std::string Dump() {
  return testing::FrDump({testing::FrEntry(0, 1, "nccl:all_reduce", {{8}}, {{8}})}).dump();
}

int64_t Size(const fs::path& p) { return static_cast<int64_t>(fs::file_size(p)); }

// ReadAnyTrace of `dir` reads `ranks` ranks, and its counters say `files` files of `bytes` bytes
// in all, every one of them done.
void CheckCounted(const fs::path& dir, size_t ranks, int64_t files, int64_t bytes) {
  trace::ReadProgress progress;
  trace::Model model = trace::ReadAnyTrace(dir, {.progress = &progress});
  CHECK(model.ranks.size() == ranks);
  CHECK(progress.files_total == files);
  CHECK(progress.files_done == files);
  CHECK(progress.bytes_total == bytes);
  CHECK(progress.bytes_done == bytes);
  fs::remove_all(dir);
}

}  // namespace

TEST_CASE("progress: a Flight Recorder load counts its dump files and their bytes", "[trace][fr][progress]") {
  const fs::path dir = testing::FreshTempDir("fr_progress");
  fs::create_directories(dir);
  int64_t bytes = 0;
  for (int64_t rank : {0, 1}) {
    const fs::path p = dir / ("nccl_trace_rank_" + std::to_string(rank));
    std::ofstream(p) << Dump();
    bytes += Size(p);
  }
  std::ofstream(dir / "README") << std::string(4096, 'x');  // not a dump: not counted
  CheckCounted(dir, 2, 2, bytes);
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
  CheckCounted(dir, 4, 4, bytes);
}
