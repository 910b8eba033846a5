#pragma once
// Private kernels over views: contiguous-run iteration, view-to-view copy and reductions. Shared
// by the local backend, the executor's local steps and Distribute / FullTensor.

#include <cstdint>
#include <memory>
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

/// `count` runs of `length` elements each; run k starts at element offset `offset + k * stride`
/// of the tensor (a run of the view's element order).
struct RunGroup {
  int64_t offset = 0;
  int64_t length = 0;
  int64_t count = 0;
  int64_t stride = 0;
};

/// A view's contiguous runs in element order, compiled once so that copies and reductions do no
/// per-run cursor work. A box whose dims are single intervals compiles in O(dims + groups) with
/// no walk over its runs (the outer dims that are fully covered fold into one strided group);
/// other boxes are walked once with RunCursor and consecutive runs of equal length and constant
/// step are folded together. Holds no pointer to the view.
class ViewRuns {
 public:
  ViewRuns() = default;
  ViewRuns(const Shape& shape, const std::vector<Box>& boxes);
  template <class Ptr>
  explicit ViewRuns(const BasicView<Ptr>& view) : ViewRuns(view.shape, view.boxes) {}

  int64_t elements() const { return elements_; }
  const std::vector<RunGroup>& groups() const { return groups_; }
  /// Position (in view order) of the first element of group `g`.
  int64_t GroupStart(size_t g) const { return starts_[g]; }

 private:
  void AddBox(const Shape& shape, const Shape& strides, const Box& box);
  void Append(int64_t offset, int64_t length, int64_t count, int64_t stride);

  std::vector<RunGroup> groups_;
  std::vector<int64_t> starts_;
  int64_t elements_ = 0;
};

/// The compiled runs of the views a rank used lately, so that a repeated collective (a
/// redistribute run again, a training step) compiles none of its views again. Keyed by value
/// (shape and boxes, compared in full on a hash match, never by address), holding the last
/// kEntries views; an entry is shared, so runs handed out stay valid after it is dropped. One
/// per rank thread: not thread-safe.
class ViewRunsCache {
 public:
  std::shared_ptr<const ViewRuns> Get(const Shape& shape, const std::vector<Box>& boxes);

 private:
  static constexpr size_t kEntries = 64;
  struct Entry {
    uint64_t hash = 0;
    Shape shape;
    std::vector<Box> boxes;
    std::shared_ptr<const ViewRuns> runs;
  };
  std::vector<Entry> entries_;
  size_t next_ = 0;  // the entry replaced next once the cache is full
};

/// How copies and reductions write their destination. kStreaming writes runs of at least
/// kStreamingMinRun bytes with non-temporal stores (no read-for-ownership of the destination lines,
/// which a plain store of data larger than the caches pays: 3 bytes of memory traffic per byte
/// copied instead of 2) and ends with a store fence, so the bytes are visible to a thread that
/// synchronizes with the caller afterwards. For destinations that will not be read from cache.
enum class StoreMode { kCached, kStreaming };

/// Runs shorter than this are stored through the cache even in kStreaming mode.
inline constexpr int64_t kStreamingMinRun = 4096;

/// A position in a ViewRuns: group, run within it, elements of that run already consumed.
class RunWalker {
 public:
  RunWalker(const ViewRuns& runs, int64_t position);
  const RunGroup& group() const { return *group_; }
  bool at_run_start() const { return used_ == 0; }
  int64_t offset() const { return group_->offset + run_ * group_->stride + used_; }
  int64_t available() const { return group_->length - used_; }
  int64_t runs_left() const { return group_->count - run_; }
  void Advance(int64_t m) {
    used_ += m;
    if (used_ == group_->length) {
      used_ = 0;
      NextRuns(1);
    }
  }
  /// Skips `r` whole runs from a run start (r <= runs_left()).
  void NextRuns(int64_t r) {
    run_ += r;
    if (run_ == group_->count) {
      run_ = 0;
      ++group_;
    }
  }

 private:
  const RunGroup* group_;
  int64_t run_ = 0;
  int64_t used_ = 0;
};

/// A view-to-view copy from position `begin` on, carried out in steps: each Copy copies the next
/// `count` positions (the caller keeps within both views). Several of them interleaved copy the
/// pieces of one source's rows row by row (the local backend's shared all_to_all). Stores no
/// fence: a caller in kStreaming mode ends with CopyRuns or a StoreFence of its own.
class RunCopier {
 public:
  RunCopier(const std::byte* src, const ViewRuns& src_runs, std::byte* dst, const ViewRuns& dst_runs,
            int64_t element_size, int64_t begin);
  void Copy(int64_t count, StoreMode mode);
  /// Elements per run of the source run group the next Copy starts in (a position inside the
  /// source view).
  int64_t source_run_length() const { return s_.group().length; }

 private:
  const std::byte* src_;
  std::byte* dst_;
  int64_t es_;
  RunWalker s_, d_;
};

/// Orders the non-temporal stores of kStreaming copies before whatever the caller publishes next
/// (an atomic release does not order them on x86).
void StoreFence();

/// Copies the elements at view positions [begin, end) of `src` to the same positions of `dst`
/// (byte pointers to the tensors' storage, `element_size` bytes per element). Callers check
/// that both views hold at least `end` elements.
void CopyRuns(const std::byte* src, const ViewRuns& src_runs, std::byte* dst, const ViewRuns& dst_runs,
              int64_t element_size, int64_t begin, int64_t end, StoreMode mode = StoreMode::kCached);

/// One input of ReduceRuns: a tensor's storage and the runs of the view read from it.
struct RunsInput {
  const std::byte* data = nullptr;
  const ViewRuns* runs = nullptr;
};

/// One output of ReduceRuns: a tensor's storage and the runs of the view written to it.
struct RunsOutput {
  std::byte* data = nullptr;
  const ViewRuns* runs = nullptr;
};

/// Positions [begin, end) of every output become `op` over `inputs` in their order (the group
/// order), accumulated as ArithOf<T> and divided by `divisor` when > 1, then stored once per
/// output: bitwise what Accumulator gives, computed in cache-sized blocks (each input read once,
/// each output written once; several outputs get the same bits).
void ReduceRuns(DType dtype, ReduceOp op, int64_t divisor, const std::vector<RunsInput>& inputs,
                const std::vector<RunsOutput>& outputs, int64_t begin, int64_t end,
                StoreMode mode = StoreMode::kCached);
/// The same into one output.
void ReduceRuns(DType dtype, ReduceOp op, int64_t divisor, const std::vector<RunsInput>& inputs,
                std::byte* dst, const ViewRuns& dst_runs, int64_t begin, int64_t end);

/// Copies `src` into `dst` element by element in view order (compiles both views' runs, then
/// CopyRuns). Counts and dtypes must match (checked by the caller).
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
