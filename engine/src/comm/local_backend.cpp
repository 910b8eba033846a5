#include "shardscope/engine/comm/local_backend.hpp"

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "comm/view_ops.hpp"
#include "shardscope/error.hpp"

namespace shardscope::engine {
namespace {

using Clock = std::chrono::steady_clock;

// Wake-up strategy of a waiting member (docs/local-backend.md): sched_yield in a loop, checking
// the phase counter between yields, until kYieldFor has passed since the wait began; then sleep
// on the world's condition variable. A member that completes a phase, fails a slot or exits
// notifies only when someone sleeps (Dekker-style: the sleeper counts itself, then re-checks; the
// waker changes state, then reads the count). No pause-instruction spin: on the 2-core VMs this
// was measured on, a peer often shares the waiter's core (other processes hold the other one),
// and every microsecond of spinning added two to a 2-rank barrier's median (3 us without, 23 us
// with a 10 us spin), while a yield hands the core over at once and costs about a system call
// when the core is otherwise idle.
constexpr auto kYieldFor = std::chrono::microseconds(500);
// Collectives whose receive views hold at most this many bytes over the whole group are carried
// out entirely by the member that arrives last, while the others wait for one release: one
// rendezvous instead of two (arrive, then pull and wait for every pull), which is what small
// messages pay for, above all with more ranks than cores.
constexpr int64_t kLeaderBytes = int64_t{32} << 10;

// The compiled runs of one member's views, published beside its post for the peers that read it.
struct PostedRuns {
  std::vector<detail::ViewRuns> send;
  std::vector<detail::ViewRuns> recv;
};

// One of a channel's two slots. Sequence number s of a group uses slot s % 2 in round s / 2; the
// counters only grow, so round r of a phase is complete at (r + 1) * n. Two slots suffice: a
// member reaches s + 2 only after every member pulled s + 1, hence after every member left s.
struct Slot {
  explicit Slot(size_t n)
      : posted(n, nullptr),
        calls(n, nullptr),
        runs(n, nullptr),
        recv_bytes(n, 0),
        stamp(new std::atomic<uint64_t>[n]) {
    for (size_t i = 0; i < n; ++i) stamp[i].store(0, std::memory_order_relaxed);
  }
  std::vector<const CollectiveCall*>
      posted;                          // written by member i before its arrival, read after all arrived
  std::vector<CollectiveCall*> calls;  // the same posts, for a leader that fills every member's views
  std::vector<const PostedRuns*> runs;
  // Per member: the bytes of its receive views. Kept in the slot, not in the post, because a
  // slow member reads them after the posts may be gone (a leader released the others).
  std::vector<int64_t> recv_bytes;
  // A leader's failure (kLeaderBytes), read by the members after the release.
  bool failed = false;
  ErrorCode code = ErrorCode::kInternal;
  std::string error;
  std::unique_ptr<std::atomic<uint64_t>[]> stamp;  // per member: 1 + the sequence number it last posted here
  std::atomic<uint64_t> arrived{0};
  std::atomic<uint64_t> reduced{0};  // counts two-phase all_reduce rounds only (Link::two_phase_rounds)
  std::atomic<uint64_t> pulled{0};
};

// The rendezvous of one group (its ranks in group order), shared by the members. After a member
// gives up on a collective (timeout, a peer that finished) the channel is broken: every later
// collective on the group fails at once with the same error.
struct Channel {
  explicit Channel(size_t n) : size(n), slots{Slot(n), Slot(n)} {}
  size_t size;
  Slot slots[2];
  std::atomic<int> fail_state{0};  // 0 ok, 1 being written, 2 code and error readable
  ErrorCode code = ErrorCode::kTimeout;
  std::string error;

  bool broken() const { return fail_state.load() != 0; }
  // First failure wins; returns once the winning error is readable.
  void SetError(ErrorCode c, const std::string& message) {
    int expected = 0;
    if (fail_state.compare_exchange_strong(expected, 1)) {
      code = c;
      error = message;
      fail_state.store(2, std::memory_order_release);
      return;
    }
    while (fail_state.load(std::memory_order_acquire) != 2) std::this_thread::yield();
  }
  [[noreturn]] void Rethrow() {
    while (fail_state.load(std::memory_order_acquire) != 2) std::this_thread::yield();
    throw Error(code, error);
  }
};

struct World {
  int64_t size = 1;
  std::chrono::milliseconds timeout{30000};
  std::mutex mutex;
  std::condition_variable changed;
  std::atomic<int> sleepers{0};
  std::map<std::vector<int64_t>, std::unique_ptr<Channel>> channels;  // guarded by mutex
  std::unique_ptr<std::atomic<bool>[]> exited;
  std::atomic<uint64_t> exits{0};
  std::exception_ptr first_error;  // guarded by mutex

