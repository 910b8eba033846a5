#include "shardscope/engine/comm/mpi_backend.hpp"

#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <thread>
#include <vector>

#include "comm/call_descriptor.hpp"
#include "comm/view_ops.hpp"
#include "shardscope/error.hpp"
#include "shardscope/trace/writer.hpp"

namespace shardscope::engine {
namespace {

using detail::DecodeAndValidate;
using detail::EncodeDescriptor;
using detail::kDescriptorHeaderWords;
using detail::PairCount;

std::string MpiErrorString(int rc) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(rc, text, &length) != MPI_SUCCESS) return "unknown MPI error";
  return std::string(text, static_cast<size_t>(length));
}

// Foreign error codes are wrapped where they arise (docs/contributing.md rule 12): call, context and rank.
void Check(int rc, const char* mpi_call, const std::string& where, int64_t rank) {
  if (rc == MPI_SUCCESS) return;
  throw Error(ErrorCode::kBackend, "mpi backend, rank " + std::to_string(rank) + ": " + mpi_call + " in " +
                                       where + " failed: " + MpiErrorString(rc) + " (MPI error " +
                                       std::to_string(rc) + ")");
}

// Completes `request` or throws Error(kTimeout) once `timeout` expires. Tests in a loop (MPI_Test
// drives progress) and yields the core: ranks are often oversubscribed.
void WaitFor(MPI_Request& request, std::chrono::milliseconds timeout, int64_t rank, const char* mpi_call,
             const std::string& where) {
  const int64_t deadline = trace::NowNs() + timeout.count() * 1000000;
  for (int64_t spins = 0;; ++spins) {
    int done = 0;
    Check(MPI_Test(&request, &done, MPI_STATUS_IGNORE), mpi_call, where, rank);
    if (done) return;
    if ((spins & 255) == 0 && trace::NowNs() > deadline) {
      char seconds[32];
      std::snprintf(seconds, sizeof seconds, "%g", static_cast<double>(timeout.count()) / 1000.0);
      throw Error(ErrorCode::kTimeout,
                  "mpi backend, rank " + std::to_string(rank) + ": " + where + ": " + mpi_call +
                      " not complete after " + seconds +
                      " s: a peer died, diverged (another collective or group) or is stuck");
    }
    if (spins > 1000) std::this_thread::yield();
  }
}

// Calls elements [begin, begin + count) of a view's element order, run by run:
// fn(element offset in the tensor, position relative to begin, length).
template <class Ptr, class Fn>
void ForRunsInRange(const BasicView<Ptr>& view, int64_t begin, int64_t count, Fn&& fn) {
  if (count <= 0) return;
  detail::RunCursor cursor(view.shape, view.boxes);
  const int64_t end = begin + count;
  int64_t offset = 0, length = 0, pos = 0;
  while (pos < end && cursor.Next(offset, length)) {
    const int64_t a = std::max(pos, begin), b = std::min(pos + length, end);
    if (a < b) fn(offset + (a - pos), a - begin, b - a);
    pos += length;
  }
}

void PackRange(const SendView& view, int64_t begin, int64_t count, std::byte* out) {
  const size_t es = static_cast<size_t>(DTypeSize(view.dtype));
  ForRunsInRange(view, begin, count, [&](int64_t off, int64_t at, int64_t len) {
    std::memcpy(out + static_cast<size_t>(at) * es, view.data + static_cast<size_t>(off) * es,
                static_cast<size_t>(len) * es);
  });
}

void UnpackRange(const std::byte* in, const RecvView& view, int64_t begin, int64_t count) {
  const size_t es = static_cast<size_t>(DTypeSize(view.dtype));
  ForRunsInRange(view, begin, count, [&](int64_t off, int64_t at, int64_t len) {
    std::memcpy(view.data + static_cast<size_t>(off) * es, in + static_cast<size_t>(at) * es,
                static_cast<size_t>(len) * es);
  });
}

// The layout MPI_Ialltoallv takes: counts[i] = count(i) and displs[i] = the sum of the counts
// before i. Returns the sum of all.
template <class Count>
int64_t FillCountsAndDispls(size_t n, Count&& count, std::vector<int>& counts, std::vector<int>& displs) {
  int64_t total = 0;
  for (size_t i = 0; i < n; ++i) {
    displs[i] = static_cast<int>(total);
    counts[i] = static_cast<int>(count(i));
    total += counts[i];
  }
  return total;
}

}  // namespace

