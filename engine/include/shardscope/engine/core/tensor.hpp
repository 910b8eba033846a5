#pragma once
// Local tensors: one rank's shard as a contiguous row-major host buffer, plus the f16/bf16
// conversions and the dtype dispatch that every typed kernel of the engine goes through.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <utility>
#include <vector>

#include "shardscope/engine/core/mesh.hpp"
#include "shardscope/engine/core/spec.hpp"

namespace shardscope::engine {

/// IEEE 754 binary16, stored as its bits. Arithmetic goes through float.
struct Half {
  uint16_t bits = 0;
};
/// bfloat16 (the upper half of a binary32), stored as its bits.
struct BFloat16 {
  uint16_t bits = 0;
};

/// float -> f16 with round-to-nearest-even; overflow gives +-inf, NaN stays NaN. Never throws.
uint16_t FloatToHalfBits(float value) noexcept;
/// f16 -> float (exact, subnormals included). Never throws.
float HalfBitsToFloat(uint16_t bits) noexcept;
/// float -> bf16 with round-to-nearest-even; NaN stays NaN (quiet). Never throws.
uint16_t FloatToBFloat16Bits(float value) noexcept;
/// bf16 -> float (exact). Never throws.
float BFloat16BitsToFloat(uint16_t bits) noexcept;

/// Arithmetic type of element type T: float for the half types (reductions accumulate in f32
/// and round once), T otherwise; with the load/store conversions.
template <class T>
struct ArithOf {
  using type = T;
  static type Load(T v) { return v; }
  static T Store(type v) { return v; }
};
template <>
struct ArithOf<Half> {
  using type = float;
  static float Load(Half v) { return HalfBitsToFloat(v.bits); }
  static Half Store(float v) { return Half{FloatToHalfBits(v)}; }
};
template <>
struct ArithOf<BFloat16> {
  using type = float;
  static float Load(BFloat16 v) { return BFloat16BitsToFloat(v.bits); }
  static BFloat16 Store(float v) { return BFloat16{FloatToBFloat16Bits(v)}; }
};

namespace detail {
/// Buffers of at least kLargeBlockBytes go through AllocateLarge: freed ones are kept for reuse
/// by the next allocation of the same size class (up to LargeCacheLimit() bytes), so a
/// repeated redistribute does not fault fresh pages in every call; glibc hands such sizes to
/// mmap/munmap, and under Open MPI its adaptive threshold is off, so every call paid the page
/// faults (1 MiB redistributes 10-40x slower than on threads). Buffers of at least
/// kHugePageBytes are also 2 MiB aligned and marked for transparent huge pages
/// (`madvise(MADV_HUGEPAGE)`, as PyTorch's CPU allocator does): 32 faults per 64 MiB instead of
/// 16384.
inline constexpr std::size_t kLargeBlockBytes = std::size_t{128} << 10;
inline constexpr std::size_t kHugePageBytes = std::size_t{2} << 20;
/// How many bytes of freed blocks the process keeps: 1 GiB, or SHARDSCOPE_BLOCK_CACHE_MIB
/// (0 turns the cache off) read once at the first call; a value that is not a whole number of
/// MiB is reported once on stderr and the default is kept.
std::size_t LargeCacheLimit();
/// Allocates `bytes` (>= kLargeBlockBytes): a cached block of the same size class (64 KiB
/// steps below 2 MiB, 2 MiB steps above), or a new one; throws std::bad_alloc. Released with
/// FreeLarge and the same `bytes`. Thread-safe. The last few blocks a thread freed are kept for
/// that thread first (its next allocation of their class takes the one it freed last, still in its
/// core's caches), then go to the process's lists (when pushed out, or when the thread exits).
void* AllocateLarge(std::size_t bytes);
void FreeLarge(void* p, std::size_t bytes) noexcept;

/// std::allocator that default-initializes (leaves bytes unset) on resize, so a buffer that is
/// about to be overwritten in full is not zero-filled first. Buffers of kLargeBlockBytes and
/// more go through AllocateLarge.
template <class T>
struct DefaultInitAllocator : std::allocator<T> {
  template <class U>
  struct rebind {
    using other = DefaultInitAllocator<U>;
  };
  DefaultInitAllocator() = default;
  template <class U>
  DefaultInitAllocator(const DefaultInitAllocator<U>&) noexcept {}
  T* allocate(std::size_t n) {
    if (n > static_cast<std::size_t>(-1) / sizeof(T)) throw std::bad_alloc();
    if (n * sizeof(T) >= kLargeBlockBytes) return static_cast<T*>(AllocateLarge(n * sizeof(T)));
    return std::allocator<T>::allocate(n);
  }
  void deallocate(T* p, std::size_t n) noexcept {
    if (n * sizeof(T) >= kLargeBlockBytes) {
      FreeLarge(p, n * sizeof(T));
    } else {
      std::allocator<T>::deallocate(p, n);
    }
  }
  template <class U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};
}  // namespace detail

/// One rank's tensor: shape, dtype and a contiguous row-major buffer that it owns. Value type
/// (copies deep-copy the bytes). Thread-compatible: concurrent const access is safe.
class LocalTensor {
 public:
  LocalTensor() = default;
  /// A zero-filled tensor. Throws Error(kInvalidInput) for a negative extent or an overflowing size.
  LocalTensor(Shape shape, DType dtype);
  /// A tensor whose bytes are unset, for outputs the caller overwrites in full (the executor
  /// checks that every element of a step's output is received). Same errors as the constructor.
  static LocalTensor Uninitialized(Shape shape, DType dtype);

