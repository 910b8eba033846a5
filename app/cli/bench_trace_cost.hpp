#pragma once
// Private to bench redistribute: what tracing costs a redistribute, resolved to about a percent.

#include <cstdint>
#include <filesystem>
#include <string>

#include "shardscope/engine/comm/mpi_backend.hpp"
#include "shardscope/engine/core/layout.hpp"

namespace shardscope::app::bench_cpu {

/// Tracing's cost on one redistribute (src -> dst on ranks 0..n-1), measured inside one world:
/// blocks of `block_iters` redistributes run on the same ranks, plans and buffers in groups of six
/// (untraced, background, deferred, deferred, background, untraced: symmetric, so a linear drift
/// within a group falls on every kind alike). Each block is timed by rank 0 from a barrier to a
/// barrier; a traced block is then flushed outside its time.
/// - background: the trace writer of a job (TraceSession, Durability::kBackground); its thread
///   encodes and writes beside the ranks, so on a machine with no idle core its work is in the time.
/// - deferred (Durability::kDeferred): the events wait in memory until the flush after the block,
///   so the time holds only what the ranks themselves pay to capture them: tracing's cost where a
///   spare core writes the trace.
/// Each figure is the median over the groups of (traced - untraced) / untraced; *_ci is the
/// half-width of its 95% interval (1.58 IQR / sqrt(groups), McGill et al. 1978).
struct TraceCost {
  double plain_s = 0;                  ///< median untraced seconds per redistribute
  double cost = 0, cost_ci = 0;        ///< background
  double capture = 0, capture_ci = 0;  ///< deferred
  double cpu_us = 0;  ///< median (background - untraced) process CPU microseconds per redistribute
  int groups = 0;
  int block_iters = 0;
};

/// Iterations per block for a destination shard of `bytes` per rank: about 1 GiB moved per block
/// (~35 ms here at 1 MiB, long against the background thread's 5 ms period), clamped to
/// [20, 5000]; `requested` > 0 overrides.
int TraceBlockIterations(int64_t bytes, int requested);

/// What the background and deferred blocks run instead of traced redistributes (bench redistribute
/// --calibrate): the method's checks on this machine.
struct TraceCostCheck {
  /// false: they run untraced (an A/A check: what the method reads where tracing costs nothing,
  /// i.e. its bias and scatter here).
  bool traced = true;
  /// > 0: every rank also busy-waits this long on the clock after each redistribute of those
  /// blocks (with traced false: what a known amount of extra CPU per rank and redistribute,
  /// nothing else, costs the redistribute's time here).
  int64_t work_ns = 0;
};

/// The extra work of the calibration's A/B row: about what a rank's own capture of one
/// redistribute costs its thread (bench trace's engine line).
inline constexpr int64_t kCalibrationWorkNs = 250;

/// Runs the measurement; `mpi` null: n local threads, else this process is one rank of the MPI
/// job (every process returns rank 0's figures only on rank 0). Traces go to `trace_dir`.
TraceCost MeasureTraceCost(engine::MpiWorld* mpi, int64_t n, const engine::TensorSpec& src,
                           const engine::TensorSpec& dst, const std::string& name, int block_iters,
                           int groups, const std::filesystem::path& trace_dir, TraceCostCheck check = {});

}  // namespace shardscope::app::bench_cpu
