#pragma once
// Ops on sharded tensors [PyTorch DTensor sharding propagation, ShardTensor domain parallelism]:
// what each op is, which sharding strategies it has, how one is chosen (propagation), and the
// local kernels that compute an op on one rank's shards (the same kernels compute the reference
// result on the unsharded global tensors). Execution with communication is op_executor.hpp.
//
// Strategy rules, per op (one mesh dim at a time; multi-dim meshes take the cartesian product
// of the per-dim lists with mesh dim 0 outermost, as PyTorch expand_to_full_mesh_op_strategy):
// - mm / bmm / linear (PyTorch gen_einsum_strategies, mm_like_strategy): [R | R, R], then batch
//   dims [S(b) | S(b), S(b)], the contracting dim [P(sum) | S(k), S(k)], the lhs free dim
//   [S(m) | S(m), R], the rhs free dim [S(n) | R, S(n)] (output | inputs). Candidates whose
//   inputs cannot be sharded (an extent smaller than its number of shards) are dropped. The
//   candidate with the least summed redistribute cost wins; ties go to the first.
// - add / sub / mul / gelu (PyTorch pointwise_strategy): the output follows the input with the
//   most shards (the first on ties), with broadcasting; Partial stays Partial for linear cases
//   (add/sub with sum/avg partials; mul with exactly one sum/avg-partial operand), else becomes R.
// - sum / mean (PyTorch common_reduction_strategy, linear): a Shard of a reduced dim becomes
//   P(sum) (sum) or P(avg) (mean); other shards move down; sum/avg partials stay.
// - softmax: the softmax dim and partials are replicated; transpose / permute: shard dims
//   follow the permutation; select: the selected dim is replicated; stack / cat: inputs follow
//   the most sharded one, cat's dim is replicated, stack's new dim shifts later shards.
// - layer_norm / layer_norm_backward (PyTorch layer_norm_strategy / layer_norm_bwd_strategy,
//   with PR #133502's output_mask handling): normalized dims and partials are replicated;
//   weight and bias are replicated; grad_weight / grad_bias are P(sum) over mesh dims that
//   shard the input's leading dims, R elsewhere; an output the mask does not request has no
//   sharding at all.
// - conv (ShardTensor domain parallelism): a cross-correlation along one dim with zero padding
//   ("same" size). A Shard of that dim is kept and the neighbours' halos are exchanged (a
//   "halo_exchange" collective); partials stay (conv is linear).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shardscope/engine/core/spec.hpp"
#include "shardscope/engine/core/tensor.hpp"

namespace shardscope::engine {

enum class OpKind {
  kAdd,
  kSub,
  kMul,
  kGelu,
  kMm,
  kBmm,
  kLinear,
  kSum,
  kMean,
  kSoftmax,
  kTranspose,
  kPermute,
  kSelect,
  kStack,
  kCat,
  kLayerNorm,
  kLayerNormBackward,
  kConv,
};

/// "add", "mm", "layer_norm_backward", ...
std::string_view OpKindName(OpKind kind);
/// Parses an op name; nullopt when unknown.
std::optional<OpKind> ParseOpKind(std::string_view name);
/// Every op name, comma-separated (for messages and help).
std::string OpKindNames();

/// One op application: tensor names in and out, and the op's non-tensor arguments.
/// Inputs per op: binary ops [a, b]; unary [x]; mm/bmm [lhs, rhs]; linear [x, weight] with
/// weight [N, K]; stack/cat [t0, t1, ...]; layer_norm [x, weight?, bias?];
/// layer_norm_backward [grad_out, x, mean, rstd, weight?]. An absent optional input is "".
/// Outputs: one, except layer_norm [out, mean, rstd] and layer_norm_backward [grad_input,
/// grad_weight, grad_bias] where an output not requested is "".
struct OpCall {
  OpKind kind = OpKind::kAdd;
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
  std::vector<int64_t> dims;      ///< sum/mean (empty: all), transpose (2 dims), permute
  int64_t dim = 0;                ///< softmax, select, stack, cat, conv (negative counts from the end)
  int64_t index = 0;              ///< select
  bool keepdim = false;           ///< sum/mean
  int64_t normalized_ndim = 1;    ///< layer_norm(_backward): trailing dims normalized
  double eps = 1e-5;              ///< layer_norm
  std::vector<bool> output_mask;  ///< layer_norm_backward: grad_input, grad_weight, grad_bias
  std::vector<double> kernel;     ///< conv taps (odd count); out[i] = sum_j k[j] x[i + j - h]

