// The compiled view runs of the local backend (engine/src/comm/view_ops.hpp) against the definition
// of a view (communicator.hpp): per box, the cartesian product of each dim's positions (its
// intervals concatenated in list order), in row-major order, boxes one after the other; element
// offset = sum over dims of position x row-major stride. Reductions against the group-order rule
// of Reduction: acc = x0, then acc = op(acc, x_i) for i = 1.. in ArithOf<T>, divided once, stored
// once, with the scalar steps of scalar_math.hpp (checked against IEEE 754 in scalar_math_test).

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "../../engine/src/comm/view_ops.hpp"
#include "../../engine/src/core/scalar_math.hpp"
#include "shardscope/engine/comm/communicator.hpp"
#include "shardscope/engine/core/spec.hpp"

using namespace shardscope::engine;
namespace scalar = shardscope::engine::scalar;

namespace {

// Offsets of a view's elements, in view order, straight from the definition.
std::vector<int64_t> DefinitionOffsets(const Shape& shape, const std::vector<Box>& boxes) {
  const Shape strides = RowMajorStrides(shape);
  std::vector<int64_t> out;
  for (const Box& box : boxes) {
    std::vector<std::vector<int64_t>> positions(shape.size());
    bool empty = false;
    for (size_t d = 0; d < shape.size(); ++d) {
      for (const Interval& iv : box.dims[d]) {
        for (int64_t x = iv.begin; x < iv.end; ++x) positions[d].push_back(x);
      }
      empty = empty || positions[d].empty();
    }
    if (empty) continue;
    std::vector<size_t> at(shape.size(), 0);
    bool done = false;
    while (!done) {
      int64_t offset = 0;
      for (size_t d = 0; d < shape.size(); ++d) offset += positions[d][at[d]] * strides[d];
      out.push_back(offset);
      done = true;
      for (size_t d = shape.size(); d-- > 0;) {
        if (++at[d] < positions[d].size()) {
          done = false;
          break;
        }
        at[d] = 0;
      }
    }
  }
  return out;
}

std::vector<int64_t> Expand(const detail::ViewRuns& runs) {
  std::vector<int64_t> out;
  for (const detail::RunGroup& g : runs.groups()) {
    for (int64_t k = 0; k < g.count; ++k) {
      for (int64_t e = 0; e < g.length; ++e) out.push_back(g.offset + k * g.stride + e);
    }
  }
  return out;
}

// A random view of `shape`: 1-3 boxes; per dim 1-3 disjoint intervals in random order, some
// empty, or the whole extent.
std::vector<Box> RandomBoxes(std::mt19937& rng, const Shape& shape) {
  std::vector<Box> boxes(std::uniform_int_distribution<int>(1, 3)(rng));
  for (Box& box : boxes) {
    for (int64_t extent : shape) {
      IndexSet set;
      if (extent == 0 || std::uniform_int_distribution<int>(0, 2)(rng) == 0) {
        set.push_back({0, extent});
      } else {
        std::vector<int64_t> cuts = {0, extent};
        for (int k = std::uniform_int_distribution<int>(0, 3)(rng); k > 0; --k) {
          cuts.push_back(std::uniform_int_distribution<int64_t>(0, extent)(rng));
        }
        std::sort(cuts.begin(), cuts.end());
        for (size_t i = 0; i + 1 < cuts.size(); ++i) {
          if (std::uniform_int_distribution<int>(0, 2)(rng) != 0) set.push_back({cuts[i], cuts[i + 1]});
        }
        std::shuffle(set.begin(), set.end(), rng);
        if (set.empty()) set.push_back({0, extent});
      }
      box.dims.push_back(set);
    }
  }
  return boxes;
}

Shape RandomShape(std::mt19937& rng) {
  Shape shape(std::uniform_int_distribution<int>(0, 4)(rng));
  for (int64_t& e : shape) e = std::uniform_int_distribution<int64_t>(0, 7)(rng);
  return shape;
}

}  // namespace

TEST_CASE("compiled view runs list a view's elements in view order", "[engine][local][view_ops]") {
  std::mt19937 rng(19);
  for (int trial = 0; trial < 3000; ++trial) {
    const Shape shape = RandomShape(rng);
    const std::vector<Box> boxes = RandomBoxes(rng, shape);
    INFO("trial " << trial << " shape " << FormatShape(shape));
    const detail::ViewRuns runs(shape, boxes);
    const std::vector<int64_t> want = DefinitionOffsets(shape, boxes);
    REQUIRE(Expand(runs) == want);
    CHECK(runs.elements() == static_cast<int64_t>(want.size()));
  }
}

