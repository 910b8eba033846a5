// The fast path mirrors codec.cpp's Parse* functions rule for rule, but never builds a message:
// where codec.cpp would fail, this returns false and the reader re-reads the line there. A rule
// forgotten here would accept a line the reference path rejects, so tests/trace/reader_test.cpp
// reads every fixture and fuzzed mutations through both paths and requires equal results.
#include "fast_decode.hpp"

#include <array>
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

// What decoding one line carries from field to field: the file's version, the field being read
// (its bit in the table), which per-peer byte lists were one uniform count, and the v2 `like`.
struct Scratch {
  bool v2 = false;
  uint64_t bit = 0;
  uint64_t abbreviated = 0;
  int64_t like = -1;
  bool has_ids = false;  ///< an op line's v2 `redistribute_ids`
  std::vector<int64_t> ids;
  int64_t rule_number = -1;  ///< an op line's v2 `rule_number`
  bool linked = false;       ///< an op line's v2 `linked`
  uint64_t seen = 0;         ///< the line's fields (DecodeKind)
};

template <typename T>
bool Members(element v, uint64_t required, T& e, Scratch& s, uint64_t* seen_out, bool top);

// Checks of one nested object that involve several of its fields, as codec.cpp's CheckObject.
template <typename T>
bool Valid(const T&) {
  return true;
}
bool Valid(const OpOutput& out) {
  return out.requested || (out.tensor.empty() && out.placements.empty() && out.global_shape.empty() &&
                           out.local_shape.empty());
}

// One decoder per codec (event_fields.hpp), as codec.cpp's readers but without messages.
template <int64_t Min, int64_t Max>
bool Decode(codec::Int<Min, Max>, element x, int64_t& v, Scratch&) {
  return Int(x, Min, Max, v);
}
template <int64_t Min, int64_t Max>
bool Decode(codec::Int<Min, Max>, element x, int32_t& v, Scratch&) {  // a field narrowed to 4 bytes
  static_assert(Min >= INT32_MIN && Max <= INT32_MAX);
  int64_t wide = 0;
  if (!Int(x, Min, Max, wide)) return false;
  v = static_cast<int32_t>(wide);
  return true;
}
template <int64_t Len, int64_t Min, int64_t Max, typename V>
bool Decode(codec::Ints<Len, Min, Max>, element x, V& v, Scratch&) {
  return Ints(x, Len, Min, Max, v);
}
template <typename V>
bool Decode(codec::Text, element x, V& v, Scratch&) {
  return Str(x, v);
}
template <typename V>
bool Decode(codec::NonEmptyText, element x, V& v, Scratch&) {
  return Str(x, v) && !v.empty();
}
template <int64_t Len, typename V>
bool Decode(codec::Texts<Len>, element x, V& v, Scratch&) {
  return Strs(x, Len, v);
}
bool Decode(codec::Flag, element x, bool& v, Scratch&) { return Bool(x, v); }
bool Decode(codec::Real, element x, double& v, Scratch&) { return Number(x, v); }
bool Decode(codec::Checksum, element x, std::optional<uint64_t>& v, Scratch&) { return Uint(x, v.emplace()); }

// A list of objects, each decoded by its table; the v2 defaults of a nested object (a plan step's
// flattened and avg_scale) need no rebuilding: a fresh object holds them.
template <int64_t Len, typename V>
bool Decode(codec::Objects<Len>, element x, V& v, Scratch& s) {
  using T = typename ElementOf<V>::type;
  array arr;
  if (!Arr(x, Len, arr)) return false;
  std::vector<T> items;
  items.reserve(arr.size());
  const uint64_t required = RequiredMask(kDescOf<T>, s.v2);
  for (element item : arr) {
    if (!Members(item, required, items.emplace_back(), s, nullptr, false) || !Valid(items.back()))
      return false;
  }
  v = std::move(items);
  return true;
}

// A per-peer byte list; in v2 also one integer (a uniform count, held as a one-entry list).
bool Decode(codec::PeerBytes, element x, SharedVec<int64_t>& v, Scratch& s) {
  if (s.v2 && x.type() != element_type::ARRAY) {
    int64_t n = 0;
    if (!Int(x, 0, kMaxBytes, n)) return false;
    v = SharedVec<int64_t>{n};
    s.abbreviated |= s.bit;
    return true;
  }
  return Ints(x, kMaxRanks, 0, kMaxBytes, v);
}

