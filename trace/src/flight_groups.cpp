#include "flight_groups.hpp"

#include <algorithm>
#include <set>

#include "shardscope/trace/flight_recorder.hpp"

namespace shardscope::trace {

namespace detail {

std::map<FlightGroupKey, FlightGroup> GroupFlightRecords(const Model& model) {
  std::set<int64_t> with_file;
  for (const RankTrace& rt : model.ranks) with_file.insert(rt.header.rank);
  std::map<FlightGroupKey, FlightGroup> groups;
  std::map<int64_t, bool> wrapped;  // per rank: a ring buffer wraps across all of its groups
  for (const RankTrace& rt : model.ranks) {
    for (const Collective& call : rt.events.Of<Collective>()) {
      const Collective* c = &call;  // pointers into it are kept: the stored event, not a copy
      if (!c->flight) continue;
      wrapped.try_emplace(rt.header.rank, c->flight->record_id > 0);
      std::vector<int64_t> sorted = c->group;
      std::sort(sorted.begin(), sorted.end());
      FlightGroup& g = groups[{c->flight->pg_name, std::move(sorted)}];
      if (g.ranks.empty()) {
        g.name = c->flight->pg_name;
        g.desc = c->flight->pg_desc;
        g.ranks = c->group;
        for (int64_t r : g.ranks) g.members[r].has_file = with_file.count(r) > 0;
      }
      FlightMember& m = g.members[rt.header.rank];
      m.has_file = true;
      if (c->flight->is_p2p)
        m.p2p.push_back(c);
      else
        m.by_seq.emplace(c->flight->seq_id, c);
    }
  }
  for (auto& [key, g] : groups)
    for (auto& [r, m] : g.members) m.wrapped = wrapped.count(r) > 0 && wrapped.at(r);
  return groups;
}

}  // namespace detail

bool HasFlightRecords(const Model& model) {
  for (const RankTrace& rt : model.ranks)
    for (const Collective& c : rt.events.Of<Collective>())
      if (c.flight) return true;
  return false;
}

}  // namespace shardscope::trace
