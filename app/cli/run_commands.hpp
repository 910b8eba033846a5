#pragma once
// `shardscope run` (execute a scenario, write a trace) and `shardscope show` (summarize a trace).

#include <cstdint>
#include <iosfwd>
#include <string>

namespace shardscope::app {

/// `shardscope run SCENARIO.json`.
struct RunArgs {
  std::string scenario;  ///< path of the scenario file
  std::string backend = "local";
  int64_t ranks = 0;      ///< 0: the mesh size; otherwise must equal it
  std::string trace_dir;  ///< --trace DIR; empty: $SHARDSCOPE_TRACE or no trace
  bool verify = false;
  int repeat = 1;
  bool checksums = false;
  double timeout_s = 30.0;
  bool force = false;  ///< --force: replace a trace already in the trace directory
};

/// `shardscope show TRACE`.
struct ShowArgs {
  std::string path;  ///< a trace directory or one rank file
  bool json = false;
  int jobs = 0;  ///< --jobs: threads reading rank files, 0 = every core
};

/// Runs the scenario and prints one line per executed step. Throws shardscope::Error.
int RunRun(const RunArgs& args, std::ostream& out);
/// Prints the trace summary; load warnings go to stderr. Throws shardscope::Error.
int RunShow(const ShowArgs& args, std::ostream& out);

}  // namespace shardscope::app
