// Decoding of trace lines with file:line messages (the reference reader); encoding lives in
// codec_encode.cpp.
#include "codec.hpp"

#include "format_v2.hpp"

#include <cmath>
#include <limits>
#include <type_traits>

#include "shardscope/error.hpp"
#include "shardscope/trace/codec.hpp"

namespace shardscope::trace {

using nlohmann::json;

namespace detail {

void ThrowAt(const LineRef& at, const std::string& what) {
  throw InvalidInput(at.file + ":" + std::to_string(at.line) + ": " + what);
}

namespace {

// Typed access to the fields of one JSON object; every failure names the field by its full path
// ("raw_plan[2].mesh_dims") and what was expected.
class Fields {
 public:
  Fields(const json& obj, const LineRef& at, std::string prefix)
      : obj_(obj), at_(at), prefix_(std::move(prefix)) {
    if (!obj_.is_object())
      ThrowAt(at_, (prefix_.empty() ? "line" : "'" + prefix_ + "'") + " must be a JSON object");
  }

  bool Has(const char* name) const { return obj_.contains(name); }

  const json& Get(const char* name) const {
    auto it = obj_.find(name);
    if (it == obj_.end()) Fail("missing field '" + Path(name) + "'");
    return *it;
  }

  int64_t Int(const char* name, int64_t min, int64_t max) const {
    return CheckedInt(Get(name), Path(name), min, max);
  }

  uint64_t Uint(const char* name) const {
    const json& v = Get(name);
    if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0)) {
      Fail("field '" + Path(name) + "' must be a non-negative integer");
    }
    return v.get<uint64_t>();
  }

  double Number(const char* name) const {
    const json& v = Get(name);
    if (!v.is_number()) Fail("field '" + Path(name) + "' must be a number");
    return v.get<double>();
  }

  bool Bool(const char* name) const {
    const json& v = Get(name);
    if (!v.is_boolean()) Fail("field '" + Path(name) + "' must be a boolean");
    return v.get<bool>();
  }

  std::string Str(const char* name) const {
    const json& v = Get(name);
    if (!v.is_string()) Fail("field '" + Path(name) + "' must be a string");
    return v.get<std::string>();
  }

  std::vector<int64_t> Ints(const char* name, int64_t max_len, int64_t min, int64_t max) const {
    const json& v = Array(name, max_len, "integers");
    std::vector<int64_t> out;
    out.reserve(v.size());
    for (const json& x : v) {
      if (!IsInt(x)) Fail("field '" + Path(name) + "' must be an array of integers");
      out.push_back(CheckedInt(x, Path(name) + "[" + std::to_string(out.size()) + "]", min, max));
    }
    return out;
  }

  std::vector<std::string> Strs(const char* name, int64_t max_len) const {
    const json& v = Array(name, max_len, "strings");
    std::vector<std::string> out;
    out.reserve(v.size());
    for (const json& x : v) {
      if (!x.is_string()) Fail("field '" + Path(name) + "' must be an array of strings");
      out.push_back(x.get<std::string>());
    }
    return out;
  }

  // An array whose length is checked against max_len before anything is built from it.
  const json& Array(const char* name, int64_t max_len, const char* of) const {
    const json& v = Get(name);
    if (!v.is_array()) Fail("field '" + Path(name) + "' must be an array of " + of);
    if (static_cast<int64_t>(v.size()) > max_len) {
      Fail("field '" + Path(name) + "' has " + std::to_string(v.size()) + " entries, more than the limit " +
           std::to_string(max_len));
    }
    return v;
  }

  Fields Object(const char* name) const { return Fields(Get(name), at_, Path(name)); }

  std::string Path(const std::string& name) const { return prefix_.empty() ? name : prefix_ + "." + name; }
  [[noreturn]] void Fail(const std::string& what) const { ThrowAt(at_, what); }
  const LineRef& at() const { return at_; }

 private:
  static bool IsInt(const json& v) { return v.is_number_integer() || v.is_number_unsigned(); }

  int64_t CheckedInt(const json& v, const std::string& path, int64_t min, int64_t max) const {
    if (!IsInt(v)) Fail("field '" + path + "' must be an integer");
    if (v.is_number_unsigned() &&
        v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      Fail("field '" + path + "' is out of range");
    }
    int64_t x = v.get<int64_t>();
    if (x < min || x > max) {
      Fail("field '" + path + "' is " + std::to_string(x) + ", outside [" + std::to_string(min) + ", " +
           std::to_string(max) + "]");
    }
    return x;
  }

