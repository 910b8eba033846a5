#pragma once
// PyTorch's alpha-beta cost model (_collective_utils, constants identical): per-mesh-dim
// bandwidth and latency, per-collective costs, and redistribute_cost for sharding propagation.

#include <cstdint>
#include <vector>

#include "shardscope/engine/core/mesh.hpp"
#include "shardscope/engine/core/placement.hpp"
#include "shardscope/engine/core/spec.hpp"

namespace shardscope::engine {

/// Per-mesh-dim bandwidth (GB/s) and latency (us) after PyTorch MeshTopoInfo.build_from_mesh.
struct MeshTopo {
  std::vector<int64_t> devices;
  std::vector<double> bandwidth_gbps;
  std::vector<double> latency_us;
};
MeshTopo BuildMeshTopo(const Mesh& mesh, int devices_per_host);
double AllGatherCostUs(double gigabytes, const MeshTopo& topo, int mesh_dim);
double ReduceScatterCostUs(double gigabytes, const MeshTopo& topo, int mesh_dim);
double AllReduceCostUs(double gigabytes, const MeshTopo& topo, int mesh_dim);
/// PyTorch _compute_placement_transition_cost: returns the cost and updates `gigabytes`.
double TransitionCostUs(const Placement& current, const Placement& target, const MeshTopo& topo, int mesh_dim,
                        double& gigabytes);
/// PyTorch comm_bytes_gb: itemsize * numel / num_shards / 1024^3 for the spec's placements.
double CommGigabytes(const Mesh& mesh, const Placements& placements, const Shape& shape, DType dtype);

/// PyTorch redistribute_cost (used by sharding propagation to rank op strategies): 0 when
/// `current` is fully replicated or equal to `target`, else the sum of TransitionCostUs along the
/// greedy plan, threading the byte count through; +inf when a step is S->P or P(a)->P(b), or
/// when either spec has a StridedShard (PyTorch: shard_order is None). Meshes must be equal.
double RedistributeCostUs(const TensorSpec& current, const TensorSpec& target, int devices_per_host);

}  // namespace shardscope::engine
