#include "shardscope/engine/comm/local_backend.hpp"

#include <algorithm>
#include <exception>
#include <memory>
#include <utility>
#include <vector>

#include "comm/rendezvous.hpp"
#include "comm/view_ops.hpp"
#include "shardscope/error.hpp"

namespace shardscope::engine {
namespace {

using detail::Rendezvous;
using detail::RendezvousSlot;
using detail::StoreMode;

// Collectives whose receive views hold at most this many bytes over the whole group are carried
// out entirely by the member that arrives last, while the others wait for one release: one
// rendezvous instead of two (arrive, then pull and wait for every pull), which is what small
// messages pay for, above all with more ranks than cores.
constexpr int64_t kLeaderBytes = int64_t{32} << 10;
// Collectives whose receive views hold at least this many bytes over the whole group write them
// with non-temporal stores (StoreMode::kStreaming): data that large leaves the caches before it
// is read again, and plain stores would first read every destination line from memory.
constexpr int64_t kStreamingBytes = int64_t{16} << 20;

// Collectives that stream (kStreamingBytes) on groups of at most kShareMembers members share
// their copy work: it is cut into chunks of about kChunkBytes of output that any member claims
// from the slot's counter, so every running thread copies about the same bytes and a member that
// is descheduled (more ranks than cores, other processes) holds up at most one chunk.
constexpr size_t kShareMembers = 16;
constexpr int64_t kChunkBytes = int64_t{1} << 20;
// A shared copy's work item copies its pieces in turns of this many bytes of output each (see
// Share): small enough that the sender rows one turn reads stay in the core's L2 for the next
// pieces' turns.
constexpr int64_t kTurnBytes = int64_t{32} << 10;
// The shortest turn when the turns follow the sender's runs (see CopyTurns): shorter runs are
// taken several at a time, so that the per-turn work stays small beside the bytes copied.
constexpr int64_t kMinTurnBytes = 256;

// The compiled runs of one member's views, published beside its post for the peers that read it.
// Shared with the rank's ViewRunsCache, so they stay valid until the round is finished even when
// the cache drops them.
struct PostedRuns {
  std::vector<std::shared_ptr<const detail::ViewRuns>> send;
  std::vector<std::shared_ptr<const detail::ViewRuns>> recv;
  const detail::ViewRuns& Send(size_t k) const { return *send[k]; }
  const detail::ViewRuns& Recv(size_t k) const { return *recv[k]; }
};

const PostedRuns& RunsOf(const RendezvousSlot& slot, size_t member) {
  return *static_cast<const PostedRuns*>(slot.payloads[member]);
}

// Element range [begin, end) of part `k` when `count` elements are split over `n` members.
std::pair<int64_t, int64_t> Part(int64_t count, size_t n, size_t k) {
  return {count * static_cast<int64_t>(k) / static_cast<int64_t>(n),
          count * static_cast<int64_t>(k + 1) / static_cast<int64_t>(n)};
}

class LocalCommunicator final : public Communicator {
 public:
  LocalCommunicator(detail::RendezvousWorld& world, int64_t rank)
      : Communicator(rank, world.size()), rendezvous_(world) {}
  std::string_view backend_name() const override { return "local"; }

 protected:
  void Execute(CollectiveCall& call) override {
    const size_t n = call.group.ranks.size();
    const size_t me = static_cast<size_t>(call.index);
    // Compiled before posting, so peers copy with no per-run cursor work of their own.
    PostedRuns runs;
    runs.send.reserve(call.send.size());
    for (const SendView& v : call.send) runs.send.push_back(runs_cache_.Get(v.shape, v.boxes));
    runs.recv.reserve(call.recv.size());
    for (const RecvView& v : call.recv) runs.recv.push_back(runs_cache_.Get(v.shape, v.boxes));
    const Rendezvous::Round round = rendezvous_.Post(call, &runs);
    RendezvousSlot& slot = *round.slot;

    const int64_t group_bytes = slot.GroupRecvBytes();
    if (group_bytes <= kLeaderBytes) {
      rendezvous_.Lead(round, [&] {
        ValidateGroupCalls(slot.posted);
        for (size_t m = 0; m < n; ++m) Pull(*slot.calls[m], slot, RunsOf(slot, m), StoreMode::kCached);
      });
      return;
    }

    // Every post stays valid until every member has finished (Rendezvous::Finish). Decided from
    // slot data every member reads alike (member 0's bytes), so that members whose posts disagree
    // (the validation fails on all of them) still take the same path.
    const StoreMode mode = group_bytes >= kStreamingBytes ? StoreMode::kStreaming : StoreMode::kCached;
    const bool split =
        call.kind == CollectiveKind::kAllReduce && n > 1 && slot.recv_bytes[0] >= kLocalSplitAllReduceBytes;
    const bool share = mode == StoreMode::kStreaming && n <= kShareMembers;
    std::exception_ptr error;
    try {
      ValidateGroupCalls(slot.posted);
      if (share) {
        Share(call, slot, split, mode);
      } else if (split) {
        ReducePart(call, slot, me, mode);
      } else {
        Pull(call, slot, runs, mode);
      }
    } catch (...) {
      error = std::current_exception();
    }
    rendezvous_.Finish(round);
    if (error) std::rethrow_exception(error);
  }

