// Op definitions and shape rules: the op table, argument checks and output shapes. The sharding
// rules (strategy enumeration and choice) are in op_strategy.cpp; both are summarized in ops.hpp
// with the PyTorch / ShardTensor functions they follow.
#include "shardscope/engine/ops/ops.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <sstream>

#include "ops/op_dims.hpp"
#include "shardscope/engine/core/layout.hpp"
#include "shardscope/error.hpp"

namespace shardscope::engine {
namespace {

using detail::Bad;
using detail::CheckArity;
using detail::IsOptionalInput;
using detail::LayerNormAxis;
using detail::NormDim;
using detail::Permutation;
using detail::ReducedDims;

struct OpInfo {
  OpKind kind;
  const char* name;
};
constexpr OpInfo kOps[] = {
    {OpKind::kAdd, "add"},
    {OpKind::kSub, "sub"},
    {OpKind::kMul, "mul"},
    {OpKind::kGelu, "gelu"},
    {OpKind::kMm, "mm"},
    {OpKind::kBmm, "bmm"},
    {OpKind::kLinear, "linear"},
    {OpKind::kSum, "sum"},
    {OpKind::kMean, "mean"},
    {OpKind::kSoftmax, "softmax"},
    {OpKind::kTranspose, "transpose"},
    {OpKind::kPermute, "permute"},
    {OpKind::kSelect, "select"},
    {OpKind::kStack, "stack"},
    {OpKind::kCat, "cat"},
    {OpKind::kLayerNorm, "layer_norm"},
    {OpKind::kLayerNormBackward, "layer_norm_backward"},
    {OpKind::kConv, "conv"},
};

size_t ExpectedInputs(OpKind kind) {
  switch (kind) {
    case OpKind::kAdd:
    case OpKind::kSub:
    case OpKind::kMul:
    case OpKind::kMm:
    case OpKind::kBmm:
    case OpKind::kLinear:
      return 2;
    case OpKind::kLayerNorm:
      return 3;
    case OpKind::kLayerNormBackward:
      return 5;
    case OpKind::kStack:
    case OpKind::kCat:
      return 0;  // one or more
    default:
      return 1;
  }
}

size_t NumOutputs(OpKind kind) {
  return kind == OpKind::kLayerNorm || kind == OpKind::kLayerNormBackward ? 3 : 1;
}

// Broadcast shape of a and b (numpy rules); throws naming both shapes.
Shape Broadcast(const OpCall& call, const Shape& a, const Shape& b) {
  const size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t x = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t y = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (x != y && x != 1 && y != 1) {
      Bad(call, "shapes " + FormatShape(a) + " and " + FormatShape(b) + " do not broadcast (dim " +
                    std::to_string(i) + ": " + std::to_string(x) + " vs " + std::to_string(y) + ")");
    }
    out[i] = x == 1 ? y : x;
  }
  return out;
}

Shape StatShape(const Shape& x, int64_t axis) {
  Shape s(x.begin(), x.begin() + axis);
  s.resize(x.size(), 1);
  return s;
}

void ExpectShape(const OpCall& call, const Shape& got, const Shape& want, const std::string& what) {
  if (got != want) Bad(call, what + " has shape " + FormatShape(got) + ", expected " + FormatShape(want));
}

}  // namespace

namespace detail {

std::string Where(const OpCall& call) { return std::string(OpKindName(call.kind)); }

[[noreturn]] void Bad(const OpCall& call, const std::string& what) {
  throw InvalidInput(Where(call) + ": " + what);
}

// Normalizes a possibly negative dim against `ndim` (PyTorch wrap_dim); `name` is the argument.
int64_t NormDim(const OpCall& call, int64_t dim, int64_t ndim, const char* name) {
  if (dim < -ndim || dim >= ndim || ndim == 0) {
    Bad(call, std::string(name) + "=" + std::to_string(dim) + " is out of range for a " +
                  std::to_string(ndim) + "-d tensor (expected " + std::to_string(-ndim) + " to " +
                  std::to_string(ndim - 1) + ")");
  }
  return dim < 0 ? dim + ndim : dim;
}

bool IsOptionalInput(OpKind kind, size_t i) {
  return (kind == OpKind::kLayerNorm && i >= 1) || (kind == OpKind::kLayerNormBackward && i == 4);
}

// Shared argument checks; returns the normalized reduction dims for sum/mean.
void CheckArity(const OpCall& call, size_t given) {
  const size_t want = ExpectedInputs(call.kind);
  if (want == 0 && given == 0) Bad(call, "expects one or more input tensors");
  if (want != 0 && given != want) {
    Bad(call, "expects " + std::to_string(want) + " inputs, got " + std::to_string(given));
  }
}

bool NeedsFloat(OpKind kind) {
  return kind == OpKind::kGelu || kind == OpKind::kMean || kind == OpKind::kSoftmax ||
         kind == OpKind::kLayerNorm || kind == OpKind::kLayerNormBackward;
}

std::vector<int64_t> ReducedDims(const OpCall& call, int64_t ndim) {
  std::vector<int64_t> dims;
  if (call.dims.empty()) {
    for (int64_t d = 0; d < ndim; ++d) dims.push_back(d);
  } else {
    for (int64_t d : call.dims) dims.push_back(NormDim(call, d, ndim, "dims"));
  }
  std::vector<int64_t> sorted = dims;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) Bad(call, "dims lists a dim twice");
  return sorted;
}