  const json& obj_;
  const LineRef& at_;
  std::string prefix_;
};

constexpr int64_t kI64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kI64Min = std::numeric_limits<int64_t>::min();

// Which fields a line has that v2 lets it leave out (bits as format_v2.hpp numbers them). In v1
// every field counts as present, so reading it fails when it is missing.
struct Presence {
  const Fields& f;
  bool v2;
  uint32_t bits = 0;
  bool operator()(const char* name, uint32_t bit) {
    const bool here = !v2 || f.Has(name);
    if (here) bits |= bit;
    return here;
  }
};

// v2 lets a plan step leave out `flattened` (false) and `avg_scale` (1).
std::vector<PlanStep> ParsePlan(const Fields& f, const char* name, bool v2) {
  const json& arr = f.Array(name, kMaxPlanSteps, "plan steps");
  std::vector<PlanStep> plan;
  plan.reserve(arr.size());
  for (size_t i = 0; i < arr.size(); ++i) {
    Fields s(arr[i], f.at(), f.Path(name) + "[" + std::to_string(i) + "]");
    PlanStep p;
    p.mesh_dims = s.Ints("mesh_dims", kMaxMeshDims, 0, kMaxMeshDims - 1);
    p.src = s.Str("src");
    p.dst = s.Str("dst");
    p.comm = s.Str("comm");
    p.logical_shape = s.Ints("logical_shape", kMaxTensorDims, 0, kMaxExtent);
    if (!v2 || s.Has("flattened")) p.flattened = s.Bool("flattened");
    if (!v2 || s.Has("avg_scale")) p.avg_scale = s.Number("avg_scale");
    p.cost_us = s.Number("cost_us");
    plan.push_back(std::move(p));
  }
  return plan;
}

std::vector<SkippedMerge> ParseSkipped(const Fields& f, const char* name) {
  const json& arr = f.Array(name, kMaxPlanSteps, "skipped merges");
  std::vector<SkippedMerge> out;
  out.reserve(arr.size());
  for (size_t i = 0; i < arr.size(); ++i) {
    Fields s(arr[i], f.at(), f.Path(name) + "[" + std::to_string(i) + "]");
    SkippedMerge m;
    m.mesh_dims = s.Ints("mesh_dims", kMaxMeshDims, 0, kMaxMeshDims - 1);
    m.comm = s.Str("comm");
    m.reason = s.Str("reason");
    m.hint = s.Str("hint");
    out.push_back(std::move(m));
  }
  return out;
}

// The optional op_id/op_input pair of an implicit redistribute: both present or both absent.
void ParseOpLink(const Fields& f, int64_t& op_id, int64_t& op_input) {
  if (!f.Has("op_id") && !f.Has("op_input")) return;
  if (!f.Has("op_id") || !f.Has("op_input")) f.Fail("fields 'op_id' and 'op_input' must appear together");
  op_id = f.Int("op_id", 0, kI64Max);
  op_input = f.Int("op_input", 0, kMaxOpOperands - 1);
}

// The optional "imported" object: a plan another tool recorded (shardscope import debugmode).
ImportedPlan ParseImported(const Fields& f) {
  Fields o = f.Object("imported");
  ImportedPlan p;
  p.source = o.Str("source");
  p.line = o.Int("line", 0, kI64Max);
  p.notation = o.Str("notation");
  const json& arr = o.Array("collectives", kMaxPlanSteps, "collectives");
  p.collectives.reserve(arr.size());
  for (size_t i = 0; i < arr.size(); ++i) {
    Fields c(arr[i], f.at(), o.Path("collectives") + "[" + std::to_string(i) + "]");
    ImportedCollective ic;
    ic.kind = c.Str("kind");
    ic.group_size = c.Int("group_size", -1, kMaxRanks);
    ic.group_name = c.Str("group_name");
    p.collectives.push_back(std::move(ic));
  }
  p.verdict = o.Str("verdict");
  p.reason = o.Str("reason");
  return p;
}

// In v2 every field of kBeginFields may be absent; CompleteBegin (format_v2.cpp) rebuilds it from
// `like` or its default, or names the one missing. v1 requires them all, in this order.
RedistributeBegin ParseRedistributeBegin(const Fields& f, const FileContext& ctx) {
  RedistributeBegin e;
  const bool v2 = ctx.v2();
  Presence has{f, v2};

  e.id = f.Int("id", 0, kI64Max);
  if (has("tensor", 1u << 0)) e.tensor = f.Str("tensor");
  if (has("global_shape", 1u << 1)) e.global_shape = f.Ints("global_shape", kMaxTensorDims, 0, kMaxExtent);
  if (has("dtype", 1u << 2)) e.dtype = f.Str("dtype");
  if (has("src_placements", 1u << 3)) e.src_placements = f.Strs("src_placements", kMaxMeshDims);
  if (has("dst_placements", 1u << 4)) e.dst_placements = f.Strs("dst_placements", kMaxMeshDims);
  if (has("src_order", 1u << 5)) e.src_order = f.Str("src_order");
  if (has("dst_order", 1u << 6)) e.dst_order = f.Str("dst_order");
  if (has("planner", 1u << 7)) e.planner = f.Str("planner");
  if (has("planner_reason", 1u << 8)) e.planner_reason = f.Str("planner_reason");
  if (has("notation", 1u << 9)) e.notation = f.Str("notation");
  if (has("notation_unoptimized", 1u << 10)) e.notation_unoptimized = f.Str("notation_unoptimized");
  if (has("raw_plan", 1u << 11)) e.raw_plan = ParsePlan(f, "raw_plan", v2);
  if (has("optimized_plan", 1u << 12)) e.optimized_plan = ParsePlan(f, "optimized_plan", v2);
  if (has("skipped_merges", 1u << 13)) e.skipped_merges = ParseSkipped(f, "skipped_merges");
  if (has("cost_us", 1u << 14)) e.cost_us = f.Number("cost_us");
  static_assert(kBeginFieldCount == 15, "ParseRedistributeBegin reads kBeginFields in order");
  e.t_ns = f.Int("t_ns", -kMaxTimeNs, kMaxTimeNs);
  ParseOpLink(f, e.op_id, e.op_input);
  if (f.Has("imported")) e.imported = ParseImported(f);
  if (v2) {
    const int64_t like = f.Has("like") ? f.Int("like", 0, kI64Max) : -1;
    if (std::string why = CompleteBegin(e, has.bits, like, ctx); !why.empty()) f.Fail(why);
  }
  return e;
}

RedistributeEnd ParseRedistributeEnd(const Fields& f, const FileContext& ctx) {
  RedistributeEnd e;
  e.id = f.Int("id", 0, kI64Max);
  e.t_ns = f.Int("t_ns", -kMaxTimeNs, kMaxTimeNs);
  if (!ctx.v2() || f.Has("ok")) e.ok = f.Bool("ok");  // v2: absent means true
  if (f.Has("error")) e.error = f.Str("error");
  if (f.Has("checksum_before")) e.checksum_before = f.Uint("checksum_before");
  if (f.Has("checksum_after")) e.checksum_after = f.Uint("checksum_after");
  return e;
}

StepBegin ParseStepBegin(const Fields& f, const FileContext& ctx) {
  StepBegin e;
  const bool v2 = ctx.v2();
  Presence has{f, v2};
  e.redistribute_id = f.Int("redistribute_id", 0, kI64Max);
  e.step = f.Int("step", 0, kMaxPlanSteps - 1);
  if (has("mesh_dims", kStepMeshDims)) e.mesh_dims = f.Ints("mesh_dims", kMaxMeshDims, 0, kMaxMeshDims - 1);
  if (has("src", kStepSrc)) e.src = f.Str("src");
  if (has("dst", kStepDst)) e.dst = f.Str("dst");
  if (has("comm", kStepComm)) e.comm = f.Str("comm");
  if (has("logical_shape", kStepLogicalShape))
    e.logical_shape = f.Ints("logical_shape", kMaxTensorDims, 0, kMaxExtent);
  e.local_shape_before = f.Ints("local_shape_before", kMaxTensorDims, 0, kMaxExtent);
  e.global_offset_before = f.Ints("global_offset_before", kMaxTensorDims, 0, kMaxExtent);
  e.t_ns = f.Int("t_ns", -kMaxTimeNs, kMaxTimeNs);
  if (std::string why = CompleteStepBegin(e, has.bits, ctx); !why.empty()) f.Fail(why);
  return e;
}

StepEnd ParseStepEnd(const Fields& f) {
  StepEnd e;
  e.redistribute_id = f.Int("redistribute_id", 0, kI64Max);
  e.step = f.Int("step", 0, kMaxPlanSteps - 1);
  e.local_shape_after = f.Ints("local_shape_after", kMaxTensorDims, 0, kMaxExtent);
  e.global_offset_after = f.Ints("global_offset_after", kMaxTensorDims, 0, kMaxExtent);
  e.t_ns = f.Int("t_ns", -kMaxTimeNs, kMaxTimeNs);
  return e;
}

// Shapes of the tensors of one Flight Recorder entry: at most kMaxOpOperands tensors of at most
// kMaxTensorDims dims, checked before anything is built.
std::vector<std::vector<int64_t>> ParseShapeList(const Fields& f, const char* name) {
  const json& arr = f.Array(name, kMaxOpOperands, "shapes");
  std::vector<std::vector<int64_t>> out;
  out.reserve(arr.size());
  for (size_t i = 0; i < arr.size(); ++i) {
    std::string path = f.Path(name) + "[" + std::to_string(i) + "]";
    if (!arr[i].is_array() || static_cast<int64_t>(arr[i].size()) > kMaxTensorDims)
      f.Fail("field '" + path + "' must be an array of at most " + std::to_string(kMaxTensorDims) +
             " integers");
    std::vector<int64_t> shape;
    for (const json& x : arr[i]) {
      if (!(x.is_number_integer() || x.is_number_unsigned()) || x.get<int64_t>() < 0 ||
          (x.is_number_unsigned() && x.get<uint64_t>() > static_cast<uint64_t>(kMaxExtent)) ||
          x.get<int64_t>() > kMaxExtent)
        f.Fail("field '" + path + "' must hold integers in [0, " + std::to_string(kMaxExtent) + "]");
      shape.push_back(x.get<int64_t>());
    }
    out.push_back(std::move(shape));
  }
  return out;
}

FlightRecord ParseFlight(const Fields& f) {
  FlightRecord r;
  r.pg_name = f.Str("pg_name");
  r.pg_desc = f.Str("pg_desc");
  r.seq_id = f.Int("seq_id", 0, kI64Max);
  r.p2p_seq_id = f.Int("p2p_seq_id", 0, kI64Max);
  r.record_id = f.Int("record_id", 0, kI64Max);
  r.op_id = f.Int("op_id", 0, kI64Max);
  r.profiling_name = f.Str("profiling_name");
  r.state = f.Str("state");
  r.input_sizes = ParseShapeList(f, "input_sizes");
  r.output_sizes = ParseShapeList(f, "output_sizes");
  r.input_dtypes = f.Strs("input_dtypes", kMaxOpOperands);
  r.output_dtypes = f.Strs("output_dtypes", kMaxOpOperands);
  r.created_ns = f.Int("created_ns", -kMaxTimeNs, kMaxTimeNs);
  // null: an unknown (non-finite) duration as older writers wrote it (JSON has no infinity).
  if (f.Has("duration_ms") && !f.Get("duration_ms").is_null()) r.duration_ms = f.Number("duration_ms");
  r.timeout_ms = f.Int("timeout_ms", 0, kI64Max);
  r.is_p2p = f.Bool("is_p2p");
  return r;
}

// v2: one per-peer byte list written as one integer (format_v2.hpp's uniform count); held in a
// one-entry list until CompleteCollective expands it.
std::vector<int64_t> ParseBytes(const Fields& f, const char* name, bool v2, uint32_t uniform_bit,
                                uint32_t& present) {
  const json& v = f.Get(name);
  if (!v2 || v.is_array()) return f.Ints(name, kMaxRanks, 0, kMaxBytes);
  if (!v.is_number_integer() && !v.is_number_unsigned()) {
    f.Fail("field '" + f.Path(name) +
           "' must be an array of integers (one per rank of 'group') or one integer (the amount for every "
           "other rank of 'group', 0 for this rank)");
  }
  present |= uniform_bit;
  return {f.Int(name, 0, kMaxBytes)};
}

Collective ParseCollective(const Fields& f, const FileContext& ctx) {
  Collective e;
  e.redistribute_id = f.Int("redistribute_id", -1, kI64Max);
  if (f.Has("op_id")) e.op_id = f.Int("op_id", 0, kI64Max);
  if (f.Has("flight")) e.flight = ParseFlight(f.Object("flight"));
  if (e.redistribute_id < 0 && e.op_id < 0 && !e.flight) {
    f.Fail(
        "field 'redistribute_id' is -1 but 'op_id' is absent: only an op's own collective (a halo "
        "exchange, with 'op_id' >= 0) has no redistribute (or an imported Flight Recorder entry, with "
        "'flight')");
  }
  e.step = f.Int("step", 0, kMaxPlanSteps - 1);
  const bool v2 = ctx.v2();
  Presence has{f, v2};
  if (has("kind", kCollKind)) {
    e.kind = f.Str("kind");
    if (e.kind.empty()) f.Fail("field 'kind' must be a non-empty string");
  }
  if (has("mesh_dims", kCollMeshDims)) e.mesh_dims = f.Ints("mesh_dims", kMaxMeshDims, 0, kMaxMeshDims - 1);
  if (has("group", kCollGroup)) e.group = f.Ints("group", kMaxRanks, 0, kMaxRanks - 1);
  if (has("dtype", kCollDtype)) e.dtype = f.Str("dtype");
  e.bytes_sent = ParseBytes(f, "bytes_sent", v2, kCollUniformSent, has.bits);
  e.bytes_recv = ParseBytes(f, "bytes_recv", v2, kCollUniformRecv, has.bits);
  if (v2) {
    if (std::string why = CompleteCollective(e, has.bits, ctx); !why.empty()) f.Fail(why);
    if (e.kind.empty()) f.Fail("field 'kind' must be a non-empty string");
  }
  if (e.bytes_sent.size() != e.group.size() || e.bytes_recv.size() != e.group.size()) {
    f.Fail("fields 'bytes_sent' and 'bytes_recv' must have one entry per rank of 'group' (" +
           std::to_string(e.group.size()) + ")");
  }
  if (has("negotiated", kCollNegotiated)) e.negotiated = f.Bool("negotiated");
  e.start_ns = f.Int("start_ns", -kMaxTimeNs, kMaxTimeNs);
  e.end_ns = f.Int("end_ns", -kMaxTimeNs, kMaxTimeNs);
  return e;
}

// A list of placement lists (one per operand); each inner list is checked against kMaxMeshDims.
std::vector<std::vector<std::string>> ParsePlacementLists(const Fields& f, const char* name) {
  const json& arr = f.Array(name, kMaxOpOperands, "arrays of strings");
  std::vector<std::vector<std::string>> out;
  out.reserve(arr.size());
  for (size_t i = 0; i < arr.size(); ++i) {
    std::string path = f.Path(name) + "[" + std::to_string(i) + "]";
    if (!arr[i].is_array()) f.Fail("field '" + path + "' must be an array of strings");
    if (static_cast<int64_t>(arr[i].size()) > kMaxMeshDims) {
      f.Fail("field '" + path + "' has " + std::to_string(arr[i].size()) + " entries, more than the limit " +
             std::to_string(kMaxMeshDims));
    }
    std::vector<std::string> placements;
    for (const json& x : arr[i]) {
      if (!x.is_string()) f.Fail("field '" + path + "' must be an array of strings");
      placements.push_back(x.get<std::string>());
    }
    out.push_back(std::move(placements));
  }
  return out;
}

void ParseOpInputs(const Fields& f, Op& e) {
  e.inputs.clear();
  const json& inputs = f.Array("inputs", kMaxOpOperands, "op inputs");
  for (size_t i = 0; i < inputs.size(); ++i) {
    Fields s(inputs[i], f.at(), "inputs[" + std::to_string(i) + "]");
    OpInput in;
    in.tensor = s.Str("tensor");
    in.placements = s.Strs("placements", kMaxMeshDims);
    in.required = s.Strs("required", kMaxMeshDims);
    in.redistribute_id = s.Int("redistribute_id", -1, kI64Max);
    e.inputs.push_back(std::move(in));
  }
}

void ParseOpOutputs(const Fields& f, Op& e) {
  e.outputs.clear();
  const json& outputs = f.Array("outputs", kMaxOpOperands, "op outputs");
  for (size_t i = 0; i < outputs.size(); ++i) {
    Fields s(outputs[i], f.at(), "outputs[" + std::to_string(i) + "]");
    OpOutput out;
    out.tensor = s.Str("tensor");
    out.requested = s.Bool("requested");
    out.placements = s.Strs("placements", kMaxMeshDims);
    out.global_shape = s.Ints("global_shape", kMaxTensorDims, 0, kMaxExtent);
    out.local_shape = s.Ints("local_shape", kMaxTensorDims, 0, kMaxExtent);
    if (!out.requested && !(out.tensor.empty() && out.placements.empty() && out.global_shape.empty() &&
                            out.local_shape.empty())) {
      s.Fail(
          "output " + std::to_string(i) +
          " is not requested, so its 'tensor', 'placements', 'global_shape' and 'local_shape' must be empty");
    }
    e.outputs.push_back(std::move(out));
  }
}

void ParseOpCandidates(const Fields& f, Op& e) {
  e.candidates.clear();
  const json& candidates = f.Array("candidates", kMaxOpCandidates, "strategies");
  for (size_t i = 0; i < candidates.size(); ++i) {
    Fields s(candidates[i], f.at(), "candidates[" + std::to_string(i) + "]");
    OpStrategy c;
    c.inputs = ParsePlacementLists(s, "inputs");
    c.outputs = ParsePlacementLists(s, "outputs");
    if (c.inputs.size() != e.inputs.size() || c.outputs.size() != e.outputs.size()) {
      s.Fail("strategy " + std::to_string(i) + " must have one placement list per input (" +
             std::to_string(e.inputs.size()) + ") and per output (" + std::to_string(e.outputs.size()) + ")");
    }
    c.cost_us = s.Number("cost_us");
    if (c.cost_us == -1.0) {
      c.cost_us = std::numeric_limits<double>::infinity();  // the format's spelling of +inf
    } else if (!(c.cost_us >= 0.0)) {
      s.Fail("field '" + s.Path("cost_us") + "' must be >= 0, or -1 for an infinite cost");
    }
    e.candidates.push_back(std::move(c));
  }
}

// v2: `like` names an earlier op of the file whose name .. note this line may leave out, and
// `redistribute_ids` (one per input) replaces the inputs' redistribute ids (format_v2.hpp).
Op ParseOp(const Fields& f, const FileContext& ctx) {
  Op e;
  const Op* base = nullptr;
  if (ctx.v2() && f.Has("like")) {
    const int64_t like = f.Int("like", 0, kI64Max);
    base = ctx.OpWithId(like);
    if (base == nullptr) {
      f.Fail("field 'like' is " + std::to_string(like) +
             " but no op with that id comes before this line in this file");
    }
    e = *base;
    e.error.clear();
  }
  auto has = [&](const char* name) { return base == nullptr || f.Has(name); };
  e.id = f.Int("id", 0, kI64Max);
  e.step = f.Int("step", 0, kI64Max);
  if (has("name")) {
    e.name = f.Str("name");
    if (e.name.empty()) f.Fail("field 'name' must be a non-empty string");
  }
  if (has("args")) e.args = f.Str("args");
  if (has("inputs")) ParseOpInputs(f, e);
  if (has("outputs")) ParseOpOutputs(f, e);
  if (has("candidates")) ParseOpCandidates(f, e);
  if (has("chosen")) e.chosen = f.Int("chosen", -1, kMaxOpCandidates - 1);
  if (has("rule")) e.rule = f.Str("rule");
  if (has("note")) e.note = f.Str("note");
  if (ctx.v2() && f.Has("redistribute_ids")) {
    const std::vector<int64_t> ids = f.Ints("redistribute_ids", kMaxOpOperands, -1, kI64Max);
    if (ids.size() != e.inputs.size())
      f.Fail("field 'redistribute_ids' must have one entry per input (" + std::to_string(e.inputs.size()) +
             ")");
    for (size_t i = 0; i < ids.size(); ++i) e.inputs[i].redistribute_id = ids[i];
  }
  e.t_ns = f.Int("t_ns", -kMaxTimeNs, kMaxTimeNs);
  e.end_ns = f.Int("end_ns", -kMaxTimeNs, kMaxTimeNs);
  e.ok = !ctx.v2() || f.Has("ok") ? f.Bool("ok") : true;  // v2: absent means true
  if (f.Has("error")) e.error = f.Str("error");
  // -1 ("no strategy") only for an op that failed; otherwise chosen indexes candidates.
  if (e.chosen >= static_cast<int64_t>(e.candidates.size()) || (e.chosen < 0 && e.ok)) {
    f.Fail("field 'chosen' is " + std::to_string(e.chosen) + " but the op has " +
           std::to_string(e.candidates.size()) + " candidate strategies" +
           (e.chosen < 0 ? " (-1 is allowed only when 'ok' is false)" : ""));
  }
  return e;
}

}  // namespace

