#include "shardscope/engine/comm/local_backend.hpp"

#include <algorithm>
#include <exception>
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

// The compiled runs of one member's views, published beside its post for the peers that read it.
struct PostedRuns {
  std::vector<detail::ViewRuns> send;
  std::vector<detail::ViewRuns> recv;
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
    for (const SendView& v : call.send) runs.send.emplace_back(v);
    runs.recv.reserve(call.recv.size());
    for (const RecvView& v : call.recv) runs.recv.emplace_back(v);
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
      detail::CopyRuns(posted[from]->send[send_slot].data, RunsOf(slot, from).send[send_slot],
                       call.recv[recv_slot].data, mine.recv[recv_slot], es, 0,
                       mine.recv[recv_slot].elements(), mode);
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
          inputs.push_back({posted[i]->send[from].data, &RunsOf(slot, i).send[from]});
        detail::ReduceRuns(
            call.dtype, call.reduction.op, call.reduction.TotalDivisor(static_cast<int64_t>(n)), inputs,
            {detail::RunsOutput{call.recv[0].data, &mine.recv[0]}}, 0, mine.recv[0].elements(), mode);
        break;
      }
      case CollectiveKind::kBroadcast:
        copy(static_cast<size_t>(call.root), 0, 0);
        break;
      case CollectiveKind::kBarrier:
        break;
      case CollectiveKind::kShapeExchange:
        call.shapes_recv->resize(n);
        for (size_t i = 0; i < n; ++i) (*call.shapes_recv)[i] = posted[i]->shapes_send[me];
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

  // Sender-major (every receiver of sender 0, then of sender 1, ...), so that chunks claimed
  // one after the other read the same rows of one sender for different receivers, as members
  // pulling side by side do: those rows are fetched from memory once for all of them.
  static std::vector<Piece> PiecesOf(const CollectiveCall& call, const RendezvousSlot& slot, bool split) {
    const size_t n = slot.posted.size();
    std::vector<Piece> pieces;
    auto recv_elements = [&](size_t m, size_t r) { return RunsOf(slot, m).recv[r].elements(); };
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
  // same pieces and chunk order from the slot, then claims chunks until none is left. Chunk r of
  // every piece comes before chunk r + 1 of any (see PiecesOf).
  static void Share(const CollectiveCall& call, RendezvousSlot& slot, bool split, StoreMode mode) {
    const size_t n = slot.posted.size();
    const int64_t es = DTypeSize(call.dtype);
    const std::vector<Piece> pieces = PiecesOf(call, slot, split);
    const int64_t chunk = std::max<int64_t>(1, kChunkBytes / es);
    int64_t rounds = 0;
    for (const Piece& p : pieces) rounds = std::max(rounds, (p.elements + chunk - 1) / chunk);
    std::vector<std::pair<size_t, int64_t>> order;  // (piece, first element)
    for (int64_t r = 0; r < rounds; ++r) {
      for (size_t k = 0; k < pieces.size(); ++k) {
        if (r * chunk < pieces[k].elements) order.emplace_back(k, r * chunk);
      }
    }
    for (uint64_t c = slot.claimed.fetch_add(1); c < order.size(); c = slot.claimed.fetch_add(1)) {
      const Piece& p = pieces[order[c].first];
      const int64_t begin = order[c].second;
      const int64_t end = std::min(p.elements, begin + chunk);
      if (p.from < n) {
        detail::CopyRuns(slot.posted[p.from]->send[p.send_slot].data, RunsOf(slot, p.from).send[p.send_slot],
                         slot.calls[p.to]->recv[p.recv_slot].data, RunsOf(slot, p.to).recv[p.recv_slot], es,
                         begin, end, mode);
        continue;
      }
      std::vector<detail::RunsInput> inputs;
      for (size_t i = 0; i < n; ++i)
        inputs.push_back({slot.posted[i]->send[p.send_slot].data, &RunsOf(slot, i).send[p.send_slot]});
      std::vector<detail::RunsOutput> outputs;
      const size_t first = p.to < n ? p.to : 0, last = p.to < n ? p.to + 1 : n;
      for (size_t m = first; m < last; ++m)
        outputs.push_back({slot.calls[m]->recv[0].data, &RunsOf(slot, m).recv[0]});
      detail::ReduceRuns(call.dtype, call.reduction.op, call.reduction.TotalDivisor(static_cast<int64_t>(n)),
                         inputs, outputs, begin, end, mode);
    }
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
      inputs.push_back({slot.posted[i]->send[0].data, &RunsOf(slot, i).send[0]});
      outputs.push_back({slot.calls[i]->recv[0].data, &RunsOf(slot, i).recv[0]});
    }
    detail::ReduceRuns(call.dtype, call.reduction.op, call.reduction.TotalDivisor(static_cast<int64_t>(n)),
                       inputs, outputs, begin, end, mode);
  }

  Rendezvous rendezvous_;
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
