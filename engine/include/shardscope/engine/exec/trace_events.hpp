#pragma once
// A plan and what a rank holds as trace events: the one conversion from engine types to the
// trace's events (docs/trace-format.md). The executor writes its records through it
// (exec/trace_records.cpp), and so do the GUI's plan-only gallery and `bench trace`, so what they
// show is what a run writes. Ids and times are the caller's: every event comes back with id /
// redistribute_id 0 and its times 0.

#include <cstdint>
#include <string_view>
#include <vector>

#include "shardscope/engine/core/layout.hpp"
#include "shardscope/engine/plan/planner.hpp"
#include "shardscope/trace/events.hpp"

namespace shardscope::engine {

/// A plan transform as a trace plan step.
trace::PlanStep TraceStep(const Transform& t);

/// The redistribute_begin of a redistribute from `src` to `dst` planned as `plan`: shape, dtype,
/// placements, shard orders (PyTorch's notation, "" for the default), planner and its reason, both
/// plans and notations, skipped merges and cost. Tensor name, id, time and op link are the caller's.
trace::RedistributeBegin TraceBegin(const TensorSpec& src, const TensorSpec& dst, const Plan& plan);

/// The step_begin of step `k` (transform `t`) with this rank holding `mine` before it.
trace::StepBegin TraceStepBegin(int64_t k, const Transform& t, const RankLayout& mine);

/// The step_end of step `k` with this rank holding `mine` after it.
trace::StepEnd TraceStepEnd(int64_t k, const RankLayout& mine);

/// The collective of step `k`: `kind` ("all_gather", ...) over `mesh_dims`, i.e. the global ranks
/// `group`, in `dtype`, with the bytes sent to and received from each member of `group`.
trace::Collective TraceCollective(int64_t k, std::string_view kind, const std::vector<int>& mesh_dims,
                                  const std::vector<int64_t>& group, DType dtype,
                                  const std::vector<int64_t>& bytes_sent,
                                  const std::vector<int64_t>& bytes_recv, bool negotiated);

}  // namespace shardscope::engine
