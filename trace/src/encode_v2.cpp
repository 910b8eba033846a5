// What a v2 line leaves out follows event_fields.hpp's rules (fast_encode.cpp's WriteFields), which
// format_v2.cpp rebuilds; tests/trace/writer_test.cpp reads every v2 line back and compares it with
// the event written.
#include "encode_v2.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <string_view>
#include <type_traits>

#include "codec.hpp"
#include "fast_encode.hpp"
#include "format_v2.hpp"
#include "line_builder.hpp"
#include "shardscope/trace/codec.hpp"
#include "writer_sink.hpp"

namespace shardscope::trace::detail {

namespace {

// The v1 form of an event the line builder declined (v2 readers read it as it is).
template <typename E>
void Fallback(const E& e, std::string& out) {
  out += ToLine(ToJson(Event(e)));
}

// Whether values a and b are written alike (bit for bit for numbers, so -0.0 differs from 0.0;
// every non-finite strategy cost as -1), field by field for objects. `a` and `b` are of codec C.
template <typename T>
bool SameWrittenFields(const T& a, const T& b, uint64_t mask);
template <typename C, typename V>
bool SameWritten(C, const V& a, const V& b) {
  return a == b;
}
template <typename C>
bool SameWritten(C, double a, double b) {
  return std::memcmp(&a, &b, sizeof(double)) == 0;
}
// A collective's Flight Recorder record (the field's value is the whole collective): its flight
// shape and own fields, or both absent.
bool SameWritten(codec::Flight, const Collective& a, const Collective& b) {
  if (a.HasFlight() != b.HasFlight()) return false;
  return !a.HasFlight() || (a.flight == b.flight && a.flight_shape() == b.flight_shape());
}
bool SameWritten(codec::StrategyCost, double a, double b) {
  if (!std::isfinite(a) || !std::isfinite(b)) return std::isfinite(a) == std::isfinite(b);
  return std::memcmp(&a, &b, sizeof(double)) == 0;
}
template <int64_t Len, typename V>
bool SameWritten(codec::Objects<Len>, const V& a, const V& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!SameWrittenFields(a[i], b[i], ~uint64_t{0})) return false;
  return true;
}

// Whether a and b are written alike in the fields of `mask`, leaving out what a v2 op line's
// `redistribute_ids` gives (rule::Relinked).
template <typename T>
bool SameWrittenFields(const T& a, const T& b, uint64_t mask) {
  return AllFields(kDescOf<T>, [&](auto i, const auto& f) {
    using F = std::remove_cvref_t<decltype(f)>;
    if constexpr (kLineOnly<typename F::Rule> || std::is_same_v<typename F::Rule, rule::Relinked>) {
      return true;
    } else {
      return !(mask >> i & 1) || SameWritten(typename F::Codec{}, Get<F>(a), Get<F>(b));
    }
  });
}

// Whether values a and b are written alike because they share their list (SharedVec::SharesWith),
// are the same string (IStr: pointer equality) or number (bit for bit), or are both absent (a rare
// payload, never part of a template); comparing shared lists by address keeps the memos cheap.
template <typename V>
bool SameShared(const V& a, const V& b) {
  return a == b;
}
template <typename T>
bool SameShared(const SharedVec<T>& a, const SharedVec<T>& b) {
  return a.SharesWith(b);
}
template <typename T>
bool SameShared(const Rare<T>& a, const Rare<T>& b) {
  return !a && !b;
}
bool SameShared(double a, double b) { return std::memcmp(&a, &b, sizeof(double)) == 0; }
// A collective's Flight Recorder record (the whole collective is the field's value): as a rare
// payload, never part of a template.
bool SameShared(const Collective& a, const Collective& b) { return !a.HasFlight() && !b.HasFlight(); }

// Whether a and b agree, as SameShared, in every field of their table but those of `skip`.
template <typename T>
bool SameSharedFields(const T& a, const T& b, uint64_t skip) {
  return AllFields(kDescOf<T>, [&](auto i, const auto& f) {
    using F = std::remove_cvref_t<decltype(f)>;
    if constexpr (kLineOnly<typename F::Rule>) {
      return true;
    } else {
      return (skip >> i & 1) || SameShared(Get<F>(a), Get<F>(b));
    }
  });
}

// Whether a and b write the same plan fields (the run a `like` copies).
bool SameBeginFields(const RedistributeBegin& a, const RedistributeBegin& b) {
  return !a.imported && !b.imported && SameSharedFields(a, b, ~LikeMask(kDescOf<RedistributeBegin>));
}

// What a template capture sets (TemplateFields): the fields two events of one template may differ in.
template <typename E>
constexpr uint64_t kCaptured = MaskOf(kDescOf<E>, {"redistribute_id", "t_ns"});
template <>
constexpr uint64_t kCaptured<RedistributeBegin> = MaskOf(kDescOf<RedistributeBegin>,
                                                         {"id", "t_ns", "op_id", "op_input"});
template <>
constexpr uint64_t kCaptured<RedistributeEnd> = MaskOf(kDescOf<RedistributeEnd>, {"id", "t_ns"});
template <>
constexpr uint64_t kCaptured<Collective> = MaskOf(kDescOf<Collective>,
                                                  {"redistribute_id", "start_ns", "end_ns"});

// Whether a and b write the same line but for what a template capture sets, given the same plan
// step and dtype (LineMemo): every list shared, every string and number equal.
template <typename E>
bool SameLineFields(const E& a, const E& b) {
  return SameSharedFields(a, b, kCaptured<E>);
}
bool SameLineFields(const Collective& a, const Collective& b) {
  return (a.redistribute_id >= 0) == (b.redistribute_id >= 0) &&
         SameSharedFields(a, b, kCaptured<Collective>);
}
bool SameLineFields(const Op&, const Op&) { return false; }

// Whether templates a and b give the same events for the same TemplateFields.
bool SameTemplate(const Event& a, const Event& b) {
  return a.index() == b.index() &&
         std::visit([&b](const auto& x) { return SameLineFields(x, std::get<std::decay_t<decltype(x)>>(b)); },
                    a);
}

// Keeps `value` among the last `capacity` remembered: appended while there is room, then in place
// of the oldest (`next` is the oldest's slot once the ring is full).
template <typename T>
void Remember(std::vector<T>& ring, size_t& next, T value, size_t capacity) {
  if (ring.size() < capacity) {
    ring.push_back(std::move(value));
    next = 0;
  } else {
    ring[next] = std::move(value);
    next = (next + 1) % capacity;
  }
}

// Calls visit(t) for each time an event of a redistribute after its begin holds, in line order: a
// collective's start and end, a step's or an end's t_ns (an op's times are its own line's).
template <typename F>
void ForEachTime(const Event& event, F&& visit) {
  std::visit(
      [&](const auto& e) {
        using E = std::decay_t<decltype(e)>;
        if constexpr (std::is_same_v<E, Collective>) {
          visit(e.start_ns);
          visit(e.end_ns);
        } else if constexpr (!std::is_same_v<E, Op>) {
          visit(e.t_ns);
        }
      },
      event);
}

// Whether a time can be written as an offset from a begin's: the reader takes times within
// +-2^61 ns, so such an offset fits easily.
bool InOffsetRange(int64_t t) {
  constexpr int64_t kMax = int64_t{1} << 61;
  return t >= -kMax && t <= kMax;
}

}  // namespace