int64_t LayerNormAxis(const OpCall& call, const Shape& x) {
  const auto nd = static_cast<int64_t>(x.size());
  if (call.normalized_ndim < 1 || call.normalized_ndim > nd) {
    Bad(call, "normalized_ndim=" + std::to_string(call.normalized_ndim) + " must be in 1.." +
                  std::to_string(nd) + " for a " + std::to_string(nd) + "-d input");
  }
  return nd - call.normalized_ndim;
}

}  // namespace detail

std::vector<int64_t> detail::Permutation(const OpCall& call, int64_t ndim) {
  std::vector<int64_t> perm;
  if (call.kind == OpKind::kTranspose) {
    if (call.dims.size() != 2) Bad(call, "expects dims=[d0, d1]");
    perm.resize(static_cast<size_t>(ndim));
    std::iota(perm.begin(), perm.end(), 0);
    const int64_t a = NormDim(call, call.dims[0], ndim, "dims[0]");
    const int64_t b = NormDim(call, call.dims[1], ndim, "dims[1]");
    std::swap(perm[static_cast<size_t>(a)], perm[static_cast<size_t>(b)]);
    return perm;
  }
  if (static_cast<int64_t>(call.dims.size()) != ndim) {
    Bad(call, "dims must list all " + std::to_string(ndim) + " dims of the input in their new order");
  }
  std::vector<bool> seen(static_cast<size_t>(ndim), false);
  for (int64_t d : call.dims) {
    const int64_t n = NormDim(call, d, ndim, "dims");
    if (seen[static_cast<size_t>(n)])
      Bad(call, "dims is not a permutation (dim " + std::to_string(n) + " twice)");
    seen[static_cast<size_t>(n)] = true;
    perm.push_back(n);
  }
  return perm;
}

std::string_view OpKindName(OpKind kind) {
  for (const OpInfo& op : kOps) {
    if (op.kind == kind) return op.name;
  }
  return "?";
}

std::optional<OpKind> ParseOpKind(std::string_view name) {
  for (const OpInfo& op : kOps) {
    if (name == op.name) return op.kind;
  }
  return std::nullopt;
}

std::string OpKindNames() {
  std::string out;
  for (const OpInfo& op : kOps) {
    if (!out.empty()) out += ", ";
    out += op.name;
  }
  return out;
}

std::string OpCall::ArgsText() const {
  std::ostringstream os;
  auto list = [&](const std::vector<int64_t>& v) {
    os << "[";
    for (size_t i = 0; i < v.size(); ++i) os << (i ? "," : "") << v[i];
    os << "]";
  };
  switch (kind) {
    case OpKind::kSum:
    case OpKind::kMean:
      if (!dims.empty()) {
        os << "dims=";
        list(dims);
      }
      if (keepdim) os << (dims.empty() ? "" : " ") << "keepdim";
      break;
    case OpKind::kTranspose:
    case OpKind::kPermute:
      os << "dims=";
      list(dims);
      break;
    case OpKind::kSoftmax:
    case OpKind::kStack:
    case OpKind::kCat:
      os << "dim=" << dim;
      break;
    case OpKind::kSelect:
      os << "dim=" << dim << " index=" << index;
      break;
    case OpKind::kLayerNorm:
      os << "normalized_ndim=" << normalized_ndim << " eps=" << eps;
      break;
    case OpKind::kLayerNormBackward:
      os << "normalized_ndim=" << normalized_ndim << " output_mask=[";
      for (size_t i = 0; i < output_mask.size(); ++i)
        os << (i ? "," : "") << (output_mask[i] ? "true" : "false");
      os << "]";
      break;
    case OpKind::kConv:
      os << "dim=" << dim << " kernel=[";
      for (size_t i = 0; i < kernel.size(); ++i) os << (i ? "," : "") << kernel[i];
      os << "]";
      break;
    default:
      break;
  }
  return os.str();
}