  void WakeSleepers() {
    if (sleepers.load() > 0) {
      std::lock_guard<std::mutex> lock(mutex);
      changed.notify_all();
    }
  }
};

// Yield, then sleep (see kYieldFor): call Pause() while the awaited state is not there.
class Backoff {
 public:
  explicit Backoff(World& world) : world_(world), start_(Clock::now()) {}
  // `wake` says whether the state a sleeper waits for has arrived (checked under the mutex,
  // after this member counted itself as a sleeper); no deadline: sleep until notified.
  template <class Wake>
  void Pause(const Wake& wake, std::optional<Clock::time_point> deadline) {
    if (Clock::now() - start_ < kYieldFor) {
      std::this_thread::yield();
      return;
    }
    std::unique_lock<std::mutex> lock(world_.mutex);
    world_.sleepers.fetch_add(1);
    if (!wake()) {
      if (deadline) {
        world_.changed.wait_until(lock, *deadline);
      } else {
        world_.changed.wait(lock);
      }
    }
    world_.sleepers.fetch_sub(1);
  }

 private:
  World& world_;
  Clock::time_point start_;
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

// Element range [begin, end) of part `k` when `count` elements are split over `n` members.
std::pair<int64_t, int64_t> Part(int64_t count, size_t n, size_t k) {
  return {count * static_cast<int64_t>(k) / static_cast<int64_t>(n),
          count * static_cast<int64_t>(k + 1) / static_cast<int64_t>(n)};
}

class LocalCommunicator final : public Communicator {
 public:
  LocalCommunicator(World& world, int64_t rank) : Communicator(rank, world.size), world_(world) {}
  std::string_view backend_name() const override { return "local"; }

 protected:
  void Execute(CollectiveCall& call) override {
    const size_t n = call.group.ranks.size();
    const size_t me = static_cast<size_t>(call.index);
    // Collectives of one group match by their sequence number on that group (MPI/NCCL order rule).
    Link& link = LinkFor(call.group.ranks);
    Channel& channel = *link.channel;
    const uint64_t seq = link.next++;
    if (channel.broken()) channel.Rethrow();
    Slot& slot = channel.slots[seq & 1];
    const uint64_t target = ((seq >> 1) + 1) * n;

    // Compiled before posting, so peers copy with no per-run cursor work of their own.
    PostedRuns runs;
    runs.send.reserve(call.send.size());
    for (const SendView& v : call.send) runs.send.emplace_back(v);
    runs.recv.reserve(call.recv.size());
    for (const RecvView& v : call.recv) runs.recv.emplace_back(v);
    slot.posted[me] = &call;
    slot.calls[me] = &call;
    slot.runs[me] = &runs;
    slot.recv_bytes[me] = 0;
    for (const RecvView& v : call.recv) slot.recv_bytes[me] += v.Count() * DTypeSize(v.dtype);
    slot.stamp[me].store(seq + 1, std::memory_order_release);
    const bool last = slot.arrived.fetch_add(1) + 1 == target;
    if (last) {
      world_.WakeSleepers();
    } else {
      AwaitArrivals(call, channel, slot, seq, target);
    }

    if (GroupRecvBytes(slot) <= kLeaderBytes) {
      if (last) {
        LeadSmall(slot);
        slot.pulled.fetch_add(n);
        world_.WakeSleepers();
      } else {
        Backoff backoff(world_);
        auto released = [&] { return slot.pulled.load() >= target; };
        while (!released()) backoff.Pause(released, std::nullopt);
      }
      if (slot.failed) throw Error(slot.code, slot.error);
      return;
    }

    // Every post stays valid until every member has pulled: the last phase below.
    // Decided from slot data every member reads alike (member 0's bytes), so that members whose
    // posts disagree (the validation fails on all of them) still take the same phases.
    const bool two_phase = call.kind == CollectiveKind::kAllReduce && n > 1 &&
                           slot.recv_bytes[0] >= kLocalTwoPhaseAllReduceBytes;
    std::exception_ptr error;
    try {
      ValidateGroupCalls(slot.posted);
      if (two_phase) {
        ReducePart(call, slot, me);
      } else {
        Pull(call, slot, runs);
      }
    } catch (...) {
      error = std::current_exception();
    }
    if (two_phase) {
      Arrive(slot.reduced, ++link.two_phase_rounds[seq & 1] * n);
      if (!error) {
        try {
          const int64_t count = call.recv[0].Count();
          const int64_t es = DTypeSize(call.dtype);
          for (size_t j = 0; j < n; ++j) {
            if (j == me) continue;
            auto [begin, end] = Part(count, n, j);
            detail::CopyRuns(slot.posted[j]->recv[0].data, slot.runs[j]->recv[0], call.recv[0].data,
                             runs.recv[0], es, begin, end);
          }
        } catch (...) {
          error = std::current_exception();
        }
      }
    }
    Arrive(slot.pulled, target);
    if (error) std::rethrow_exception(error);
  }

