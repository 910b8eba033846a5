#pragma once
// A fresh path under the system temp directory for one test: "shardscope_<name>_<random>", removed
// if it exists and not created (writers and readers under test create what they need); and a
// file's contents.

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

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

}  // namespace shardscope::testing
