#pragma once
// Replay of an imported dump's redistributes on the local backend and the trace it writes.

#include <optional>
#include <vector>

#include "shardscope/engine/core/spec.hpp"
#include "shardscope/engine/plan/plan.hpp"
#include "shardscope/program/debugmode_import.hpp"

namespace shardscope::program {

/// A redistribute shardscope could plan: its specs and rank 0's plan.
struct Replayable {
  engine::TensorSpec src, dst;
  engine::Plan plan;
};

/// Replays every planned redistribute (identical ones once) with verification and writes the
/// trace to options.trace_dir; fills replayed / seconds / trace_id and turns replay failures
/// into not_replayable verdicts. Throws Error(kInvalidInput) when the trace cannot be written.
void ReplayAndWriteTrace(ImportResult& result, const std::vector<std::optional<Replayable>>& replays,
                         const ImportOptions& options);

}  // namespace shardscope::program