bool EncoderV2::EncodeRepeat(const Captured* run, size_t n, std::string& out) {
  if (n < 2 || n > kMaxRepeatEvents) return false;
  const TemplateFields& f = run[0].fields;
  // The reader takes op_id and op_input together; anything else goes in full lines.
  if ((f.op_id >= 0) != (f.op_input >= 0)) return false;
  const RepeatMemo* memo = nullptr;
  for (size_t i = repeat_memo_.size(); i-- > 0 && memo == nullptr;) {
    const RepeatMemo& m = repeat_memo_[(repeat_memo_next_ + i) % repeat_memo_.size()];
    if (m.events.size() != n) continue;
    size_t k = 0;
    while (k < n && SameTemplate(*run[k].tmpl, m.events[k])) ++k;
    if (k == n) memo = &m;
  }
  if (memo == nullptr) {
    RepeatMemo m;
    for (size_t k = 0; k < n; ++k) m.events.push_back(*run[k].tmpl);
    m.like = f.id;
    m.tensor = f.tensor;
    Remember(repeat_memo_, repeat_memo_next_, std::move(m), kRepeatMemo);
    return false;
  }
  // Times after the begin's, as offsets from it (kept where the reader takes them: within
  // +-2^61 ns, so an offset fits easily).
  if (!InOffsetRange(f.t_ns)) return false;
  dt_.clear();
  for (size_t k = 1; k < n; ++k) {
    const TemplateFields& g = run[k].fields;
    if (!InOffsetRange(g.t_ns)) return false;
    dt_.push_back(g.t_ns - f.t_ns);
    if (std::holds_alternative<Collective>(*run[k].tmpl)) {
      if (!InOffsetRange(g.end_ns)) return false;
      dt_.push_back(g.end_ns - f.t_ns);
    }
  }
  Line l(out);
  l.Str("type", kTypeRedistributeRepeat);
  l.Int("id", f.id);
  l.Int("like", memo->like);
  l.Int("t_ns", f.t_ns);
  l.Ints("dt", dt_);
  if (f.tensor != memo->tensor) l.Str("tensor", f.tensor);
  if (f.op_id >= 0) {
    l.Int("op_id", f.op_id);
    l.Int("op_input", f.op_input);
  }
  if (!l.Finish()) return false;
  RememberLink(f.op_id, f.op_input, f.id);
  return true;
}

