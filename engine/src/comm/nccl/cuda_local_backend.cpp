// The `cuda` backend: N virtual ranks as threads of one process sharing one GPU. Each rank has
// its own stream and device buffers; a collective is a rendezvous of its group (as in the local
// backend) in which every rank first packs its send views on the device, then pulls straight
// from its peers' packed device buffers: device-to-device copies into its receive views for data
// movement, the group-order reduce kernel for reductions. NCCL cannot put several ranks of one
// communicator on one device, which is why this mode does not use it.

#include <exception>
#include <string>

#include "comm/rendezvous.hpp"
#include "device_staging.hpp"
#include "shardscope/engine/comm/nccl_backend.hpp"
#include "shardscope/error.hpp"

namespace shardscope::engine {
namespace {

using detail::gpu::CudaCheck;
using detail::gpu::Staging;

bool MovesData(CollectiveKind kind) {
  return kind != CollectiveKind::kBarrier && kind != CollectiveKind::kShapeExchange;
}

class CudaLocalCommunicator final : public Communicator {
 public:
  CudaLocalCommunicator(detail::RendezvousWorld& world, int64_t rank, cudaStream_t stream)
      : Communicator(rank, world.size()),
        rendezvous_(world),
        who_("cuda backend, rank " + std::to_string(rank)),
        staging_(who_, stream) {}
  std::string_view backend_name() const override { return "cuda"; }

 protected:
  void Execute(CollectiveCall& call) override {
    const size_t n = call.group.ranks.size();
    const std::string where =
        std::string(CollectiveKindName(call.kind)) + " on group " + call.group.ToString();

    // Stage before posting: peers read the packed send slots as soon as everyone posted.
    if (MovesData(call.kind)) {
      const bool reduce =
          call.kind == CollectiveKind::kReduceScatter || call.kind == CollectiveKind::kAllReduce;
      staging_.Prepare(call, reduce ? static_cast<int64_t>(n * sizeof(void*)) : 0, where);
      staging_.UploadAndPack(where);
      CudaCheck(cudaStreamSynchronize(staging_.stream()), "cudaStreamSynchronize", where, who_);
    }
    const detail::Rendezvous::Round round = rendezvous_.Post(call, &staging_);

    // Every post stays valid until every member has pulled (its stream finished reading).
    std::exception_ptr error;
    try {
      ValidateGroupCalls(round.slot->posted);
      Pull(call, *round.slot, where);
    } catch (...) {
      error = std::current_exception();
      // A failure after the reads were enqueued: let them finish before the peers (released by
      // Finish) reuse or free the packed buffers they read from.
      cudaStreamSynchronize(staging_.stream());
    }
    rendezvous_.Finish(round);
    if (error) std::rethrow_exception(error);
  }

 private:
  // The posted staging of member i (what the rendezvous publishes beside its post).
  static const Staging& StagingOf(const detail::RendezvousSlot& slot, size_t i) {
    return *static_cast<const Staging*>(slot.payloads[i]);
  }

  void Pull(CollectiveCall& call, const detail::RendezvousSlot& slot, const std::string& where) {
    const auto& posted = slot.posted;
    const size_t n = posted.size();
    const size_t me = static_cast<size_t>(call.index);
    std::vector<const std::byte*> sources(call.recv.size(), nullptr);
    switch (call.kind) {
      case CollectiveKind::kBarrier:
        return;
      case CollectiveKind::kShapeExchange:
        detail::ReceiveShapes(slot, call);
        return;
      case CollectiveKind::kAllGather:
        for (size_t i = 0; i < n; ++i) sources[i] = StagingOf(slot, i).send_slot(0);
        break;
      case CollectiveKind::kAllToAll:
        for (size_t i = 0; i < n; ++i) sources[i] = StagingOf(slot, i).send_slot(me);
        break;
      case CollectiveKind::kBroadcast:
        sources[0] = StagingOf(slot, static_cast<size_t>(call.root)).send_slot(0);
        break;
      case CollectiveKind::kReduceScatter:
      case CollectiveKind::kAllReduce: {
        // Every member's contribution in group order, combined by the kernel that mirrors the
        // local backend's Accumulator: bitwise identical results.
        const size_t from = call.kind == CollectiveKind::kAllReduce ? 0 : me;
        std::vector<const void*> inputs(n);
        for (size_t i = 0; i < n; ++i) inputs[i] = StagingOf(slot, i).send_slot(from);
        const int64_t divisor = call.reduction.TotalDivisor(static_cast<int64_t>(n));
        auto* table = reinterpret_cast<const void**>(staging_.scratch());
        CudaCheck(cudaMemcpyAsync(table, inputs.data(), n * sizeof(void*), cudaMemcpyHostToDevice,
                                  staging_.stream()),
                  "cudaMemcpyAsync (reduce inputs)", where, who_);
        CudaCheck(detail::gpu::LaunchReduce(detail::gpu::KernelTypeOf(call.dtype),
                                            detail::gpu::KernelOpOf(call.reduction.op), table,
                                            static_cast<int64_t>(n), staging_.recv_slot(0),
                                            staging_.recv_count(0), divisor, staging_.stream()),
                  "reduce kernel launch", where, who_);
        sources[0] = staging_.recv_slot(0);
        break;
      }
    }
    staging_.Unpack(sources, where);
    auto [start_ns, end_ns] = staging_.Finish(where);
    call.timed_start_ns = start_ns;
    call.timed_end_ns = end_ns;
  }

  detail::Rendezvous rendezvous_;
  std::string who_;
  Staging staging_;
};

}  // namespace

void CudaLocalWorld::Run(int64_t world_size, const RankFn& fn, const CudaWorldOptions& options) {
  if (world_size < 1 || world_size > 1024) {
    throw InvalidInput("cuda backend: world size " + std::to_string(world_size) + " is outside [1, 1024]");
  }
  const int devices = RequireGpuBackend("cuda");
  if (options.device < 0 || options.device >= devices) {
    throw InvalidInput("cuda backend: device " + std::to_string(options.device) + " is outside the " +
                       std::to_string(devices) + " CUDA devices of this machine");
  }
  const int device = options.device;
  detail::RendezvousWorld world(world_size, options.timeout, "cuda backend");
  world.Run([&](int64_t r) {
    cudaStream_t stream = nullptr;
    try {
      const std::string who = "cuda backend, rank " + std::to_string(r);
      // The current device is per thread.
      CudaCheck(cudaSetDevice(device), "cudaSetDevice", "rank start", who);
      CudaCheck(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags",
                "rank start", who);
      CudaLocalCommunicator comm(world, r, stream);
      fn(comm, r);
    } catch (...) {
      if (stream != nullptr) cudaStreamDestroy(stream);
      throw;
    }
    if (stream != nullptr) cudaStreamDestroy(stream);
  });
}

}  // namespace shardscope::engine
