#include "comm/view_ops.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#if defined(__SSE2__)
#include <emmintrin.h>
#include <xmmintrin.h>
#endif

#include "core/dtype_dispatch.hpp"
#include "core/scalar_math.hpp"

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

ViewRuns::ViewRuns(const Shape& shape, const std::vector<Box>& boxes) {
  const Shape strides = RowMajorStrides(shape);
  for (const Box& box : boxes) {
    if (box.Count() > 0) AddBox(shape, strides, box);
  }
}

void ViewRuns::AddBox(const Shape& shape, const Shape& strides, const Box& box) {
  const int nd = static_cast<int>(shape.size());
  std::vector<Interval> single(static_cast<size_t>(nd));
  for (int d = 0; d < nd; ++d) {
    const IndexSet& set = box.dims[static_cast<size_t>(d)];
    size_t first = FirstNonEmpty(set, 0);
    if (FirstNonEmpty(set, first + 1) < set.size()) {
      // Several intervals in one dim (strided shards, shard orders): walk the runs once.
      const std::vector<Box> one{box};
      RunCursor cursor(shape, one);
      int64_t offset = 0, length = 0;
      while (cursor.Next(offset, length)) Append(offset, length, 1, 0);
      return;
    }
    single[static_cast<size_t>(d)] = set[first];
  }
  auto full = [&](int d) {
    const Interval& iv = single[static_cast<size_t>(d)];
    return iv.begin == 0 && iv.end == shape[static_cast<size_t>(d)];
  };
  int inner = nd - 1;
  while (inner >= 0 && full(inner)) --inner;
  if (inner < 0) {
    Append(0, NumElements(shape), 1, 0);
    return;
  }
  const size_t in = static_cast<size_t>(inner);
  const int64_t length = single[in].size() * strides[in];
  int64_t base = single[in].begin * strides[in];
  if (inner == 0) {
    Append(base, length, 1, 0);
    return;
  }
  // Dims [lo, inner) form one strided group: every dim after lo in it is fully covered, so the
  // flattened position over them advances by strides[inner - 1] per run.
  int lo = inner - 1;
  while (lo > 0 && full(lo)) --lo;
  int64_t count = 1;
  for (int d = lo; d < inner; ++d) count *= single[static_cast<size_t>(d)].size();
  const int64_t stride = strides[in - 1];
  base += single[static_cast<size_t>(lo)].begin * strides[static_cast<size_t>(lo)];
  // The dims before lo: one group per position (odometer).
  std::vector<int64_t> position(static_cast<size_t>(lo));
  for (int d = 0; d < lo; ++d) position[static_cast<size_t>(d)] = single[static_cast<size_t>(d)].begin;
  while (true) {
    int64_t offset = base;
    for (int d = 0; d < lo; ++d) offset += position[static_cast<size_t>(d)] * strides[static_cast<size_t>(d)];
    Append(offset, length, count, stride);
    int d = lo - 1;
    for (; d >= 0; --d) {
      const size_t du = static_cast<size_t>(d);
      if (++position[du] < single[du].end) break;
      position[du] = single[du].begin;
    }
    if (d < 0) return;
  }
}

void ViewRuns::Append(int64_t offset, int64_t length, int64_t count, int64_t stride) {
  if (!groups_.empty()) {
    RunGroup& last = groups_.back();
    if (last.count == 1 && count == 1 && offset == last.offset + last.length) {
      last.length += length;
      elements_ += length;
      return;
    }
    if (last.length == length) {
      const int64_t step = last.count >= 2 ? last.stride : count >= 2 ? stride : offset - last.offset;
      if ((count == 1 || stride == step) && offset == last.offset + last.count * step) {
        last.stride = step;
        last.count += count;
        elements_ += length * count;
        return;
      }
    }
  }
  groups_.push_back({offset, length, count, count >= 2 ? stride : 0});
  starts_.push_back(elements_);
  elements_ += length * count;
}