  const Shape& shape() const { return shape_; }
  DType dtype() const { return dtype_; }
  int64_t ndim() const { return static_cast<int64_t>(shape_.size()); }
  /// Number of elements (1 for a 0-d tensor).
  int64_t numel() const { return numel_; }
  /// Size of the buffer in bytes.
  size_t nbytes() const { return bytes_.size(); }
  std::byte* data() { return bytes_.data(); }
  const std::byte* data() const { return bytes_.data(); }

  /// Element `flat_index` (row-major) converted to double; for tests and small tools (one
  /// dtype switch per call). Throws Error(kInvalidInput) when out of range.
  double GetDouble(int64_t flat_index) const;
  /// Stores `value` converted to the dtype (rounding to nearest even for halves).
  void SetDouble(int64_t flat_index, double value);

  /// Same shape, same dtype and same bytes (so -0.0 != 0.0 and NaN payloads count).
  bool BitwiseEqual(const LocalTensor& other) const;

 private:
  Shape shape_;
  DType dtype_ = DType::kF32;
  int64_t numel_ = 1;
  std::vector<std::byte, detail::DefaultInitAllocator<std::byte>> bytes_;

  struct UninitializedTag {};
  LocalTensor(Shape shape, DType dtype, UninitializedTag);
};

/// A tensor of `shape` whose element i is a small integer in [-8, 8] drawn from (seed, i), so
/// that sums and averages over up to a few hundred ranks stay exact in every dtype (bf16 holds
/// integers up to 256 exactly). Deterministic across runs and platforms.
LocalTensor SeededTensor(const Shape& shape, DType dtype, uint64_t seed);

/// Relative tolerance for comparing a float result whose plan divided by the group size
/// (R->P(sum) is x/n for floats, PyTorch _partition_value): a few ulps of the dtype; 0 for
/// integers, which are compared exactly.
double PartitionTolerance(DType dtype);

/// Flat index of the first element where `got` differs from `want` (bitwise when `rel_tol` is 0,
/// else |got - want| > rel_tol * max(1, |want|)), 0 on a shape or dtype mismatch, -1 if equal.
int64_t FirstDifference(const LocalTensor& got, const LocalTensor& want, double rel_tol);

/// FNV-1a 64 checksum of a tensor's bytes, as written to traces (shard checksums before/after).
uint64_t Checksum(const LocalTensor& tensor);

/// Row-major strides (in elements) of `shape`.
Shape RowMajorStrides(const Shape& shape);

}  // namespace shardscope::engine
