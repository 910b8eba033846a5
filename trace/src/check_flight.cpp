// The check's rules for collectives that carry a flight record, after Flight Recorder's own
// analyzer (torch/distributed/flight_recorder/components/utils.py, match_one_event) with the
// differences documented in docs/flight-recorder.md: ring buffers are aligned per process group by
// collective_seq_id, not across groups by record_id, and a rank whose buffer no longer holds a
// collective is said so instead of being blamed.
#include "check_flight.hpp"

#include <algorithm>
#include <optional>
#include <set>
#include <string>

#include "collective_match.hpp"
#include "vote.hpp"

namespace shardscope::trace::detail {

namespace {

std::string Shapes(const std::vector<std::vector<int64_t>>& shapes) {
  std::string out = "[";
  for (size_t i = 0; i < shapes.size(); ++i) out += (i ? ", " : "") + FormatInts(shapes[i]);
  return out + "]";
}

std::string Strs(const std::vector<std::string>& v) { return "[" + Join(v, ", ") + "]"; }

// Element count of one shape, saturating (extents are bounded by the reader, their product is not).
int64_t Numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t e : shape)
    if (__builtin_mul_overflow(n, e, &n)) return INT64_MAX;
  return n;
}

int StateRank(const std::string& s) { return s == "completed" ? 2 : s == "started" ? 1 : 0; }

using Entries = std::map<int64_t, const Collective*>;  // one collective's entry on each rank

std::string GroupText(const FlightGroup& g) {
  // A large group of consecutive ranks prints as a range: "[0..63]".
  bool consecutive = g.ranks.size() > 8;
  for (size_t i = 1; consecutive && i < g.ranks.size(); ++i) consecutive = g.ranks[i] == g.ranks[i - 1] + 1;
  std::string ranks =
      consecutive ? "[" + std::to_string(g.ranks.front()) + ".." + std::to_string(g.ranks.back()) + "]"
                  : FormatInts(g.ranks);
  return "process group " + g.name + (g.desc.empty() ? "" : " (" + g.desc + ")") + " " + ranks;
}

std::string StatesText(const Entries& at) {
  std::map<std::string, std::vector<int64_t>> by;
  for (const auto& [r, c] : at) by[c->flight->state].push_back(r);
  std::string out;
  for (const auto& [s, ranks] : by) out += (out.empty() ? "" : ", ") + s + " on " + RanksPhrase(ranks);
  return out;
}

// "ranks 0, 2 have X; rank 1 has Y": every value, in the order of the ranks first holding it.
std::string ValuesText(const std::vector<std::pair<int64_t, std::string>>& values) {
  std::vector<std::pair<std::string, std::vector<int64_t>>> by;
  for (const auto& [r, v] : values) {
    auto it = std::find_if(by.begin(), by.end(), [&](const auto& b) { return b.first == v; });
    if (it == by.end()) it = by.insert(by.end(), {v, {}});
    it->second.push_back(r);
  }
  std::string text;
  for (const auto& [v, ranks] : by)
    text += (text.empty() ? "" : "; ") + RanksPhrase(ranks) + (ranks.size() == 1 ? " has " : " have ") + v;
  return text;
}

// The size rule of one entry: all_gather out = in x group size, reduce_scatter in = out x group
// size, all_reduce in = out, per tensor pair (coalesced entries hold several). "" when it holds.
std::string SizeRuleBroken(const Collective& c, int64_t group_size) {
  const FlightRecord& f = *c.flight;
  if (c.kind != "all_gather" && c.kind != "reduce_scatter" && c.kind != "all_reduce") return "";
  if (f.input_sizes.size() != f.output_sizes.size()) {
    return std::to_string(f.input_sizes.size()) + " input tensor(s) but " +
           std::to_string(f.output_sizes.size()) + " output tensor(s)";
  }
  for (size_t i = 0; i < f.input_sizes.size(); ++i) {
    int64_t in = Numel(f.input_sizes[i]), out = Numel(f.output_sizes[i]);
    int64_t want = 0;
    bool ok = true;
    std::string rule;
    if (c.kind == "all_gather") {
      ok = !__builtin_mul_overflow(in, group_size, &want) && out == want;
      rule = "output numel = input numel x group size " + std::to_string(group_size);
    } else if (c.kind == "reduce_scatter") {
      ok = !__builtin_mul_overflow(out, group_size, &want) && in == want;
      rule = "input numel = output numel x group size " + std::to_string(group_size);
    } else {
      ok = f.input_sizes[i] == f.output_sizes[i];
      rule = "input = output";
    }
    if (!ok) {
      return "input " + FormatInts(f.input_sizes[i]) + " (numel " + std::to_string(in) + "), output " +
             FormatInts(f.output_sizes[i]) + " (numel " + std::to_string(out) + "), but " + c.kind +
             " needs " + rule;
    }
  }
  return "";
}

