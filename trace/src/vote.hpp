#pragma once
// Private to the cross-rank check: the majority vote among ranks that names the deviants.

#include <cstdint>
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

/// "rank 1 has 'X'; rank 3 has 'Z'; ranks 0, 2 have 'Y'".
std::string VoteText(const std::vector<std::pair<int64_t, std::string>>& values, const Vote& vote);

}  // namespace shardscope::trace::detail