bool MpiBackendAvailable() { return true; }

// ---------------------------------------------------------------------------------------------
// MpiCommunicator

struct MpiCommunicator::Impl {
  int64_t rank = 0;
  MpiOptions options;
  std::map<std::vector<int64_t>, MPI_Comm> comms;
  // Exchange buffers, kept across calls and never zero-filled: a fresh multi-MiB buffer per call
  // costs its page faults and zeroing every time, which dominated large collectives (10-50x the
  // time of the transfer itself on the test VM). They keep the size of the largest call so far.
  using Buffer = std::vector<std::byte, detail::DefaultInitAllocator<std::byte>>;
  Buffer send_buf, recv_buf, staging, reduced;

  ~Impl() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) return;
    for (auto& [ranks, comm] : comms) MPI_Comm_free(&comm);
  }

  MPI_Comm GroupComm(const Group& group, const std::string& where) {
    auto it = comms.find(group.ranks);
    if (it != comms.end()) return it->second;
    MPI_Group world_group = MPI_GROUP_NULL, group_handle = MPI_GROUP_NULL;
    Check(MPI_Comm_group(MPI_COMM_WORLD, &world_group), "MPI_Comm_group", where, rank);
    std::vector<int> ranks(group.ranks.begin(), group.ranks.end());
    int rc = MPI_Group_incl(world_group, static_cast<int>(ranks.size()), ranks.data(), &group_handle);
    MPI_Group_free(&world_group);
    Check(rc, "MPI_Group_incl", where, rank);
    // MPI_Comm_create_group is collective over the group's members only (MPI_Comm_split would
    // need every world rank at the same point). Ranks keep the group's order. The tag separates
    // concurrent creations of different groups.
    uint64_t h = 1469598103934665603ULL;
    for (int r : ranks) h = (h ^ static_cast<uint64_t>(r)) * 1099511628211ULL;
    MPI_Comm comm = MPI_COMM_NULL;
    rc = MPI_Comm_create_group(MPI_COMM_WORLD, group_handle, static_cast<int>(h % 30000), &comm);
    MPI_Group_free(&group_handle);
    Check(rc, "MPI_Comm_create_group", where, rank);
    Check(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler", where, rank);
    comms.emplace(group.ranks, comm);
    return comm;
  }

  // The group of the collective in progress (set by Exchange), for the roll call on a timeout.
  const Group* current_group = nullptr;

  // Every wait of a collective: on a timeout, names the members that never posted (RollCall).
  void Wait(MPI_Request& request, const char* mpi_call, const std::string& where) {
    try {
      WaitFor(request, options.timeout, rank, mpi_call, where);
    } catch (const Error& e) {
      if (e.code() != ErrorCode::kTimeout || current_group == nullptr) throw;
      const std::vector<int64_t> missing = RollCall(*current_group);
      std::string names;
      for (int64_t r : missing) names += (names.empty() ? "" : ",") + std::to_string(r);
      throw Error(ErrorCode::kTimeout,
                  std::string(e.what()) +
                      (missing.empty() ? "; every member answered a roll call afterwards (a diverged call?)"
                                       : "; rank(s) " + names +
                                             " did not answer a roll call (stopped, dead or in another "
                                             "collective): they never posted their part"));
    }
  }

  // After this rank's watchdog fired in a collective of `group`: every member that is waiting
  // in it times out too (within about one timeout of each other) and sends its rank to the
  // others. A member that sends nothing within one more timeout never reached the collective:
  // stopped (SIGSTOP, a debugger), dead, or busy elsewhere. Point-to-point on the world
  // communicator with a tag of its own, so no collective state is involved.
  std::vector<int64_t> RollCall(const Group& group) {
    constexpr int kTag = 7302;
    const int me = static_cast<int>(rank);
    std::vector<int> peers;
    for (int64_t r : group.ranks)
      if (r != rank) peers.push_back(static_cast<int>(r));
    std::vector<int> heard(peers.size(), -1);
    std::vector<MPI_Request> recvs(peers.size(), MPI_REQUEST_NULL), sends(peers.size(), MPI_REQUEST_NULL);
    for (size_t i = 0; i < peers.size(); ++i) {
      MPI_Irecv(&heard[i], 1, MPI_INT, peers[i], kTag, MPI_COMM_WORLD, &recvs[i]);
      MPI_Isend(&me, 1, MPI_INT, peers[i], kTag, MPI_COMM_WORLD, &sends[i]);
    }
    std::vector<bool> answered(peers.size(), false);
    const int64_t deadline = trace::NowNs() + options.timeout.count() * 1000000;
    size_t pending = peers.size();
    while (pending > 0 && trace::NowNs() < deadline) {
      for (size_t i = 0; i < peers.size(); ++i) {
        if (answered[i]) continue;
        int done = 0;
        MPI_Test(&recvs[i], &done, MPI_STATUS_IGNORE);
        if (done) {
          answered[i] = true;
          --pending;
        }
      }
      std::this_thread::yield();
    }
    std::vector<int64_t> missing;
    for (size_t i = 0; i < peers.size(); ++i) {
      if (!answered[i]) {
        missing.push_back(peers[i]);
        MPI_Cancel(&recvs[i]);
        MPI_Request_free(&recvs[i]);
      }
      int done = 0;
      MPI_Test(&sends[i], &done, MPI_STATUS_IGNORE);
      if (!done) MPI_Request_free(&sends[i]);  // a stopped peer never takes it; the job is ending
    }
    return missing;
  }

  void Exchange(CollectiveCall& call);
  void MoveData(CollectiveCall& call, MPI_Comm comm, const std::vector<CollectiveCall>& calls,
                const std::string& where);
  void AllReduceTwoPhase(CollectiveCall& call, MPI_Comm comm, const std::string& where);
  void CombineInGroupOrder(const CollectiveCall& call, const std::byte* contributions, int64_t count,
                           size_t n, const RecvView& dst);
  template <class Pack, class Deliver>
  void ExchangeRounds(MPI_Comm comm, const std::string& where, int64_t es, bool shared,
                      const std::vector<int64_t>& out_count, const std::vector<int64_t>& in_count,
                      int64_t longest, Pack&& pack, Deliver&& deliver);
  void ExchangeShapes(CollectiveCall& call, MPI_Comm comm, const std::vector<int64_t>& all, size_t words,
                      const std::string& where);
};

