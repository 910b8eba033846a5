#pragma once
// Private: the writer's fast path. Appends the line of a common event (redistribute begin/end,
// step begin/end, collective, op) straight to a string, field for field as codec_encode.cpp's ToJson writes
// it, without building a JSON tree. It declines (returns false, `out` unchanged) whenever a string
// holds anything but printable ASCII without quotes or backslashes, or a number is not finite; the
// writer then encodes the event through codec_encode.cpp, which escapes and replaces. Floats are written
// in shortest round-trip form (std::to_chars) laid out as nlohmann lays them out ("1.0", "0.001",
// "1e+20").

#include <string>

#include "line_builder.hpp"  // AppendDouble
#include "shardscope/trace/events.hpp"

namespace shardscope::trace::detail {

/// Appends the line of `e` (any event struct: RedistributeBegin .. Op) without its '\n' to `out`
/// and returns true, or returns false and leaves `out` as it was. Pure; thread-compatible.
template <typename E>
bool FastEncode(const E& e, std::string& out);

/// A plan ("raw_plan", "optimized_plan") and the skipped merges as both encoders write them; with
/// `omit_defaults` (v2) a step leaves out flattened false and avg_scale 1.
void Plan(Line& l, std::string_view name, const std::vector<PlanStep>& plan, bool omit_defaults);
void SkippedMerges(Line& l, const std::vector<SkippedMerge>& merges);

// The fields of each event as both encoders (v1 here, v2 in encode_v2.cpp) write them, in the
// format's order. Where a v2 line may leave a field out (format_v2.hpp), the argument says what
// the reader rebuilds it from; false or nullptr (v1) writes every field.

/// The redistribute_begin fields of kBeginFields (tensor .. cost_us); v2 leaves out defaults.
void BeginFields(Line& l, const RedistributeBegin& e, bool v2);
/// op_id and op_input, when the redistribute belongs to an op.
void OpLink(Line& l, const RedistributeBegin& e);
/// A redistribute_end line; v2 leaves out ok when true.
void EndLine(Line& l, const RedistributeEnd& e, bool v2);
/// A step_begin line; `step` (v2: the redistribute's optimized_plan[step], if known) gives the
/// fields left out where they are equal.
void StepBeginLine(Line& l, const StepBegin& e, const PlanStep* step);

/// What a v2 reader rebuilds a collective's fields from.
struct CollectiveBasis {
  const PlanStep* step = nullptr;               ///< its plan step (kind, mesh_dims), if known
  const std::string* dtype = nullptr;           ///< its redistribute's dtype, if known
  const std::vector<int64_t>* group = nullptr;  ///< MeshGroup over its mesh_dims (redistributes only)
  int64_t rank = 0;                             ///< this file's rank (uniform byte counts)
};
/// A collective line; with `v2`, abbreviated as format_v2.hpp allows.
void CollectiveLine(Line& l, const Collective& e, const CollectiveBasis* v2);

}  // namespace shardscope::trace::detail
