#pragma once
// The rendezvous of ranks that are threads of one process, shared by the `local` backend
// (comm/local_backend.cpp) and the `cuda` backend (comm/nccl/cuda_local_backend.cpp): the rank
// threads and what happens when one finishes, the per-group channels whose slots carry the
// members' posts, the wait for every member to post (with its deadline and the "never joined" /
// "finished without joining it" failures), and the last phase that keeps every post valid until
// every member has read what it needs from it (docs/local-backend.md).

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "shardscope/engine/comm/communicator.hpp"
#include "shardscope/error.hpp"

namespace shardscope::engine::detail {

using RendezvousClock = std::chrono::steady_clock;

/// One of a channel's two slots. Sequence number s of a group uses slot s % 2 in round s / 2; the
/// counters only grow, so round r of a phase is complete at (r + 1) * n. Two slots suffice: a
/// member reaches s + 2 only after every member finished s + 1, hence after every member left s.
struct RendezvousSlot {
  explicit RendezvousSlot(size_t n);
  /// Member i's post, written before its arrival and read by anyone after all arrived.
  std::vector<const CollectiveCall*> posted;
  std::vector<CollectiveCall*> calls;  ///< the same posts, for a member that fills others' views
  /// What the backend publishes beside each post (the local backend's compiled runs, the cuda
  /// backend's device staging); the backend knows the type.
  std::vector<const void*> payloads;
  /// Per member: the bytes of its receive views. Kept in the slot, not in the post, because a
  /// slow member may read them after the posts are gone (a leader released the others).
  std::vector<int64_t> recv_bytes;
  /// A failure recorded by the member that did everyone's work (Rendezvous::Lead), thrown by
  /// every member after the release.
  bool failed = false;
  ErrorCode code = ErrorCode::kInternal;
  std::string error;
  std::unique_ptr<std::atomic<uint64_t>[]>
      stamp;  ///< per member: 1 + the sequence number it last posted here
  // The counters every member writes, each on a cache line of its own (and off the lines of
  // the fields above, which members only read during a round).
  alignas(64) std::atomic<uint64_t> arrived{0};
  alignas(64) std::atomic<uint64_t> pulled{0};
  /// Work items of this round claimed so far, for backends whose members share the round's work
  /// (the local backend's large collectives). Back to 0 when the round is finished: the member
  /// that completes the last phase resets it before it posts again, and nobody posts on this slot
  /// again before every member has arrived at the next round.
  alignas(64) std::atomic<uint64_t> claimed{0};

  /// The bytes of every member's receive views together.
  int64_t GroupRecvBytes() const;
};

/// A shape exchange's result for member `call.index`, read from the round's posts: what every
/// member sent to it, in group order (the thread backends' kShapeExchange).
void ReceiveShapes(const RendezvousSlot& slot, CollectiveCall& call);

/// The rendezvous of one group (its ranks in group order), shared by the members. After a member
/// gives up on a collective (timeout, a peer that finished) the channel is broken: every later
/// collective on the group fails at once with the same error.
struct RendezvousChannel {
  explicit RendezvousChannel(size_t n) : size(n), slots{RendezvousSlot(n), RendezvousSlot(n)} {}
  size_t size;
  RendezvousSlot slots[2];
  std::atomic<int> fail_state{0};  // 0 ok, 1 being written, 2 code and error readable
  ErrorCode code = ErrorCode::kTimeout;
  std::string error;

  bool broken() const { return fail_state.load() != 0; }
  /// First failure wins; returns once the winning error is readable.
  void SetError(ErrorCode c, const std::string& message);
  [[noreturn]] void Rethrow();
};

/// How long a waiting member yields before it sleeps (docs/local-backend.md, "Wake-up strategy").
/// No pause-instruction spin: on the 2-core VMs this was measured on, a peer often shares the
/// waiter's core (other processes hold the other one), and every microsecond of spinning added two
/// to a 2-rank barrier's median (3 us without, 23 us with a 10 us spin), while a yield hands the
/// core over at once and costs about a system call when the core is otherwise idle.
inline constexpr auto kYieldFor = std::chrono::microseconds(500);

/// The ranks of one process and their channels. Run starts the rank threads; a rank that returns
/// or throws counts as finished, which fails every collective still waiting for it.
class RendezvousWorld {
 public:
  /// `backend` names the backend in messages ("local backend", "cuda backend").
  RendezvousWorld(int64_t size, std::chrono::milliseconds timeout, std::string backend);

