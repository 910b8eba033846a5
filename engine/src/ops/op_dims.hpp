#pragma once
// Private to the ops: dim arguments shared by the sharding rules (ops.cpp) and the kernels
// (op_kernels.cpp).

#include <cstdint>
#include <vector>

#include "shardscope/engine/ops/ops.hpp"

namespace shardscope::engine::detail {

/// The output order of transpose (two dims swapped) or permute (the call's dims): entry d is the
/// input dim that becomes output dim d. Throws Error(kInvalidInput) naming the op for dims that
/// are out of range, repeated or (permute) not all of them.
std::vector<int64_t> Permutation(const OpCall& call, int64_t ndim);

}  // namespace shardscope::engine::detail
