#include "comm/view_ops.hpp"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "exec/scalar_math.hpp"

namespace shardscope::engine::detail {
namespace {

bool IsFull(const IndexSet& set, int64_t extent) {
  return set.size() == 1 && set[0].begin == 0 && set[0].end == extent;
}

size_t FirstNonEmpty(const IndexSet& set, size_t from) {
  while (from < set.size() && set[from].size() <= 0) ++from;
  return from;
}

using scalar::Plus;
using scalar::Times;

template <class T, class A>
void CombineRun(ReduceOp op, bool first, A* acc, const T* src, int64_t n) {
  if (first) {
    for (int64_t k = 0; k < n; ++k) acc[k] = ArithOf<T>::Load(src[k]);
    return;
  }
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg:
      for (int64_t k = 0; k < n; ++k) acc[k] = Plus<A>(acc[k], ArithOf<T>::Load(src[k]));
      break;
    case ReduceOp::kProduct:
      for (int64_t k = 0; k < n; ++k) acc[k] = Times<A>(acc[k], ArithOf<T>::Load(src[k]));
      break;
    case ReduceOp::kMin:
      for (int64_t k = 0; k < n; ++k) {
        acc[k] = scalar::Min<A>(acc[k], ArithOf<T>::Load(src[k]));
      }
      break;
    case ReduceOp::kMax:
      for (int64_t k = 0; k < n; ++k) {
        acc[k] = scalar::Max<A>(acc[k], ArithOf<T>::Load(src[k]));
      }
      break;
  }
}

}  // namespace

RunCursor::RunCursor(const Shape& shape, const std::vector<Box>& boxes)
    : shape_(shape), boxes_(boxes), strides_(RowMajorStrides(shape)) {}

bool RunCursor::StartBox() {
  for (; box_ < boxes_.size(); ++box_) {
    const Box& b = boxes_[box_];
    if (b.Count() <= 0) continue;
    inner_ = -1;
    for (int d = static_cast<int>(shape_.size()) - 1; d >= 0; --d) {
      if (!IsFull(b.dims[static_cast<size_t>(d)], shape_[static_cast<size_t>(d)])) {
        inner_ = d;
        break;
      }
    }
    interval_.assign(static_cast<size_t>(std::max(inner_, 0)), 0);
    position_.assign(static_cast<size_t>(std::max(inner_, 0)), 0);
    for (int d = 0; d < inner_; ++d) {
      const IndexSet& set = b.dims[static_cast<size_t>(d)];
      interval_[static_cast<size_t>(d)] = FirstNonEmpty(set, 0);
      position_[static_cast<size_t>(d)] = set[interval_[static_cast<size_t>(d)]].begin;
    }
    inner_interval_ = 0;
    return true;
  }
  return false;
}

bool RunCursor::Next(int64_t& offset, int64_t& length) {
  while (true) {
    if (!in_box_) {
      if (!StartBox()) return false;
      if (inner_ < 0) {
        // Every dim is fully covered: the whole tensor is one run.
        offset = 0;
        length = NumElements(shape_);
        ++box_;
        return true;
      }
      in_box_ = true;
    }
    const Box& b = boxes_[box_];
    const IndexSet& inner = b.dims[static_cast<size_t>(inner_)];
    inner_interval_ = FirstNonEmpty(inner, inner_interval_);
    if (inner_interval_ < inner.size()) {
      int64_t base = 0;
      for (int d = 0; d < inner_; ++d)
        base += position_[static_cast<size_t>(d)] * strides_[static_cast<size_t>(d)];
      const Interval& iv = inner[inner_interval_++];
      offset = base + iv.begin * strides_[static_cast<size_t>(inner_)];
      length = iv.size() * strides_[static_cast<size_t>(inner_)];
      return true;
    }
    // Advance the odometer over the outer dims' positions.
    inner_interval_ = 0;
    bool advanced = false;
    for (int d = inner_ - 1; d >= 0 && !advanced; --d) {
      size_t du = static_cast<size_t>(d);
      const IndexSet& set = b.dims[du];
      if (++position_[du] < set[interval_[du]].end) {
        advanced = true;
        break;
      }
      interval_[du] = FirstNonEmpty(set, interval_[du] + 1);
      if (interval_[du] < set.size()) {
        position_[du] = set[interval_[du]].begin;
        advanced = true;
        break;
      }
      interval_[du] = FirstNonEmpty(set, 0);
      position_[du] = set[interval_[du]].begin;
    }
    if (!advanced) {
      in_box_ = false;
      ++box_;
    }
  }
}

void CopyView(const SendView& src, const RecvView& dst) {
  const size_t es = static_cast<size_t>(DTypeSize(src.dtype));
  RunCursor in(src.shape, src.boxes);
  RunCursor out(dst.shape, dst.boxes);
  int64_t in_off = 0, in_len = 0, out_off = 0, out_len = 0;
  while (true) {
    if (in_len == 0 && !in.Next(in_off, in_len)) return;
    if (out_len == 0 && !out.Next(out_off, out_len)) return;
    int64_t n = std::min(in_len, out_len);
    std::memcpy(dst.data + static_cast<size_t>(out_off) * es, src.data + static_cast<size_t>(in_off) * es,
                static_cast<size_t>(n) * es);
    in_off += n;
    in_len -= n;
    out_off += n;
    out_len -= n;
  }
}

Accumulator::Accumulator(DType dtype, ReduceOp op, int64_t count) : dtype_(dtype), op_(op), count_(count) {
  DispatchDType(dtype_, [&](auto tag) {
    using A = typename ArithOf<decltype(tag)>::type;
    acc_.resize(static_cast<size_t>(count_) * sizeof(A));
  });
}

void Accumulator::Add(const SendView& src) {
  DispatchDType(dtype_, [&](auto tag) {
    using T = decltype(tag);
    using A = typename ArithOf<T>::type;
    A* acc = reinterpret_cast<A*>(acc_.data());
    const T* base = reinterpret_cast<const T*>(src.data);
    RunCursor cursor(src.shape, src.boxes);
    int64_t offset = 0, length = 0, pos = 0;
    while (cursor.Next(offset, length)) {
      CombineRun<T, A>(op_, first_, acc + pos, base + offset, length);
      pos += length;
    }
  });
  first_ = false;
}

void Accumulator::Store(const RecvView& dst, int64_t divisor) {
  DispatchDType(dtype_, [&](auto tag) {
    using T = decltype(tag);
    using A = typename ArithOf<T>::type;
    A* acc = reinterpret_cast<A*>(acc_.data());
    if (divisor > 1) {
      for (int64_t k = 0; k < count_; ++k) acc[k] = scalar::Divide<A>(acc[k], divisor);
    }
    T* base = reinterpret_cast<T*>(dst.data);
    RunCursor cursor(dst.shape, dst.boxes);
    int64_t offset = 0, length = 0, pos = 0;
    while (cursor.Next(offset, length)) {
      for (int64_t k = 0; k < length; ++k) base[offset + k] = ArithOf<T>::Store(acc[pos + k]);
      pos += length;
    }
  });
}

}  // namespace shardscope::engine::detail
