// Global tensors and their shards: Distribute cuts a rank's shard out of a global tensor (Partial
// dims get a value that reduces back to it) and FullTensor puts the shards back together; the
// reference the executor's results are checked against.
#include <string>
#include <vector>

#include "comm/view_ops.hpp"
#include "core/dtype_dispatch.hpp"
#include "shardscope/engine/core/layout.hpp"
#include "shardscope/engine/exec/executor.hpp"
#include "shardscope/error.hpp"

namespace shardscope::engine {
namespace {

// The global flat index of every element of a layout, in local storage order.
template <class Fn>
void ForEachGlobalIndex(const RankLayout& layout, const Shape& global_shape, Fn&& fn) {
  const size_t nd = layout.indices.size();
  Shape strides = RowMajorStrides(global_shape);
  std::vector<std::vector<int64_t>> positions(nd);
  for (size_t d = 0; d < nd; ++d) {
    for (const Interval& iv : layout.indices[d]) {
      for (int64_t x = iv.begin; x < iv.end; ++x) positions[d].push_back(x * strides[d]);
    }
    if (positions[d].empty()) return;
  }
  std::vector<size_t> at(nd, 0);
  int64_t local = 0;
  while (true) {
    int64_t g = 0;
    for (size_t d = 0; d < nd; ++d) g += positions[d][at[d]];
    fn(local++, g);
    size_t d = nd;
    while (d > 0) {
      --d;
      if (++at[d] < positions[d].size()) break;
      at[d] = 0;
      if (d == 0) return;
    }
    if (nd == 0) return;
  }
}

void CheckSpec(const TensorSpec& spec, const Shape& shape, DType dtype, const std::string& what) {
  if (shape != spec.shape || dtype != spec.dtype) {
    throw InvalidInput(what + ": tensor is " + FormatShape(shape) + " " + std::string(DTypeName(dtype)) +
                       " but the spec says " + FormatShape(spec.shape) + " " +
                       std::string(DTypeName(spec.dtype)));
  }
}

}  // namespace

LocalTensor Distribute(const LocalTensor& global, const TensorSpec& spec, int64_t rank) {
  CheckSpec(spec, global.shape(), global.dtype(), "distribute");
  RankLayout layout = ComputeRankLayout(spec, rank);
  LocalTensor out(layout.local_shape, global.dtype());
  if (out.numel() == 0) return out;
  detail::CopyView(ViewOf(global, Box{layout.indices}), MutableViewOf(out));
  for (int md = 0; md < spec.mesh.ndim(); ++md) {
    const Placement& p = spec.placements[static_cast<size_t>(md)];
    if (!p.IsPartial()) continue;
    const int64_t c = layout.coord[static_cast<size_t>(md)];
    const int64_t n = spec.mesh.size(md);
    DispatchDType(out.dtype(), [&](auto tag) {
      using T = decltype(tag);
      using A = typename ArithOf<T>::type;
      T* data = reinterpret_cast<T*>(out.data());
      ForEachGlobalIndex(layout, spec.shape, [&](int64_t i, int64_t g) {
        A x = ArithOf<T>::Load(data[i]);
        // (g + k*k) mod 3 rather than (g + k): with 4 ranks the latter's pieces cancel out
        // (residues 0,1,2 each once), leaving coordinate 0 holding x and hiding a missed sum.
        auto piece = [&](int64_t k) { return static_cast<A>((g + k * k) % 3 - 1); };
        A v = x;
        switch (p.op) {
          case ReduceOp::kSum:
            if (c > 0) {
              v = piece(c);
            } else {
              for (int64_t k = 1; k < n; ++k) v = static_cast<A>(v - piece(k));
            }
            break;
          case ReduceOp::kAvg:
            break;
          case ReduceOp::kMin:
            v = static_cast<A>(x + static_cast<A>(c));
            break;
          case ReduceOp::kMax:
            v = static_cast<A>(x - static_cast<A>(c));
            break;
          case ReduceOp::kProduct:
            v = c == 0 ? x : A{1};
            break;
        }
        data[i] = ArithOf<T>::Store(v);
      });
    });
  }
  return out;
}

LocalTensor FullTensor(const std::vector<LocalTensor>& shards, const TensorSpec& spec) {
  const Mesh& mesh = spec.mesh;
  if (static_cast<int64_t>(shards.size()) != mesh.size()) {
    throw InvalidInput("full_tensor: got " + std::to_string(shards.size()) + " shards for a mesh of " +
                       std::to_string(mesh.size()) + " ranks");
  }
  std::vector<RankLayout> layouts = ComputeLayouts(spec);
  for (int64_t r = 0; r < mesh.size(); ++r) {
    const LocalTensor& s = shards[static_cast<size_t>(r)];
    if (s.shape() != layouts[static_cast<size_t>(r)].local_shape || s.dtype() != spec.dtype) {
      throw InvalidInput("full_tensor: rank " + std::to_string(r) + "'s shard is " + FormatShape(s.shape()) +
                         " " + std::string(DTypeName(s.dtype())) + " but the spec gives it " +
                         FormatShape(layouts[static_cast<size_t>(r)].local_shape) + " " +
                         std::string(DTypeName(spec.dtype)));
    }
  }
  std::vector<int> partial_dims;
  ReduceOp op = ReduceOp::kSum;
  int64_t divisor = 1;
  bool any_sum = false;
  for (int md = 0; md < mesh.ndim(); ++md) {
    const Placement& p = spec.placements[static_cast<size_t>(md)];
    if (!p.IsPartial()) continue;
    partial_dims.push_back(md);
    if (p.op == ReduceOp::kAvg) {
      divisor *= mesh.size(md);
    } else {
      op = p.op;
      any_sum = any_sum || p.op == ReduceOp::kSum;
    }
  }
  // Mixed sum+avg (the only mix MakeSpec allows) and pure avg both reduce as a sum over the whole
  // Partial group divided by the avg dims' sizes; sum and avg are linear, so nesting order is moot.
  if (divisor > 1 && op != ReduceOp::kSum)
    throw InternalError("full_tensor: avg mixed with " + std::string(ReduceOpName(op)));
  LocalTensor out(spec.shape, spec.dtype);
  for (int64_t r = 0; r < mesh.size(); ++r) {
    const RankLayout& layout = layouts[static_cast<size_t>(r)];
    bool representative = true;
    for (int md = 0; md < mesh.ndim(); ++md) {
      if (!spec.placements[static_cast<size_t>(md)].IsShardLike() &&
          layout.coord[static_cast<size_t>(md)] != 0) {
        representative = false;
      }
    }
    if (!representative || NumElements(layout.local_shape) == 0) continue;
    RecvView target = MutableViewOf(out, Box{layout.indices});
    if (partial_dims.empty()) {
      detail::CopyView(ViewOf(shards[static_cast<size_t>(r)]), target);
      continue;
    }
    detail::Accumulator acc(spec.dtype, op, NumElements(layout.local_shape));
    for (int64_t member : mesh.Group(r, partial_dims)) acc.Add(ViewOf(shards[static_cast<size_t>(member)]));
    acc.Store(target, divisor);
  }
  return out;
}

}  // namespace shardscope::engine
