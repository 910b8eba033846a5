#pragma once
// `shardscope diff` of two runs read from PyTorch profiler (Kineto) traces (docs/kineto.md,
// "Comparing two runs"): step time, and per process group and kind of collective the count, bytes
// and time. Pure functions over two Models.

#include <string>

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

/// Two lines, one per run: ranks, profiled steps, mean step time, collectives, bytes, time. Pure.
std::string FormatKinetoRuns(const Model& baseline, const Model& candidate);

}  // namespace shardscope::trace