void EncoderV2::RememberLink(int64_t op_id, int64_t op_input, int64_t id) {
  if (op_id < 0 || !links_complete_) return;
  if (links_.size() >= kMaxLinkedOps && !links_.contains(op_id)) {
    links_complete_ = false;
    links_.clear();
    return;
  }
  links_[op_id].emplace_back(op_input, id);
}

namespace {

// Whether whole events a and b are written alike but for what a redistribute_repeat line gives:
// ids, times, and the begin's tensor, op link and imported plan.
template <typename E>
constexpr uint64_t kRepeatGiven = kCaptured<E>;
template <>
constexpr uint64_t kRepeatGiven<RedistributeBegin> = kCaptured<RedistributeBegin> |
                                                     MaskOf(kDescOf<RedistributeBegin>,
                                                            {"tensor", "imported"});
bool SameRepeated(const Event& a, const Event& b) {
  return a.index() == b.index() && std::visit(
                                       [&b](const auto& x) {
                                         using E = std::decay_t<decltype(x)>;
                                         return SameWrittenFields(x, std::get<E>(b), ~kRepeatGiven<E>);
                                       },
                                       a);
}

}  // namespace

bool EncoderV2::EncodeRepeat(const Event* const* run, size_t n, std::string& out) {
  // Only imported redistributes (an importer's replays, which repeat whole); other whole events keep
  // their lines (a begin by `like`), as a trace converted from v1 always had them.
  const auto& f = std::get<RedistributeBegin>(*run[0]);
  if (!v3_ || n < 2 || n > kMaxRepeatEvents || !f.imported) return false;
  const std::vector<Event>* memo = nullptr;
  for (size_t i = full_memo_.size(); i-- > 0 && memo == nullptr;) {
    const std::vector<Event>& m = full_memo_[(full_memo_next_ + i) % full_memo_.size()];
    if (m.size() != n) continue;
    size_t k = 0;
    while (k < n && SameRepeated(*run[k], m[k])) ++k;
    if (k == n) memo = &m;
  }
  if (memo == nullptr) {
    std::vector<Event> m;
    m.reserve(n);
    for (size_t k = 0; k < n; ++k) m.push_back(*run[k]);
    Remember(full_memo_, full_memo_next_, std::move(m), kRepeatMemo);
    return false;
  }
  if (!InOffsetRange(f.t_ns) || (f.op_id >= 0) != (f.op_input >= 0)) return false;
  dt_.clear();
  bool times_ok = true;
  auto time = [&](int64_t t) {
    times_ok = times_ok && InOffsetRange(t);
    dt_.push_back(t - f.t_ns);
  };
  for (size_t k = 1; k < n; ++k) ForEachTime(*run[k], time);
  if (!times_ok) return false;
  const auto& base = std::get<RedistributeBegin>((*memo)[0]);
  // `dt` is left out when every time keeps its offset from the begin in the earlier run (a
  // replayed redistribute repeated on a shifted clock); that run's times were checked in range.
  size_t k_dt = 0;
  bool same_dt = InOffsetRange(base.t_ns);
  auto same = [&](int64_t t) {
    same_dt = same_dt && InOffsetRange(t) && k_dt < dt_.size() && dt_[k_dt] == t - base.t_ns;
    ++k_dt;
  };
  for (size_t k = 1; k < n; ++k) ForEachTime((*memo)[k], same);
  Line l(out);
  l.Str("type", kTypeRedistributeRepeat);
  l.Int("id", f.id);
  l.Int("like", base.id);
  l.Int("t_ns", f.t_ns);
  if (!same_dt || k_dt != dt_.size()) l.Ints("dt", dt_);
  if (f.tensor() != base.tensor()) l.Str("tensor", f.tensor());
  if (f.op_id >= 0) {
    l.Int("op_id", f.op_id);
    l.Int("op_input", f.op_input);
  }
  if (f.imported && !(base.imported && *f.imported == *base.imported)) {
    // The fields that differ from the copied plan's (every field when it has none).
    const ImportedPlan& plan = *f.imported;
    const WriteBasis v2{.v2 = true};
    l.OpenObject("imported");
    ForEachField(kDescOf<ImportedPlan>, [&](auto i, const auto& field) {
      using F = std::remove_cvref_t<decltype(field)>;
      if (!base.imported || !SameWritten(typename F::Codec{}, Get<F>(plan), Get<F>(*base.imported)))
        WriteFields(l, plan, v2, i, i + 1);
    });
    l.EndObject();
  }
  if (!l.Finish()) return false;
  RememberLink(f.op_id, f.op_input, f.id);
  return true;
}

