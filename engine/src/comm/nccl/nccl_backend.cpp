// The `nccl` backend: one rank per GPU under mpirun, bootstrapped over the MPI backend.
// Per collective: the members all-gather small call descriptors over MPI (under the MPI
// backend's watchdog) and run ValidateGroupCalls on the same data, so a mismatch throws the
// local backend's message on every member before any GPU work; then the views are staged and
// packed on the device, moved with NCCL on the group's communicator, unpacked and downloaded.
//
// Group communicators are created with ncclCommInitRank over the group's members only (the
// group's first member makes the unique id and broadcasts it over MPI). ncclCommSplit would be
// the shorter call, but like MPI_Comm_split it is collective over every rank of the parent
// communicator, and a group that only some ranks use (a sub-mesh, a verification gather) would
// then hang: the MPI backend avoids MPI_Comm_split for the same reason.

#include <nccl.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>

#include "comm/call_descriptor.hpp"
#include "device_staging.hpp"
#include "shardscope/engine/comm/mpi_backend.hpp"
#include "shardscope/engine/comm/nccl_backend.hpp"
#include "shardscope/error.hpp"
#include "shardscope/trace/writer.hpp"

namespace shardscope::engine {
namespace {

using detail::DecodeAndValidate;
using detail::EncodeDescriptor;
using detail::PairCount;
using detail::gpu::CudaCheck;
using detail::gpu::Staging;

void NcclCheck(ncclResult_t rc, const char* call, const std::string& where, const std::string& who,
               ncclComm_t comm = nullptr) {
  if (rc == ncclSuccess) return;
  std::string detail = ncclGetErrorString(rc);
  if (comm != nullptr) {
    const char* last = ncclGetLastError(comm);
    if (last != nullptr && *last != '\0') detail += ": " + std::string(last);
  }
  throw Error(ErrorCode::kBackend, who + ": " + call + " in " + where + " failed: " + detail +
                                       " (NCCL error " + std::to_string(static_cast<int>(rc)) + ")");
}

ncclDataType_t NcclType(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return ncclFloat32;
    case DType::kF64:
      return ncclFloat64;
    case DType::kF16:
      return ncclFloat16;
    case DType::kBF16:
      return ncclBfloat16;
    case DType::kI32:
      return ncclInt32;
    case DType::kI64:
      return ncclInt64;
  }
  return ncclFloat32;
}

// avg is a sum here: the scale kernel then divides by n * divisor, as the local backend does
// (ncclAvg would divide each contribution first for floats and cannot truncate integers alike).
ncclRedOp_t NcclOp(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg:
      return ncclSum;
    case ReduceOp::kProduct:
      return ncclProd;
    case ReduceOp::kMin:
      return ncclMin;
    case ReduceOp::kMax:
      return ncclMax;
  }
  return ncclSum;
}

// The node-local rank from the launcher's environment (Open MPI, MPICH/Hydra, MVAPICH, SLURM).
int64_t LocalRank(int64_t world_rank) {
  for (const char* var :
       {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "MV2_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID"}) {
    const char* v = std::getenv(var);
    if (v != nullptr && *v != '\0') return std::atoll(v);
  }
  return world_rank;
}

// Shares `id` from group member 0 with the others over MPI (collective over the group).
void ShareUniqueId(Communicator& mpi, const Group& group, bool root, ncclUniqueId& id) {
  static_assert(sizeof(ncclUniqueId) % sizeof(int64_t) == 0, "ncclUniqueId is a whole number of words");
  LocalTensor buffer(Shape{static_cast<int64_t>(sizeof(ncclUniqueId) / sizeof(int64_t))}, DType::kI64);
  if (root) std::memcpy(buffer.data(), &id, sizeof id);
  LocalTensor received(buffer.shape(), DType::kI64);
  mpi.Broadcast(group, 0, ViewOf(buffer), MutableViewOf(received));
  std::memcpy(&id, received.data(), sizeof id);
}

