#include "event_pools.hpp"

#include <algorithm>
#include <functional>
#include <variant>

namespace shardscope::trace::detail {
namespace {

// The low bits of a mixed hash of small integers repeat; a table indexed by them needs them
// spread (splitmix64's finalizer).
size_t Spread(size_t h) {
  h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ULL;
  h = (h ^ (h >> 27)) * 0x94d049bb133111ebULL;
  return h ^ (h >> 31);
}

size_t Mix(size_t h, size_t v) { return h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2)); }

size_t HashOf(int64_t v) { return std::hash<int64_t>()(v); }
size_t HashOf(const std::string& s) { return std::hash<std::string>()(s); }
size_t HashOf(const PlanStep& p) {
  size_t h = Mix(std::hash<IStr>()(p.comm), std::hash<IStr>()(p.src));
  h = Mix(h, std::hash<IStr>()(p.dst));
  for (int64_t d : p.mesh_dims) h = Mix(h, HashOf(d));
  for (int64_t d : p.logical_shape) h = Mix(h, HashOf(d));
  return h;
}
size_t HashOf(const SkippedMerge& m) { return Mix(HashOf(m.reason), HashOf(m.comm)); }
size_t HashOf(const OpStrategy& s) {
  size_t h = std::hash<double>()(s.cost_us);
  for (const auto* lists : {&s.inputs, &s.outputs}) {
    h = Mix(h, lists->size());
    for (const std::vector<std::string>& list : *lists)
      for (const std::string& p : list) h = Mix(h, HashOf(p));
  }
  return h;
}
size_t HashOf(const OpInput& in) {
  size_t h = Mix(std::hash<IStr>()(in.tensor), HashOf(in.redistribute_id));
  for (const std::string& p : in.placements) h = Mix(h, HashOf(p));
  for (const std::string& p : in.required) h = Mix(h, HashOf(p));
  return h;
}
size_t HashOf(const OpOutput& out) {
  size_t h = Mix(std::hash<IStr>()(out.tensor), out.requested ? 1 : 0);
  for (const std::string& p : out.placements) h = Mix(h, HashOf(p));
  for (int64_t d : out.global_shape) h = Mix(h, HashOf(d));
  for (int64_t d : out.local_shape) h = Mix(h, HashOf(d));
  return h;
}
size_t HashOf(const ImportedCollective& c) {
  return Mix(Mix(std::hash<IStr>()(c.kind), std::hash<IStr>()(c.group_name)), HashOf(c.group_size));
}
size_t HashOf(const std::vector<int64_t>& v) {
  size_t h = v.size();
  for (int64_t x : v) h = Mix(h, HashOf(x));
  return h;
}
template <typename T>
size_t HashOf(const SharedVec<T>& v) {
  size_t h = v.size();
  for (const T& x : v) h = Mix(h, HashOf(x));
  return h;
}
size_t HashOf(const Shared<FlightShape>& shape) {
  const FlightShape& s = *shape;
  size_t h = Mix(std::hash<IStr>()(s.pg_name), std::hash<IStr>()(s.profiling_name));
  h = Mix(Mix(h, std::hash<IStr>()(s.pg_desc)), HashOf(s.timeout_ms) + (s.is_p2p ? 1 : 0));
  h = Mix(h, std::hash<IStr>()(s.state));
  h = Mix(Mix(h, HashOf(s.input_sizes)), HashOf(s.output_sizes));
  return Mix(Mix(h, HashOf(s.input_dtypes)), HashOf(s.output_dtypes));
}

// A collective's shape by its fields, its lists by buffer: the pools made equal lists one buffer
// before the shape is pooled (a shape of unpooled lists may miss an equal one: shared less, never
// wrongly).
size_t HashOf(const Shared<CollectiveShape>& shape) {
  const CollectiveShape& s = *shape;
  size_t h = Mix(std::hash<IStr>()(s.kind), std::hash<IStr>()(s.dtype));
  h = Mix(h, static_cast<size_t>(s.step) * 2 + (s.negotiated ? 1 : 0));
  for (const auto* v : {&s.mesh_dims, &s.group, &s.bytes_sent, &s.bytes_recv})
    h = Mix(h, std::hash<const void*>()(&v->get()));
  return Mix(h, std::hash<const void*>()(s.flight.HasBuffer() ? &*s.flight : nullptr));
}

// An op's shape by its fields, its lists by buffer (as a collective's).
size_t HashOf(const Shared<OpShape>& shape) {
  const OpShape& s = *shape;
  size_t h = Mix(std::hash<IStr>()(s.name), std::hash<IStr>()(s.args));
  h = Mix(Mix(h, std::hash<IStr>()(s.rule)), std::hash<IStr>()(s.note));
  h = Mix(Mix(h, std::hash<IStr>()(s.error)), HashOf(s.chosen) * 2 + (s.ok ? 1 : 0));
  h = Mix(h, std::hash<const void*>()(&s.inputs.get()));
  h = Mix(h, std::hash<const void*>()(&s.outputs.get()));
  return Mix(h, std::hash<const void*>()(&s.candidates.get()));
}

