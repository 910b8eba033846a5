#pragma once
// Private: the cross-rank check's rules for the byte counts of one collective call (check.cpp
// pairs the calls; these decide whether their sizes agree).

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "collective_match.hpp"
#include "shardscope/trace/check.hpp"

namespace shardscope::trace::detail {

/// A size rule that one call breaks: the mismatch's class, culprits, the collective it points at
/// and the message.
struct SizeFinding {
  MismatchClass kind;
  std::vector<int64_t> culprits;
  const Collective* at = nullptr;
  std::string message;
};

/// One call's collective on each rank that has one, (rank, collective) in rank order.
using CallAt = std::vector<std::pair<int64_t, const Collective*>>;

/// Checks one call of group `g` (`at`: ranks with one group order, which holds them all), rule by
/// rule: each kind's own rule on every rank, equal sizes across ranks (all_reduce, reduce_scatter),
/// all_to_all totals, and that what rank i sends to j is what j receives from i. Returns the first
/// rule broken (its message says what breaks it; the caller names the call in front), or nullopt.
std::optional<SizeFinding> CheckCallSizes(const GroupCalls& g, const CallAt& at);

}  // namespace shardscope::trace::detail
