// Pack/unpack, reduce and scale kernels of the GPU backends. Reductions mirror the local
// backend's detail::Accumulator element for element (same order, same accumulator type, same
// rounding), so the `cuda` backend's results are bitwise identical to the local backend's; the
// f16/bf16 conversions and the reduction steps are the host's own (engine/src/core/scalar_math.hpp,
// compiled here for the device), not CUDA's intrinsics, so NaN payloads and rounding agree too.

#include <cstdint>
#include <type_traits>

#include "core/scalar_math.hpp"
#include "cuda_kernels.hpp"

namespace shardscope::engine::detail::gpu {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 65535;

struct F16 {
  uint16_t bits;
};
struct BF16 {
  uint16_t bits;
};

// Accumulator type and conversions per element type (the host's ArithOf).
template <class T>
struct Arith {
  using type = T;
  __device__ static T Load(T v) { return v; }
  __device__ static T Store(T v) { return v; }
};
template <>
struct Arith<F16> {
  using type = float;
  __device__ static float Load(F16 v) { return scalar::HalfBitsToFloat(v.bits); }
  __device__ static F16 Store(float v) { return F16{scalar::FloatToHalfBits(v)}; }
};
template <>
struct Arith<BF16> {
  using type = float;
  __device__ static float Load(BF16 v) { return scalar::BFloat16BitsToFloat(v.bits); }
  __device__ static BF16 Store(float v) { return BF16{scalar::FloatToBFloat16Bits(v)}; }
};

// One reduction step, with the host's arithmetic (scalar_math.hpp).
template <class A>
__device__ A Combine(KernelOp op, A acc, A v) {
  switch (op) {
    case KernelOp::kSum:
    case KernelOp::kAvg:
      return scalar::Plus<A>(acc, v);
    case KernelOp::kProduct:
      return scalar::Times<A>(acc, v);
    case KernelOp::kMin:
      return scalar::Min<A>(acc, v);
    case KernelOp::kMax:
      break;
  }
  return scalar::Max<A>(acc, v);
}

template <class V>
__device__ void CopyVectors(const char* src, char* dst, uint64_t bytes) {
  const V* s = reinterpret_cast<const V*>(src);
  V* d = reinterpret_cast<V*>(dst);
  const uint64_t n = bytes / sizeof(V);
  for (uint64_t k = threadIdx.x; k < n; k += blockDim.x) d[k] = s[k];
}

__global__ void CopyRunsKernel(const CopyRun* runs, int64_t count) {
  for (int64_t r = blockIdx.x; r < count; r += gridDim.x) {
    const CopyRun run = runs[r];
    const char* src = reinterpret_cast<const char*>(run.src);
    char* dst = reinterpret_cast<char*>(run.dst);
    // The widest access that both addresses and the length allow.
    const uint64_t align = run.src | run.dst | run.bytes;
    if ((align & 15) == 0) {
      CopyVectors<uint4>(src, dst, run.bytes);
    } else if ((align & 7) == 0) {
      CopyVectors<uint2>(src, dst, run.bytes);
    } else if ((align & 3) == 0) {
      CopyVectors<uint32_t>(src, dst, run.bytes);
    } else if ((align & 1) == 0) {
      CopyVectors<uint16_t>(src, dst, run.bytes);
    } else {
      CopyVectors<uint8_t>(src, dst, run.bytes);
    }
  }
}

template <class T>
__global__ void ReduceKernel(KernelOp op, const void* const* inputs, int64_t n, T* out, int64_t count,
                             int64_t divisor) {
  using A = typename Arith<T>::type;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t k = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; k < count; k += stride) {
    A acc = Arith<T>::Load(static_cast<const T*>(inputs[0])[k]);
    for (int64_t i = 1; i < n; ++i)
      acc = Combine<A>(op, acc, Arith<T>::Load(static_cast<const T*>(inputs[i])[k]));
    if (divisor > 1) acc = scalar::Divide<A>(acc, divisor);
    out[k] = Arith<T>::Store(acc);
  }
}

template <class T>
__global__ void ScaleKernel(T* data, int64_t count, int64_t divisor) {
  using A = typename Arith<T>::type;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t k = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; k < count; k += stride) {
    data[k] = Arith<T>::Store(scalar::Divide<A>(Arith<T>::Load(data[k]), divisor));
  }
}

unsigned Blocks(int64_t work, int64_t per_block) {
  int64_t blocks = (work + per_block - 1) / per_block;
  if (blocks < 1) blocks = 1;
  return static_cast<unsigned>(blocks < kMaxBlocks ? blocks : kMaxBlocks);
}

// KernelType numbers its element types as DType does (scalar::DispatchIndex).
template <class Fn>
cudaError_t Dispatch(KernelType type, Fn&& fn) {
  return scalar::DispatchIndex<float, double, F16, BF16, int32_t, int64_t>(
      static_cast<int>(type), fn, [] { return cudaErrorInvalidValue; });
}

}  // namespace

cudaError_t LaunchCopyRuns(const CopyRun* runs, int64_t count, cudaStream_t stream) {
  if (count <= 0) return cudaSuccess;
  CopyRunsKernel<<<Blocks(count, 1), kThreads, 0, stream>>>(runs, count);
  return cudaGetLastError();
}

cudaError_t LaunchReduce(KernelType type, KernelOp op, const void* const* inputs, int64_t n, void* out,
                         int64_t count, int64_t divisor, cudaStream_t stream) {
  if (count <= 0) return cudaSuccess;
  if (n < 1) return cudaErrorInvalidValue;
  return Dispatch(type, [&](auto tag) {
    using T = decltype(tag);
    ReduceKernel<T><<<Blocks(count, kThreads), kThreads, 0, stream>>>(op, inputs, n, static_cast<T*>(out),
                                                                      count, divisor);
    return cudaGetLastError();
  });
}

cudaError_t LaunchScale(KernelType type, void* data, int64_t count, int64_t divisor, cudaStream_t stream) {
  if (count <= 0 || divisor <= 1) return cudaSuccess;
  return Dispatch(type, [&](auto tag) {
    using T = decltype(tag);
    ScaleKernel<T><<<Blocks(count, kThreads), kThreads, 0, stream>>>(static_cast<T*>(data), count, divisor);
    return cudaGetLastError();
  });
}

}  // namespace shardscope::engine::detail::gpu
