// Plan notation: PyTorch R-new DTensorRedistributePlanner.stringify_transform_infos, the string
// DebugMode prints as "trace: ..." (e.g. "S(0)[0]S(0)[1]-->RR").

#include <string>
#include <vector>

#include "shardscope/engine/plan/planner.hpp"
#include "shardscope/error.hpp"

namespace shardscope::engine {

namespace {

std::string Render(const std::vector<Transform>& transforms, PlanState state, const Mesh& mesh) {
  std::string out = FormatShardOrderStr(state.placements, state.order);
  for (const Transform& t : transforms) {
    state = ApplyTransform(state, t, &mesh);
    // R-new: "-->" before the state a _FlattenedTransformInfo produces, "->" otherwise.
    out += t.flattened ? "-->" : "->";
    out += FormatShardOrderStr(state.placements, state.order);
  }
  return out;
}

}  // namespace

std::string Notation(const std::vector<Transform>& transforms, const TensorSpec& src) {
  PlanState literal{src.placements, src.EffectiveOrder()};
  // R-new passes use_strided_shard_as_shard_order (auto-set when any _StridedShard is present):
  // the src is first normalized into plain Shards plus the order decoded from the split factors
  // (_normalize_placements_into_shard_order). An undecodable src keeps its _S placements and
  // prints them literally ("_S(0, 3)" in T1 test_strided_shard_redistribution). So does a plan
  // that greedy made from the _S placements themselves (forced greedy), whose steps do not follow
  // the decoded order.
  // An explicit order makes the _S placements literal (use_strided_shard_as_shard_order=False).
  if (src.HasStridedShard() && !src.shard_order) {
    if (auto decoded = StridedPlacementsToShardOrder(src.placements, src.mesh)) {
      try {
        return Render(transforms, PlanState{decoded->first, decoded->second}, src.mesh);
      } catch (const Error&) {
      }
    }
  }
  return Render(transforms, literal, src.mesh);
}

}  // namespace shardscope::engine
