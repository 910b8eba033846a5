#include "shardscope/engine/plan/plan.hpp"

#include <algorithm>

#include "shardscope/error.hpp"
#include "shardscope/names.hpp"

namespace shardscope::engine {

namespace {

constexpr Named<CommKind> kCommKinds[] = {
    {CommKind::kLocal, "local"},          {CommKind::kAllGather, "all_gather"},
    {CommKind::kAllReduce, "all_reduce"}, {CommKind::kReduceScatter, "reduce_scatter"},
    {CommKind::kAllToAll, "all_to_all"},
};

}  // namespace

std::string_view CommKindName(CommKind kind) { return NameIn(kCommKinds, kind, "local"); }

CommKind CommKindOf(const Placement& src, const Placement& dst) {
  if (src.IsPartial() && dst.IsReplicate()) return CommKind::kAllReduce;
  if (src.IsPartial() && dst.IsShardLike()) return CommKind::kReduceScatter;
  if (src.IsShardLike() && dst.IsReplicate()) return CommKind::kAllGather;
  if (src.IsShardLike() && dst.IsShardLike()) return CommKind::kAllToAll;
  return CommKind::kLocal;
}

std::string_view PlannerName(PlannerKind kind) { return kind == PlannerKind::kGreedy ? "greedy" : "graph"; }

PlanState ApplyTransform(const PlanState& state, const Transform& t, const Mesh* mesh) {
  PlanState next = state;
  int max_dim = 0;
  for (const auto& e : state.order) max_dim = std::max(max_dim, e.tensor_dim + 1);
  if (t.src.IsShardLike()) max_dim = std::max(max_dim, t.src.dim + 1);
  if (t.dst.IsShardLike()) max_dim = std::max(max_dim, t.dst.dim + 1);
  auto lists = OrderToLists(state.order, max_dim);
  bool strided = std::any_of(state.placements.begin(), state.placements.end(),
                             [](const Placement& p) { return p.IsStridedShard(); }) ||
                 t.src.IsStridedShard() || t.dst.IsStridedShard();
  std::vector<int> strict_dims = t.mesh_dims;
  if (mesh != nullptr && t.src.IsShardLike()) {
    auto& list = lists[static_cast<size_t>(t.src.dim)];
    for (int md : t.mesh_dims) {
      if (mesh->size(md) == 1) list.erase(std::remove(list.begin(), list.end(), md), list.end());
    }
    strict_dims.erase(
        std::remove_if(strict_dims.begin(), strict_dims.end(), [&](int md) { return mesh->size(md) == 1; }),
        strict_dims.end());
  }
  if (t.src.IsShardLike()) {
    auto& list = lists[static_cast<size_t>(t.src.dim)];
    if (!strided) {
      // The dims a shard-like src gives up must be the newest ones of its order (PyTorch R-new
      // checks the popped set equals the affected dims).
      if (list.size() < strict_dims.size()) {
        throw InternalError("plan: transform pops more mesh dims than shard it");
      }
      std::vector<int> popped(list.end() - static_cast<std::ptrdiff_t>(strict_dims.size()), list.end());
      std::vector<int> want = strict_dims;
      std::sort(popped.begin(), popped.end());
      std::sort(want.begin(), want.end());
      if (popped != want) {
        throw InternalError(
            "plan: transform on mesh dims that are not the newest in the shard order of tensor dim " +
            std::to_string(t.src.dim));
      }
      list.resize(list.size() - strict_dims.size());
    } else {
      for (int md : t.mesh_dims) list.erase(std::remove(list.begin(), list.end(), md), list.end());
    }
  }
  if (t.dst.IsShardLike()) {
    auto& list = lists[static_cast<size_t>(t.dst.dim)];
    for (int md : t.mesh_dims) list.push_back(md);
  }
  for (int md : t.mesh_dims) next.placements[static_cast<size_t>(md)] = t.dst;
  next.order = ListsToOrder(lists);
  return next;
}

PlanState ExecutionStartState(const Placements& placements, const ShardOrder* order, const Mesh& mesh,
                              int tensor_ndim) {
  PlanState state{placements, order ? *order : DefaultShardOrder(placements)};
  auto lists = OrderToLists(state.order, tensor_ndim);
  for (auto& list : lists) {
    list.erase(std::remove_if(list.begin(), list.end(), [&](int md) { return mesh.size(md) == 1; }),
               list.end());
  }
  state.order = ListsToOrder(lists);
  return state;
}

PlanState ExecutionAdvance(const PlanState& state, const Transform& t, const Mesh& mesh) {
  Transform split = t;
  split.mesh_dims.erase(std::remove_if(split.mesh_dims.begin(), split.mesh_dims.end(),
                                       [&](int md) { return mesh.size(md) == 1; }),
                        split.mesh_dims.end());
  PlanState next = split.mesh_dims.empty() ? state : ApplyTransform(state, split);
  for (int md : t.mesh_dims) next.placements[static_cast<size_t>(md)] = t.dst;
  return next;
}

int CountCollectives(const std::vector<Transform>& transforms, const Mesh& mesh) {
  int n = 0;
  for (const auto& t : transforms) {
    if (t.comm == CommKind::kLocal || t.src == t.dst) continue;
    if (mesh.GroupSize(t.mesh_dims) <= 1) continue;
    ++n;
  }
  return n;
}

}  // namespace shardscope::engine
