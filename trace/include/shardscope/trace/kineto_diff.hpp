#pragma once
// `shardscope diff` of two runs read from PyTorch profiler (Kineto) traces (docs/kineto.md,
// "Comparing two runs"): step time, and per process group and kind of collective the count, bytes
// and time. Pure functions over two Models.

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "shardscope/trace/diff.hpp"
#include "shardscope/trace/model.hpp"

namespace shardscope::trace {

/// True when every rank of `model` was read from a profiler trace (header backend "kineto").
bool IsKinetoModel(const Model& model);

/// Compares two profiler runs: ranks and profiled steps (plan), the mean ProfilerStep time (time),
/// and per (process group, kind) of the collectives matched across ranks (AnalyzeKineto): added,
/// removed or a different count (collectives), total bytes S (bytes), total time t (time). A time
/// is reported when it changed by more than options.time_threshold_pct (5% when unset) and fails
/// only when that was set and it grew. Pure.
DiffResult DiffKineto(const Model& baseline, const Model& candidate, const DiffOptions& options);

/// One collective that one profiler run holds and the other lacks, or holds with another size or
/// dtype. Collectives are matched per process group and profiled step (the k-th step of one run
/// with the k-th of the other) in their order within the step, as DiffKinetoCollectives says.
struct KinetoCollectiveChange {
  std::string change;  ///< "added", "removed" or "changed" (size and/or dtype)
  DiffCategory category = DiffCategory::kCollectives;  ///< kBytes for a size change, else kCollectives
  bool failing = false;                                ///< category is in --fail-on
  std::string process_group;
  std::string kind;
  int64_t baseline_step = -1, candidate_step = -1;  ///< ProfilerStep numbers (-1: outside the steps)
  /// 1-based place among the group's collectives of that step in each run; 0 where the run lacks it.
  int64_t baseline_position = 0, candidate_position = 0;
  int64_t baseline_seq = -1, candidate_seq = -1;      ///< sequence numbers in the group (-1: absent)
  int64_t baseline_bytes = -1, candidate_bytes = -1;  ///< nccl-tests' S (-1: absent)
  std::string baseline_dtype, candidate_dtype;
};

/// The collectives of two profiler runs aligned one by one.
struct KinetoCollectiveDiff {
  std::vector<KinetoCollectiveChange> changes;  ///< by baseline step, process group, position
  int64_t baseline = 0, candidate = 0;          ///< collectives in each run
  int64_t same = 0;                             ///< paired with the same kind, size and dtype
  bool Failed() const;                          ///< a change is failing
};

/// Aligns the collectives of two profiler runs (AnalyzeKineto's, matched across ranks). Per
/// process group and step (steps paired in the order they were profiled, collectives outside every
/// step with each other), each run's collectives in launch order are aligned as a diff aligns lines:
/// the longest common subsequence of (kind, bytes, dtype, p2p ranks) pairs equal collectives; between
/// two such pairs, the others are paired by kind in order and differ in size or dtype ("changed");
/// the rest are "added" (candidate only) or "removed" (baseline only). Added, removed and a dtype
/// change are category collectives, a size change bytes; failing when options.fail_on has it. Pure.
KinetoCollectiveDiff DiffKinetoCollectives(const Model& baseline, const Model& candidate,
                                           const DiffOptions& options);

/// The changes as a table (at most `max_rows` rows, then a line naming how many more) and a summary
/// line: "collectives one by one: N same, A added, R removed, C changed". Pure.
std::string FormatKinetoCollectiveDiff(const KinetoCollectiveDiff& diff, int64_t max_rows = 50);

/// {"baseline": n, "candidate": n, "same": n, "added": n, "removed": n, "changed": n, "failed": b,
/// "changes": [{"change", "category", "failing", "process_group", "kind", "baseline_step",
/// "candidate_step", "baseline_position", "candidate_position", "baseline_seq", "candidate_seq",
/// "baseline_bytes", "candidate_bytes", "baseline_dtype", "candidate_dtype"}]} with null for what a
/// run lacks. Pure.
nlohmann::json KinetoCollectiveDiffJson(const KinetoCollectiveDiff& diff);

/// Two lines, one per run: ranks, profiled steps, mean step time, collectives, bytes, time. Pure.
std::string FormatKinetoRuns(const Model& baseline, const Model& candidate);

}  // namespace shardscope::trace
