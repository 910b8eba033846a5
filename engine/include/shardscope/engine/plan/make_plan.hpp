#pragma once
// The planning entry point: validate, pick the planner, optimize, fill notation and costs.

#include <cstdint>

#include "shardscope/engine/core/spec.hpp"
#include "shardscope/engine/plan/plan.hpp"
#include "shardscope/engine/plan/plan_options.hpp"

namespace shardscope::engine {

/// Plans a redistribute for `rank`: validates (same mesh, supported transitions: no S->P, no
/// P(a)->P(b), no mixed partial ops other than sum+avg), picks the planner by PyTorch's rule,
/// optimizes, fills notation and costs. Throws Error(kUnsupported / kInvalidInput).
Plan MakePlan(const TensorSpec& src, const TensorSpec& dst, int64_t rank, const PlanOptions& options);

}  // namespace shardscope::engine
