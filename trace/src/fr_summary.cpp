// The flight records' parts of `show` and `diff` (wherever collectives carry one: Flight Recorder
// dumps, Kineto traces, mixed models): per process group, every collective_seq_id with what each
// rank's buffer says about it, and the sends/recvs per rank.
#include <map>
#include <set>

#include "collective_match.hpp"
#include "flight_groups.hpp"
#include "shardscope/trace/flight_recorder.hpp"

namespace shardscope::trace {

using nlohmann::json;

namespace {

using detail::FlightEntry;
using detail::FlightSig;
using detail::FlightTable;

// One collective_seq_id of a group: each rank's entry (rank order), the lowest rank's first.
struct Row {
  std::map<int64_t, const FlightEntry*> by_rank;
  const FlightEntry& first() const { return *by_rank.begin()->second; }
};

std::map<int64_t, Row> Rows(const detail::FlightGroup& g) {
  std::map<int64_t, Row> rows;
  for (const auto& [r, m] : g.members)
    for (const FlightEntry& e : m.by_seq) rows[e.seq].by_rank.emplace(r, &e);
  return rows;
}

// Sends and recvs as (rank, entry), in rank and record order.
std::vector<std::pair<int64_t, const FlightEntry*>> P2p(const detail::FlightGroup& g) {
  std::vector<std::pair<int64_t, const FlightEntry*>> out;
  for (const auto& [r, m] : g.members)
    for (const FlightEntry& e : m.p2p) out.emplace_back(r, &e);
  return out;
}

std::string ShapesText(const std::vector<std::vector<int64_t>>& shapes) {
  std::string out;
  for (size_t i = 0; i < shapes.size(); ++i) out += (i ? " " : "") + detail::FormatInts(shapes[i]);
  return out.empty() ? "-" : out;
}

std::string RanksText(const std::vector<int64_t>& ranks) {
  std::string out;
  for (size_t i = 0; i < ranks.size(); ++i) out += (i ? "," : "") + std::to_string(ranks[i]);
  return out;
}

}  // namespace

std::string FormatFlightText(const Model& model) {
  std::string out;
  const FlightTable t = detail::GroupFlightRecords(model);
  for (const auto& [key, g] : t.Groups()) {
    const auto rows = Rows(g);
    const auto p2p = P2p(g);
    out += "\nprocess group " + g.name + (g.desc.empty() ? "" : " (" + g.desc + ")") + " ranks " +
           detail::FormatInts(g.ranks) + ": " + std::to_string(rows.size()) + " collective(s), " +
           std::to_string(p2p.size()) + " p2p entr" + (p2p.size() == 1 ? "y" : "ies") + "\n";
    for (const auto& [seq, row] : rows) {
      const FlightSig& f = t.Sig(row.first().sig);
      std::map<std::string, std::vector<int64_t>> by_state;
      std::vector<int64_t> absent;
      for (int64_t r : g.ranks) {
        auto it = row.by_rank.find(r);
        if (it == row.by_rank.end())
          absent.push_back(r);
        else
          by_state[t.State(it->second->state)].push_back(r);
      }
      out += "  seq " + std::to_string(seq) + "  " + f.profiling_name + "  " + ShapesText(f.input_sizes) +
             " -> " + ShapesText(f.output_sizes) + "  " +
             (f.input_dtypes.empty() ? "-" : f.input_dtypes.front());
      for (const auto& [state, ranks] : by_state) out += "  " + state + ": " + RanksText(ranks);
      if (!absent.empty()) out += "  absent: " + RanksText(absent);
      out += "\n";
    }
    for (const auto& [rank, e] : p2p) {
      const FlightSig& f = t.Sig(e->sig);
      out += "  rank " + std::to_string(rank) + " p2p seq " + std::to_string(e->seq) + "  " +
             f.profiling_name + "  " + ShapesText(f.input_sizes) + "  " +
             (f.input_dtypes.empty() ? "-" : f.input_dtypes.front()) + "  " + t.State(e->state) + "\n";
    }
  }
  return out;
}

json FlightJson(const Model& model) {
  json groups = json::array();
  const FlightTable t = detail::GroupFlightRecords(model);
  for (const auto& [key, g] : t.Groups()) {
    json rows = json::array();
    for (const auto& [seq, row] : Rows(g)) {
      json states = json::object();
      for (const auto& [r, e] : row.by_rank) states[std::to_string(r)] = t.State(e->state);
      const FlightSig& first = t.Sig(row.first().sig);
      rows.push_back({{"seq_id", seq},
                      {"profiling_name", first.profiling_name},
                      {"input_sizes", first.input_sizes},
                      {"output_sizes", first.output_sizes},
                      {"input_dtypes", first.input_dtypes},
                      {"states", states}});
    }
    json p2p = json::array();
    for (const auto& [rank, e] : P2p(g)) {
      const FlightSig& f = t.Sig(e->sig);
      p2p.push_back({{"rank", rank},
                     {"p2p_seq_id", e->seq},
                     {"profiling_name", f.profiling_name},
                     {"input_sizes", f.input_sizes},
                     {"state", t.State(e->state)}});
    }
    groups.push_back(
        {{"name", g.name}, {"desc", g.desc}, {"ranks", g.ranks}, {"collectives", rows}, {"p2p", p2p}});
  }
  return {{"process_groups", groups}};
}

namespace detail {

void DiffFlightRecords(const Model& baseline, const Model& candidate, const DiffOptions& options,
                       std::vector<Difference>& out) {
  const FlightTable tb = GroupFlightRecords(baseline), tc = GroupFlightRecords(candidate);
  const auto& gb = tb.Groups();
  const auto& gc = tc.Groups();
  std::set<FlightGroupKey> keys;
  for (const auto& [k, g] : gb) keys.insert(k);
  for (const auto& [k, g] : gc) keys.insert(k);
  auto add = [&](DiffCategory cat, const FlightGroup& g, std::optional<int64_t> b_seq,
                 std::optional<int64_t> c_seq, std::string what, std::string b, std::string c) {
    Difference d;
    d.category = cat;
    d.baseline_id = b_seq;
    d.candidate_id = c_seq;
    d.subject = "process group " + g.name + (g.desc.empty() ? "" : " (" + g.desc + ")") + " " +
                detail::FormatInts(g.ranks) + " collective";
    d.what = std::move(what);
    d.baseline = std::move(b);
    d.candidate = std::move(c);
    d.failing = options.fail_on.count(cat) > 0;
    out.push_back(std::move(d));
  };
  for (const auto& key : keys) {
    const FlightGroup& named = gb.count(key) ? gb.at(key) : gc.at(key);
    const auto rows_b = gb.count(key) ? Rows(gb.at(key)) : std::map<int64_t, Row>();
    const auto rows_c = gc.count(key) ? Rows(gc.at(key)) : std::map<int64_t, Row>();
    std::set<int64_t> seqs;
    for (const auto& [s, row] : rows_b) seqs.insert(s);
    for (const auto& [s, row] : rows_c) seqs.insert(s);
    for (int64_t seq : seqs) {
      auto ib = rows_b.find(seq), ic = rows_c.find(seq);
      if (ic == rows_c.end()) {
        add(DiffCategory::kCollectives, named, seq, std::nullopt, "removed",
            tb.Sig(ib->second.first().sig).profiling_name, "");
        continue;
      }
      if (ib == rows_b.end()) {
        add(DiffCategory::kCollectives, named, std::nullopt, seq, "added", "",
            tc.Sig(ic->second.first().sig).profiling_name);
        continue;
      }
      // Rank by rank: what each rank's entry says in each trace ("absent" when its buffer lacks it).
      std::set<int64_t> ranks;
      for (const auto& [r, f] : ib->second.by_rank) ranks.insert(r);
      for (const auto& [r, f] : ic->second.by_rank) ranks.insert(r);
      auto sizes = [](const FlightSig& f) {
        return ShapesText(f.input_sizes) + " -> " + ShapesText(f.output_sizes);
      };
      auto dtypes = [](const FlightSig& f) {
        std::string text;
        for (const auto& t : f.input_dtypes) text += (text.empty() ? "" : ",") + t;
        return text;
      };
      for (int64_t r : ranks) {
        auto eb = ib->second.by_rank.find(r), ec = ic->second.by_rank.find(r);
        const FlightEntry* b = eb == ib->second.by_rank.end() ? nullptr : eb->second;
        const FlightEntry* c = ec == ic->second.by_rank.end() ? nullptr : ec->second;
        const std::string rank = "rank " + std::to_string(r) + " ";
        if (b == nullptr || c == nullptr) {
          add(DiffCategory::kCollectives, named, seq, seq, rank + "state",
              b ? tb.State(b->state).str() : "absent", c ? tc.State(c->state).str() : "absent");
          continue;
        }
        const FlightSig* fb = &tb.Sig(b->sig);
        const FlightSig* fc = &tc.Sig(c->sig);
        if (fb->profiling_name != fc->profiling_name)
          add(DiffCategory::kCollectives, named, seq, seq, rank + "profiling name", fb->profiling_name,
              fc->profiling_name);
        if (sizes(*fb) != sizes(*fc))
          add(DiffCategory::kBytes, named, seq, seq, rank + "sizes", sizes(*fb), sizes(*fc));
        if (dtypes(*fb) != dtypes(*fc))
          add(DiffCategory::kBytes, named, seq, seq, rank + "dtypes", dtypes(*fb), dtypes(*fc));
        if (tb.State(b->state) != tc.State(c->state))
          add(DiffCategory::kCollectives, named, seq, seq, rank + "state", tb.State(b->state),
              tc.State(c->state));
      }
    }
  }
}

}  // namespace detail
}  // namespace shardscope::trace
