#include "comm/rendezvous.hpp"

#include <cstdio>
#include <thread>
#include <utility>

namespace shardscope::engine::detail {
namespace {

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

}  // namespace

RendezvousSlot::RendezvousSlot(size_t n)
    : posted(n, nullptr),
      calls(n, nullptr),
      payloads(n, nullptr),
      recv_bytes(n, 0),
      stamp(new std::atomic<uint64_t>[n]) {
  for (size_t i = 0; i < n; ++i) stamp[i].store(0, std::memory_order_relaxed);
}

int64_t RendezvousSlot::GroupRecvBytes() const {
  int64_t bytes = 0;
  for (int64_t b : recv_bytes) bytes += b;
  return bytes;
}

void ReceiveShapes(const RendezvousSlot& slot, CollectiveCall& call) {
  const size_t n = slot.posted.size(), me = static_cast<size_t>(call.index);
  call.shapes_recv->resize(n);
  for (size_t i = 0; i < n; ++i) (*call.shapes_recv)[i] = slot.posted[i]->shapes_send[me];
}

void RendezvousChannel::SetError(ErrorCode c, const std::string& message) {
  int expected = 0;
  if (fail_state.compare_exchange_strong(expected, 1)) {
    code = c;
    error = message;
    fail_state.store(2, std::memory_order_release);
    return;
  }
  while (fail_state.load(std::memory_order_acquire) != 2) std::this_thread::yield();
}

void RendezvousChannel::Rethrow() {
  while (fail_state.load(std::memory_order_acquire) != 2) std::this_thread::yield();
  throw Error(code, error);
}

RendezvousWorld::RendezvousWorld(int64_t size, std::chrono::milliseconds timeout, std::string backend)
    : size_(size),
      timeout_(timeout),
      backend_(std::move(backend)),
      exited_(new std::atomic<bool>[static_cast<size_t>(size)]) {
  for (int64_t r = 0; r < size; ++r) exited_[static_cast<size_t>(r)].store(false);
}

RendezvousChannel& RendezvousWorld::ChannelFor(const std::vector<int64_t>& ranks) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::unique_ptr<RendezvousChannel>& channel = channels_[ranks];
  if (!channel) channel = std::make_unique<RendezvousChannel>(ranks.size());
  return *channel;
}

// Dekker-style: a sleeper counts itself (sequentially consistent), then re-checks under the
// mutex; a waker changes the state, then reads the count. One of the two sees the other.
void RendezvousWorld::WakeSleepers() {
  if (sleepers_.load() > 0) {
    std::lock_guard<std::mutex> lock(mutex_);
    changed_.notify_all();
  }
}

void RendezvousWorld::Finish(int64_t rank, std::exception_ptr error) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (error && !first_error_) first_error_ = error;
  }
  exited_[static_cast<size_t>(rank)].store(true);
  exits_.fetch_add(1);
  WakeSleepers();
}

void RendezvousWorld::Run(const std::function<void(int64_t rank)>& body) {
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(size_));
  for (int64_t r = 0; r < size_; ++r) {
    try {
      threads.emplace_back([&, r] {
        std::exception_ptr error;
        try {
          body(r);
        } catch (...) {
          error = std::current_exception();
        }
        Finish(r, error);
      });
    } catch (const std::exception& e) {
      // Ranks that never started count as finished so the started ones fail instead of waiting.
      for (int64_t k = r; k < size_; ++k) {
        Finish(k,
               std::make_exception_ptr(Error(ErrorCode::kBackend, backend_ + ": cannot start rank " +
                                                                      std::to_string(k) + ": " + e.what())));
      }
      break;
    }
  }
  for (std::thread& t : threads) t.join();
  if (first_error_) std::rethrow_exception(first_error_);
}

