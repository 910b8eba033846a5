#pragma once
// The layouts of a tensor along a plan's steps, and the dry run that checks a plan against them
// without moving data. The executor runs plans through these layouts and MakePlan checks its
// choice with the dry run, so both see one definition of where every element lies after each step.

#include <cstdint>
#include <map>
#include <string>

#include "shardscope/engine/core/layout.hpp"
#include "shardscope/engine/core/spec.hpp"
#include "shardscope/engine/plan/plan.hpp"

namespace shardscope::engine {

/// Every rank's layout after each step of plan.optimized, from src's. Explicit per-rank sizes
/// follow Redistribute's rule (exec/executor.hpp): a mesh dim keeps src's sizes until its first
/// step, uses the chunk rule between its first and last step, and dst's sizes after its last
/// step. Borrows `src`, `dst` and `plan`, which must outlive it; cheap to construct.
class PlanLayouts {
 public:
  PlanLayouts(const TensorSpec& src, const TensorSpec& dst, const Plan& plan);

  /// The state before the first step (src's placements and effective order).
  PlanState Start() const;
  /// The state after `t` (ExecutionAdvance on src's mesh).
  PlanState Advance(const PlanState& state, const Transform& t) const;
  /// `rank`'s layout in `state`, the state after `k` steps. Throws Error(kUnsupported) when the
  /// explicit sizes in force do not fit that state's layout.
  RankLayout At(const PlanState& state, int64_t k, int64_t rank) const;

 private:
  const TensorSpec& src_;
  const TensorSpec& dst_;
  std::map<int, int64_t> first_touch_;  // mesh dim -> first step that changes it
  std::map<int, int64_t> last_touch_;   // mesh dim -> last step that changes it
};

/// "redistribute step K (mesh dims A,B, X->Y)": how messages name a step of a plan.
std::string DescribeStep(int64_t k, const Transform& t);

/// Elements that layouts `a` and `b` have in common (the size of their index sets' intersection).
int64_t SharedElements(const RankLayout& a, const RankLayout& b);

/// Walks `plan` over every rank's layouts without moving data: "" when Redistribute can run it
/// on every rank, else the first step and rank whose target piece its group does not hold (or
/// the plan's end state differs from `dst`), or the layout error that stops the walk. Costs
/// O(mesh size x steps) layouts.
std::string CheckPlanExecutable(const TensorSpec& src, const TensorSpec& dst, const Plan& plan);

}  // namespace shardscope::engine
