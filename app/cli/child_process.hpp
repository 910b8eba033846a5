#pragma once
// The benches' child processes (bench import, bench load, bench triage): a function or a command
// run in a forked child, so that its wall time and peak RSS (wait4) are its own.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace shardscope::app {

struct ChildRun {
  double seconds = 0;      ///< wall time from the fork to the child's exit
  double cpu_seconds = 0;  ///< the child's user + system time (a loaded machine stretches the wall)
  int64_t peak_rss = 0;    ///< bytes: the child's ru_maxrss
  int status = 0;          ///< exit status; 128 when a signal ended it
  std::string output;      ///< RunInChild: what fn returned, or the message of what it threw
  bool Ok() const { return status == 0; }
};

/// Runs fn() in a forked child and returns what it returned (status 0); an exception fn throws
/// becomes status 2 with its message as the output. `who` names the bench in internal errors.
ChildRun RunInChild(const std::function<std::string()>& fn, const std::string& who);

/// Runs argv[0] (looked up on PATH) with argv in a child, its output left as it is; status 127
/// when it cannot be started. `who` names the bench in internal errors.
ChildRun RunCommand(const std::vector<std::string>& argv, const std::string& who);

}  // namespace shardscope::app