std::string LineType(const json& line, const LineRef& at) {
  if (!line.is_object()) ThrowAt(at, "line must be a JSON object");
  auto it = line.find("type");
  if (it == line.end() || !it->is_string()) ThrowAt(at, "field 'type' must be a string");
  return it->get<std::string>();
}

Header ParseHeader(const json& line, const LineRef& at) {
  if (LineType(line, at) != kTypeHeader) ThrowAt(at, "first line must be the header (\"type\": \"header\")");
  Fields f(line, at, "");
  Header h;
  h.format = f.Str("format");
  if (h.format != kFormatName) {
    f.Fail("field 'format' is '" + h.format + "', not '" + std::string(kFormatName) +
           "': not a shardscope trace");
  }
  // The version is checked before any other field: a newer version may have changed them.
  int64_t version = f.Int("version", kI64Min, kI64Max);
  if (version > kCurrentVersion) {
    throw Unsupported(at.file + ":" + std::to_string(at.line) + ": trace format version " +
                      std::to_string(version) + " is newer than this shardscope reads (" +
                      std::to_string(kCurrentVersion) + "); upgrade shardscope");
  }
  if (version < kMinVersion) {
    f.Fail("trace format version " + std::to_string(version) + " is not valid (this shardscope reads " +
           std::to_string(kMinVersion) + " to " + std::to_string(kCurrentVersion) + ")");
  }
  h.version = static_cast<int>(version);
  h.world = f.Int("world", 1, kMaxRanks);
  h.rank = f.Int("rank", 0, h.world - 1);
  Fields mesh = f.Object("mesh");
  h.mesh_shape = mesh.Ints("shape", kMaxMeshDims, 1, kMaxRanks);
  h.mesh_dim_names = mesh.Strs("dim_names", kMaxMeshDims);
  if (h.mesh_dim_names.size() != h.mesh_shape.size()) {
    f.Fail("field 'mesh.dim_names' must have one entry per mesh dim (" + std::to_string(h.mesh_shape.size()) +
           ")");
  }
  int64_t mesh_size = 1;
  for (int64_t extent : h.mesh_shape) {
    mesh_size *= extent;  // cannot overflow: each extent <= 2^20 and the product is checked as it grows
    if (mesh_size > kMaxRanks)
      f.Fail("field 'mesh.shape' describes more than " + std::to_string(kMaxRanks) + " ranks");
  }
  if (!h.mesh_shape.empty() && mesh_size != h.world) {
    f.Fail("field 'mesh.shape' has " + std::to_string(mesh_size) + " ranks but 'world' is " +
           std::to_string(h.world));
  }
  h.backend = f.Str("backend");
  h.host = f.Str("host");
  h.pid = f.Int("pid", kI64Min, kI64Max);
  Fields clock = f.Object("clock");
  h.clock.name = clock.Str("name");
  h.clock.offset_ns = clock.Int("offset_ns", -kMaxTimeNs, kMaxTimeNs);
  return h;
}