// The rules applied to one process group; findings go to `out`.
struct GroupRules {
  const FlightGroup& g;
  CheckResult& out;
  int64_t undecided = 0;  // all_to_all collectives whose totals matched

  void Report(MismatchClass kind, std::vector<int64_t> culprits, std::optional<int64_t> seq,
              std::string message) {
    Mismatch m;
    m.kind = kind;
    m.culprits = std::move(culprits);
    m.group = g.ranks;
    std::sort(m.group.begin(), m.group.end());
    m.process_group = g.name;
    m.seq_id = seq;
    m.message = std::move(message);
    out.mismatches.push_back(std::move(m));
  }

  void Collectives() {
    std::set<int64_t> seqs;
    for (const auto& [r, m] : g.members)
      for (const auto& [s, c] : m.by_seq) seqs.insert(s);
    std::set<int64_t> stopped;  // ranks already reported as never joining an earlier collective
    for (int64_t seq : seqs) {
      Entries at;
      std::vector<int64_t> missing;
      std::vector<std::string> gone;
      for (const auto& [r, m] : g.members) {
        if (!m.has_file) continue;
        auto it = m.by_seq.find(seq);
        if (it != m.by_seq.end()) {
          at[r] = it->second;
          continue;
        }
        const bool later = !m.by_seq.empty() && m.by_seq.rbegin()->first > seq;
        if (later && m.wrapped) {
          // Seq ids of one group count up on every rank, so a rank holding a later one issued this
          // one too; its ring buffer has overwritten it.
          gone.push_back("rank " + std::to_string(r) +
                         "'s buffer no longer holds it (its oldest entry in this group is seq " +
                         std::to_string(m.by_seq.begin()->first) + ")");
        } else if (m.by_seq.empty() && m.wrapped) {
          gone.push_back(
              "rank " + std::to_string(r) +
              "'s buffer wrapped and holds no entry of this group, so whether it joined is unknown");
        } else if (!stopped.count(r)) {
          missing.push_back(r);
        }
      }
      if (at.empty()) continue;
      const std::string where = GroupText(g) + ", collective seq " + std::to_string(seq) + " (" +
                                at.begin()->second->flight->profiling_name + ")";
      if (!gone.empty()) out.notes.push_back(where + ": " + Join(gone, "; "));
      if (!missing.empty()) {
        std::vector<int64_t> joined;
        for (const auto& [r, c] : at) joined.push_back(r);
        std::string last;
        for (int64_t r : missing) {
          const FlightMember& m = g.members.at(r);
          last += "; rank " + std::to_string(r) +
                  (m.by_seq.empty() ? " has no collective of this group in its buffer"
                                    : "'s last collective of this group is seq " +
                                          std::to_string(m.by_seq.rbegin()->first));
        }
        Report(MismatchClass::kMissingRanks, missing, seq,
               where + ": not all ranks joined: " + RanksPhrase(missing) + " never joined it; " +
                   RanksPhrase(joined) + " did (state " + StatesText(at) + ")" + last);
        stopped.insert(missing.begin(), missing.end());
      }
      if ((at.size() >= 2 || g.ranks.size() == 1) && Compare(seq, at, where)) ++out.collectives;
    }
  }

  // Every entry's own field put to a vote; the deviants are reported.
  template <typename Field>
  bool Agree(MismatchClass cls, const std::string& noun, int64_t seq, const Entries& at,
             const std::string& where, Field field) {
    std::vector<std::pair<int64_t, std::string>> values;
    for (const auto& [r, c] : at) values.emplace_back(r, field(*c));
    Vote vote = Majority(values);
    if (vote.deviants.empty()) return true;
    Report(cls, vote.deviants, seq, where + ": " + noun + " differ: " + ValuesText(values));
    return false;
  }

  bool Compare(int64_t seq, const Entries& at, const std::string& where) {
    return Agree(MismatchClass::kCollectiveType, "collective types", seq, at, where,
                 [](const Collective& c) { return "'" + c.flight->profiling_name + "'"; }) &&
           SizeRulesHold(seq, at, where) && SizesAgree(seq, at, where) &&
           Agree(MismatchClass::kDtype, "dtypes", seq, at, where,
                 [](const Collective& c) {
                   return Strs(c.flight->input_dtypes) + " -> " + Strs(c.flight->output_dtypes);
                 }) &&
           NoMixedDtypes(seq, at, where) && StatesAgree(seq, at, where);
  }

