// PyTorch DTensorRedistributePlanner.generate_greedy_transform_infos (identical logic in R-old,
// R-mid, R-opt1 and R-new): per-rank logical shapes, then two passes over the mesh dims.

#include "plan/planner_internal.hpp"
#include "shardscope/engine/plan/planner.hpp"
#include "shardscope/error.hpp"

namespace shardscope::engine {
namespace {

Transform MakeTransform(int mesh_dim, const Placement& src, const Placement& dst, const Shape& logical_shape,
                        const MeshTopo& topo, double& gigabytes) {
  Transform t;
  t.mesh_dims = {mesh_dim};
  t.src = src;
  t.dst = dst;
  t.logical_shape = logical_shape;
  t.comm = CommKindOf(src, dst);
  // redistribute_cost threads comm_bytes_gb through the greedy transforms in emission order.
  t.cost_us = TransitionCostUs(src, dst, topo, mesh_dim, gigabytes);
  return t;
}

}  // namespace

std::vector<Transform> PlanGreedy(const TensorSpec& src, const TensorSpec& dst, int64_t rank,
                                  const PlanOptions& options) {
  detail::CheckPlannable(src, dst, "greedy planner");
  const Mesh& mesh = src.mesh;
  const int ndim = mesh.ndim();
  const std::vector<int64_t> coord = mesh.Coordinate(rank);
  const MeshTopo topo = BuildMeshTopo(mesh, options.devices_per_host);
  double gigabytes = CommGigabytes(mesh, src.placements, src.shape, src.dtype);
  std::vector<Transform> out;

  // A 1-d mesh is a single direct step; R-new emits nothing for a no-op (PR #172924).
  if (ndim == 1) {
    if (src.placements[0] != dst.placements[0]) {
      out.push_back(MakeTransform(0, src.placements[0], dst.placements[0], src.shape, topo, gigabytes));
    }
    return out;
  }

  // logical_shape[md]: the shape this rank's group sees on mesh dim md, i.e. the source's plain
  // Shards on mesh dims < md applied left to right with this rank's coordinate (isinstance(s,
  // Shard): a _StridedShard does not shrink it in R-new).
  std::vector<Shape> logical(static_cast<size_t>(ndim));
  logical[0] = src.shape;
  for (int i = 0; i + 1 < ndim; ++i) {
    const Placement& p = src.placements[static_cast<size_t>(i)];
    Shape next = logical[static_cast<size_t>(i)];
    if (p.IsShard()) {
      auto& extent = next[static_cast<size_t>(p.dim)];
      extent = detail::ShardExtent(src, i, extent, coord[static_cast<size_t>(i)]);
    }
    logical[static_cast<size_t>(i) + 1] = std::move(next);
  }

  Placements current = src.placements;
  const Placements& target = dst.placements;
  if (src.NumShards() > 1) {
    // Pass 1, inner -> outer: a target Shard whose earlier (outer) shardings of the same tensor
    // dim differ between the *current* and the target placements is nested/misaligned, so this
    // mesh dim is unsharded (-> Replicate) first.
    for (int md = ndim - 1; md >= 0; --md) {
      const Placement& c = current[static_cast<size_t>(md)];
      Placement t = target[static_cast<size_t>(md)];
      if (t.IsShard()) {
        bool misaligned = false;
        for (int i = 0; i < md && !misaligned; ++i) {
          misaligned =
              current[static_cast<size_t>(i)].IsShard(t.dim) != target[static_cast<size_t>(i)].IsShard(t.dim);
        }
        if (misaligned) t = Placement::Replicate();
      }
      if (c != t) {
        out.push_back(MakeTransform(md, c, t, logical[static_cast<size_t>(md)], topo, gigabytes));
        current[static_cast<size_t>(md)] = t;
      }
    }
  }
  // Pass 2, outer -> inner: whatever is still different (re-sharding after a replicate, and all
  // of the work when the source had no shards).
  for (int md = 0; md < ndim; ++md) {
    const Placement& c = current[static_cast<size_t>(md)];
    const Placement& t = target[static_cast<size_t>(md)];
    if (c != t) {
      out.push_back(MakeTransform(md, c, t, logical[static_cast<size_t>(md)], topo, gigabytes));
      current[static_cast<size_t>(md)] = t;
    }
  }
  return out;
}

}  // namespace shardscope::engine