  int64_t size() const { return size_; }
  std::chrono::milliseconds timeout() const { return timeout_; }

  /// Runs `body(rank)` on `size` threads and joins them; rethrows the first error a rank raised
  /// (in time order). Ranks that cannot be started count as finished with an error ("local
  /// backend: cannot start rank 3: ...").
  void Run(const std::function<void(int64_t rank)>& body);
  const std::string& backend() const { return backend_; }

  /// The channel of `ranks` (created on first use; lives as long as the world).
  RendezvousChannel& ChannelFor(const std::vector<int64_t>& ranks);
  bool Exited(int64_t rank) const { return exited_[static_cast<size_t>(rank)].load(); }
  uint64_t exits() const { return exits_.load(); }

  /// Notifies sleeping members, if any (see Backoff).
  void WakeSleepers();

  /// Yield, then sleep (docs/local-backend.md, "Wake-up strategy"): call Pause() while the awaited
  /// state is not there.
  class Backoff {
   public:
    explicit Backoff(RendezvousWorld& world) : world_(world), start_(RendezvousClock::now()) {}
    /// `wake` says whether the state a sleeper waits for has arrived (checked under the mutex,
    /// after this member counted itself as a sleeper); no deadline: sleep until notified.
    template <class Wake>
    void Pause(const Wake& wake, std::optional<RendezvousClock::time_point> deadline) {
      if (RendezvousClock::now() - start_ < kYieldFor) {
        std::this_thread::yield();
        return;
      }
      std::unique_lock<std::mutex> lock(world_.mutex_);
      world_.sleepers_.fetch_add(1);
      if (!wake()) {
        if (deadline) {
          world_.changed_.wait_until(lock, *deadline);
        } else {
          world_.changed_.wait(lock);
        }
      }
      world_.sleepers_.fetch_sub(1);
    }

   private:
    RendezvousWorld& world_;
    RendezvousClock::time_point start_;
  };

 private:
  void Finish(int64_t rank, std::exception_ptr error);

  int64_t size_ = 1;
  std::chrono::milliseconds timeout_;
  std::string backend_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::atomic<int> sleepers_{0};
  std::map<std::vector<int64_t>, std::unique_ptr<RendezvousChannel>> channels_;  // guarded by mutex_
  std::unique_ptr<std::atomic<bool>[]> exited_;
  std::atomic<uint64_t> exits_{0};
  std::exception_ptr first_error_;  // guarded by mutex_
};

/// One rank's side of the rendezvous: the groups it joined and how many collectives it ran on each
/// (collectives of one group match by their sequence number on it: the MPI/NCCL order rule).
class Rendezvous {
 public:
  explicit Rendezvous(RendezvousWorld& world) : world_(world) {}

  /// One collective on one slot, as seen by one member.
  struct Round {
    RendezvousChannel* channel = nullptr;
    RendezvousSlot* slot = nullptr;
    uint64_t seq = 0;
    uint64_t target = 0;  ///< a phase counter of this round is complete at this value
    size_t n = 0;
    bool last = false;  ///< this member completed the arrivals
  };

  /// Publishes `call` (and `payload` beside it) on its group's next slot and waits until every
  /// member posted. Throws the group's error when it is broken, and fails on every waiting member
  /// (taking this member's post back, breaking the group) when the timeout passes or a missing
  /// member's thread has finished.
  Round Post(CollectiveCall& call, const void* payload);

  /// Counts this member into the round's last phase and waits until every member did: the posts
  /// stay valid until then.
  void Finish(const Round& round);

  /// Small collectives: the last member to arrive (round.last) calls `work` for everyone, records
  /// its failure in the slot and releases the others, which wait here; every member then throws
  /// that failure. One rendezvous per collective.
  void Lead(const Round& round, const std::function<void()>& work);

 private:
  struct Link {
    RendezvousChannel* channel = nullptr;
    uint64_t next = 0;
  };

  void AwaitArrivals(const CollectiveCall& call, const Round& round);

  RendezvousWorld& world_;
  std::map<std::vector<int64_t>, Link> links_;
};

}  // namespace shardscope::engine::detail