class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(MpiWorld& mpi, ncclComm_t world_comm, cudaStream_t stream, const NcclOptions& options)
      : Communicator(mpi.rank(), mpi.size()),
        mpi_(mpi),
        options_(options),
        who_("nccl backend, rank " + std::to_string(mpi.rank())),
        world_comm_(world_comm),
        staging_(who_, stream) {}

  ~NcclCommunicator() override {
    // Creation order is the same on every member of a group (collective order), so destroying
    // in that order never crosses another member's teardown.
    for (auto& [ranks, comm] : created_) {
      if (comm == nullptr) continue;
      if (broken_) {
        ncclCommAbort(comm);
      } else {
        ncclCommDestroy(comm);
      }
    }
  }

  std::string_view backend_name() const override { return "nccl"; }
  bool broken() const { return broken_; }

 protected:
  void Execute(CollectiveCall& call) override {
    try {
      Run(call);
    } catch (const Error& e) {
      if (e.code() != ErrorCode::kInvalidInput) broken_ = true;
      throw;
    }
  }

 private:
  ncclComm_t GroupComm(const Group& group, const std::string& where) {
    bool world = static_cast<int64_t>(group.ranks.size()) == world_size();
    for (size_t i = 0; world && i < group.ranks.size(); ++i)
      world = group.ranks[i] == static_cast<int64_t>(i);
    if (world) {
      if (world_comm_ == nullptr)
        throw Error(ErrorCode::kBackend,
                    who_ + ": " + where + ": the world communicator was aborted after an earlier failure");
      return world_comm_;
    }
    auto it = comms_.find(group.ranks);
    if (it != comms_.end()) return it->second;
    const bool root = group.ranks[0] == rank();
    ncclUniqueId id;
    std::memset(&id, 0, sizeof id);
    if (root) NcclCheck(ncclGetUniqueId(&id), "ncclGetUniqueId", where, who_);
    ShareUniqueId(mpi_.comm(), group, root, id);
    const int64_t index = std::find(group.ranks.begin(), group.ranks.end(), rank()) - group.ranks.begin();
    ncclComm_t comm = nullptr;
    NcclCheck(ncclCommInitRank(&comm, static_cast<int>(group.ranks.size()), id, static_cast<int>(index)),
              "ncclCommInitRank (group communicator)", where, who_);
    comms_.emplace(group.ranks, comm);
    created_.push_back({group.ranks, comm});
    return comm;
  }

  // One collective's data movement: the group communicator, the staging stream and the element
  // counts each pair of members moves (from the validated descriptors).
  struct Transfer {
    Transfer(CollectiveCall& c, const std::vector<CollectiveCall>& all, const std::string& w)
        : call(c), calls(all), where(w) {}
    CollectiveCall& call;
    const std::vector<CollectiveCall>& calls;
    const std::string& where;
    size_t n = 0, me = 0;
    ncclComm_t comm = nullptr;
    cudaStream_t stream = nullptr;
    int64_t es = 0;
    std::vector<int64_t> out_count, in_count;
    size_t Bytes(int64_t count) const { return static_cast<size_t>(count * es); }
  };

  static bool EqualCounts(const std::vector<int64_t>& counts) {
    return std::all_of(counts.begin(), counts.end(), [&](int64_t c) { return c == counts[0]; });
  }

  void Run(CollectiveCall& call) {
    const size_t n = call.group.ranks.size();
    const std::string where =
        std::string(CollectiveKindName(call.kind)) + " on group " + call.group.ToString();
    const std::vector<CollectiveCall> calls = ExchangeDescriptors(call);
    if (call.kind == CollectiveKind::kBarrier) return;  // the exchange synchronized the group
    if (call.kind == CollectiveKind::kShapeExchange) {
      *call.shapes_recv = mpi_.comm().ExchangeShapes(call.group, call.shapes_send);
      return;
    }

    Transfer t(call, calls, where);
    t.n = n;
    t.me = static_cast<size_t>(call.index);
    t.comm = GroupComm(call.group, where);
    t.es = DTypeSize(call.dtype);
    const bool reduce =
        call.kind == CollectiveKind::kReduceScatter || call.kind == CollectiveKind::kAllReduce;
    const bool exact = reduce && options_.exact_reductions && n > 1;
    const int64_t result = reduce ? call.recv[0].Count() : 0;
    const int64_t contributions = exact ? static_cast<int64_t>(n) * result * t.es : 0;
    const int64_t scratch = exact ? contributions + static_cast<int64_t>(n * sizeof(void*)) + 256 : 0;
    staging_.Prepare(call, scratch, where);
    staging_.UploadAndPack(where);
    t.stream = staging_.stream();
    t.out_count.resize(n);
    t.in_count.resize(n);
    for (size_t i = 0; i < n; ++i) {
      t.out_count[i] = PairCount(calls, t.me, i);
      t.in_count[i] = PairCount(calls, i, t.me);
    }

    std::vector<const std::byte*> sources(call.recv.size(), nullptr);
    for (size_t i = 0; i < call.recv.size(); ++i) sources[i] = staging_.recv_slot(i);
    switch (call.kind) {
      case CollectiveKind::kAllGather:
        AllGather(t);
        break;
      case CollectiveKind::kAllToAll:
        Exchange(
            t, [&](size_t j) { return staging_.send_slot(j); },
            [&](size_t i) { return staging_.recv_slot(i); });
        break;
      case CollectiveKind::kBroadcast:
        Broadcast(t);
        break;
      case CollectiveKind::kReduceScatter:
      case CollectiveKind::kAllReduce:
        if (exact) {
          ExactReduce(t, result, contributions);
        } else {
          NativeReduce(t, result);
        }
        break;
      default:
        break;
    }
    staging_.Unpack(sources, where);
    const int64_t deadline = trace::NowNs() + options_.timeout.count() * 1000000;
    auto [start_ns, end_ns] = staging_.Finish(where, [&] { Poll(t.comm, where, deadline); });
    call.timed_start_ns = start_ns;
    call.timed_end_ns = end_ns;
  }

  // Phase 1: every member's descriptor over MPI, validated identically on every member.
  std::vector<CollectiveCall> ExchangeDescriptors(const CollectiveCall& call) {
    const size_t n = call.group.ranks.size();
    std::vector<int64_t> mine = EncodeDescriptor(call, n);
    const int64_t words = static_cast<int64_t>(mine.size());
    LocalTensor own(Shape{words}, DType::kI64);
    std::memcpy(own.data(), mine.data(), mine.size() * sizeof(int64_t));
    LocalTensor all(Shape{static_cast<int64_t>(n), words}, DType::kI64);
    std::vector<RecvView> rows;
    for (size_t i = 0; i < n; ++i) {
      Box row = FullBox(all.shape());
      row.dims[0] = {{static_cast<int64_t>(i), static_cast<int64_t>(i) + 1}};
      rows.push_back(MutableViewOf(all, std::move(row)));
    }
    mpi_.comm().AllGatherV(call.group, ViewOf(own), std::move(rows));
    return DecodeAndValidate(reinterpret_cast<const int64_t*>(all.data()), mine.size(), call);
  }

  // Grouped point-to-point: every peer's send and receive in one ncclGroupStart/End; the own
  // slot is a device copy.
  void Exchange(const Transfer& t, const std::function<const std::byte*(size_t)>& send_of,
                const std::function<std::byte*(size_t)>& recv_of) {
    if (t.in_count[t.me] > 0)
      CudaCheck(cudaMemcpyAsync(recv_of(t.me), send_of(t.me), t.Bytes(t.in_count[t.me]),
                                cudaMemcpyDeviceToDevice, t.stream),
                "cudaMemcpyAsync (own slot)", t.where, who_);
    NcclCheck(ncclGroupStart(), "ncclGroupStart", t.where, who_, t.comm);
    for (size_t peer = 0; peer < t.n; ++peer) {
      if (peer == t.me) continue;
      if (t.out_count[peer] > 0)
        NcclCheck(ncclSend(send_of(peer), t.Bytes(t.out_count[peer]), ncclUint8, static_cast<int>(peer),
                           t.comm, t.stream),
                  "ncclSend", t.where, who_, t.comm);
      if (t.in_count[peer] > 0)
        NcclCheck(ncclRecv(recv_of(peer), t.Bytes(t.in_count[peer]), ncclUint8, static_cast<int>(peer),
                           t.comm, t.stream),
                  "ncclRecv", t.where, who_, t.comm);
    }
    NcclCheck(ncclGroupEnd(), "ncclGroupEnd", t.where, who_, t.comm);
  }

  void AllGather(const Transfer& t) {
    if (!EqualCounts(t.in_count)) {
      Exchange(
          t, [&](size_t) { return staging_.send_slot(0); }, [&](size_t i) { return staging_.recv_slot(i); });
      return;
    }
    // Equal shards: the receive slots are consecutive blocks of in_count[0] elements.
    if (t.in_count[0] > 0)
      NcclCheck(ncclAllGather(staging_.send_slot(0), staging_.recv_slot(0), t.Bytes(t.in_count[0]), ncclUint8,
                              t.comm, t.stream),
                "ncclAllGather", t.where, who_, t.comm);
  }

  void Broadcast(const Transfer& t) {
    const size_t root = static_cast<size_t>(t.call.root);
    // Every member knows the root's count from its descriptor.
    const int64_t count = t.calls[root].send.empty() ? 0 : t.calls[root].send[0].Count();
    if (count <= 0) return;
    const void* src = t.me == root ? static_cast<const void*>(staging_.send_slot(0)) : staging_.recv_slot(0);
    NcclCheck(ncclBroadcast(src, staging_.recv_slot(0), t.Bytes(count), ncclUint8, static_cast<int>(root),
                            t.comm, t.stream),
              "ncclBroadcast", t.where, who_, t.comm);
  }

  // Exact reductions: every contribution lands in scratch slot i; the group-order kernel combines
  // them (bitwise the local backend's result).
  void ExactReduce(const Transfer& t, int64_t result, int64_t contributions) {
    const CollectiveCall& call = t.call;
    std::byte* parts = staging_.scratch();
    Exchange(
        t, [&](size_t j) { return staging_.send_slot(call.kind == CollectiveKind::kAllReduce ? 0 : j); },
        [&](size_t i) { return parts + static_cast<int64_t>(i) * result * t.es; });
    std::vector<const void*> inputs(t.n);
    for (size_t i = 0; i < t.n; ++i) inputs[i] = parts + static_cast<int64_t>(i) * result * t.es;
    auto* table = reinterpret_cast<const void**>(parts + ((contributions + 255) / 256) * 256);
    CudaCheck(cudaMemcpyAsync(table, inputs.data(), t.n * sizeof(void*), cudaMemcpyHostToDevice, t.stream),
              "cudaMemcpyAsync (reduce inputs)", t.where, who_);
    CudaCheck(detail::gpu::LaunchReduce(detail::gpu::KernelTypeOf(call.dtype),
                                        detail::gpu::KernelOpOf(call.reduction.op), table,
                                        static_cast<int64_t>(t.n), staging_.recv_slot(0), result,
                                        call.reduction.TotalDivisor(static_cast<int64_t>(t.n)), t.stream),
              "reduce kernel launch", t.where, who_);
  }

  // NCCL's own reductions (its summation order), then the scale kernel for avg and divisors.
  void NativeReduce(const Transfer& t, int64_t result) {
    const CollectiveCall& call = t.call;
    const ncclDataType_t type = NcclType(call.dtype);
    const ncclRedOp_t op = NcclOp(call.reduction.op);
    if (call.kind == CollectiveKind::kAllReduce) {
      if (result > 0)
        NcclCheck(ncclAllReduce(staging_.send_slot(0), staging_.recv_slot(0), static_cast<size_t>(result),
                                type, op, t.comm, t.stream),
                  "ncclAllReduce", t.where, who_, t.comm);
    } else {
      // Member j's share is what every member sends to j.
      std::vector<int64_t> share(t.n);
      for (size_t j = 0; j < t.n; ++j) share[j] = PairCount(t.calls, 0, j);
      if (EqualCounts(share)) {
        if (share[0] > 0)
          NcclCheck(ncclReduceScatter(staging_.send_slot(0), staging_.recv_slot(0),
                                      static_cast<size_t>(share[0]), type, op, t.comm, t.stream),
                    "ncclReduceScatter", t.where, who_, t.comm);
      } else {
        // Uneven shares: one ncclReduce per member, rooted there, in one group.
        NcclCheck(ncclGroupStart(), "ncclGroupStart", t.where, who_, t.comm);
        for (size_t j = 0; j < t.n; ++j) {
          if (share[j] == 0) continue;
          NcclCheck(ncclReduce(staging_.send_slot(j), staging_.recv_slot(0), static_cast<size_t>(share[j]),
                               type, op, static_cast<int>(j), t.comm, t.stream),
                    "ncclReduce", t.where, who_, t.comm);
        }
        NcclCheck(ncclGroupEnd(), "ncclGroupEnd", t.where, who_, t.comm);
      }
    }
    CudaCheck(detail::gpu::LaunchScale(detail::gpu::KernelTypeOf(call.dtype), staging_.recv_slot(0), result,
                                       call.reduction.TotalDivisor(static_cast<int64_t>(t.n)), t.stream),
              "scale kernel launch", t.where, who_);
  }

  // Watchdog, polled while the GPU work runs: NCCL waits for peers on the device, and a peer that
  // never comes would hang the stream, so check asynchronous NCCL errors and the deadline; on
  // expiry abort the communicator and throw Error(kTimeout).
  void Poll(ncclComm_t comm, const std::string& where, int64_t deadline) {
    ncclResult_t async = ncclSuccess;
    NcclCheck(ncclCommGetAsyncError(comm, &async), "ncclCommGetAsyncError", where, who_, comm);
    if (async != ncclSuccess && async != ncclInProgress)
      NcclCheck(async, "asynchronous NCCL error", where, who_, comm);
    if (trace::NowNs() <= deadline) return;
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%g", static_cast<double>(options_.timeout.count()) / 1000.0);
    ncclCommAbort(comm);
    ForgetComm(comm);
    throw Error(ErrorCode::kTimeout, who_ + ": " + where + ": the GPU work did not complete after " +
                                         seconds +
                                         " s: a peer died, diverged or is stuck (communicator aborted)");
  }

  void ForgetComm(ncclComm_t comm) {
    if (comm == world_comm_) world_comm_ = nullptr;
    for (auto it = comms_.begin(); it != comms_.end();)
      it = it->second == comm ? comms_.erase(it) : std::next(it);
    for (auto& entry : created_) {
      if (entry.second == comm) entry.second = nullptr;
    }
    aborted_world_ = aborted_world_ || world_comm_ == nullptr;
  }

 public:
  bool world_aborted() const { return aborted_world_; }

 private:
  MpiWorld& mpi_;
  NcclOptions options_;
  std::string who_;
  ncclComm_t world_comm_;
  Staging staging_;
  std::map<std::vector<int64_t>, ncclComm_t> comms_;
  std::vector<std::pair<std::vector<int64_t>, ncclComm_t>> created_;
  bool broken_ = false;
  bool aborted_world_ = false;
};

}  // namespace