void MpiCommunicator::Impl::Exchange(CollectiveCall& call) {
  const std::string where = std::string(CollectiveKindName(call.kind)) + " on group " + call.group.ToString();
  const size_t n = call.group.ranks.size();
  current_group = &call.group;
  struct Clear {
    const Group*& group;
    ~Clear() { group = nullptr; }
  } clear{current_group};
  MPI_Comm comm = GroupComm(call.group, where);

  // Phase 1: every member learns every member's descriptor, so ValidateGroupCalls sees the same
  // posts on every member and all of them throw the same error before any data moves.
  std::vector<int64_t> mine = EncodeDescriptor(call, n);
  std::vector<int64_t> all(mine.size() * n);
  MPI_Request request = MPI_REQUEST_NULL;
  Check(MPI_Iallgather(mine.data(), static_cast<int>(mine.size()), MPI_INT64_T, all.data(),
                       static_cast<int>(mine.size()), MPI_INT64_T, comm, &request),
        "MPI_Iallgather (call descriptors)", where, rank);
  Wait(request, "MPI_Iallgather (call descriptors)", where);
  const std::vector<CollectiveCall> calls = DecodeAndValidate(all.data(), mine.size(), call);

  switch (call.kind) {
    case CollectiveKind::kBarrier:
      return;  // the descriptor all-gather already synchronized the group
    case CollectiveKind::kShapeExchange:
      ExchangeShapes(call, comm, all, mine.size(), where);
      return;
    default:
      MoveData(call, comm, calls, where);
  }
}