 private:
  // Each member fills its own receive views from its peers' posts (a leader calls this for every
  // member).
  static void Pull(CollectiveCall& call, const RendezvousSlot& slot, const PostedRuns& mine, StoreMode mode) {
    const auto& posted = slot.posted;
    const size_t n = posted.size();
    const size_t me = static_cast<size_t>(call.index);
    const int64_t es = DTypeSize(call.dtype);
    auto copy = [&](size_t from, size_t send_slot, size_t recv_slot) {
      detail::CopyRuns(posted[from]->send[send_slot].data, RunsOf(slot, from).Send(send_slot),
                       call.recv[recv_slot].data, mine.Recv(recv_slot), es, 0,
                       mine.Recv(recv_slot).elements(), mode);
    };
    switch (call.kind) {
      case CollectiveKind::kAllGather:
        for (size_t i = 0; i < n; ++i) copy(i, 0, i);
        break;
      case CollectiveKind::kAllToAll:
        for (size_t i = 0; i < n; ++i) copy(i, me, i);
        break;
      case CollectiveKind::kReduceScatter:
      case CollectiveKind::kAllReduce: {
        // Each rank reduces only its own output, reading every member's contribution in group
        // order, so all members of an all_reduce produce bitwise-identical results.
        const size_t from = call.kind == CollectiveKind::kAllReduce ? 0 : me;
        std::vector<detail::RunsInput> inputs;
        for (size_t i = 0; i < n; ++i)
          inputs.push_back({posted[i]->send[from].data, &RunsOf(slot, i).Send(from)});
        detail::ReduceRuns(
            call.dtype, call.reduction.op, call.reduction.TotalDivisor(static_cast<int64_t>(n)), inputs,
            {detail::RunsOutput{call.recv[0].data, &mine.Recv(0)}}, 0, mine.Recv(0).elements(), mode);
        break;
      }
      case CollectiveKind::kBroadcast:
        copy(static_cast<size_t>(call.root), 0, 0);
        break;
      case CollectiveKind::kBarrier:
        break;
      case CollectiveKind::kShapeExchange:
        detail::ReceiveShapes(slot, call);
        break;
    }
  }

  // One piece of a shared collective: positions of receiver `to`'s receive view `recv_slot`
  // filled from member `from`'s send view `send_slot`; a reduction reads send view `send_slot` of
  // every member instead (from == n) and, for a split all_reduce, writes every member's output
  // (to == n).
  struct Piece {
    size_t to = 0, recv_slot = 0, from = 0, send_slot = 0;
    int64_t elements = 0;
  };

