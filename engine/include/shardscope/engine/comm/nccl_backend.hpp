#pragma once
// The GPU backends. Hermetic: cuda_runtime.h and nccl.h appear only in engine/src/comm/nccl/.
// Tensors stay host LocalTensors; every collective stages the views it touches on the device
// (upload, a pack kernel gathering the boxes into a contiguous buffer), moves the data, and
// unpacks on the device before downloading the written views.
//   `cuda`: N virtual ranks as threads of one process sharing one GPU; data moves as
//           device-to-device copies between the ranks' buffers and reductions run in a kernel
//           over every member's contribution in group order, so results are bitwise identical
//           to the local backend. Every GPU code path runs on a one-GPU machine.
//   `nccl`: one rank per GPU under mpirun (device local_rank % device count), bootstrapped over
//           the MPI backend; ncclAllGather / ncclReduceScatter / ncclAllReduce / ncclBroadcast
//           and grouped ncclSend/ncclRecv. NCCL reduces in its own order (and f16/bf16 in their
//           own precision), so float reductions may differ in the last bits from the local
//           backend unless NcclOptions::exact_reductions is set (docs/gpu.md).
// Builds without CUDA (or NCCL) keep this API; using it throws Error(kInvalidInput) saying so.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "shardscope/engine/comm/communicator.hpp"

namespace shardscope::engine {

class MpiWorld;

/// True when this build contains the CUDA kernels and the `cuda` backend.
bool CudaBackendAvailable();
/// True when this build contains the `nccl` backend.
bool NcclBackendAvailable();

/// Number of CUDA devices, or 0 with `why` set ("built without CUDA/NCCL (...)" or "no CUDA
/// device: cudaGetDeviceCount returned cudaErrorNoDevice"). Never throws.
int CudaDeviceCount(std::string* why = nullptr);
/// Throws Error(kInvalidInput) with CudaDeviceCount's reason when `backend` ("cuda" or "nccl")
/// cannot run in this build or on this machine; returns the device count otherwise.
int RequireGpuBackend(std::string_view backend);

struct CudaWorldOptions {
  /// A collective that not every member joins within this time fails on every waiting member
  /// with Error(kTimeout) naming the missing ranks (as in the local backend).
  std::chrono::milliseconds timeout{30000};
  /// The device every virtual rank uses.
  int device = 0;
};

/// N virtual ranks as threads sharing one GPU (backend name "cuda").
class CudaLocalWorld {
 public:
  using RankFn = std::function<void(Communicator& comm, int64_t rank)>;
  /// Runs `fn` on `world_size` threads, each with its own stream and device buffers, and joins
  /// them; rethrows the first error (LocalWorld::Run's contract). Throws Error(kInvalidInput)
  /// when the build or the machine has no GPU, Error(kBackend) for CUDA failures (naming the
  /// CUDA call, the collective and the rank).
  static void Run(int64_t world_size, const RankFn& fn, const CudaWorldOptions& options = {});
};

struct NcclOptions {
  /// Watchdog for every collective: the descriptor exchange (over MPI) and the wait for the GPU
  /// work; on expiry the NCCL communicator is aborted and the call throws Error(kTimeout).
  std::chrono::milliseconds timeout{30000};
  /// Reductions exchange every member's contribution (grouped ncclSend/ncclRecv) and combine
  /// them in group order with the `cuda` backend's kernel: bitwise identical to the local
  /// backend, at n times the traffic of ncclReduceScatter/ncclAllReduce. Default from the
  /// environment: SHARDSCOPE_NCCL_REDUCE=exact sets it, native (or unset) leaves it off.
  bool exact_reductions = false;
  /// NcclOptions with exact_reductions read from SHARDSCOPE_NCCL_REDUCE (engine/core/knobs.hpp);
  /// throws Error(kInvalidInput) naming the knob for a value other than native or exact.
  static NcclOptions FromEnv();
};

/// The NCCL backend of one MPI process (backend name "nccl"): selects device
/// local_rank % device_count, creates the world communicator (rank 0's ncclGetUniqueId
/// broadcast over MPI, ncclCommInitRank) and, per group on first use, a communicator over that
/// group's members only. Collective over the MPI world on construction. Not thread-safe.
class NcclWorld {
 public:
  /// `mpi` must outlive this object. Throws Error(kInvalidInput) when the build or the machine
  /// has no GPU/NCCL, Error(kBackend) for CUDA/NCCL failures.
  NcclWorld(MpiWorld& mpi, const NcclOptions& options = NcclOptions::FromEnv());
  ~NcclWorld();
  NcclWorld(const NcclWorld&) = delete;
  NcclWorld& operator=(const NcclWorld&) = delete;

  int64_t rank() const;
  int64_t size() const;
  /// The CUDA device this process uses.
  int device() const;
  Communicator& comm();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace shardscope::engine
