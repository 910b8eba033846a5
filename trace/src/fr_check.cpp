// The cross-rank check of Flight Recorder dumps, by Flight Recorder's own rules
// (torch/distributed/flight_recorder/components/utils.py, match_one_event) with the differences
// documented in docs/flight-recorder.md: ring buffers are aligned per process group by
// collective_seq_id, not across groups by record_id, and a rank whose buffer no longer holds a
// collective is said so instead of being blamed.
#include "fr_check.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "collective_match.hpp"

namespace shardscope::trace::detail {

namespace {

std::string Shapes(const std::vector<std::vector<int64_t>>& shapes) {
  std::string out = "[";
  for (size_t i = 0; i < shapes.size(); ++i) out += (i ? ", " : "") + FormatInts(shapes[i]);
  return out + "]";
}

std::string Strs(const std::vector<std::string>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + v[i];
  return out + "]";
}

// Element count of one shape, saturating (extents are bounded by the reader, their product is not).
int64_t Numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t e : shape)
    if (__builtin_mul_overflow(n, e, &n)) return INT64_MAX;
  return n;
}

int StateRank(const std::string& s) { return s == "completed" ? 2 : s == "started" ? 1 : 0; }

// One rank's entries of one process group.
struct Member {
  bool has_dump = false;
  bool wrapped = false;                         // the rank's oldest entry (any group) is not record 0
  std::map<int64_t, const Collective*> by_seq;  // collectives, by collective_seq_id
  std::vector<const Collective*> p2p;           // sends and recvs in record order
};

struct Group {
  std::string name, desc;
  std::vector<int64_t> ranks;  // pg order (global ranks)
  std::map<int64_t, Member> members;
  int64_t undecided = 0;  // all_to_all collectives whose totals matched
};

class FrChecker {
 public:
  explicit FrChecker(const Model& model) : model_(model) {}

  CheckResult Run() {
    result_.ranks = static_cast<int64_t>(model_.ranks.size());
    result_.world = model_.world;
    std::set<int64_t> with_dump;
    for (const RankTrace& rt : model_.ranks) with_dump.insert(rt.header.rank);
    std::map<std::pair<std::string, std::vector<int64_t>>, Group> groups;
    for (const RankTrace& rt : model_.ranks) {
      bool wrapped = false, first = true;
      for (const Collective& call : rt.events.Of<Collective>()) {
        const Collective* c = &call;  // pointers into it are kept: the stored event, not a copy
        if (!c->flight) continue;
        if (first) wrapped = c->flight->record_id > 0;
        first = false;
        std::vector<int64_t> sorted = c->group;
        std::sort(sorted.begin(), sorted.end());
        Group& g = groups[{c->flight->pg_name, sorted}];
        if (g.ranks.empty()) {
          g.name = c->flight->pg_name;
          g.desc = c->flight->pg_desc;
          g.ranks = c->group;
          for (int64_t r : g.ranks) g.members[r].has_dump = with_dump.count(r) > 0;
        }
        Member& m = g.members[rt.header.rank];
        m.wrapped = wrapped;
        if (c->flight->is_p2p)
          m.p2p.push_back(c);
        else
          m.by_seq.emplace(c->flight->seq_id, c);  // a repeated seq id keeps the older entry
      }
      for (auto& [key, g] : groups)
        if (g.members.count(rt.header.rank)) g.members[rt.header.rank].wrapped = wrapped;
    }
    result_.groups = static_cast<int64_t>(groups.size());
    std::set<int64_t> no_dump_reported;
    for (auto& [key, g] : groups) {
      std::vector<int64_t> no_dump;
      for (const auto& [r, m] : g.members)
        if (!m.has_dump && !no_dump_reported.count(r)) no_dump.push_back(r);
      for (int64_t r : no_dump) {
        no_dump_reported.insert(r);
        Mismatch mm = Base(MismatchClass::kMissingRankFile, {r}, g, std::nullopt);
        mm.message = "rank " + std::to_string(r) + " of " + GroupText(g) +
                     " left no Flight Recorder dump; collectives are compared among the ranks that did";
        result_.mismatches.push_back(std::move(mm));
      }
      CheckCollectives(g);
      CheckP2p(g);
      result_.undecided += g.undecided;
      if (g.undecided > 0) {
        result_.notes.push_back(GroupText(g) + ": " + std::to_string(g.undecided) +
                                " all_to_all collective(s) undecided: a dump does not record the per-peer "
                                "split, so only the group's total sizes were compared");
      }
    }
    return std::move(result_);
  }

