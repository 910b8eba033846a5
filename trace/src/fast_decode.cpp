// The fast path mirrors codec.cpp's Parse* functions rule for rule, but never builds a message:
// where codec.cpp would fail, this returns false and the reader re-reads the line there. A rule
// forgotten here would accept a line the reference path rejects, so tests/trace/reader_test.cpp
// reads every fixture and fuzzed mutations through both paths and requires equal results.
#include "fast_decode.hpp"

#include <cmath>
#include <cstring>
#include <limits>

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

// Walks the members of one object once, in any order: each key must be one of `names` and appear
// once; `take(index, value)` decodes it. `required` is a bit mask over `names` that must be seen.
template <size_t N, typename Take>
bool Members(element v, const std::string_view (&names)[N], uint64_t required, Take take,
             uint64_t* seen_out = nullptr) {
  static_assert(N <= 64);
  object obj;
  if (v.type() != element_type::OBJECT || v.get_object().get(obj) != simdjson::SUCCESS) return false;
  uint64_t seen = 0;
  for (simdjson::dom::key_value_pair kv : obj) {
    size_t i = 0;
    while (i < N && names[i] != kv.key) ++i;
    if (i == N) return false;  // unknown field: the reference path decides what it means
    const uint64_t bit = uint64_t{1} << i;
    if (seen & bit) return false;  // duplicated field
    seen |= bit;
    if (!take(i, kv.value)) return false;
  }
  if (seen_out != nullptr) *seen_out = seen;
  return (seen & required) == required;
}

constexpr uint64_t All(size_t n) { return n >= 64 ? ~uint64_t{0} : (uint64_t{1} << n) - 1; }

// v2 lets a step leave out flattened (false) and avg_scale (1).
bool Plan(element v, bool v2, std::vector<PlanStep>& plan) {
  static constexpr std::string_view kNames[] = {"mesh_dims",     "src",       "dst",       "comm",
                                                "logical_shape", "flattened", "avg_scale", "cost_us"};
  array arr;
  if (!Arr(v, kMaxPlanSteps, arr)) return false;
  plan.clear();
  plan.reserve(arr.size());
  for (element s : arr) {
    PlanStep& p = plan.emplace_back();
    bool ok = Members(s, kNames, v2 ? All(5) | 1u << 7 : All(8), [&](size_t i, element x) {
      switch (i) {
        case 0:
          return Ints(x, kMaxMeshDims, 0, kMaxMeshDims - 1, p.mesh_dims);
        case 1:
          return Str(x, p.src);
        case 2:
          return Str(x, p.dst);
        case 3:
          return Str(x, p.comm);
        case 4:
          return Ints(x, kMaxTensorDims, 0, kMaxExtent, p.logical_shape);
        case 5:
          return Bool(x, p.flattened);
        case 6:
          return Number(x, p.avg_scale);
        default:
          return Number(x, p.cost_us);
      }
    });
    if (!ok) return false;
  }
  return true;
}

bool Skipped(element v, std::vector<SkippedMerge>& out) {
  static constexpr std::string_view kNames[] = {"mesh_dims", "comm", "reason", "hint"};
  array arr;
  if (!Arr(v, kMaxPlanSteps, arr)) return false;
  out.clear();
  out.reserve(arr.size());
  for (element s : arr) {
    SkippedMerge& m = out.emplace_back();
    bool ok = Members(s, kNames, All(4), [&](size_t i, element x) {
      switch (i) {
        case 0:
          return Ints(x, kMaxMeshDims, 0, kMaxMeshDims - 1, m.mesh_dims);
        case 1:
          return Str(x, m.comm);
        case 2:
          return Str(x, m.reason);
        default:
          return Str(x, m.hint);
      }
    });
    if (!ok) return false;
  }
  return true;
}

// Event fields held as SharedVec decode into a buffer of their own; the reader interns them after.
bool Ints(element v, int64_t max_len, int64_t min, int64_t max, SharedVec<int64_t>& out) {
  return Ints(v, max_len, min, max, out.Mutable());
}
bool Strs(element v, int64_t max_len, SharedVec<std::string>& out) { return Strs(v, max_len, out.Mutable()); }
bool Plan(element v, bool v2, SharedVec<PlanStep>& plan) { return Plan(v, v2, plan.Mutable()); }
bool Skipped(element v, SharedVec<SkippedMerge>& out) { return Skipped(v, out.Mutable()); }

