// The `cuda` backend: N virtual ranks as threads of one process sharing one GPU. Each rank has
// its own stream and device buffers; a collective is a rendezvous of its group (as in the local
// backend) in which every rank first packs its send views on the device, then pulls straight
// from its peers' packed device buffers: device-to-device copies into its receive views for data
// movement, the group-order reduce kernel for reductions. NCCL cannot put several ranks of one
// communicator on one device, which is why this mode does not use it.

#include <condition_variable>
#include <cstdio>
#include <exception>
#include <map>
#include <mutex>
#include <thread>

#include "device_staging.hpp"
#include "shardscope/engine/comm/nccl_backend.hpp"
#include "shardscope/error.hpp"

namespace shardscope::engine {
namespace {

using detail::gpu::CudaCheck;
using detail::gpu::Staging;

// What a member shows its peers: its call and its packed send slots on the device.
struct Post {
  const CollectiveCall* call = nullptr;
  const Staging* staging = nullptr;
};

struct Slot {
  std::vector<Post> posted;
  size_t posted_count = 0;
  size_t pulled = 0;
  size_t left = 0;
  bool failed = false;
  ErrorCode code = ErrorCode::kTimeout;
  std::string error;
};

using SlotKey = std::pair<std::vector<int64_t>, int64_t>;

struct World {
  int64_t size = 1;
  int device = 0;
  std::chrono::milliseconds timeout{30000};
  std::mutex mutex;
  std::condition_variable changed;
  std::map<SlotKey, Slot> slots;
  std::vector<bool> exited;
  std::exception_ptr first_error;
};

std::string JoinRanks(const std::vector<int64_t>& ranks) {
  std::string out;
  for (size_t i = 0; i < ranks.size(); ++i) out += (i ? "," : "") + std::to_string(ranks[i]);
  return out;
}

std::string Seconds(std::chrono::milliseconds ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", static_cast<double>(ms.count()) / 1000.0);
  return buf;
}

bool MovesData(CollectiveKind kind) {
  return kind != CollectiveKind::kBarrier && kind != CollectiveKind::kShapeExchange;
}

class CudaLocalCommunicator final : public Communicator {
 public:
  CudaLocalCommunicator(World& world, int64_t rank, cudaStream_t stream)
      : Communicator(rank, world.size),
        world_(world),
        who_("cuda backend, rank " + std::to_string(rank)),
        staging_(who_, stream) {}
  std::string_view backend_name() const override { return "cuda"; }

 protected:
  void Execute(CollectiveCall& call) override {
    const size_t n = call.group.ranks.size();
    const size_t me = static_cast<size_t>(call.index);
    SlotKey key{call.group.ranks, sequence_[call.group.ranks]++};
    const std::string where =
        std::string(CollectiveKindName(call.kind)) + " on group " + call.group.ToString();

    // Stage before posting: peers read the packed send slots as soon as everyone posted.
    const bool moves = MovesData(call.kind);
    if (moves) {
      const bool reduce =
          call.kind == CollectiveKind::kReduceScatter || call.kind == CollectiveKind::kAllReduce;
      staging_.Prepare(call, reduce ? static_cast<int64_t>(n * sizeof(void*)) : 0, where);
      staging_.UploadAndPack(where);
      CudaCheck(cudaStreamSynchronize(staging_.stream()), "cudaStreamSynchronize", where, who_);
    }

    std::unique_lock<std::mutex> lock(world_.mutex);
    Slot& slot = world_.slots[key];
    if (slot.posted.empty()) slot.posted.assign(n, Post{});
    if (slot.failed) throw Error(slot.code, slot.error);
    slot.posted[me] = Post{&call, &staging_};
    ++slot.posted_count;
    world_.changed.notify_all();

    auto fail = [&](ErrorCode code, const std::string& message) {
      if (!slot.failed) {
        slot.failed = true;
        slot.code = code;
        slot.error = message;
      }
      slot.posted[me] = Post{};
      --slot.posted_count;
      world_.changed.notify_all();
      throw Error(slot.code, slot.error);
    };
    const auto deadline = std::chrono::steady_clock::now() + world_.timeout;
    while (slot.posted_count < n) {
      if (slot.failed) fail(slot.code, slot.error);
      std::vector<int64_t> missing, gone;
      for (size_t i = 0; i < n; ++i) {
        if (slot.posted[i].call) continue;
        int64_t r = call.group.ranks[i];
        missing.push_back(r);
        if (world_.exited[static_cast<size_t>(r)]) gone.push_back(r);
      }
      if (!gone.empty()) {
        fail(ErrorCode::kBackend, where + ": ranks " + JoinRanks(gone) + " finished without joining it");
      }
      if (world_.changed.wait_until(lock, deadline) == std::cv_status::timeout && slot.posted_count < n &&
          !slot.failed) {
        fail(ErrorCode::kTimeout, where + ": ranks " + JoinRanks(missing) + " never joined within " +
                                      Seconds(world_.timeout) + " s");
      }
    }
    lock.unlock();

    // Every post stays valid until every member has pulled (its stream finished reading).
    std::exception_ptr error;
    try {
      std::vector<const CollectiveCall*> calls;
      for (const Post& p : slot.posted) calls.push_back(p.call);
      ValidateGroupCalls(calls);
      Pull(call, slot.posted, where);
    } catch (...) {
      error = std::current_exception();
      // A failure after the reads were enqueued: let them finish before the peers (released by
      // the count below) reuse or free the packed buffers they read from.
      cudaStreamSynchronize(staging_.stream());
    }

    lock.lock();
    ++slot.pulled;
    world_.changed.notify_all();
    world_.changed.wait(lock, [&] { return slot.pulled == n; });
    if (++slot.left == n) world_.slots.erase(key);
    lock.unlock();
    if (error) std::rethrow_exception(error);
  }

