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

#include "shardscope/engine/plan/plan.hpp"
#include "shardscope/program/scenario.hpp"

namespace shardscope::program {

struct RunOptions {
  /// "local" (ranks as threads), "mpi" (this process is one rank of an mpirun job whose size
  /// must equal the mesh size; every process calls RunScenario), "cuda" (ranks as threads, virtual
  /// ranks sharing one GPU) or "nccl" (as mpi, one GPU per process, data over NCCL).
  std::string backend = "local";
  std::filesystem::path trace_dir;           ///< empty: no trace
  bool verify = false;                       ///< compare every result with the definition
  int repeat = 1;                            ///< run the step list this many times
  bool checksums = false;                    ///< record shard checksums in the trace
  std::chrono::milliseconds timeout{30000};  ///< collective watchdog
  /// Called on rank 0 after each executed step with (done, total); may be empty.
  std::function<void(int64_t done, int64_t total)> progress;
};

/// What one step did (rank 0's plan; figures over all ranks). With repeat > 1 the steps of the
/// first repetition have a row each, and each step of the later repetitions (which all start
/// where the previous one ended, so they run the same plans) has one row summing them all.
struct StepReport {
  size_t step = 0;        ///< index into scenario.steps
  int repetition = 0;     ///< 0-based: the first repetition this row stands for
  int repetitions = 1;    ///< how many repetitions it stands for (bytes and seconds are their sum)
  bool backward = false;  ///< the gradient redistribute of the step
  std::string tensor;
  engine::Placements src, dst;
  engine::Plan plan;                           ///< rank 0's plan
  std::map<std::string, int64_t> collectives;  ///< kind -> count run by rank 0
  int64_t bytes_moved = 0;                     ///< bytes received over all ranks
  double seconds = 0;                          ///< slowest rank's wall time
  bool verified = false;                       ///< true when checked and equal
  /// Op steps only: the op's name and arguments, its outputs' placements (requested outputs,
  /// in order; `tensor` lists their names) and how many implicit redistributes it ran.
  std::string op;
  std::string op_args;
  std::vector<engine::Placements> op_outputs;
  int64_t implicit_redistributes = 0;
};

struct RunReport {
  std::vector<StepReport> steps;
  double seconds = 0;  ///< whole run wall time
  int64_t world = 0;
  /// This process's rank: 0 for the local backend; under MPI every process gets the same report
  /// and only rank 0 should print it.
  int64_t rank = 0;
  /// Per rank: estimated offset of its steady clock to rank 0's (ns, written to its trace header)
  /// and the round-trip time of the ping-pong sample it came from; zeros for the local backend.
  std::vector<int64_t> clock_offset_ns;
  std::vector<int64_t> clock_rtt_ns;
};

/// What a run will hold in memory at its peak, estimated before anything is allocated.
struct MemoryEstimate {
  /// Bytes this process needs: the global reference data of every tensor (each process keeps
  /// it), plus for every rank this process runs (all of them for local/cuda, one for mpi/nccl:
  /// the largest) its live shards (each tensor at its largest placement along the run) and the
  /// staging of its largest step (input + output shard, plus a verification copy of the output;
  /// an op: 2 x its inputs, redistributed inputs and outputs); with verify, a Partial result or
  /// an op output is gathered on rank 0: 2 x the global tensor.
  double process_bytes = 0;
  /// The tensor with the largest shard on any rank, its largest shard's bytes and its location.
  std::string largest_tensor;
  double largest_tensor_bytes_per_rank = 0;
  double largest_tensor_global_bytes = 0;
  std::string largest_tensor_where;
};

/// The estimate for `scenario` run with `options` (backend, verify, repeat). Pure arithmetic over
/// layouts: O(ranks x placements along the run), no tensor allocated. Throws like RunScenario
/// for a bad step.
MemoryEstimate EstimateMemory(const Scenario& scenario, const RunOptions& options);

/// Memory this process can still allocate: MemAvailable of /proc/meminfo, lowered to the cgroup
/// limit minus usage when one is set; SHARDSCOPE_MEMORY_LIMIT (bytes) overrides it (tests,
/// shared nodes). 0 when unknown (then nothing is refused).
double AvailableMemoryBytes();

/// Executes `scenario`. Before allocating it compares EstimateMemory with AvailableMemoryBytes and
/// refuses with Error(kInvalidInput) naming the largest tensor, its bytes per rank and its
/// file:line:column. Throws Error(kInvalidInput) for a bad backend or options (an MPI job
/// whose size is not the mesh size, mpi in a build without MPI, cuda/nccl in a build without
/// CUDA/NCCL or on a machine without a GPU), the engine's errors (a failed
/// verification is Error(kInternal) naming the step, rank and first differing element, thrown
/// on every rank), and the backend's (timeouts name the missing ranks). Under MPI an error that
/// only some ranks see aborts the job (MPI cannot cancel collectives) after printing it.
RunReport RunScenario(const Scenario& scenario, const RunOptions& options);

}  // namespace shardscope::program
