#pragma once
// The ops of an imported DebugMode dump that shardscope implements: the aten name -> shardscope
// op mapping (the table in docs/import.md) and the judgement of one op against shardscope's
// sharding propagation.

#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "shardscope/engine/core/spec.hpp"
#include "shardscope/engine/ops/ops.hpp"
#include "shardscope/program/debugmode_import.hpp"

namespace shardscope::program {

/// An op shardscope computes: the call (inputs "i0", "i1", ... in the order of DumpOp::inputs,
/// "" for an absent optional one; outputs "o0", ... with "" for those not computed) and the specs
/// its inputs had when PyTorch ran it (after the recorded redistributes), nullopt when absent.
struct ComputableOp {
  engine::OpCall call;
  std::vector<std::optional<engine::TensorSpec>> inputs;
  std::vector<int64_t> dump_inputs;         ///< per call input: its index into DumpOp::inputs, -1 when absent
  std::vector<engine::TensorSpec> outputs;  ///< shardscope's specs of the computed outputs, in order
};

/// Maps a dump op onto shardscope's op when the aten name and arguments have exactly its
/// semantics. Returns nullopt when they do not; `why` then says why for a known name with other
/// arguments ("" for a name shardscope does not implement).
std::optional<ComputableOp> MapDumpOp(const DumpOp& op, std::string& why);

/// Judges op `j` of `dump`: fills `out` (verdict, placements, reason) and, when shardscope's
/// strategy keeps the inputs as PyTorch placed them, `run` (what the replay computes).
void JudgeOp(const DebugModeDump& dump, size_t j, const engine::Mesh& mesh,
             const engine::PlanOptions& options, ImportedOp& out, std::optional<ComputableOp>& run);

/// Judges every op of `dump`, once per distinct call (a training loop repeats the same calls):
/// fills `out` (aligned with dump.ops) and returns per op what the replay computes, nullptr for
/// nothing; the ComputableOps live in `storage`.
std::vector<const ComputableOp*> JudgeOps(const DebugModeDump& dump, const engine::Mesh& mesh,
                                          const engine::PlanOptions& options, std::vector<ImportedOp>& out,
                                          std::deque<ComputableOp>& storage);

}  // namespace shardscope::program
