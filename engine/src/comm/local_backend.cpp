#include "shardscope/engine/comm/local_backend.hpp"

#include <condition_variable>
#include <cstdio>
#include <exception>
#include <map>
#include <mutex>
#include <thread>

#include "comm/view_ops.hpp"
#include "shardscope/error.hpp"

namespace shardscope::engine {
namespace {

// One collective instance of one group: the members' posts, and counters for the two phases
// (everyone posted -> everyone pulled) so no sender's buffer goes away while a peer reads it.
struct Slot {
  std::vector<const CollectiveCall*> posted;
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
  std::chrono::milliseconds timeout{30000};
  std::mutex mutex;
  std::condition_variable changed;
  std::map<SlotKey, Slot> slots;  // std::map: references stay valid while other slots come and go
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

void Pull(CollectiveCall& call, const std::vector<const CollectiveCall*>& posted) {
  const size_t n = posted.size();
  const size_t me = static_cast<size_t>(call.index);
  switch (call.kind) {
    case CollectiveKind::kAllGather:
      for (size_t i = 0; i < n; ++i) detail::CopyView(posted[i]->send[0], call.recv[i]);
      break;
    case CollectiveKind::kAllToAll:
      for (size_t i = 0; i < n; ++i) detail::CopyView(posted[i]->send[me], call.recv[i]);
      break;
    case CollectiveKind::kReduceScatter:
    case CollectiveKind::kAllReduce: {
      const RecvView& out = call.recv[0];
      if (out.Count() == 0) break;
      // Each rank reduces only its own output, reading every member's contribution in group
      // order, so all members of an all_reduce produce bitwise-identical results.
      detail::Accumulator acc(call.dtype, call.reduction.op, out.Count());
      const size_t slot = call.kind == CollectiveKind::kAllReduce ? 0 : me;
      for (size_t i = 0; i < n; ++i) acc.Add(posted[i]->send[slot]);
      const int64_t divisor = call.reduction.TotalDivisor(static_cast<int64_t>(n));
      acc.Store(out, divisor);
      break;
    }
    case CollectiveKind::kBroadcast:
      detail::CopyView(posted[static_cast<size_t>(call.root)]->send[0], call.recv[0]);
      break;
    case CollectiveKind::kBarrier:
      break;
    case CollectiveKind::kShapeExchange:
      call.shapes_recv->resize(n);
      for (size_t i = 0; i < n; ++i) (*call.shapes_recv)[i] = posted[i]->shapes_send[me];
      break;
  }
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
    SlotKey key{call.group.ranks, sequence_[call.group.ranks]++};
    const std::string where =
        std::string(CollectiveKindName(call.kind)) + " on group " + call.group.ToString();

    std::unique_lock<std::mutex> lock(world_.mutex);
    Slot& slot = world_.slots[key];
    if (slot.posted.empty()) slot.posted.assign(n, nullptr);
    if (slot.failed) throw Error(slot.code, slot.error);
    slot.posted[me] = &call;
    ++slot.posted_count;
    world_.changed.notify_all();

    auto fail = [&](ErrorCode code, const std::string& message) {
      if (!slot.failed) {
        slot.failed = true;
        slot.code = code;
        slot.error = message;
      }
      slot.posted[me] = nullptr;
      --slot.posted_count;
      world_.changed.notify_all();
      throw Error(slot.code, slot.error);
    };
    const auto deadline = std::chrono::steady_clock::now() + world_.timeout;
    while (slot.posted_count < n) {
      if (slot.failed) fail(slot.code, slot.error);
      std::vector<int64_t> missing, gone;
      for (size_t i = 0; i < n; ++i) {
        if (slot.posted[i]) continue;
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

    // Every post stays valid until every member has pulled: the second phase below.
    std::exception_ptr error;
    try {
      ValidateGroupCalls(slot.posted);
      Pull(call, slot.posted);
    } catch (...) {
      error = std::current_exception();
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
  World& world_;
  std::map<std::vector<int64_t>, int64_t> sequence_;
};

}  // namespace

void LocalWorld::Run(int64_t world_size, const RankFn& fn, const LocalWorldOptions& options) {
  if (world_size < 1 || world_size > (int64_t{1} << 16)) {
    throw InvalidInput("local backend: world size " + std::to_string(world_size) + " is outside [1, 65536]");
  }
  World world;
  world.size = world_size;
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
