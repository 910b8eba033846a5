#pragma once
// Private: the writer's fast path. Appends the line of an event straight to a string, field for
// field as event_fields.hpp describes it and codec_encode.cpp's ToJson writes it, without building
// a JSON tree. It declines (returns false, `out` unchanged) whenever a string
// holds anything but printable ASCII without quotes or backslashes, or a number is not finite; the
// writer then encodes the event through codec_encode.cpp, which escapes and replaces. Floats are written
// in shortest round-trip form (std::to_chars) laid out as nlohmann lays them out ("1.0", "0.001",
// "1e+20").

#include <string>

#include "event_fields.hpp"
#include "line_builder.hpp"  // AppendDouble
#include "shardscope/trace/events.hpp"

namespace shardscope::trace::detail {

/// Appends the line of `e` (any event struct: RedistributeBegin .. Op) without its '\n' to `out`
/// and returns true, or returns false and leaves `out` as it was. Pure; thread-compatible.
template <typename E>
bool FastEncode(const E& e, std::string& out);

/// What a v2 reader rebuilds a left-out field from (event_fields.hpp's rules); a field is left out
/// only where the rebuilt value equals it. v1 (the default) writes every field.
struct WriteBasis {
  bool v2 = false;
  bool v3 = false;                     ///< version 3 (implies v2): also leaves out what rule::SameAsV3 allows
  const PlanStep* step = nullptr;      ///< the event's plan step (FromStep), if known
  const std::string* dtype = nullptr;  ///< its redistribute's dtype (FromBeginDtype), if known
  const std::vector<int64_t>* group = nullptr;  ///< MeshGroup over its mesh_dims (FromMeshGroup)
  int64_t rank = 0;                             ///< this file's rank (uniform byte counts)
};

/// Writes fields [from, to) of E's table (event_fields.hpp) that `b` does not leave out, in table
/// order; line-only fields (`like`) are the caller's. Defined for every event kind and ImportedPlan.
template <typename E>
void WriteFields(Line& l, const E& e, const WriteBasis& b, size_t from = 0, size_t to = 64);

}  // namespace shardscope::trace::detail