void MpiCommunicator::Impl::ExchangeShapes(CollectiveCall& call, MPI_Comm comm,
                                           const std::vector<int64_t>& all, size_t words,
                                           const std::string& where) {
  const size_t n = call.group.ranks.size(), me = static_cast<size_t>(call.index);
  std::vector<int> send_counts(n), send_displs(n), recv_counts(n), recv_displs(n);
  std::vector<int64_t> shape_send, shape_recv;
  shape_send.reserve(1);  // a valid pointer even when nothing is sent
  for (size_t j = 0; j < n; ++j) {
    send_counts[j] = static_cast<int>(call.shapes_send[j].size());
    send_displs[j] = static_cast<int>(shape_send.size());
    shape_send.insert(shape_send.end(), call.shapes_send[j].begin(), call.shapes_send[j].end());
  }
  // Member i's descriptor holds the lengths it sends to each member.
  const int64_t total = FillCountsAndDispls(
      n, [&](size_t i) { return all[i * words + kDescriptorHeaderWords + me]; }, recv_counts, recv_displs);
  shape_recv.assign(static_cast<size_t>(std::max<int64_t>(total, 1)), 0);
  MPI_Request request = MPI_REQUEST_NULL;
  Check(
      MPI_Ialltoallv(shape_send.data(), send_counts.data(), send_displs.data(), MPI_INT64_T,
                     shape_recv.data(), recv_counts.data(), recv_displs.data(), MPI_INT64_T, comm, &request),
      "MPI_Ialltoallv (shapes)", where, rank);
  Wait(request, "MPI_Ialltoallv (shapes)", where);
  call.shapes_recv->assign(n, {});
  for (size_t i = 0; i < n; ++i) {
    auto first = shape_recv.begin() + recv_displs[i];
    (*call.shapes_recv)[i].assign(first, first + recv_counts[i]);
  }
}

// One data exchange in rounds of MPI_Ialltoallv: this member sends out_count[j] elements to
// member j and receives in_count[i] from member i; `longest` is the largest count between any
// two members, the same on every member, so every member runs the same number of rounds. Every
// count and displacement of one MPI call must fit an int: at most INT_MAX / n bytes per peer and
// round. pack(j, begin, len, out) writes elements [begin, begin + len) of what goes to member j
// (with `shared`, every member gets the same elements and pack is called once, j = 0);
// deliver(i, begin, in, len) takes elements [begin, begin + len) received from member i.
template <class Pack, class Deliver>
void MpiCommunicator::Impl::ExchangeRounds(MPI_Comm comm, const std::string& where, int64_t es, bool shared,
                                           const std::vector<int64_t>& out_count,
                                           const std::vector<int64_t>& in_count, int64_t longest, Pack&& pack,
                                           Deliver&& deliver) {
  const size_t n = out_count.size();
  const int64_t cap_bytes =
      std::max(es, std::min<int64_t>(options.max_chunk_bytes, INT_MAX / static_cast<int64_t>(n)));
  const int64_t cap = std::max<int64_t>(1, cap_bytes / es);
  const int64_t rounds = longest == 0 ? 0 : (longest + cap - 1) / cap;
  std::vector<int> send_counts(n), send_displs(n), recv_counts(n), recv_displs(n);
  for (int64_t r = 0; r < rounds; ++r) {
    const int64_t begin = r * cap;
    auto chunk = [&](int64_t count) { return std::clamp<int64_t>(count - begin, 0, cap); };
    if (shared) {
      const int64_t len = chunk(out_count[0]);
      send_buf.resize(static_cast<size_t>(std::max<int64_t>(len * es, 1)));
      if (len > 0) pack(size_t{0}, begin, len, send_buf.data());
      std::fill(send_counts.begin(), send_counts.end(), static_cast<int>(len * es));
      std::fill(send_displs.begin(), send_displs.end(), 0);
    } else {
      const int64_t bytes = FillCountsAndDispls(
          n, [&](size_t j) { return chunk(out_count[j]) * es; }, send_counts, send_displs);
      send_buf.resize(static_cast<size_t>(std::max<int64_t>(bytes, 1)));
      for (size_t j = 0; j < n; ++j) {
        if (send_counts[j] > 0) pack(j, begin, send_counts[j] / es, send_buf.data() + send_displs[j]);
      }
    }
    const int64_t total = FillCountsAndDispls(
        n, [&](size_t i) { return chunk(in_count[i]) * es; }, recv_counts, recv_displs);
    recv_buf.resize(static_cast<size_t>(std::max<int64_t>(total, 1)));
    MPI_Request request = MPI_REQUEST_NULL;
    Check(MPI_Ialltoallv(send_buf.data(), send_counts.data(), send_displs.data(), MPI_BYTE, recv_buf.data(),
                         recv_counts.data(), recv_displs.data(), MPI_BYTE, comm, &request),
          "MPI_Ialltoallv", where, rank);
    Wait(request, "MPI_Ialltoallv", where);
    for (size_t i = 0; i < n; ++i) {
      if (recv_counts[i] > 0) deliver(i, begin, recv_buf.data() + recv_displs[i], recv_counts[i] / es);
    }
  }
}