template <typename E>
const EncoderV2::LineMemo* EncoderV2::FindLineMemo(const E& e, const PlanStep* step,
                                                   const std::string* dtype) const {
  for (size_t i = line_memo_.size(); i-- > 0;) {
    const LineMemo& m = line_memo_[(line_memo_next_ + i) % line_memo_.size()];
    const E* remembered = std::get_if<E>(&m.event);
    if (remembered != nullptr && m.step == step && m.has_dtype == (dtype != nullptr) &&
        (dtype == nullptr || m.dtype == *dtype) && SameLineFields(*remembered, e))
      return &m;
  }
  return nullptr;
}

void EncoderV2::RememberLine(Event e, const Open* open, const PlanStep* step, const std::string* dtype,
                             std::string_view line, std::string_view head, std::string_view key,
                             std::initializer_list<int64_t> values, std::string_view sep) {
  // `line` reads head + id + (text ending in `key`) + time [+ sep + end time] + "}"; it is cut
  // around the values, and not remembered when it does not read so (a line the builder declined).
  const int64_t* v = values.begin();
  std::string id, tail;
  AppendInt(v[0], id);
  AppendInt(v[1], tail);
  if (values.size() == 3) {
    tail += sep;
    AppendInt(v[2], tail);
  }
  tail += '}';
  const size_t from = head.size() + id.size();
  if (line.size() < from + key.size() + tail.size() || !line.starts_with(head) ||
      line.substr(head.size(), id.size()) != id || !line.ends_with(tail))
    return;
  const std::string_view mid = line.substr(from, line.size() - tail.size() - from);
  if (!mid.ends_with(key)) return;
  LineMemo m;
  m.text.emplace_back(head);
  m.text.emplace_back(mid);
  if (values.size() == 3) m.text.emplace_back(sep);
  m.text.emplace_back("}");
  m.event = std::move(e);
  m.step = step;
  if (step != nullptr) m.plan = open->plan;  // holds `step`: its address means this step while remembered
  m.has_dtype = dtype != nullptr;
  if (dtype != nullptr) m.dtype = *dtype;
  if (line_memo_.size() < kLineMemo) {
    line_memo_.push_back(std::move(m));
    line_memo_next_ = 0;
    return;
  }
  line_memo_[line_memo_next_] = std::move(m);
  line_memo_next_ = (line_memo_next_ + 1) % kLineMemo;
}

