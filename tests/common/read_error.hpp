#pragma once
// The message a reader gives for a rank file of hand-written lines: the tests of the v2 format's
// error paths write `header` and `lines` as rank-1.jsonl under a fresh temp directory and read it
// through one reader path (the fast one or the reference one); a table of such cases is checked
// through both paths.

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "shardscope/error.hpp"
#include "shardscope/trace/reader.hpp"
#include "temp_dir.hpp"

namespace shardscope::testing {

/// What reading `header` then `lines` as rank-1.jsonl throws ("(no error)" when it reads).
inline std::string ReadErrorOf(const std::string& header, const std::vector<std::string>& lines, bool fast) {
  const std::filesystem::path dir = FreshTempDir("read_error");
  std::filesystem::create_directories(dir);
  std::string text = header + "\n";
  for (const std::string& l : lines) text += l + "\n";
  std::ofstream(dir / "rank-1.jsonl", std::ios::binary) << text;
  std::string message = "(no error)";
  try {
    (void)trace::ReadTraceFile(dir / "rank-1.jsonl", {.jobs = 1, .fast = fast});
  } catch (const shardscope::Error& e) {
    message = e.what();
  }
  std::filesystem::remove_all(dir);
  return message;
}

/// Lines of a rank file (after its header) and the message a reader must give for them.
using ReadErrorCase = std::pair<std::vector<std::string>, std::string>;

/// Checks that both reader paths give each case's message; `error_of(lines, fast)` reads the lines
/// under the test's header (ReadErrorOf).
template <typename ErrorOf>
void CheckBothReaders(const std::vector<ReadErrorCase>& cases, ErrorOf error_of) {
  for (const auto& [lines, expected] : cases) {
    CAPTURE(lines.back());
    CHECK(error_of(lines, true) == expected);
    CHECK(error_of(lines, false) == expected);
  }
}

}  // namespace shardscope::testing