 private:
  struct Link {
    Channel* channel = nullptr;
    uint64_t next = 0;
    // Two-phase all_reduces run so far per slot: `reduced` only counts those rounds, and every
    // member takes the same phases in the same order, so each one derives the same target.
    uint64_t two_phase_rounds[2] = {0, 0};
  };

  Link& LinkFor(const std::vector<int64_t>& ranks) {
    auto it = links_.find(ranks);
    if (it != links_.end()) return it->second;
    std::lock_guard<std::mutex> lock(world_.mutex);
    std::unique_ptr<Channel>& channel = world_.channels[ranks];
    if (!channel) channel = std::make_unique<Channel>(ranks.size());
    return links_.emplace(ranks, Link{channel.get(), 0}).first->second;
  }

  // Counts this member into a phase that every member reaches (nobody gives up on it) and
  // waits for the others.
  void Arrive(std::atomic<uint64_t>& counter, uint64_t target) {
    if (counter.fetch_add(1) + 1 == target) {
      world_.WakeSleepers();
      return;
    }
    Backoff backoff(world_);
    auto ready = [&] { return counter.load() >= target; };
    while (!ready()) backoff.Pause(ready, std::nullopt);
  }

  // Waits until every member posted; fails (on every waiting member) when the channel breaks,
  // a missing member's thread has finished, or the timeout passes.
  void AwaitArrivals(const CollectiveCall& call, Channel& channel, Slot& slot, uint64_t seq,
                     uint64_t target) {
    const size_t n = call.group.ranks.size();
    const auto deadline = Clock::now() + world_.timeout;
    uint64_t exits_seen = ~uint64_t{0};
    auto arrived = [&] { return slot.arrived.load() >= target; };
    auto missing = [&](bool exited_only) {
      std::vector<int64_t> out;
      for (size_t i = 0; i < n; ++i) {
        if (slot.stamp[i].load(std::memory_order_acquire) == seq + 1) continue;
        int64_t r = call.group.ranks[i];
        if (!exited_only || world_.exited[static_cast<size_t>(r)].load()) out.push_back(r);
      }
      return out;
    };
    // Takes this member's post back unless the phase completed meanwhile (then it goes on).
    auto fail = [&](ErrorCode code, const std::string& message) {
      uint64_t v = slot.arrived.load(std::memory_order_acquire);
      while (v < target) {
        if (slot.arrived.compare_exchange_weak(v, v - 1, std::memory_order_acq_rel)) {
          channel.SetError(code, message);
          world_.WakeSleepers();
          channel.Rethrow();
        }
      }
    };
    auto where = [&] {
      return std::string(CollectiveKindName(call.kind)) + " on group " + call.group.ToString();
    };
    Backoff backoff(world_);
    while (!arrived()) {
      if (channel.broken()) {
        fail(ErrorCode::kTimeout, "");  // the stored error wins
        continue;
      }
      const uint64_t exits = world_.exits.load();
      if (exits != exits_seen) {
        exits_seen = exits;
        std::vector<int64_t> gone = missing(true);
        if (!gone.empty()) {
          fail(ErrorCode::kBackend, where() + ": ranks " + JoinRanks(gone) + " finished without joining it");
          continue;
        }
      }
      if (Clock::now() >= deadline) {
        fail(ErrorCode::kTimeout, where() + ": ranks " + JoinRanks(missing(false)) + " never joined within " +
                                      Seconds(world_.timeout) + " s");
        continue;
      }
      backoff.Pause([&] { return arrived() || channel.broken() || world_.exits.load() != exits_seen; },
                    deadline);
    }
  }

  static int64_t GroupRecvBytes(const Slot& slot) {
    int64_t bytes = 0;
    for (int64_t b : slot.recv_bytes) bytes += b;
    return bytes;
  }

