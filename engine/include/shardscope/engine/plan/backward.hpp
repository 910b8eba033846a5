#pragma once
// The gradient redistribute of a forward one (PyTorch Redistribute.backward).

#include "shardscope/engine/core/spec.hpp"

namespace shardscope::engine {

/// The gradient redistribute of a forward src -> dst (PyTorch Redistribute.backward): returns
/// the grad's target spec: forward src placements with each Partial turned into Replicate where
/// the grad (forward dst) is shard-like or Replicate. The grad's source spec is `forward_dst`.
TensorSpec BackwardTargetSpec(const TensorSpec& forward_src, const TensorSpec& forward_dst);

}  // namespace shardscope::engine