 private:
  static std::string GroupText(const Group& g) {
    // A large group of consecutive ranks prints as a range: "[0..63]".
    bool consecutive = g.ranks.size() > 8;
    for (size_t i = 1; consecutive && i < g.ranks.size(); ++i) consecutive = g.ranks[i] == g.ranks[i - 1] + 1;
    std::string ranks =
        consecutive ? "[" + std::to_string(g.ranks.front()) + ".." + std::to_string(g.ranks.back()) + "]"
                    : FormatInts(g.ranks);
    return "process group " + g.name + (g.desc.empty() ? "" : " (" + g.desc + ")") + " " + ranks;
  }

  Mismatch Base(MismatchClass kind, std::vector<int64_t> culprits, const Group& g,
                std::optional<int64_t> seq) {
    Mismatch m;
    m.kind = kind;
    m.culprits = std::move(culprits);
    m.group = g.ranks;
    std::sort(m.group.begin(), m.group.end());
    m.process_group = g.name;
    m.seq_id = seq;
    return m;
  }

  void Report(MismatchClass kind, std::vector<int64_t> culprits, const Group& g, int64_t seq,
              std::string what) {
    Mismatch m = Base(kind, std::move(culprits), g, seq);
    m.message = std::move(what);
    result_.mismatches.push_back(std::move(m));
  }

