#pragma once
// Private: parsing of trace lines with file:line error messages. Field names live in codec.cpp
// (decoding) and codec_encode.cpp (encoding).

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "format_v2.hpp"
#include "shardscope/trace/events.hpp"

namespace shardscope::trace::detail {

// Times (*_ns, clock offsets) within +-2^61 ns (73 years) and byte counts up to 2^42 (4 TiB per
// peer and collective): differences of two times, a time plus an offset, and a group's bytes
// (at most kMaxRanks = 2^20 entries) all fit an int64, so the tools' arithmetic cannot overflow
// on any trace the reader accepts.
inline constexpr int64_t kMaxTimeNs = int64_t{1} << 61;
inline constexpr int64_t kMaxBytes = int64_t{1} << 42;

/// The "type" of each line.
inline constexpr const char* kTypeHeader = "header";
inline constexpr const char* kTypeRedistributeBegin = "redistribute_begin";
inline constexpr const char* kTypeRedistributeEnd = "redistribute_end";
inline constexpr const char* kTypeStepBegin = "step_begin";
inline constexpr const char* kTypeStepEnd = "step_end";
inline constexpr const char* kTypeCollective = "collective";
inline constexpr const char* kTypeOp = "op";
inline constexpr const char* kTypeRedistributeRepeat = "redistribute_repeat";  ///< v2 (RepeatLine)

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

/// Parses a v2 redistribute_repeat line's fields (ExpandRepeat checks them against the file).
RepeatLine ParseRepeatLine(const nlohmann::json& line, const LineRef& at);

}  // namespace shardscope::trace::detail