void EncoderV2::WriteLine(const LineMemo& m, std::initializer_list<int64_t> values, std::string& out) {
  out += m.text[0];
  size_t i = 1;
  for (int64_t v : values) {
    AppendInt(v, out);
    out += m.text[i++];
  }
}

const EncoderV2::LikeMemo* EncoderV2::FindLikeMemo(const RedistributeBegin& e) const {
  if (e.imported) return nullptr;
  for (size_t i = like_memo_.size(); i-- > 0;) {
    const LikeMemo& m = like_memo_[(like_memo_next_ + i) % like_memo_.size()];
    if (SameBeginFields(m.fields, e)) return &m;
  }
  return nullptr;
}

void EncoderV2::RememberLike(const RedistributeBegin& e, int64_t like) {
  if (e.imported) return;
  if (like_memo_.size() < kLikeMemo) {
    like_memo_.push_back({e, like});
    like_memo_next_ = 0;
    return;
  }
  like_memo_[like_memo_next_] = {e, like};
  like_memo_next_ = (like_memo_next_ + 1) % kLikeMemo;
}

const std::vector<int64_t>& EncoderV2::MeshGroupOf(const std::vector<int64_t>& mesh_dims) {
  auto it = groups_.find(mesh_dims);
  if (it == groups_.end()) it = groups_.emplace(mesh_dims, MeshGroup(mesh_shape_, rank_, mesh_dims)).first;
  return it->second;
}

const PlanStep* EncoderV2::StepOf(int64_t redistribute_id, int64_t step, const Open** open) const {
  auto it =
      std::find_if(open_.rbegin(), open_.rend(), [&](const Open& o) { return o.id == redistribute_id; });
  if (it == open_.rend()) return nullptr;
  *open = &*it;
  const std::vector<PlanStep>& plan = it->plan;
  return step >= 0 && step < static_cast<int64_t>(plan.size()) ? &plan[static_cast<size_t>(step)] : nullptr;
}

void EncoderV2::Encode(const RedistributeBegin& e, std::string& out) {
  RememberLink(e.op_id, e.op_input, e.id);
  // The first begin of an id is what the reader refers to (a second one is an error it reports).
  if (std::none_of(open_.begin(), open_.end(), [&](const Open& o) { return o.id == e.id; })) {
    if (open_.size() == kMaxOpen) open_.erase(open_.begin());
    open_.push_back({e.id, e.optimized_plan(), std::string(e.dtype())});
  }
  // Fields before the run `like` copies (the id), that run or `like`, and the fields after it.
  constexpr const auto& d = kDescOf<RedistributeBegin>;
  constexpr size_t kLikeFirst = LikeFirst(d), kLikeEnd = LikeEnd(d);
  const WriteBasis v2{.v2 = true};
  Line l(out);
  l.Str("type", d.name);
  WriteFields(l, e, v2, 0, kLikeFirst);
  if (const LikeMemo* memo = FindLikeMemo(e)) {
    l.Int("like", memo->like);  // what the lookup below would find
  } else {
    // The tensor (the run's first field) apart: a begin that differs from an earlier one only in
    // its tensor's name (an imported program's, say) keeps its tensor and takes the rest by `like`.
    static_assert(IndexOf(d, "tensor") == kLikeFirst);
    const size_t fields_at = l.size();
    WriteFields(l, e, v2, kLikeFirst, kLikeFirst + 1);
    const size_t rest_at = l.size();
    WriteFields(l, e, v2, kLikeFirst + 1, kLikeEnd);
    if (l.ok()) {
      std::string_view fields = l.Since(fields_at);
      std::string_view rest = l.Since(rest_at);
      if (auto it = like_.find(fields); it != like_.end()) {
        l.Truncate(fields_at, false);
        l.Int("like", it->second);
        RememberLike(e, it->second);
      } else if (auto r = like_rest_.find(rest); r != like_rest_.end()) {
        const int64_t like = r->second;
        l.Truncate(rest_at, false);
        l.Int("like", like);
        if (like_.size() < kMaxLikeTargets) like_.emplace(std::string(fields), e.id);
      } else if (like_.size() < kMaxLikeTargets) {
        like_rest_.emplace(std::string(rest), e.id);
        like_.emplace(std::string(fields), e.id);
        RememberLike(e, e.id);
      }
    }
  }
  WriteFields(l, e, v2, kLikeEnd);
  if (!l.Finish()) Fallback(e, out);
}