// Index 0 of every table is "type", already checked by the caller. In a v2 file the fields that
// format_v2.cpp can rebuild are not required here; Complete* there decides.
bool DecodeRedistributeBegin(element v, const FileContext& ctx, RedistributeBegin& e) {
  static constexpr std::string_view kNames[] = {"type",
                                                "id",
                                                "tensor",
                                                "global_shape",
                                                "dtype",
                                                "src_placements",
                                                "dst_placements",
                                                "src_order",
                                                "dst_order",
                                                "planner",
                                                "planner_reason",
                                                "notation",
                                                "notation_unoptimized",
                                                "raw_plan",
                                                "optimized_plan",
                                                "skipped_merges",
                                                "cost_us",
                                                "t_ns",
                                                "op_id",
                                                "op_input",
                                                "like"};
  constexpr int kFirst = 2;  // kNames[kFirst + i] == kBeginFields[i], checked for every i
  static_assert([] {
    for (int i = 0; i < kBeginFieldCount; ++i)
      if (kNames[kFirst + i] != kBeginFields[i]) return false;
    return kNames[kFirst + kBeginFieldCount] == "t_ns";
  }());
  const bool v2 = ctx.v2();
  uint64_t seen_link = 0, seen = 0;
  int64_t like = -1;
  bool ok = Members(
      v, kNames, v2 ? (All(2) | uint64_t{1} << 17) : All(18),
      [&](size_t i, element x) {
        switch (i) {
          case 0:
            return true;
          case 1:
            return Int(x, 0, kI64Max, e.id);
          case 2:
            return Str(x, e.tensor);
          case 3:
            return Ints(x, kMaxTensorDims, 0, kMaxExtent, e.global_shape);
          case 4:
            return Str(x, e.dtype);
          case 5:
            return Strs(x, kMaxMeshDims, e.src_placements);
          case 6:
            return Strs(x, kMaxMeshDims, e.dst_placements);
          case 7:
            return Str(x, e.src_order);
          case 8:
            return Str(x, e.dst_order);
          case 9:
            return Str(x, e.planner);
          case 10:
            return Str(x, e.planner_reason);
          case 11:
            return Str(x, e.notation);
          case 12:
            return Str(x, e.notation_unoptimized);
          case 13:
            return Plan(x, v2, e.raw_plan);
          case 14:
            return Plan(x, v2, e.optimized_plan);
          case 15:
            return Skipped(x, e.skipped_merges);
          case 16:
            return Number(x, e.cost_us);
          case 17:
            return Int(x, -kMaxTimeNs, kMaxTimeNs, e.t_ns);
          case 18:
            ++seen_link;
            return Int(x, 0, kI64Max, e.op_id);
          case 19:
            ++seen_link;
            return Int(x, 0, kMaxOpOperands - 1, e.op_input);
          default:  // v1 ignores "like"; the reference path too
            return !v2 || Int(x, 0, kI64Max, like);
        }
      },
      &seen);
  if (!ok || seen_link == 1) return false;  // op_id and op_input appear together or not at all
  if (!v2) return true;
  const auto present = static_cast<uint32_t>((seen >> kFirst) & All(kBeginFieldCount));
  return CompleteBegin(e, present, like, ctx).empty();
}

bool DecodeRedistributeEnd(element v, const FileContext& ctx, RedistributeEnd& e) {
  static constexpr std::string_view kNames[] = {
      "type", "id", "t_ns", "ok", "error", "checksum_before", "checksum_after"};
  return Members(v, kNames, ctx.v2() ? All(3) : All(4), [&](size_t i, element x) {
    switch (i) {
      case 0:
        return true;
      case 1:
        return Int(x, 0, kI64Max, e.id);
      case 2:
        return Int(x, -kMaxTimeNs, kMaxTimeNs, e.t_ns);
      case 3:
        return Bool(x, e.ok);
      case 4:
        return Str(x, e.error);
      case 5:
        return Uint(x, e.checksum_before.emplace());
      default:
        return Uint(x, e.checksum_after.emplace());
    }
  });
}

