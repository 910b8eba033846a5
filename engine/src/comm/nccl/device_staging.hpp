#pragma once
// Device staging shared by the `cuda` and `nccl` backends: one collective's host views are
// mirrored on the device (only the byte span each tensor's views touch), packed by a kernel into
// one contiguous buffer per direction (slot after slot, in element order), and after the data
// moved, unpacked by the same kernel into the mirrors of the receive tensors and downloaded.
// Also: CUDA error wrapping (call site, collective, rank) and CUDA-event timing.

#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "cuda_kernels.hpp"
#include "shardscope/engine/comm/communicator.hpp"

namespace shardscope::engine::detail::gpu {

/// "cudaErrorNoDevice (no CUDA-capable device is detected)".
std::string CudaErrorText(cudaError_t rc);
/// Throws Error(kBackend) "<who>: <call> in <where> failed: <CudaErrorText>" unless rc is success.
void CudaCheck(cudaError_t rc, const char* call, const std::string& where, const std::string& who);

KernelType KernelTypeOf(DType dtype);
KernelOp KernelOpOf(ReduceOp op);

/// A grow-only device allocation on the current device, freed on destruction. Growing frees the
/// old block, so callers re-derive every pointer after Reserve (the stream must be idle).
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  /// At least `bytes` (>= 1) bytes; throws Error(kBackend) when cudaMalloc fails.
  std::byte* Reserve(int64_t bytes, const std::string& where, const std::string& who);

 private:
  std::byte* data_ = nullptr;
  int64_t capacity_ = 0;
};

/// The device side of one rank's collectives: buffers, run tables, events. One per rank (not
/// thread-safe); every method runs on `stream`.
class Staging {
 public:
  /// `who` prefixes errors ("cuda backend, rank 3").
  Staging(std::string who, cudaStream_t stream);
  ~Staging();
  Staging(const Staging&) = delete;
  Staging& operator=(const Staging&) = delete;

  /// Lays out `call`'s device buffers: mirrors, packed send slots (one per send view), packed
  /// recv slots (one per recv view) and `scratch_bytes` of scratch. Invalidates earlier pointers.
  void Prepare(const CollectiveCall& call, int64_t scratch_bytes, const std::string& where);
  /// Records the start event, uploads the send views' spans (and receive spans that the views do
  /// not cover completely, to keep their other elements) and packs the send views.
  void UploadAndPack(const std::string& where);
  /// Copies recv slot i's elements from the contiguous device data at sources[i] (one per recv
  /// view; null when the slot is empty) into the receive mirrors, then records the end event.
  void Unpack(const std::vector<const std::byte*>& sources, const std::string& where);
  /// Waits for the end event (calling `poll` between queries; it may throw), then downloads the
  /// receive spans into the host tensors. Returns the device time between the two events mapped
  /// onto steady_clock: end = when the host saw the end event complete, start = end - elapsed.
  std::pair<int64_t, int64_t> Finish(const std::string& where, const std::function<void()>& poll = {});

  std::byte* send_slot(size_t j) const { return slot_address(send_offsets_, j, send_base_); }
  std::byte* recv_slot(size_t i) const { return slot_address(recv_offsets_, i, recv_base_); }
  int64_t send_count(size_t j) const { return send_counts_[j]; }
  int64_t recv_count(size_t i) const { return recv_counts_[i]; }
  std::byte* scratch() const { return scratch_; }
  cudaStream_t stream() const { return stream_; }
  const std::string& who() const { return who_; }

 private:
  struct Mirror {
    std::byte* host = nullptr;  // the host tensor's base address
    int64_t lo = 0, hi = 0;     // byte span of the tensor that the views touch
    bool send = false;
    bool upload = false;  // recv mirrors whose views do not cover the span
    std::byte* device = nullptr;
  };
  // A run whose source is a mirror or a slot of a contiguous source (resolved at launch).
  struct PendingRun {
    size_t src = 0;  // pack: mirror index; unpack: recv slot
    int64_t src_off = 0;
    size_t dst = 0;  // pack: send slot; unpack: mirror index
    int64_t dst_off = 0;
    int64_t bytes = 0;
  };

  std::byte* slot_address(const std::vector<int64_t>& offsets, size_t k, std::byte* base) const {
    return base + offsets[k] * element_size_;
  }
  size_t MirrorOf(std::byte* host, bool send);
  void LaunchRuns(const std::vector<CopyRun>& runs, CopyRun* table, const std::string& where);

  std::string who_;
  cudaStream_t stream_;
  cudaEvent_t start_ = nullptr, end_ = nullptr;
  DeviceBuffer buffer_;
  int64_t element_size_ = 1;
  std::vector<Mirror> mirrors_;
  std::vector<int64_t> send_offsets_, send_counts_, recv_offsets_, recv_counts_;
  std::vector<PendingRun> pack_, unpack_;
  std::byte* send_base_ = nullptr;
  std::byte* recv_base_ = nullptr;
  std::byte* scratch_ = nullptr;
  CopyRun* pack_table_ = nullptr;
  CopyRun* unpack_table_ = nullptr;
  std::vector<CopyRun> host_runs_;
};

}  // namespace shardscope::engine::detail::gpu
