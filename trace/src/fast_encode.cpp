// Field names and order here must stay those of codec_encode.cpp's EncodeEvent (the one home of the
// format); tests/trace/writer_test.cpp compares both encodings of every event kind, field by field.
#include "fast_encode.hpp"

#include "codec.hpp"
#include "format_v2.hpp"
#include "line_builder.hpp"

#include <charconv>
#include <cmath>
#include <cstring>
#include <string_view>

namespace shardscope::trace::detail {

// A field added to one of these structs must be written here too, or this path must decline
// events that carry it (`if (e.flight) l.Decline();` for a rare optional payload): the sizes below
// make the build fail until this file has been looked at.
static_assert(sizeof(Collective) == 104, "Collective changed: update fast_encode.cpp");
static_assert(sizeof(RedistributeBegin) == 160, "RedistributeBegin changed: update fast_encode.cpp");
static_assert(sizeof(RedistributeEnd) == 64, "RedistributeEnd changed: update fast_encode.cpp");
static_assert(sizeof(StepBegin) == 80, "StepBegin changed: update fast_encode.cpp");
static_assert(sizeof(StepEnd) == 40, "StepEnd changed: update fast_encode.cpp");
static_assert(sizeof(Op) == 280 && sizeof(OpInput) == 88 && sizeof(OpOutput) == 112 &&
                  sizeof(OpStrategy) == 56,
              "Op changed: update fast_encode.cpp");

void AppendDouble(double value, std::string& out) {
  if (value == 0) {
    out += std::signbit(value) ? "-0.0" : "0.0";
    return;
  }
  // Shortest round-trip digits, then nlohmann's layout (its format_buffer with min_exp -4 and
  // max_exp 15): fixed notation with ".0" for whole numbers, exponent with a sign and two digits.
  char sci[40];
  auto [end, ec] = std::to_chars(sci, sci + sizeof sci, value, std::chars_format::scientific);
  (void)ec;
  const char* p = sci;
  if (*p == '-') out += *p++;
  char digits[24];
  int k = 0;
  for (; p != end && *p != 'e'; ++p)
    if (*p != '.') digits[k++] = *p;
  // "e+20" / "e-05" (to_chars writes no terminating NUL)
  const bool negative_exp = p + 1 != end && p[1] == '-';
  int exp10 = 0;
  std::from_chars(p + 2, end, exp10);
  if (negative_exp) exp10 = -exp10;
  const int n = exp10 + 1;  // position of the decimal point after the first digit
  if (k <= n && n <= 15) {
    out.append(digits, k);
    out.append(static_cast<size_t>(n - k), '0');
    out += ".0";
  } else if (0 < n && n <= 15) {
    out.append(digits, n);
    out += '.';
    out.append(digits + n, k - n);
  } else if (-4 < n && n <= 0) {
    out += "0.";
    out.append(static_cast<size_t>(-n), '0');
    out.append(digits, k);
  } else {
    out += digits[0];
    if (k > 1) {
      out += '.';
      out.append(digits + 1, k - 1);
    }
    const int e = n - 1;
    out += e < 0 ? "e-" : "e+";
    const int a = e < 0 ? -e : e;
    if (a < 10) out += '0';
    out += std::to_string(a);
  }
}

void Plan(Line& l, std::string_view name, const std::vector<PlanStep>& plan, bool omit_defaults) {
  l.Objects(name, plan, [&](const PlanStep& s) {
    l.Ints("mesh_dims", s.mesh_dims);
    l.Str("src", s.src);
    l.Str("dst", s.dst);
    l.Str("comm", s.comm);
    l.Ints("logical_shape", s.logical_shape);
    if (!omit_defaults || s.flattened) l.Bool("flattened", s.flattened);
    if (!omit_defaults || s.avg_scale != 1.0) l.Num("avg_scale", s.avg_scale);
    l.Num("cost_us", s.cost_us);
  });
}

void SkippedMerges(Line& l, const std::vector<SkippedMerge>& merges) {
  l.Objects("skipped_merges", merges, [&](const SkippedMerge& m) {
    l.Ints("mesh_dims", m.mesh_dims);
    l.Str("comm", m.comm);
    l.Str("reason", m.reason);
    l.Str("hint", m.hint);
  });
}

void BeginFields(Line& l, const RedistributeBegin& e, bool v2) {
  l.Str("tensor", e.tensor);
  l.Ints("global_shape", e.global_shape);
  l.Str("dtype", e.dtype);
  l.Strs("src_placements", e.src_placements);
  l.Strs("dst_placements", e.dst_placements);
  if (!v2 || !e.src_order.empty()) l.Str("src_order", e.src_order);
  if (!v2 || !e.dst_order.empty()) l.Str("dst_order", e.dst_order);
  l.Str("planner", e.planner);
  l.Str("planner_reason", e.planner_reason);
  l.Str("notation", e.notation);
  if (!v2 || e.notation_unoptimized != e.notation) l.Str("notation_unoptimized", e.notation_unoptimized);
  Plan(l, "raw_plan", e.raw_plan, v2);
  if (!v2 || e.optimized_plan != e.raw_plan) Plan(l, "optimized_plan", e.optimized_plan, v2);
  if (!v2 || !e.skipped_merges.empty()) SkippedMerges(l, e.skipped_merges);
  l.Num("cost_us", e.cost_us);
}

void OpLink(Line& l, const RedistributeBegin& e) {
  if (e.op_id < 0) return;
  l.Int("op_id", e.op_id);
  l.Int("op_input", e.op_input);
}

void EndLine(Line& l, const RedistributeEnd& e, bool v2) {
  l.Str("type", kTypeRedistributeEnd);
  l.Int("id", e.id);
  l.Int("t_ns", e.t_ns);
  if (!v2 || !e.ok) l.Bool("ok", e.ok);
  if (!e.error.empty()) l.Str("error", e.error);
  if (e.checksum_before) l.Uint("checksum_before", *e.checksum_before);
  if (e.checksum_after) l.Uint("checksum_after", *e.checksum_after);
}

void StepBeginLine(Line& l, const StepBegin& e, const PlanStep* s) {
  l.Str("type", kTypeStepBegin);
  l.Int("redistribute_id", e.redistribute_id);
  l.Int("step", e.step);
  if (s == nullptr || e.mesh_dims != s->mesh_dims) l.Ints("mesh_dims", e.mesh_dims);
  if (s == nullptr || e.src != s->src) l.Str("src", e.src);
  if (s == nullptr || e.dst != s->dst) l.Str("dst", e.dst);
  if (s == nullptr || e.comm != s->comm) l.Str("comm", e.comm);
  if (s == nullptr || e.logical_shape != s->logical_shape) l.Ints("logical_shape", e.logical_shape);
  l.Ints("local_shape_before", e.local_shape_before);
  l.Ints("global_offset_before", e.global_offset_before);
  l.Int("t_ns", e.t_ns);
}

namespace {

// v2 writes a byte list that gives every peer the same count as that one count.
void Bytes(Line& l, std::string_view name, const SharedVec<int64_t>& bytes, const Collective& e,
           const CollectiveBasis* v2) {
  int64_t count = 0;
  if (v2 != nullptr && UniformBytes(e.group, bytes, v2->rank, count))
    l.Int(name, count);
  else
    l.Ints(name, bytes);
}

}  // namespace

void CollectiveLine(Line& l, const Collective& e, const CollectiveBasis* v2) {
  const PlanStep* s = v2 ? v2->step : nullptr;
  if (e.flight) l.Decline();  // Flight Recorder fields are rare: the JSON encoder writes them
  l.Str("type", kTypeCollective);
  l.Int("redistribute_id", e.redistribute_id);
  l.Int("step", e.step);
  if (s == nullptr || e.kind != s->comm) l.Str("kind", e.kind);
  if (s == nullptr || e.mesh_dims != s->mesh_dims) l.Ints("mesh_dims", e.mesh_dims);
  if (!v2 || v2->group == nullptr || e.group != *v2->group) l.Ints("group", e.group);
  if (!v2 || v2->dtype == nullptr || e.dtype != *v2->dtype) l.Str("dtype", e.dtype);
  Bytes(l, "bytes_sent", e.bytes_sent, e, v2);
  Bytes(l, "bytes_recv", e.bytes_recv, e, v2);
  if (!v2 || e.negotiated) l.Bool("negotiated", e.negotiated);
  l.Int("start_ns", e.start_ns);
  l.Int("end_ns", e.end_ns);
  if (e.op_id >= 0) l.Int("op_id", e.op_id);
}

namespace {

// Each event's v1 line, every field written.
void V1Line(Line& l, const RedistributeBegin& e) {
  if (e.imported) l.Decline();  // an imported plan (DebugMode) is rare: the JSON encoder writes it
  l.Str("type", kTypeRedistributeBegin);
  l.Int("id", e.id);
  BeginFields(l, e, false);
  l.Int("t_ns", e.t_ns);
  OpLink(l, e);
}

void V1Line(Line& l, const RedistributeEnd& e) { EndLine(l, e, false); }
void V1Line(Line& l, const StepBegin& e) { StepBeginLine(l, e, nullptr); }

void V1Line(Line& l, const StepEnd& e) {
  l.Str("type", kTypeStepEnd);
  l.Int("redistribute_id", e.redistribute_id);
  l.Int("step", e.step);
  l.Ints("local_shape_after", e.local_shape_after);
  l.Ints("global_offset_after", e.global_offset_after);
  l.Int("t_ns", e.t_ns);
}

void V1Line(Line& l, const Collective& e) { CollectiveLine(l, e, nullptr); }

void V1Line(Line& l, const Op& e) {
  l.Str("type", kTypeOp);
  l.Int("id", e.id);
  l.Int("step", e.step);
  l.Str("name", e.name);
  l.Str("args", e.args);
  l.Objects("inputs", e.inputs, [&](const OpInput& in) {
    l.Str("tensor", in.tensor);
    l.Strs("placements", in.placements);
    l.Strs("required", in.required);
    l.Int("redistribute_id", in.redistribute_id);
  });
  l.Objects("outputs", e.outputs, [&](const OpOutput& o) {
    l.Str("tensor", o.tensor);
    l.Bool("requested", o.requested);
    l.Strs("placements", o.placements);
    l.Ints("global_shape", o.global_shape);
    l.Ints("local_shape", o.local_shape);
  });
  l.Objects("candidates", e.candidates, [&](const OpStrategy& c) {
    l.StrLists("inputs", c.inputs);
    l.StrLists("outputs", c.outputs);
    l.Num("cost_us", std::isfinite(c.cost_us) ? c.cost_us : -1.0);  // codec_encode.cpp's CostToJson
  });
  l.Int("chosen", e.chosen);
  l.Str("rule", e.rule);
  l.Str("note", e.note);
  l.Int("t_ns", e.t_ns);
  l.Int("end_ns", e.end_ns);
  l.Bool("ok", e.ok);
  if (!e.error.empty()) l.Str("error", e.error);
}

}  // namespace

template <typename E>
bool FastEncode(const E& e, std::string& out) {
  Line l(out);
  V1Line(l, e);
  return l.Finish();
}

template bool FastEncode(const RedistributeBegin&, std::string&);
template bool FastEncode(const RedistributeEnd&, std::string&);
template bool FastEncode(const StepBegin&, std::string&);
template bool FastEncode(const StepEnd&, std::string&);
template bool FastEncode(const Collective&, std::string&);
template bool FastEncode(const Op&, std::string&);

}  // namespace shardscope::trace::detail