TEST_CASE("single-interval boxes compile to strided groups without a walk over their runs",
          "[engine][local][view_ops]") {
  // HealDA-like all_to_all send: [T, X/n, C] local, channels [96, 192) to one peer. Dims 0 and 1
  // are whole, so all T x X/n runs of 96 elements are one group with stride C.
  const Shape send_shape{16, 12, 384};
  Box send = FullBox(send_shape);
  send.dims[2] = {{96, 192}};
  const detail::ViewRuns s(send_shape, {send});
  REQUIRE(s.groups().size() == 1);
  CHECK(s.groups()[0].offset == 96);
  CHECK(s.groups()[0].length == 96);
  CHECK(s.groups()[0].count == 16 * 12);
  CHECK(s.groups()[0].stride == 384);
  // Its receive: [T, X, C/n] local, rows [12, 24) of X from that peer: per T one run of 12 x 96.
  const Shape recv_shape{16, 48, 96};
  Box recv = FullBox(recv_shape);
  recv.dims[1] = {{12, 24}};
  const detail::ViewRuns r(recv_shape, {recv});
  REQUIRE(r.groups().size() == 1);
  CHECK(r.groups()[0].offset == 12 * 96);
  CHECK(r.groups()[0].length == 12 * 96);
  CHECK(r.groups()[0].count == 16);
  CHECK(r.groups()[0].stride == 48 * 96);
  // A whole tensor is one run.
  const detail::ViewRuns whole(recv_shape, {FullBox(recv_shape)});
  REQUIRE(whole.groups().size() == 1);
  CHECK(whole.groups()[0].length == 16 * 48 * 96);
}

TEST_CASE("CopyRuns copies exactly the given view positions", "[engine][local][view_ops]") {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 2000; ++trial) {
    const Shape src_shape = RandomShape(rng), dst_shape = RandomShape(rng);
    const std::vector<Box> src_boxes = RandomBoxes(rng, src_shape), dst_boxes = RandomBoxes(rng, dst_shape);
    const std::vector<int64_t> src_offsets = DefinitionOffsets(src_shape, src_boxes);
    const std::vector<int64_t> dst_offsets = DefinitionOffsets(dst_shape, dst_boxes);
    // A valid receive view never names an element twice; skip the random ones that do.
    std::vector<int64_t> sorted = dst_offsets;
    std::sort(sorted.begin(), sorted.end());
    if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) continue;
    const int64_t count = static_cast<int64_t>(std::min(src_offsets.size(), dst_offsets.size()));
    const int64_t begin = std::uniform_int_distribution<int64_t>(0, count)(rng);
    const int64_t end = std::uniform_int_distribution<int64_t>(begin, count)(rng);
    for (int64_t element_size : {int64_t{1}, int64_t{4}, int64_t{8}}) {
      INFO("trial " << trial << " element size " << element_size << " positions [" << begin << ", " << end
                    << ")");
      std::vector<std::byte> src(static_cast<size_t>(NumElements(src_shape) * element_size));
      for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<std::byte>(i * 7 + 1);
      std::vector<std::byte> dst(static_cast<size_t>(NumElements(dst_shape) * element_size), std::byte{0xEE});
      std::vector<std::byte> want = dst;
      for (int64_t p = begin; p < end; ++p) {
        std::memcpy(want.data() + dst_offsets[static_cast<size_t>(p)] * element_size,
                    src.data() + src_offsets[static_cast<size_t>(p)] * element_size,
                    static_cast<size_t>(element_size));
      }
      for (detail::StoreMode mode : {detail::StoreMode::kCached, detail::StoreMode::kStreaming}) {
        std::vector<std::byte> out = dst;
        detail::CopyRuns(src.data(), detail::ViewRuns(src_shape, src_boxes), out.data(),
                         detail::ViewRuns(dst_shape, dst_boxes), element_size, begin, end, mode);
        REQUIRE(out == want);
      }
    }
  }
}

