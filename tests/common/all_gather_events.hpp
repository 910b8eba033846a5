#pragma once
// One small redistribute as a trace holds it, for the trace writer's tests: S(0) -> R of a
// rows x 8 f32 tensor over a 1-D mesh of `world` ranks, seen from `rank` (its shard is rows 4 *
// rank .. of 4 x 8): begin, one all_gather step (step begin, the collective, step end) and end.

#include <cstdint>
#include <string>
#include <vector>

#include "collective.hpp"
#include "shardscope/trace/events.hpp"

namespace shardscope::testing {

/// The five events of redistribute `id` named `tensor`: every peer is sent and sends
/// `peer_bytes`; the times are t0, t0 + dt, ... t0 + 5 dt in event order (the collective's start
/// and end t0 + 2 dt and t0 + 3 dt).
inline std::vector<trace::Event> AllGatherRedistribute(int64_t rank, int64_t world, int64_t id, int64_t rows,
                                                       int64_t peer_bytes, const std::string& tensor,
                                                       int64_t t0, int64_t dt) {
  using namespace trace;
  RedistributeBegin b;
  b.id = id;
  b.Mutable().tensor = tensor;
  b.Mutable().global_shape = {rows, 8};
  b.Mutable().dtype = "f32";
  b.Mutable().src_placements = {"S(0)"};
  b.Mutable().dst_placements = {"R"};
  b.Mutable().planner = "greedy";
  b.Mutable().planner_reason = "default";
  b.Mutable().notation = b.Mutable().notation_unoptimized = "S(0)->R";
  b.Mutable().raw_plan =
      b.Mutable().optimized_plan = {PlanStep{{0}, "S(0)", "R", "all_gather", {rows, 8}, false, 1.0, 3.5}};
  b.t_ns = t0;
  std::vector<int64_t> group, bytes;
  for (int64_t r = 0; r < world; ++r) group.push_back(r), bytes.push_back(r == rank ? 0 : peer_bytes);
  StepBegin sb{id, 0, "S(0)", "R", "all_gather", {0}, {rows, 8}, {4, 8}, {4 * rank, 0}, t0 + dt};
  Collective c = MakeCollective(id, 0, "all_gather", "f32", false, {0}, group, bytes, bytes, t0 + 2 * dt,
                                t0 + 3 * dt, -1);
  StepEnd se{id, 0, {rows, 8}, {0, 0}, t0 + 4 * dt};
  RedistributeEnd e{id, t0 + 5 * dt, true, ""};
  return {std::move(b), std::move(sb), std::move(c), std::move(se), std::move(e)};
}

}  // namespace shardscope::testing