void MpiCommunicator::Impl::MoveData(CollectiveCall& call, MPI_Comm comm,
                                     const std::vector<CollectiveCall>& calls, const std::string& where) {
  const size_t n = calls.size(), me = static_cast<size_t>(call.index);
  const int64_t es = DTypeSize(call.dtype);
  if (call.kind == CollectiveKind::kAllReduce && n > 2) return AllReduceTwoPhase(call, comm, where);
  const bool reduce = call.kind == CollectiveKind::kReduceScatter || call.kind == CollectiveKind::kAllReduce;
  // One packed source serves every peer when all of them get the same elements.
  const bool shared = call.kind == CollectiveKind::kAllGather || call.kind == CollectiveKind::kAllReduce ||
                      call.kind == CollectiveKind::kBroadcast;
  std::vector<int64_t> out_count(n), in_count(n);
  int64_t longest = 0;
  for (size_t i = 0; i < n; ++i) {
    out_count[i] = PairCount(calls, me, i);
    in_count[i] = PairCount(calls, i, me);
    for (size_t j = 0; j < n; ++j) longest = std::max(longest, PairCount(calls, i, j));
  }
  auto source = [&](size_t j) -> const SendView* {
    switch (call.kind) {
      case CollectiveKind::kAllGather:
      case CollectiveKind::kAllReduce:
        return &call.send[0];
      case CollectiveKind::kBroadcast:
        return call.send.empty() ? nullptr : &call.send[0];
      default:
        return &call.send[j];
    }
  };
  auto destination = [&](size_t i) -> const RecvView* {
    if (call.kind == CollectiveKind::kBroadcast)
      return static_cast<int64_t>(i) == call.root ? &call.recv[0] : nullptr;
    return &call.recv[i];
  };
  // Reductions receive every member's contribution first, then combine them in group order with
  // the local backend's Accumulator, so results are bitwise identical to it.
  const int64_t result = reduce ? call.recv[0].Count() : 0;
  if (reduce) staging.resize(n * static_cast<size_t>(result * es));
  ExchangeRounds(
      comm, where, es, shared, out_count, in_count, longest,
      [&](size_t j, int64_t begin, int64_t len, std::byte* out) { PackRange(*source(j), begin, len, out); },
      [&](size_t i, int64_t begin, const std::byte* in, int64_t len) {
        if (reduce) {
          std::memcpy(staging.data() + static_cast<size_t>((static_cast<int64_t>(i) * result + begin) * es),
                      in, static_cast<size_t>(len * es));
        } else if (const RecvView* dst = destination(i)) {
          UnpackRange(in, *dst, begin, len);
        }
      });
  if (reduce && result > 0) CombineInGroupOrder(call, staging.data(), result, n, call.recv[0]);
}

// Combines n contiguous contributions of `count` elements each (member order) with the local
// backend's Accumulator and stores the result, divided as the reduction says, into `dst`.
void MpiCommunicator::Impl::CombineInGroupOrder(const CollectiveCall& call, const std::byte* contributions,
                                                int64_t count, size_t n, const RecvView& dst) {
  const size_t bytes = static_cast<size_t>(count * DTypeSize(call.dtype));
  detail::Accumulator acc(call.dtype, call.reduction.op, count);
  for (size_t i = 0; i < n; ++i) {
    SendView contribution{contributions + i * bytes, Shape{count}, call.dtype, {FullBox(Shape{count})}};
    acc.Add(contribution);
  }
  const int64_t divisor = call.reduction.TotalDivisor(static_cast<int64_t>(n));
  acc.Store(dst, divisor);
}