  // Small collectives: the last member to arrive validates the posts and fills every member's
  // receive views; a failure is kept for every member to throw after the release.
  void LeadSmall(Slot& slot) {
    slot.failed = false;
    try {
      ValidateGroupCalls(slot.posted);
      for (size_t m = 0; m < slot.calls.size(); ++m) Pull(*slot.calls[m], slot, *slot.runs[m]);
    } catch (const Error& e) {
      slot.failed = true;
      slot.code = e.code();
      slot.error = e.what();
    } catch (const std::exception& e) {
      slot.failed = true;
      slot.code = ErrorCode::kBackend;
      slot.error = std::string("local backend: ") + e.what();
    } catch (...) {
      slot.failed = true;
      slot.code = ErrorCode::kBackend;
      slot.error = "local backend: a small collective failed with a non-standard exception";
    }
  }

  // The one-phase kinds: each member fills its own receive views from its peers' posts.
  void Pull(CollectiveCall& call, const Slot& slot, const PostedRuns& mine) {
    const auto& posted = slot.posted;
    const size_t n = posted.size();
    const size_t me = static_cast<size_t>(call.index);
    const int64_t es = DTypeSize(call.dtype);
    auto copy = [&](size_t from, size_t send_slot, size_t recv_slot) {
      detail::CopyRuns(posted[from]->send[send_slot].data, slot.runs[from]->send[send_slot],
                       call.recv[recv_slot].data, mine.recv[recv_slot], es, 0,
                       mine.recv[recv_slot].elements());
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
          inputs.push_back({posted[i]->send[from].data, &slot.runs[i]->send[from]});
        detail::ReduceRuns(call.dtype, call.reduction.op,
                           call.reduction.TotalDivisor(static_cast<int64_t>(n)), inputs, call.recv[0].data,
                           mine.recv[0], 0, mine.recv[0].elements());
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

  // Phase one of a large all_reduce: this member reduces its part of the elements, in group
  // order as the one-phase path does for all of them, into its own receive view; phase two
  // copies the other parts from the members that reduced them, so results stay bitwise equal.
  void ReducePart(CollectiveCall& call, const Slot& slot, size_t me) {
    const size_t n = slot.posted.size();
    auto [begin, end] = Part(call.recv[0].Count(), n, me);
    std::vector<detail::RunsInput> inputs;
    for (size_t i = 0; i < n; ++i) inputs.push_back({slot.posted[i]->send[0].data, &slot.runs[i]->send[0]});
    detail::ReduceRuns(call.dtype, call.reduction.op, call.reduction.TotalDivisor(static_cast<int64_t>(n)),
                       inputs, call.recv[0].data, slot.runs[me]->recv[0], begin, end);
  }

  World& world_;
  std::map<std::vector<int64_t>, Link> links_;
};

}  // namespace

void LocalWorld::Run(int64_t world_size, const RankFn& fn, const LocalWorldOptions& options) {
  if (world_size < 1 || world_size > (int64_t{1} << 16)) {
    throw InvalidInput("local backend: world size " + std::to_string(world_size) + " is outside [1, 65536]");
  }
  World world;
  world.size = world_size;
  world.timeout = options.timeout;
  world.exited.reset(new std::atomic<bool>[static_cast<size_t>(world_size)]);
  for (int64_t r = 0; r < world_size; ++r) world.exited[static_cast<size_t>(r)].store(false);

  auto finish = [&](int64_t rank, std::exception_ptr error) {
    {
      std::lock_guard<std::mutex> lock(world.mutex);
      if (error && !world.first_error) world.first_error = error;
    }
    world.exited[static_cast<size_t>(rank)].store(true);
    world.exits.fetch_add(1);
    world.WakeSleepers();
  };

  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(world_size));
  for (int64_t r = 0; r < world_size; ++r) {
    try {
      threads.emplace_back([&, r] {
        std::exception_ptr error;
        try {
          LocalCommunicator comm(world, r);
          fn(comm, r);
        } catch (...) {
          error = std::current_exception();
        }
        finish(r, error);
      });
    } catch (const std::exception& e) {
      // Ranks that never started count as finished so the started ones fail instead of waiting.
      for (int64_t k = r; k < world_size; ++k) {
        finish(k,
               std::make_exception_ptr(Error(ErrorCode::kBackend, "local backend: cannot start rank " +
                                                                      std::to_string(k) + ": " + e.what())));
      }
      break;
    }
  }
  for (std::thread& t : threads) t.join();
  if (world.first_error) std::rethrow_exception(world.first_error);
}

}  // namespace shardscope::engine
