// Field names and omissions here must stay those format_v2.cpp rebuilds; tests/trace/writer_test.cpp
// reads every v2 line back and compares it with the event written.
#include "encode_v2.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "codec.hpp"
#include "fast_encode.hpp"
#include "format_v2.hpp"
#include "line_builder.hpp"
#include "shardscope/trace/codec.hpp"

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

}  // namespace

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

void EncoderV2::Encode(const StepBegin& e, std::string& out) {
  const Open* open = nullptr;
  const PlanStep* s = StepOf(e.redistribute_id, e.step, &open);
  Line l(out);
  StepBeginLine(l, e, s);
  if (!l.Finish()) Fallback(e, out);
}

void EncoderV2::Encode(const StepEnd& e, std::string& out) {
  if (!FastEncode(e, out)) Fallback(e, out);
}

void EncoderV2::Encode(const Collective& e, std::string& out) {
  const Open* open = nullptr;
  const PlanStep* s = e.redistribute_id >= 0 ? StepOf(e.redistribute_id, e.step, &open) : nullptr;
  CollectiveBasis basis{s, open ? &open->dtype : nullptr,
                        e.redistribute_id >= 0 ? &MeshGroupOf(e.mesh_dims) : nullptr, rank_};
  Line l(out);
  CollectiveLine(l, e, &basis);
  if (!l.Finish()) Fallback(e, out);
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