int64_t ConvHalo(const OpCall& call) { return static_cast<int64_t>(call.kernel.size() / 2); }

double OpTolerance(DType dtype) {
  switch (dtype) {
    case DType::kF64:
      return 1e-9;
    case DType::kF32:
      return 1e-4;
    case DType::kF16:
    case DType::kBF16:
      return 5e-2;
    default:
      return 0.0;
  }
}

namespace {

// mm [m,k] @ [k,n] and linear [m,k] with weight [n,k].
Shape MatmulShape(const OpCall& call, const Shape& x, const Shape& w) {
  if (x.size() != 2 || w.size() != 2) {
    Bad(call, "expects 2-d inputs, got " + FormatShape(x) + " and " + FormatShape(w));
  }
  const bool linear = call.kind == OpKind::kLinear;
  const int64_t k2 = linear ? w[1] : w[0];
  if (x[1] != k2) {
    Bad(call, "inner dims differ: " + FormatShape(x) + (linear ? " and weight " : " @ ") + FormatShape(w) +
                  " (" + std::to_string(x[1]) + " vs " + std::to_string(k2) + ")");
  }
  return Shape{x[0], linear ? w[0] : w[1]};
}

Shape BmmShape(const OpCall& call, const Shape& x, const Shape& y) {
  if (x.size() != 3 || y.size() != 3 || x[0] != y[0] || x[2] != y[1]) {
    Bad(call, "expects [b,m,k] @ [b,k,n], got " + FormatShape(x) + " and " + FormatShape(y));
  }
  return Shape{x[0], x[1], y[2]};
}

// sum/mean: reduced dims dropped, or kept as 1 with keepdim.
Shape ReducedShape(const OpCall& call, const Shape& x) {
  const auto nd = static_cast<int64_t>(x.size());
  const std::vector<int64_t> reduced = ReducedDims(call, nd);
  Shape s;
  for (int64_t d = 0; d < nd; ++d) {
    if (!std::binary_search(reduced.begin(), reduced.end(), d)) {
      s.push_back(x[static_cast<size_t>(d)]);
    } else if (call.keepdim) {
      s.push_back(1);
    }
  }
  return s;
}

Shape PermutedShape(const OpCall& call, const Shape& x) {
  const std::vector<int64_t> perm = Permutation(call, static_cast<int64_t>(x.size()));
  Shape s;
  for (int64_t p : perm) s.push_back(x[static_cast<size_t>(p)]);
  return s;
}

Shape SelectShape(const OpCall& call, const Shape& x) {
  const int64_t dim = NormDim(call, call.dim, static_cast<int64_t>(x.size()), "dim");
  const int64_t extent = x[static_cast<size_t>(dim)];
  if (call.index < -extent || call.index >= extent) {
    Bad(call, "index=" + std::to_string(call.index) + " is out of range for dim " + std::to_string(dim) +
                  " of extent " + std::to_string(extent));
  }
  Shape s = x;
  s.erase(s.begin() + dim);
  return s;
}

// stack (equal shapes, a new dim) and cat (equal outside the dim, which adds up).
Shape JoinedShape(const OpCall& call, const std::vector<const Shape*>& in) {
  const Shape& x = *in[0];
  const auto nd = static_cast<int64_t>(x.size());
  const bool stack = call.kind == OpKind::kStack;
  const int64_t dim = NormDim(call, call.dim, stack ? nd + 1 : nd, "dim");
  Shape s = x;
  for (size_t i = 1; i < in.size(); ++i) {
    const Shape& y = *in[i];
    bool ok = y.size() == x.size();
    for (size_t d = 0; ok && d < x.size(); ++d)
      ok = stack || static_cast<int64_t>(d) == dim ? (!stack || y[d] == x[d]) : y[d] == x[d];
    if (!ok) {
      Bad(call, "input " + std::to_string(i) + " has shape " + FormatShape(y) + ", which does not " +
                    (stack ? "equal " : "match outside dim " + std::to_string(dim) + " ") + FormatShape(x));
    }
    if (!stack) s[static_cast<size_t>(dim)] += y[static_cast<size_t>(dim)];
  }
  if (stack) s.insert(s.begin() + dim, static_cast<int64_t>(in.size()));
  return s;
}

// layer_norm(x, weight, bias) -> (y, mean, rstd).
void LayerNormShapes(const OpCall& call, const std::vector<const Shape*>& in,
                     std::vector<std::optional<Shape>>& out) {
  const Shape& x = *in[0];
  const int64_t axis = LayerNormAxis(call, x);
  const Shape normalized(x.begin() + axis, x.end());
  if (in[1]) ExpectShape(call, *in[1], normalized, "weight");
  if (in[2]) ExpectShape(call, *in[2], normalized, "bias");
  out[0] = x;
  out[1] = StatShape(x, axis);
  out[2] = StatShape(x, axis);
}

// layer_norm_backward(grad_out, input, mean, rstd, weight) -> the outputs output_mask asks for.
void LayerNormBackwardShapes(const OpCall& call, const std::vector<const Shape*>& in,
                             std::vector<std::optional<Shape>>& out) {
  const Shape& input = *in[1];
  const int64_t axis = LayerNormAxis(call, input);
  const Shape normalized(input.begin() + axis, input.end());
  ExpectShape(call, *in[0], input, "grad_out");
  ExpectShape(call, *in[2], StatShape(input, axis), "mean");
  ExpectShape(call, *in[3], StatShape(input, axis), "rstd");
  if (in[4]) ExpectShape(call, *in[4], normalized, "weight");
  if (call.output_mask.size() != 3)
    Bad(call, "output_mask must have 3 entries (grad_input, grad_weight, grad_bias)");
  if (call.output_mask[1] && !in[4]) Bad(call, "output_mask[1] asks for grad_weight but there is no weight");
  if (call.output_mask[0]) out[0] = input;
  if (call.output_mask[1]) out[1] = normalized;
  if (call.output_mask[2]) out[2] = normalized;
}

}  // namespace