  // Each entry against its kind's size rule.
  bool SizeRulesHold(int64_t seq, const Entries& at, const std::string& where) {
    std::vector<int64_t> broken_ranks;
    std::string first_broken;
    for (const auto& [r, c] : at) {
      std::string broken = SizeRuleBroken(*c, static_cast<int64_t>(g.ranks.size()));
      if (broken.empty()) continue;
      if (broken_ranks.empty()) first_broken = "rank " + std::to_string(r) + " has " + broken;
      broken_ranks.push_back(r);
    }
    if (broken_ranks.empty()) return true;
    // Every rank that breaks its kind's rule is a culprit (all of them when the job itself is wrong).
    std::string also;
    if (broken_ranks.size() > 1) {
      also = broken_ranks.size() == at.size()
                 ? " (every rank of the group breaks the rule)"
                 : " (also " +
                       RanksPhrase(std::vector<int64_t>(broken_ranks.begin() + 1, broken_ranks.end())) + ")";
    }
    Report(MismatchClass::kSizeOrSyntax, broken_ranks, seq, where + ": " + first_broken + also);
    return false;
  }

  // all_to_all: the group's totals (the split per peer is not recorded); others: equal input sizes.
  bool SizesAgree(int64_t seq, const Entries& at, const std::string& where) {
    if (at.begin()->second->kind != "all_to_all") {
      return Agree(MismatchClass::kSizeOrSyntax, "input sizes", seq, at, where,
                   [](const Collective& c) { return Shapes(c.flight->input_sizes); });
    }
    if (at.size() == g.ranks.size()) {
      int64_t in = 0, total_out = 0;
      for (const auto& [r, c] : at) {
        for (const auto& s : c->flight->input_sizes) in = SaturatingAdd(in, Numel(s));
        for (const auto& s : c->flight->output_sizes) total_out = SaturatingAdd(total_out, Numel(s));
      }
      if (in != total_out) {
        Report(MismatchClass::kAllToAllTotal, {}, seq,
               where + ": the group's inputs hold " + std::to_string(in) + " elements but its outputs " +
                   std::to_string(total_out));
        return false;
      }
    }
    ++undecided;
    return true;
  }

  bool NoMixedDtypes(int64_t seq, const Entries& at, const std::string& where) {
    for (const auto& [r, c] : at) {
      const FlightRecord& f = *c->flight;
      std::set<std::string> kinds(f.input_dtypes.begin(), f.input_dtypes.end());
      kinds.insert(f.output_dtypes.begin(), f.output_dtypes.end());
      if (kinds.size() > 1) {
        Report(MismatchClass::kDtype, {r}, seq,
               where + ": rank " + std::to_string(r) + " mixes dtypes: input " + Strs(f.input_dtypes) +
                   ", output " + Strs(f.output_dtypes));
        return false;
      }
    }
    return true;
  }

  bool StatesAgree(int64_t seq, const Entries& at, const std::string& where) {
    // State: the ranks least far along (scheduled < started < completed) hold the others up.
    int lowest = 2, highest = 0;
    for (const auto& [r, c] : at) {
      lowest = std::min(lowest, StateRank(c->flight->state));
      highest = std::max(highest, StateRank(c->flight->state));
    }
    if (lowest == highest) return true;
    std::vector<int64_t> behind;
    for (const auto& [r, c] : at)
      if (StateRank(c->flight->state) == lowest) behind.push_back(r);
    Report(MismatchClass::kState, behind, seq, where + ": state differs: " + StatesText(at));
    return false;
  }

  // The peer of a send ("nccl:send 0->1") or recv ("nccl:recv 1<-0") by its group-local rank, or -1.
  int64_t Peer(const Collective& c) const {
    const std::string& name = c.flight->profiling_name;
    size_t arrow = name.find(c.kind == "send" ? "->" : "<-");
    if (arrow == std::string::npos) return -1;
    std::string digits = name.substr(arrow + 2);
    if (digits.empty() || digits.size() >= 8 || digits.find_first_not_of("0123456789") != std::string::npos)
      return -1;
    const int64_t local = std::stoll(digits);
    return local < static_cast<int64_t>(g.ranks.size()) ? g.ranks[static_cast<size_t>(local)] : -1;
  }

