#include "shardscope/engine/core/tensor.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <new>

#include <string>
#include <type_traits>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "core/dtype_dispatch.hpp"
#include "core/scalar_math.hpp"
#include "shardscope/engine/core/knobs.hpp"
#include "shardscope/error.hpp"

namespace shardscope::engine {
namespace {

uint64_t SplitMix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

template <class T>
double ToDouble(T v) {
  return static_cast<double>(ArithOf<T>::Load(v));
}

template <class T>
T FromDouble(double v) {
  using A = typename ArithOf<T>::type;
  return ArithOf<T>::Store(static_cast<A>(v));
}

}  // namespace

namespace detail {
namespace {

// Freed large blocks kept for reuse, keyed by their size class: a repeated
// redistribute or training step allocates the same sizes every call, and a cached block's pages
// are already faulted in (the first touch of fresh pages, zeroed by the kernel, cost more than
// the copy itself on the test VM). Process-wide, under a mutex; at most LargeCacheLimit() held.
struct LargeBlockCache {
  std::mutex mutex;
  std::map<std::size_t, std::vector<void*>> blocks;
  std::size_t held = 0;
};

// Never destroyed: tensors with static storage may be freed after any other static object.
LargeBlockCache& Cache() {
  static LargeBlockCache* cache = new LargeBlockCache;
  return *cache;
}

// The size class: 64 KiB steps below 2 MiB, 2 MiB steps above. Never less than `bytes`.
std::size_t SizeClass(std::size_t bytes) {
  const std::size_t step = bytes >= kHugePageBytes ? kHugePageBytes : std::size_t{64} << 10;
  return bytes > static_cast<std::size_t>(-1) - step ? 0 : (bytes + step - 1) / step * step;
}

}  // namespace

std::size_t LargeCacheLimit() {
  static const std::size_t limit = [] {
    const std::size_t fallback = std::size_t{1} << 30;
    // An allocator cannot refuse to start: a bad value is said once and the default kept.
    try {
      const std::optional<int64_t> mib = KnobInteger(knobs::BlockCacheMib());
      return mib ? static_cast<std::size_t>(*mib) << 20 : fallback;
    } catch (const Error& e) {
      std::fprintf(stderr, "shardscope: %s; keeping the default 1024\n", e.what());
      return fallback;
    }
  }();
  return limit;
}

namespace {

// This thread's most recently freed blocks (counted in the cache's `held`), taken first by its
// next allocations of their size: a rank that reuses its own buffers finds them in its own core's
// caches, and which block it gets no longer depends on how its frees and allocations interleave
// with other ranks' (a few hundred ns more work on one rank, tracing for one, handed it another
// rank's just-written buffers). At most kMax; they go to the process's lists when the thread
// exits or when a newer block pushes them out.
struct ThreadBlocks {
  static constexpr size_t kMax = 4;
  std::array<std::pair<std::size_t, void*>, kMax> blocks{};  // (size class, block), oldest first
  size_t count = 0;
  ~ThreadBlocks() {
    LargeBlockCache& cache = Cache();
    std::lock_guard<std::mutex> lock(cache.mutex);
    for (size_t i = 0; i < count; ++i) Keep(cache, blocks[i].second, blocks[i].first);
  }
  // Hands a block to the process's lists (its bytes stay in `held`); frees it when the lists
  // cannot grow.
  static void Keep(LargeBlockCache& cache, void* p, std::size_t size) noexcept {
    try {
      cache.blocks[size].push_back(p);
    } catch (...) {
      cache.held -= size;
      std::free(p);
    }
  }
};

ThreadBlocks& Mine() {
  thread_local ThreadBlocks mine;
  return mine;
}

}  // namespace

void* AllocateLarge(std::size_t bytes) {
  const std::size_t size = SizeClass(bytes);
  if (size == 0) throw std::bad_alloc();
  {
    LargeBlockCache& cache = Cache();
    std::lock_guard<std::mutex> lock(cache.mutex);
    ThreadBlocks& mine = Mine();
    for (size_t i = mine.count; i-- > 0;) {
      if (mine.blocks[i].first != size) continue;
      void* p = mine.blocks[i].second;
      std::move(mine.blocks.begin() + static_cast<std::ptrdiff_t>(i) + 1,
                mine.blocks.begin() + static_cast<std::ptrdiff_t>(mine.count),
                mine.blocks.begin() + static_cast<std::ptrdiff_t>(i));
      --mine.count;
      cache.held -= size;
      return p;
    }
    auto it = cache.blocks.find(size);
    if (it != cache.blocks.end() && !it->second.empty()) {
      void* p = it->second.back();
      it->second.pop_back();
      cache.held -= size;
      return p;
    }
  }
  const bool huge = size >= kHugePageBytes;
  void* p = nullptr;
  if (posix_memalign(&p, huge ? kHugePageBytes : 4096, size) != 0 || p == nullptr) throw std::bad_alloc();
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  // Only a hint: without THP (or with it set to "never") the pages stay 4 KiB.
  if (huge) madvise(p, size, MADV_HUGEPAGE);
#endif
  return p;
}

void FreeLarge(void* p, std::size_t bytes) noexcept {
  const std::size_t size = SizeClass(bytes);
  {
    LargeBlockCache& cache = Cache();
    std::lock_guard<std::mutex> lock(cache.mutex);
    if (cache.held + size <= LargeCacheLimit()) {
      cache.held += size;
      ThreadBlocks& mine = Mine();
      if (mine.count == ThreadBlocks::kMax) {  // the oldest goes to the process's lists
        ThreadBlocks::Keep(cache, mine.blocks[0].second, mine.blocks[0].first);
        std::move(mine.blocks.begin() + 1, mine.blocks.end(), mine.blocks.begin());
        --mine.count;
      }
      mine.blocks[mine.count++] = {size, p};
      return;
    }
  }
  std::free(p);
}

}  // namespace detail

// The conversions live in scalar_math.hpp, shared with the CUDA kernels.
uint16_t FloatToHalfBits(float value) noexcept { return scalar::FloatToHalfBits(value); }
float HalfBitsToFloat(uint16_t bits) noexcept { return scalar::HalfBitsToFloat(bits); }
uint16_t FloatToBFloat16Bits(float value) noexcept { return scalar::FloatToBFloat16Bits(value); }
float BFloat16BitsToFloat(uint16_t bits) noexcept { return scalar::BFloat16BitsToFloat(bits); }

LocalTensor::LocalTensor(Shape shape, DType dtype, UninitializedTag)
    : shape_(std::move(shape)), dtype_(dtype) {
  for (int64_t e : shape_) {
    if (e < 0) throw InvalidInput("tensor shape " + FormatShape(shape_) + " has a negative extent");
  }
  numel_ = NumElements(shape_);
  if (numel_ > (int64_t{1} << 40))
    throw InvalidInput("tensor shape " + FormatShape(shape_) + " is too large");
  bytes_.resize(static_cast<size_t>(numel_) * static_cast<size_t>(DTypeSize(dtype_)));
}

LocalTensor::LocalTensor(Shape shape, DType dtype)
    : LocalTensor(std::move(shape), dtype, UninitializedTag{}) {
  std::fill(bytes_.begin(), bytes_.end(), std::byte{0});
}

LocalTensor LocalTensor::Uninitialized(Shape shape, DType dtype) {
  return LocalTensor(std::move(shape), dtype, UninitializedTag{});
}

double LocalTensor::GetDouble(int64_t flat_index) const {
  if (flat_index < 0 || flat_index >= numel_) {
    throw InvalidInput("element " + std::to_string(flat_index) + " is out of range for " +
                       std::to_string(numel_) + " elements");
  }
  return DispatchDType(dtype_, [&](auto tag) {
    using T = decltype(tag);
    T v;
    std::memcpy(&v, bytes_.data() + flat_index * static_cast<int64_t>(sizeof(T)), sizeof(T));
    return ToDouble(v);
  });
}

void LocalTensor::SetDouble(int64_t flat_index, double value) {
  if (flat_index < 0 || flat_index >= numel_) {
    throw InvalidInput("element " + std::to_string(flat_index) + " is out of range for " +
                       std::to_string(numel_) + " elements");
  }
  DispatchDType(dtype_, [&](auto tag) {
    using T = decltype(tag);
    T v = FromDouble<T>(value);
    std::memcpy(bytes_.data() + flat_index * static_cast<int64_t>(sizeof(T)), &v, sizeof(T));
  });
}

bool LocalTensor::BitwiseEqual(const LocalTensor& other) const {
  return shape_ == other.shape_ && dtype_ == other.dtype_ && bytes_ == other.bytes_;
}

LocalTensor SeededTensor(const Shape& shape, DType dtype, uint64_t seed) {
  LocalTensor out(shape, dtype);
  uint64_t base = SplitMix64(seed);
  DispatchDType(dtype, [&](auto tag) {
    using T = decltype(tag);
    T* data = reinterpret_cast<T*>(out.data());
    for (int64_t i = 0; i < out.numel(); ++i) {
      int64_t v = static_cast<int64_t>(SplitMix64(base ^ static_cast<uint64_t>(i)) % 17) - 8;
      data[i] = FromDouble<T>(static_cast<double>(v));
    }
  });
  return out;
}

Shape RowMajorStrides(const Shape& shape) {
  Shape strides(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) strides[d - 1] = strides[d] * shape[d];
  return strides;
}

uint64_t Checksum(const LocalTensor& tensor) {
  uint64_t h = 1469598103934665603ULL;
  const auto* p = reinterpret_cast<const unsigned char*>(tensor.data());
  for (size_t i = 0; i < tensor.nbytes(); ++i) {
    h ^= p[i];
    h *= 1099511628211ULL;
  }
  return h;
}

double PartitionTolerance(DType dtype) {
  switch (dtype) {
    case DType::kF64:
      return 1e-12;
    case DType::kF32:
      return 1e-5;
    case DType::kF16:
      return 4e-3;
    case DType::kBF16:
      return 3e-2;
    default:
      return 0.0;
  }
}

int64_t FirstDifference(const LocalTensor& got, const LocalTensor& want, double rel_tol) {
  if (got.shape() != want.shape() || got.dtype() != want.dtype()) return 0;
  if (rel_tol == 0.0) {
    if (got.BitwiseEqual(want)) return -1;
    for (int64_t i = 0; i < got.numel(); ++i) {
      if (got.GetDouble(i) != want.GetDouble(i)) return i;
    }
    return 0;  // same values, different bits (-0.0 or NaN payloads)
  }
  for (int64_t i = 0; i < got.numel(); ++i) {
    double a = got.GetDouble(i), b = want.GetDouble(i);
    if (std::fabs(a - b) > rel_tol * std::max(1.0, std::fabs(b))) return i;
  }
  return -1;
}

}  // namespace shardscope::engine
