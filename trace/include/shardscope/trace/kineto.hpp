#pragma once
// Reading PyTorch profiler (Kineto) Chrome traces, one JSON or .json.gz file per rank, into the one
// trace Model (docs/kineto.md), and matching their collectives across ranks. Every NCCL collective
// becomes an ordinary Collective with a FlightRecord (process group, sequence number, sizes,
// dtypes), so `check` and `diff` apply Flight Recorder's rules to it; CPU ops become Op events.
// Headers say backend "kineto".

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "shardscope/trace/model.hpp"
#include "shardscope/trace/reader.hpp"

namespace shardscope::trace {

/// Largest single value (one trace event, distributedInfo, ...) the reader buffers, in bytes.
inline constexpr int64_t kMaxKinetoValueBytes = int64_t{64} << 20;

/// What one rank file held beyond the model's events: counts for `import kineto`.
struct KinetoRankInfo {
  int64_t rank = 0;
  int64_t world = 0;                           ///< distributedInfo.world_size, else the files' extent
  std::string file;                            ///< file name (no directory)
  std::map<std::string, int64_t> collectives;  ///< kind -> count (GPU kernels, else CPU records)
  bool counted_from_kernels = false;           ///< true when the rank has NCCL kernels
  int64_t kernels = 0;                         ///< GPU kernel events (cat "kernel"), NCCL or not
  int64_t nccl_kernels = 0;                    ///< of which NCCL kernels
  int64_t cpu_records = 0;                     ///< record_param_comms / nccl:* records of collectives
  int64_t ops = 0;                             ///< cpu_op events imported as ops
  int64_t steps = 0;                           ///< ProfilerStep#N annotations
  int64_t events = 0;                          ///< traceEvents elements
  int64_t bytes = 0;                           ///< uncompressed JSON bytes
  std::map<std::string, int64_t> unknown;      ///< events of an unknown category or phase, by name
  bool rank_from_file_name = false;            ///< distributedInfo had no rank
};

/// A Model read from Kineto traces plus what each file held.
struct KinetoImport {
  Model model;
  std::vector<KinetoRankInfo> ranks;  ///< sorted by rank
};

/// True when `name` ends in ".json" or ".json.gz" (Kineto's output names, e.g. rank-3.*.pt.trace.json).
bool IsKinetoFileName(const std::string& name);

/// True when `path` is a Kineto trace file (name as above, first bytes a JSON object holding
/// "traceEvents" or "schemaVersion" after inflating a gzip head) or a directory holding at least
/// one and no rank-<R>.jsonl. Reads a few KiB per file; never throws.
bool IsKinetoTrace(const std::filesystem::path& path);

/// The last run of digits in a file name with its extensions dropped ("rank-3.20260101.1003.pt.
/// trace.json" -> prefers the digits after "rank", else the first run), or -1. Used only when
/// distributedInfo has no rank.
int64_t KinetoRankOfFileName(const std::string& file_name);

/// Reads the files named by `paths` (files and/or directories of .json / .json.gz files), one rank
/// per file, streaming: memory per file is bounded by a few chunks of kMaxKinetoValueBytes at most,
/// not by its size. Unknown event categories are counted; a world larger than the files given is a
/// diagnostic naming the missing ranks; a rank taken from the file name is a warning. Throws
/// Error(kInvalidInput) naming the file and the byte offset for truncated or corrupt gzip, truncated
/// or malformed JSON, a top level that is not an object, a value over kMaxKinetoValueBytes; and
/// for two files of one rank, a file whose rank cannot be told, or no file at all. The model's op
/// records (Model::ops) are those of the trace `import kineto -o` writes (AddKinetoOpRecords).
KinetoImport ReadKineto(const std::vector<std::filesystem::path>& paths, const ReadOptions& options = {});

/// ReadKineto(...).model.
Model ReadKinetoModel(const std::vector<std::filesystem::path>& paths, const ReadOptions& options = {});

/// Gives every Op event of `model` its OpRecord in Model::ops (sorted by rank then op id), as the
/// shardscope reader does when it reads the trace `import kineto -o` wrote; ReadKineto calls it, so
/// a profiler directory and its imported trace are one model to every consumer. For models built
/// by hand; does nothing but Reindex when Model::ops is not empty. O(ops).
void AddKinetoOpRecords(Model& model);

/// One collective matched across the ranks of its process group.
struct KinetoCollective {
  std::string process_group;            ///< pg name
  std::vector<int64_t> group;           ///< global ranks of the group, group order
  int64_t seq = 0;                      ///< sequence number within the group (collectives and p2p apart)
  bool p2p = false;                     ///< send / recv / send_recv
  std::string kind;                     ///< of the lowest rank
  int64_t step = -1;                    ///< ProfilerStep#N of the lowest rank's CPU launch, -1 outside
  std::map<int64_t, int64_t> start_ns;  ///< rank -> GPU start (CPU time where no kernel)
  std::map<int64_t, int64_t> end_ns;    ///< rank -> GPU end
  int64_t last_rank = -1;               ///< the rank that started last (the others waited for it)
  std::map<int64_t, int64_t> wait_ns;   ///< rank -> latest start - its start
  int64_t time_ns = 0;                  ///< the last rank's duration: the transfer itself
  int64_t bytes = 0;                    ///< nccl-tests' S for this kind (docs/kineto.md)
  std::string dtype;                    ///< input dtype of the lowest rank ("Float", ...), "" unknown
  bool matched = false;                 ///< every member with a file holds it (p2p: two ranks do)
  /// rank -> position of its Collective in that rank's `events.Of<Collective>()` (in the RankTrace
  /// whose header.rank is that rank): the events the match is made of, for views that draw them.
  std::map<int64_t, int64_t> event;
};

/// Per (step, process group, kind): nccl-tests' figures over the matched collectives.
struct KinetoStepStat {
  int64_t step = -1;
  std::string process_group;
  int64_t group_size = 0;
  std::string kind;
  int64_t count = 0;
  int64_t bytes = 0;      ///< sum of S
  int64_t time_ns = 0;    ///< sum of t
  double algbw_gbps = 0;  ///< bytes / time, GB/s (1e9 bytes per second)
  double busbw_gbps = 0;  ///< algbw x nccl-tests' factor for the kind and group size
  int64_t wait_ns = 0;    ///< sum over collectives and ranks of the wait
};

/// The cross-rank view of a Kineto model.
struct KinetoAnalysis {
  std::vector<KinetoCollective> collectives;  ///< by (process group, p2p, seq)
  int64_t matched = 0;
  int64_t unmatched = 0;
  std::map<int64_t, int64_t> last_arrivals;  ///< rank -> collectives it arrived last at
  std::vector<KinetoStepStat> steps;         ///< by (step, process group, kind)
};

/// Matches the collectives of a Kineto model across ranks by (process group, sequence number)
/// and computes waits and per-step figures. Pure.
KinetoAnalysis AnalyzeKineto(const Model& model);

/// nccl-tests' bus bandwidth factor for `kind` on `n` ranks: all_reduce 2(n-1)/n; all_gather,
/// reduce_scatter, all_to_all (n-1)/n; broadcast, reduce, send, recv, send_recv 1; 0 otherwise.
double BusBandwidthFactor(const std::string& kind, int64_t n);

}  // namespace shardscope::trace