Rendezvous::Round Rendezvous::Post(CollectiveCall& call, const void* payload) {
  const size_t n = call.group.ranks.size();
  const size_t me = static_cast<size_t>(call.index);
  auto it = links_.find(call.group.ranks);
  if (it == links_.end())
    it = links_.emplace(call.group.ranks, Link{&world_.ChannelFor(call.group.ranks), 0}).first;
  Link& link = it->second;
  Round round;
  round.channel = link.channel;
  round.seq = link.next++;
  round.n = n;
  if (round.channel->broken()) round.channel->Rethrow();
  round.slot = &round.channel->slots[round.seq & 1];
  round.target = ((round.seq >> 1) + 1) * n;

  RendezvousSlot& slot = *round.slot;
  slot.posted[me] = &call;
  slot.calls[me] = &call;
  slot.payloads[me] = payload;
  slot.recv_bytes[me] = 0;
  for (const RecvView& v : call.recv) slot.recv_bytes[me] += v.Count() * DTypeSize(v.dtype);
  slot.stamp[me].store(round.seq + 1, std::memory_order_release);
  round.last = slot.arrived.fetch_add(1) + 1 == round.target;
  if (round.last) {
    world_.WakeSleepers();
  } else {
    AwaitArrivals(call, round);
  }
  return round;
}

void Rendezvous::Finish(const Round& round) {
  std::atomic<uint64_t>& counter = round.slot->pulled;
  if (counter.fetch_add(1) + 1 == round.target) {
    round.slot->claimed.store(0);
    world_.WakeSleepers();
    return;
  }
  RendezvousWorld::Backoff backoff(world_);
  auto ready = [&] { return counter.load() >= round.target; };
  while (!ready()) backoff.Pause(ready, std::nullopt);
}

void Rendezvous::Lead(const Round& round, const std::function<void()>& work) {
  RendezvousSlot& slot = *round.slot;
  if (round.last) {
    slot.failed = false;
    try {
      work();
    } catch (const Error& e) {
      slot.failed = true;
      slot.code = e.code();
      slot.error = e.what();
    } catch (const std::exception& e) {
      slot.failed = true;
      slot.code = ErrorCode::kBackend;
      slot.error = world_.backend() + ": " + e.what();
    } catch (...) {
      slot.failed = true;
      slot.code = ErrorCode::kBackend;
      slot.error = world_.backend() + ": a small collective failed with a non-standard exception";
    }
    slot.pulled.fetch_add(round.n);
    world_.WakeSleepers();
  } else {
    RendezvousWorld::Backoff backoff(world_);
    auto released = [&] { return slot.pulled.load() >= round.target; };
    while (!released()) backoff.Pause(released, std::nullopt);
  }
  if (slot.failed) throw Error(slot.code, slot.error);
}

// Waits until every member posted; fails (on every waiting member) when the channel breaks, a
// missing member's thread has finished, or the timeout passes.
void Rendezvous::AwaitArrivals(const CollectiveCall& call, const Round& round) {
  RendezvousChannel& channel = *round.channel;
  RendezvousSlot& slot = *round.slot;
  const auto deadline = RendezvousClock::now() + world_.timeout();
  uint64_t exits_seen = ~uint64_t{0};
  auto arrived = [&] { return slot.arrived.load() >= round.target; };
  auto missing = [&](bool exited_only) {
    std::vector<int64_t> out;
    for (size_t i = 0; i < round.n; ++i) {
      if (slot.stamp[i].load(std::memory_order_acquire) == round.seq + 1) continue;
      int64_t r = call.group.ranks[i];
      if (!exited_only || world_.Exited(r)) out.push_back(r);
    }
    return out;
  };
  // Takes this member's post back unless the phase completed meanwhile (then it goes on).
  auto fail = [&](ErrorCode code, const std::string& message) {
    uint64_t v = slot.arrived.load(std::memory_order_acquire);
    while (v < round.target) {
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
  RendezvousWorld::Backoff backoff(world_);
  while (!arrived()) {
    if (channel.broken()) {
      fail(ErrorCode::kTimeout, "");  // the stored error wins
      continue;
    }
    const uint64_t exits = world_.exits();
    if (exits != exits_seen) {
      exits_seen = exits;
      std::vector<int64_t> gone = missing(true);
      if (!gone.empty()) {
        fail(ErrorCode::kBackend, where() + ": ranks " + JoinRanks(gone) + " finished without joining it");
        continue;
      }
    }
    if (RendezvousClock::now() >= deadline) {
      fail(ErrorCode::kTimeout, where() + ": ranks " + JoinRanks(missing(false)) + " never joined within " +
                                    Seconds(world_.timeout()) + " s");
      continue;
    }
    backoff.Pause([&] { return arrived() || channel.broken() || world_.exits() != exits_seen; }, deadline);
  }
}

}  // namespace shardscope::engine::detail