namespace {

uint64_t Mix(uint64_t h, int64_t v) {
  h ^= static_cast<uint64_t>(v) + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
  return h;
}

uint64_t HashView(const Shape& shape, const std::vector<Box>& boxes) {
  uint64_t h = Mix(0, static_cast<int64_t>(shape.size()));
  for (int64_t e : shape) h = Mix(h, e);
  for (const Box& box : boxes) {
    h = Mix(h, -1);
    for (const IndexSet& set : box.dims) {
      h = Mix(h, -2);
      for (const Interval& iv : set) h = Mix(Mix(h, iv.begin), iv.end);
    }
  }
  return h;
}

}  // namespace

std::shared_ptr<const ViewRuns> ViewRunsCache::Get(const Shape& shape, const std::vector<Box>& boxes) {
  const uint64_t hash = HashView(shape, boxes);
  for (const Entry& e : entries_) {
    if (e.hash == hash && e.shape == shape && e.boxes == boxes) return e.runs;
  }
  auto runs = std::make_shared<const ViewRuns>(shape, boxes);
  if (entries_.size() < kEntries) {
    entries_.push_back({hash, shape, boxes, runs});
  } else {
    entries_[next_] = {hash, shape, boxes, runs};
    next_ = (next_ + 1) % kEntries;
  }
  return runs;
}

RunWalker::RunWalker(const ViewRuns& runs, int64_t position) : group_(runs.groups().data()) {
  const auto& groups = runs.groups();
  if (position >= runs.elements()) {
    group_ += groups.size();
    return;
  }
  size_t lo = 0, hi = groups.size();
  while (hi - lo > 1) {
    size_t mid = (lo + hi) / 2;
    (runs.GroupStart(mid) <= position ? lo : hi) = mid;
  }
  group_ += lo;
  const int64_t within = position - runs.GroupStart(lo);
  run_ = within / group_->length;
  used_ = within % group_->length;
}

namespace {

// Copies `bytes` bytes with non-temporal stores (StoreMode::kStreaming); the caller fences once
// after its last one (StoreFence). The source is prefetched 256 bytes ahead with the
// non-temporal hint: measured on the 2-core EPYC VM, this matches glibc's own non-temporal memcpy
// (used only above 192 MiB there), while plain stores reach about 0.65x of it.
void StreamBytes(std::byte* dst, const std::byte* src, size_t bytes) {
#if defined(__SSE2__)
  const size_t head = std::min(bytes, (16 - (reinterpret_cast<std::uintptr_t>(dst) & 15)) & 15);
  std::memcpy(dst, src, head);
  dst += head;
  src += head;
  bytes -= head;
  const size_t body = bytes & ~size_t{63};
  // Prefetches stay inside the run: past its end lie bytes this copy does not read (the other
  // members' parts of a strided row), and fetching them costs bandwidth.
  const size_t prefetch_end = body >= 4096 ? body - 256 : 0;
  for (size_t k = 0; k < body; k += 64) {
    if (k < prefetch_end) _mm_prefetch(reinterpret_cast<const char*>(src + k + 256), _MM_HINT_NTA);
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + k));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + k + 16));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + k + 32));
    const __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + k + 48));
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + k), a);
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + k + 16), b);
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + k + 32), c);
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + k + 48), d);
  }
  std::memcpy(dst + body, src + body, bytes - body);
#else
  std::memcpy(dst, src, bytes);
#endif
}

}  // namespace

void StoreFence() {
#if defined(__SSE2__)
  _mm_sfence();
#endif
}

