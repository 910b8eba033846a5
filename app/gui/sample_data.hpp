#pragma once
// Sample traces made in memory from engine plans: the gallery's data and the sandbox's plan-only
// runs. Timings and bytes are synthetic (derived from plan costs and engine layouts), and the
// backend is named "plan-only" so nobody mistakes them for measurements.

#include <memory>
#include <string>
#include <vector>

#include "shardscope/engine/core/spec.hpp"
#include "shardscope/engine/plan/planner.hpp"
#include "shardscope/trace/model.hpp"

namespace shardscope::app::gui {

/// One redistribute to synthesize.
struct SampleRedistribute {
  std::string tensor;
  engine::TensorSpec src, dst;
  engine::PlanOptions options;
};

/// Builds a Model holding `items` (run one after another on every rank of the first item's mesh):
/// plans from engine::MakePlan per rank, per-step shapes and offsets from engine layouts, one
/// collective per non-local step with bytes from those layouts. Throws what MakePlan throws.
std::shared_ptr<trace::Model> ModelFromPlans(const std::vector<SampleRedistribute>& items,
                                             const std::string& source);

/// The gallery's sample: a 2x2 (dp, tp) mesh with a flattened sub-mesh, four redistributes
/// covering Shard, uneven Shard, Replicate, Partial, a flattened merge and a skipped merge.
std::shared_ptr<trace::Model> MakeSampleModel();

}  // namespace shardscope::app::gui
