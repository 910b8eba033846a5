#include "collective_sizes.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <stdexcept>

#include "vote.hpp"

namespace shardscope::trace::detail {

namespace {

constexpr size_t kNotInOrder = std::numeric_limits<size_t>::max();

// One call's collectives by rank, and where each rank stands in the group's order.
struct CallSizes {
  const GroupCalls& g;
  const CallAt& at;
  const Collective& ref;
  size_t n;
  std::vector<size_t> index;  ///< aligned with `at`

  // Every rank of `at` stands in the order: the reader checks that a collective's group holds its
  // rank, and the ranks' group orders were found equal before. A model made by hand may break that.
  size_t Pos(size_t k) const {
    if (index[k] == kNotInOrder)
      throw std::out_of_range("rank " + std::to_string(at[k].first) + " is not in its group's order");
    return index[k];
  }
};

// The ranks involved in the most pairwise disagreements (all tied ones).
std::vector<int64_t> PairwiseCulprits(const CallSizes& c) {
  std::map<int64_t, int64_t> count;
  for (size_t a = 0; a < c.at.size(); ++a) {
    for (size_t b = 0; b < c.at.size(); ++b) {
      const auto& [i, ci] = c.at[a];
      const auto& [j, cj] = c.at[b];
      if (i != j && ci->bytes_sent()[c.Pos(b)] != cj->bytes_recv()[c.Pos(a)]) {
        ++count[i];
        ++count[j];
      }
    }
  }
  int64_t best = 0;
  for (const auto& [r, k] : count) best = std::max(best, k);
  std::vector<int64_t> out;
  for (const auto& [r, k] : count)
    if (k == best && best > 0) out.push_back(r);
  return out;
}

bool PeersEqual(const std::vector<int64_t>& v, size_t self) {
  std::optional<int64_t> first;
  for (size_t k = 0; k < v.size(); ++k) {
    if (k == self) continue;
    if (first && v[k] != *first) return false;
    first = v[k];
  }
  return true;
}

std::optional<SizeFinding> KindRule(const CallSizes& c) {
  // The kind's own rule on each rank: an all_gather sends its one input to every peer, a
  // reduce_scatter receives its one output chunk from every peer, an all_reduce does both.
  for (size_t k = 0; k < c.at.size(); ++k) {
    const auto& [rank, col] = c.at[k];
    const size_t self = c.Pos(k);
    std::string bad;
    if ((col->kind() == "all_gather" || col->kind() == "all_reduce") && !PeersEqual(col->bytes_sent(), self))
      bad = "sends different byte counts to its peers " + FormatInts(col->bytes_sent()) + " in one " +
            col->kind();
    else if ((col->kind() == "reduce_scatter" || col->kind() == "all_reduce") &&
             !PeersEqual(col->bytes_recv(), self))
      bad = "receives different byte counts from its peers " + FormatInts(col->bytes_recv()) + " in one " +
            col->kind();
    else if (col->kind() == "all_reduce" && c.n > 1 &&
             col->bytes_sent()[(self + 1) % c.n] != col->bytes_recv()[(self + 1) % c.n])
      bad = "sends " + std::to_string(col->bytes_sent()[(self + 1) % c.n]) + " B but receives " +
            std::to_string(col->bytes_recv()[(self + 1) % c.n]) +
            " B per peer in an all_reduce (in must equal out)";
    if (!bad.empty()) {
      return SizeFinding{
          MismatchClass::kSizeOrSyntax, {rank}, col, "rank " + std::to_string(rank) + " " + bad};
    }
  }
  return std::nullopt;
}

std::optional<SizeFinding> SameSizeAcrossRanks(const CallSizes& c) {
  // Across ranks: every all_reduce member moves the same size; every reduce_scatter member
  // reduces the same input (its chunks sent plus its own output chunk: in = out x group when even).
  if (c.n > 1 && (c.ref.kind() == "all_reduce" || c.ref.kind() == "reduce_scatter")) {
    auto size_of = [&](size_t k) {
      const Collective& col = *c.at[k].second;
      const size_t self = c.Pos(k);
      const int64_t peer_recv = col.bytes_recv()[(self + 1) % c.n];
      return c.ref.kind() == "all_reduce" ? col.bytes_sent()[(self + 1) % c.n]
                                          : SumBytes(col.bytes_sent()) - col.bytes_sent()[self] + peer_recv;
    };
    // Equal sizes read alike: the texts are voted on only where the sizes differ.
    bool alike = true;
    const int64_t first = size_of(0);
    for (size_t k = 1; k < c.at.size() && alike; ++k) alike = size_of(k) == first;
    if (alike) return std::nullopt;
    std::vector<std::pair<int64_t, std::string>> values;
    for (size_t k = 0; k < c.at.size(); ++k)
      values.emplace_back(c.at[k].first, std::to_string(size_of(k)) + " B");
    Vote vote = Majority(values);
    if (!vote.deviants.empty()) {
      std::string noun = c.ref.kind() == "all_reduce" ? "all_reduce size" : "reduce_scatter input size";
      return SizeFinding{MismatchClass::kSizeOrSyntax, vote.deviants, &c.ref,
                         noun + " differs: " + VoteText(values, vote)};
    }
  }
  return std::nullopt;
}

std::optional<SizeFinding> AllToAllTotals(const CallSizes& c) {
  // all_to_all totals (Flight Recorder's error case 2), only decidable with every member present.
  if (c.ref.kind() == "all_to_all" && c.at.size() == c.g.ranks.size()) {
    int64_t sent = 0, recv = 0;
    for (size_t k = 0; k < c.at.size(); ++k) {
      const Collective& col = *c.at[k].second;
      sent = SaturatingAdd(sent, SumBytes(col.bytes_sent()) - col.bytes_sent()[c.Pos(k)]);
      recv = SaturatingAdd(recv, SumBytes(col.bytes_recv()) - col.bytes_recv()[c.Pos(k)]);
    }
    if (sent != recv) {
      return SizeFinding{MismatchClass::kAllToAllTotal, PairwiseCulprits(c), &c.ref,
                         "the group sends " + std::to_string(sent) + " B in total but receives " +
                             std::to_string(recv) + " B"};
    }
  }
  return std::nullopt;
}

std::optional<SizeFinding> Pairs(const CallSizes& c) {
  // Pairwise: what i sends to j is what j receives from i.
  for (size_t a = 0; a < c.at.size(); ++a) {
    for (size_t b = 0; b < c.at.size(); ++b) {
      const auto& [i, ci] = c.at[a];
      const auto& [j, cj] = c.at[b];
      if (i == j) continue;
      int64_t sent = ci->bytes_sent()[c.Pos(b)], recv = cj->bytes_recv()[c.Pos(a)];
      if (sent == recv) continue;
      return SizeFinding{MismatchClass::kSizeOrSyntax, PairwiseCulprits(c), ci,
                         "rank " + std::to_string(i) + " sends " + std::to_string(sent) + " B to rank " +
                             std::to_string(j) + ", which receives " + std::to_string(recv) + " B from it"};
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<SizeFinding> CheckCallSizes(const GroupCalls& g, const CallAt& at) {
  const Collective& ref = *at.front().second;
  const std::vector<int64_t>& order = ref.group();  // equal on every member (checked before)
  CallSizes c{g, at, ref, order.size(), {}};
  // Where each rank with a file stands in the group: the rules look up no one else, and a group's
  // size is what the trace claims, not what its files hold (a tiny trace may claim 2^20 ranks).
  if (std::is_sorted(order.begin(), order.end())) {
    c.index.reserve(at.size());
    for (const auto& [rank, col] : at)
      c.index.push_back(
          static_cast<size_t>(std::lower_bound(order.begin(), order.end(), rank) - order.begin()));
  } else {
    c.index.assign(at.size(), kNotInOrder);
    auto by_rank = [](const std::pair<int64_t, const Collective*>& x, int64_t r) { return x.first < r; };
    for (size_t i = 0; i < c.n; ++i) {
      auto it = std::lower_bound(at.begin(), at.end(), order[i], by_rank);
      if (it != at.end() && it->first == order[i]) c.index[static_cast<size_t>(it - at.begin())] = i;
    }
  }
  for (auto rule : {KindRule, SameSizeAcrossRanks, AllToAllTotals, Pairs}) {
    if (std::optional<SizeFinding> found = rule(c)) return found;
  }
  return std::nullopt;
}

}  // namespace shardscope::trace::detail
