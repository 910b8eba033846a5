// Plan notation: PyTorch R-new DTensorRedistributePlanner.stringify_transform_infos, the string
// DebugMode prints as "trace: ..." (e.g. "S(0)[0]S(0)[1]-->RR").

#include <algorithm>
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

// format_shard_order_str as newer PyTorch prints it: a Shard shows [k], its position in its
// tensor dim's list, when that list has more than one mesh dim; a _StridedShard, no longer a
// Shard subclass (PR #167887), prints as str() alone ("_S(0, 3)").
std::string FormatLiteralState(const Placements& placements, const std::vector<std::vector<int>>& lists) {
  std::string s;
  for (size_t md = 0; md < placements.size(); ++md) {
    const Placement& p = placements[md];
    s += p.ToString();
    if (!p.IsShard() || static_cast<size_t>(p.dim) >= lists.size()) continue;
    const auto& list = lists[static_cast<size_t>(p.dim)];
    if (list.size() <= 1) continue;
    auto it = std::find(list.begin(), list.end(), static_cast<int>(md));
    if (it != list.end()) s += "[" + std::to_string(it - list.begin()) + "]";
  }
  return s;
}

// stringify_transform_infos over literal _StridedShards, as newer PyTorch runs it
// (_update_shard_order_and_placements): only a plain Shard source pops its tensor dim's list
// (one entry per affected mesh dim, the newest); a _StridedShard source pops nothing, so its mesh
// dim stays listed and later states print positions counted with it. A shard-like destination
// appends the affected mesh dims. Only the printed text follows this; the plan's own states (and
// the executor's) are the true shard orders. See docs/planning.md for the derivation.
std::string RenderLiteral(const std::vector<Transform>& transforms, const PlanState& start) {
  Placements placements = start.placements;
  int max_dim = 0;
  for (const auto& e : start.order) max_dim = std::max(max_dim, e.tensor_dim + 1);
  for (const Transform& t : transforms) {
    if (t.src.IsShardLike()) max_dim = std::max(max_dim, t.src.dim + 1);
    if (t.dst.IsShardLike()) max_dim = std::max(max_dim, t.dst.dim + 1);
  }
  auto lists = OrderToLists(start.order, max_dim);
  std::string out = FormatLiteralState(placements, lists);
  for (const Transform& t : transforms) {
    if (t.src.IsShard()) {
      auto& list = lists[static_cast<size_t>(t.src.dim)];
      for (size_t i = 0; i < t.mesh_dims.size() && !list.empty(); ++i) list.pop_back();
    }
    if (t.dst.IsShardLike()) {
      for (int md : t.mesh_dims) lists[static_cast<size_t>(t.dst.dim)].push_back(md);
    }
    for (int md : t.mesh_dims) placements[static_cast<size_t>(md)] = t.dst;
    out += t.flattened ? "-->" : "->";
    out += FormatLiteralState(placements, lists);
  }
  return out;
}

bool HasLiteralStrided(const std::vector<Transform>& transforms, const Placements& start) {
  return std::any_of(start.begin(), start.end(), [](const Placement& p) { return p.IsStridedShard(); }) ||
         std::any_of(transforms.begin(), transforms.end(),
                     [](const Transform& t) { return t.src.IsStridedShard() || t.dst.IsStridedShard(); });
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
      PlanState state{decoded->first, decoded->second};
      try {
        if (HasLiteralStrided(transforms, state.placements)) return RenderLiteral(transforms, state);
        return Render(transforms, state, src.mesh);
      } catch (const Error&) {
      }
    }
  }
  if (HasLiteralStrided(transforms, literal.placements)) return RenderLiteral(transforms, literal);
  return Render(transforms, literal, src.mesh);
}

}  // namespace shardscope::engine
