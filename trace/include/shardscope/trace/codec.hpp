#pragma once
// JSON encoding of trace lines. The format's field names live in trace/src/codec_encode.cpp
// (writing) and trace/src/codec.cpp (reading); docs/trace-format.md documents them.

#include <nlohmann/json.hpp>

#include "shardscope/trace/events.hpp"

namespace shardscope::trace {

/// The header line as a JSON object, "type" first and fields in documented order. Pure.
nlohmann::ordered_json ToJson(const Header& header);

/// One event line as a JSON object, "type" first and fields in documented order. Pure.
nlohmann::ordered_json ToJson(const Event& event);

/// One line of JSON Lines text (no trailing newline); invalid UTF-8 in strings is replaced
/// by U+FFFD instead of throwing.
std::string ToLine(const nlohmann::ordered_json& line);

}  // namespace shardscope::trace
