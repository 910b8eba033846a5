#pragma once
// A thread-safe cache of plans keyed by everything that changes a plan.

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "shardscope/engine/core/spec.hpp"
#include "shardscope/engine/plan/plan.hpp"
#include "shardscope/engine/plan/plan_options.hpp"

namespace shardscope::engine {

/// Thread-safe cache of MakePlan results keyed by everything that changes a plan: mesh (with
/// flattened sub-meshes), placements, orders, shape, dtype, chunking, explicit sizes, rank and
/// options. ShardTensor hit collisions hashing fewer fields.
class PlanCache {
 public:
  /// Returns the cached plan or plans (MakePlan, outside the lock) and inserts. The plan is
  /// shared and immutable; it outlives Clear. MakePlan errors propagate and are not cached.
  std::shared_ptr<const Plan> Get(const TensorSpec& src, const TensorSpec& dst, int64_t rank,
                                  const PlanOptions& options);
  /// Number of cached plans.
  size_t size() const;
  /// Lookup counters since construction (not reset by Clear).
  uint64_t hits() const { return hits_.load(std::memory_order_relaxed); }
  uint64_t misses() const { return misses_.load(std::memory_order_relaxed); }
  /// Drops every cached plan.
  void Clear();

 private:
  struct Entry {
    /// Lossless word encoding of (src, dst, rank, options): equal words <=> equal keys.
    std::vector<uint64_t> key;
    std::shared_ptr<const Plan> plan;
  };
  mutable std::mutex mutex_;
  std::unordered_multimap<uint64_t, Entry> entries_;
  std::atomic<uint64_t> hits_{0};
  std::atomic<uint64_t> misses_{0};
};

/// Hash of every plan-relevant field (exposed for tests).
uint64_t PlanKeyHash(const TensorSpec& src, const TensorSpec& dst, int64_t rank, const PlanOptions& options);

}  // namespace shardscope::engine