TEST_CASE("streaming stores copy long runs at any alignment exactly", "[engine][local][view_ops]") {
  // Runs from below kStreamingMinRun to several KiB, at odd byte offsets on both sides: the
  // non-temporal path (aligned head, 64-byte body, tail) must give the definition's bytes.
  for (int64_t row_bytes : {int64_t{100}, int64_t{128}, int64_t{129}, int64_t{384}, int64_t{4099}}) {
    for (int64_t shift : {int64_t{0}, int64_t{1}, int64_t{7}, int64_t{13}}) {
      INFO("row bytes " << row_bytes << " column shift " << shift);
      // Source: [9, row_bytes + 20] bytes, columns [shift, shift + row_bytes) of every row.
      const Shape src_shape{9, row_bytes + 20}, dst_shape{9 * row_bytes + 5};
      Box src_box = FullBox(src_shape);
      src_box.dims[1] = {{shift, shift + row_bytes}};
      Box dst_box = FullBox(dst_shape);
      dst_box.dims[0] = {{5, 9 * row_bytes + 5}};
      std::vector<std::byte> src(static_cast<size_t>(NumElements(src_shape)));
      for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<std::byte>(i * 13 + 5);
      std::vector<std::byte> dst(static_cast<size_t>(NumElements(dst_shape)), std::byte{0xEE});
      std::vector<std::byte> want = dst;
      const std::vector<int64_t> src_offsets = DefinitionOffsets(src_shape, {src_box});
      const std::vector<int64_t> dst_offsets = DefinitionOffsets(dst_shape, {dst_box});
      for (size_t p = 0; p < src_offsets.size(); ++p)
        want[static_cast<size_t>(dst_offsets[p])] = src[static_cast<size_t>(src_offsets[p])];
      detail::CopyRuns(src.data(), detail::ViewRuns(src_shape, {src_box}), dst.data(),
                       detail::ViewRuns(dst_shape, {dst_box}), 1, 0, static_cast<int64_t>(src_offsets.size()),
                       detail::StoreMode::kStreaming);
      REQUIRE(dst == want);
    }
  }
}

namespace {

// The group-order rule for one element, from the scalar steps.
template <class T>
T ReduceByDefinition(ReduceOp op, int64_t divisor, const std::vector<T>& values) {
  using A = typename ArithOf<T>::type;
  A acc = ArithOf<T>::Load(values[0]);
  for (size_t i = 1; i < values.size(); ++i) {
    const A v = ArithOf<T>::Load(values[i]);
    switch (op) {
      case ReduceOp::kSum:
      case ReduceOp::kAvg:
        acc = scalar::Plus<A>(acc, v);
        break;
      case ReduceOp::kProduct:
        acc = scalar::Times<A>(acc, v);
        break;
      case ReduceOp::kMin:
        acc = scalar::Min<A>(acc, v);
        break;
      case ReduceOp::kMax:
        acc = scalar::Max<A>(acc, v);
        break;
    }
  }
  if (divisor > 1) acc = scalar::Divide<A>(acc, divisor);
  return ArithOf<T>::Store(acc);
}

template <class T>
void CheckReduce(std::mt19937& rng, DType dtype, ReduceOp op) {
  // 5000 elements: more than two of the kernel's 2048-element blocks, ending mid-block.
  const int64_t rows = 50, cols = 100, n = 3;
  const Shape shape{rows, cols + 7};
  Box box = FullBox(shape);
  box.dims[1] = {{7, cols + 7}};
  std::vector<std::vector<T>> inputs(n, std::vector<T>(static_cast<size_t>(NumElements(shape))));
  std::uniform_real_distribution<double> value(-3.0, 3.0);
  for (auto& in : inputs) {
    for (T& x : in) x = ArithOf<T>::Store(static_cast<typename ArithOf<T>::type>(value(rng)));
  }
  const detail::ViewRuns in_runs(shape, {box});
  std::vector<detail::RunsInput> runs_inputs;
  for (auto& in : inputs) runs_inputs.push_back({reinterpret_cast<const std::byte*>(in.data()), &in_runs});
  // The output: a whole 1-D tensor; positions [begin, end) only.
  const Shape out_shape{rows * cols};
  std::vector<T> out(static_cast<size_t>(rows * cols));
  const detail::ViewRuns out_runs(out_shape, {FullBox(out_shape)});
  const int64_t divisor = op == ReduceOp::kAvg ? n * 2 : 1;
  const int64_t begin = 333, end = rows * cols - 17;
  detail::ReduceRuns(dtype, op, divisor, runs_inputs, reinterpret_cast<std::byte*>(out.data()), out_runs,
                     begin, end);
  const std::vector<int64_t> in_offsets = DefinitionOffsets(shape, {box});
  for (int64_t p = begin; p < end; ++p) {
    std::vector<T> values;
    for (const auto& in : inputs)
      values.push_back(in[static_cast<size_t>(in_offsets[static_cast<size_t>(p)])]);
    const T want = ReduceByDefinition<T>(op, divisor, values);
    REQUIRE(std::memcmp(&out[static_cast<size_t>(p)], &want, sizeof(T)) == 0);
  }
}

}  // namespace