// A redistribute's shape by its strings and cost, its lists by buffer (as a collective's).
size_t HashOf(const Shared<RedistributeShape>& shape) {
  const RedistributeShape& s = *shape;
  size_t h = Mix(std::hash<IStr>()(s.tensor), std::hash<IStr>()(s.dtype));
  for (const IStr* t :
       {&s.src_order, &s.dst_order, &s.planner, &s.planner_reason, &s.notation, &s.notation_unoptimized})
    h = Mix(h, std::hash<IStr>()(*t));
  h = Mix(h, std::hash<double>()(s.cost_us));
  h = Mix(h, std::hash<const void*>()(&s.global_shape.get()));
  h = Mix(Mix(h, std::hash<const void*>()(&s.src_placements.get())),
          std::hash<const void*>()(&s.dst_placements.get()));
  h = Mix(Mix(h, std::hash<const void*>()(&s.raw_plan.get())),
          std::hash<const void*>()(&s.optimized_plan.get()));
  return Mix(h, std::hash<const void*>()(&s.skipped_merges.get()));
}

// An imported plan by its fields, its recorded collectives by buffer.
size_t HashOf(const Shared<ImportedPlan>& plan) {
  const ImportedPlan& p = *plan;
  size_t h = Mix(std::hash<IStr>()(p.source), HashOf(p.line));
  h = Mix(Mix(h, std::hash<IStr>()(p.notation)), std::hash<IStr>()(p.verdict));
  h = Mix(h, std::hash<IStr>()(p.reason));
  return Mix(h, std::hash<const void*>()(&p.collectives.get()));
}

// Whether a pool slot or value holds something (an empty list and a default shape are left alone).
template <typename T>
bool Held(const SharedVec<T>& v) {
  return !v.empty();
}
template <typename T>
bool Held(const Shared<T>& v) {
  return v.HasBuffer();
}

}  // namespace

template <typename H>
void SharedPool<H>::Intern(H& v) {
  if (!Held(v)) return;
  const size_t h = Spread(HashOf(v));
  std::lock_guard<std::mutex> lock(mutex_);
  if (2 * (used_ + 1) > slots_.size()) Grow();
  const size_t mask = slots_.size() - 1;
  size_t i = h & mask;
  for (; Held(slots_[i].list); i = (i + 1) & mask) {
    if (slots_[i].hash == h && slots_[i].list == v) {
      v = slots_[i].list;
      return;
    }
  }
  v.MarkPooled();
  slots_[i] = {h, v};
  ++used_;
}

template <typename H>
void SharedPool<H>::Grow() {
  std::vector<Slot> bigger(std::max<size_t>(slots_.size() * 2, 256));
  const size_t mask = bigger.size() - 1;
  for (Slot& slot : slots_) {
    if (!Held(slot.list)) continue;
    size_t i = slot.hash & mask;
    while (Held(bigger[i].list)) i = (i + 1) & mask;
    bigger[i] = std::move(slot);
  }
  slots_ = std::move(bigger);
}

template <typename T>
void EventPools::One(InternPool<T>& local, SharedListPool<T>* shared, SharedVec<T>& v) {
  if (v.Pooled()) return;  // copied from a stored event: already the one copy
  if (local.Find(v)) return;
  // The shared pool marks what it holds under its lock; a list of this file alone is this
  // thread's until the file is read.
  if (shared != nullptr)
    shared->Intern(v);
  else
    v.MarkPooled();
  local.Remember(v);
}

template <typename T>
void RecentShapes<T>::Intern(Shared<T>& shape) {
  if (!shape.HasBuffer() || shape.Pooled()) return;  // a default shape, or one copied from a stored event
  for (size_t i = 0; i < recent_.size(); ++i) {
    if (recent_[i].SharesWith(shape) || *recent_[i] == *shape) {
      shape = recent_[i];
      std::rotate(recent_.begin(), recent_.begin() + static_cast<std::ptrdiff_t>(i),
                  recent_.begin() + static_cast<std::ptrdiff_t>(i) + 1);
      return;
    }
  }
  if (shared_ != nullptr)
    shared_->Intern(shape);
  else
    shape.MarkPooled();
  if (recent_.size() == kRecent) recent_.pop_back();
  recent_.insert(recent_.begin(), shape);
}

