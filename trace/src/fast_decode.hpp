#pragma once
// Private: the reader's fast path. Decodes one event line parsed by simdjson's DOM parser into an
// Event, accepting only the well-formed common case: exactly the documented fields, each once and
// of the documented type and range. Anything else (an unknown or duplicated field, an escape, an
// out-of-range value, a type this version does not know) returns false, and the reader then
// parses the same line with the reference path (codec.cpp), which yields the event or the error
// message naming file, line and field. So the fast path never decides what is an error, and every
// message stays the reference path's.

#include <string_view>

#include <simdjson.h>

#include "format_v2.hpp"
#include "shardscope/trace/events.hpp"

namespace shardscope::trace::detail {

/// Decodes `line` (the raw text of `element`, for cheap pre-scans) into `out`; `ctx` says the
/// file's version and holds what a v2 line may refer to. Returns false when
/// the line is anything but a well-formed event of a kind the fast path decodes; `out` is then
/// unspecified. Thread-compatible (no shared state).
bool FastDecodeEvent(simdjson::dom::element element, std::string_view line, const FileContext& ctx,
                     Event& out);

/// Decodes a v2 redistribute_repeat line's fields (whose "type" the caller checked); false when it
/// has anything but exactly the documented fields, each once and in range.
bool FastDecodeRepeat(simdjson::dom::element element, std::string_view line, const FileContext& ctx,
                      RepeatLine& out);

/// Decodes a v2 collective_repeat line's fields (whose "type" the caller checked), as
/// FastDecodeRepeat.
bool FastDecodeCollectiveRepeat(simdjson::dom::element element, std::string_view line,
                                CollectiveRepeatLine& out);

}  // namespace shardscope::trace::detail