void EncoderV2::Encode(const RedistributeEnd& e, std::string& out) {
  auto it = std::find_if(open_.begin(), open_.end(), [&](const Open& o) { return o.id == e.id; });
  if (it != open_.end()) {
    if (it + 1 != open_.end()) *it = std::move(open_.back());  // no self-move
    open_.pop_back();
  }
  Line l(out);
  l.Str("type", kDescOf<RedistributeEnd>.name);
  WriteFields(l, e, WriteBasis{.v2 = true});
  if (!l.Finish()) Fallback(e, out);
}

namespace {
// How a line of a template starts: its type and first field (RememberLine checks the text).
constexpr std::string_view kStepBeginHead = R"({"type":"step_begin","redistribute_id":)";
constexpr std::string_view kStepEndHead = R"({"type":"step_end","redistribute_id":)";
constexpr std::string_view kCollectiveHead = R"({"type":"collective","redistribute_id":)";
}  // namespace

void EncoderV2::Encode(const StepBegin& e, std::string& out, bool repeated) {
  const Open* open = nullptr;
  const PlanStep* s = StepOf(e.redistribute_id, e.step, &open);
  if (repeated) {
    if (const LineMemo* m = FindLineMemo(e, s, nullptr))
      return WriteLine(*m, {e.redistribute_id, e.t_ns}, out);
  }
  const size_t start = out.size();
  Line l(out);
  l.Str("type", kDescOf<StepBegin>.name);
  WriteFields(l, e, WriteBasis{.v2 = true, .step = s});
  if (!l.Finish()) return Fallback(e, out);
  if (repeated)
    RememberLine(e, open, s, nullptr, std::string_view(out).substr(start), kStepBeginHead, R"("t_ns":)",
                 {e.redistribute_id, e.t_ns});
}

void EncoderV2::Encode(const StepEnd& e, std::string& out, bool repeated) {
  if (repeated) {
    if (const LineMemo* m = FindLineMemo(e, nullptr, nullptr))
      return WriteLine(*m, {e.redistribute_id, e.t_ns}, out);
  }
  const size_t start = out.size();
  if (!FastEncode(e, out)) return Fallback(e, out);
  if (repeated)
    RememberLine(e, nullptr, nullptr, nullptr, std::string_view(out).substr(start), kStepEndHead,
                 R"("t_ns":)", {e.redistribute_id, e.t_ns});
}

namespace {
// What a collective_repeat line gives anew: the collective's times and its flight record's
// times, ids, state and duration; every other field is the earlier collective's. The record's
// other fields are its shape's, written alike exactly when the shapes are equal (a shape holds no
// double, whose equal values could be written differently).
constexpr uint64_t kFlightCollectiveSame = ~MaskOf(kDescOf<Collective>, {"start_ns", "end_ns", "flight"});
constexpr int64_t kMaxDt = int64_t{1} << 62;

// Whether a collective_repeat line can give `a` from `b`: equal shapes but perhaps for the state,
// which the line gives anew (entries of one call share a shape per state).
bool SameShapeButState(const Shared<FlightShape>& a, const Shared<FlightShape>& b) {
  if (a.SharesWith(b) || *a == *b) return true;
  if (a->state == b->state) return false;
  FlightShape with_state = *b;
  with_state.state = a->state;
  return with_state == *a;
}
}  // namespace

