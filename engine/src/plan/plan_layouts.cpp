#include "shardscope/engine/plan/plan_layouts.hpp"

#include <algorithm>
#include <vector>

#include "shardscope/error.hpp"

namespace shardscope::engine {
namespace {

std::string DimsText(const std::vector<int>& dims) {
  std::string out;
  for (size_t i = 0; i < dims.size(); ++i) out += (i ? "," : "") + std::to_string(dims[i]);
  return out;
}

// The walk of CheckPlanExecutable: what a step needs is what Redistribute's step checks ask of
// the data (each rank's target piece held by its group, or by itself for local steps).
std::string DryRun(const TensorSpec& src, const TensorSpec& dst, const Plan& plan) {
  const PlanLayouts layouts(src, dst, plan);
  const Mesh& mesh = src.mesh;
  PlanState state = layouts.Start();
  const int64_t world = mesh.size();
  std::vector<RankLayout> before;
  for (int64_t r = 0; r < world; ++r) before.push_back(layouts.At(state, 0, r));
  for (size_t k = 0; k < plan.optimized.size(); ++k) {
    const Transform& t = plan.optimized[k];
    PlanState next = layouts.Advance(state, t);
    std::vector<RankLayout> after;
    for (int64_t r = 0; r < world; ++r) after.push_back(layouts.At(next, static_cast<int64_t>(k) + 1, r));
    if (!(t.src == t.dst) && mesh.GroupSize(t.mesh_dims) > 1 && !(t.src.IsReplicate() && t.dst.IsPartial())) {
      for (int64_t r = 0; r < world; ++r) {
        const RankLayout& a = after[static_cast<size_t>(r)];
        const int64_t want = NumElements(a.local_shape);
        int64_t got = 0;
        if (t.src.IsShardLike()) {
          for (int64_t member : mesh.Group(r, t.mesh_dims))
            got += SharedElements(before[static_cast<size_t>(member)], a);
        } else {
          got = SharedElements(before[static_cast<size_t>(r)], a);
          if (t.src.IsPartial() && t.dst.IsShardLike()) {
            for (int64_t member : mesh.Group(r, t.mesh_dims)) {
              const RankLayout& am = after[static_cast<size_t>(member)];
              if (SharedElements(before[static_cast<size_t>(r)], am) != NumElements(am.local_shape)) got = -1;
            }
          }
        }
        if (got != want) {
          return DescribeStep(static_cast<int64_t>(k), t) + ": rank " + std::to_string(r) + " needs " +
                 std::to_string(want) + " elements but its group holds " +
                 std::to_string(std::max<int64_t>(got, 0)) + " of them";
        }
      }
    }
    state = std::move(next);
    before = std::move(after);
  }
  for (int64_t r = 0; r < world; ++r) {
    if (before[static_cast<size_t>(r)].indices != ComputeRankLayout(dst, r).indices) {
      return "the plan ends with rank " + std::to_string(r) + " holding other elements than " +
             FormatPlacements(dst.placements) + " gives it";
    }
  }
  return "";
}

}  // namespace

PlanLayouts::PlanLayouts(const TensorSpec& src, const TensorSpec& dst, const Plan& plan)
    : src_(src), dst_(dst) {
  for (size_t k = 0; k < plan.optimized.size(); ++k) {
    const Transform& t = plan.optimized[k];
    if (t.src == t.dst) continue;
    for (int md : t.mesh_dims) {
      if (!first_touch_.count(md)) first_touch_[md] = static_cast<int64_t>(k);
      last_touch_[md] = static_cast<int64_t>(k);
    }
  }
}

PlanState PlanLayouts::Start() const {
  const ShardOrder order = src_.EffectiveOrder();
  return ExecutionStartState(src_.placements, &order, src_.mesh, static_cast<int>(src_.shape.size()));
}

PlanState PlanLayouts::Advance(const PlanState& state, const Transform& t) const {
  return ExecutionAdvance(state, t, src_.mesh);
}

RankLayout PlanLayouts::At(const PlanState& state, int64_t k, int64_t rank) const {
  std::map<int, std::vector<int64_t>> sizes;
  for (const auto& [md, v] : src_.explicit_sizes) {
    auto it = first_touch_.find(md);
    if (it == first_touch_.end() || k <= it->second) sizes[md] = v;
  }
  for (const auto& [md, v] : dst_.explicit_sizes) {
    auto it = last_touch_.find(md);
    if (it != last_touch_.end() && k > it->second) sizes[md] = v;
  }
  LayoutInput input = LayoutInputFor(src_, state.placements, state.order);
  input.explicit_sizes = &sizes;
  try {
    return ComputeRankLayout(input, rank);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kInvalidInput) throw;
    throw Unsupported("redistribute: explicit shard sizes do not fit the layout after step " +
                      std::to_string(k) + " (" + FormatPlacements(state.placements) + "): " + e.what());
  }
}

std::string DescribeStep(int64_t k, const Transform& t) {
  return "redistribute step " + std::to_string(k) + " (mesh dims " + DimsText(t.mesh_dims) + ", " +
         t.src.ToString() + "->" + t.dst.ToString() + ")";
}

int64_t SharedElements(const RankLayout& a, const RankLayout& b) {
  int64_t count = 1;
  for (size_t d = 0; d < a.indices.size(); ++d) count *= IndexSetSize(Intersect(a.indices[d], b.indices[d]));
  return count;
}

std::string CheckPlanExecutable(const TensorSpec& src, const TensorSpec& dst, const Plan& plan) {
  try {
    return DryRun(src, dst, plan);
  } catch (const Error& e) {
    return e.what();
  }
}

}  // namespace shardscope::engine