// all_reduce over more than two members as a reduce-scatter followed by an all-gather: the
// result's elements are cut into n contiguous blocks, member i receives block i of every
// member's contribution, combines them in group order (as the local backend does, so the result
// is bitwise the same) and sends the finished block to every member. Each member moves
// 2 (n-1)/n of the data instead of (n-1) times it when every member receives everything.
void MpiCommunicator::Impl::AllReduceTwoPhase(CollectiveCall& call, MPI_Comm comm, const std::string& where) {
  const size_t n = call.group.ranks.size(), me = static_cast<size_t>(call.index);
  const int64_t es = DTypeSize(call.dtype);
  const int64_t result = call.recv[0].Count();  // the same on every member (validated)
  std::vector<int64_t> lo(n + 1);
  for (size_t i = 0; i <= n; ++i) lo[i] = result * static_cast<int64_t>(i) / static_cast<int64_t>(n);
  auto block = [&](size_t i) { return lo[i + 1] - lo[i]; };
  int64_t longest = 0;
  for (size_t i = 0; i < n; ++i) longest = std::max(longest, block(i));
  const int64_t mine = block(me);

  // Phase 1: block j of this member's contribution goes to member j.
  std::vector<int64_t> out_count(n), in_count(n, mine);
  for (size_t j = 0; j < n; ++j) out_count[j] = block(j);
  staging.resize(n * static_cast<size_t>(mine * es));
  ExchangeRounds(
      comm, where + " (reduce phase)", es, false, out_count, in_count, longest,
      [&](size_t j, int64_t begin, int64_t len, std::byte* out) {
        PackRange(call.send[0], lo[j] + begin, len, out);
      },
      [&](size_t i, int64_t begin, const std::byte* in, int64_t len) {
        std::memcpy(staging.data() + static_cast<size_t>((static_cast<int64_t>(i) * mine + begin) * es), in,
                    static_cast<size_t>(len * es));
      });
  reduced.resize(static_cast<size_t>(std::max<int64_t>(mine * es, 1)));
  if (mine > 0) {
    RecvView out{reduced.data(), Shape{mine}, call.dtype, {FullBox(Shape{mine})}};
    CombineInGroupOrder(call, staging.data(), mine, n, out);
  }

  // Phase 2: every member's finished block goes to every member.
  std::fill(out_count.begin(), out_count.end(), mine);
  for (size_t i = 0; i < n; ++i) in_count[i] = block(i);
  const SendView finished{reduced.data(), Shape{mine}, call.dtype, {FullBox(Shape{mine})}};
  ExchangeRounds(
      comm, where + " (gather phase)", es, true, out_count, in_count, longest,
      [&](size_t, int64_t begin, int64_t len, std::byte* out) { PackRange(finished, begin, len, out); },
      [&](size_t i, int64_t begin, const std::byte* in, int64_t len) {
        UnpackRange(in, call.recv[0], lo[i] + begin, len);
      });
}

MpiCommunicator::MpiCommunicator(int64_t world_rank, int64_t world_size, const MpiOptions& options)
    : Communicator(world_rank, world_size), impl_(std::make_unique<Impl>()) {
  impl_->rank = world_rank;
  impl_->options = options;
}

MpiCommunicator::~MpiCommunicator() = default;

void MpiCommunicator::Execute(CollectiveCall& call) {
  try {
    impl_->Exchange(call);
  } catch (const Error& e) {
    // Validation errors are thrown by every member alike; anything else may leave peers inside
    // a collective that MPI cannot cancel.
    if (e.code() != ErrorCode::kInvalidInput) broken_ = true;
    throw;
  }
}

// ---------------------------------------------------------------------------------------------
// MpiWorld

struct MpiWorld::Impl {
  MpiOptions options;
  bool owns = false;
  int64_t rank = 0;
  int64_t size = 1;
  std::unique_ptr<MpiCommunicator> comm;
};

MpiWorld::MpiWorld(const MpiOptions& options) : impl_(std::make_unique<Impl>()) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (finalized) throw Error(ErrorCode::kBackend, "mpi backend: MPI was already finalized in this process");
  if (!initialized) {
    // Only the calling thread talks to MPI; other threads (a local world in tests) never do.
    int provided = 0;
    int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
    if (rc != MPI_SUCCESS) {
      throw Error(ErrorCode::kBackend, "mpi backend: MPI_Init_thread failed: " + MpiErrorString(rc));
    }
    impl_->owns = true;
  }
  int rank = 0, size = 1;
  Check(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler", "MpiWorld",
        -1);
  Check(MPI_Comm_rank(MPI_COMM_WORLD, &rank), "MPI_Comm_rank", "MpiWorld", -1);
  Check(MPI_Comm_size(MPI_COMM_WORLD, &size), "MPI_Comm_size", "MpiWorld", rank);
  impl_->options = options;
  impl_->rank = rank;
  impl_->size = size;
  impl_->comm = std::make_unique<MpiCommunicator>(rank, size, options);
}

