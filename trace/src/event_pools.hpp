#pragma once
// The reader's pools that make the lists of one event share their buffers with equal lists seen
// before (shared_vec.hpp): a rank repeats one group, one per-peer byte list and one plan over and
// over (EventPools, one per file, no lock), and the ranks of a run repeat each other's lists
// (SharedPools, one per load, shared by the reading threads). Ops of one kind repeat their
// candidate strategies and the placements and shapes of their operands; imported plans repeat
// their recorded collectives; Flight Recorder entries repeat their shapes (FlightShape).

#include <cstddef>
#include <mutex>
#include <vector>

#include "shardscope/trace/events.hpp"
#include "shardscope/trace/shared_value.hpp"
#include "shardscope/trace/shared_vec.hpp"

namespace shardscope::trace::detail {

/// Equal values of every file of one load: one buffer each, for H a SharedVec<T> (lists) or a
/// Shared<FlightShape>. Thread-safe.
template <typename H>
class SharedPool {
 public:
  /// Replaces v by an equal value seen before in any file, or remembers v.
  void Intern(H& v);

 private:
  struct Slot {
    size_t hash = 0;
    H list;  // no buffer (an empty list): a free slot
  };
  void Grow();

  std::mutex mutex_;
  // Open addressing by content hash, at most half full: a node-based multimap spent more on
  // finding its buckets than on comparing the lists (an op's inputs name its redistributes, so
  // an imported trace has one input list per op).
  std::vector<Slot> slots_;
  size_t used_ = 0;
};

template <typename T>
using SharedListPool = SharedPool<SharedVec<T>>;
using FlightShapePool = SharedPool<Shared<FlightShape>>;
using CollectiveShapePool = SharedPool<Shared<CollectiveShape>>;
using OpShapePool = SharedPool<Shared<OpShape>>;
using RedistributeShapePool = SharedPool<Shared<RedistributeShape>>;
using ImportedPlanPool = SharedPool<Shared<ImportedPlan>>;

struct SharedPools {
  SharedListPool<int64_t> ints;
  SharedListPool<std::string> strs;
  SharedListPool<PlanStep> plans;
  SharedListPool<SkippedMerge> merges;
  SharedListPool<OpStrategy> strategies;
  SharedListPool<OpInput> inputs;
  SharedListPool<OpOutput> outputs;
  SharedListPool<ImportedCollective> imported;
  FlightShapePool flights;
  CollectiveShapePool collectives;
  OpShapePool ops;
  RedistributeShapePool redistributes;
  ImportedPlanPool imported_plans;
};

/// Makes equal shapes (a FlightShape, a CollectiveShape) share one buffer: a shape equal to one of
/// the last few seen becomes that one, any other the one of `shared` (when given) that equals it.
/// Not thread-safe: one per reading thread or file.
template <typename T>
class RecentShapes {
 public:
  /// `shared`, when given, must outlive this object.
  explicit RecentShapes(SharedPool<Shared<T>>* shared = nullptr) : shared_(shared) {}
  void Intern(Shared<T>& shape);

 private:
  static constexpr size_t kRecent = 16;
  SharedPool<Shared<T>>* shared_;
  std::vector<Shared<T>> recent_;  // most recently used first
};

class EventPools {
 public:
  /// `shared`, when given, must outlive this object.
  explicit EventPools(SharedPools* shared = nullptr)
      : shared_(shared),
        shapes_(shared != nullptr ? &shared->flights : nullptr),
        collective_shapes_(shared != nullptr ? &shared->collectives : nullptr),
        op_shapes_(shared != nullptr ? &shared->ops : nullptr),
        redistribute_shapes_(shared != nullptr ? &shared->redistributes : nullptr),
        imported_plans_(shared != nullptr ? &shared->imported_plans : nullptr) {}
  /// Replaces every SharedVec field of `event` by an equal one seen before, when there is one.
  void Intern(Event& event);

 private:
  template <typename T>
  void One(InternPool<T>& local, SharedListPool<T>* shared, SharedVec<T>& v);

  SharedPools* shared_;
  InternPool<int64_t> ints_;
  InternPool<std::string> strs_;
  InternPool<PlanStep> plans_;
  InternPool<SkippedMerge> merges_;
  InternPool<OpStrategy> strategies_;
  InternPool<OpInput> inputs_;
  InternPool<OpOutput> outputs_;
  InternPool<ImportedCollective> imported_;
  RecentShapes<FlightShape> shapes_;
  RecentShapes<CollectiveShape> collective_shapes_;
  RecentShapes<OpShape> op_shapes_;
  RecentShapes<RedistributeShape> redistribute_shapes_;
  RecentShapes<ImportedPlan> imported_plans_;
};

}  // namespace shardscope::trace::detail