namespace {

// `count` copies of `bytes` bytes with the given byte strides; small fixed sizes get inlined
// copies instead of a memcpy call per run.
template <int64_t kBytes>
void CopyFixed(std::byte* dst, int64_t dst_stride, const std::byte* src, int64_t src_stride, int64_t count) {
  for (int64_t k = 0; k < count; ++k) std::memcpy(dst + k * dst_stride, src + k * src_stride, kBytes);
}

void CopyStrided(std::byte* dst, int64_t dst_stride, const std::byte* src, int64_t src_stride, int64_t bytes,
                 int64_t count, bool stream) {
  if (stream) {
    for (int64_t k = 0; k < count; ++k)
      StreamBytes(dst + k * dst_stride, src + k * src_stride, static_cast<size_t>(bytes));
    return;
  }
  switch (bytes) {
    case 2:
      return CopyFixed<2>(dst, dst_stride, src, src_stride, count);
    case 4:
      return CopyFixed<4>(dst, dst_stride, src, src_stride, count);
    case 8:
      return CopyFixed<8>(dst, dst_stride, src, src_stride, count);
    case 16:
      return CopyFixed<16>(dst, dst_stride, src, src_stride, count);
    case 32:
      return CopyFixed<32>(dst, dst_stride, src, src_stride, count);
    default:
      for (int64_t k = 0; k < count; ++k) {
        std::memcpy(dst + k * dst_stride, src + k * src_stride, static_cast<size_t>(bytes));
      }
  }
}

// Reduces positions [0, m) of one segment that is contiguous in every input (`in`, in group
// order) and every output (`out`), tile by tile: a tile's accumulators stay in registers or L1
// while every input adds into it, so all inputs are read side by side (one memory stream each,
// as the hardware prefetchers want) and each output is written once, streamed in kStreaming mode
// when the segment is long enough. Per element: Load(in[0]), then op with Load(in[i]) for
// i = 1, 2, ... in order, divided once, stored once: bitwise what Accumulator gives.
constexpr int64_t kPrefetchBytes = 1024;

// acc[k] = f(...f(f(Load(in[0][p + k]), Load(in[1][p + k])), ...), Load(in[n-1][p + k])) for k in
// [0, len): the group order of Accumulator. Sixteen elements at a time, every input in turn, so
// the n inputs are read side by side a cache line at a time and the partial results stay in
// registers.
template <class T, class A, class F>
void FoldWith(const F& f, const T* const* in, size_t n, int64_t p, int64_t len, A* acc) {
  constexpr int64_t kLane = 16;
  int64_t k = 0;
  for (; k + kLane <= len; k += kLane) {
    A v[kLane];
    for (int64_t j = 0; j < kLane; ++j) v[j] = ArithOf<T>::Load(in[0][p + k + j]);
    for (size_t i = 1; i < n; ++i) {
      const T* src = in[i] + p + k;
      for (int64_t j = 0; j < kLane; ++j) v[j] = f(v[j], ArithOf<T>::Load(src[j]));
    }
    for (int64_t j = 0; j < kLane; ++j) acc[k + j] = v[j];
  }
  for (; k < len; ++k) {
    A v = ArithOf<T>::Load(in[0][p + k]);
    for (size_t i = 1; i < n; ++i) v = f(v, ArithOf<T>::Load(in[i][p + k]));
    acc[k] = v;
  }
}

template <class T>
void Fold(ReduceOp op, const T* const* in, size_t n, int64_t p, int64_t len, typename ArithOf<T>::type* acc) {
  using A = typename ArithOf<T>::type;
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg:
      return FoldWith<T, A>([](A a, A b) { return Plus<A>(a, b); }, in, n, p, len, acc);
    case ReduceOp::kProduct:
      return FoldWith<T, A>([](A a, A b) { return Times<A>(a, b); }, in, n, p, len, acc);
    case ReduceOp::kMin:
      return FoldWith<T, A>([](A a, A b) { return scalar::Min<A>(a, b); }, in, n, p, len, acc);
    case ReduceOp::kMax:
      return FoldWith<T, A>([](A a, A b) { return scalar::Max<A>(a, b); }, in, n, p, len, acc);
  }
}

