#pragma once
// `shardscope bench` (collectives and redistributes on the local backend): benchmark programs
// that print figures as ratios against baselines measured in the same run (memcpy of the same
// bytes, tracing off, negotiated shapes), never pass/fail timings.

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

namespace shardscope::app {

/// `shardscope bench comm` / `shardscope bench redistribute`.
struct BenchCommArgs {
  int64_t ranks = 4;                     ///< ranks as threads (local, cuda backends)
  std::string sizes = "64K,1M,16M,64M";  ///< per-rank bytes, K/M/G suffixes
  int iterations = 0;                    ///< timed iterations per size; 0 picks by size
  std::string backend = "local";         ///< local, mpi, cuda or nccl (comm only for the GPU ones)
  int trace_groups = 7;                  ///< bench redistribute: groups behind each trace cost figure
  bool calibrate = false;                ///< bench redistribute: an A/A row (tracing off) under each case
};

/// `shardscope bench load PATH`.
struct BenchLoadArgs {
  std::string path;     ///< trace directory or rank file
  int jobs = 0;         ///< threads of the parallel reader, 0 = every core
  int repetitions = 3;  ///< loads per configuration (median reported)
};

/// Loads PATH with the reference reader (one thread) and the fast reader (1 and `jobs` threads),
/// each in a forked child; prints time, MB/s, events/s, peak RSS and model bytes per event.
/// Throws Error(kInvalidInput) for a missing or unreadable trace.
int RunBenchLoad(const BenchLoadArgs& args, std::ostream& out);

/// `shardscope bench import`.
struct BenchImportArgs {
  std::string repo = ".";                                 ///< repository root (generators, sample log)
  std::string work_dir = "/tmp/shardscope-bench-import";  ///< where inputs and traces are written
  std::string ranks = "256,4096";                         ///< Flight Recorder world sizes
  int64_t seqs = 2000;                                    ///< entries per rank
  std::string lines = "100000,1000000";                   ///< DebugMode log lengths
  std::string kineto_steps = "400";                       ///< profiler steps of the one-rank Kineto traces
  bool json = true;                                       ///< also the JSON form of the dumps
  bool write = true;                                      ///< also import -o and show of the trace
  bool keep = false;                                      ///< keep the generated inputs
};

/// Generates the inputs, runs check / import / show on them as child processes beside Python
/// reading the same files, and prints time ratios, bytes per event and peak RSS against input.
/// Throws Error(kInvalidInput) for bad options or a failing tool.
int RunBenchImport(const BenchImportArgs& args, std::ostream& out);

/// `shardscope bench trace`.
struct BenchTraceArgs {
  int repetitions = 31;      ///< interleaved on/off batches
  int redistributes = 2000;  ///< redistributes (5 events each) per batch
};

/// The trace writer's cost per event: batches with tracing on and off, interleaved; prints the
/// median and the 10th-90th percentile of each and the bytes per event on disk.
int RunBenchTrace(const BenchTraceArgs& args, std::ostream& out);

/// Parses "64K,1M,16M" into bytes; throws Error(kInvalidInput) naming --sizes.
std::vector<int64_t> ParseByteSizes(const std::string& text);
/// Collectives: algbw/busbw (nccl-tests definitions) beside a memcpy of the same bytes.
int RunBenchComm(const BenchCommArgs& args, std::ostream& out);
/// Whole redistributes: bandwidth vs memcpy, tracing on vs off, known vs negotiated shapes.
int RunBenchRedistribute(const BenchCommArgs& args, std::ostream& out);

}  // namespace shardscope::app
