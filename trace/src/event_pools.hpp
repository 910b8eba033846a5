#pragma once
// The reader's per-file pools that make the lists of one event share their buffers with equal
// lists of earlier events (shared_vec.hpp): a rank repeats one group, one per-peer byte list and
// one plan over and over.

#include "shardscope/trace/events.hpp"
#include "shardscope/trace/shared_vec.hpp"

namespace shardscope::trace::detail {

class EventPools {
 public:
  /// Replaces every SharedVec field of `event` by an equal one seen before, when there is one.
  void Intern(Event& event);

 private:
  InternPool<int64_t> ints_;
  InternPool<std::string> strs_;
  InternPool<PlanStep> plans_;
  InternPool<SkippedMerge> merges_;
};

}  // namespace shardscope::trace::detail
