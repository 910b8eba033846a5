// Gradient redistribute target: PyTorch R-new Redistribute.backward's Partial normalization
// (PRs #167686, #170147, #170355).

#include <string>

#include "shardscope/engine/plan/planner.hpp"
#include "shardscope/error.hpp"

namespace shardscope::engine {

TensorSpec BackwardTargetSpec(const TensorSpec& forward_src, const TensorSpec& forward_dst) {
  if (forward_src.placements.size() != forward_dst.placements.size()) {
    throw InvalidInput("backward: forward src has " + std::to_string(forward_src.placements.size()) +
                       " placements but forward dst has " + std::to_string(forward_dst.placements.size()));
  }
  TensorSpec target = forward_src;
  for (size_t md = 0; md < target.placements.size(); ++md) {
    const Placement& grad = forward_dst.placements[md];
    // R-new: shard -> partial becomes shard -> replicate (an all_gather) and replicate ->
    // partial becomes a no-op; partial -> partial stays. R-new tests is_shard(), which is False
    // for _StridedShard, leaving _S -> P to fail at run time; we treat every shard-like grad as a
    // Shard (divergence: _S -> P would be an unsupported transition).
    if ((grad.IsShardLike() || grad.IsReplicate()) && forward_src.placements[md].IsPartial()) {
      target.placements[md] = Placement::Replicate();
    }
  }
  // R-new builds the grad's target DTensorSpec without a shard_order, so it gets the default
  // order even when the forward input had another one; _StridedShards keep encoding theirs.
  target.shard_order.reset();
  return target;
}

}  // namespace shardscope::engine