  // Sender-major (every receiver of sender 0, then of sender 1, ...); Share copies the pieces of
  // one sender together, so the rows of that sender that several receivers take are fetched from
  // memory once for all of them.
  static std::vector<Piece> PiecesOf(const CollectiveCall& call, const RendezvousSlot& slot, bool split) {
    const size_t n = slot.posted.size();
    std::vector<Piece> pieces;
    auto recv_elements = [&](size_t m, size_t r) { return RunsOf(slot, m).Recv(r).elements(); };
    switch (call.kind) {
      case CollectiveKind::kAllGather:
      case CollectiveKind::kAllToAll:
        for (size_t i = 0; i < n; ++i) {
          for (size_t m = 0; m < n; ++m) {
            const size_t send_slot = call.kind == CollectiveKind::kAllGather ? 0 : m;
            pieces.push_back({m, i, i, send_slot, recv_elements(m, i)});
          }
        }
        break;
      case CollectiveKind::kBroadcast:
        for (size_t m = 0; m < n; ++m)
          pieces.push_back({m, 0, static_cast<size_t>(call.root), 0, recv_elements(m, 0)});
        break;
      case CollectiveKind::kReduceScatter:
        for (size_t m = 0; m < n; ++m) pieces.push_back({m, 0, n, m, recv_elements(m, 0)});
        break;
      case CollectiveKind::kAllReduce:
        if (split) {
          pieces.push_back({n, 0, n, 0, recv_elements(0, 0)});
        } else {
          for (size_t m = 0; m < n; ++m) pieces.push_back({m, 0, n, 0, recv_elements(m, 0)});
        }
        break;
      case CollectiveKind::kBarrier:
      case CollectiveKind::kShapeExchange:
        break;
    }
    return pieces;
  }

  // A large collective whose work the members share (kShareMembers): every member derives the
  // same pieces and work order from the slot, then claims work items until none is left. A
  // reduction's item is a chunk of one piece (chunk r of every piece before chunk r + 1 of any).
  // A copy's item is chunk r of every piece of one sender (see PiecesOf), copied in turns of
  // kTurnBytes per piece: the sender's rows that the pieces share (an all_gather's whole send
  // view, an all_to_all's rows cut into column blocks) are then fetched from memory once, and
  // the other pieces read them from the cache.
  static void Share(const CollectiveCall& call, RendezvousSlot& slot, bool split, StoreMode mode) {
    const size_t n = slot.posted.size();
    const int64_t es = DTypeSize(call.dtype);
    const std::vector<Piece> pieces = PiecesOf(call, slot, split);
    std::vector<std::vector<size_t>> by_sender(n + 1);  // piece indices; [n]: reductions
    for (size_t k = 0; k < pieces.size(); ++k) by_sender[pieces[k].from].push_back(k);
    int64_t rounds = 0;
    for (const Piece& p : pieces) {
      const int64_t chunk = ChunkOf(p, by_sender, es);
      rounds = std::max(rounds, (p.elements + chunk - 1) / chunk);
    }
    struct Item {
      size_t sender;  // n: a reduction piece
      size_t piece;
      int64_t round;
    };
    std::vector<Item> order;
    for (int64_t r = 0; r < rounds; ++r) {
      for (size_t i = 0; i < n; ++i) {
        if (!by_sender[i].empty()) order.push_back({i, 0, r});
      }
      for (size_t k : by_sender[n]) order.push_back({n, k, r});
    }
    for (uint64_t c = slot.claimed.fetch_add(1); c < order.size(); c = slot.claimed.fetch_add(1)) {
      const Item& item = order[c];
      if (item.sender < n) {
        CopyTurns(call, slot, pieces, by_sender, item.sender, item.round, mode);
        continue;
      }
      const Piece& p = pieces[item.piece];
      const int64_t chunk = ChunkOf(p, by_sender, es);
      const int64_t begin = item.round * chunk;
      if (begin >= p.elements) continue;
      const int64_t end = std::min(p.elements, begin + chunk);
      std::vector<detail::RunsInput> inputs;
      for (size_t i = 0; i < n; ++i)
        inputs.push_back({slot.posted[i]->send[p.send_slot].data, &RunsOf(slot, i).Send(p.send_slot)});
      std::vector<detail::RunsOutput> outputs;
      const size_t first = p.to < n ? p.to : 0, last = p.to < n ? p.to + 1 : n;
      for (size_t m = first; m < last; ++m)
        outputs.push_back({slot.calls[m]->recv[0].data, &RunsOf(slot, m).Recv(0)});
      detail::ReduceRuns(call.dtype, call.reduction.op, call.reduction.TotalDivisor(static_cast<int64_t>(n)),
                         inputs, outputs, begin, end, mode);
    }
  }

  // Elements of piece `p` per work item: kChunkBytes of output, shared by the pieces of one
  // sender when they are copied together (by_sender[n] holds the reductions, one piece each).
  static int64_t ChunkOf(const Piece& p, const std::vector<std::vector<size_t>>& by_sender, int64_t es) {
    const bool copy = p.from + 1 < by_sender.size();
    const auto shared = static_cast<int64_t>(copy ? by_sender[p.from].size() : 1);
    return std::max<int64_t>(1, kChunkBytes / es / shared);
  }

