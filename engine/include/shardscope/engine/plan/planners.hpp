#pragma once
// The two planners [PyTorch DTensorRedistributePlanner]: greedy two-pass and graph (Dijkstra over
// (placements, shard order) states). MakePlan (make_plan.hpp) picks one by PyTorch's rule.

#include <cstdint>
#include <string>
#include <vector>

#include "shardscope/engine/core/spec.hpp"
#include "shardscope/engine/plan/plan.hpp"
#include "shardscope/engine/plan/plan_options.hpp"
#include "shardscope/error.hpp"

namespace shardscope::engine {

/// PyTorch's _StridedShardNotDecodableError: a spec's _StridedShards match no shard order on its
/// mesh. PlanGraph throws it; MakePlan falls back to greedy on this type, never on the message's
/// words. Code kUnsupported, so a caller that catches Error sees an ordinary unsupported request.
class StridedShardNotDecodable : public Error {
 public:
  explicit StridedShardNotDecodable(const std::string& message) : Error(ErrorCode::kUnsupported, message) {}
};

/// True when the graph planner's error `e` sends MakePlan to the greedy planner (R-new's
/// fallback on _StridedShardNotDecodableError): exactly when it is a StridedShardNotDecodable.
bool GraphFallsBackToGreedy(const Error& e);

/// PyTorch generate_greedy_transform_infos for `rank`'s coordinate (logical shapes per rank).
std::vector<Transform> PlanGreedy(const TensorSpec& src, const TensorSpec& dst, int64_t rank,
                                  const PlanOptions& options);
/// PyTorch generate_graph_based_transform_infos (Dijkstra, ties to the first pushed state).
/// Throws StridedShardNotDecodable (code kUnsupported) when a StridedShard cannot be decoded, and
/// Error(kUnsupported) when no path exists.
std::vector<Transform> PlanGraph(const TensorSpec& src, const TensorSpec& dst, int64_t rank,
                                 const PlanOptions& options);

}  // namespace shardscope::engine
