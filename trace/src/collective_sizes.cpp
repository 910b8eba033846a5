#include "collective_sizes.hpp"

#include <algorithm>

#include "vote.hpp"

namespace shardscope::trace::detail {

namespace {

// One call's collectives by rank, and where each rank stands in the group's order.
struct CallSizes {
  const GroupCalls& g;
  const std::map<int64_t, const Collective*>& at;
  const std::string& where;
  const Collective& ref;
  size_t n;
  std::map<int64_t, size_t> index;
};

// The ranks involved in the most pairwise disagreements (all tied ones).
std::vector<int64_t> PairwiseCulprits(const std::map<int64_t, const Collective*>& at,
                                      const std::map<int64_t, size_t>& index) {
  std::map<int64_t, int64_t> count;
  for (const auto& [i, ci] : at) {
    for (const auto& [j, cj] : at) {
      if (i != j && ci->bytes_sent[index.at(j)] != cj->bytes_recv[index.at(i)]) {
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
  for (const auto& [rank, col] : c.at) {
    size_t self = c.index.at(rank);
    std::string bad;
    if ((col->kind == "all_gather" || col->kind == "all_reduce") && !PeersEqual(col->bytes_sent, self))
      bad =
          "sends different byte counts to its peers " + FormatInts(col->bytes_sent) + " in one " + col->kind;
    else if ((col->kind == "reduce_scatter" || col->kind == "all_reduce") &&
             !PeersEqual(col->bytes_recv, self))
      bad = "receives different byte counts from its peers " + FormatInts(col->bytes_recv) + " in one " +
            col->kind;
    else if (col->kind == "all_reduce" && c.n > 1 &&
             col->bytes_sent[(self + 1) % c.n] != col->bytes_recv[(self + 1) % c.n])
      bad = "sends " + std::to_string(col->bytes_sent[(self + 1) % c.n]) + " B but receives " +
            std::to_string(col->bytes_recv[(self + 1) % c.n]) +
            " B per peer in an all_reduce (in must equal out)";
    if (!bad.empty()) {
      return SizeFinding{
          MismatchClass::kSizeOrSyntax, {rank}, col, c.where + ": rank " + std::to_string(rank) + " " + bad};
    }
  }
  return std::nullopt;
}

std::optional<SizeFinding> SameSizeAcrossRanks(const CallSizes& c) {
  // Across ranks: every all_reduce member moves the same size; every reduce_scatter member
  // reduces the same input (its chunks sent plus its own output chunk: in = out x group when even).
  if (c.n > 1 && (c.ref.kind == "all_reduce" || c.ref.kind == "reduce_scatter")) {
    std::vector<std::pair<int64_t, std::string>> values;
    for (const auto& [rank, col] : c.at) {
      size_t self = c.index.at(rank);
      int64_t peer_recv = col->bytes_recv[(self + 1) % c.n];
      int64_t size = c.ref.kind == "all_reduce"
                         ? col->bytes_sent[(self + 1) % c.n]
                         : SumBytes(col->bytes_sent) - col->bytes_sent[self] + peer_recv;
      values.emplace_back(rank, std::to_string(size) + " B");
    }
    Vote vote = Majority(values);
    if (!vote.deviants.empty()) {
      std::string noun = c.ref.kind == "all_reduce" ? "all_reduce size" : "reduce_scatter input size";
      return SizeFinding{MismatchClass::kSizeOrSyntax, vote.deviants, &c.ref,
                         c.where + ": " + noun + " differs: " + VoteText(values, vote)};
    }
  }
  return std::nullopt;
}

std::optional<SizeFinding> AllToAllTotals(const CallSizes& c) {
  // all_to_all totals (Flight Recorder's error case 2), only decidable with every member present.
  if (c.ref.kind == "all_to_all" && c.at.size() == c.g.ranks.size()) {
    int64_t sent = 0, recv = 0;
    for (const auto& [rank, col] : c.at) {
      sent = SaturatingAdd(sent, SumBytes(col->bytes_sent) - col->bytes_sent[c.index.at(rank)]);
      recv = SaturatingAdd(recv, SumBytes(col->bytes_recv) - col->bytes_recv[c.index.at(rank)]);
    }
    if (sent != recv) {
      return SizeFinding{MismatchClass::kAllToAllTotal, PairwiseCulprits(c.at, c.index), &c.ref,
                         c.where + ": the group sends " + std::to_string(sent) + " B in total but receives " +
                             std::to_string(recv) + " B"};
    }
  }
  return std::nullopt;
}

std::optional<SizeFinding> Pairs(const CallSizes& c) {
  // Pairwise: what i sends to j is what j receives from i.
  for (const auto& [i, ci] : c.at) {
    for (const auto& [j, cj] : c.at) {
      if (i == j) continue;
      int64_t sent = ci->bytes_sent[c.index.at(j)], recv = cj->bytes_recv[c.index.at(i)];
      if (sent == recv) continue;
      return SizeFinding{MismatchClass::kSizeOrSyntax, PairwiseCulprits(c.at, c.index), ci,
                         c.where + ": rank " + std::to_string(i) + " sends " + std::to_string(sent) +
                             " B to rank " + std::to_string(j) + ", which receives " + std::to_string(recv) +
                             " B from it"};
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<SizeFinding> CheckCallSizes(const GroupCalls& g, const std::map<int64_t, const Collective*>& at,
                                          const std::string& where) {
  const Collective& ref = *at.begin()->second;
  const std::vector<int64_t>& order = ref.group;  // equal on every member (checked before)
  CallSizes c{g, at, where, ref, order.size(), {}};
  // Where each rank with a file stands in the group: the rules look up no one else, and a group's
  // size is what the trace claims, not what its files hold (a tiny trace may claim 2^20 ranks).
  if (std::is_sorted(order.begin(), order.end())) {
    for (const auto& [rank, col] : at)
      c.index[rank] = static_cast<size_t>(std::lower_bound(order.begin(), order.end(), rank) - order.begin());
  } else {
    for (size_t i = 0; i < c.n; ++i)
      if (at.count(order[i])) c.index[order[i]] = i;
  }
  for (auto rule : {KindRule, SameSizeAcrossRanks, AllToAllTotals, Pairs}) {
    if (std::optional<SizeFinding> found = rule(c)) return found;
  }
  return std::nullopt;
}

}  // namespace shardscope::trace::detail
