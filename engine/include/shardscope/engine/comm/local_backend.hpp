#pragma once
// The `local` backend: N ranks as threads of one process, the embedded default. Every collective
// is a rendezvous of its group; once all members posted their views, each rank copies what it
// needs straight from its peers' buffers into its own (one copy per byte, no staging).

#include <chrono>
#include <cstdint>
#include <functional>

#include "shardscope/engine/comm/communicator.hpp"

namespace shardscope::engine {

/// All-reduces of at least this many bytes per rank are split on the local backend: each member
/// reduces 1/n of the elements (in group order) and stores them into every member's output,
/// moving 2 bytes per element and member (n reads, n writes) instead of n+1 when each member
/// reduces every element itself (results bitwise equal).
inline constexpr int64_t kLocalSplitAllReduceBytes = int64_t{256} << 10;

struct LocalWorldOptions {
  /// A collective that not every member of its group joins within this time fails on every
  /// waiting member with Error(kTimeout) naming the missing ranks.
  std::chrono::milliseconds timeout{30000};
};

/// Runs N ranks as threads sharing one rendezvous table.
class LocalWorld {
 public:
  using RankFn = std::function<void(Communicator& comm, int64_t rank)>;

  /// Runs `fn` on `world_size` threads (rank r gets a Communicator of rank r) and joins them.
  /// Rethrows the first error any rank raised (in time order), after every thread finished.
  /// A rank that returns or fails makes every collective still waiting for it fail at once with
  /// Error(kBackend) naming it, so nothing hangs. Throws Error(kInvalidInput) for world_size < 1.
  static void Run(int64_t world_size, const RankFn& fn, const LocalWorldOptions& options = {});
};

}  // namespace shardscope::engine