TEST_CASE("ReduceRuns stores the same bits into every output, streamed or not", "[engine][local][view_ops]") {
  // Two outputs with different views (a column box of a 2-D tensor, a shifted 1-D range): each
  // gets the group-order result of every position.
  const int64_t rows = 40, cols = 130, n = 3;
  const Shape in_shape{rows * cols};
  std::vector<std::vector<float>> inputs(n, std::vector<float>(static_cast<size_t>(rows * cols)));
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t k = 0; k < rows * cols; ++k)
      inputs[static_cast<size_t>(i)][static_cast<size_t>(k)] =
          static_cast<float>(i + 1) * 0.1f + static_cast<float>(k % 977) * 1.0e-3f;
  }
  const detail::ViewRuns in_runs(in_shape, {FullBox(in_shape)});
  std::vector<detail::RunsInput> runs_inputs;
  for (auto& in : inputs) runs_inputs.push_back({reinterpret_cast<const std::byte*>(in.data()), &in_runs});
  const Shape a_shape{rows, cols + 9}, b_shape{rows * cols + 3};
  Box a_box = FullBox(a_shape), b_box = FullBox(b_shape);
  a_box.dims[1] = {{9, cols + 9}};
  b_box.dims[0] = {{3, rows * cols + 3}};
  const detail::ViewRuns a_runs(a_shape, {a_box}), b_runs(b_shape, {b_box});
  const std::vector<int64_t> a_offsets = DefinitionOffsets(a_shape, {a_box});
  const std::vector<int64_t> b_offsets = DefinitionOffsets(b_shape, {b_box});
  for (detail::StoreMode mode : {detail::StoreMode::kCached, detail::StoreMode::kStreaming}) {
    std::vector<float> a(static_cast<size_t>(NumElements(a_shape)), -1.0f);
    std::vector<float> b(static_cast<size_t>(NumElements(b_shape)), -1.0f);
    const int64_t begin = 77, end = rows * cols - 5;
    detail::ReduceRuns(DType::kF32, ReduceOp::kSum, 1, runs_inputs,
                       {detail::RunsOutput{reinterpret_cast<std::byte*>(a.data()), &a_runs},
                        detail::RunsOutput{reinterpret_cast<std::byte*>(b.data()), &b_runs}},
                       begin, end, mode);
    for (int64_t p = 0; p < rows * cols; ++p) {
      const float got_a = a[static_cast<size_t>(a_offsets[static_cast<size_t>(p)])];
      const float got_b = b[static_cast<size_t>(b_offsets[static_cast<size_t>(p)])];
      if (p < begin || p >= end) {
        REQUIRE(got_a == -1.0f);
        REQUIRE(got_b == -1.0f);
        continue;
      }
      std::vector<float> values;
      for (const auto& in : inputs) values.push_back(in[static_cast<size_t>(p)]);
      const float want = ReduceByDefinition<float>(ReduceOp::kSum, 1, values);
      REQUIRE(std::memcmp(&got_a, &want, 4) == 0);
      REQUIRE(std::memcmp(&got_b, &want, 4) == 0);
    }
  }
}

TEST_CASE("ReduceRuns follows the group-order rule bitwise, block by block", "[engine][local][view_ops]") {
  std::mt19937 rng(3);
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kProduct, ReduceOp::kMin, ReduceOp::kMax}) {
    INFO("op " << ReduceOpName(op));
    CheckReduce<float>(rng, DType::kF32, op);
    CheckReduce<double>(rng, DType::kF64, op);
    CheckReduce<Half>(rng, DType::kF16, op);
    CheckReduce<BFloat16>(rng, DType::kBF16, op);
    CheckReduce<int32_t>(rng, DType::kI32, op);
    CheckReduce<int64_t>(rng, DType::kI64, op);
  }
}

