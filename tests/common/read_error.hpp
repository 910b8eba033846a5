#pragma once
// The message a reader gives for a rank file of hand-written lines: the tests of the v2 format's
// error paths write `header` and `lines` as rank-1.jsonl under a fresh temp directory and read it
// through one reader path (the fast one or the reference one).

#include <filesystem>
#include <fstream>
#include <string>
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

}  // namespace shardscope::testing
