#include "flight_load.hpp"

#include <algorithm>

namespace shardscope::app::gui {

std::string FlightPlace::Text() const {
  if (step == 2) return seq < 0 ? "nothing completed" : "done through seq " + std::to_string(seq);
  return std::string(step == 0 ? "scheduled" : "started") + " seq " + std::to_string(seq) +
         (kind.empty() ? "" : " (" + kind + ")");
}

std::map<std::string, FlightPlace> FlightPlacesOfRank(const trace::RankTrace& rank) {
  std::map<std::string, FlightPlace> out;
  std::map<std::string, bool> stuck;  // the group's place is a never-completed collective
  for (const trace::Collective& c : rank.events.Of<trace::Collective>()) {
    if (!c.HasFlight() || c.flight_shape().is_p2p) continue;
    const trace::FlightRecord& f = c.flight;
    auto [it, fresh] = out.try_emplace(c.flight_shape().pg_name.str());
    bool& is_stuck = stuck[c.flight_shape().pg_name.str()];
    FlightPlace& p = it->second;
    if (c.flight_shape().state == "completed") {
      if (!is_stuck && f.seq_id > p.seq) p.seq = f.seq_id;
      continue;
    }
    // The first collective of the group it never completed (lowest seq): where it stands.
    if (!is_stuck || f.seq_id < p.seq) {
      p.seq = f.seq_id;
      p.step = c.flight_shape().state == "started" ? 1 : 0;
      p.kind = c.kind().str();
      is_stuck = true;
    }
    (void)fresh;
  }
  return out;
}

void FlightLoadCollector::Add(const trace::FlightRecorderDump& dump) {
  Rank r;
  r.rank = dump.trace.header.rank;
  r.max_rank = dump.max_rank;
  r.places = FlightPlacesOfRank(dump.trace);
  std::map<std::string, Group> groups;
  for (const trace::Collective& c : dump.trace.events.Of<trace::Collective>()) {
    if (!c.HasFlight()) continue;
    ++r.entries;
    r.stuck = r.stuck || c.flight_shape().state != "completed";
    if (c.flight_shape().is_p2p) continue;
    auto [it, fresh] = groups.try_emplace(c.flight_shape().pg_name.str());
    if (fresh) {
      it->second.desc = c.flight_shape().pg_desc.str();
      it->second.members.assign(c.group().begin(), c.group().end());
    }
  }
  std::lock_guard<std::mutex> lock(mutex_);
  ranks_.push_back(std::move(r));
  for (auto& [name, g] : groups) {
    Group& have = groups_[name];
    if (have.members.size() < g.members.size()) have = std::move(g);
  }
}

int64_t FlightLoadCollector::ranks() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<int64_t>(ranks_.size());
}

FlightLoadSnapshot FlightLoadCollector::Snapshot(int64_t files_total) const {
  FlightLoadSnapshot s;
  s.files_total = files_total;
  std::lock_guard<std::mutex> lock(mutex_);
  s.ranks_loaded = static_cast<int64_t>(ranks_.size());
  s.world = files_total;
  for (const Rank& r : ranks_) s.world = std::max({s.world, r.rank + 1, r.max_rank + 1});
  s.rank_status.assign(static_cast<size_t>(std::max<int64_t>(0, s.world)), 0);
  std::map<std::string, std::map<FlightPlace, std::vector<int64_t>>> at;  // group -> place -> ranks
  for (const Rank& r : ranks_) {
    s.entries += r.entries;
    if (r.rank >= 0 && r.rank < s.world) s.rank_status[static_cast<size_t>(r.rank)] = r.stuck ? 2 : 1;
    s.stuck_ranks += r.stuck ? 1 : 0;
    for (const auto& [name, place] : r.places) at[name][place].push_back(r.rank);
  }
  for (const auto& [name, g] : groups_) {
    FlightLoadGroup out;
    out.name = name;
    out.desc = g.desc;
    out.size = static_cast<int64_t>(g.members.size());
    auto found = at.find(name);
    if (found != at.end()) {
      for (const auto& [place, ranks] : found->second) {  // std::map: least advanced first
        FlightLoadGroup::State st{place, place.Text(), ranks, ""};
        std::sort(st.ranks.begin(), st.ranks.end());
        st.ranks_text = trace::FormatRankRanges(st.ranks);  // once here, not every frame
        if (st.ranks_text.size() > 160) st.ranks_text = st.ranks_text.substr(0, 160) + " ...";
        out.loaded += static_cast<int64_t>(st.ranks.size());
        out.states.push_back(std::move(st));
      }
    }
    s.behind_groups += out.Behind() ? 1 : 0;
    s.groups.push_back(std::move(out));
  }
  // Behind groups, least advanced first; then groups whose read ranks wait in a collective they
  // never completed; then the rest. Ties: smaller groups first, then by name.
  auto rank_of = [](const FlightLoadGroup& g) { return g.Behind() ? 0 : g.Stuck() ? 1 : 2; };
  std::stable_sort(s.groups.begin(), s.groups.end(), [&](const FlightLoadGroup& a, const FlightLoadGroup& b) {
    if (rank_of(a) != rank_of(b)) return rank_of(a) < rank_of(b);
    if (a.Behind() && !(a.states.front().place == b.states.front().place))
      return a.states.front().place < b.states.front().place;
    if (a.size != b.size) return a.size < b.size;
    return a.name < b.name;
  });
  // The least advanced ranks of the behind groups.
  for (const FlightLoadGroup& g : s.groups) {
    if (!g.Behind()) break;
    for (int64_t r : g.states.front().ranks)
      if (r >= 0 && r < s.world && s.rank_status[static_cast<size_t>(r)] != 3) {
        s.rank_status[static_cast<size_t>(r)] = 3;
        ++s.behind_ranks;
      }
  }
  return s;
}

}  // namespace shardscope::app::gui