  /// Non-tensor arguments as text, e.g. "dim=-1", "dims=[0,1] keepdim" ("" when none).
  std::string ArgsText() const;
};

/// One candidate strategy: placements required of each input and given to each output
/// (nullopt for an absent input or an output not requested), and its cost.
struct OpStrategy {
  std::vector<std::optional<Placements>> inputs;
  std::vector<std::optional<Placements>> outputs;
  /// Sum over inputs of RedistributeCostUs(current, required); +inf when a needed transition
  /// is not allowed (S->P, P(a)->P(b)).
  double cost_us = 0.0;
};

/// The outcome of propagation for one op call.
struct OpDecision {
  std::vector<OpStrategy> candidates;  ///< in enumeration order
  size_t chosen = 0;
  std::string rule;  ///< how `chosen` was picked, one line
  std::string note;  ///< where shardscope differs from PyTorch for this call, "" when it does not
  /// Specs the inputs must have before the kernels run (nullopt for absent inputs).
  std::vector<std::optional<TensorSpec>> inputs;
  /// Output specs (nullopt for outputs not requested).
  std::vector<std::optional<TensorSpec>> outputs;
  /// conv only: mesh dims whose halo must be exchanged (those that shard the conv dim).
  std::vector<int> halo_mesh_dims;
  /// mean only: the divisor of the local sum (product of the extents it averages over).
  double mean_divisor = 1.0;
};

/// Propagates shardings through one op: validates shapes, dtypes and arguments against the
/// inputs' specs (nullptr for absent inputs), enumerates candidates, picks one and returns the
/// required input specs and output specs. Deterministic: every rank gets the same decision.
/// Throws Error(kInvalidInput) naming the op and argument for bad shapes, dims or arguments, and
/// Error(kUnsupported) for inputs with StridedShards, non-default shard orders or explicit
/// per-rank sizes, and for integer dtypes in ops that need floating point.
OpDecision PropagateOp(const OpCall& call, const std::vector<const TensorSpec*>& inputs,
                       int devices_per_host);

/// Output shapes of an op for given input shapes (nullopt for outputs not requested); the same
/// checks as PropagateOp on shapes. Throws Error(kInvalidInput).
std::vector<std::optional<Shape>> OpOutputShapes(const OpCall& call, const std::vector<const Shape*>& inputs);

/// Runs the op's kernel on local tensors (nullptr for absent inputs): on one rank's shards laid
/// out as the decision requires, or on global tensors for the reference result. `mean_divisor`
/// divides mean's local sum (0: the product of the reduced extents, the global definition).
/// conv's input must already hold `halo` extra elements on both sides of its dim (zeros beyond
/// the tensor's edge); the output has the input's extent minus 2*halo there. Elements are
/// computed in double and rounded once to the output dtype (inputs' dtype).
std::vector<std::optional<LocalTensor>> ComputeOp(const OpCall& call,
                                                  const std::vector<const LocalTensor*>& inputs,
                                                  double mean_divisor = 0.0);

/// conv's halo width: (kernel size - 1) / 2.
int64_t ConvHalo(const OpCall& call);

/// Tolerance for comparing an op's sharded result with its global reference in `dtype`: 0
/// (exact) for integers, a small relative tolerance for floats (partial sums round in a
/// different order).
double OpTolerance(DType dtype);

}  // namespace shardscope::engine
