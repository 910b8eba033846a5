#pragma once
// Private to the ops: the argument checks and dim arguments shared by the op definitions
// (ops.cpp), the sharding rules (op_strategy.cpp) and the kernels (op_kernels.cpp).

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "shardscope/engine/ops/ops.hpp"

namespace shardscope::engine::detail {

/// The op's name, as error messages start.
std::string Where(const OpCall& call);

/// Throws Error(kInvalidInput) "<op>: <what>".
[[noreturn]] void Bad(const OpCall& call, const std::string& what);

/// Normalizes a possibly negative dim against `ndim` (PyTorch wrap_dim); `name` is the argument.
int64_t NormDim(const OpCall& call, int64_t dim, int64_t ndim, const char* name);

/// Whether input `i` of the op may be absent (layer_norm's weight and bias, its backward's bias).
bool IsOptionalInput(OpKind kind, size_t i);

/// Throws unless the op takes `given` inputs.
void CheckArity(const OpCall& call, size_t given);

/// Whether the op computes in floating point only (gelu, mean, softmax, layer_norm).
bool NeedsFloat(OpKind kind);

/// The normalized, sorted reduction dims of sum/mean (all dims when the call names none).
std::vector<int64_t> ReducedDims(const OpCall& call, int64_t ndim);

/// The first normalized dim of layer_norm over `x` (x.size() - normalized_ndim), checked.
int64_t LayerNormAxis(const OpCall& call, const Shape& x);

/// The output order of transpose (two dims swapped) or permute (the call's dims): entry d is the
/// input dim that becomes output dim d. Throws Error(kInvalidInput) naming the op for dims that
/// are out of range, repeated or (permute) not all of them.
std::vector<int64_t> Permutation(const OpCall& call, int64_t ndim);

}  // namespace shardscope::engine::detail
