// Flattening optimizer: PyTorch R-new _optimize_transform_infos (PR #174630), rule by rule, plus
// shardscope's guard against PyTorch #194457 (uneven flattened all_gather).

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "shardscope/engine/plan/planner.hpp"
#include "shardscope/error.hpp"
#include "shardscope/text.hpp"

namespace shardscope::engine {
namespace {

// R-new _TransformInfo._comm_type_key. It tests is_shard(), which is False for _StridedShard in
// the C++-backed placements (PR #167887), so a strided transform has no key there and is never
// merged; we keep that (a flattened strided all_gather would not reassemble the interleaving).
// all_to_all is never merged, so it is folded into "not mergeable" here.
bool MergeableKey(const Transform& t, CommKind& key) {
  const Placement& src = t.src;
  const Placement& dst = t.dst;
  if (src == dst) return false;
  if (src.IsPartial() && dst.IsReplicate()) {
    key = CommKind::kAllReduce;
    return true;
  }
  if (src.IsPartial() && dst.IsShard()) {
    key = CommKind::kReduceScatter;
    return true;
  }
  if (src.IsShard() && dst.IsReplicate()) {
    key = CommKind::kAllGather;
    return true;
  }
  return false;
}

// R-new are_placements_mergeable: identical pairs, or equal dsts with both srcs Partial(sum|avg)
// (sum is run for both and avg dims are divided out afterwards).
bool PlacementsMergeable(const Transform& a, const Transform& b) {
  if (a.src == b.src && a.dst == b.dst) return true;
  if (!(a.dst == b.dst)) return false;
  return a.src.IsLinearPartial() && b.src.IsLinearPartial();
}

std::string JoinDims(const std::vector<int>& dims) { return JoinInts(dims, ","); }

std::string NonAscendingHint(const std::vector<int>& emitted, const std::vector<int>& sorted_dims,
                             bool want_ascending) {
  std::vector<int> descending(sorted_dims.rbegin(), sorted_dims.rend());
  const char* need = want_ascending ? "ascending" : "descending";
  if (emitted == sorted_dims)
    return std::string("the planner emits these dims in ascending order; merging needs ") + need;
  if (emitted == descending)
    return std::string("the planner emits these dims in descending order; merging needs ") + need;
  return "the planner emits these dims in order " + JoinDims(emitted) + "; merging needs " + need;
}

// Placements in effect just before transform `index` (only placements matter for comm bytes).
Placements PlacementsBefore(const std::vector<Transform>& transforms, size_t index, const TensorSpec& src) {
  Placements cur = src.placements;
  for (size_t k = 0; k < index; ++k) {
    for (int md : transforms[k].mesh_dims) {
      if (md >= 0 && static_cast<size_t>(md) < cur.size()) cur[static_cast<size_t>(md)] = transforms[k].dst;
    }
  }
  return cur;
}

struct FlattenAttempt {
  bool ok = false;
  Transform merged;
  SkippedMerge skipped;
};

// The merge's emission order and flattened mesh (R-new's first two checks); false with the
// reason and hint in `skipped` when they do not allow it.
bool OrderAndMeshAllow(CommKind key, const std::vector<int>& mesh_dims, const std::vector<int>& sorted_dims,
                       const Mesh& mesh, SkippedMerge& skipped) {
  // Flattened meshes only exist in ascending dim order. reduce_scatter must run outer dim first
  // (ascending); all_gather must run inner dim first (descending: how both planners unshard a
  // default-ordered tensor). all_reduce has no order requirement.
  if (key == CommKind::kReduceScatter && mesh_dims != sorted_dims) {
    skipped.reason = "non_ascending_mesh_dims";
    skipped.hint = NonAscendingHint(mesh_dims, sorted_dims, true);
    return false;
  }
  if (key == CommKind::kAllGather &&
      mesh_dims != std::vector<int>(sorted_dims.rbegin(), sorted_dims.rend())) {
    skipped.reason = "non_ascending_mesh_dims";
    skipped.hint = NonAscendingHint(mesh_dims, sorted_dims, false);
    return false;
  }
  // R-new _get_flattened_mesh_by_layout returns None for a mesh without dim names; what it
  // really needs is an already-created flattened mesh, so a registered one is what counts here
  // whether or not the mesh has names (documented divergence).
  if (!mesh.HasFlattened(sorted_dims)) {
    skipped.reason = "no_flattened_mesh";
    skipped.hint = "register a flattened mesh over dims " + JoinDims(sorted_dims) + " (--flatten " +
                   JoinDims(sorted_dims) + ")";
    return false;
  }
  return true;
}

// The shape check of an all_gather or reduce_scatter group: picks the outermost transform (the
// largest extent on the affected dim, least divided by prior shards; Python's max keeps the
// first maximum) into `outer`; false with the reason and hint in `skipped` for uneven shapes.
bool ShapeAllows(const std::vector<Transform>& transforms, size_t first, size_t count, CommKind key,
                 const TensorSpec& spec, const PlanOptions& options, const std::vector<int>& mesh_dims,
                 size_t& outer, SkippedMerge& skipped) {
  const Transform& head = transforms[first];
  const int affected = key == CommKind::kAllGather ? head.src.dim : head.dst.dim;
  if (affected < 0) throw InternalError("optimizer: negative shard dim in a transform");
  auto extent = [&](size_t k) -> int64_t {
    const Shape& ls = transforms[k].logical_shape;
    if (static_cast<size_t>(affected) >= ls.size()) {
      throw InternalError("optimizer: logical shape of transform " + std::to_string(k) + " lacks dim " +
                          std::to_string(affected));
    }
    return ls[static_cast<size_t>(affected)];
  };
  for (size_t k = first + 1; k < first + count; ++k) {
    if (extent(k) > extent(outer)) outer = k;
  }
  const int64_t size = extent(outer);
  const int64_t group_size = spec.mesh.GroupSize(mesh_dims);
  // reduce_scatter: R-new's divisibility rule. all_gather: shardscope's guard for #194457 —
  // the nested local extents (e.g. 5 on 2x2: 2,1,1,1) differ from the flat chunking
  // (2,2,1,0) unless the extent divides evenly, and PyTorch would silently corrupt data.
  bool check = key == CommKind::kReduceScatter || options.guard_uneven_all_gather;
  if (check && size % group_size != 0) {
    skipped.reason = "uneven_tensor_shape";
    skipped.hint = "make dim " + std::to_string(affected) + "'s size " + std::to_string(size) +
                   " divisible by " + std::to_string(group_size);
    if (key == CommKind::kAllGather) skipped.hint += " (PyTorch merges it anyway and corrupts data: #194457)";
    return false;
  }
  // Explicit per-rank sizes need not follow any chunking rule, so a flat all_gather could not
  // reproduce them unless they are all equal (same #194457 failure mode).
  if (key == CommKind::kAllGather && options.guard_uneven_all_gather) {
    for (int md : mesh_dims) {
      auto it = spec.explicit_sizes.find(md);
      if (it == spec.explicit_sizes.end() || it->second.empty()) continue;
      const auto& sizes = it->second;
      if (std::adjacent_find(sizes.begin(), sizes.end(), std::not_equal_to<>()) != sizes.end()) {
        skipped.reason = "uneven_tensor_shape";
        skipped.hint = "mesh dim " + std::to_string(md) +
                       " has uneven explicit sizes; a flattened all_gather needs equal shards";
        return false;
      }
    }
  }
  return true;
}

// avg_scale: the merged collective is a sum; the avg dims are divided out afterwards.
// PyTorch keeps the head's op when the avg dims' sizes multiply to 1 (size-1 avg dims), so a
// group mixing P(avg) on a size-1 dim with P(sum) would average over the whole group; we make
// any mixed sum/avg group a sum (a documented divergence that fixes that edge case).
void MergePartials(const std::vector<Transform>& transforms, size_t first, size_t count, const Mesh& mesh,
                   Transform& merged) {
  const Transform& head = transforms[first];
  int64_t scale = 1;
  bool mixed = false;
  for (size_t k = first; k < first + count; ++k) {
    if (transforms[k].src.op == ReduceOp::kAvg) scale *= mesh.size(transforms[k].mesh_dims[0]);
    mixed = mixed || transforms[k].src.op != head.src.op;
  }
  if (scale > 1 || mixed) {
    merged.avg_scale = scale;
    merged.src = Placement::Partial(ReduceOp::kSum);
  }
}

// Cost: PyTorch never prices a flattened transform; we apply its alpha-beta formula to one
// mesh dim of n = product of the group's sizes, with the group's slowest link (min bandwidth,
// max latency over its dims) and the comm bytes of the state before the group.
double FlattenedCostUs(const Transform& merged, const std::vector<Transform>& transforms, size_t first,
                       const TensorSpec& spec, const PlanOptions& options) {
  const Mesh& mesh = spec.mesh;
  const std::vector<int>& sorted_dims = merged.mesh_dims;
  MeshTopo topo = BuildMeshTopo(mesh, options.devices_per_host);
  MeshTopo flat;
  flat.devices = {mesh.GroupSize(sorted_dims)};
  double bw = topo.bandwidth_gbps.at(static_cast<size_t>(sorted_dims[0]));
  double lat = topo.latency_us.at(static_cast<size_t>(sorted_dims[0]));
  for (int md : sorted_dims) {
    bw = std::min(bw, topo.bandwidth_gbps.at(static_cast<size_t>(md)));
    lat = std::max(lat, topo.latency_us.at(static_cast<size_t>(md)));
  }
  flat.bandwidth_gbps = {bw};
  flat.latency_us = {lat};
  double gigabytes = CommGigabytes(mesh, PlacementsBefore(transforms, first, spec), spec.shape, spec.dtype);
  return TransitionCostUs(merged.src, merged.dst, flat, 0, gigabytes);
}

// R-new try_create_flattened for a group of >= 2 consecutive mergeable transforms starting at
// `first`. Checks run in R-new's order: emission order, flattened mesh, then shape.
FlattenAttempt TryCreateFlattened(const std::vector<Transform>& transforms, size_t first, size_t count,
                                  CommKind key, const TensorSpec& spec, const PlanOptions& options) {
  const Mesh& mesh = spec.mesh;
  FlattenAttempt out;
  std::vector<int> mesh_dims;
  for (size_t k = first; k < first + count; ++k) {
    const auto& dims = transforms[k].mesh_dims;
    if (dims.size() != 1 || dims[0] < 0 || dims[0] >= mesh.ndim()) {
      throw InternalError("optimizer: transform " + std::to_string(k) + " is not on a single valid mesh dim");
    }
    mesh_dims.push_back(dims[0]);
  }
  std::vector<int> sorted_dims = mesh_dims;
  std::sort(sorted_dims.begin(), sorted_dims.end());
  out.skipped.mesh_dims = mesh_dims;
  out.skipped.comm = key;
  if (!OrderAndMeshAllow(key, mesh_dims, sorted_dims, mesh, out.skipped)) return out;
  size_t outer = first;
  if ((key == CommKind::kAllGather || key == CommKind::kReduceScatter) &&
      !ShapeAllows(transforms, first, count, key, spec, options, mesh_dims, outer, out.skipped)) {
    return out;
  }
  const Transform& head = transforms[first];
  Transform merged;
  merged.mesh_dims = sorted_dims;
  merged.src = head.src;
  merged.dst = head.dst;
  merged.logical_shape = transforms[outer].logical_shape;
  merged.flattened = true;
  merged.comm = head.comm;
  if (head.src.IsPartial()) MergePartials(transforms, first, count, mesh, merged);
  merged.cost_us = FlattenedCostUs(merged, transforms, first, spec, options);
  out.ok = true;
  out.merged = std::move(merged);
  return out;
}

}  // namespace

OptimizeResult OptimizeTransforms(const std::vector<Transform>& transforms, const TensorSpec& src,
                                  const PlanOptions& options) {
  OptimizeResult result;
  if (transforms.size() < 2 || !options.optimize) {
    result.transforms = transforms;
    return result;
  }
  // Consecutive only, never reordered (R-new docstring: P,P,P -> R,S,R is not merged).
  size_t i = 0;
  while (i < transforms.size()) {
    CommKind key{};
    if (!MergeableKey(transforms[i], key) || transforms[i].flattened) {
      result.transforms.push_back(transforms[i]);
      ++i;
      continue;
    }
    size_t j = i + 1;
    CommKind next_key{};
    while (j < transforms.size() && !transforms[j].flattened && MergeableKey(transforms[j], next_key) &&
           PlacementsMergeable(transforms[j], transforms[i])) {
      ++j;
    }
    const size_t count = j - i;
    if (count < 2) {
      // R-new "too_few_transforms": kept, and not a missed opportunity worth reporting.
      result.transforms.push_back(transforms[i]);
    } else {
      FlattenAttempt attempt = TryCreateFlattened(transforms, i, count, key, src, options);
      if (attempt.ok) {
        result.transforms.push_back(std::move(attempt.merged));
      } else {
        result.transforms.insert(result.transforms.end(), transforms.begin() + static_cast<std::ptrdiff_t>(i),
                                 transforms.begin() + static_cast<std::ptrdiff_t>(j));
        result.skipped.push_back(std::move(attempt.skipped));
      }
    }
    i = j;
  }
  return result;
}

}  // namespace shardscope::engine
