// The Flight Recorder part of `show`: per process group, every collective_seq_id with what each
// rank's buffer says about it, and the sends/recvs per rank.
#include <map>
#include <set>

#include "collective_match.hpp"
#include "shardscope/trace/flight_recorder.hpp"

namespace shardscope::trace {

using nlohmann::json;

namespace {

struct Row {
  const FlightRecord* first = nullptr;   // the lowest rank's entry
  std::map<int64_t, std::string> state;  // rank -> state
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
    for (const Event& ev : rt.events) {
      const auto* c = std::get_if<Collective>(&ev);
      if (c == nullptr || !c->flight) continue;
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
      Row& row = g.rows[c->flight->seq_id];
      if (row.first == nullptr) row.first = &*c->flight;
      row.state.emplace(rt.header.rank, c->flight->state);
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
      const FlightRecord& f = *row.first;
      std::map<std::string, std::vector<int64_t>> by_state;
      std::vector<int64_t> absent;
      for (int64_t r : g.ranks) {
        auto it = row.state.find(r);
        if (it == row.state.end())
          absent.push_back(r);
        else
          by_state[it->second].push_back(r);
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
      for (const auto& [r, s] : row.state) states[std::to_string(r)] = s;
      rows.push_back({{"seq_id", seq},
                      {"profiling_name", row.first->profiling_name},
                      {"input_sizes", row.first->input_sizes},
                      {"output_sizes", row.first->output_sizes},
                      {"input_dtypes", row.first->input_dtypes},
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

}  // namespace shardscope::trace
