#pragma once
// Private kernels over views: contiguous-run iteration, view-to-view copy and reductions. Shared
// by the local backend, the executor's local steps and Distribute / FullTensor.

#include <cstdint>
#include <vector>

#include "shardscope/engine/comm/communicator.hpp"

namespace shardscope::engine::detail {

/// Walks the contiguous runs (element offset into the tensor, length) of a view in element order.
class RunCursor {
 public:
  RunCursor(const Shape& shape, const std::vector<Box>& boxes);
  /// Next non-empty run; false when the view is exhausted.
  bool Next(int64_t& offset, int64_t& length);

 private:
  bool StartBox();

  const Shape& shape_;
  const std::vector<Box>& boxes_;
  Shape strides_;
  size_t box_ = 0;
  bool in_box_ = false;
  int inner_ = -1;                 // innermost dim that is not fully covered; -1: whole tensor
  std::vector<size_t> interval_;   // per outer dim: current interval index
  std::vector<int64_t> position_;  // per outer dim: current position
  size_t inner_interval_ = 0;
};

/// Copies `src` into `dst` element by element in view order with one memcpy per overlapping run
/// pair. Counts and dtypes must match (checked by the caller).
void CopyView(const SendView& src, const RecvView& dst);

/// Elementwise reduction of several same-count views into an accumulator (f32 for half types),
/// then one rounding store.
class Accumulator {
 public:
  Accumulator(DType dtype, ReduceOp op, int64_t count);
  /// Combines `src` (in view order) into the accumulator; the first call initializes it.
  void Add(const SendView& src);
  /// Divides by `divisor` (if > 1) and stores into `dst` in view order.
  void Store(const RecvView& dst, int64_t divisor);

 private:
  DType dtype_;
  ReduceOp op_;
  int64_t count_;
  bool first_ = true;
  std::vector<std::byte, DefaultInitAllocator<std::byte>> acc_;  // fully written by the first Add
};

}  // namespace shardscope::engine::detail
