#pragma once
// Scenario files: a mesh, named distributed tensors and a list of redistribute steps, as JSON
// (schema in docs/scenario.md). Used by `shardscope run`, the GUI sandbox and the samples.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shardscope/engine/core/spec.hpp"
#include "shardscope/engine/exec/executor.hpp"
#include "shardscope/engine/ops/ops.hpp"
#include "shardscope/engine/plan/planner.hpp"

namespace shardscope::program {

/// One named tensor of a scenario: its initial distribution and how its data is generated.
struct ScenarioTensor {
  std::string name;
  engine::TensorSpec spec;
  engine::ShapeMode shapes = engine::ShapeMode::kKnown;
  uint64_t seed = 0;  ///< inputs are a function of (seed, global index)
  /// For a tensor an op step produces: that step's index (its spec is the op's output spec at
  /// that point and it has no seeded data); -1 for an input tensor.
  int64_t produced_by = -1;
  /// Where it is defined, "path:line:column" (an op output: its step's position); for messages.
  std::string where;
};

/// One step: a redistribute (tensor `tensor` goes to `to` and `order`, planned with `options`),
/// or, when `op` is set, an op on sharded tensors (whose implicit redistributes use `options`).
struct ScenarioStep {
  std::optional<engine::OpCall> op;
  std::string tensor;
  engine::Placements to;
  std::optional<engine::ShardOrder> order;
  std::map<int, std::vector<int64_t>> explicit_sizes;
  engine::PlanOptions options;
  bool backward = false;  ///< run the gradient redistribute of this step afterwards
};

/// A parsed, validated scenario.
struct Scenario {
  std::string path;  ///< where it came from ("<string>" when parsed from memory)
  engine::Mesh mesh;
  std::vector<ScenarioTensor> tensors;
  std::vector<ScenarioStep> steps;
  /// Index of the tensor named `name`; throws Error(kInvalidInput) if absent.
  size_t TensorIndex(const std::string& name) const;
};

/// Parses scenario JSON text (a scenario whose steps include ops is a program; docs/program.md). Every error
/// is one line "path:line:column: what", where the position is the offending JSON value (syntax errors: where
/// parsing stopped). Throws Error(kInvalidInput).
Scenario ParseScenario(std::string_view text, const std::string& path);
/// Reads and parses a file; a missing or unreadable file is Error(kInvalidInput).
Scenario LoadScenario(const std::string& path);

}  // namespace shardscope::program
