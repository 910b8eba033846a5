// Copying a Model: the copy's records refer to the copy's events (event_ref.hpp).
#include <functional>
#include <map>
#include <vector>

#include "shardscope/trace/model.hpp"

namespace shardscope::trace {

namespace {

// Points `ref` at the event of `to` that sits where its event sits in `from`; an event stored
// elsewhere becomes a copy of its own.
template <typename T>
void Rebind(EventRef<T>& ref, const EventList* from, const EventList* to) {
  if (!ref.IsReference()) return;
  const T* p = &*ref;
  if (from != nullptr && to != nullptr) {
    const std::vector<T>& a = from->Of<T>();
    const std::vector<T>& b = to->Of<T>();
    std::less<const T*> less;
    if (!a.empty() && a.size() == b.size() && !less(p, a.data()) && less(p, a.data() + a.size())) {
      ref = EventRef<T>::To(b.data() + (p - a.data()));
      return;
    }
  }
  ref.Mutable();
}

}  // namespace

Model::Model(const Model& other)
    : source(other.source),
      world(other.world),
      ranks(other.ranks),
      redistributes(other.redistributes),
      ops(other.ops),
      diagnostics(other.diagnostics),
      index(other.index) {
  std::map<int64_t, size_t> position;  // header.rank -> index into ranks
  for (size_t i = 0; i < ranks.size(); ++i) position.emplace(ranks[i].header.rank, i);
  for (RedistributeRecord& rec : redistributes) {
    auto it = position.find(rec.rank);
    const EventList* from = it != position.end() ? &other.ranks[it->second].events : nullptr;
    const EventList* to = it != position.end() ? &ranks[it->second].events : nullptr;
    Rebind(rec.begin, from, to);
    Rebind(rec.end, from, to);
    for (StepRecord& s : rec.steps) {
      Rebind(s.begin, from, to);
      Rebind(s.end, from, to);
    }
    for (size_t i = 0; i < rec.collectives.size(); ++i) Rebind(rec.collectives.Ref(i), from, to);
  }
  for (OpRecord& rec : ops) {
    auto it = position.find(rec.rank);
    const EventList* from = it != position.end() ? &other.ranks[it->second].events : nullptr;
    const EventList* to = it != position.end() ? &ranks[it->second].events : nullptr;
    Rebind(rec.op, from, to);
    for (size_t i = 0; i < rec.collectives.size(); ++i) Rebind(rec.collectives.Ref(i), from, to);
  }
}

Model& Model::operator=(const Model& other) {
  if (this != &other) *this = Model(other);
  return *this;
}

}  // namespace shardscope::trace