// A rare payload (an imported plan, Flight Recorder fields): one object by its table.
template <typename T>
bool Decode(codec::Object, element x, Rare<T>& v, Scratch& s) {
  return Members(x, RequiredMask(kDescOf<T>, s.v2), v.emplace(), s, nullptr, false);
}

// A Flight Recorder record: its flat object, then the record (its shape pooled with the event).
bool Decode(codec::Flight, element x, Collective& c, Scratch& s) {
  FlightFields f;
  if (!Members(x, RequiredMask(kDescOf<FlightFields>, s.v2), f, s, nullptr, false)) return false;
  SetFlight(c, std::move(f));
  return true;
}

// Flight Recorder shapes: at most kMaxOpOperands tensors of at most kMaxTensorDims extents.
bool Decode(codec::ShapeList, element x, SharedVec<std::vector<int64_t>>& v, Scratch&) {
  array arr;
  if (!Arr(x, kMaxOpOperands, arr)) return false;
  std::vector<std::vector<int64_t>> out;
  out.reserve(arr.size());
  for (element shape : arr)
    if (!Ints(shape, kMaxTensorDims, 0, kMaxExtent, out.emplace_back())) return false;
  v = std::move(out);
  return true;
}

// A duration: a number, or null for unknown.
bool Decode(codec::Millis, element x, std::optional<double>& v, Scratch&) {
  if (x.type() == element_type::NULL_VALUE) return true;
  return Number(x, v.emplace());
}

// One placement list per operand of a strategy.
bool Decode(codec::PlacementLists, element x, std::vector<std::vector<std::string>>& v, Scratch&) {
  array arr;
  if (!Arr(x, kMaxOpOperands, arr)) return false;
  v.clear();
  v.reserve(arr.size());
  for (element list : arr)
    if (!Strs(list, kMaxMeshDims, v.emplace_back())) return false;
  return true;
}

// A strategy's cost: >= 0, or -1 for +inf.
bool Decode(codec::StrategyCost, element x, double& v, Scratch&) {
  if (!Number(x, v)) return false;
  if (v == -1.0) {
    v = std::numeric_limits<double>::infinity();
    return true;
  }
  return v >= 0.0;
}

// Field I of T's table: its codec into its member; of the line's own fields only `like`, which
// v1 ignores (the reference path too).
template <typename T, size_t I>
bool DecodeField(element x, T& e, Scratch& s) {
  using F = std::tuple_element_t<I, std::remove_cvref_t<decltype(kDescOf<T>.fields)>>;
  if constexpr (kLineOnly<typename F::Rule>) {
    constexpr std::string_view kName = std::get<I>(kDescOf<T>.fields).name;
    if constexpr (kName == "like") {
      return !s.v2 || Int(x, 0, kI64Max, s.like);
    } else if constexpr (kName == "redistribute_ids") {
      s.has_ids = s.v2;
      return !s.v2 || Ints(x, kMaxOpOperands, -1, kI64Max, s.ids);
    } else if constexpr (kName == "rule_number") {
      return !s.v2 || Int(x, 0, kMaxRuleNumber, s.rule_number);
    } else if constexpr (kName == "linked") {
      return !s.v2 || (Bool(x, s.linked) && s.linked);
    } else {
      return false;
    }
  } else {
    s.bit = uint64_t{1} << I;
    return Decode(typename F::Codec{}, x, Ref<F>(e), s);
  }
}

// Decodes `x` by field `i` of the table: a direct call per field, so each decoder inlines here
// as a switch case would.
template <typename T, size_t... I>
bool DecodeField(size_t i, element x, T& e, Scratch& s, std::index_sequence<I...>) {
  bool ok = false;
  (void)((i == I ? (ok = DecodeField<T, I>(x, e, s), true) : false) || ...);
  return ok;
}

template <typename T>
constexpr auto kNames = [] {
  std::array<std::string_view, std::remove_cvref_t<decltype(kDescOf<T>)>::kSize> names{};
  ForEachField(kDescOf<T>, [&](auto i, const auto& f) { names[i] = f.name; });
  return names;
}();

