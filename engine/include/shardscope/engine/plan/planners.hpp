#pragma once
// The two planners [PyTorch DTensorRedistributePlanner]: greedy two-pass and graph (Dijkstra over
// (placements, shard order) states). MakePlan (make_plan.hpp) picks one by PyTorch's rule.

#include <cstdint>
#include <vector>

#include "shardscope/engine/core/spec.hpp"
#include "shardscope/engine/plan/plan.hpp"
#include "shardscope/engine/plan/plan_options.hpp"

namespace shardscope::engine {

/// PyTorch generate_greedy_transform_infos for `rank`'s coordinate (logical shapes per rank).
std::vector<Transform> PlanGreedy(const TensorSpec& src, const TensorSpec& dst, int64_t rank,
                                  const PlanOptions& options);
/// PyTorch generate_graph_based_transform_infos (Dijkstra, ties to the first pushed state).
/// Throws Error(kUnsupported) with "not decodable" when a StridedShard cannot be decoded, and
/// Error(kUnsupported) when no path exists.
std::vector<Transform> PlanGraph(const TensorSpec& src, const TensorSpec& dst, int64_t rank,
                                 const PlanOptions& options);

}  // namespace shardscope::engine
