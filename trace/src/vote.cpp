#include "vote.hpp"

#include <algorithm>

#include "collective_match.hpp"

namespace shardscope::trace::detail {

Vote Majority(const std::vector<std::pair<int64_t, std::string>>& values) {
  std::vector<std::pair<std::string, int64_t>> counts;
  for (const auto& [rank, v] : values) {
    auto it = std::find_if(counts.begin(), counts.end(), [&](const auto& c) { return c.first == v; });
    if (it == counts.end())
      counts.emplace_back(v, 1);
    else
      ++it->second;
  }
  Vote vote;
  int64_t best = -1;
  for (const auto& [v, n] : counts) {
    if (n > best) {
      best = n;
      vote.majority = v;
    }
  }
  for (const auto& [rank, v] : values) (v == vote.majority ? vote.agree : vote.deviants).push_back(rank);
  return vote;
}

std::string VoteText(const std::vector<std::pair<int64_t, std::string>>& values, const Vote& vote) {
  std::string out;
  for (const auto& [rank, v] : values) {
    if (v != vote.majority) out += "rank " + std::to_string(rank) + " has '" + v + "'; ";
  }
  out += RanksPhrase(vote.agree) + (vote.agree.size() == 1 ? " has '" : " have '") + vote.majority + "'";
  return out;
}

}  // namespace shardscope::trace::detail