  // Chunk `round` of every piece of sender `from`, in turns: each piece copies its next turn of
  // positions before the next piece does. Where the sender's view is short runs (the pieces of
  // its rows, 384 B in the HealDA-like all_to_all), a turn is one run, so the pieces together
  // read the sender's rows in order, one stream the hardware prefetches, and every destination
  // is written front to back; otherwise kTurnBytes of output.
  static void CopyTurns(const CollectiveCall& call, const RendezvousSlot& slot,
                        const std::vector<Piece>& pieces, const std::vector<std::vector<size_t>>& by_sender,
                        size_t from, int64_t round, StoreMode mode) {
    const int64_t es = DTypeSize(call.dtype);
    const std::vector<size_t>& mine = by_sender[from];
    const int64_t chunk = ChunkOf(pieces[mine[0]], by_sender, es);
    const int64_t begin = round * chunk, stop = (round + 1) * chunk;
    std::vector<detail::RunCopier> copiers;
    std::vector<int64_t> ends;
    for (size_t k : mine) {
      const Piece& p = pieces[k];
      const int64_t end = std::min(p.elements, stop);
      if (begin >= end) continue;
      copiers.emplace_back(slot.posted[p.from]->send[p.send_slot].data,
                           RunsOf(slot, p.from).Send(p.send_slot), slot.calls[p.to]->recv[p.recv_slot].data,
                           RunsOf(slot, p.to).Recv(p.recv_slot), es, begin);
      ends.push_back(end);
    }
    if (copiers.empty()) return;
    const int64_t run = copiers[0].source_run_length(), max_turn = std::max<int64_t>(1, kTurnBytes / es);
    const int64_t turn = run > max_turn ? max_turn : run * std::max<int64_t>(1, kMinTurnBytes / (run * es));
    // Turns end at multiples of `turn`, so that they keep to the runs after a chunk boundary.
    for (int64_t t = begin; t < stop; t = (t / turn + 1) * turn) {
      const int64_t next = (t / turn + 1) * turn;
      bool any = false;
      for (size_t c = 0; c < copiers.size(); ++c) {
        const int64_t end = std::min(ends[c], next);
        if (t >= end) continue;
        any = true;
        copiers[c].Copy(end - t, mode);
      }
      if (!any) break;
    }
    if (mode == StoreMode::kStreaming) detail::StoreFence();
  }

  // A large all_reduce (kLocalSplitAllReduceBytes): this member reduces its 1/n of the elements,
  // in group order as the one-member path does for all of them, and stores the result into every
  // member's receive view, so all members hold the same bits after one rendezvous.
  static void ReducePart(const CollectiveCall& call, const RendezvousSlot& slot, size_t me, StoreMode mode) {
    const size_t n = slot.posted.size();
    auto [begin, end] = Part(call.recv[0].Count(), n, me);
    std::vector<detail::RunsInput> inputs;
    std::vector<detail::RunsOutput> outputs;
    for (size_t i = 0; i < n; ++i) {
      inputs.push_back({slot.posted[i]->send[0].data, &RunsOf(slot, i).Send(0)});
      outputs.push_back({slot.calls[i]->recv[0].data, &RunsOf(slot, i).Recv(0)});
    }
    detail::ReduceRuns(call.dtype, call.reduction.op, call.reduction.TotalDivisor(static_cast<int64_t>(n)),
                       inputs, outputs, begin, end, mode);
  }

  Rendezvous rendezvous_;
  detail::ViewRunsCache runs_cache_;
};

}  // namespace

void LocalWorld::Run(int64_t world_size, const RankFn& fn, const LocalWorldOptions& options) {
  if (world_size < 1 || world_size > (int64_t{1} << 16)) {
    throw InvalidInput("local backend: world size " + std::to_string(world_size) + " is outside [1, 65536]");
  }
  detail::RendezvousWorld world(world_size, options.timeout, "local backend");
  world.Run([&](int64_t rank) {
    LocalCommunicator comm(world, rank);
    fn(comm, rank);
  });
}

}  // namespace shardscope::engine
