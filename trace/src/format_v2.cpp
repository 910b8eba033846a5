// The rules by which a v2 reader rebuilds what a v2 line left out (docs/trace-format.md,
// "Version 2"); the decoders parse, this completes.
#include "format_v2.hpp"

#include "codec.hpp"

#include <algorithm>

namespace shardscope::trace::detail {

const RedistributeBegin* FileContext::Begin(int64_t id) const {
  const size_t* at = begins_.Find(id);
  if (at == nullptr || events_ == nullptr) return nullptr;
  return &events_->Of<RedistributeBegin>()[*at];
}

const Op* FileContext::OpWithId(int64_t id) const {
  const size_t* at = ops_.Find(id);
  if (at == nullptr || events_ == nullptr) return nullptr;
  return &events_->Of<Op>()[*at];
}

const std::pair<size_t, size_t>* FileContext::Run(int64_t id) const {
  const size_t* from = runs_from_.Find(id);
  const size_t* to = runs_to_.Find(id);
  if (from == nullptr || to == nullptr) return nullptr;
  run_ = {*from, *to};
  return &run_;
}

const size_t* FileContext::Flight(int64_t back) const {
  if (back < 1 || back > kMaxFlightBack || static_cast<size_t>(back) > flights_seen_) return nullptr;
  return &flights_[(flights_seen_ - static_cast<size_t>(back)) % static_cast<size_t>(kMaxFlightBack)];
}

void FileContext::Remember(const Event& event, size_t index) {
  if (!v2()) return;  // v1 lines never refer to earlier ones
  // Whether this event continues the run of redistribute run_id_ (and ends it).
  const bool next = run_id_ >= 0 && index == run_next_;
  bool continues = false, ends = false;
  if (const auto* begin = std::get_if<RedistributeBegin>(&event)) {
    if (events_ != nullptr) begins_.TryEmplace(begin->id, events_->Of<RedistributeBegin>().size());
    if (begin->op_id >= 0) links_[begin->op_id].emplace_back(begin->op_input, begin->id);
    run_id_ = begin->id, run_first_ = index, run_next_ = index + 1;
    return;
  } else if (const auto* op = std::get_if<Op>(&event)) {
    if (events_ != nullptr) ops_.TryEmplace(op->id, events_->Of<Op>().size());
    links_.erase(op->id);  // an op id appears once: its links are used
  } else if (const auto* e = std::get_if<StepBegin>(&event)) {
    continues = next && e->redistribute_id == run_id_;
  } else if (const auto* e = std::get_if<StepEnd>(&event)) {
    continues = next && e->redistribute_id == run_id_;
  } else if (const auto* e = std::get_if<Collective>(&event)) {
    continues = next && e->redistribute_id == run_id_;
    if (e->HasFlight()) {
      if (flights_.size() < static_cast<size_t>(kMaxFlightBack))
        flights_.push_back(index);
      else
        flights_[flights_seen_ % static_cast<size_t>(kMaxFlightBack)] = index;
      ++flights_seen_;
    }
  } else if (const auto* e = std::get_if<RedistributeEnd>(&event)) {
    ends = next && e->id == run_id_;
  }
  // A run's id is taken once: a second run of the same id neither replaces nor splits the first.
  if (ends && runs_from_.Find(run_id_) == nullptr) {
    runs_from_.TryEmplace(run_id_, run_first_);
    runs_to_.TryEmplace(run_id_, index);
  }
  if (continues)
    ++run_next_;
  else
    run_id_ = -1;
}

std::vector<int64_t> FileContext::LinkedIds(int64_t op_id, size_t inputs) const {
  std::vector<int64_t> ids(inputs, -1);
  auto it = links_.find(op_id);
  if (it == links_.end()) return ids;
  for (const auto& [input, id] : it->second)
    if (input >= 0 && static_cast<size_t>(input) < inputs) ids[static_cast<size_t>(input)] = id;
  return ids;
}

namespace {

// A repeat line's `imported` over the copied begin's: the fields it gives replace the copied
// plan's; without a copied plan it must give them all.
std::string MergeImported(const RepeatLine& r, RedistributeBegin& b) {
  constexpr const auto& d = kDescOf<ImportedPlan>;
  const ImportedPlan& part = *r.imported;
  if (!b.imported) {
    std::string why;
    AllFields(d, [&](auto i, const auto& f) {
      if (r.imported_present >> i & 1) return true;
      why = "field 'imported' leaves out '" + std::string(f.name) + "' but redistribute " +
            std::to_string(r.like) + " has no imported plan to take it from";
      return false;
    });
    if (!why.empty()) return why;
    b.imported = part;
    return "";
  }
  ImportedPlan& plan = *b.imported;
  ForEachField(d, [&](auto i, const auto& f) {
    using F = std::remove_cvref_t<decltype(f)>;
    if (r.imported_present >> i & 1) Ref<F>(plan) = Get<F>(part);
  });
  return "";
}

}  // namespace

bool RenumberRule(std::string_view rule, int64_t number, std::string& out) {
  const size_t from = rule.find_first_of("0123456789");
  if (from == std::string_view::npos) return false;
  size_t to = from;
  while (to < rule.size() && rule[to] >= '0' && rule[to] <= '9') ++to;
  out.assign(rule.substr(0, from));
  out += std::to_string(number);
  out += rule.substr(to);
  return true;
}

bool RuleNumber(std::string_view like_rule, std::string_view rule, int64_t& number) {
  const size_t from = like_rule.find_first_of("0123456789");
  if (from == std::string_view::npos || rule.size() <= from ||
      rule.substr(0, from) != like_rule.substr(0, from))
    return false;
  size_t like_to = from;
  while (like_to < like_rule.size() && like_rule[like_to] >= '0' && like_rule[like_to] <= '9') ++like_to;
  size_t to = from;
  while (to < rule.size() && rule[to] >= '0' && rule[to] <= '9') ++to;
  const size_t digits = to - from;
  // Written back as std::to_string writes it: no leading zero, at most kMaxRuleNumber (18 digits).
  if (digits == 0 || digits > 18 || (digits > 1 && rule[from] == '0')) return false;
  if (rule.substr(to) != like_rule.substr(like_to)) return false;
  number = 0;
  for (size_t i = from; i < to; ++i) number = number * 10 + (rule[i] - '0');
  return true;
}

std::string ExpandRepeat(const RepeatLine& r, const FileContext& ctx, const EventList& events,
                         std::vector<Event>& out) {
  const std::pair<size_t, size_t>* run = ctx.Run(r.like);
  if (run == nullptr) {
    return "field 'like' is " + std::to_string(r.like) +
           " but no redistribute with that id was read as one run of lines (its redistribute_begin, steps, "
           "collectives and redistribute_end, nothing between) before this line in this file";
  }
  // One pass: the events are copied and their times set while `dt` is counted against them.
  // Without `dt` each time keeps its offset from the begin in `like`'s run.
  size_t k = 0;
  std::string why;
  const int64_t like_t = std::get<RedistributeBegin>(events[run->first]).t_ns;
  auto at = [&](int64_t& t) {
    if (!r.has_dt) {
      t = r.t_ns + (t - like_t);  // each within +-2^61: fits
      if (why.empty() && (t < -kMaxTimeNs || t > kMaxTimeNs))
        why = "field 't_ns' puts a time of redistribute " + std::to_string(r.like) +
              "'s run outside [-2^61, 2^61] ns";
    } else if (k < r.dt.size()) {
      t = r.t_ns + r.dt[k];  // |t_ns| <= 2^61 and |dt| <= 2^62: the sum fits
      if (why.empty() && (t < -kMaxTimeNs || t > kMaxTimeNs))
        why = "field 'dt[" + std::to_string(k) + "]' puts a time outside [-2^61, 2^61] ns";
    }
    ++k;
  };
  const size_t start = out.size();
  for (size_t i = run->first; i <= run->second; ++i) {
    Event& e = out.emplace_back(events[i]);
    if (auto* b = std::get_if<RedistributeBegin>(&e)) {
      b->id = r.id, b->t_ns = r.t_ns, b->op_id = r.op_id, b->op_input = r.op_input;
      if (r.tensor && b->tensor() != *r.tensor) b->Mutable().tensor = *r.tensor;
      if (r.imported && why.empty()) why = MergeImported(r, *b);
    } else if (auto* s = std::get_if<StepBegin>(&e)) {
      s->redistribute_id = r.id, at(s->t_ns);
    } else if (auto* s = std::get_if<StepEnd>(&e)) {
      s->redistribute_id = r.id, at(s->t_ns);
    } else if (auto* c = std::get_if<Collective>(&e)) {
      c->redistribute_id = r.id, at(c->start_ns), at(c->end_ns);
    } else if (auto* end = std::get_if<RedistributeEnd>(&e)) {
      end->id = r.id, at(end->t_ns);
    }
  }
  if (r.has_dt && k != r.dt.size()) {
    why = "field 'dt' has " + std::to_string(r.dt.size()) + " entries but redistribute " +
          std::to_string(r.like) + " has " + std::to_string(k) + " times after its begin";
  }
  if (!why.empty()) out.resize(start);
  return why;
}

std::string ExpandCollectiveRepeat(const CollectiveRepeatLine& r, const FileContext& ctx,
                                   const EventList& events, Collective& out) {
  const size_t* at = ctx.Flight(r.back);
  if (at == nullptr) {
    return "field 'back' is " + std::to_string(r.back) + " but only " + std::to_string(ctx.FlightsSeen()) +
           " collectives with a flight record come before this line in this file";
  }
  out = std::get<Collective>(events[*at]);
  FlightRecord& f = out.flight;
  int64_t* times[] = {&out.start_ns, &out.end_ns, &f.created_ns};
  for (size_t i = 0; i < 3; ++i) {
    int64_t t = *times[i] + r.dt[i];  // |t| <= 2^61 and |dt| <= 2^62: the sum fits
    if (t < -kMaxTimeNs || t > kMaxTimeNs)
      return "field 'dt[" + std::to_string(i) + "]' puts a time outside [-2^61, 2^61] ns";
    *times[i] = t;
  }
  int64_t* ids[] = {&f.seq_id, &f.p2p_seq_id, &f.record_id, &f.op_id};
  for (size_t i = 0; i < 4; ++i) {
    int64_t id = 0;
    if (__builtin_add_overflow(*ids[i], r.did[i], &id) || id < 0)
      return "field 'did[" + std::to_string(i) + "]' puts an id below 0 or above 2^63-1";
    *ids[i] = id;
  }
  // The state is the flight shape's (entries like it share one): a changed state gets a shape of its
  // own, which the reader pools with equal ones.
  if (r.state && out.flight_shape().state.str() != *r.state)
    out.Mutable().flight.Mutable().state = IStr(*r.state);
  if (r.duration_ms) f.duration_ms = *r.duration_ms;
  return "";
}

std::vector<int64_t> MeshGroup(const std::vector<int64_t>& mesh_shape, int64_t rank,
                               const std::vector<int64_t>& mesh_dims) {
  const auto dims = static_cast<int64_t>(mesh_shape.size());
  uint64_t in_group = 0;
  for (int64_t d : mesh_dims) {
    if (d < 0 || d >= dims) return {};
    in_group |= uint64_t{1} << d;
  }
  if (dims == 0) return {};
  std::vector<int64_t> stride(mesh_shape.size(), 1);
  for (int64_t d = dims - 2; d >= 0; --d) stride[d] = stride[d + 1] * mesh_shape[d + 1];
  if (rank < 0 || rank >= stride[0] * mesh_shape[0]) return {};
  // This rank with coordinate 0 on the group's dims, then every combination of them, the last
  // dim fastest: ascending ranks.
  int64_t base = rank;
  for (int64_t d = 0; d < dims; ++d)
    if (in_group >> d & 1) base -= (rank / stride[d] % mesh_shape[d]) * stride[d];
  std::vector<int64_t> group = {base};
  for (int64_t d = 0; d < dims; ++d) {
    if (!(in_group >> d & 1)) continue;
    std::vector<int64_t> next;
    next.reserve(group.size() * static_cast<size_t>(mesh_shape[d]));
    for (int64_t r : group)
      for (int64_t k = 0; k < mesh_shape[d]; ++k) next.push_back(r + k * stride[d]);
    group = std::move(next);
  }
  return group;
}

const SharedVec<int64_t>& FileContext::Group(const std::vector<int64_t>& mesh_dims) const {
  auto it = groups_.find(mesh_dims);
  if (it == groups_.end()) it = groups_.emplace(mesh_dims, MeshGroup(mesh_shape_, rank_, mesh_dims)).first;
  return it->second;
}

namespace {

// The plan step a step_begin or collective refers to, or a message saying why there is none.
const PlanStep* StepOf(const FileContext& ctx, int64_t redistribute_id, int64_t step, std::string_view type,
                       std::string_view field, std::string& why) {
  const RedistributeBegin* begin = ctx.Begin(redistribute_id);
  const std::string prefix = std::string(type) + " leaves out '" + std::string(field) + "' but ";
  if (begin == nullptr) {
    why = prefix + "no redistribute_begin with id " + std::to_string(redistribute_id) +
          " comes before it in this file";
    return nullptr;
  }
  if (step < 0 || step >= static_cast<int64_t>(begin->optimized_plan().size())) {
    why = prefix + "step " + std::to_string(step) + " is not in redistribute " +
          std::to_string(redistribute_id) + "'s optimized_plan (" +
          std::to_string(begin->optimized_plan().size()) + " steps)";
    return nullptr;
  }
  return &begin->optimized_plan()[static_cast<size_t>(step)];
}

std::vector<int64_t> ExpandUniform(const std::vector<int64_t>& group, int64_t count, int64_t rank) {
  std::vector<int64_t> out(group.size());
  for (size_t i = 0; i < group.size(); ++i) out[i] = group[i] == rank ? 0 : count;
  return out;
}

// The event a `like` field names: an earlier redistribute_begin or op of the file.
const RedistributeBegin* LikeTarget(const RedistributeBegin*, int64_t like, const FileContext& ctx) {
  return ctx.Begin(like);
}
const Op* LikeTarget(const Op*, int64_t like, const FileContext& ctx) { return ctx.OpWithId(like); }
template <typename E>
const E* LikeTarget(const E*, int64_t, const FileContext&) {
  return nullptr;
}

// The plan step of a step_begin or collective.
template <typename E>
int64_t StepIndex(const E& e) {
  if constexpr (requires { e.step(); })
    return e.step();
  else
    return e.step;
}

// Rebuilds one absent field `v` of `e` by rule R (event_fields.hpp); false and `why` when it cannot.
template <typename R, typename E, typename V>
bool Rebuild(E& e, V& v, std::string_view name, std::string_view type, const FileContext& ctx,
             const PlanStep*& step, std::string& why) {
  // A field rebuilt from the redistribute: an op's own collective (redistribute_id -1) has none.
  constexpr bool kFromRedistribute = std::is_same_v<R, rule::FromBeginDtype> ||
                                     std::is_same_v<R, rule::FromMeshGroup> || IsFromStep<R>::value;
  if constexpr (kFromRedistribute) {
    if (e.redistribute_id < 0) {
      why = "missing field '" + std::string(name) + "'";
      return false;
    }
  }
  if constexpr (std::is_same_v<R, rule::Required> || std::is_same_v<R, rule::Relinked>) {
    why = "missing field '" + std::string(name) + "'";
    return false;
  } else if constexpr (IsSameAs<R>::value) {
    if (kV3Only<R> && !ctx.v3()) {
      why = "missing field '" + std::string(name) + "' (only trace format version 3 may leave it out)";
      return false;
    }
    v = GetMember<IsSameAs<R>::kArg>(e);
  } else if constexpr (IsFromStep<R>::value) {
    if (step == nullptr && (step = StepOf(ctx, e.redistribute_id, StepIndex(e), type, name, why)) == nullptr)
      return false;
    v = step->*IsFromStep<R>::kArg;
  } else if constexpr (std::is_same_v<R, rule::FromBeginDtype>) {
    const RedistributeBegin* begin = ctx.Begin(e.redistribute_id);
    if (begin == nullptr) {
      why = std::string(type) + " leaves out '" + std::string(name) + "' but no redistribute_begin with id " +
            std::to_string(e.redistribute_id) + " comes before it in this file";
      return false;
    }
    v = begin->dtype();
  } else if constexpr (std::is_same_v<R, rule::FromMeshGroup>) {
    v = ctx.Group(e.mesh_dims());
    if (v.empty()) {
      why = std::string(type) + " leaves out '" + std::string(name) +
            "' but its mesh dims are not all in the header's mesh";
      return false;
    }
  }
  // rule::Defaulted, WhenSet, When: the event starts with the member's default.
  return true;
}

}  // namespace

template <typename E>
std::string Complete(E& e, uint64_t present, uint64_t abbreviated, int64_t like, const FileContext& ctx) {
  constexpr const auto& d = kDescOf<E>;
  const E* base = nullptr;
  if (like >= 0) {
    base = LikeTarget(static_cast<const E*>(nullptr), like, ctx);
    if (base == nullptr) {
      return "field 'like' is " + std::to_string(like) + " but no " + std::string(d.name) +
             " with that id comes before this line in this file";
    }
  }
  const PlanStep* step = nullptr;  // looked up once, by the first field that needs it
  std::string why;
  AllFields(d, [&](auto i, const auto& f) {
    using F = std::remove_cvref_t<decltype(f)>;
    using R = typename F::Rule;
    if constexpr (kLineOnly<R>) {
      return true;
    } else {
      if (present >> i & 1) {
        if constexpr (std::is_same_v<typename F::Codec, codec::PeerBytes>) {
          auto& v = Ref<F>(e);
          if (abbreviated >> i & 1) v = ExpandUniform(e.group(), v[0], ctx.rank());
        }
        return true;
      }
      // An absent field of these rules keeps the member's default: nothing to write (a field
      // inside a rare payload is not made present).
      if constexpr (!IsLike<R>::value && (kOptional<R> || std::is_same_v<R, rule::Defaulted>)) return true;
      auto& v = Ref<F>(e);
      if constexpr (IsLike<R>::value) {
        if (base != nullptr) {
          v = Get<F>(*base);
          return true;
        }
      }
      return Rebuild<Unliked<R>>(e, v, f.name, d.name, ctx, step, why);
    }
  });
  return why;
}

template std::string Complete(RedistributeBegin&, uint64_t, uint64_t, int64_t, const FileContext&);
template std::string Complete(RedistributeEnd&, uint64_t, uint64_t, int64_t, const FileContext&);
template std::string Complete(StepBegin&, uint64_t, uint64_t, int64_t, const FileContext&);
template std::string Complete(StepEnd&, uint64_t, uint64_t, int64_t, const FileContext&);
template std::string Complete(Collective&, uint64_t, uint64_t, int64_t, const FileContext&);
template std::string Complete(Op&, uint64_t, uint64_t, int64_t, const FileContext&);

bool UniformBytes(const std::vector<int64_t>& group, const std::vector<int64_t>& bytes, int64_t rank,
                  int64_t& count) {
  if (bytes.size() != group.size()) return false;
  count = 0;
  bool have = false;
  for (size_t i = 0; i < group.size(); ++i) {
    if (group[i] == rank) {
      if (bytes[i] != 0) return false;
    } else if (!have) {
      count = bytes[i];
      have = true;
    } else if (bytes[i] != count) {
      return false;
    }
  }
  return true;
}

}  // namespace shardscope::trace::detail