RepeatLine ParseRepeatLine(const json& line, const LineRef& at) {
  Fields f(line, at, "");
  RepeatLine r;
  r.id = f.Int("id", 0, kI64Max);
  r.like = f.Int("like", 0, kI64Max);
  r.t_ns = f.Int("t_ns", -kMaxTimeNs, kMaxTimeNs);
  r.dt = f.Ints("dt", kMaxRepeatTimes, -2 * kMaxTimeNs, 2 * kMaxTimeNs);
  if (f.Has("tensor")) r.tensor = f.Str("tensor");
  ParseOpLink(f, r.op_id, r.op_input);
  return r;
}

std::optional<Event> ParseEvent(const json& line, const LineRef& at, const FileContext& ctx) {
  std::string type = LineType(line, at);
  Fields f(line, at, "");
  if (type == kTypeRedistributeBegin) return ParseRedistributeBegin(f, ctx);
  if (type == kTypeRedistributeEnd) return ParseRedistributeEnd(f, ctx);
  if (type == kTypeStepBegin) return ParseStepBegin(f, ctx);
  if (type == kTypeStepEnd) return ParseStepEnd(f);
  if (type == kTypeCollective) return ParseCollective(f, ctx);
  if (type == kTypeOp) return ParseOp(f, ctx);
  if (type == kTypeHeader) ThrowAt(at, "a second header line; each file holds one rank's trace");
  return std::nullopt;
}

}  // namespace detail
}  // namespace shardscope::trace