bool EncoderV2::EncodeFlightRepeat(const Collective& e, std::string& out) const {
  const FlightRecord& f = e.flight;
  const bool known = KnownDuration(f.duration_ms);
  for (size_t k = flights_.size(); k-- > 0;) {
    const FlightMemo& m = flights_[k];
    const Collective& b = m.event;
    const FlightRecord& g = b.flight;
    const bool base_known = KnownDuration(g.duration_ms);
    if (base_known && !known) continue;  // an unknown duration cannot be given
    if (!SameShapeButState(e.shape->flight, b.shape->flight) ||
        !SameWrittenFields(e, b, kFlightCollectiveSame))
      continue;
    const int64_t dt[] = {e.start_ns - b.start_ns, e.end_ns - b.end_ns, f.created_ns - g.created_ns};
    for (int64_t d : dt)
      if (d < -kMaxDt || d > kMaxDt) return false;  // not for times the reader refuses anyway
    int64_t did[4];
    const int64_t from[] = {f.seq_id, f.p2p_seq_id, f.record_id, f.op_id};
    const int64_t to[] = {g.seq_id, g.p2p_seq_id, g.record_id, g.op_id};
    for (size_t i = 0; i < 4; ++i)
      if (__builtin_sub_overflow(from[i], to[i], &did[i]) || did[i] == std::numeric_limits<int64_t>::min())
        return false;
    Line l(out);
    l.Str("type", kTypeCollectiveRepeat);
    l.Int("back", static_cast<int64_t>(flights_written_ - m.number + 1));  // 1: the last one
    l.Ints("dt", {dt[0], dt[1], dt[2]});
    l.Ints("did", {did[0], did[1], did[2], did[3]});
    if (!(e.flight_shape().state == b.flight_shape().state)) l.Str("state", e.flight_shape().state);
    if (known && (!base_known || std::memcmp(&*f.duration_ms, &*g.duration_ms, sizeof(double)) != 0))
      l.Num("duration_ms", *f.duration_ms);
    return l.Finish();
  }
  return false;
}

void EncoderV2::RememberFlight(const Collective& e) {
  ++flights_written_;
  FlightMemo m{e, flights_written_};
  if (flights_.size() < kFlightMemo) {
    flights_.push_back(std::move(m));
  } else {
    // Oldest out: keep the ring in order of number, newest last.
    std::move(flights_.begin() + 1, flights_.end(), flights_.begin());
    flights_.back() = std::move(m);
  }
}

void EncoderV2::Encode(const Collective& e, std::string& out, bool repeated) {
  if (e.HasFlight()) {
    const bool again = EncodeFlightRepeat(e, out);
    RememberFlight(e);
    if (again) return;
  }
  const Open* open = nullptr;
  const PlanStep* s = e.redistribute_id >= 0 ? StepOf(e.redistribute_id, e.step(), &open) : nullptr;
  const std::string* dtype = open ? &open->dtype : nullptr;
  // A collective of an op (no redistribute) is not remembered: its line has op_id after the times.
  repeated = repeated && e.redistribute_id >= 0 && e.op_id < 0 && !e.HasFlight();
  if (repeated) {
    if (const LineMemo* m = FindLineMemo(e, s, dtype))
      return WriteLine(*m, {e.redistribute_id, e.start_ns, e.end_ns}, out);
  }
  const WriteBasis basis{.v2 = true,
                         .step = s,
                         .dtype = dtype,
                         .group = e.redistribute_id >= 0 ? &MeshGroupOf(e.mesh_dims()) : nullptr,
                         .rank = rank_};
  const size_t start = out.size();
  Line l(out);
  l.Str("type", kDescOf<Collective>.name);
  WriteFields(l, e, basis);
  if (!l.Finish()) return Fallback(e, out);
  if (repeated)
    RememberLine(e, open, s, dtype, std::string_view(out).substr(start), kCollectiveHead, R"("start_ns":)",
                 {e.redistribute_id, e.start_ns, e.end_ns}, R"(,"end_ns":)");
}