bool NcclBackendAvailable() { return true; }

struct NcclWorld::Impl {
  MpiWorld* mpi = nullptr;
  int device = 0;
  cudaStream_t stream = nullptr;
  ncclComm_t world = nullptr;
  std::unique_ptr<NcclCommunicator> comm;

  ~Impl() {
    const bool broken = comm && comm->broken();
    const bool world_gone = comm && comm->world_aborted();
    comm.reset();
    if (world != nullptr && !world_gone) {
      if (broken) {
        ncclCommAbort(world);
      } else {
        ncclCommDestroy(world);
      }
    }
    if (stream != nullptr) cudaStreamDestroy(stream);
  }
};

NcclWorld::NcclWorld(MpiWorld& mpi, const NcclOptions& options) : impl_(std::make_unique<Impl>()) {
  const int devices = RequireGpuBackend("nccl");
  impl_->mpi = &mpi;
  const std::string who = "nccl backend, rank " + std::to_string(mpi.rank());
  // One GPU per process: the node-local rank picks the device.
  impl_->device = static_cast<int>(LocalRank(mpi.rank()) % devices);
  CudaCheck(cudaSetDevice(impl_->device), "cudaSetDevice", "NCCL bootstrap", who);
  CudaCheck(cudaStreamCreateWithFlags(&impl_->stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags",
            "NCCL bootstrap", who);
  ncclUniqueId id;
  std::memset(&id, 0, sizeof id);
  if (mpi.rank() == 0) NcclCheck(ncclGetUniqueId(&id), "ncclGetUniqueId", "NCCL bootstrap", who);
  Group world;
  for (int64_t r = 0; r < mpi.size(); ++r) world.ranks.push_back(r);
  ShareUniqueId(mpi.comm(), world, mpi.rank() == 0, id);
  NcclCheck(ncclCommInitRank(&impl_->world, static_cast<int>(mpi.size()), id, static_cast<int>(mpi.rank())),
            "ncclCommInitRank (world)", "NCCL bootstrap", who);
  impl_->comm = std::make_unique<NcclCommunicator>(mpi, impl_->world, impl_->stream, options);
}

NcclWorld::~NcclWorld() = default;
int64_t NcclWorld::rank() const { return impl_->mpi->rank(); }
int64_t NcclWorld::size() const { return impl_->mpi->size(); }
int NcclWorld::device() const { return impl_->device; }
Communicator& NcclWorld::comm() { return *impl_->comm; }

}  // namespace shardscope::engine
