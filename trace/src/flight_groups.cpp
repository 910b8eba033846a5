#include "flight_groups.hpp"

#include <algorithm>
#include <tuple>
#include <unordered_map>

#include "shardscope/trace/flight_recorder.hpp"

namespace shardscope::trace {

namespace detail {

namespace {

// Orders signatures by value, so that equal ones (from different files, whose lists are separate
// buffers) get one index.
bool SigLess(const FlightSig& a, const FlightSig& b) {
  return std::tie(a.profiling_name.str(), a.kind.str(), a.input_sizes.get(), a.output_sizes.get(),
                  a.input_dtypes.get(), a.output_dtypes.get()) <
         std::tie(b.profiling_name.str(), b.kind.str(), b.input_sizes.get(), b.output_sizes.get(),
                  b.input_dtypes.get(), b.output_dtypes.get());
}

struct PtrHash {
  template <size_t N>
  size_t operator()(const std::array<const void*, N>& a) const {
    size_t h = 0;
    for (const void* p : a) h = h * 1000003u ^ std::hash<const void*>()(p);
    return h;
  }
};

}  // namespace

const FlightEntry* FlightMember::Find(int64_t seq) const {
  auto it = std::lower_bound(by_seq.begin(), by_seq.end(), seq,
                             [](const FlightEntry& e, int64_t s) { return e.seq < s; });
  return it != by_seq.end() && it->seq == seq ? &*it : nullptr;
}

struct FlightTable::Impl {
  struct SigIndexLess {
    const std::vector<FlightSig>* sigs;
    bool operator()(uint32_t a, uint32_t b) const { return SigLess((*sigs)[a], (*sigs)[b]); }
  };
  std::mutex mutex;
  std::vector<FlightSig> sigs;
  std::set<uint32_t, SigIndexLess> sig_index{SigIndexLess{&sigs}};
  std::vector<IStr> states;
  std::unordered_map<const std::string*, uint32_t> state_index;
  // Per group, the record that names it: (order of its trace, its place among the trace's records).
  std::map<FlightGroupKey, std::pair<int64_t, int64_t>> named_by;
  // Per rank, whether its first flight record (in the trace of lowest order) is not record 0.
  std::map<int64_t, std::pair<int64_t, bool>> wrapped;
};

FlightTable::FlightTable() : impl_(std::make_unique<Impl>()) {}
FlightTable::FlightTable(FlightTable&&) noexcept = default;
FlightTable& FlightTable::operator=(FlightTable&&) noexcept = default;
FlightTable::~FlightTable() = default;

const FlightSig& FlightTable::Sig(uint32_t i) const { return impl_->sigs[i]; }
const IStr& FlightTable::State(uint32_t i) const { return impl_->states[i]; }

void FlightTable::AddRank(int64_t order, const RankTrace& rt) {
  const int64_t rank = rt.header.rank;
  struct Local {
    FlightGroup* group;
    std::vector<FlightEntry> by_seq, p2p;
  };
  std::vector<Local> locals;
  // Within one trace equal strings and lists are mostly one object (the reader interns them), so
  // they are looked up by identity first; the table interns them by value.
  std::unordered_map<std::array<const void*, 2>, size_t, PtrHash> group_slot;
  std::unordered_map<std::array<const void*, 6>, uint32_t, PtrHash> sig_id;
  std::unordered_map<const void*, uint32_t> state_id;
  bool first = true, wrapped = false;
  int64_t position = 0;
  for (const Collective& c : rt.events.Of<Collective>()) {
    if (!c.HasFlight()) continue;
    const FlightRecord& f = c.flight;
    const FlightShape& shape = c.flight_shape();
    if (first) wrapped = f.record_id > 0;
    first = false;
    auto [git, new_group] = group_slot.try_emplace({&shape.pg_name.str(), &c.group().get()}, locals.size());
    if (new_group) {
      std::vector<int64_t> sorted = c.group();
      std::sort(sorted.begin(), sorted.end());
      FlightGroupKey key{shape.pg_name.str(), std::move(sorted)};
      std::lock_guard<std::mutex> lock(impl_->mutex);
      auto [named, inserted] = impl_->named_by.try_emplace(key, order, position);
      FlightGroup& g = groups_[key];
      // The first record names the group; a group without ranks is named by its last record, as
      // every record found it still without ranks.
      const auto at = std::make_pair(order, position);
      if (inserted || (key.second.empty() ? named->second < at : at < named->second)) {
        named->second = at;
        g.name = shape.pg_name.str();
        g.desc = shape.pg_desc.str();
        g.ranks = c.group();
      }
      locals.push_back({&g, {}, {}});
    }
    FlightEntry e;
    e.seq = shape.is_p2p ? f.p2p_seq_id : f.seq_id;
    auto [sit, new_sig] =
        sig_id.try_emplace({&shape.profiling_name.str(), &c.kind().str(), &shape.input_sizes.get(),
                            &shape.output_sizes.get(), &shape.input_dtypes.get(), &shape.output_dtypes.get()},
                           0);
    if (new_sig) {
      std::lock_guard<std::mutex> lock(impl_->mutex);
      sit->second = InternSig({shape.profiling_name, c.kind(), shape.input_sizes, shape.output_sizes,
                               shape.input_dtypes, shape.output_dtypes});
    }
    e.sig = sit->second;
    auto [stit, new_state] = state_id.try_emplace(&shape.state.str(), 0);
    if (new_state) {
      std::lock_guard<std::mutex> lock(impl_->mutex);
      auto [it, inserted] =
          impl_->state_index.try_emplace(&shape.state.str(), static_cast<uint32_t>(impl_->states.size()));
      if (inserted) impl_->states.push_back(shape.state);
      stit->second = it->second;
    }
    e.state = stit->second;
    Local& local = locals[git->second];
    (shape.is_p2p ? local.p2p : local.by_seq).push_back(e);
    ++position;
  }
  for (Local& local : locals) {
    // A repeated seq keeps its oldest entry: a stable sort, then the first of each run.
    std::stable_sort(local.by_seq.begin(), local.by_seq.end(),
                     [](const FlightEntry& a, const FlightEntry& b) { return a.seq < b.seq; });
    local.by_seq.erase(std::unique(local.by_seq.begin(), local.by_seq.end(),
                                   [](const FlightEntry& a, const FlightEntry& b) { return a.seq == b.seq; }),
                       local.by_seq.end());
    local.by_seq.shrink_to_fit();
    local.p2p.shrink_to_fit();
  }
  std::lock_guard<std::mutex> lock(impl_->mutex);
  if (!first) {
    auto [it, inserted] = impl_->wrapped.try_emplace(rank, order, wrapped);
    if (!inserted && order < it->second.first) it->second = {order, wrapped};
  }
  for (Local& local : locals) {
    FlightMember& m = local.group->members[rank];
    if (m.by_seq.empty()) {
      m.by_seq = std::move(local.by_seq);
    } else {
      // The same rank in two traces (a hand-made model): the earlier trace's entry of a seq stays.
      std::vector<FlightEntry> merged;
      std::set_union(m.by_seq.begin(), m.by_seq.end(), local.by_seq.begin(), local.by_seq.end(),
                     std::back_inserter(merged),
                     [](const FlightEntry& a, const FlightEntry& b) { return a.seq < b.seq; });
      m.by_seq = std::move(merged);
    }
    m.p2p.insert(m.p2p.end(), local.p2p.begin(), local.p2p.end());
  }
}

uint32_t FlightTable::InternSig(FlightSig sig) {
  impl_->sigs.push_back(std::move(sig));
  const auto probe = static_cast<uint32_t>(impl_->sigs.size() - 1);
  auto [it, inserted] = impl_->sig_index.insert(probe);
  if (!inserted) impl_->sigs.pop_back();
  return *it;
}

void FlightTable::Finish(const std::set<int64_t>& with_file) {
  for (auto& [key, g] : groups_) {
    for (int64_t r : g.ranks) g.members[r];
    for (auto& [r, m] : g.members) {
      m.has_file = with_file.count(r) > 0;
      auto w = impl_->wrapped.find(r);
      m.wrapped = w != impl_->wrapped.end() && w->second.second;
      members_.insert(r);
    }
  }
}

FlightTable GroupFlightRecords(const Model& model) {
  FlightTable table;
  std::set<int64_t> with_file;
  for (size_t i = 0; i < model.ranks.size(); ++i) {
    with_file.insert(model.ranks[i].header.rank);
    table.AddRank(static_cast<int64_t>(i), model.ranks[i]);
  }
  table.Finish(with_file);
  return table;
}

}  // namespace detail

bool HasFlightRecords(const Model& model) {
  for (const RankTrace& rt : model.ranks)
    for (const Collective& c : rt.events.Of<Collective>())
      if (c.HasFlight()) return true;
  return false;
}

}  // namespace shardscope::trace
