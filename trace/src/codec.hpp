#pragma once
// Private: parsing of trace lines with file:line error messages (codec.cpp); encoding in
// codec_encode.cpp. The fields of each event kind are described once, in event_fields.hpp.

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "format_v2.hpp"
#include "shardscope/trace/events.hpp"

namespace shardscope::trace::detail {

/// The "type" of each line.
inline constexpr const char* kTypeHeader = "header";
inline constexpr const char* kTypeRedistributeBegin = "redistribute_begin";
inline constexpr const char* kTypeRedistributeEnd = "redistribute_end";
inline constexpr const char* kTypeStepBegin = "step_begin";
inline constexpr const char* kTypeStepEnd = "step_end";
inline constexpr const char* kTypeCollective = "collective";
inline constexpr const char* kTypeOp = "op";
inline constexpr const char* kTypeRedistributeRepeat = "redistribute_repeat";  ///< v2 (RepeatLine)
inline constexpr const char* kTypeCollectiveRepeat = "collective_repeat";      ///< v2 (CollectiveRepeatLine)

/// Where a line came from, for messages "file:line: what".
struct LineRef {
  std::string file;
  int64_t line = 0;
};

/// Throws Error(kInvalidInput, "file:line: what").
[[noreturn]] void ThrowAt(const LineRef& at, const std::string& what);

/// The "type" field of a line object; throws when absent or not a string.
std::string LineType(const nlohmann::json& line, const LineRef& at);

/// Parses and validates a header object: format name, version in [kMinVersion, kCurrentVersion]
/// (a newer version throws kUnsupported), rank/world/mesh within the sanity limits.
Header ParseHeader(const nlohmann::json& line, const LineRef& at);

/// Parses one event object. Returns nullopt when its type is unknown to this version (the caller
/// counts and skips it). Throws kInvalidInput naming the first bad field. Checks that do not need
/// the header (types, sizes against the kMax* limits) happen here. `ctx` says the file's version;
/// a v2 line may leave out fields that earlier lines of the file give (format_v2.hpp).
std::optional<Event> ParseEvent(const nlohmann::json& line, const LineRef& at, const FileContext& ctx);

/// Parses a v2 redistribute_repeat line's fields (ExpandRepeat checks them against the file);
/// version 3's forms (no `dt`, an `imported`) only in a file of that version (`ctx`).
RepeatLine ParseRepeatLine(const nlohmann::json& line, const LineRef& at, const FileContext& ctx);

/// Parses a v2 collective_repeat line's fields (ExpandCollectiveRepeat checks them against the file).
CollectiveRepeatLine ParseCollectiveRepeatLine(const nlohmann::json& line, const LineRef& at);

}  // namespace shardscope::trace::detail