  // Sends and recvs of one group: the k-th send from a to b matches the k-th recv on b from a.
  void P2p() {
    std::map<std::pair<int64_t, int64_t>, std::vector<const Collective*>> sends, recvs;
    for (const auto& [r, m] : g.members) {
      for (const Collective* c : m.p2p) {
        const int64_t peer = Peer(*c);
        if (peer < 0) continue;
        if (c->kind == "send") sends[{r, peer}].push_back(c);
        if (c->kind == "recv") recvs[{peer, r}].push_back(c);
      }
    }
    std::set<std::pair<int64_t, int64_t>> pairs;
    for (const auto& [k, v] : sends) pairs.insert(k);
    for (const auto& [k, v] : recvs) pairs.insert(k);
    for (const auto& [src, dst] : pairs) {
      auto ms = g.members.find(src), md = g.members.find(dst);
      if (ms == g.members.end() || md == g.members.end() || !ms->second.has_file || !md->second.has_file)
        continue;
      const std::string where = GroupText(g) + ", p2p " + std::to_string(src) + " -> " + std::to_string(dst);
      if (ms->second.wrapped || md->second.wrapped) {
        out.notes.push_back(where +
                            ": not matched, a ring buffer wrapped (the oldest sends or recvs may be gone)");
        continue;
      }
      MatchPairs(src, dst, sends[{src, dst}], recvs[{src, dst}], where);
    }
  }

  void MatchPairs(int64_t src, int64_t dst, const std::vector<const Collective*>& s,
                  const std::vector<const Collective*>& v, const std::string& where) {
    for (size_t k = 0; k < std::max(s.size(), v.size()); ++k) {
      if (k >= v.size() || k >= s.size()) {
        const FlightRecord& have = *(k < s.size() ? s[k] : v[k])->flight;
        const int64_t culprit = k < s.size() ? dst : src;
        Report(MismatchClass::kMissingRanks, {culprit}, have.p2p_seq_id,
               where + ": '" + have.profiling_name + "' (p2p seq " + std::to_string(have.p2p_seq_id) + ", " +
                   have.state + ") on rank " + std::to_string(k < s.size() ? src : dst) +
                   " has no matching " + (k < s.size() ? "recv" : "send") + " on rank " +
                   std::to_string(culprit));
        return;
      }
      const FlightRecord& fs = *s[k]->flight;
      const FlightRecord& fr = *v[k]->flight;
      const auto& recv_sizes = fr.output_sizes.empty() ? fr.input_sizes : fr.output_sizes;
      const auto& recv_types = fr.output_dtypes.empty() ? fr.input_dtypes : fr.output_dtypes;
      if (fs.input_sizes != recv_sizes) {
        Report(MismatchClass::kSizeOrSyntax, {src, dst}, fs.p2p_seq_id,
               where + ": send #" + std::to_string(k) + " sends " + Shapes(fs.input_sizes) +
                   " but the recv expects " + Shapes(recv_sizes));
        return;
      }
      if (fs.input_dtypes != recv_types) {
        Report(MismatchClass::kDtype, {src, dst}, fs.p2p_seq_id,
               where + ": send #" + std::to_string(k) + " sends " + Strs(fs.input_dtypes) +
                   " but the recv expects " + Strs(recv_types));
        return;
      }
      ++out.collectives;
    }
  }
};

}  // namespace

FlightRules::FlightRules(const Model& model) : groups_(GroupFlightRecords(model)) {
  for (const auto& [key, g] : groups_)
    for (const auto& [r, m] : g.members) members_.insert(r);
}

void FlightRules::Check(CheckResult& out) {
  out.groups += static_cast<int64_t>(groups_.size());
  std::set<int64_t> no_file_reported;
  for (const auto& [key, g] : groups_) {
    GroupRules rules{g, out};
    for (const auto& [r, m] : g.members) {
      if (m.has_file || !no_file_reported.insert(r).second) continue;
      rules.Report(MismatchClass::kMissingRankFile, {r}, std::nullopt,
                   "rank " + std::to_string(r) + " of " + GroupText(g) +
                       " left no Flight Recorder dump; collectives are compared among the ranks that did");
    }
    rules.Collectives();
    rules.P2p();
    out.undecided += rules.undecided;
    if (rules.undecided > 0) {
      out.notes.push_back(
          GroupText(g) + ": " + std::to_string(rules.undecided) +
          " all_to_all collective(s) undecided: a dump does not record the per-peer split, so "
          "only the group's total sizes were compared");
    }
  }
}

}  // namespace shardscope::trace::detail
