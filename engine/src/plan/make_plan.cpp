// MakePlan: PyTorch R-new redistribute_local_tensor up to execution — validation, the planner
// choice of _gen_transform_infos_non_cached, _optimize_transform_infos and the DebugMode trace.

#include <set>
#include <string>
#include <vector>

#include "shardscope/engine/plan/plan_layouts.hpp"
#include "shardscope/engine/plan/planner.hpp"
#include "shardscope/error.hpp"

namespace shardscope::engine {
namespace {

// A TensorSpec is a plain struct, so one built by hand may skip MakeSpec; re-check what the
// planners index with, so bad input fails with a message instead of crashing.
void ValidateSpec(const TensorSpec& spec, const char* what) {
  const std::string w(what);
  if (static_cast<int>(spec.placements.size()) != spec.mesh.ndim()) {
    throw InvalidInput(w + ": " + std::to_string(spec.placements.size()) + " placements '" +
                       FormatPlacements(spec.placements) + "' for a " + std::to_string(spec.mesh.ndim()) +
                       "-d mesh (need one per mesh dim)");
  }
  NumElements(spec.shape);
  for (size_t md = 0; md < spec.placements.size(); ++md) {
    const Placement& p = spec.placements[md];
    if (p.IsShardLike() && (p.dim < 0 || p.dim >= static_cast<int>(spec.shape.size()))) {
      throw InvalidInput(w + ": '" + p.ToString() + "' on mesh dim " + std::to_string(md) + " shards dim " +
                         std::to_string(p.dim) + " but the tensor has " + std::to_string(spec.shape.size()) +
                         " dims");
    }
    if (p.IsStridedShard() && p.split_factor < 1) {
      throw InvalidInput(w + ": '" + p.ToString() + "' on mesh dim " + std::to_string(md) +
                         " has a split factor below 1");
    }
  }
  std::set<ReduceOp> ops;
  for (const auto& p : spec.placements) {
    if (p.IsPartial()) ops.insert(p.op);
  }
  // R-new assert_no_mixed_partial_types on both specs: only {sum, avg} may be mixed.
  if (ops.size() > 1 && ops != std::set<ReduceOp>{ReduceOp::kSum, ReduceOp::kAvg}) {
    throw Unsupported(w + ": mixed Partial reduce ops '" + FormatPlacements(spec.placements) +
                      "' are not supported (only sum with avg, as in PyTorch)");
  }
  if (spec.shard_order) ValidateShardOrder(*spec.shard_order, spec.placements, what);
}

// PyTorch's public DTensor.redistribute (API): for any mesh dim whose target is Partial and
// differs from the source, "Can not redistribute from X to Y, redistributing to Partial is for
// internal use only!". Returns whether the redistribute targets a new Partial at all.
bool CheckPartialTargets(const TensorSpec& src, const TensorSpec& dst, bool internal) {
  bool any = false;
  for (size_t md = 0; md < src.placements.size(); ++md) {
    const Placement& s = src.placements[md];
    const Placement& d = dst.placements[md];
    if (!d.IsPartial() || s == d) continue;
    any = true;
    if (internal) continue;
    throw Unsupported("mesh dim " + std::to_string(md) + ": Can not redistribute from " + s.ToString() +
                      " to " + d.ToString() +
                      ", redistributing to Partial is for internal use only! (PyTorch's public "
                      "DTensor.redistribute; ops and imported dumps take the internal path: "
                      "--allow-partial-target, \"allow_partial_target\": true in a scenario step)");
  }
  return any;
}

// Transitions PyTorch's execution refuses (R-new redistribute_local_tensor; Partial).
void CheckTransitions(const TensorSpec& src, const TensorSpec& dst) {
  for (size_t md = 0; md < src.placements.size(); ++md) {
    const Placement& s = src.placements[md];
    const Placement& d = dst.placements[md];
    if (s == d || !d.IsPartial()) continue;
    const std::string head = "mesh dim " + std::to_string(md) + ": " + s.ToString() + " -> " + d.ToString() +
                             " is not supported (PyTorch raises: ";
    if (s.IsShardLike()) {
      throw Unsupported(head + "redistribute from " + s.ToString() + " to " + d.ToString() +
                        " not supported yet)");
    }
    if (s.IsPartial()) {
      throw Unsupported(head + "Redistribution from one partial type (" + std::string(ReduceOpName(s.op)) +
                        ") to another (" + std::string(ReduceOpName(d.op)) + ") is unsupported)");
    }
    // R -> P runs Partial._partition_value, which knows sum (x / n) and avg/min/max (x) only.
    if (d.op == ReduceOp::kProduct) {
      throw Unsupported(head + "Partial._partition_value has no rule for reduce op product)");
    }
  }
}

// The same mesh, shape and dtype on both sides, valid specs and a rank inside the mesh.
void CheckSpecs(const TensorSpec& src, const TensorSpec& dst, int64_t rank) {
  // R-new raises "Cross device mesh comm not supported yet!" for different meshes. Flattened
  // sub-meshes do not make a mesh different (DeviceMesh equality ignores them); src's are used.
  if (src.mesh.shape() != dst.mesh.shape() || src.mesh.dim_names() != dst.mesh.dim_names()) {
    throw InvalidInput("src and dst meshes differ: " + src.mesh.ToString() + " vs " + dst.mesh.ToString() +
                       " (redistribute keeps the mesh)");
  }
  if (src.shape != dst.shape) {
    throw InvalidInput("src and dst shapes differ: " + FormatShape(src.shape) + " vs " +
                       FormatShape(dst.shape) + " (redistribute keeps the global shape)");
  }
  if (src.dtype != dst.dtype) {
    throw InvalidInput("src and dst dtypes differ: " + std::string(DTypeName(src.dtype)) + " vs " +
                       std::string(DTypeName(dst.dtype)));
  }
  ValidateSpec(src, "src");
  ValidateSpec(dst, "dst");
  if (rank < 0 || rank >= src.mesh.size()) {
    throw InvalidInput("rank " + std::to_string(rank) + " is outside the mesh of " +
                       std::to_string(src.mesh.size()) + " ranks");
  }
}

// The planner and why: PyTorch _gen_transform_infos_non_cached (a non-default order or any
// _StridedShard forces the graph planner; otherwise greedy is the default), or the forced one.
void ChoosePlanner(const TensorSpec& src, const TensorSpec& dst, const PlanOptions& options, Plan& plan) {
  const bool non_default = !(IsDefaultOrder(src.EffectiveOrder()) && IsDefaultOrder(dst.EffectiveOrder()));
  const bool strided = src.HasStridedShard() || dst.HasStridedShard();
  const char* rule_reason = non_default ? "non-default shard order" : strided ? "strided shard" : "default";
  const PlannerKind rule_kind = (non_default || strided) ? PlannerKind::kGraph : PlannerKind::kGreedy;
  switch (options.planner) {
    case PlannerChoice::kAuto:
      plan.planner = rule_kind;
      plan.planner_reason = rule_reason;
      break;
    case PlannerChoice::kGreedy:
      // R-new _gen_transform_infos_non_cached sets use_graph_based_transform = True for a
      // non-default shard order or any _StridedShard before it reads the requested planner, so
      // a greedy request there is planned by the graph planner; the reason names the rule. An
      // undecodable _StridedShard then falls back to greedy in MakePlan, as in PyTorch.
      if (non_default || strided) {
        plan.planner = PlannerKind::kGraph;
        plan.planner_reason = std::string("--planner greedy overridden by PyTorch's rule: ") + rule_reason +
                              " forces the graph planner (_gen_transform_infos_non_cached)";
        break;
      }
      plan.planner = PlannerKind::kGreedy;
      plan.planner_reason = std::string("forced by --planner greedy (PyTorch's rule picks ") +
                            std::string(PlannerName(rule_kind)) + ": " + rule_reason + ")";
      break;
    case PlannerChoice::kGraph:
      plan.planner = PlannerKind::kGraph;
      plan.planner_reason = std::string("forced by --planner graph (PyTorch's rule picks ") +
                            std::string(PlannerName(rule_kind)) + ": " + rule_reason + ")";
      break;
  }
}

// _StridedShard plans are checked against the layouts before anyone prints or runs them. A
// greedy plan over them (R-new's fallback for undecodable split factors) follows no layout rule
// of its own, and a graph plan ends on the decoded shard order, whose layout differs from the
// _StridedShard's own when the split is uneven (PyTorch #168134).
void CheckStridedPlanRuns(const TensorSpec& src, const TensorSpec& dst, const Plan& plan) {
  Plan probe;
  probe.optimized = plan.raw;
  probe.notation = Notation(plan.raw, src);
  const std::string problem = CheckPlanExecutable(src, dst, probe);
  if (problem.empty()) return;
  // Shown like the flattened all_gather refusal: PyTorch's plan, why it is refused, what is safe.
  throw Unsupported(
      "refused on purpose: PyTorch runs the " + std::string(PlannerName(plan.planner)) + " plan " +
      probe.notation + " but it cannot run exactly (silent data corruption): " + problem +
      (plan.planner == PlannerKind::kGreedy
           ? " (PyTorch's greedy planner treats _StridedShard as not sharded; safe: a split factor "
             "that decodes into a shard order, or an explicit shard order)"
           : " (an uneven _StridedShard holds other elements than the shard order it decodes to, "
             "PyTorch #168134; safe: give the shard order explicitly, or make every split even)"));
}

}  // namespace

Plan MakePlan(const TensorSpec& src, const TensorSpec& dst, int64_t rank, const PlanOptions& options) {
  CheckSpecs(src, dst, rank);
  // Transitions no path can run come first; then the public API's guard on what remains (R -> P).
  CheckTransitions(src, dst);
  const bool partial_target = CheckPartialTargets(src, dst, options.internal_partial_target);
  Plan plan;
  ChoosePlanner(src, dst, options, plan);

  // Equal placements and equal orders: nothing to do (both planners return no transforms).
  // Orders must be compared too: equal placements with different orders still need a plan
  // (PR #172924's short-circuit on placements alone hung test_ordered_redistribute).
  const bool identical = src.placements == dst.placements && src.EffectiveOrder() == dst.EffectiveOrder();
  if (!identical) {
    if (plan.planner == PlannerKind::kGraph) {
      try {
        plan.raw = PlanGraph(src, dst, rank, options);
      } catch (const Error& e) {
        // R-new: _StridedShardNotDecodableError from the graph planner falls back to greedy.
        if (!GraphFallsBackToGreedy(e)) throw;
        const char* fallback = "graph fell back: strided shard not decodable";
        plan.planner_reason =
            options.planner == PlannerChoice::kAuto ? fallback : plan.planner_reason + "; " + fallback;
        plan.planner = PlannerKind::kGreedy;
        plan.raw = PlanGreedy(src, dst, rank, options);
      }
    } else {
      plan.raw = PlanGreedy(src, dst, rank, options);
    }
  }
  // Checked when a planner ran, even for no transforms: greedy's fallback returns none for equal
  // placements whose orders differ, which leaves every rank on the source's elements.
  if ((src.HasStridedShard() || dst.HasStridedShard()) && !identical) CheckStridedPlanRuns(src, dst, plan);

  if (partial_target) plan.planner_reason += "; internal redistribute to Partial (public API refuses it)";
  plan.internal_partial_target = partial_target;

  OptimizeResult optimized = OptimizeTransforms(plan.raw, src, options);
  plan.optimized = std::move(optimized.transforms);
  plan.skipped_merges = std::move(optimized.skipped);
  plan.notation = Notation(plan.optimized, src);
  plan.notation_unoptimized = Notation(plan.raw, src);
  for (const auto& t : plan.optimized) plan.cost_us += t.cost_us;
  return plan;
}

}  // namespace shardscope::engine
