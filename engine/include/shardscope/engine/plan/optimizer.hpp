#pragma once
// The flattening optimizer: merges consecutive same-kind collectives into one over a registered
// flattened sub-mesh, and says why every other candidate merge was not made.

#include <vector>

#include "shardscope/engine/core/spec.hpp"
#include "shardscope/engine/plan/plan.hpp"
#include "shardscope/engine/plan/plan_options.hpp"

namespace shardscope::engine {

/// Flattening optimizer (PyTorch R-new _optimize_transform_infos): merged transforms plus the
/// reason for every merge not made.
struct OptimizeResult {
  std::vector<Transform> transforms;
  std::vector<SkippedMerge> skipped;
};
OptimizeResult OptimizeTransforms(const std::vector<Transform>& transforms, const TensorSpec& src,
                                  const PlanOptions& options);

}  // namespace shardscope::engine
