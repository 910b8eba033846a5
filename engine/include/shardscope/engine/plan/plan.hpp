#pragma once
// Plans as plain data [PyTorch _TransformInfo / _FlattenedTransformInfo]: what a redistribute
// will do, before anything runs. Produced by the planners (planners.hpp), rewritten by the
// flattening optimizer (optimizer.hpp), printed, traced, diffed and executed.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "shardscope/engine/core/mesh.hpp"
#include "shardscope/engine/core/placement.hpp"
#include "shardscope/engine/core/shard_order.hpp"

namespace shardscope::engine {

/// The collective a transform runs (PyTorch R-new _comm_type_key, plus kLocal for R->S / R->P).
enum class CommKind { kLocal, kAllGather, kAllReduce, kReduceScatter, kAllToAll };
/// "local", "all_gather", "all_reduce", "reduce_scatter", "all_to_all".
std::string_view CommKindName(CommKind kind);
/// Collective kind of a src -> dst placement pair (PyTorch _comm_type_key).
CommKind CommKindOf(const Placement& src, const Placement& dst);

/// One step of a plan, on one mesh dim or (flattened) on several.
struct Transform {
  /// The mesh dim, or for a flattened transform its original mesh dims in ascending order.
  std::vector<int> mesh_dims;
  Placement src;
  Placement dst;
  /// The tensor shape this rank's group works on (PyTorch logical_shape; per-rank).
  Shape logical_shape;
  bool flattened = false;
  /// Divisor applied after a flattened sum that merged avg partials; 1 when none.
  int64_t avg_scale = 1;
  CommKind comm = CommKind::kLocal;
  /// Predicted cost from PyTorch's alpha-beta model, in microseconds.
  double cost_us = 0.0;

  bool operator==(const Transform&) const = default;
};

/// Why a group of same-kind collectives was not merged (PyTorch R-new reasons).
struct SkippedMerge {
  std::vector<int> mesh_dims;  ///< in emission order
  CommKind comm = CommKind::kAllGather;
  std::string reason;  ///< "no_flattened_mesh", "uneven_tensor_shape", "non_ascending_mesh_dims"
  std::string hint;    ///< what would enable the merge, one line
  bool operator==(const SkippedMerge&) const = default;
};

enum class PlannerKind { kGreedy, kGraph };
std::string_view PlannerName(PlannerKind kind);

/// One rank's full plan for one redistribute.
struct Plan {
  PlannerKind planner = PlannerKind::kGreedy;
  /// Why this planner ran, e.g. "default", "non-default shard order", "strided shard",
  /// "forced by --planner", "graph fell back: strided shard not decodable".
  std::string planner_reason;
  std::vector<Transform> raw;        ///< planner output
  std::vector<Transform> optimized;  ///< after flattening (== raw when the optimizer is off)
  std::vector<SkippedMerge> skipped_merges;
  std::string notation;              ///< PyTorch stringify_transform_infos of `optimized`
  std::string notation_unoptimized;  ///< ... of `raw`
  double cost_us = 0.0;              ///< sum of optimized transforms' cost_us
  /// True when the plan makes a new Partial (R -> P), PyTorch's internal redistribute path
  /// (PlanOptions::internal_partial_target); planner_reason says so too.
  bool internal_partial_target = false;

  bool operator==(const Plan&) const = default;
};

/// A distribution state along a plan: placements plus shard order (PyTorch DistState).
struct PlanState {
  Placements placements;
  ShardOrder order;
  bool operator==(const PlanState&) const = default;
};

/// Applies a transform to a state the way PyTorch's stringify does: a shard-like src pops its
/// mesh dims from that tensor dim's order, a shard-like dst appends them; placements are set.
/// Throws Error(kInternal) if the popped dims are not the last ones of the order. With `mesh`,
/// size-1 mesh dims are removed wherever they sit in the order: they never split anything, and
/// planners emit steps on them in any order (PyTorch skips them at run time).
PlanState ApplyTransform(const PlanState& state, const Transform& transform, const Mesh* mesh = nullptr);

/// The state the executor starts a plan from: `placements` in `order` (null: the default order),
/// with size-1 mesh dims dropped from the order (they never split anything, and planners emit
/// steps on them in any order; PyTorch skips them at run time). `tensor_ndim` sizes the order.
PlanState ExecutionStartState(const Placements& placements, const ShardOrder* order, const Mesh& mesh,
                              int tensor_ndim);
/// The state after `t` as the executor tracks it (and the GUI draws it): ApplyTransform on t's
/// mesh dims of size > 1, then t.dst on all of them. Throws ApplyTransform's errors.
PlanState ExecutionAdvance(const PlanState& state, const Transform& t, const Mesh& mesh);

/// Number of collectives that actually run: transforms over a size-1 group or local ones count 0
/// (PyTorch CommDebugMode counts).
int CountCollectives(const std::vector<Transform>& transforms, const Mesh& mesh);

}  // namespace shardscope::engine