void EncoderV2::Encode(const Op& e, std::string& out) {
  // The like target: the recent op that agrees with this one in the most fields `like` copies
  // (the latest of equals); the line then gives only the fields that differ from it.
  constexpr const auto& d = kDescOf<Op>;
  constexpr uint64_t kLike = LikeMask(d);
  // A rule that differs from the target's only in its first number (an imported op's record line)
  // counts as the same: the line gives that number (`rule_number`).
  constexpr uint64_t kRule = MaskOf(d, {"rule"});
  const Op* like = nullptr;
  uint64_t same = 0;
  int64_t rule_number = -1;
  for (const Op& r : recent_ops_) {
    uint64_t mask = 0;
    int64_t number = -1;
    ForEachField(d, [&](auto i, const auto& f) {
      using F = std::remove_cvref_t<decltype(f)>;
      if constexpr (IsLike<typename F::Rule>::value) {
        if (SameWritten(typename F::Codec{}, Get<F>(e), Get<F>(r))) mask |= uint64_t{1} << i;
      }
    });
    if (v3_ && !(mask & kRule) && RuleNumber(r.rule(), e.rule(), number)) mask |= kRule;
    if (std::popcount(mask) >= std::popcount(same) && mask != 0) {
      like = &r, same = mask;
      rule_number = e.rule() == r.rule() ? -1 : number;
    }
  }
  bool written = false;
  if (like != nullptr) {
    // The op's id, `like`, the fields up to the run `like` copies, those of the run that differ,
    // the inputs' redistribute ids where they differ from like's, and the fields after the run.
    constexpr size_t kAfterId = IndexOf(d, "id") + 1;
    constexpr uint64_t kInputs = MaskOf(d, {"inputs"});
    const WriteBasis v2{.v2 = true, .v3 = v3_};
    Line l(out);
    l.Str("type", d.name);
    WriteFields(l, e, v2, 0, kAfterId);
    l.Int("like", like->id);
    WriteFields(l, e, v2, kAfterId, LikeFirst(d));
    for (size_t i = LikeFirst(d); i < LikeEnd(d); ++i)
      if ((kLike & ~same) >> i & 1) WriteFields(l, e, v2, i, i + 1);
    if (same & kInputs) {
      bool same_ids = true;
      for (size_t i = 0; i < e.inputs().size(); ++i)
        same_ids = same_ids && e.inputs()[i].redistribute_id == like->inputs()[i].redistribute_id;
      if (!same_ids) {
        std::vector<int64_t> ids;
        for (const OpInput& in : e.inputs()) ids.push_back(in.redistribute_id);
        // What the reader rebuilds from the begins linked to this op (FileContext::LinkedIds).
        std::vector<int64_t> linked(ids.size(), -1);
        if (auto it = links_.find(e.id); it != links_.end())
          for (const auto& [input, id] : it->second)
            if (input >= 0 && static_cast<size_t>(input) < linked.size())
              linked[static_cast<size_t>(input)] = id;
        if (v3_ && links_complete_ && linked == ids)
          l.Bool("linked", true);
        else
          l.Ints("redistribute_ids", ids);
      }
    }
    if (rule_number >= 0) l.Int("rule_number", rule_number);
    WriteFields(l, e, v2, LikeEnd(d));
    written = l.Finish();
  }
  links_.erase(e.id);  // an op id appears once in a file: its links are used
  if (!written && !FastEncode(e, out)) return Fallback(e, out);  // a declined op is not a like target
  if (recent_ops_.size() == kRecentOps) recent_ops_.erase(recent_ops_.begin());
  recent_ops_.push_back(e);
}

}  // namespace shardscope::trace::detail