MpiWorld::~MpiWorld() {
  const bool broken = impl_->comm && impl_->comm->broken();
  // A broken communicator may have peers stuck in a collective: freeing communicators or
  // finalizing could hang, so leave both to the launcher, which ends the job when a process
  // exits without MPI_Finalize.
  if (broken) return;
  impl_->comm.reset();
  if (impl_->owns) MPI_Finalize();
}

int64_t MpiWorld::rank() const { return impl_->rank; }
int64_t MpiWorld::size() const { return impl_->size; }
Communicator& MpiWorld::comm() { return *impl_->comm; }

MpiWorld::ClockEstimate MpiWorld::EstimateClockOffset(int samples) {
  const int64_t me = impl_->rank;
  const std::string where = "clock offset estimate";
  constexpr int kTag = 7301;
  // Point-to-point under the watchdog, so a peer that never arrives is an error, not a hang.
  auto send = [&](const int64_t* data, int count, int peer) {
    MPI_Request request = MPI_REQUEST_NULL;
    Check(MPI_Isend(data, count, MPI_INT64_T, peer, kTag, MPI_COMM_WORLD, &request), "MPI_Isend", where, me);
    WaitFor(request, impl_->options.timeout, me, "MPI_Isend", where);
  };
  auto recv = [&](int64_t* data, int count, int peer) {
    MPI_Request request = MPI_REQUEST_NULL;
    Check(MPI_Irecv(data, count, MPI_INT64_T, peer, kTag, MPI_COMM_WORLD, &request), "MPI_Irecv", where, me);
    WaitFor(request, impl_->options.timeout, me, "MPI_Irecv", where);
  };
  ClockEstimate result;
  samples = std::max(samples, 1);
  if (me == 0) {
    for (int peer = 1; peer < impl_->size; ++peer) {
      int64_t best_rtt = -1, best_offset = 0;
      for (int k = 0; k < samples; ++k) {
        int64_t t0 = trace::NowNs(), remote = 0;
        send(&t0, 1, peer);
        recv(&remote, 1, peer);
        int64_t t1 = trace::NowNs();
        // The peer read its clock somewhere inside [t0, t1]: the midpoint is off by at most RTT/2,
        // so the sample with the smallest RTT bounds the error best (Cristian's algorithm).
        if (best_rtt < 0 || t1 - t0 < best_rtt) {
          best_rtt = t1 - t0;
          best_offset = t0 + (t1 - t0) / 2 - remote;
        }
      }
      int64_t reply[2] = {best_offset, best_rtt};
      send(reply, 2, peer);
    }
  } else {
    for (int k = 0; k < samples; ++k) {
      int64_t t0 = 0;
      recv(&t0, 1, 0);
      int64_t now = trace::NowNs();
      send(&now, 1, 0);
    }
    int64_t reply[2] = {0, 0};
    recv(reply, 2, 0);
    result.offset_ns = reply[0];
    result.rtt_ns = reply[1];
  }
  return result;
}

void MpiWorld::IdleBarrier() {
  MPI_Request request = MPI_REQUEST_NULL;
  Check(MPI_Ibarrier(MPI_COMM_WORLD, &request), "MPI_Ibarrier", "idle barrier", impl_->rank);
  for (int done = 0; !done;) {
    Check(MPI_Test(&request, &done, MPI_STATUS_IGNORE), "MPI_Test", "idle barrier", impl_->rank);
    if (!done) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

void MpiWorld::Abort(const std::string& message, int exit_code) {
  std::fprintf(stderr, "%s\n", message.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, exit_code);
  std::_Exit(exit_code);
}

bool MpiWorld::LaunchedByMpirun() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "SLURM_PROCID"}) {
    const char* v = std::getenv(var);
    if (v != nullptr && *v != '\0') return true;
  }
  return false;
}

}  // namespace shardscope::engine
