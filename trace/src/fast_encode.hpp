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

/// Each appends one line without its '\n' to `out` and returns true, or returns false and leaves
/// `out` as it was. Pure; thread-compatible.
bool FastEncode(const RedistributeBegin& e, std::string& out);
bool FastEncode(const RedistributeEnd& e, std::string& out);
bool FastEncode(const StepBegin& e, std::string& out);
bool FastEncode(const StepEnd& e, std::string& out);
bool FastEncode(const Collective& e, std::string& out);
bool FastEncode(const Op& e, std::string& out);

/// A plan ("raw_plan", "optimized_plan") and the skipped merges as both encoders write them; with
/// `omit_defaults` (v2) a step leaves out flattened false and avg_scale 1.
void Plan(Line& l, std::string_view name, const std::vector<PlanStep>& plan, bool omit_defaults);
void SkippedMerges(Line& l, const std::vector<SkippedMerge>& merges);

}  // namespace shardscope::trace::detail
