#pragma once
// Private to the engine: the trace records the executor and the op executor write (redistribute
// begin/end, plan steps), and the placement and mesh-dim lists as the trace stores them.

#include <cstdint>
#include <string>
#include <vector>

#include "shardscope/engine/exec/executor.hpp"
#include "shardscope/engine/plan/planner.hpp"
#include "shardscope/trace/events.hpp"

namespace shardscope::engine::detail {

inline std::vector<int64_t> ToInt64(const std::vector<int>& dims) { return {dims.begin(), dims.end()}; }

/// "S(0)", "R", ... one string per mesh dim.
std::vector<std::string> PlacementStrings(const Placements& placements);

// The fields a transform shows in every trace record of it (plan steps, step begins).
template <class Record>
void DescribeTransform(const Transform& t, Record& r) {
  r.mesh_dims = ToInt64(t.mesh_dims);
  r.src = t.src.ToString();
  r.dst = t.dst.ToString();
  r.comm = std::string(CommKindName(t.comm));
  r.logical_shape = t.logical_shape;
}

/// A plan transform as a trace plan step.
trace::PlanStep ToTraceStep(const Transform& t);

/// The redistribute's begin event (placements, orders, both plans, skipped merges, cost).
void EmitRedistributeBegin(const ExecuteOptions& options, const TensorSpec& src, const TensorSpec& dst,
                           const Plan& plan);

/// Its end event (with checksums when options.checksums).
void EmitRedistributeEnd(const ExecuteOptions& options, bool ok, const std::string& error,
                         const LocalTensor& in, const LocalTensor* out);

}  // namespace shardscope::engine::detail
