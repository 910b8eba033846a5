#pragma once
// `shardscope import ...`: bringing other tools' records in as shardscope traces.

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "commands.hpp"

namespace shardscope::app {

/// `shardscope import debugmode DUMP`.
struct ImportDebugModeArgs {
  std::string dump;       ///< DebugMode.debug_string() text or DebugMode.save_logs JSON
  MeshArgs mesh;          ///< the job's mesh (the dump does not print it)
  std::string trace_dir;  ///< -o; empty: judge only, no replay and no trace
  bool json = false;
  bool strict = false;  ///< exit 1 when any verdict is not "same"
  bool force = false;   ///< --force: replace a trace already in the -o directory
  int64_t max_replay_elements = int64_t{1} << 24;
};

/// Imports, prints the per-redistribute report (text or JSON) and returns 0, or 1 with --strict
/// when a verdict is not "same". Throws shardscope::Error (bad input: exit 2).
int RunImportDebugMode(const ImportDebugModeArgs& args, std::ostream& out);
/// A DebugMode dump's bytes (a regular file, at most 1 GiB); errors name `command` and the path.
std::string ReadDebugModeText(const std::string& path, const std::string& command);

/// `shardscope import kineto PATH...`: PyTorch profiler traces (docs/kineto.md).
struct ImportKinetoArgs {
  std::vector<std::string> paths;  ///< trace files (.json, .json.gz) and/or directories of them
  std::string output;              ///< -o: write the trace (rank-<R>.jsonl) here; "" prints only
  bool json = false;
  bool force = false;  ///< --force: replace a trace already in the -o directory
};

/// Reads the traces, matches their collectives across ranks and prints the report (text or the
/// JSON of docs/kineto.md); returns 0. Throws shardscope::Error (bad input: exit 2).
int RunImportKineto(const ImportKinetoArgs& args, std::ostream& out);

}  // namespace shardscope::app