  void CheckCollectives(Group& g) {
    std::set<int64_t> seqs;
    for (const auto& [r, m] : g.members)
      for (const auto& [s, c] : m.by_seq) seqs.insert(s);
    std::set<int64_t> stopped;  // ranks already reported as never joining an earlier collective
    for (int64_t seq : seqs) {
      std::map<int64_t, const Collective*> at;
      std::vector<int64_t> missing;
      std::vector<std::string> gone;
      for (const auto& [r, m] : g.members) {
        if (!m.has_dump) continue;
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
                         "'s buffer no longer holds it (its oldest entry in this "
                         "group is seq " +
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
      const Collective& ref = *at.begin()->second;
      const std::string where =
          GroupText(g) + ", collective seq " + std::to_string(seq) + " (" + ref.flight->profiling_name + ")";
      if (!gone.empty()) {
        std::string note = where + ": ";
        for (size_t i = 0; i < gone.size(); ++i) note += (i ? "; " : "") + gone[i];
        result_.notes.push_back(note);
      }
      if (!missing.empty()) {
        std::vector<int64_t> joined;
        std::string states;
        for (const auto& [r, c] : at) joined.push_back(r);
        std::string last;
        for (int64_t r : missing) {
          const Member& m = g.members.at(r);
          last += "; rank " + std::to_string(r) +
                  (m.by_seq.empty() ? " has no collective of this group in its buffer"
                                    : "'s last collective of this group is seq " +
                                          std::to_string(m.by_seq.rbegin()->first));
        }
        Report(MismatchClass::kMissingRanks, missing, g, seq,
               where + ": not all ranks joined: " + RanksPhrase(missing) + " never joined it; " +
                   RanksPhrase(joined) + " did (state " + StatesText(at) + ")" + last);
        stopped.insert(missing.begin(), missing.end());
      }
      if (at.size() >= 2 || g.ranks.size() == 1) {
        if (CompareEntries(g, seq, at, where)) ++result_.collectives;
      }
    }
  }

  static std::string StatesText(const std::map<int64_t, const Collective*>& at) {
    std::map<std::string, std::vector<int64_t>> by;
    for (const auto& [r, c] : at) by[c->flight->state].push_back(r);
    std::string out;
    for (const auto& [s, ranks] : by) out += (out.empty() ? "" : ", ") + s + " on " + RanksPhrase(ranks);
    return out;
  }

  // Majority of (rank, value); returns the deviant ranks and a text listing every value.
  static std::vector<int64_t> Deviants(const std::vector<std::pair<int64_t, std::string>>& values,
                                       std::string& text) {
    std::map<std::string, std::vector<int64_t>> by;
    std::vector<std::string> order;
    for (const auto& [r, v] : values) {
      if (!by.count(v)) order.push_back(v);
      by[v].push_back(r);
    }
    std::string best = order.front();
    for (const std::string& v : order)
      if (by[v].size() > by[best].size()) best = v;  // ties: the value of the lowest rank
    std::vector<int64_t> out;
    text.clear();
    for (const std::string& v : order) {
      text += (text.empty() ? "" : "; ") + RanksPhrase(by[v]) + (by[v].size() == 1 ? " has " : " have ") + v;
      if (v != best) out.insert(out.end(), by[v].begin(), by[v].end());
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  // The size rule of one entry: all_gather out = in x group size, reduce_scatter in = out x group
  // size, all_reduce in = out, per tensor pair (coalesced entries hold several). "" when it holds.
  static std::string SizeRuleBroken(const Collective& c, int64_t group_size) {
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

  // Every entry's own field (`field` of each collective) put to a vote; deviants are reported.
  template <typename Field>
  bool Agree(MismatchClass cls, const std::string& noun, Group& g, int64_t seq,
             const std::map<int64_t, const Collective*>& at, const std::string& where, Field field) {
    std::vector<std::pair<int64_t, std::string>> values;
    for (const auto& [r, c] : at) values.emplace_back(r, field(*c));
    std::string text;
    std::vector<int64_t> bad = Deviants(values, text);
    if (bad.empty()) return true;
    Report(cls, bad, g, seq, where + ": " + noun + " differ: " + text);
    return false;
  }

  bool CompareEntries(Group& g, int64_t seq, const std::map<int64_t, const Collective*>& at,
                      const std::string& where) {
    if (!Agree(MismatchClass::kCollectiveType, "collective types", g, seq, at, where,
               [](const Collective& c) { return "'" + c.flight->profiling_name + "'"; }))
      return false;
    if (!SizeRulesHold(g, seq, at, where) || !SizesAgree(g, seq, at, where)) return false;
    if (!Agree(MismatchClass::kDtype, "dtypes", g, seq, at, where, [](const Collective& c) {
          return Strs(c.flight->input_dtypes) + " -> " + Strs(c.flight->output_dtypes);
        }))
      return false;
    return NoMixedDtypes(g, seq, at, where) && StatesAgree(g, seq, at, where);
  }

  // Each entry against its kind's size rule.
  bool SizeRulesHold(Group& g, int64_t seq, const std::map<int64_t, const Collective*>& at,
                     const std::string& where) {
    const auto group_size = static_cast<int64_t>(g.ranks.size());
    std::vector<int64_t> broken_ranks;
    std::string first_broken;
    for (const auto& [r, c] : at) {
      std::string broken = SizeRuleBroken(*c, group_size);
      if (broken.empty()) continue;
      if (broken_ranks.empty()) first_broken = "rank " + std::to_string(r) + " has " + broken;
      broken_ranks.push_back(r);
    }
    if (!broken_ranks.empty()) {
      // Every rank that breaks its kind's rule is a culprit (all of them when the job itself is wrong).
      std::string also;
      if (broken_ranks.size() > 1) {
        also = broken_ranks.size() == at.size()
                   ? " (every rank of the group breaks the rule)"
                   : " (also " +
                         RanksPhrase(std::vector<int64_t>(broken_ranks.begin() + 1, broken_ranks.end())) +
                         ")";
      }
      Report(MismatchClass::kSizeOrSyntax, broken_ranks, g, seq, where + ": " + first_broken + also);
      return false;
    }
    return true;
  }

  // all_to_all: the group's totals (the split per peer is not recorded); others: equal input sizes.
  bool SizesAgree(Group& g, int64_t seq, const std::map<int64_t, const Collective*>& at,
                  const std::string& where) {
    if (at.begin()->second->kind == "all_to_all") {
      if (at.size() == g.ranks.size()) {
        int64_t in = 0, out = 0;
        for (const auto& [r, c] : at) {
          for (const auto& s : c->flight->input_sizes) in = SaturatingAdd(in, Numel(s));
          for (const auto& s : c->flight->output_sizes) out = SaturatingAdd(out, Numel(s));
        }
        if (in != out) {
          Report(MismatchClass::kAllToAllTotal, {}, g, seq,
                 where + ": the group's inputs hold " + std::to_string(in) + " elements but its outputs " +
                     std::to_string(out));
          return false;
        }
      }
      ++g.undecided;
    } else if (!Agree(MismatchClass::kSizeOrSyntax, "input sizes", g, seq, at, where,
                      [](const Collective& c) { return Shapes(c.flight->input_sizes); })) {
      return false;
    }
    return true;
  }

  bool NoMixedDtypes(Group& g, int64_t seq, const std::map<int64_t, const Collective*>& at,
                     const std::string& where) {
    for (const auto& [r, c] : at) {
      const FlightRecord& f = *c->flight;
      std::set<std::string> kinds(f.input_dtypes.begin(), f.input_dtypes.end());
      kinds.insert(f.output_dtypes.begin(), f.output_dtypes.end());
      if (kinds.size() > 1) {
        Report(MismatchClass::kDtype, {r}, g, seq,
               where + ": rank " + std::to_string(r) + " mixes dtypes: input " + Strs(f.input_dtypes) +
                   ", output " + Strs(f.output_dtypes));
        return false;
      }
    }
    return true;
  }

  bool StatesAgree(Group& g, int64_t seq, const std::map<int64_t, const Collective*>& at,
                   const std::string& where) {
    // State: the ranks least far along (scheduled < started < completed) hold the others up.
    int lowest = 2, highest = 0;
    for (const auto& [r, c] : at) {
      lowest = std::min(lowest, StateRank(c->flight->state));
      highest = std::max(highest, StateRank(c->flight->state));
    }
    if (lowest != highest) {
      std::vector<int64_t> behind;
      for (const auto& [r, c] : at)
        if (StateRank(c->flight->state) == lowest) behind.push_back(r);
      Report(MismatchClass::kState, behind, g, seq, where + ": state differs: " + StatesText(at));
      return false;
    }
    return true;
  }

  // Sends and recvs of one group: the k-th send from a to b matches the k-th recv on b from a.
  void CheckP2p(const Group& g) {
    std::map<std::pair<int64_t, int64_t>, std::vector<const Collective*>> sends, recvs;
    for (const auto& [r, m] : g.members) {
      for (const Collective* c : m.p2p) {
        int64_t peer_local = -1;
        const std::string& name = c->flight->profiling_name;
        size_t arrow = name.find(c->kind == "send" ? "->" : "<-");
        if (arrow != std::string::npos) {
          std::string digits = name.substr(arrow + 2);
          if (!digits.empty() && digits.size() < 8 &&
              digits.find_first_not_of("0123456789") == std::string::npos)
            peer_local = std::stoll(digits);
        }
        if (peer_local < 0 || peer_local >= static_cast<int64_t>(g.ranks.size())) continue;
        int64_t peer = g.ranks[static_cast<size_t>(peer_local)];
        if (c->kind == "send") sends[{r, peer}].push_back(c);
        if (c->kind == "recv") recvs[{peer, r}].push_back(c);
      }
    }
    std::set<std::pair<int64_t, int64_t>> pairs;
    for (const auto& [k, v] : sends) pairs.insert(k);
    for (const auto& [k, v] : recvs) pairs.insert(k);
    for (const auto& [src, dst] : pairs) {
      const Member* ms = g.members.count(src) ? &g.members.at(src) : nullptr;
      const Member* md = g.members.count(dst) ? &g.members.at(dst) : nullptr;
      if (ms == nullptr || md == nullptr || !ms->has_dump || !md->has_dump) continue;
      const std::string where = GroupText(g) + ", p2p " + std::to_string(src) + " -> " + std::to_string(dst);
      if (ms->wrapped || md->wrapped) {
        result_.notes.push_back(
            where + ": not matched, a ring buffer wrapped (the oldest sends or recvs may be gone)");
        continue;
      }
      const auto& s = sends[{src, dst}];
      const auto& v = recvs[{src, dst}];
      bool ok = true;
      for (size_t k = 0; ok && k < std::max(s.size(), v.size()); ++k) {
        if (k >= v.size() || k >= s.size()) {
          const Collective* have = k < s.size() ? s[k] : v[k];
          const int64_t culprit = k < s.size() ? dst : src;
          Report(MismatchClass::kMissingRanks, {culprit}, g, have->flight->p2p_seq_id,
                 where + ": '" + have->flight->profiling_name + "' (p2p seq " +
                     std::to_string(have->flight->p2p_seq_id) + ", " + have->flight->state + ") on rank " +
                     std::to_string(k < s.size() ? src : dst) + " has no matching " +
                     (k < s.size() ? "recv" : "send") + " on rank " + std::to_string(culprit));
          ok = false;
          break;
        }
        const FlightRecord& fs = *s[k]->flight;
        const FlightRecord& fr = *v[k]->flight;
        const auto& recv_sizes = fr.output_sizes.empty() ? fr.input_sizes : fr.output_sizes;
        const auto& recv_types = fr.output_dtypes.empty() ? fr.input_dtypes : fr.output_dtypes;
        if (fs.input_sizes != recv_sizes) {
          Report(MismatchClass::kSizeOrSyntax, {src, dst}, g, fs.p2p_seq_id,
                 where + ": send #" + std::to_string(k) + " sends " + Shapes(fs.input_sizes) +
                     " but the recv expects " + Shapes(recv_sizes));
          ok = false;
        } else if (fs.input_dtypes != recv_types) {
          Report(MismatchClass::kDtype, {src, dst}, g, fs.p2p_seq_id,
                 where + ": send #" + std::to_string(k) + " sends " + Strs(fs.input_dtypes) +
                     " but the recv expects " + Strs(recv_types));
          ok = false;
        } else {
          ++result_.collectives;
        }
      }
    }
  }

  const Model& model_;
  CheckResult result_;
};

}  // namespace

CheckResult CheckFlightRecords(const Model& model) { return FrChecker(model).Run(); }

}  // namespace shardscope::trace::detail