namespace {

// Long contiguous segments, streamed, into outputs shifted by `shift` elements from a 64-byte
// boundary (the kernel's first tile runs up to the boundary), with 5 inputs read side by side
// and a second output: every position in [begin, end) of both is the group-order result.
template <class T>
void CheckStreamedReduce(std::mt19937& rng, DType dtype, ReduceOp op, int64_t shift) {
  const int64_t count = 3001, n = 5;
  const Shape in_shape{count};
  std::vector<std::vector<T>> inputs(n, std::vector<T>(static_cast<size_t>(count)));
  std::uniform_real_distribution<double> value(-3.0, 3.0);
  for (auto& in : inputs) {
    for (T& x : in) x = ArithOf<T>::Store(static_cast<typename ArithOf<T>::type>(value(rng)));
  }
  const detail::ViewRuns in_runs(in_shape, {FullBox(in_shape)});
  std::vector<detail::RunsInput> runs_inputs;
  for (auto& in : inputs) runs_inputs.push_back({reinterpret_cast<const std::byte*>(in.data()), &in_runs});
  const Shape out_shape{count + shift};
  Box out_box = FullBox(out_shape);
  out_box.dims[0] = {{shift, count + shift}};
  const detail::ViewRuns out_runs(out_shape, {out_box});
  // 64-byte aligned storage, so `shift` sets the outputs' alignment.
  std::vector<T> a_store(static_cast<size_t>(count + shift + 64)), b_store = a_store;
  auto aligned = [](std::vector<T>& v) {
    const auto address = reinterpret_cast<std::uintptr_t>(v.data());
    return v.data() + ((64 - address % 64) % 64) / sizeof(T);
  };
  T* a = aligned(a_store);
  T* b = aligned(b_store);
  const T sentinel = ArithOf<T>::Store(static_cast<typename ArithOf<T>::type>(-7));
  std::fill(a, a + count + shift, sentinel);
  std::fill(b, b + count + shift, sentinel);
  const int64_t divisor = op == ReduceOp::kAvg ? n : 1;
  const int64_t begin = 3, end = count - 2;
  detail::ReduceRuns(dtype, op, divisor, runs_inputs,
                     {detail::RunsOutput{reinterpret_cast<std::byte*>(a), &out_runs},
                      detail::RunsOutput{reinterpret_cast<std::byte*>(b), &out_runs}},
                     begin, end, detail::StoreMode::kStreaming);
  for (int64_t p = 0; p < count; ++p) {
    T want = sentinel;
    if (p >= begin && p < end) {
      std::vector<T> values;
      for (const auto& in : inputs) values.push_back(in[static_cast<size_t>(p)]);
      want = ReduceByDefinition<T>(op, divisor, values);
    }
    REQUIRE(std::memcmp(a + shift + p, &want, sizeof(T)) == 0);
    REQUIRE(std::memcmp(b + shift + p, &want, sizeof(T)) == 0);
  }
}

}  // namespace

TEST_CASE("ReduceRuns streams long segments at any alignment with the group-order bits",
          "[engine][local][view_ops]") {
  std::mt19937 rng(5);
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kProduct, ReduceOp::kMin, ReduceOp::kMax}) {
    for (int64_t shift : {int64_t{0}, int64_t{1}, int64_t{3}, int64_t{17}}) {
      INFO("op " << ReduceOpName(op) << " shift " << shift);
      CheckStreamedReduce<float>(rng, DType::kF32, op, shift);
      CheckStreamedReduce<double>(rng, DType::kF64, op, shift);
      CheckStreamedReduce<Half>(rng, DType::kF16, op, shift);
      CheckStreamedReduce<BFloat16>(rng, DType::kBF16, op, shift);
      CheckStreamedReduce<int32_t>(rng, DType::kI32, op, shift);
      CheckStreamedReduce<int64_t>(rng, DType::kI64, op, shift);
    }
  }
}

TEST_CASE("the view-runs cache compiles a view once, keyed by its value", "[engine][local][view_ops]") {
  detail::ViewRunsCache cache;
  const Shape shape{6, 10};
  Box box = FullBox(shape);
  box.dims[1] = {{2, 5}, {7, 9}};
  const std::shared_ptr<const detail::ViewRuns> first = cache.Get(shape, {box});
  // An equal view built anew (other vectors, same values) gets the same compiled runs.
  Box same = FullBox(shape);
  same.dims[1] = {{2, 5}, {7, 9}};
  REQUIRE(cache.Get(shape, {same}) == first);
  // Any change of shape or boxes gets runs of its own, matching the definition.
  Box other = same;
  other.dims[1] = {{2, 5}, {7, 8}};
  const auto changed = cache.Get(shape, {other});
  REQUIRE(changed != first);
  REQUIRE(Expand(*changed) == DefinitionOffsets(shape, {other}));
  const Shape wider{6, 11};
  const auto reshaped = cache.Get(wider, {same});
  REQUIRE(reshaped != first);
  REQUIRE(Expand(*reshaped) == DefinitionOffsets(wider, {same}));
  // Runs handed out stay valid when the cache drops them (100 other views push them out).
  for (int64_t k = 0; k < 100; ++k) {
    Box filler = FullBox(shape);
    filler.dims[0] = {{0, 1 + k % 6}};
    filler.dims[1] = {{0, 1 + k / 6}};
    cache.Get(shape, {filler});
  }
  REQUIRE(Expand(*first) == DefinitionOffsets(shape, {box}));
  REQUIRE(cache.Get(shape, {box}) != first);  // compiled again after it was dropped
}
