#include <string>

#include "plan/planner_internal.hpp"
#include "shardscope/engine/core/layout.hpp"
#include "shardscope/error.hpp"

namespace shardscope::engine::detail {

void CheckPlannable(const TensorSpec& src, const TensorSpec& dst, std::string_view who) {
  const std::string w(who);
  if (src.mesh.shape() != dst.mesh.shape()) {
    throw Unsupported(w + ": source mesh " + src.mesh.ToString() + " and target mesh " + dst.mesh.ToString() +
                      " differ (cross-mesh redistribute is not supported, as in PyTorch)");
  }
  if (src.shape != dst.shape) {
    throw InvalidInput(w + ": source shape " + FormatShape(src.shape) + " and target shape " +
                       FormatShape(dst.shape) + " differ");
  }
  const int tensor_ndim = static_cast<int>(src.shape.size());
  for (const TensorSpec* spec : {&src, &dst}) {
    const char* side = spec == &src ? "source" : "target";
    if (static_cast<int>(spec->placements.size()) != spec->mesh.ndim()) {
      throw InvalidInput(w + ": " + side + " placements '" + FormatPlacements(spec->placements) +
                         "' do not fit a " + std::to_string(spec->mesh.ndim()) + "-d mesh");
    }
    for (const Placement& p : spec->placements) {
      if (p.IsShardLike() && (p.dim < 0 || p.dim >= tensor_ndim)) {
        throw InvalidInput(w + ": " + side + " placement '" + p.ToString() + "' shards dim " +
                           std::to_string(p.dim) + " but the tensor has " + std::to_string(tensor_ndim) +
                           " dims");
      }
      if (p.IsStridedShard() && p.split_factor < 1) {
        throw InvalidInput(w + ": " + side + " placement '" + p.ToString() + "' has a split factor below 1");
      }
    }
  }
}

int64_t ShardExtent(const TensorSpec& spec, int mesh_dim, int64_t extent, int64_t index) {
  auto it = spec.explicit_sizes.find(mesh_dim);
  if (it == spec.explicit_sizes.end()) {
    return LocalShardSizeAndOffset(extent, spec.mesh.size(mesh_dim), index, spec.chunking).first;
  }
  int64_t total = 0;
  for (int64_t s : it->second) total += s;
  if (total != extent || index < 0 || static_cast<size_t>(index) >= it->second.size()) {
    throw InvalidInput("explicit sizes for mesh dim " + std::to_string(mesh_dim) + " add up to " +
                       std::to_string(total) + " but the extent they split is " + std::to_string(extent));
  }
  return it->second[static_cast<size_t>(index)];
}

}  // namespace shardscope::engine::detail
