#pragma once
// Redistribute planning [PyTorch DTensorRedistributePlanner]: greedy two-pass planner, graph
// (Dijkstra) planner, PyTorch's rule for which one runs, the cost model, the flattening
// optimizer, notation, the backward (gradient) plan, and a plan cache.

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "shardscope/engine/plan.hpp"
#include "shardscope/engine/spec.hpp"

namespace shardscope::engine {

enum class PlannerChoice { kAuto, kGreedy, kGraph };

/// Knobs that change a plan.
struct PlanOptions {
  PlannerChoice planner = PlannerChoice::kAuto;
  bool optimize = true;      ///< run the flattening optimizer
  int devices_per_host = 8;  ///< PyTorch MeshTopoInfo num_devices_per_host
  /// Refuse to flatten an all_gather over uneven shards (PyTorch #194457 corrupts data there);
  /// on by default, reported as uneven_tensor_shape. Documented divergence from PyTorch.
  bool guard_uneven_all_gather = true;
  /// Allow a target Partial on a mesh dim whose source is not that same Partial (R -> P). PyTorch's
  /// public DTensor.redistribute refuses it ("redistributing to Partial is for internal use
  /// only!"); its internal callers (ops' sharding strategies, Redistribute.apply, imported dumps)
  /// use it. Off by default; when on and used, the plan's planner_reason says so.
  bool internal_partial_target = false;
  bool operator==(const PlanOptions&) const = default;
};

// ---- cost model (PyTorch _collective_utils, constants identical) ----

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

// ---- planners ----

/// PyTorch generate_greedy_transform_infos for `rank`'s coordinate (logical shapes per rank).
std::vector<Transform> PlanGreedy(const TensorSpec& src, const TensorSpec& dst, int64_t rank,
                                  const PlanOptions& options);
/// PyTorch generate_graph_based_transform_infos (Dijkstra, ties to the first pushed state).
/// Throws Error(kUnsupported) with "not decodable" when a StridedShard cannot be decoded, and
/// Error(kUnsupported) when no path exists.
std::vector<Transform> PlanGraph(const TensorSpec& src, const TensorSpec& dst, int64_t rank,
                                 const PlanOptions& options);

/// Flattening optimizer (PyTorch R-new _optimize_transform_infos): merged transforms plus the
/// reason for every merge not made.
struct OptimizeResult {
  std::vector<Transform> transforms;
  std::vector<SkippedMerge> skipped;
};
OptimizeResult OptimizeTransforms(const std::vector<Transform>& transforms, const TensorSpec& src,
                                  const PlanOptions& options);

/// PyTorch stringify_transform_infos: "S(0)[0]S(0)[1]->S(0)R" ("-->" before a flattened step's
/// result).
std::string Notation(const std::vector<Transform>& transforms, const TensorSpec& src);

/// Plans a redistribute for `rank`: validates (same mesh, supported transitions: no S->P, no
/// P(a)->P(b), no mixed partial ops other than sum+avg), picks the planner by PyTorch's rule,
/// optimizes, fills notation and costs. Throws Error(kUnsupported / kInvalidInput).
Plan MakePlan(const TensorSpec& src, const TensorSpec& dst, int64_t rank, const PlanOptions& options);

/// The gradient redistribute of a forward src -> dst (PyTorch Redistribute.backward): returns
/// the grad's target spec: forward src placements with each Partial turned into Replicate where
/// the grad (forward dst) is shard-like or Replicate. The grad's source spec is `forward_dst`.
TensorSpec BackwardTargetSpec(const TensorSpec& forward_src, const TensorSpec& forward_dst);

/// Thread-safe cache of MakePlan results keyed by everything that changes a plan: mesh (with
/// flattened sub-meshes), placements, orders, shape, dtype, chunking, explicit sizes, rank and
/// options. ShardTensor hit collisions hashing fewer fields.
class PlanCache {
 public:
  /// Returns the cached plan or plans (MakePlan, outside the lock) and inserts. The plan is
  /// shared and immutable; it outlives Clear. MakePlan errors propagate and are not cached.
  std::shared_ptr<const Plan> Get(const TensorSpec& src, const TensorSpec& dst, int64_t rank,
                                  const PlanOptions& options);
  /// Number of cached plans.
  size_t size() const;
  /// Lookup counters since construction (not reset by Clear).
  uint64_t hits() const { return hits_.load(std::memory_order_relaxed); }
  uint64_t misses() const { return misses_.load(std::memory_order_relaxed); }
  /// Drops every cached plan.
  void Clear();

 private:
  struct Entry {
    /// Lossless word encoding of (src, dst, rank, options): equal words <=> equal keys.
    std::vector<uint64_t> key;
    std::shared_ptr<const Plan> plan;
  };
  mutable std::mutex mutex_;
  std::unordered_multimap<uint64_t, Entry> entries_;
  std::atomic<uint64_t> hits_{0};
  std::atomic<uint64_t> misses_{0};
};

/// Hash of every plan-relevant field (exposed for tests).
uint64_t PlanKeyHash(const TensorSpec& src, const TensorSpec& dst, int64_t rank, const PlanOptions& options);

}  // namespace shardscope::engine
