#pragma once
// Replay of an imported dump's redistributes on the local backend and the trace it writes.

#include <optional>
#include <vector>

#include "debugmode_ops.hpp"
#include "shardscope/engine/core/spec.hpp"
#include "shardscope/engine/plan/plan.hpp"
#include "shardscope/program/debugmode_import.hpp"

namespace shardscope::program {

/// A redistribute shardscope could plan: its specs and rank 0's plan.
struct Replayable {
  engine::TensorSpec src, dst;
  engine::Plan plan;
  engine::PlanOptions options;  ///< as planned: an op input's takes PyTorch's internal path (R -> P allowed)
};

/// Replays every planned redistribute and computes every computable op (identical ones once)
/// with verification, and writes the trace to options.trace_dir; fills replayed / computed /
/// seconds / trace_id and turns replay failures into not_replayable (redistributes) and
/// not_computed (ops) verdicts. Throws Error(kInvalidInput) when the trace cannot be written.
void ReplayAndWriteTrace(ImportResult& result, const std::vector<std::optional<Replayable>>& replays,
                         const std::vector<const ComputableOp*>& ops, const ImportOptions& options);

}  // namespace shardscope::program
