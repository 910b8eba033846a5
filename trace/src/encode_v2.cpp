// Field names and omissions here must stay those format_v2.cpp rebuilds; tests/trace/writer_test.cpp
// reads every v2 line back and compares it with the event written.
#include "encode_v2.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <initializer_list>
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

// Whether a and b agree on what an op line's `like` copies: name .. note, the inputs but their
// redistribute ids (those a `redistribute_ids` field gives).
bool SameOpFields(const Op& a, const Op& b) {
  if (a.name != b.name || a.args != b.args || a.inputs.size() != b.inputs.size() || a.outputs != b.outputs ||
      a.candidates.size() != b.candidates.size() || a.chosen != b.chosen || a.rule != b.rule ||
      a.note != b.note)
    return false;
  for (size_t i = 0; i < a.inputs.size(); ++i) {
    const OpInput &x = a.inputs[i], &y = b.inputs[i];
    if (x.tensor != y.tensor || x.placements != y.placements || x.required != y.required) return false;
  }
  // Costs as written: +inf and -1 are both "-1", and -0.0 differs from 0.0 in the text.
  for (size_t i = 0; i < a.candidates.size(); ++i) {
    const OpStrategy &x = a.candidates[i], &y = b.candidates[i];
    if (x.inputs != y.inputs || x.outputs != y.outputs ||
        std::isfinite(x.cost_us) != std::isfinite(y.cost_us) ||
        (std::isfinite(x.cost_us) && std::memcmp(&x.cost_us, &y.cost_us, sizeof(double)) != 0))
      return false;
  }
  return true;
}

// Whether a and b write the same plan fields (BeginFields) because they share every list and agree
// on every string (IStr: pointer equality) and number (bit for bit, as the text would).
bool SameBeginFields(const RedistributeBegin& a, const RedistributeBegin& b) {
  return a.tensor == b.tensor && a.global_shape.SharesWith(b.global_shape) && a.dtype == b.dtype &&
         a.src_placements.SharesWith(b.src_placements) && a.dst_placements.SharesWith(b.dst_placements) &&
         a.src_order == b.src_order && a.dst_order == b.dst_order && a.planner == b.planner &&
         a.planner_reason == b.planner_reason && a.notation == b.notation &&
         a.notation_unoptimized == b.notation_unoptimized && a.raw_plan.SharesWith(b.raw_plan) &&
         a.optimized_plan.SharesWith(b.optimized_plan) && a.skipped_merges.SharesWith(b.skipped_merges) &&
         std::memcmp(&a.cost_us, &b.cost_us, sizeof(double)) == 0 && !a.imported && !b.imported;
}

// Whether a and b write the same line but for their redistribute id and times, given the same
// plan step and dtype (LineMemo): every list shared, every string and number equal.
bool SameLineFields(const StepBegin& a, const StepBegin& b) {
  return a.step == b.step && a.local_shape_before.SharesWith(b.local_shape_before) &&
         a.global_offset_before.SharesWith(b.global_offset_before) && a.mesh_dims.SharesWith(b.mesh_dims) &&
         a.src == b.src && a.dst == b.dst && a.comm == b.comm && a.logical_shape.SharesWith(b.logical_shape);
}
bool SameLineFields(const StepEnd& a, const StepEnd& b) {
  return a.step == b.step && a.local_shape_after.SharesWith(b.local_shape_after) &&
         a.global_offset_after.SharesWith(b.global_offset_after);
}
bool SameLineFields(const Collective& a, const Collective& b) {
  return a.step == b.step && a.group.SharesWith(b.group) && a.bytes_sent.SharesWith(b.bytes_sent) &&
         a.bytes_recv.SharesWith(b.bytes_recv) && a.mesh_dims.SharesWith(b.mesh_dims) && a.kind == b.kind &&
         a.dtype == b.dtype && a.negotiated == b.negotiated && a.op_id == b.op_id && !a.flight && !b.flight &&
         (a.redistribute_id >= 0) == (b.redistribute_id >= 0);
}

bool SameLineFields(const RedistributeEnd& a, const RedistributeEnd& b) {
  return a.ok == b.ok && a.error == b.error && a.checksum_before == b.checksum_before &&
         a.checksum_after == b.checksum_after;
}
bool SameLineFields(const RedistributeBegin& a, const RedistributeBegin& b) { return SameBeginFields(a, b); }
bool SameLineFields(const Op&, const Op&) { return false; }

