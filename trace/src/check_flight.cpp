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
#include <unordered_map>

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

// One collective's entry on each rank, in rank order.
using Entries = std::vector<std::pair<int64_t, const FlightEntry*>>;

std::string GroupText(const FlightGroup& g) {
  // A large group of consecutive ranks prints as a range: "[0..63]".
  bool consecutive = g.ranks.size() > 8;
  for (size_t i = 1; consecutive && i < g.ranks.size(); ++i) consecutive = g.ranks[i] == g.ranks[i - 1] + 1;
  std::string ranks =
      consecutive ? "[" + std::to_string(g.ranks.front()) + ".." + std::to_string(g.ranks.back()) + "]"
                  : FormatInts(g.ranks);
  return "process group " + g.name + (g.desc.empty() ? "" : " (" + g.desc + ")") + " " + ranks;
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
std::string SizeRuleBroken(const FlightSig& f, int64_t group_size) {
  const std::string& kind = f.kind;
  if (kind != "all_gather" && kind != "reduce_scatter" && kind != "all_reduce") return "";
  if (f.input_sizes.size() != f.output_sizes.size()) {
    return std::to_string(f.input_sizes.size()) + " input tensor(s) but " +
           std::to_string(f.output_sizes.size()) + " output tensor(s)";
  }
  for (size_t i = 0; i < f.input_sizes.size(); ++i) {
    int64_t in = Numel(f.input_sizes[i]), out = Numel(f.output_sizes[i]);
    int64_t want = 0;
    bool ok = true;
    std::string rule;
    if (kind == "all_gather") {
      ok = !__builtin_mul_overflow(in, group_size, &want) && out == want;
      rule = "output numel = input numel x group size " + std::to_string(group_size);
    } else if (kind == "reduce_scatter") {
      ok = !__builtin_mul_overflow(out, group_size, &want) && in == want;
      rule = "input numel = output numel x group size " + std::to_string(group_size);
    } else {
      ok = f.input_sizes[i] == f.output_sizes[i];
      rule = "input = output";
    }
    if (!ok) {
      return "input " + FormatInts(f.input_sizes[i]) + " (numel " + std::to_string(in) + "), output " +
             FormatInts(f.output_sizes[i]) + " (numel " + std::to_string(out) + "), but " + kind + " needs " +
             rule;
    }
  }
  return "";
}

// The rules applied to one process group; findings go to `out`. What follows from an entry's
// signature alone (its size rule, mixed dtypes, totals, p2p peer) is worked out once per signature,
// and ranks whose entries share one signature agree on every field without their text being built.
struct GroupRules {
  GroupRules(const FlightTable& table, const FlightGroup& group, CheckResult& result)
      : t(table), g(group), out(result), group_text(GroupText(group)) {}

  const FlightTable& t;
  const FlightGroup& g;
  CheckResult& out;
  int64_t undecided = 0;  // all_to_all collectives whose totals matched
  const std::string group_text;
  std::unordered_map<uint32_t, std::string> broken_by_sig;
  std::unordered_map<uint32_t, bool> mixed_by_sig;
  // Per signature, each input's and each output's element count (added one by one, saturating).
  std::unordered_map<uint32_t, std::pair<std::vector<int64_t>, std::vector<int64_t>>> numels_by_sig;
  std::unordered_map<uint32_t, int64_t> peer_by_sig;
  std::vector<int> state_rank;  // by state index, -1 until known

  const FlightSig& Sig(const FlightEntry& e) const { return t.Sig(e.sig); }
  const std::string& State(const FlightEntry& e) const { return t.State(e.state); }
  int RankOfState(const FlightEntry& e) {
    if (e.state >= state_rank.size()) state_rank.resize(e.state + 1, -1);
    if (state_rank[e.state] < 0) state_rank[e.state] = StateRank(State(e));
    return state_rank[e.state];
  }

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

  std::string StatesText(const Entries& at) const {
    std::map<std::string, std::vector<int64_t>> by;
    for (const auto& [r, e] : at) by[State(*e)].push_back(r);
    std::string text;
    for (const auto& [s, ranks] : by) text += (text.empty() ? "" : ", ") + s + " on " + RanksPhrase(ranks);
    return text;
  }

  // Every collective_seq_id any member holds, ascending: the members' sorted entries are merged.
  void Collectives() {
    struct Cursor {
      int64_t rank;
      const FlightMember* m;
      size_t next = 0;
    };
    std::vector<Cursor> cursors;
    cursors.reserve(g.members.size());
    for (const auto& [r, m] : g.members) cursors.push_back({r, &m});
    std::set<int64_t> stopped;  // ranks already reported as never joining an earlier collective
    Entries at;
    std::vector<int64_t> missing;
    std::vector<std::string> gone;
    for (;;) {
      bool any = false;
      int64_t seq = 0;
      for (const Cursor& c : cursors) {
        if (c.next == c.m->by_seq.size()) continue;
        const int64_t s = c.m->by_seq[c.next].seq;
        if (!any || s < seq) seq = s;
        any = true;
      }
      if (!any) break;
      at.clear();
      missing.clear();
      gone.clear();
      for (Cursor& c : cursors) {
        const FlightMember& m = *c.m;
        const int64_t r = c.rank;
        if (c.next < m.by_seq.size() && m.by_seq[c.next].seq == seq) {
          at.emplace_back(r, &m.by_seq[c.next++]);
          continue;
        }
        if (!m.has_file) continue;
        const bool later = !m.by_seq.empty() && m.by_seq.back().seq > seq;
        if (later && m.wrapped) {
          // Seq ids of one group count up on every rank, so a rank holding a later one issued this
          // one too; its ring buffer has overwritten it.
          gone.push_back("rank " + std::to_string(r) +
                         "'s buffer no longer holds it (its oldest entry in this group is seq " +
                         std::to_string(m.by_seq.front().seq) + ")");
        } else if (m.by_seq.empty() && m.wrapped) {
          gone.push_back(
              "rank " + std::to_string(r) +
              "'s buffer wrapped and holds no entry of this group, so whether it joined is unknown");
        } else if (!stopped.count(r)) {
          missing.push_back(r);
        }
      }
      if (at.empty()) continue;
      const std::string where = group_text + ", collective seq " + std::to_string(seq) + " (" +
                                Sig(*at.front().second).profiling_name + ")";
      if (!gone.empty()) out.notes.push_back(where + ": " + Join(gone, "; "));
      if (!missing.empty()) {
        std::vector<int64_t> joined;
        for (const auto& [r, e] : at) joined.push_back(r);
        std::string last;
        for (int64_t r : missing) {
          const FlightMember& m = g.members.at(r);
          last += "; rank " + std::to_string(r) +
                  (m.by_seq.empty()
                       ? " has no collective of this group in its buffer"
                       : "'s last collective of this group is seq " + std::to_string(m.by_seq.back().seq));
        }
        Report(MismatchClass::kMissingRanks, missing, seq,
               where + ": not all ranks joined: " + RanksPhrase(missing) + " never joined it; " +
                   RanksPhrase(joined) + " did (state " + StatesText(at) + ")" + last);
        stopped.insert(missing.begin(), missing.end());
      }
      if ((at.size() >= 2 || g.ranks.size() == 1) && Compare(seq, at, where)) ++out.collectives;
    }
  }

  // Every entry's own field put to a vote; the deviants are reported. Entries that share one
  // signature hold the same value of every field it determines, so `same_sig` settles the vote.
  template <typename Field>
  bool Agree(MismatchClass cls, const std::string& noun, int64_t seq, const Entries& at,
             const std::string& where, bool same_sig, Field field) {
    if (same_sig) return true;
    std::vector<std::pair<int64_t, std::string>> values;
    values.reserve(at.size());
    for (const auto& [r, e] : at) values.emplace_back(r, field(Sig(*e)));
    Vote vote = Majority(values);
    if (vote.deviants.empty()) return true;
    Report(cls, vote.deviants, seq, where + ": " + noun + " differ: " + ValuesText(values));
    return false;
  }

  bool Compare(int64_t seq, const Entries& at, const std::string& where) {
    const uint32_t sig = at.front().second->sig;
    const bool same_sig =
        std::all_of(at.begin(), at.end(), [&](const auto& re) { return re.second->sig == sig; });
    return Agree(MismatchClass::kCollectiveType, "collective types", seq, at, where, same_sig,
                 [](const FlightSig& f) { return "'" + f.profiling_name + "'"; }) &&
           SizeRulesHold(seq, at, where) && SizesAgree(seq, at, where, same_sig) &&
           Agree(MismatchClass::kDtype, "dtypes", seq, at, where, same_sig,
                 [](const FlightSig& f) { return Strs(f.input_dtypes) + " -> " + Strs(f.output_dtypes); }) &&
           NoMixedDtypes(seq, at, where) && StatesAgree(seq, at, where);
  }

  // Each entry against its kind's size rule.
  bool SizeRulesHold(int64_t seq, const Entries& at, const std::string& where) {
    std::vector<int64_t> broken_ranks;
    std::string first_broken;
    for (const auto& [r, e] : at) {
      auto it = broken_by_sig.find(e->sig);
      if (it == broken_by_sig.end())
        it = broken_by_sig.emplace(e->sig, SizeRuleBroken(Sig(*e), static_cast<int64_t>(g.ranks.size())))
                 .first;
      const std::string& broken = it->second;
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
  bool SizesAgree(int64_t seq, const Entries& at, const std::string& where, bool same_sig) {
    if (Sig(*at.front().second).kind != "all_to_all") {
      return Agree(MismatchClass::kSizeOrSyntax, "input sizes", seq, at, where, same_sig,
                   [](const FlightSig& f) { return Shapes(f.input_sizes); });
    }
    if (at.size() == g.ranks.size()) {
      int64_t in = 0, total_out = 0;
      for (const auto& [r, e] : at) {
        auto it = numels_by_sig.find(e->sig);
        if (it == numels_by_sig.end()) {
          std::pair<std::vector<int64_t>, std::vector<int64_t>> numels;
          for (const auto& s : Sig(*e).input_sizes) numels.first.push_back(Numel(s));
          for (const auto& s : Sig(*e).output_sizes) numels.second.push_back(Numel(s));
          it = numels_by_sig.emplace(e->sig, std::move(numels)).first;
        }
        const auto& [ins, outs] = it->second;
        for (int64_t n : ins) in = SaturatingAdd(in, n);
        for (int64_t n : outs) total_out = SaturatingAdd(total_out, n);
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
    for (const auto& [r, e] : at) {
      auto it = mixed_by_sig.find(e->sig);
      if (it == mixed_by_sig.end()) {
        const FlightSig& f = Sig(*e);
        std::set<std::string> kinds(f.input_dtypes.begin(), f.input_dtypes.end());
        kinds.insert(f.output_dtypes.begin(), f.output_dtypes.end());
        it = mixed_by_sig.emplace(e->sig, kinds.size() > 1).first;
      }
      if (it->second) {
        const FlightSig& f = Sig(*e);
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
    for (const auto& [r, e] : at) {
      lowest = std::min(lowest, RankOfState(*e));
      highest = std::max(highest, RankOfState(*e));
    }
    if (lowest == highest) return true;
    std::vector<int64_t> behind;
    for (const auto& [r, e] : at)
      if (RankOfState(*e) == lowest) behind.push_back(r);
    Report(MismatchClass::kState, behind, seq, where + ": state differs: " + StatesText(at));
    return false;
  }

  // The peer of a send ("nccl:send 0->1") or recv ("nccl:recv 1<-0") by its group-local rank, or -1.
  int64_t Peer(const FlightSig& f) const {
    const std::string& name = f.profiling_name;
    size_t arrow = name.find(f.kind == "send" ? "->" : "<-");
    if (arrow == std::string::npos) return -1;
    std::string digits = name.substr(arrow + 2);
    if (digits.empty() || digits.size() >= 8 || digits.find_first_not_of("0123456789") != std::string::npos)
      return -1;
    const int64_t local = std::stoll(digits);
    return local < static_cast<int64_t>(g.ranks.size()) ? g.ranks[static_cast<size_t>(local)] : -1;
  }

  // Sends and recvs of one group: the k-th send from a to b matches the k-th recv on b from a.
  void P2p() {
    std::map<std::pair<int64_t, int64_t>, std::vector<const FlightEntry*>> sends, recvs;
    for (const auto& [r, m] : g.members) {
      for (const FlightEntry& e : m.p2p) {
        auto it = peer_by_sig.find(e.sig);
        if (it == peer_by_sig.end()) it = peer_by_sig.emplace(e.sig, Peer(Sig(e))).first;
        const int64_t peer = it->second;
        if (peer < 0) continue;
        if (Sig(e).kind == "send") sends[{r, peer}].push_back(&e);
        if (Sig(e).kind == "recv") recvs[{peer, r}].push_back(&e);
      }
    }
    std::set<std::pair<int64_t, int64_t>> pairs;
    for (const auto& [k, v] : sends) pairs.insert(k);
    for (const auto& [k, v] : recvs) pairs.insert(k);
    for (const auto& [src, dst] : pairs) {
      auto ms = g.members.find(src), md = g.members.find(dst);
      if (ms == g.members.end() || md == g.members.end() || !ms->second.has_file || !md->second.has_file)
        continue;
      const std::string where = group_text + ", p2p " + std::to_string(src) + " -> " + std::to_string(dst);
      if (ms->second.wrapped || md->second.wrapped) {
        out.notes.push_back(where +
                            ": not matched, a ring buffer wrapped (the oldest sends or recvs may be gone)");
        continue;
      }
      MatchPairs(src, dst, sends[{src, dst}], recvs[{src, dst}], where);
    }
  }

  void MatchPairs(int64_t src, int64_t dst, const std::vector<const FlightEntry*>& s,
                  const std::vector<const FlightEntry*>& v, const std::string& where) {
    for (size_t k = 0; k < std::max(s.size(), v.size()); ++k) {
      if (k >= v.size() || k >= s.size()) {
        const FlightEntry& have = *(k < s.size() ? s[k] : v[k]);
        const int64_t culprit = k < s.size() ? dst : src;
        Report(MismatchClass::kMissingRanks, {culprit}, have.seq,
               where + ": '" + Sig(have).profiling_name + "' (p2p seq " + std::to_string(have.seq) + ", " +
                   State(have) + ") on rank " + std::to_string(k < s.size() ? src : dst) +
                   " has no matching " + (k < s.size() ? "recv" : "send") + " on rank " +
                   std::to_string(culprit));
        return;
      }
      const FlightSig& fs = Sig(*s[k]);
      const FlightSig& fr = Sig(*v[k]);
      const auto& recv_sizes = fr.output_sizes.empty() ? fr.input_sizes : fr.output_sizes;
      const auto& recv_types = fr.output_dtypes.empty() ? fr.input_dtypes : fr.output_dtypes;
      if (fs.input_sizes != recv_sizes) {
        Report(MismatchClass::kSizeOrSyntax, {src, dst}, s[k]->seq,
               where + ": send #" + std::to_string(k) + " sends " + Shapes(fs.input_sizes) +
                   " but the recv expects " + Shapes(recv_sizes));
        return;
      }
      if (fs.input_dtypes != recv_types) {
        Report(MismatchClass::kDtype, {src, dst}, s[k]->seq,
               where + ": send #" + std::to_string(k) + " sends " + Strs(fs.input_dtypes) +
                   " but the recv expects " + Strs(recv_types));
        return;
      }
      ++out.collectives;
    }
  }
};

}  // namespace

FlightRules::FlightRules(const Model& model) : table_(GroupFlightRecords(model)) {}

FlightRules::FlightRules(FlightTable table) : table_(std::move(table)) {}

void FlightRules::Check(CheckResult& out) {
  out.groups += static_cast<int64_t>(table_.Groups().size());
  std::set<int64_t> no_file_reported;
  for (const auto& [key, g] : table_.Groups()) {
    GroupRules rules{table_, g, out};
    for (const auto& [r, m] : g.members) {
      if (m.has_file || !no_file_reported.insert(r).second) continue;
      rules.Report(MismatchClass::kMissingRankFile, {r}, std::nullopt,
                   "rank " + std::to_string(r) + " of " + rules.group_text +
                       " left no Flight Recorder dump; collectives are compared among the ranks that did");
    }
    rules.Collectives();
    rules.P2p();
    out.undecided += rules.undecided;
    if (rules.undecided > 0) {
      out.notes.push_back(
          rules.group_text + ": " + std::to_string(rules.undecided) +
          " all_to_all collective(s) undecided: a dump does not record the per-peer split, so "
          "only the group's total sizes were compared");
    }
  }
}

}  // namespace shardscope::trace::detail
