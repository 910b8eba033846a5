#pragma once
// Flight Recorder dumps that tests write as JSON (the format of docs/pytorch-artifacts.md
// section 2): one entry of the default process group, a dump of that group, and a temporary
// directory removed when the test's scope ends.

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

namespace shardscope::testing {

/// "<temp>/shardscope_<name>_<pid>", created empty, removed at scope exit.
struct ScopedTempDir {
  std::filesystem::path path;
  explicit ScopedTempDir(const std::string& name)
      : path(std::filesystem::temp_directory_path() /
             ("shardscope_" + name + "_" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~ScopedTempDir() { std::filesystem::remove_all(path); }
  ScopedTempDir(const ScopedTempDir&) = delete;
  ScopedTempDir& operator=(const ScopedTempDir&) = delete;
};

/// One entry of process group "0" (default_pg) as PyTorch's recorder writes it: record `record_id`,
/// collective `seq`, `name` (profiling name), sizes `in`/`out`, `state` and `dtype`; its times
/// follow from the record id (created 1 ms + 1 us per record, started 10 ns later, completed 500 ns
/// after creation).
inline nlohmann::json FrEntry(int64_t record_id, int64_t seq, const std::string& name, nlohmann::json in,
                              nlohmann::json out, const std::string& state = "completed",
                              const std::string& dtype = "Float") {
  using nlohmann::json;
  return {{"record_id", record_id},
          {"pg_id", 0},
          {"process_group", {"0", "default_pg"}},
          {"collective_seq_id", seq},
          {"p2p_seq_id", 0},
          {"op_id", record_id + 1},
          {"profiling_name", name},
          {"time_created_ns", 1000000 + 1000 * record_id},
          {"input_sizes", in},
          {"output_sizes", out},
          {"input_dtypes", json::array({dtype})},
          {"output_dtypes", json::array({dtype})},
          {"state", state},
          {"time_discovered_started_ns", state == "scheduled" ? 0 : 1000000 + 1000 * record_id + 10},
          {"time_discovered_completed_ns", state == "completed" ? 1000000 + 1000 * record_id + 500 : 0},
          {"retired", state == "completed"},
          {"timeout_ms", 600000},
          {"is_p2p", false}};
}

/// A dump (format `version`) of process group "0" (default_pg) over `ranks` (pg_config's rank list
/// as PyTorch writes it, e.g. "[0, 1]") holding `entries`.
inline nlohmann::json FrDump(nlohmann::json entries, const std::string& ranks = "[0, 1]",
                             const std::string& version = "2.4") {
  using nlohmann::json;
  return {{"version", version},
          {"comm_lib_version", "2.21.5"},
          {"pg_config", {{"0", {{"name", "0"}, {"desc", "default_pg"}, {"ranks", ranks}}}}},
          {"pg_status", json::object()},
          {"entries", std::move(entries)}};
}

}  // namespace shardscope::testing
