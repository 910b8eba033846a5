// The Flight Recorder parts of `show` and `diff`: per process group, every collective_seq_id with
// what each rank's buffer says about it, and the sends/recvs per rank.
#include <map>
#include <set>

#include "collective_match.hpp"
#include "fr_check.hpp"
#include "shardscope/trace/flight_recorder.hpp"

namespace shardscope::trace {

using nlohmann::json;

namespace {

struct Row {
  std::map<int64_t, const FlightRecord*> by_rank;                         // rank -> its entry
  const FlightRecord& first() const { return *by_rank.begin()->second; }  // the lowest rank's
};

struct Group {
  std::string name, desc;
  std::vector<int64_t> ranks;
  std::map<int64_t, Row> rows;                               // by seq id
  std::vector<std::pair<int64_t, const FlightRecord*>> p2p;  // (rank, entry) in rank, record order
};

std::map<std::pair<std::string, std::vector<int64_t>>, Group> Groups(const Model& model) {
  std::map<std::pair<std::string, std::vector<int64_t>>, Group> groups;
  for (const RankTrace& rt : model.ranks) {
    for (const Collective& call : rt.events.Of<Collective>()) {
      const Collective* c = &call;  // pointers into it are kept: the stored event, not a copy
      if (!c->flight) continue;
      std::vector<int64_t> sorted = c->group;
      std::sort(sorted.begin(), sorted.end());
      Group& g = groups[{c->flight->pg_name, sorted}];
      g.name = c->flight->pg_name;
      g.desc = c->flight->pg_desc;
      g.ranks = c->group;
      if (c->flight->is_p2p) {
        g.p2p.emplace_back(rt.header.rank, &*c->flight);
        continue;
      }
      g.rows[c->flight->seq_id].by_rank.emplace(rt.header.rank, &*c->flight);
    }
  }
  return groups;
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
  for (const auto& [key, g] : Groups(model)) {
    out += "\nprocess group " + g.name + (g.desc.empty() ? "" : " (" + g.desc + ")") + " ranks " +
           detail::FormatInts(g.ranks) + ": " + std::to_string(g.rows.size()) + " collective(s), " +
           std::to_string(g.p2p.size()) + " p2p entr" + (g.p2p.size() == 1 ? "y" : "ies") + "\n";
    for (const auto& [seq, row] : g.rows) {
      const FlightRecord& f = row.first();
      std::map<std::string, std::vector<int64_t>> by_state;
      std::vector<int64_t> absent;
      for (int64_t r : g.ranks) {
        auto it = row.by_rank.find(r);
        if (it == row.by_rank.end())
          absent.push_back(r);
        else
          by_state[it->second->state].push_back(r);
      }
      out += "  seq " + std::to_string(seq) + "  " + f.profiling_name + "  " + ShapesText(f.input_sizes) +
             " -> " + ShapesText(f.output_sizes) + "  " +
             (f.input_dtypes.empty() ? "-" : f.input_dtypes.front());
      for (const auto& [state, ranks] : by_state) out += "  " + state + ": " + RanksText(ranks);
      if (!absent.empty()) out += "  absent: " + RanksText(absent);
      out += "\n";
    }
    for (const auto& [rank, f] : g.p2p) {
      out += "  rank " + std::to_string(rank) + " p2p seq " + std::to_string(f->p2p_seq_id) + "  " +
             f->profiling_name + "  " + ShapesText(f->input_sizes) + "  " +
             (f->input_dtypes.empty() ? "-" : f->input_dtypes.front()) + "  " + f->state + "\n";
    }
  }
  return out;
}

json FlightJson(const Model& model) {
  json groups = json::array();
  for (const auto& [key, g] : Groups(model)) {
    json rows = json::array();
    for (const auto& [seq, row] : g.rows) {
      json states = json::object();
      for (const auto& [r, f] : row.by_rank) states[std::to_string(r)] = f->state;
      rows.push_back({{"seq_id", seq},
                      {"profiling_name", row.first().profiling_name},
                      {"input_sizes", row.first().input_sizes},
                      {"output_sizes", row.first().output_sizes},
                      {"input_dtypes", row.first().input_dtypes},
                      {"states", states}});
    }
    json p2p = json::array();
    for (const auto& [rank, f] : g.p2p) {
      p2p.push_back({{"rank", rank},
                     {"p2p_seq_id", f->p2p_seq_id},
                     {"profiling_name", f->profiling_name},
                     {"input_sizes", f->input_sizes},
                     {"state", f->state}});
    }
    groups.push_back(
        {{"name", g.name}, {"desc", g.desc}, {"ranks", g.ranks}, {"collectives", rows}, {"p2p", p2p}});
  }
  return {{"process_groups", groups}};
}

namespace detail {

void DiffFlightRecords(const Model& baseline, const Model& candidate, const DiffOptions& options,
                       std::vector<Difference>& out) {
  auto gb = Groups(baseline), gc = Groups(candidate);
  std::set<std::pair<std::string, std::vector<int64_t>>> keys;
  for (const auto& [k, g] : gb) keys.insert(k);
  for (const auto& [k, g] : gc) keys.insert(k);
  const Group empty;
  auto add = [&](DiffCategory cat, const Group& g, std::optional<int64_t> b_seq, std::optional<int64_t> c_seq,
                 std::string what, std::string b, std::string c) {
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
    const Group& b = gb.count(key) ? gb.at(key) : empty;
    const Group& c = gc.count(key) ? gc.at(key) : empty;
    const Group& named = gb.count(key) ? b : c;
    std::set<int64_t> seqs;
    for (const auto& [s, row] : b.rows) seqs.insert(s);
    for (const auto& [s, row] : c.rows) seqs.insert(s);
    for (int64_t seq : seqs) {
      auto ib = b.rows.find(seq), ic = c.rows.find(seq);
      if (ic == c.rows.end()) {
        add(DiffCategory::kCollectives, named, seq, std::nullopt, "removed",
            ib->second.first().profiling_name, "");
        continue;
      }
      if (ib == b.rows.end()) {
        add(DiffCategory::kCollectives, named, std::nullopt, seq, "added", "",
            ic->second.first().profiling_name);
        continue;
      }
      // Rank by rank: what each rank's entry says in each trace ("absent" when its buffer lacks it).
      std::set<int64_t> ranks;
      for (const auto& [r, f] : ib->second.by_rank) ranks.insert(r);
      for (const auto& [r, f] : ic->second.by_rank) ranks.insert(r);
      auto sizes = [](const FlightRecord& f) {
        return ShapesText(f.input_sizes) + " -> " + ShapesText(f.output_sizes);
      };
      auto dtypes = [](const FlightRecord& f) {
        std::string text;
        for (const auto& t : f.input_dtypes) text += (text.empty() ? "" : ",") + t;
        return text;
      };
      for (int64_t r : ranks) {
        auto eb = ib->second.by_rank.find(r), ec = ic->second.by_rank.find(r);
        const FlightRecord* fb = eb == ib->second.by_rank.end() ? nullptr : eb->second;
        const FlightRecord* fc = ec == ic->second.by_rank.end() ? nullptr : ec->second;
        const std::string rank = "rank " + std::to_string(r) + " ";
        if (fb == nullptr || fc == nullptr) {
          add(DiffCategory::kCollectives, named, seq, seq, rank + "state", fb ? fb->state : "absent",
              fc ? fc->state : "absent");
          continue;
        }
        if (fb->profiling_name != fc->profiling_name)
          add(DiffCategory::kCollectives, named, seq, seq, rank + "profiling name", fb->profiling_name,
              fc->profiling_name);
        if (sizes(*fb) != sizes(*fc))
          add(DiffCategory::kBytes, named, seq, seq, rank + "sizes", sizes(*fb), sizes(*fc));
        if (dtypes(*fb) != dtypes(*fc))
          add(DiffCategory::kBytes, named, seq, seq, rank + "dtypes", dtypes(*fb), dtypes(*fc));
        if (fb->state != fc->state)
          add(DiffCategory::kCollectives, named, seq, seq, rank + "state", fb->state, fc->state);
      }
    }
  }
}

}  // namespace detail
}  // namespace shardscope::trace
