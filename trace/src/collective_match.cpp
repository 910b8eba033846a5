#include "collective_match.hpp"

#include <algorithm>
#include <set>
#include <unordered_map>
#include <variant>

namespace shardscope::trace::detail {

namespace {

// The model's index lists each id's records in position order, which is rank order for the records
// of a model sorted by (rank, id); a hand-made model may not be sorted, so a run out of rank order
// is stably sorted by rank. Without a current index, the order is made here.
template <typename Record, typename IdOf>
std::vector<const Record*> ByIdRank(const std::vector<Record>& records,
                                    const std::optional<IdOrder<Record>>& order, IdOf id_of) {
  std::vector<const Record*> out;
  out.reserve(records.size());
  if (order) {
    for (size_t k = 0; k < order->size(); ++k) out.push_back(&order->At(k));
  } else {
    for (const Record& r : records) out.push_back(&r);
    std::stable_sort(out.begin(), out.end(),
                     [&](const Record* a, const Record* b) { return id_of(*a) < id_of(*b); });
  }
  auto by_rank = [](const Record* a, const Record* b) { return a->rank < b->rank; };
  for (size_t lo = 0, hi = 0; lo < out.size(); lo = hi) {
    const int64_t id = id_of(*out[lo]);
    for (hi = lo + 1; hi < out.size() && id_of(*out[hi]) == id;) ++hi;
    if (!std::is_sorted(out.begin() + lo, out.begin() + hi, by_rank))
      std::stable_sort(out.begin() + lo, out.begin() + hi, by_rank);
  }
  return out;
}

}  // namespace

std::vector<const RedistributeRecord*> RedistributesByIdRank(const Model& model) {
  return ByIdRank(model.redistributes, model.RedistributesInIdOrder(),
                  [](const RedistributeRecord& r) { return r.begin->id; });
}

std::vector<const OpRecord*> OpsByIdRank(const Model& model) {
  return ByIdRank(model.ops, model.OpsInIdOrder(), [](const OpRecord& r) { return r.op->id; });
}

std::map<int64_t, std::vector<const RedistributeRecord*>> RecordsById(const Model& model) {
  std::map<int64_t, std::vector<const RedistributeRecord*>> out;
  const std::vector<const RedistributeRecord*> all = RedistributesByIdRank(model);
  for (size_t lo = 0, hi = 0; lo < all.size(); lo = hi) {
    const int64_t id = all[lo]->begin->id;
    for (hi = lo + 1; hi < all.size() && all[hi]->begin->id == id;) ++hi;
    out.emplace_hint(out.end(), id,
                     std::vector<const RedistributeRecord*>(all.begin() + lo, all.begin() + hi));
  }
  return out;
}

std::string FormatRanks(const std::vector<int64_t>& v) {
  if (v.size() <= kListedRanks) return FormatInts(v);
  uint64_t hash = 1469598103934665603ull;  // FNV-1a over the ranks in order
  for (int64_t r : v) {
    hash ^= static_cast<uint64_t>(r);
    hash *= 1099511628211ull;
  }
  std::string out = "[";
  for (size_t i = 0; i < 4; ++i) out += std::to_string(v[i]) + ", ";
  out += "..., " + std::to_string(v[v.size() - 2]) + ", " + std::to_string(v.back()) + "] (" +
         std::to_string(v.size()) + " ranks, order ";
  static constexpr char kHex[] = "0123456789abcdef";
  for (int shift = 60; shift >= 0; shift -= 4) out += kHex[(hash >> shift) & 0xf];
  return out + ")";
}

std::vector<GroupCalls> GroupCollectives(const Model& model, bool with_flight_records) {
  // A communicator is identified by its member set: ranks of one group may list it in a different
  // order (a mismatch the check reports), but they still issue calls on the same communicator.
  std::map<std::vector<int64_t>, GroupCalls> groups;
  std::set<int64_t> with_file;
  for (const RankTrace& rt : model.ranks) with_file.insert(rt.header.rank);
  // The reader makes equal group lists share one buffer: its member set is sorted once per buffer,
  // not once per call (a group's size is what the trace claims, not what its files hold). The
  // buffers live as long as the model, which is not changed here.
  std::unordered_map<const int64_t*, GroupCalls*> by_buffer;
  for (const RankTrace& rt : model.ranks) {
    for (const Collective& call : rt.events.Of<Collective>()) {
      const Collective* c = &call;  // kept in GroupCalls: the stored event, not a copy
      if (call.HasFlight() && !with_flight_records) continue;
      const std::vector<int64_t>& members = c->group();
      GroupCalls*& g = by_buffer[members.data()];
      if (g == nullptr || members.empty()) {
        std::vector<int64_t> key = members;
        std::sort(key.begin(), key.end());
        key.erase(std::unique(key.begin(), key.end()), key.end());
        auto [it, inserted] = groups.try_emplace(key);
        if (inserted) {
          it->second.ranks = key;
          // The members that have a file: walk the smaller of the two sets.
          if (key.size() <= with_file.size()) {
            for (int64_t r : key)
              if (with_file.count(r)) it->second.calls[r];
          } else {
            for (int64_t r : with_file)
              if (std::binary_search(key.begin(), key.end(), r)) it->second.calls[r];
          }
        }
        g = &it->second;
      }
      g->calls[rt.header.rank].push_back(c);
    }
  }
  std::vector<GroupCalls> out;
  out.reserve(groups.size());
  for (auto& [key, g] : groups) out.push_back(std::move(g));
  return out;
}

}  // namespace shardscope::trace::detail
