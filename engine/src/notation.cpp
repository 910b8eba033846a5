// Plan notation: PyTorch R-new DTensorRedistributePlanner.stringify_transform_infos, the string
// DebugMode prints as "trace: ..." (e.g. "S(0)[0]S(0)[1]-->RR").

#include <string>
#include <vector>

#include "shardscope/engine/planner.hpp"

namespace shardscope::engine {

std::string Notation(const std::vector<Transform>& transforms, const TensorSpec& src) {
  PlanState state{src.placements, src.EffectiveOrder()};
  // R-new passes use_strided_shard_as_shard_order (auto-set when any _StridedShard is present):
  // the src is first normalized into plain Shards plus the order decoded from the split factors
  // (_normalize_placements_into_shard_order). An undecodable src keeps its _S placements and
  // prints them literally ("_S(0, 3)" in T1 test_strided_shard_redistribution).
  if (src.HasStridedShard()) {
    if (auto decoded = StridedPlacementsToShardOrder(src.placements, src.mesh)) {
      state.placements = decoded->first;
      state.order = decoded->second;
    }
  }
  std::string out = FormatShardOrderStr(state.placements, state.order);
  for (const Transform& t : transforms) {
    state = ApplyTransform(state, t);
    // R-new: "-->" before the state a _FlattenedTransformInfo produces, "->" otherwise.
    out += t.flattened ? "-->" : "->";
    out += FormatShardOrderStr(state.placements, state.order);
  }
  return out;
}

}  // namespace shardscope::engine