bool DecodeStepBegin(element v, const FileContext& ctx, StepBegin& e) {
  static constexpr std::string_view kNames[] = {"type",
                                                "redistribute_id",
                                                "step",
                                                "mesh_dims",
                                                "src",
                                                "dst",
                                                "comm",
                                                "logical_shape",
                                                "local_shape_before",
                                                "global_offset_before",
                                                "t_ns"};
  constexpr int kFirst = 3;  // kNames[kFirst..kFirst+4]: the StepBeginField bits in order
  uint64_t seen = 0;
  bool ok = Members(
      v, kNames, ctx.v2() ? All(kFirst) | uint64_t{7} << 8 : All(11),
      [&](size_t i, element x) {
        switch (i) {
          case 0:
            return true;
          case 1:
            return Int(x, 0, kI64Max, e.redistribute_id);
          case 2:
            return Int(x, 0, kMaxPlanSteps - 1, e.step);
          case 3:
            return Ints(x, kMaxMeshDims, 0, kMaxMeshDims - 1, e.mesh_dims);
          case 4:
            return Str(x, e.src);
          case 5:
            return Str(x, e.dst);
          case 6:
            return Str(x, e.comm);
          case 7:
            return Ints(x, kMaxTensorDims, 0, kMaxExtent, e.logical_shape);
          case 8:
            return Ints(x, kMaxTensorDims, 0, kMaxExtent, e.local_shape_before);
          case 9:
            return Ints(x, kMaxTensorDims, 0, kMaxExtent, e.global_offset_before);
          default:
            return Int(x, -kMaxTimeNs, kMaxTimeNs, e.t_ns);
        }
      },
      &seen);
  if (!ok) return false;
  return !ctx.v2() || CompleteStepBegin(e, static_cast<uint32_t>((seen >> kFirst) & kStepAll), ctx).empty();
}

bool DecodeStepEnd(element v, StepEnd& e) {
  static constexpr std::string_view kNames[] = {
      "type", "redistribute_id", "step", "local_shape_after", "global_offset_after", "t_ns"};
  return Members(v, kNames, All(6), [&](size_t i, element x) {
    switch (i) {
      case 0:
        return true;
      case 1:
        return Int(x, 0, kI64Max, e.redistribute_id);
      case 2:
        return Int(x, 0, kMaxPlanSteps - 1, e.step);
      case 3:
        return Ints(x, kMaxTensorDims, 0, kMaxExtent, e.local_shape_after);
      case 4:
        return Ints(x, kMaxTensorDims, 0, kMaxExtent, e.global_offset_after);
      default:
        return Int(x, -kMaxTimeNs, kMaxTimeNs, e.t_ns);
    }
  });
}

// A per-peer byte list; in v2 also one integer (a uniform count, held as a one-entry list).
bool Bytes(element x, bool v2, uint32_t uniform_bit, uint32_t& present, SharedVec<int64_t>& out) {
  if (v2 && x.type() != element_type::ARRAY) {
    int64_t n = 0;
    if (!Int(x, 0, kMaxBytes, n)) return false;
    out = SharedVec<int64_t>{n};
    present |= uniform_bit;
    return true;
  }
  return Ints(x, kMaxRanks, 0, kMaxBytes, out);
}

bool DecodeCollective(element v, const FileContext& ctx, Collective& e) {
  static constexpr std::string_view kNames[] = {
      "type",       "redistribute_id", "step",       "kind",     "mesh_dims", "group", "dtype",
      "bytes_sent", "bytes_recv",      "negotiated", "start_ns", "end_ns",    "op_id"};
  const bool v2 = ctx.v2();
  uint32_t present = 0;
  // v2 requires type, redistribute_id, step, bytes_sent, bytes_recv, start_ns, end_ns.
  constexpr uint64_t kV2Required = All(3) | 1u << 7 | 1u << 8 | 1u << 10 | 1u << 11;
  bool ok = Members(v, kNames, v2 ? kV2Required : All(12), [&](size_t i, element x) {
    switch (i) {
      case 0:
        return true;
      case 1:
        return Int(x, -1, kI64Max, e.redistribute_id);
      case 2:
        return Int(x, 0, kMaxPlanSteps - 1, e.step);
      case 3:
        present |= kCollKind;
        return Str(x, e.kind) && !e.kind.empty();
      case 4:
        present |= kCollMeshDims;
        return Ints(x, kMaxMeshDims, 0, kMaxMeshDims - 1, e.mesh_dims);
      case 5:
        present |= kCollGroup;
        return Ints(x, kMaxRanks, 0, kMaxRanks - 1, e.group);
      case 6:
        present |= kCollDtype;
        return Str(x, e.dtype);
      case 7:
        return Bytes(x, v2, kCollUniformSent, present, e.bytes_sent);
      case 8:
        return Bytes(x, v2, kCollUniformRecv, present, e.bytes_recv);
      case 9:
        present |= kCollNegotiated;
        return Bool(x, e.negotiated);
      case 10:
        return Int(x, -kMaxTimeNs, kMaxTimeNs, e.start_ns);
      case 11:
        return Int(x, -kMaxTimeNs, kMaxTimeNs, e.end_ns);
      default:
        return Int(x, 0, kI64Max, e.op_id);
    }
  });
  if (!ok || (e.redistribute_id < 0 && e.op_id < 0)) return false;
  if (v2 && !(CompleteCollective(e, present, ctx).empty() && !e.kind.empty())) return false;
  return e.bytes_sent.size() == e.group.size() && e.bytes_recv.size() == e.group.size();
}

}  // namespace

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