// Whether templates a and b give the same events for the same TemplateFields.
bool SameTemplate(const Event& a, const Event& b) {
  return a.index() == b.index() &&
         std::visit([&b](const auto& x) { return SameLineFields(x, std::get<std::decay_t<decltype(x)>>(b)); },
                    a);
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
    if (repeat_memo_.size() < kRepeatMemo) {
      repeat_memo_.push_back(std::move(m));
      repeat_memo_next_ = 0;
    } else {
      repeat_memo_[repeat_memo_next_] = std::move(m);
      repeat_memo_next_ = (repeat_memo_next_ + 1) % kRepeatMemo;
    }
    return false;
  }
  // Times after the begin's, as offsets from it (kept where the reader takes them: within
  // +-2^61 ns, so an offset fits easily).
  constexpr int64_t kMax = int64_t{1} << 61;
  auto in_range = [](int64_t t) { return t >= -kMax && t <= kMax; };
  if (!in_range(f.t_ns)) return false;
  dt_.clear();
  for (size_t k = 1; k < n; ++k) {
    const TemplateFields& g = run[k].fields;
    if (!in_range(g.t_ns)) return false;
    dt_.push_back(g.t_ns - f.t_ns);
    if (std::holds_alternative<Collective>(*run[k].tmpl)) {
      if (!in_range(g.end_ns)) return false;
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
  return l.Finish();
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
  // The first begin of an id is what the reader refers to (a second one is an error it reports).
  if (std::none_of(open_.begin(), open_.end(), [&](const Open& o) { return o.id == e.id; })) {
    if (open_.size() == kMaxOpen) open_.erase(open_.begin());
    open_.push_back({e.id, e.optimized_plan, std::string(e.dtype)});
  }
  Line l(out);
  if (e.imported) l.Decline();  // rare: the JSON encoder writes it
  l.Str("type", kTypeRedistributeBegin);
  l.Int("id", e.id);
  if (const LikeMemo* memo = FindLikeMemo(e)) {
    l.Int("like", memo->like);  // what the lookup below would find
  } else {
    const size_t fields_at = l.size();
    BeginFields(l, e, true);
    if (l.ok()) {
      std::string_view fields = l.Since(fields_at);
      if (auto it = like_.find(fields); it != like_.end()) {
        l.Truncate(fields_at, false);
        l.Int("like", it->second);
        RememberLike(e, it->second);
      } else if (like_.size() < kMaxLikeTargets) {
        like_.emplace(std::string(fields), e.id);
        RememberLike(e, e.id);
      }
    }
  }
  l.Int("t_ns", e.t_ns);
  OpLink(l, e);
  if (!l.Finish()) Fallback(e, out);
}

void EncoderV2::Encode(const RedistributeEnd& e, std::string& out) {
  auto it = std::find_if(open_.begin(), open_.end(), [&](const Open& o) { return o.id == e.id; });
  if (it != open_.end()) {
    if (it + 1 != open_.end()) *it = std::move(open_.back());  // no self-move
    open_.pop_back();
  }
  Line l(out);
  EndLine(l, e, true);
  if (!l.Finish()) Fallback(e, out);
}

namespace {
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
  StepBeginLine(l, e, s);
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

void EncoderV2::Encode(const Collective& e, std::string& out, bool repeated) {
  const Open* open = nullptr;
  const PlanStep* s = e.redistribute_id >= 0 ? StepOf(e.redistribute_id, e.step, &open) : nullptr;
  const std::string* dtype = open ? &open->dtype : nullptr;
  // A collective of an op (no redistribute) is not remembered: its line has op_id after the times.
  repeated = repeated && e.redistribute_id >= 0 && e.op_id < 0 && !e.flight;
  if (repeated) {
    if (const LineMemo* m = FindLineMemo(e, s, dtype))
      return WriteLine(*m, {e.redistribute_id, e.start_ns, e.end_ns}, out);
  }
  CollectiveBasis basis{s, dtype, e.redistribute_id >= 0 ? &MeshGroupOf(e.mesh_dims) : nullptr, rank_};
  const size_t start = out.size();
  Line l(out);
  CollectiveLine(l, e, &basis);
  if (!l.Finish()) return Fallback(e, out);
  if (repeated)
    RememberLine(e, open, s, dtype, std::string_view(out).substr(start), kCollectiveHead, R"("start_ns":)",
                 {e.redistribute_id, e.start_ns, e.end_ns}, R"(,"end_ns":)");
}

void EncoderV2::Encode(const Op& e, std::string& out) {
  const Op* like = nullptr;
  for (const Op& r : recent_ops_)
    if (SameOpFields(r, e)) like = &r;
  if (like != nullptr) {
    Line l(out);
    l.Str("type", kTypeOp);
    l.Int("id", e.id);
    l.Int("like", like->id);
    l.Int("step", e.step);
    bool same_ids = true;
    for (size_t i = 0; i < e.inputs.size(); ++i)
      same_ids = same_ids && e.inputs[i].redistribute_id == like->inputs[i].redistribute_id;
    if (!same_ids) {
      std::vector<int64_t> ids;
      for (const OpInput& in : e.inputs) ids.push_back(in.redistribute_id);
      l.Ints("redistribute_ids", ids);
    }
    l.Int("t_ns", e.t_ns);
    l.Int("end_ns", e.end_ns);
    if (!e.ok) l.Bool("ok", false);
    if (!e.error.empty()) l.Str("error", e.error);
    if (l.Finish()) return;
  }
  if (!FastEncode(e, out)) return Fallback(e, out);  // a declined op is not a like target
  if (recent_ops_.size() == kRecentOps) recent_ops_.erase(recent_ops_.begin());
  recent_ops_.push_back(e);
}

}  // namespace shardscope::trace::detail
