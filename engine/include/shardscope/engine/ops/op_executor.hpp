#pragma once
// Runs one op on one rank [PyTorch DTensor dispatch: propagate, redistribute inputs, local op]:
// the implicit redistributes its chosen strategy needs (traced, each linked to the op), the
// halo exchange of a spatially sharded conv (a traced "halo_exchange" collective), the local
// kernel, and the op's trace event.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "shardscope/engine/comm/communicator.hpp"
#include "shardscope/engine/exec/executor.hpp"
#include "shardscope/engine/ops/ops.hpp"
#include "shardscope/engine/plan/planner.hpp"

namespace shardscope::trace {
class Writer;
}

namespace shardscope::engine {

struct OpExecuteOptions {
  trace::Writer* trace = nullptr;  ///< nullptr: no trace
  int64_t op_id = 0;               ///< the op's sequence number (same on every rank)
  int64_t step = 0;                ///< the program step that called it
  /// Implicit redistributes take their trace ids from here (incremented per redistribute).
  int64_t* next_redistribute_id = nullptr;
  PlanCache* cache = nullptr;  ///< nullptr: plan without caching
  PlanOptions plan_options;
  ShapeMode shapes = ShapeMode::kKnown;
  bool checksums = false;
  /// When set, every collective run (implicit redistributes and halo exchanges) is appended.
  std::vector<ExecutedCollective>* collectives = nullptr;
};

/// Runs `call` on rank `rank` given the inputs' current specs and local tensors (nullptr for
/// absent optional inputs) and the decision PropagateOp made for those specs; returns the
/// outputs' local tensors (nullopt for outputs not requested), laid out as decision.outputs.
/// Every rank of the mesh calls it with the same call, specs and decision.
std::vector<std::optional<LocalTensor>> ExecuteOp(Communicator& comm, int64_t rank, const OpCall& call,
                                                  const OpDecision& decision,
                                                  const std::vector<const TensorSpec*>& input_specs,
                                                  const std::vector<const LocalTensor*>& inputs,
                                                  const OpExecuteOptions& options);

/// The conv reference on a global tensor: pads `dim` with the halo of zeros on both sides and
/// runs the kernel, so that its result is the definition the sharded conv is checked against.
LocalTensor ConvGlobal(const OpCall& call, const LocalTensor& x);

/// The op's outputs on the unsharded global tensors (nullptr for absent inputs): the reference
/// a sharded run must equal.
std::vector<std::optional<LocalTensor>> ComputeOpGlobal(const OpCall& call,
                                                        const std::vector<const LocalTensor*>& inputs);

}  // namespace shardscope::engine
