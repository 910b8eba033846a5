// Local kernels of the ops (ops.hpp ComputeOp): each works on contiguous row-major tensors,
// computes in double and rounds once to the output dtype. The same code computes a rank's
// shard and the global reference, so a sharded result can differ from the reference only by
// summation order (partial sums) and the roundings of the Partial decomposition.
#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <optional>

#include "core/dtype_dispatch.hpp"
#include "ops/op_dims.hpp"
#include "shardscope/engine/ops/ops.hpp"
#include "shardscope/error.hpp"

namespace shardscope::engine {
namespace {

// A tensor as doubles.
struct Dense {
  Shape shape;
  std::vector<double> v;
};

Dense Load(const LocalTensor& t) {
  Dense d{t.shape(), std::vector<double>(static_cast<size_t>(t.numel()))};
  DispatchDType(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* p = reinterpret_cast<const T*>(t.data());
    for (size_t i = 0; i < d.v.size(); ++i) d.v[i] = static_cast<double>(ArithOf<T>::Load(p[i]));
  });
  return d;
}

LocalTensor Store(const Dense& d, DType dtype) {
  LocalTensor t = LocalTensor::Uninitialized(d.shape, dtype);
  DispatchDType(dtype, [&](auto tag) {
    using T = decltype(tag);
    using A = typename ArithOf<T>::type;
    T* p = reinterpret_cast<T*>(t.data());
    for (size_t i = 0; i < d.v.size(); ++i) {
      double x = d.v[i];
      if constexpr (std::is_integral_v<T>) x = std::nearbyint(x);
      p[i] = ArithOf<T>::Store(static_cast<A>(x));
    }
  });
  return t;
}

int64_t Numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t e : s) n *= e;
  return n;
}

// Splits `shape` around `dim` into (outer, extent, inner) for loops over one dim.
struct Around {
  int64_t outer = 1, extent = 1, inner = 1;
};
Around AroundDim(const Shape& shape, int64_t dim) {
  Around a;
  for (int64_t d = 0; d < dim; ++d) a.outer *= shape[static_cast<size_t>(d)];
  a.extent = shape[static_cast<size_t>(dim)];
  for (size_t d = static_cast<size_t>(dim) + 1; d < shape.size(); ++d) a.inner *= shape[d];
  return a;
}

int64_t Wrap(int64_t dim, int64_t ndim) { return dim < 0 ? dim + ndim : dim; }