void EventPools::Intern(Event& event) {
  SharedPools* s = shared_;
  if (auto* b = std::get_if<RedistributeBegin>(&event)) {
    // As a collective's: a shape just decoded is this begin's own, one copied (`like`, a repeat
    // line) is pooled already.
    if (b->shape.HasBuffer() && !b->shape.Pooled()) {
      RedistributeShape& shape = b->shape.Mutable();
      One(ints_, s ? &s->ints : nullptr, shape.global_shape);
      One(strs_, s ? &s->strs : nullptr, shape.src_placements);
      One(strs_, s ? &s->strs : nullptr, shape.dst_placements);
      One(plans_, s ? &s->plans : nullptr, shape.raw_plan);
      One(plans_, s ? &s->plans : nullptr, shape.optimized_plan);
      One(merges_, s ? &s->merges : nullptr, shape.skipped_merges);
      redistribute_shapes_.Intern(b->shape);
    }
  } else if (auto* sb = std::get_if<StepBegin>(&event)) {
    for (SharedVec<int64_t>* v :
         {&sb->mesh_dims, &sb->logical_shape, &sb->local_shape_before, &sb->global_offset_before})
      One(ints_, s ? &s->ints : nullptr, *v);
  } else if (auto* e = std::get_if<StepEnd>(&event)) {
    One(ints_, s ? &s->ints : nullptr, e->local_shape_after);
    One(ints_, s ? &s->ints : nullptr, e->global_offset_after);
  } else if (auto* c = std::get_if<Collective>(&event)) {
    // A shape just decoded is this collective's own (Mutable() copies nothing); one copied from a
    // stored event (a collective_repeat line's) is pooled already, its lists too.
    if (c->shape.HasBuffer() && !c->shape.Pooled()) {
      CollectiveShape& shape = c->shape.Mutable();
      for (SharedVec<int64_t>* v : {&shape.mesh_dims, &shape.group, &shape.bytes_sent, &shape.bytes_recv})
        One(ints_, s ? &s->ints : nullptr, *v);
      shapes_.Intern(shape.flight);
      collective_shapes_.Intern(c->shape);
    }
  } else if (auto* op = std::get_if<Op>(&event)) {
    // A shape just decoded is this op's own (Mutable() copies nothing); one copied from an earlier
    // op (`like`) or stored event is pooled already, its lists too. Within it, the operand lists
    // are this op's own, or an earlier op's (pooled already, their elements' lists too).
    if (op->shape.HasBuffer() && !op->shape.Pooled()) {
      OpShape& shape = op->shape.Mutable();
      if (!shape.inputs.empty() && !shape.inputs.Pooled()) {
        for (OpInput& in : shape.inputs.Mutable()) {
          One(strs_, s ? &s->strs : nullptr, in.placements);
          One(strs_, s ? &s->strs : nullptr, in.required);
        }
      }
      if (!shape.outputs.empty() && !shape.outputs.Pooled()) {
        for (OpOutput& out : shape.outputs.Mutable()) {
          One(strs_, s ? &s->strs : nullptr, out.placements);
          One(ints_, s ? &s->ints : nullptr, out.global_shape);
          One(ints_, s ? &s->ints : nullptr, out.local_shape);
        }
      }
      // Ops repeat whole operand lists too (a loop's iterations, the ranks of a run).
      One(inputs_, s ? &s->inputs : nullptr, shape.inputs);
      One(outputs_, s ? &s->outputs : nullptr, shape.outputs);
      One(strategies_, s ? &s->strategies : nullptr, shape.candidates);
      op_shapes_.Intern(op->shape);
    }
  }
  // An imported plan just decoded is this begin's own (writing it copies nothing); one copied from
  // an earlier begin is pooled already. The ranks of a run repeat each other's plans.
  if (auto* b = std::get_if<RedistributeBegin>(&event);
      b != nullptr && b->imported && !b->imported.shared().Pooled()) {
    One(imported_, s ? &s->imported : nullptr, b->imported->collectives);
    imported_plans_.Intern(b->imported.shared());
  }
}

template class SharedPool<SharedVec<int64_t>>;
template class SharedPool<SharedVec<std::string>>;
template class SharedPool<SharedVec<PlanStep>>;
template class SharedPool<SharedVec<SkippedMerge>>;
template class SharedPool<SharedVec<OpStrategy>>;
template class SharedPool<SharedVec<OpInput>>;
template class SharedPool<SharedVec<OpOutput>>;
template class SharedPool<SharedVec<ImportedCollective>>;
template class SharedPool<Shared<FlightShape>>;
template class SharedPool<Shared<CollectiveShape>>;
template class RecentShapes<FlightShape>;
template class RecentShapes<CollectiveShape>;
template class RecentShapes<OpShape>;
template class RecentShapes<RedistributeShape>;
template class RecentShapes<ImportedPlan>;
template class SharedPool<Shared<ImportedPlan>>;
template class SharedPool<Shared<RedistributeShape>>;
template class SharedPool<Shared<OpShape>>;

}  // namespace shardscope::trace::detail
