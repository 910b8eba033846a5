#pragma once
// Private to the program layer: the run's schedule (runner.cpp) and the memory check built on it
// (runner_memory.cpp).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "shardscope/engine/ops/ops.hpp"
#include "shardscope/engine/plan/planner.hpp"
#include "shardscope/program/runner.hpp"
#include "shardscope/program/scenario.hpp"

namespace shardscope::program::detail {

using namespace shardscope::engine;  // NOLINT(google-build-using-namespace)

// Every spec along the run, computed once, the same on every rank.
struct Planned {
  size_t step;
  bool backward;
  size_t tensor;
  TensorSpec src, dst;
  PlanOptions options;
  // Op steps only (op != nullptr): the decision for the inputs' specs at this point, and the
  // tensor indices of inputs and outputs (kNone for absent inputs / unrequested outputs).
  const OpCall* op = nullptr;
  OpDecision decision{};
  std::vector<TensorSpec> input_specs{};
  std::vector<size_t> inputs{}, outputs{};
  int64_t op_id = -1;
};
constexpr size_t kNone = static_cast<size_t>(-1);

inline bool HasPartial(const TensorSpec& spec) {
  return std::any_of(spec.placements.begin(), spec.placements.end(),
                     [](const Placement& p) { return p.IsPartial(); });
}

// Every spec along the run: `repeat` times the step list, each tensor continuing from where the
// previous step left it.
std::vector<Planned> BuildSchedule(const Scenario& scenario, int repeat);

/// Throws Error(kInvalidInput) naming the largest tensor when EstimateMemory exceeds
/// AvailableMemoryBytes (a run that cannot fit is refused before it allocates).
void RefuseWhatCannotFit(const Scenario& scenario, const RunOptions& options);

}  // namespace shardscope::program::detail

namespace shardscope::program {
using detail::BuildSchedule;
using detail::HasPartial;
using detail::kNone;
using detail::Planned;
}  // namespace shardscope::program
