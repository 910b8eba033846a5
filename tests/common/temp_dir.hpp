#pragma once
// A fresh path under the system temp directory for one test: "shardscope_<name>_<random>", removed
// if it exists and not created (writers and readers under test create what they need); a file's
// contents, a text's lines, and how often a piece occurs in a text.

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace shardscope::testing {

inline std::filesystem::path FreshTempDir(const std::string& name) {
  std::filesystem::path dir = std::filesystem::temp_directory_path() /
                              ("shardscope_" + name + "_" + std::to_string(std::random_device{}()));
  std::filesystem::remove_all(dir);
  return dir;
}

/// The whole contents of `path` ("" when it cannot be read).
inline std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// The lines of `text`, without their '\n' (a last line without one counts too).
inline std::vector<std::string> SplitLines(const std::string& text) {
  std::vector<std::string> lines;
  std::stringstream ss(text);
  for (std::string line; std::getline(ss, line);) lines.push_back(line);
  return lines;
}

/// How many times `what` occurs in `text`, overlapping occurrences included.
inline size_t CountOf(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace shardscope::testing
