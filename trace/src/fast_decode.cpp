// The fast path mirrors codec.cpp's Parse* functions rule for rule, but never builds a message:
// where codec.cpp would fail, this returns false and the reader re-reads the line there. A rule
// forgotten here would accept a line the reference path rejects, so tests/trace/reader_test.cpp
// reads every fixture and fuzzed mutations through both paths and requires equal results.
#include "fast_decode.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <utility>

#include "codec.hpp"
#include "format_v2.hpp"

namespace shardscope::trace::detail {

namespace {

using simdjson::dom::array;
using simdjson::dom::element;
using simdjson::dom::element_type;
using simdjson::dom::object;

constexpr int64_t kI64Max = std::numeric_limits<int64_t>::max();

bool Int(element v, int64_t min, int64_t max, int64_t& out) {
  // simdjson types a non-negative integer as INT64 whenever it fits, so UINT64 here is > 2^63-1,
  // which the reference path refuses as out of range.
  if (v.type() != element_type::INT64) return false;
  int64_t x = 0;
  if (v.get_int64().get(x) != simdjson::SUCCESS || x < min || x > max) return false;
  out = x;
  return true;
}

bool Uint(element v, uint64_t& out) {
  if (v.type() == element_type::INT64) {
    int64_t x = 0;
    if (v.get_int64().get(x) != simdjson::SUCCESS || x < 0) return false;
    out = static_cast<uint64_t>(x);
    return true;
  }
  return v.type() == element_type::UINT64 && v.get_uint64().get(out) == simdjson::SUCCESS;
}

bool Number(element v, double& out) {
  switch (v.type()) {
    case element_type::INT64: {
      int64_t x = 0;
      if (v.get_int64().get(x) != simdjson::SUCCESS) return false;
      out = static_cast<double>(x);
      return true;
    }
    case element_type::UINT64: {
      uint64_t x = 0;
      if (v.get_uint64().get(x) != simdjson::SUCCESS) return false;
      out = static_cast<double>(x);
      return true;
    }
    case element_type::DOUBLE:
      // A number the reference parser cannot hold (1e999) is its error, not ours to decide.
      return v.get_double().get(out) == simdjson::SUCCESS && std::isfinite(out);
    default:
      return false;
  }
}

bool Bool(element v, bool& out) {
  return v.type() == element_type::BOOL && v.get_bool().get(out) == simdjson::SUCCESS;
}

bool Str(element v, std::string& out) {
  std::string_view s;
  if (v.type() != element_type::STRING || v.get_string().get(s) != simdjson::SUCCESS) return false;
  out.assign(s.data(), s.size());
  return true;
}

bool Str(element v, IStr& out) {
  std::string_view s;
  if (v.type() != element_type::STRING || v.get_string().get(s) != simdjson::SUCCESS) return false;
  out = IStr(s);
  return true;
}

bool Arr(element v, int64_t max_len, array& out) {
  // DOM array sizes saturate at 0xFFFFFF, which is above every kMax* length limit.
  return v.type() == element_type::ARRAY && v.get_array().get(out) == simdjson::SUCCESS &&
         static_cast<int64_t>(out.size()) <= max_len;
}

bool Ints(element v, int64_t max_len, int64_t min, int64_t max, std::vector<int64_t>& out) {
  array arr;
  if (!Arr(v, max_len, arr)) return false;
  out.clear();
  out.reserve(arr.size());
  for (element x : arr) {
    int64_t i = 0;
    if (!Int(x, min, max, i)) return false;
    out.push_back(i);
  }
  return true;
}

bool Strs(element v, int64_t max_len, std::vector<std::string>& out) {
  array arr;
  if (!Arr(v, max_len, arr)) return false;
  out.clear();
  out.reserve(arr.size());
  for (element x : arr) {
    if (!Str(x, out.emplace_back())) return false;
  }
  return true;
}

// Event fields held as SharedVec decode into a buffer of their own; the reader interns them after.
bool Ints(element v, int64_t max_len, int64_t min, int64_t max, SharedVec<int64_t>& out) {
  return Ints(v, max_len, min, max, out.Mutable());
}
bool Strs(element v, int64_t max_len, SharedVec<std::string>& out) { return Strs(v, max_len, out.Mutable()); }

// What decoding one line carries from field to field: the file's version, and what the line wrote.
struct Scratch {
  bool v2 = false;
  uint32_t present = 0;  // collective: CollectiveField bits of the fields written
  int links = 0;         // redistribute_begin: how many of op_id and op_input were written
  int64_t like = -1;     // redistribute_begin: the v2 `like`
};

/// One field of a line: its name and how its value decodes into E.
template <typename E>
struct Field {
  std::string_view name;
  bool (*decode)(element, E&, Scratch&);
};

// The struct that member pointer M points into.
template <typename M>
struct ClassOf;
template <typename C, typename T>
struct ClassOf<T C::*> {
  using type = C;
};
template <auto M>
using Of = typename ClassOf<decltype(M)>::type;

// Field decoders by what the value means; M is the member it decodes into.
bool Skip(element, auto&, Scratch&) { return true; }  // "type", checked by the caller
template <auto M>
bool Id(element x, Of<M>& e, Scratch&) {
  return Int(x, 0, kI64Max, e.*M);
}
template <auto M>
bool StepIndex(element x, Of<M>& e, Scratch&) {
  return Int(x, 0, kMaxPlanSteps - 1, e.*M);
}
template <auto M>
bool Time(element x, Of<M>& e, Scratch&) {
  return Int(x, -kMaxTimeNs, kMaxTimeNs, e.*M);
}
template <auto M>
bool Shape(element x, Of<M>& e, Scratch&) {
  return Ints(x, kMaxTensorDims, 0, kMaxExtent, e.*M);
}
template <auto M>
bool MeshDims(element x, Of<M>& e, Scratch&) {
  return Ints(x, kMaxMeshDims, 0, kMaxMeshDims - 1, e.*M);
}
template <auto M>
bool Text(element x, Of<M>& e, Scratch&) {
  return Str(x, e.*M);
}
template <auto M>
bool Placements(element x, Of<M>& e, Scratch&) {
  return Strs(x, kMaxMeshDims, e.*M);
}
template <auto M>
bool Flag(element x, Of<M>& e, Scratch&) {
  return Bool(x, e.*M);
}
template <auto M>
bool Real(element x, Of<M>& e, Scratch&) {
  return Number(x, e.*M);
}
template <auto M>
bool Checksum(element x, Of<M>& e, Scratch&) {
  return Uint(x, (e.*M).emplace());
}
// A collective field a v2 line may leave out: notes that it was written.
template <uint32_t Bit, auto Decode>
bool Noted(element x, Collective& e, Scratch& s) {
  s.present |= Bit;
  return Decode(x, e, s);
}

constexpr uint64_t All(size_t n) { return n >= 64 ? ~uint64_t{0} : (uint64_t{1} << n) - 1; }

// Decodes `x` by field `i` of the table: a direct call per field, so each decoder inlines here
// as a switch case would.
template <const auto& Fields, typename E, size_t... I>
bool DecodeField(size_t i, element x, E& e, Scratch& s, std::index_sequence<I...>) {
  bool ok = false;
  (void)((i == I ? (ok = Fields[I].decode(x, e, s), true) : false) || ...);
  return ok;
}

// Walks the members of one object once, in any order: each key must be one of `Fields` and appear
// once, and decodes into `e`. `required` is a bit mask over `Fields` that must be seen.
template <const auto& Fields, typename E>
bool Members(element v, uint64_t required, E& e, Scratch& s, uint64_t* seen_out = nullptr) {
  constexpr size_t N = std::size(Fields);
  static_assert(N <= 64);
  object obj;
  if (v.type() != element_type::OBJECT || v.get_object().get(obj) != simdjson::SUCCESS) return false;
  uint64_t seen = 0;
  for (simdjson::dom::key_value_pair kv : obj) {
    size_t i = 0;
    while (i < N && Fields[i].name != kv.key) ++i;
    if (i == N) return false;  // unknown field: the reference path decides what it means
    const uint64_t bit = uint64_t{1} << i;
    if (seen & bit) return false;  // duplicated field
    seen |= bit;
    if (!DecodeField<Fields>(i, kv.value, e, s, std::make_index_sequence<N>{})) return false;
  }
  if (seen_out != nullptr) *seen_out = seen;
  return (seen & required) == required;
}

// A list of objects, each decoded by `Fields`.
template <const auto& Fields, typename E>
bool Objects(element v, uint64_t required, Scratch& s, std::vector<E>& out) {
  array arr;
  if (!Arr(v, kMaxPlanSteps, arr)) return false;
  out.clear();
  out.reserve(arr.size());
  for (element x : arr) {
    if (!Members<Fields>(x, required, out.emplace_back(), s)) return false;
  }
  return true;
}

using P = PlanStep;
constexpr Field<P> kPlanStep[] = {{"mesh_dims", MeshDims<&P::mesh_dims>},
                                  {"src", Text<&P::src>},
                                  {"dst", Text<&P::dst>},
                                  {"comm", Text<&P::comm>},
                                  {"logical_shape", Shape<&P::logical_shape>},
                                  {"flattened", Flag<&P::flattened>},
                                  {"avg_scale", Real<&P::avg_scale>},
                                  {"cost_us", Real<&P::cost_us>}};

// v2 lets a step leave out flattened (false) and avg_scale (1).
template <auto M>
bool Steps(element x, Of<M>& e, Scratch& s) {
  return Objects<kPlanStep>(x, s.v2 ? All(5) | 1u << 7 : All(8), s, (e.*M).Mutable());
}

using SM = SkippedMerge;
constexpr Field<SM> kSkippedMerge[] = {{"mesh_dims", MeshDims<&SM::mesh_dims>},
                                       {"comm", Text<&SM::comm>},
                                       {"reason", Text<&SM::reason>},
                                       {"hint", Text<&SM::hint>}};

template <auto M>
bool Skipped(element x, Of<M>& e, Scratch& s) {
  return Objects<kSkippedMerge>(x, All(4), s, (e.*M).Mutable());
}

// op_id and op_input appear together or not at all.
template <auto Decode>
bool Link(element x, RedistributeBegin& e, Scratch& s) {
  ++s.links;
  return Decode(x, e, s);
}
bool OpInput(element x, RedistributeBegin& e, Scratch&) { return Int(x, 0, kMaxOpOperands - 1, e.op_input); }
bool Like(element x, RedistributeBegin&, Scratch& s) {  // v1 ignores "like"; the reference path too
  return !s.v2 || Int(x, 0, kI64Max, s.like);
}

using RB = RedistributeBegin;
constexpr Field<RB> kRedistributeBegin[] = {{"type", Skip},
                                            {"id", Id<&RB::id>},
                                            {"tensor", Text<&RB::tensor>},
                                            {"global_shape", Shape<&RB::global_shape>},
                                            {"dtype", Text<&RB::dtype>},
                                            {"src_placements", Placements<&RB::src_placements>},
                                            {"dst_placements", Placements<&RB::dst_placements>},
                                            {"src_order", Text<&RB::src_order>},
                                            {"dst_order", Text<&RB::dst_order>},
                                            {"planner", Text<&RB::planner>},
                                            {"planner_reason", Text<&RB::planner_reason>},
                                            {"notation", Text<&RB::notation>},
                                            {"notation_unoptimized", Text<&RB::notation_unoptimized>},
                                            {"raw_plan", Steps<&RB::raw_plan>},
                                            {"optimized_plan", Steps<&RB::optimized_plan>},
                                            {"skipped_merges", Skipped<&RB::skipped_merges>},
                                            {"cost_us", Real<&RB::cost_us>},
                                            {"t_ns", Time<&RB::t_ns>},
                                            {"op_id", Link<Id<&RB::op_id>>},
                                            {"op_input", Link<OpInput>},
                                            {"like", Like}};
constexpr int kBeginFirst = 2;  // kRedistributeBegin[kBeginFirst + i].name == kBeginFields[i], for every i
static_assert([] {
  for (int i = 0; i < kBeginFieldCount; ++i)
    if (kRedistributeBegin[kBeginFirst + i].name != kBeginFields[i]) return false;
  return kRedistributeBegin[kBeginFirst + kBeginFieldCount].name == "t_ns";
}());

// In a v2 file the fields that format_v2.cpp can rebuild are not required here; Complete* there
// decides.
bool DecodeRedistributeBegin(element v, const FileContext& ctx, RedistributeBegin& e) {
  Scratch s{ctx.v2()};
  uint64_t seen = 0;
  if (!Members<kRedistributeBegin>(v, s.v2 ? (All(2) | uint64_t{1} << 17) : All(18), e, s, &seen) ||
      s.links == 1)
    return false;
  if (!s.v2) return true;
  const auto present = static_cast<uint32_t>((seen >> kBeginFirst) & All(kBeginFieldCount));
  return CompleteBegin(e, present, s.like, ctx).empty();
}

using RE = RedistributeEnd;
constexpr Field<RE> kRedistributeEnd[] = {{"type", Skip},
                                          {"id", Id<&RE::id>},
                                          {"t_ns", Time<&RE::t_ns>},
                                          {"ok", Flag<&RE::ok>},
                                          {"error", Text<&RE::error>},
                                          {"checksum_before", Checksum<&RE::checksum_before>},
                                          {"checksum_after", Checksum<&RE::checksum_after>}};

bool DecodeRedistributeEnd(element v, const FileContext& ctx, RedistributeEnd& e) {
  Scratch s{ctx.v2()};
  return Members<kRedistributeEnd>(v, s.v2 ? All(3) : All(4), e, s);
}

using SB = StepBegin;
constexpr Field<SB> kStepBegin[] = {{"type", Skip},
                                    {"redistribute_id", Id<&SB::redistribute_id>},
                                    {"step", StepIndex<&SB::step>},
                                    {"mesh_dims", MeshDims<&SB::mesh_dims>},
                                    {"src", Text<&SB::src>},
                                    {"dst", Text<&SB::dst>},
                                    {"comm", Text<&SB::comm>},
                                    {"logical_shape", Shape<&SB::logical_shape>},
                                    {"local_shape_before", Shape<&SB::local_shape_before>},
                                    {"global_offset_before", Shape<&SB::global_offset_before>},
                                    {"t_ns", Time<&SB::t_ns>}};
constexpr int kStepFirst = 3;  // kStepBegin[kStepFirst..kStepFirst+4]: the StepBeginField bits in order

bool DecodeStepBegin(element v, const FileContext& ctx, StepBegin& e) {
  Scratch s{ctx.v2()};
  uint64_t seen = 0;
  if (!Members<kStepBegin>(v, s.v2 ? All(kStepFirst) | uint64_t{7} << 8 : All(11), e, s, &seen)) return false;
  return !s.v2 || CompleteStepBegin(e, static_cast<uint32_t>((seen >> kStepFirst) & kStepAll), ctx).empty();
}

using SE = StepEnd;
constexpr Field<SE> kStepEnd[] = {{"type", Skip},
                                  {"redistribute_id", Id<&SE::redistribute_id>},
                                  {"step", StepIndex<&SE::step>},
                                  {"local_shape_after", Shape<&SE::local_shape_after>},
                                  {"global_offset_after", Shape<&SE::global_offset_after>},
                                  {"t_ns", Time<&SE::t_ns>}};

bool DecodeStepEnd(element v, StepEnd& e) {
  Scratch s;
  return Members<kStepEnd>(v, All(6), e, s);
}

// A per-peer byte list; in v2 also one integer (a uniform count, held as a one-entry list).
template <auto M, uint32_t UniformBit>
bool Bytes(element x, Collective& e, Scratch& s) {
  if (s.v2 && x.type() != element_type::ARRAY) {
    int64_t n = 0;
    if (!Int(x, 0, kMaxBytes, n)) return false;
    e.*M = SharedVec<int64_t>{n};
    s.present |= UniformBit;
    return true;
  }
  return Ints(x, kMaxRanks, 0, kMaxBytes, e.*M);
}
bool CollId(element x, Collective& e, Scratch&) { return Int(x, -1, kI64Max, e.redistribute_id); }
bool Kind(element x, Collective& e, Scratch&) { return Str(x, e.kind) && !e.kind.empty(); }
bool Group(element x, Collective& e, Scratch&) { return Ints(x, kMaxRanks, 0, kMaxRanks - 1, e.group); }

using C = Collective;
constexpr Field<C> kCollective[] = {{"type", Skip},
                                    {"redistribute_id", CollId},
                                    {"step", StepIndex<&C::step>},
                                    {"kind", Noted<kCollKind, Kind>},
                                    {"mesh_dims", Noted<kCollMeshDims, MeshDims<&C::mesh_dims>>},
                                    {"group", Noted<kCollGroup, Group>},
                                    {"dtype", Noted<kCollDtype, Text<&C::dtype>>},
                                    {"bytes_sent", Bytes<&C::bytes_sent, kCollUniformSent>},
                                    {"bytes_recv", Bytes<&C::bytes_recv, kCollUniformRecv>},
                                    {"negotiated", Noted<kCollNegotiated, Flag<&C::negotiated>>},
                                    {"start_ns", Time<&C::start_ns>},
                                    {"end_ns", Time<&C::end_ns>},
                                    {"op_id", Id<&C::op_id>}};

bool DecodeCollective(element v, const FileContext& ctx, Collective& e) {
  Scratch s{ctx.v2()};
  // v2 requires type, redistribute_id, step, bytes_sent, bytes_recv, start_ns, end_ns.
  constexpr uint64_t kV2Required = All(3) | 1u << 7 | 1u << 8 | 1u << 10 | 1u << 11;
  if (!Members<kCollective>(v, s.v2 ? kV2Required : All(12), e, s) || (e.redistribute_id < 0 && e.op_id < 0))
    return false;
  if (s.v2 && !(CompleteCollective(e, s.present, ctx).empty() && !e.kind.empty())) return false;
  return e.bytes_sent.size() == e.group.size() && e.bytes_recv.size() == e.group.size();
}

// A v2 redistribute_repeat line (codec.cpp's ParseRepeatLine).
using RL = RepeatLine;
template <auto Decode>
bool RepeatLink(element x, RepeatLine& e, Scratch& s) {
  ++s.links;
  return Decode(x, e, s);
}
bool RepeatTimes(element x, RepeatLine& e, Scratch&) {
  return Ints(x, kMaxRepeatTimes, -2 * kMaxTimeNs, 2 * kMaxTimeNs, e.dt);
}
bool RepeatTensor(element x, RepeatLine& e, Scratch&) { return Str(x, e.tensor.emplace()); }
bool RepeatOpInput(element x, RepeatLine& e, Scratch&) { return Int(x, 0, kMaxOpOperands - 1, e.op_input); }
constexpr Field<RL> kRepeat[] = {{"type", Skip},
                                 {"id", Id<&RL::id>},
                                 {"like", Id<&RL::like>},
                                 {"t_ns", Time<&RL::t_ns>},
                                 {"dt", RepeatTimes},
                                 {"tensor", RepeatTensor},
                                 {"op_id", RepeatLink<Id<&RL::op_id>>},
                                 {"op_input", RepeatLink<RepeatOpInput>}};

}  // namespace

bool FastDecodeRepeat(element element, std::string_view line, RepeatLine& out) {
  if (line.find("\\u") != std::string_view::npos) return false;  // as FastDecodeEvent
  out = RepeatLine{};
  Scratch s{true};
  return Members<kRepeat>(element, All(5), out, s) && s.links != 1;
}

bool FastDecodeEvent(element element, std::string_view line, const FileContext& ctx, Event& out) {
  // A \u escape may spell a lone surrogate, which parsers judge differently; leave such rare lines
  // to the reference path.
  for (size_t at = line.find('\\'); at != std::string_view::npos; at = line.find('\\', at + 2)) {
    if (at + 1 < line.size() && line[at + 1] == 'u') return false;
  }
  object obj;
  if (element.type() != element_type::OBJECT || element.get_object().get(obj) != simdjson::SUCCESS)
    return false;
  auto first = obj.begin();
  if (first == obj.end() || first.key() != "type") return false;  // the writer puts "type" first
  std::string_view type;
  if (first.value().type() != element_type::STRING ||
      first.value().get_string().get(type) != simdjson::SUCCESS)
    return false;
  if (type == "collective") return DecodeCollective(element, ctx, out.emplace<Collective>());
  if (type == "step_begin") return DecodeStepBegin(element, ctx, out.emplace<StepBegin>());
  if (type == "step_end") return DecodeStepEnd(element, out.emplace<StepEnd>());
  if (type == "redistribute_begin")
    return DecodeRedistributeBegin(element, ctx, out.emplace<RedistributeBegin>());
  if (type == "redistribute_end") return DecodeRedistributeEnd(element, ctx, out.emplace<RedistributeEnd>());
  return false;  // ops (rare, intricate), headers and unknown types take the reference path
}

}  // namespace shardscope::trace::detail
