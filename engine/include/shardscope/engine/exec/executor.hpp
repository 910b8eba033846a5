#pragma once
// Executor: runs a Plan on one rank's local tensor through a Communicator [PyTorch
// redistribute_local_tensor, ShardTensor's shape-metadata rules]. Every transform moves data
// computed from index-set intersections of the layouts before and after it (layout.hpp), so
// uneven and empty shards are exact. Also Distribute / FullTensor, the definition the property
// tests check against.

#include <cstdint>
#include <string>
#include <vector>

#include "shardscope/engine/comm/communicator.hpp"
#include "shardscope/engine/core/spec.hpp"
#include "shardscope/engine/core/tensor.hpp"
#include "shardscope/engine/plan/plan.hpp"

namespace shardscope::trace {
class Writer;
}

namespace shardscope::engine {

/// Where S->S receive shapes come from (ShardTensor sharding_shapes): `kKnown` computes them
/// locally until the first hop that changed the tensor, then negotiates; `kInfer` always
/// negotiates with a shape_exchange collective first.
enum class ShapeMode { kKnown, kInfer };
/// "known", "infer".
std::string_view ShapeModeName(ShapeMode mode);

/// One collective the executor ran (for tests, benchmarks and the CLI).
struct ExecutedCollective {
  int64_t step = 0;  ///< index into plan.optimized
  Group group;
  CollectiveStats stats;
  bool negotiated = false;  ///< true for a shape-negotiation exchange
  bool halo = false;        ///< true for a conv's halo exchange (an all_to_all of an op, not a step)
};

/// Execution knobs. Pointers are borrowed and may be null.
struct ExecuteOptions {
  ShapeMode shapes = ShapeMode::kKnown;
  /// Trace sink of this rank (nullptr = tracing off, which costs one branch per event site).
  trace::Writer* trace = nullptr;
  /// Redistribute id written to the trace (the same logical redistribute has the same id on
  /// every rank) and the tensor's name.
  int64_t trace_id = 0;
  std::string tensor_name;
  /// For an implicit redistribute of an op's input: the op's id and the input's index (written
  /// to the trace so the redistribute links to the op); -1 for an explicit redistribute.
  int64_t op_id = -1;
  int64_t op_input = -1;
  /// With a trace, also record checksums of the local shard before and after (costs a pass over
  /// the data, so off by default).
  bool checksums = false;
  /// When set, every collective run is appended here.
  std::vector<ExecutedCollective>* collectives = nullptr;
};

/// Runs every transform of plan.optimized on rank `rank` (== comm.rank()) and returns the local
/// tensor of `dst`. `in` must have the local shape of `src` at this rank. Every rank of the mesh
/// calls it with the same specs and the plan MakePlan gave it. Rules:
/// - size-1 groups and src == dst steps are skipped (no collective), as in PyTorch;
/// - Partial->R all_reduce and Partial->S reduce_scatter divide by avg_scale (flattened avg);
/// - R->P(op) is local: sum gives x/n for floats and, for integers, x on group index 0 and 0
///   elsewhere (exact); product gives x on index 0 and 1 elsewhere; avg, min and max keep x;
/// - explicit per-rank sizes: a mesh dim keeps src's sizes until its first step, uses the chunk
///   rule between its first and last step, and dst's sizes after its last step.
/// Throws Error(kInvalidInput) for mismatched inputs, Error(kUnsupported) for S->P or P(a)->P(b),
/// Error(kInternal) when the plan does not lead to dst, and the communicator's errors.
LocalTensor Redistribute(Communicator& comm, int64_t rank, const LocalTensor& in, const TensorSpec& src,
                         const TensorSpec& dst, const Plan& plan, const ExecuteOptions& options = {});

/// Rank `rank`'s local tensor of `global` under `spec`. Partial mesh dims get an exact
/// decomposition (applied per Partial mesh dim, in mesh-dim order, to the value so far, with
/// c = the rank's coordinate on that dim, n = its size and g = the element's global flat index):
/// sum: c>0 gets ((g+c*c) mod 3) - 1, c=0 gets x minus the others; avg: x; min: x + c;
/// max: x - c; product: x at c=0, 1 elsewhere. Exact for integers and small-integer floats.
/// Throws Error(kInvalidInput) when `global` does not match the spec's shape or dtype.
LocalTensor Distribute(const LocalTensor& global, const TensorSpec& spec, int64_t rank);

/// The global tensor from every rank's shard (indexed by rank): shards are placed by their
/// layouts and Partial mesh dims reduced with their op over the Partial group in group order
/// (sum+avg mixes sum and divide by the product of the avg dims' sizes). Replicas are not
/// compared: the coordinate-0 replica is used. Throws Error(kInvalidInput) on shape mismatch.
LocalTensor FullTensor(const std::vector<LocalTensor>& shards, const TensorSpec& spec);

}  // namespace shardscope::engine