Dense Pointwise2(const Dense& a, const Dense& b, const Shape& out_shape, OpKind kind) {
  Dense out{out_shape, std::vector<double>(static_cast<size_t>(Numel(out_shape)))};
  const size_t nd = out_shape.size();
  auto strides = [&](const Shape& s) {
    std::vector<int64_t> st(nd, 0);
    int64_t acc = 1;
    for (size_t i = s.size(); i-- > 0;) {
      const size_t o = i + (nd - s.size());
      st[o] = s[i] == 1 ? 0 : acc;
      acc *= s[i];
    }
    return st;
  };
  const std::vector<int64_t> sa = strides(a.shape), sb = strides(b.shape);
  std::vector<int64_t> idx(nd, 0);
  for (size_t flat = 0; flat < out.v.size(); ++flat) {
    int64_t ia = 0, ib = 0;
    for (size_t d = 0; d < nd; ++d) {
      ia += idx[d] * sa[d];
      ib += idx[d] * sb[d];
    }
    const double x = a.v[static_cast<size_t>(ia)], y = b.v[static_cast<size_t>(ib)];
    out.v[flat] = kind == OpKind::kAdd ? x + y : kind == OpKind::kSub ? x - y : x * y;
    for (size_t d = nd; d-- > 0;) {
      if (++idx[d] < out_shape[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

// out[b, m, n] = sum_k lhs[b, m, k] * rhs[b, k, n] (rhs_t: rhs is [b, n, k]).
Dense MatMul(const Dense& lhs, const Dense& rhs, int64_t batch, int64_t m, int64_t k, int64_t n, bool rhs_t,
             Shape out_shape) {
  Dense out{std::move(out_shape), std::vector<double>(static_cast<size_t>(batch * m * n), 0.0)};
  for (int64_t b = 0; b < batch; ++b) {
    const double* l = lhs.v.data() + b * m * k;
    const double* r = rhs.v.data() + (rhs_t ? 0 : b * k * n);
    double* o = out.v.data() + b * m * n;
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0.0;
        for (int64_t x = 0; x < k; ++x) acc += l[i * k + x] * (rhs_t ? r[j * k + x] : r[x * n + j]);
        o[i * n + j] = acc;
      }
    }
  }
  return out;
}

Dense Reduce(const Dense& x, const std::vector<int64_t>& dims_in, bool keepdim, double divisor) {
  const auto nd = static_cast<int64_t>(x.shape.size());
  std::vector<bool> reduced(static_cast<size_t>(nd), dims_in.empty());
  for (int64_t d : dims_in) reduced[static_cast<size_t>(Wrap(d, nd))] = true;
  Shape out_shape, keep_shape;
  for (int64_t d = 0; d < nd; ++d) {
    const int64_t e = x.shape[static_cast<size_t>(d)];
    keep_shape.push_back(reduced[static_cast<size_t>(d)] ? 1 : e);
    if (!reduced[static_cast<size_t>(d)]) out_shape.push_back(e);
  }
  Dense out{keepdim ? keep_shape : out_shape,
            std::vector<double>(static_cast<size_t>(Numel(keep_shape)), 0.0)};
  std::vector<int64_t> idx(static_cast<size_t>(nd), 0);
  for (size_t flat = 0; flat < x.v.size(); ++flat) {
    int64_t o = 0;
    for (int64_t d = 0; d < nd; ++d)
      o = o * keep_shape[static_cast<size_t>(d)] +
          (reduced[static_cast<size_t>(d)] ? 0 : idx[static_cast<size_t>(d)]);
    out.v[static_cast<size_t>(o)] += x.v[flat];
    for (int64_t d = nd; d-- > 0;) {
      if (++idx[static_cast<size_t>(d)] < x.shape[static_cast<size_t>(d)]) break;
      idx[static_cast<size_t>(d)] = 0;
    }
  }
  if (divisor != 1.0) {
    for (double& v : out.v) v /= divisor;
  }
  return out;
}

Dense Permute(const Dense& x, const std::vector<int64_t>& perm) {
  const size_t nd = x.shape.size();
  Shape out_shape(nd);
  for (size_t d = 0; d < nd; ++d) out_shape[d] = x.shape[static_cast<size_t>(perm[d])];
  const Shape in_strides = RowMajorStrides(x.shape);
  Dense out{out_shape, std::vector<double>(x.v.size())};
  std::vector<int64_t> idx(nd, 0);
  for (size_t flat = 0; flat < out.v.size(); ++flat) {
    int64_t src = 0;
    for (size_t d = 0; d < nd; ++d) src += idx[d] * in_strides[static_cast<size_t>(perm[d])];
    out.v[flat] = x.v[static_cast<size_t>(src)];
    for (size_t d = nd; d-- > 0;) {
      if (++idx[d] < out_shape[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

double Gelu(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }

// mean's divisor: `mean_divisor` when given (the global count, for a mean over sharded dims),
// else the product of the reduced extents of `x`.
double MeanDivisor(const OpCall& call, const Dense& x, double mean_divisor) {
  if (mean_divisor > 0) return mean_divisor;
  const auto nd = static_cast<int64_t>(x.shape.size());
  double divisor = 1.0;
  std::vector<bool> reduced(static_cast<size_t>(nd), call.dims.empty());
  for (int64_t d : call.dims) reduced[static_cast<size_t>(Wrap(d, nd))] = true;
  for (int64_t d = 0; d < nd; ++d) {
    if (reduced[static_cast<size_t>(d)]) divisor *= static_cast<double>(x.shape[static_cast<size_t>(d)]);
  }
  return divisor;
}

Dense Softmax(const Dense& x, int64_t dim) {
  const Around a = AroundDim(x.shape, dim);
  Dense y = x;
  for (int64_t o = 0; o < a.outer; ++o) {
    for (int64_t i = 0; i < a.inner; ++i) {
      auto at = [&](int64_t e) -> double& {
        return y.v[static_cast<size_t>((o * a.extent + e) * a.inner + i)];
      };
      double mx = -INFINITY;
      for (int64_t e = 0; e < a.extent; ++e) mx = std::max(mx, at(e));
      double total = 0.0;
      for (int64_t e = 0; e < a.extent; ++e) total += std::exp(at(e) - mx);
      for (int64_t e = 0; e < a.extent; ++e) at(e) = std::exp(at(e) - mx) / total;
    }
  }
  return y;
}

Dense Select(const Dense& x, int64_t dim, int64_t index, const Shape& out_shape) {
  const Around a = AroundDim(x.shape, dim);
  if (index < 0) index += a.extent;
  Dense y{out_shape, std::vector<double>(static_cast<size_t>(a.outer * a.inner))};
  for (int64_t o = 0; o < a.outer; ++o) {
    for (int64_t i = 0; i < a.inner; ++i) {
      y.v[static_cast<size_t>(o * a.inner + i)] =
          x.v[static_cast<size_t>((o * a.extent + index) * a.inner + i)];
    }
  }
  return y;
}

// cat (stack: each input is one new slice) along `dim` of the output shape.
Dense Concat(const std::vector<const LocalTensor*>& inputs, int64_t dim, bool stack, const Shape& os) {
  Dense y{os, std::vector<double>(static_cast<size_t>(Numel(os)))};
  const Around a = AroundDim(os, dim);
  int64_t offset = 0;
  for (const LocalTensor* t : inputs) {
    const Dense part = Load(*t);
    const int64_t extent = stack ? 1 : part.shape[static_cast<size_t>(dim)];
    for (int64_t o = 0; o < a.outer; ++o) {
      for (int64_t e = 0; e < extent; ++e) {
        for (int64_t i = 0; i < a.inner; ++i) {
          y.v[static_cast<size_t>((o * a.extent + offset + e) * a.inner + i)] =
              part.v[static_cast<size_t>((o * extent + e) * a.inner + i)];
        }
      }
    }
    offset += extent;
  }
  return y;
}

// layer_norm over the last `cols` elements of each of `rows` rows: y, mean and rstd (biased
// variance, as layer_norm).
struct LayerNormInput {
  const Dense& input;
  int64_t rows = 0, cols = 0;
  std::optional<Dense> weight;
  double W(int64_t c) const { return weight ? weight->v[static_cast<size_t>(c)] : 1.0; }
};

std::vector<Dense> LayerNormForward(const LayerNormInput& in, const std::optional<Dense>& bias,
                                    const std::vector<std::optional<Shape>>& out_shapes, double eps) {
  const int64_t rows = in.rows, cols = in.cols;
  Dense y{in.input.shape, std::vector<double>(in.input.v.size())};
  Dense mean{*out_shapes[1], std::vector<double>(static_cast<size_t>(rows))};
  Dense rstd{*out_shapes[2], std::vector<double>(static_cast<size_t>(rows))};
  for (int64_t r = 0; r < rows; ++r) {
    const double* row = in.input.v.data() + r * cols;
    double mu = 0.0;
    for (int64_t c = 0; c < cols; ++c) mu += row[c];
    mu /= static_cast<double>(cols);
    double var = 0.0;
    for (int64_t c = 0; c < cols; ++c) var += (row[c] - mu) * (row[c] - mu);
    var /= static_cast<double>(cols);  // biased, as layer_norm
    const double rs = 1.0 / std::sqrt(var + eps);
    mean.v[static_cast<size_t>(r)] = mu;
    rstd.v[static_cast<size_t>(r)] = rs;
    for (int64_t c = 0; c < cols; ++c) {
      y.v[static_cast<size_t>(r * cols + c)] =
          (row[c] - mu) * rs * in.W(c) + (bias ? bias->v[static_cast<size_t>(c)] : 0.0);
    }
  }
  return {std::move(y), std::move(mean), std::move(rstd)};
}

// Backward: xhat = (x - mean) * rstd, g = grad_out * w;
// grad_input = rstd * (g - mean(g) - xhat * mean(g * xhat)) over the normalized dims;
// grad_weight = sum over rows of grad_out * xhat; grad_bias = sum over rows of grad_out.
std::vector<Dense> LayerNormBackward(const LayerNormInput& in, const Dense& grad, const Dense& mean,
                                     const Dense& rstd, const Shape& normalized_shape) {
  const int64_t rows = in.rows, cols = in.cols;
  const Dense& input = in.input;
  Dense gin{input.shape, std::vector<double>(input.v.size())};
  Dense gw{normalized_shape, std::vector<double>(static_cast<size_t>(cols), 0.0)};
  Dense gb = gw;
  for (int64_t r = 0; r < rows; ++r) {
    const double mu = mean.v[static_cast<size_t>(r)];
    const double rs = rstd.v[static_cast<size_t>(r)];
    double sum_g = 0.0, sum_gx = 0.0;
    for (int64_t c = 0; c < cols; ++c) {
      const size_t i = static_cast<size_t>(r * cols + c);
      const double xhat = (input.v[i] - mu) * rs;
      const double g = grad.v[i] * in.W(c);
      sum_g += g;
      sum_gx += g * xhat;
      gw.v[static_cast<size_t>(c)] += grad.v[i] * xhat;
      gb.v[static_cast<size_t>(c)] += grad.v[i];
    }
    const double n = static_cast<double>(cols);
    for (int64_t c = 0; c < cols; ++c) {
      const size_t i = static_cast<size_t>(r * cols + c);
      const double xhat = (input.v[i] - mu) * rs;
      gin.v[i] = rs * (grad.v[i] * in.W(c) - sum_g / n - xhat * sum_gx / n);
    }
  }
  return {std::move(gin), std::move(gw), std::move(gb)};
}

// layer_norm (outputs y, mean, rstd) or its backward (grad_input, grad_weight, grad_bias; each
// only when its output shape is asked for).
void LayerNorm(const OpCall& call, const std::vector<const LocalTensor*>& inputs, const Dense& x,
               const std::vector<std::optional<Shape>>& out_shapes,
               const std::function<void(size_t, const Dense&)>& put) {
  const bool backward = call.kind == OpKind::kLayerNormBackward;
  const Dense input = backward ? Load(*inputs[1]) : x;
  const Shape normalized(input.shape.end() - call.normalized_ndim, input.shape.end());
  const LocalTensor* weight = backward ? inputs[4] : inputs[1];
  const LayerNormInput in{input, Numel(Shape(input.shape.begin(), input.shape.end() - call.normalized_ndim)),
                          Numel(normalized), weight ? std::optional<Dense>(Load(*weight)) : std::nullopt};
  if (!backward) {
    const std::optional<Dense> bias = inputs[2] ? std::optional<Dense>(Load(*inputs[2])) : std::nullopt;
    const std::vector<Dense> outs = LayerNormForward(in, bias, out_shapes, call.eps);
    for (size_t i = 0; i < outs.size(); ++i) put(i, outs[i]);
    return;
  }
  const std::vector<Dense> outs = LayerNormBackward(in, x, Load(*inputs[2]), Load(*inputs[3]), normalized);
  for (size_t i = 0; i < outs.size(); ++i)
    if (out_shapes[i]) put(i, outs[i]);
}

// The input holds `halo` extra elements on both sides of dim; out has the inner extent.
Dense Conv(const OpCall& call, const Dense& x, int64_t dim) {
  const int64_t h = ConvHalo(call);
  const Around a = AroundDim(x.shape, dim);
  const int64_t extent = a.extent - 2 * h;
  if (extent < 0)
    throw InternalError("conv: input extent " + std::to_string(a.extent) + " has no room for halos");
  Shape os = x.shape;
  os[static_cast<size_t>(dim)] = extent;
  Dense y{os, std::vector<double>(static_cast<size_t>(Numel(os)), 0.0)};
  const auto taps = static_cast<int64_t>(call.kernel.size());
  for (int64_t o = 0; o < a.outer; ++o) {
    for (int64_t e = 0; e < extent; ++e) {
      for (int64_t i = 0; i < a.inner; ++i) {
        double acc = 0.0;
        for (int64_t j = 0; j < taps; ++j) {
          acc += call.kernel[static_cast<size_t>(j)] *
                 x.v[static_cast<size_t>((o * a.extent + e + j) * a.inner + i)];
        }
        y.v[static_cast<size_t>((o * extent + e) * a.inner + i)] = acc;
      }
    }
  }
  return y;
}

}  // namespace

std::vector<std::optional<LocalTensor>> ComputeOp(const OpCall& call,
                                                  const std::vector<const LocalTensor*>& inputs,
                                                  double mean_divisor) {
  std::vector<const Shape*> shapes;
  for (const LocalTensor* t : inputs) shapes.push_back(t ? &t->shape() : nullptr);
  // Shapes of local shards are checked like global ones, except conv, whose input carries halos.
  std::vector<std::optional<Shape>> out_shapes = OpOutputShapes(call, shapes);
  const DType dtype = inputs[0]->dtype();
  const Dense x = Load(*inputs[0]);
  const auto nd = static_cast<int64_t>(x.shape.size());
  std::vector<std::optional<LocalTensor>> out(out_shapes.size());
  auto put = [&](size_t i, const Dense& d) { out[i] = Store(d, dtype); };
  switch (call.kind) {
    case OpKind::kAdd:
    case OpKind::kSub:
    case OpKind::kMul:
      put(0, Pointwise2(x, Load(*inputs[1]), *out_shapes[0], call.kind));
      break;
    case OpKind::kGelu: {
      Dense y = x;
      for (double& v : y.v) v = Gelu(v);
      put(0, y);
      break;
    }
    case OpKind::kMm:
    case OpKind::kLinear: {
      const int64_t n = (*out_shapes[0])[1];
      put(0, MatMul(x, Load(*inputs[1]), 1, x.shape[0], x.shape[1], n, call.kind == OpKind::kLinear,
                    *out_shapes[0]));
      break;
    }
    case OpKind::kBmm: {
      const Dense y = Load(*inputs[1]);
      put(0, MatMul(x, y, x.shape[0], x.shape[1], x.shape[2], y.shape[2], false, *out_shapes[0]));
      break;
    }
    case OpKind::kSum:
    case OpKind::kMean:
      put(0, Reduce(x, call.dims, call.keepdim,
                    call.kind == OpKind::kMean ? MeanDivisor(call, x, mean_divisor) : 1.0));
      break;
    case OpKind::kSoftmax:
      put(0, Softmax(x, Wrap(call.dim, nd)));
      break;
    case OpKind::kTranspose:
    case OpKind::kPermute:
      put(0, Permute(x, detail::Permutation(call, nd)));
      break;
    case OpKind::kSelect:
      put(0, Select(x, Wrap(call.dim, nd), call.index, *out_shapes[0]));
      break;
    case OpKind::kStack:
    case OpKind::kCat: {
      const bool stack = call.kind == OpKind::kStack;
      put(0, Concat(inputs, Wrap(call.dim, stack ? nd + 1 : nd), stack, *out_shapes[0]));
      break;
    }
    case OpKind::kLayerNorm:
    case OpKind::kLayerNormBackward:
      LayerNorm(call, inputs, x, out_shapes, put);
      break;
    case OpKind::kConv:
      put(0, Conv(call, x, Wrap(call.dim, nd)));
      break;
  }
  return out;
}

}  // namespace shardscope::engine