template <class T>
void ReduceSegment(ReduceOp op, int64_t divisor, const T* const* in, size_t n, T* const* out, size_t outs,
                   int64_t m, StoreMode mode) {
  using A = typename ArithOf<T>::type;
  constexpr int64_t kTile = 256 / sizeof(T) > 0 ? 256 / sizeof(T) : 1;
  A acc[kTile];
  T staged[kTile];
  const bool stream =
      mode == StoreMode::kStreaming && m * static_cast<int64_t>(sizeof(T)) >= kStreamingMinRun;
  // The first tile ends where the first output reaches a 64-byte boundary, so the streamed
  // tiles after it write whole cache lines.
  const auto misaligned = static_cast<int64_t>(reinterpret_cast<std::uintptr_t>(out[0]) & 63);
  int64_t tile = stream && misaligned % static_cast<int64_t>(sizeof(T)) == 0
                     ? ((64 - misaligned) & 63) / static_cast<int64_t>(sizeof(T))
                     : 0;
  if (tile == 0) tile = kTile;
  for (int64_t p = 0; p < m; p += tile, tile = kTile) {
    const int64_t len = std::min(tile, m - p);
#if defined(__SSE2__)
    // Every input's line kPrefetch bytes ahead, inside the segment (past it lie bytes this
    // reduction may not read).
    constexpr int64_t kAhead = kPrefetchBytes / static_cast<int64_t>(sizeof(T));
    if (p + kAhead + len <= m) {
      for (size_t i = 0; i < n; ++i) {
        for (int64_t b = 0; b < len * static_cast<int64_t>(sizeof(T)); b += 64)
          _mm_prefetch(reinterpret_cast<const char*>(in[i] + p + kAhead) + b, _MM_HINT_T0);
      }
    }
#endif
    Fold<T>(op, in, n, p, len, acc);
    if (divisor > 1) {
      for (int64_t k = 0; k < len; ++k) acc[k] = scalar::Divide<A>(acc[k], divisor);
    }
    for (int64_t k = 0; k < len; ++k) staged[k] = ArithOf<T>::Store(acc[k]);
    const auto bytes = static_cast<size_t>(len) * sizeof(T);
    for (size_t o = 0; o < outs; ++o) {
      auto* to = reinterpret_cast<std::byte*>(out[o] + p);
      const auto* from = reinterpret_cast<const std::byte*>(staged);
      if (stream && bytes >= 64) {
        StreamBytes(to, from, bytes);
      } else {
        std::memcpy(to, from, bytes);
      }
    }
  }
}

// Splits [begin, end) into segments that are contiguous in every input and output view and
// reduces each with ReduceSegment.
template <class T>
void ReduceTyped(ReduceOp op, int64_t divisor, const std::vector<RunsInput>& inputs,
                 const std::vector<RunsOutput>& outputs, int64_t begin, int64_t end, StoreMode mode) {
  std::vector<RunWalker> walkers;
  walkers.reserve(inputs.size() + outputs.size());
  for (const RunsInput& in : inputs) walkers.emplace_back(*in.runs, begin);
  for (const RunsOutput& o : outputs) walkers.emplace_back(*o.runs, begin);
  const size_t n = inputs.size();
  std::vector<const T*> in(n);
  std::vector<T*> out(outputs.size());
  for (int64_t p = begin; p < end;) {
    int64_t len = end - p;
    for (const RunWalker& w : walkers) len = std::min(len, w.available());
    for (size_t i = 0; i < n; ++i) in[i] = reinterpret_cast<const T*>(inputs[i].data) + walkers[i].offset();
    for (size_t o = 0; o < out.size(); ++o)
      out[o] = reinterpret_cast<T*>(outputs[o].data) + walkers[n + o].offset();
    ReduceSegment<T>(op, divisor, in.data(), n, out.data(), out.size(), len, mode);
    for (RunWalker& w : walkers) w.Advance(len);
    p += len;
  }
  if (mode == StoreMode::kStreaming) StoreFence();
}

}  // namespace

namespace {

// Whether `count` runs of `bytes` bytes written at `dst` (`dst_stride` apart), inside a
// destination run of `dst_run` bytes, are stored non-temporally in `mode`: runs of
// kStreamingMinRun bytes and more, and shorter runs laid end to end in a destination run that
// long when each writes whole cache lines (a HealDA-like all_to_all's 384 B pieces of its
// source rows): the line is then never read for ownership nor written twice.
bool Streams(StoreMode mode, const std::byte* dst, int64_t dst_stride, int64_t bytes, int64_t count,
             int64_t dst_run) {
  if (mode != StoreMode::kStreaming) return false;
  if (bytes >= kStreamingMinRun) return true;
  const bool whole_lines = bytes % 64 == 0 && (reinterpret_cast<std::uintptr_t>(dst) & 63) == 0;
  return whole_lines && (count == 1 || dst_stride == bytes) && dst_run >= kStreamingMinRun;
}

}  // namespace