 private:
  void Pull(CollectiveCall& call, const std::vector<Post>& posted, const std::string& where) {
    const size_t n = posted.size();
    const size_t me = static_cast<size_t>(call.index);
    std::vector<const std::byte*> sources(call.recv.size(), nullptr);
    switch (call.kind) {
      case CollectiveKind::kBarrier:
        return;
      case CollectiveKind::kShapeExchange:
        call.shapes_recv->resize(n);
        for (size_t i = 0; i < n; ++i) (*call.shapes_recv)[i] = posted[i].call->shapes_send[me];
        return;
      case CollectiveKind::kAllGather:
        for (size_t i = 0; i < n; ++i) sources[i] = posted[i].staging->send_slot(0);
        break;
      case CollectiveKind::kAllToAll:
        for (size_t i = 0; i < n; ++i) sources[i] = posted[i].staging->send_slot(me);
        break;
      case CollectiveKind::kBroadcast:
        sources[0] = posted[static_cast<size_t>(call.root)].staging->send_slot(0);
        break;
      case CollectiveKind::kReduceScatter:
      case CollectiveKind::kAllReduce: {
        // Every member's contribution in group order, combined by the kernel that mirrors the
        // local backend's Accumulator: bitwise identical results.
        const size_t from = call.kind == CollectiveKind::kAllReduce ? 0 : me;
        std::vector<const void*> inputs(n);
        for (size_t i = 0; i < n; ++i) inputs[i] = posted[i].staging->send_slot(from);
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

  World& world_;
  std::string who_;
  Staging staging_;
  std::map<std::vector<int64_t>, int64_t> sequence_;
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
  World world;
  world.size = world_size;
  world.device = options.device;
  world.timeout = options.timeout;
  world.exited.assign(static_cast<size_t>(world_size), false);

  auto finish = [&](int64_t rank, std::exception_ptr error) {
    std::lock_guard<std::mutex> lock(world.mutex);
    if (error && !world.first_error) world.first_error = error;
    world.exited[static_cast<size_t>(rank)] = true;
    world.changed.notify_all();
  };

  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(world_size));
  for (int64_t r = 0; r < world_size; ++r) {
    try {
      threads.emplace_back([&, r] {
        std::exception_ptr error;
        cudaStream_t stream = nullptr;
        try {
          const std::string who = "cuda backend, rank " + std::to_string(r);
          // The current device is per thread.
          CudaCheck(cudaSetDevice(world.device), "cudaSetDevice", "rank start", who);
          CudaCheck(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags",
                    "rank start", who);
          CudaLocalCommunicator comm(world, r, stream);
          fn(comm, r);
        } catch (...) {
          error = std::current_exception();
        }
        if (stream != nullptr) cudaStreamDestroy(stream);
        finish(r, error);
      });
    } catch (const std::exception& e) {
      for (int64_t k = r; k < world_size; ++k) {
        finish(k,
               std::make_exception_ptr(Error(ErrorCode::kBackend, "cuda backend: cannot start rank " +
                                                                      std::to_string(k) + ": " + e.what())));
      }
      break;
    }
  }
  for (std::thread& t : threads) t.join();
  if (world.first_error) std::rethrow_exception(world.first_error);
}

}  // namespace shardscope::engine
