#pragma once
// PyTorch's plan notation (stringify_transform_infos).

#include <string>
#include <vector>

#include "shardscope/engine/core/spec.hpp"
#include "shardscope/engine/plan/plan.hpp"

namespace shardscope::engine {

/// PyTorch stringify_transform_infos: "S(0)[0]S(0)[1]->S(0)R" ("-->" before a flattened step's
/// result).
std::string Notation(const std::vector<Transform>& transforms, const TensorSpec& src);

}  // namespace shardscope::engine