// Walks the members of one object once, in any order: each key must be one of T's fields (or,
// at the top of a line, its "type") and appear once, and decodes into `e`. `required` is a bit
// mask over the table that must be seen.
template <typename T>
bool Members(element v, uint64_t required, T& e, Scratch& s, uint64_t* seen_out, bool top) {
  constexpr size_t N = kNames<T>.size();
  static_assert(N <= 64);
  object obj;
  if (v.type() != element_type::OBJECT || v.get_object().get(obj) != simdjson::SUCCESS) return false;
  uint64_t seen = 0;
  bool type_seen = !top;
  for (simdjson::dom::key_value_pair kv : obj) {
    if (!type_seen && kv.key == "type") {
      type_seen = true;  // checked by the caller
      continue;
    }
    size_t i = 0;
    while (i < N && kNames<T>[i] != kv.key) ++i;
    if (i == N) return false;  // unknown: the reference path decides
    const uint64_t bit = uint64_t{1} << i;
    if (seen & bit) return false;  // duplicated field
    seen |= bit;
    if (!DecodeField(i, kv.value, e, s, std::make_index_sequence<N>{})) return false;
  }
  if (seen_out != nullptr) *seen_out = seen;
  return (seen & required) == required;
}

// Checks that involve several fields, before v2's Complete (Linked) and after (Finished), as
// codec.cpp's Linked and Finish.
template <typename E>
bool Linked(const E&, uint64_t) {
  return true;
}
bool Linked(const RedistributeBegin&, uint64_t seen) {
  constexpr uint64_t kLink = MaskOf(kDescOf<RedistributeBegin>, {"op_id", "op_input"});
  return (seen & kLink) == 0 || (seen & kLink) == kLink;
}
bool Linked(const Collective& e, uint64_t) { return e.redistribute_id >= 0 || e.op_id >= 0 || e.HasFlight(); }
template <typename E>
bool Finished(const E&, const Scratch&, const FileContext&) {
  return true;
}
// codec.cpp's Finish of an op: `redistribute_ids` relinks the inputs, every strategy has one
// placement list per operand, and `chosen` indexes the candidates (-1 only when the op failed; 0
// when there are none).
bool Finished(Op& e, const Scratch& s, const FileContext& ctx) {
  if (!ctx.v3() && (s.rule_number >= 0 || s.linked)) return false;  // version 3's fields
  if (s.rule_number >= 0) {
    constexpr uint64_t kRule = MaskOf(kDescOf<Op>, {"rule"});
    std::string rule;
    if (s.like < 0 || (s.seen & kRule) || !RenumberRule(e.rule(), s.rule_number, rule)) return false;
    e.Mutable().rule = rule;
  }
  if (s.linked) {
    if (s.has_ids) return false;
    const std::vector<int64_t> ids = ctx.LinkedIds(e.id, e.inputs().size());
    std::vector<OpInput>& inputs = e.Mutable().inputs.Mutable();
    for (size_t i = 0; i < ids.size(); ++i) inputs[i].redistribute_id = ids[i];
  }
  if (s.has_ids) {
    if (s.ids.size() != e.inputs().size()) return false;
    std::vector<OpInput>& inputs = e.Mutable().inputs.Mutable();
    for (size_t i = 0; i < s.ids.size(); ++i) inputs[i].redistribute_id = s.ids[i];
  }
  for (const OpStrategy& c : e.candidates())
    if (c.inputs.size() != e.inputs().size() || c.outputs.size() != e.outputs().size()) return false;
  return (e.chosen() < static_cast<int64_t>(e.candidates().size()) ||
          (e.chosen() == 0 && e.candidates().empty())) &&
         (e.chosen() >= 0 || !e.ok());
}
bool Finished(const Collective& e, const Scratch&, const FileContext&) {
  return !e.kind().empty() && e.bytes_sent().size() == e.group().size() &&
         e.bytes_recv().size() == e.group().size();
}

// In a v2 file the fields that format_v2.cpp can rebuild are not required here; Complete there
// decides.
template <typename E>
bool DecodeKind(element v, const FileContext& ctx, E& e) {
  Scratch s;
  s.v2 = ctx.v2();
  uint64_t seen = 0;
  if (!Members(v, RequiredMask(kDescOf<E>, s.v2), e, s, &seen, true) || !Linked(e, seen)) return false;
  s.seen = seen;
  if (s.v2 && !Complete(e, seen, s.abbreviated, s.like, ctx).empty()) return false;
  return Finished(e, s, ctx);
}