std::vector<std::optional<Shape>> OpOutputShapes(const OpCall& call, const std::vector<const Shape*>& in) {
  CheckArity(call, in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] == nullptr && !IsOptionalInput(call.kind, i))
      Bad(call, "input " + std::to_string(i) + " is required");
  }
  const Shape& x = *in[0];
  const auto nd = static_cast<int64_t>(x.size());
  std::vector<std::optional<Shape>> out(NumOutputs(call.kind));
  switch (call.kind) {
    case OpKind::kAdd:
    case OpKind::kSub:
    case OpKind::kMul:
      out[0] = Broadcast(call, x, *in[1]);
      break;
    case OpKind::kGelu:
    case OpKind::kSoftmax:
      if (call.kind == OpKind::kSoftmax) NormDim(call, call.dim, nd, "dim");
      out[0] = x;
      break;
    case OpKind::kMm:
    case OpKind::kLinear:
      out[0] = MatmulShape(call, x, *in[1]);
      break;
    case OpKind::kBmm:
      out[0] = BmmShape(call, x, *in[1]);
      break;
    case OpKind::kSum:
    case OpKind::kMean:
      out[0] = ReducedShape(call, x);
      break;
    case OpKind::kTranspose:
    case OpKind::kPermute:
      out[0] = PermutedShape(call, x);
      break;
    case OpKind::kSelect:
      out[0] = SelectShape(call, x);
      break;
    case OpKind::kStack:
    case OpKind::kCat:
      out[0] = JoinedShape(call, in);
      break;
    case OpKind::kLayerNorm:
      LayerNormShapes(call, in, out);
      break;
    case OpKind::kLayerNormBackward:
      LayerNormBackwardShapes(call, in, out);
      break;
    case OpKind::kConv:
      NormDim(call, call.dim, nd, "dim");
      if (call.kernel.empty() || call.kernel.size() % 2 == 0) {
        Bad(call, "kernel must have an odd number of taps, got " + std::to_string(call.kernel.size()));
      }
      out[0] = x;
      break;
  }
  return out;
}

}  // namespace shardscope::engine