RunCopier::RunCopier(const std::byte* src, const ViewRuns& src_runs, std::byte* dst, const ViewRuns& dst_runs,
                     int64_t element_size, int64_t begin)
    : src_(src), dst_(dst), es_(element_size), s_(src_runs, begin), d_(dst_runs, begin) {}

void RunCopier::Copy(int64_t count, StoreMode mode) {
  const int64_t es = es_;
  RunWalker& s = s_;
  RunWalker& d = d_;
  int64_t remaining = count;
  while (remaining > 0) {
    const RunGroup& gs = s.group();
    const RunGroup& gd = d.group();
    std::byte* to = dst_ + d.offset() * es;
    const std::byte* from = src_ + s.offset() * es;
    // Whole runs of equal length on both sides: one strided loop.
    if (s.at_run_start() && d.at_run_start() && gs.length == gd.length && gs.length <= remaining) {
      const int64_t r = std::min({s.runs_left(), d.runs_left(), remaining / gs.length});
      const int64_t bytes = gs.length * es;
      CopyStrided(to, gd.stride * es, from, gs.stride * es, bytes, r,
                  Streams(mode, to, gd.stride * es, bytes, r, bytes));
      s.NextRuns(r);
      d.NextRuns(r);
      remaining -= r * gs.length;
      continue;
    }
    // Whole source runs laid end to end into one destination run (e.g. all_to_all receives), or
    // pieces of one source run into whole destination runs (e.g. all_to_all sends).
    const bool gather = s.at_run_start() && gs.length <= d.available() && gs.length <= remaining;
    if (gather || (d.at_run_start() && gd.length <= s.available() && gd.length <= remaining)) {
      RunWalker& whole = gather ? s : d;  // the side copied in whole runs
      RunWalker& part = gather ? d : s;   // the side whose one run they lie in
      const int64_t length = whole.group().length, bytes = length * es;
      const int64_t r = std::min({whole.runs_left(), part.available() / length, remaining / length});
      const int64_t whole_stride = whole.group().stride * es;
      const int64_t to_stride = gather ? bytes : whole_stride, from_stride = gather ? whole_stride : bytes;
      CopyStrided(to, to_stride, from, from_stride, bytes, r,
                  Streams(mode, to, to_stride, bytes, r, gather ? gd.length * es : bytes));
      whole.NextRuns(r);
      part.Advance(r * length);
      remaining -= r * length;
      continue;
    }
    const int64_t m = std::min({s.available(), d.available(), remaining});
    CopyStrided(to, 0, from, 0, m * es, 1, Streams(mode, to, 0, m * es, 1, m * es));
    s.Advance(m);
    d.Advance(m);
    remaining -= m;
  }
}

void CopyRuns(const std::byte* src, const ViewRuns& src_runs, std::byte* dst, const ViewRuns& dst_runs,
              int64_t element_size, int64_t begin, int64_t end, StoreMode mode) {
  if (end <= begin) return;
  RunCopier(src, src_runs, dst, dst_runs, element_size, begin).Copy(end - begin, mode);
  if (mode == StoreMode::kStreaming) StoreFence();
}

void ReduceRuns(DType dtype, ReduceOp op, int64_t divisor, const std::vector<RunsInput>& inputs,
                const std::vector<RunsOutput>& outputs, int64_t begin, int64_t end, StoreMode mode) {
  if (end <= begin || inputs.empty() || outputs.empty()) return;
  DispatchDType(
      dtype, [&](auto tag) { ReduceTyped<decltype(tag)>(op, divisor, inputs, outputs, begin, end, mode); });
}

void ReduceRuns(DType dtype, ReduceOp op, int64_t divisor, const std::vector<RunsInput>& inputs,
                std::byte* dst, const ViewRuns& dst_runs, int64_t begin, int64_t end) {
  ReduceRuns(dtype, op, divisor, inputs, {RunsOutput{dst, &dst_runs}}, begin, end);
}

void CopyView(const SendView& src, const RecvView& dst) {
  const ViewRuns in(src), out(dst);
  CopyRuns(src.data, in, dst.data, out, DTypeSize(src.dtype), 0, std::min(in.elements(), out.elements()));
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
