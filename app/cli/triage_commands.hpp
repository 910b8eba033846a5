#pragma once
// `shardscope triage` and `shardscope bench triage` (docs/triage.md). Exit codes: 0 clean, 1 a hang,
// mismatch or straggler found, 2 bad input.

#include <iosfwd>
#include <string>
#include <vector>

namespace shardscope::app {

/// `shardscope triage PATH... [--json] [--mesh dp=8,tp=8]`.
struct TriageArgs {
  std::vector<std::string> paths;  ///< dump directories, dump files, shardscope traces, DebugMode logs
  std::string mesh;                ///< --mesh NAME=EXTENT,...: names the mesh dim a group spans
  bool json = false;
  int jobs = 0;  ///< --jobs: threads reading dump files, 0 = every core
};

/// `shardscope bench triage CASE...`.
struct BenchTriageArgs {
  std::vector<std::string> cases;  ///< directories written by tests/trace/make_fr_faults.py
  int jobs = 0;
  std::string python = "python3";  ///< --python: the interpreter of the pickle.load baseline
  bool python_baseline = true;     ///< false with --no-python
};

/// Prints the verdict, root causes, evidence and wavefront (or --json); returns 0 when clean, 1
/// otherwise. Bad input throws Error(kInvalidInput).
int RunTriage(const TriageArgs& args, std::ostream& out);
/// Per case: triage in a forked child (time, peak RSS), culprits against the case's
/// triage_expected.json, Python's pickle.load of the same files; then precision and recall.
int RunBenchTriage(const BenchTriageArgs& args, std::ostream& out);

}  // namespace shardscope::app
