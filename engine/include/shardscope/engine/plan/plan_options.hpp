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
  bool operator==(const PlanOptions&) const = default;
};

}  // namespace shardscope::engine
