// The GUI's background load (TraceLoader): the progress bar's total is the bytes of the files the
// reader reads, not of every file in the directory, so the bar ends at its end.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "../common/temp_dir.hpp"
#include "trace_loader.hpp"

namespace fs = std::filesystem;
using shardscope::app::gui::TraceLoader;

namespace {

void WaitDone(const TraceLoader& loader) {
  const auto start = std::chrono::steady_clock::now();
  while (!loader.done() && std::chrono::steady_clock::now() - start < std::chrono::seconds(60))
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  REQUIRE(loader.done());
}

}  // namespace

TEST_CASE("gui loader: the total counts the rank files, not the other files of the directory",
          "[gui][loader]") {
  const fs::path dir = shardscope::testing::FreshTempDir("gui_loader");
  fs::create_directories(dir);
  int64_t rank_bytes = 0;
  for (const auto& e : fs::directory_iterator(fs::path(SHARDSCOPE_SOURCE_DIR) / "tests/golden/check/clean")) {
    fs::copy_file(e.path(), dir / e.path().filename());
    rank_bytes += static_cast<int64_t>(fs::file_size(e.path()));
  }
  // Files the reader does not read: notes and a core file beside the rank files.
  std::ofstream(dir / "notes.txt") << std::string(1 << 20, 'x');
  std::ofstream(dir / "core") << std::string(1 << 16, '\0');
  {
    TraceLoader loader(dir.string());
    WaitDone(loader);
    REQUIRE(loader.error().empty());
    CHECK(loader.total_bytes() == rank_bytes);
    CHECK(loader.progress().bytes_done == rank_bytes);
    CHECK(loader.progress().files_total == 4);
    CHECK(loader.progress().files_done == 4);
  }
  fs::remove_all(dir);
}
