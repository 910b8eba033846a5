#pragma once
// Knobs that change a plan: which planner, whether to flatten, the cost model's topology and
// the uneven all_gather guard.

#include <cstdint>

namespace shardscope::engine {

enum class PlannerChoice { kAuto, kGreedy, kGraph };

/// Knobs that change a plan.
struct PlanOptions {
  PlannerChoice planner = PlannerChoice::kAuto;
  bool optimize = true;      ///< run the flattening optimizer
  int devices_per_host = 8;  ///< PyTorch MeshTopoInfo num_devices_per_host
  /// Refuse to flatten an all_gather over uneven shards (PyTorch #194457 corrupts data there);
  /// on by default, reported as uneven_tensor_shape. Documented divergence from PyTorch.
  bool guard_uneven_all_gather = true;
  /// Allow a target Partial on a mesh dim whose source is not that same Partial (R -> P). PyTorch's
  /// public DTensor.redistribute refuses it ("redistributing to Partial is for internal use
  /// only!"); its internal callers (ops' sharding strategies, Redistribute.apply, imported dumps)
  /// use it. Off by default; when on and used, the plan's planner_reason says so.
  bool internal_partial_target = false;
  bool operator==(const PlanOptions&) const = default;
};

}  // namespace shardscope::engine
