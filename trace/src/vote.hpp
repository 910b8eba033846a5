#pragma once
// Private to the cross-rank check: the majority vote among ranks that names the deviants.

#include <cstdint>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

namespace shardscope::trace::detail {

/// The most common value among (rank, value) pairs given in rank order; a tie goes to the value
/// of the lowest rank. Holds the majority value, the ranks that agree and those that deviate.
struct Vote {
  std::string majority;
  std::vector<int64_t> agree, deviants;
};

Vote Majority(const std::vector<std::pair<int64_t, std::string>>& values);

/// Whether every item is `same` as the first. `same` must hold only for items whose texts are
/// equal: then a vote on their texts would find no deviant, and the texts need not be built.
template <typename Range, typename Same>
bool AllSame(const Range& items, Same same) {
  for (const auto& item : items)
    if (!same(*std::begin(items), item)) return false;
  return true;
}

/// "rank 1 has 'X'; rank 3 has 'Z'; ranks 0, 2 have 'Y'".
std::string VoteText(const std::vector<std::pair<int64_t, std::string>>& values, const Vote& vote);

}  // namespace shardscope::trace::detail
