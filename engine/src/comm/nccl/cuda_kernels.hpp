#pragma once
// Device kernels of the GPU backends, behind a plain C++ interface so that only cuda_kernels.cu
// is compiled by nvcc. Element types and reduce ops are passed as the integer values of the
// engine's DType and ReduceOp (device_staging.cpp checks that the numbering matches).

#include <cuda_runtime_api.h>

#include <cstdint>

namespace shardscope::engine::detail::gpu {

/// Element types, numbered as engine::DType.
enum class KernelType : int { kF32 = 0, kF64 = 1, kF16 = 2, kBF16 = 3, kI32 = 4, kI64 = 5 };
/// Reduce ops, numbered as engine::ReduceOp.
enum class KernelOp : int { kSum = 0, kAvg = 1, kMin = 2, kMax = 3, kProduct = 4 };

/// One contiguous byte range to copy between two device addresses (same device).
struct CopyRun {
  uint64_t src = 0;
  uint64_t dst = 0;
  uint64_t bytes = 0;
};
/// Runs longer than this are split by the caller so that one thread block copies one run
/// (keeps the kernel free of per-run prefix sums and load-balanced).
constexpr uint64_t kMaxRunBytes = uint64_t{32} << 10;

/// Copies every run of the device array `runs` (`count` entries); destinations must not overlap.
/// The pack (boxes -> contiguous) and unpack (contiguous -> boxes) kernel of both backends.
cudaError_t LaunchCopyRuns(const CopyRun* runs, int64_t count, cudaStream_t stream);

/// out[k] = inputs[0][k] op inputs[1][k] op ... in input order, accumulated as the local
/// backend's detail::Accumulator does (f16/bf16 in f32, rounded once to nearest-even; integers
/// wrap), then divided by `divisor` when it is above 1 (integers truncate toward zero).
/// `inputs` is a device array of `n` device pointers, each to `count` contiguous elements.
cudaError_t LaunchReduce(KernelType type, KernelOp op, const void* const* inputs, int64_t n, void* out,
                         int64_t count, int64_t divisor, cudaStream_t stream);

/// In place data[k] = data[k] / divisor (f16/bf16 through f32, integers truncate toward zero):
/// the avg/divisor scaling after a native NCCL reduction.
cudaError_t LaunchScale(KernelType type, void* data, int64_t count, int64_t divisor, cudaStream_t stream);

}  // namespace shardscope::engine::detail::gpu
