#pragma once
// Runs a scenario end to end on a backend: distributes each tensor's seeded data, plans and
// executes every step on every rank, writes the trace, and optionally verifies each result
// against the definition (Distribute of the same global data). Used by `shardscope run`, the
// GUI sandbox, the samples and the benchmarks.

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "shardscope/engine/plan.hpp"
#include "shardscope/engine/scenario.hpp"

namespace shardscope::engine {

struct RunOptions {
  std::string backend = "local";             ///< only "local" in this build
  std::filesystem::path trace_dir;           ///< empty: no trace
  bool verify = false;                       ///< compare every result with the definition
  int repeat = 1;                            ///< run the step list this many times
  bool checksums = false;                    ///< record shard checksums in the trace
  std::chrono::milliseconds timeout{30000};  ///< collective watchdog
  /// Called on rank 0 after each executed step with (done, total); may be empty.
  std::function<void(int64_t done, int64_t total)> progress;
};

/// What one executed step did (rank 0's plan; figures over all ranks).
struct StepReport {
  size_t step = 0;        ///< index into scenario.steps
  int repetition = 0;     ///< 0-based
  bool backward = false;  ///< the gradient redistribute of the step
  std::string tensor;
  Placements src, dst;
  Plan plan;                                   ///< rank 0's plan
  std::map<std::string, int64_t> collectives;  ///< kind -> count run by rank 0
  int64_t bytes_moved = 0;                     ///< bytes received over all ranks
  double seconds = 0;                          ///< slowest rank's wall time
  bool verified = false;                       ///< true when checked and equal
};

struct RunReport {
  std::vector<StepReport> steps;
  double seconds = 0;  ///< whole run wall time
  int64_t world = 0;
};

/// Executes `scenario`. Throws Error(kInvalidInput) for a bad backend or options, the engine's
/// errors (a failed verification is Error(kInternal) naming the step, rank and first differing
/// element), and the backend's (timeouts name the missing ranks).
RunReport RunScenario(const Scenario& scenario, const RunOptions& options);

/// Checksum of a local tensor's bytes (FNV-1a 64), as written to traces.
uint64_t Checksum(const LocalTensor& tensor);

}  // namespace shardscope::engine
