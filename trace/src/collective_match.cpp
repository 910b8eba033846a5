#include "collective_match.hpp"

#include <algorithm>
#include <set>
#include <variant>

namespace shardscope::trace::detail {

std::map<int64_t, std::vector<const RedistributeRecord*>> RecordsById(const Model& model) {
  std::map<int64_t, std::vector<const RedistributeRecord*>> out;
  for (int64_t id : model.RedistributeIds()) {
    std::vector<const RedistributeRecord*> recs = model.RedistributesWithId(id);
    // Already in rank order for a model the reader built; a hand-made one may not be sorted.
    std::stable_sort(recs.begin(), recs.end(), [](auto* a, auto* b) { return a->rank < b->rank; });
    out.emplace(id, std::move(recs));
  }
  return out;
}

std::vector<GroupCalls> GroupCollectives(const Model& model) {
  // A communicator is identified by its member set: ranks of one group may list it in a different
  // order (a mismatch the check reports), but they still issue calls on the same communicator.
  std::map<std::vector<int64_t>, GroupCalls> groups;
  std::set<int64_t> with_file;
  for (const RankTrace& rt : model.ranks) with_file.insert(rt.header.rank);
  for (const RankTrace& rt : model.ranks) {
    for (const Collective& call : rt.events.Of<Collective>()) {
      const Collective* c = &call;  // kept in GroupCalls: the stored event, not a copy
      std::vector<int64_t> key = c->group;
      std::sort(key.begin(), key.end());
      key.erase(std::unique(key.begin(), key.end()), key.end());
      auto [it, inserted] = groups.try_emplace(key);
      if (inserted) {
        it->second.ranks = key;
        for (int64_t r : key)
          if (with_file.count(r)) it->second.calls[r];
      }
      it->second.calls[rt.header.rank].push_back(c);
    }
  }
  std::vector<GroupCalls> out;
  out.reserve(groups.size());
  for (auto& [key, g] : groups) out.push_back(std::move(g));
  return out;
}

}  // namespace shardscope::trace::detail