// A v2 redistribute_repeat line (codec.cpp's ParseRepeatLine).
using RL = RepeatLine;
struct RepeatScratch {
  int links = 0;
};
// A repeat line's `imported`: any of the imported plan's fields (ExpandRepeat checks the rest).
bool PartialImported(element x, RepeatLine& e) {
  Scratch s;
  s.v2 = true;
  return Members(x, 0, e.imported.emplace(), s, &e.imported_present, false);
}
bool RepeatField(size_t i, element x, RepeatLine& e, RepeatScratch& s) {
  switch (i) {
    case 0:
      return Int(x, 0, kI64Max, e.id);
    case 1:
      return Int(x, 0, kI64Max, e.like);
    case 2:
      return Int(x, -kMaxTimeNs, kMaxTimeNs, e.t_ns);
    case 3:
      e.has_dt = true;
      return Ints(x, kMaxRepeatTimes, -2 * kMaxTimeNs, 2 * kMaxTimeNs, e.dt);
    case 4:
      return Str(x, e.tensor.emplace());
    case 5:
      ++s.links;
      return Int(x, 0, kI64Max, e.op_id);
    case 6:
      ++s.links;
      return Int(x, 0, kMaxOpOperands - 1, e.op_input);
    default:
      return PartialImported(x, e);
  }
}
// The members of a repeat line: field(i, value) for each key that is names[i], with `seen` their
// bits. False on an unknown key (besides one "type"), a repeated key, or a field that fails.
template <size_t N, typename Field>
bool EachRepeatKey(object obj, const std::string_view (&names)[N], uint32_t& seen, Field&& field) {
  bool type_seen = false;
  for (simdjson::dom::key_value_pair kv : obj) {
    size_t i = 0;
    while (i < N && names[i] != kv.key) ++i;
    if (i == N) {
      if (type_seen || kv.key != "type") return false;
      type_seen = true;
      continue;
    }
    if (seen >> i & 1) return false;
    seen |= 1u << i;
    if (!field(i, kv.value)) return false;
  }
  return true;
}

constexpr std::string_view kRepeatNames[] = {"id",     "like",  "t_ns",     "dt",
                                             "tensor", "op_id", "op_input", "imported"};

}  // namespace

bool FastDecodeRepeat(element element, std::string_view line, const FileContext& ctx, RepeatLine& out) {
  if (line.find("\\u") != std::string_view::npos) return false;  // as FastDecodeEvent
  out = RepeatLine{};
  object obj;
  if (element.type() != element_type::OBJECT || element.get_object().get(obj) != simdjson::SUCCESS)
    return false;
  RepeatScratch s;
  uint32_t seen = 0;
  if (!EachRepeatKey(obj, kRepeatNames, seen, [&](size_t i, auto v) { return RepeatField(i, v, out, s); }))
    return false;
  // id, like, t_ns; and before version 3, `dt` and no `imported`
  return (seen & 0x7) == 0x7 && s.links != 1 && (ctx.v3() || (out.has_dt && !out.imported));
}

bool FastDecodeCollectiveRepeat(element element, std::string_view line, CollectiveRepeatLine& out) {
  if (line.find("\\u") != std::string_view::npos) return false;  // as FastDecodeEvent
  out.state.reset();
  out.duration_ms.reset();
  object obj;
  if (element.type() != element_type::OBJECT || element.get_object().get(obj) != simdjson::SUCCESS)
    return false;
  constexpr std::string_view kNames[] = {"back", "dt", "did", "state", "duration_ms"};
  uint32_t seen = 0;
  const bool fields_ok = EachRepeatKey(obj, kNames, seen, [&](size_t i, auto v) {
    switch (i) {
      case 0:
        return Int(v, 1, kMaxFlightBack, out.back);
      case 1:
        return Ints(v, 3, -2 * kMaxTimeNs, 2 * kMaxTimeNs, out.dt) && out.dt.size() == 3;
      case 2:
        return Ints(v, 4, std::numeric_limits<int64_t>::min() + 1, kI64Max, out.did) && out.did.size() == 4;
      case 3:
        return Str(v, out.state.emplace());
      default:
        return Number(v, out.duration_ms.emplace());
    }
  });
  if (!fields_ok) return false;
  return (seen & 7) == 7;
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
  if (type == kDescOf<Collective>.name) return DecodeKind(element, ctx, out.emplace<Collective>());
  if (type == kDescOf<StepBegin>.name) return DecodeKind(element, ctx, out.emplace<StepBegin>());
  if (type == kDescOf<StepEnd>.name) return DecodeKind(element, ctx, out.emplace<StepEnd>());
  if (type == kDescOf<RedistributeBegin>.name)
    return DecodeKind(element, ctx, out.emplace<RedistributeBegin>());
  if (type == kDescOf<RedistributeEnd>.name) return DecodeKind(element, ctx, out.emplace<RedistributeEnd>());
  if (type == kDescOf<Op>.name) return DecodeKind(element, ctx, out.emplace<Op>());
  return false;  // headers and unknown types take the reference path
}

}  // namespace shardscope::trace::detail
