#pragma once
// The one home for reading JSON input files (scenario and program files): bounded reads of
// regular files only, syntax errors and duplicate keys reported as path:line:column.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace shardscope::program::detail {

/// Largest input file read (64 MiB): a scenario or program file is a few KiB; the bound keeps a
/// mistaken argument (/dev/zero, a trace, a core dump) from being read into memory.
inline constexpr uint64_t kMaxInputFileBytes = uint64_t{64} << 20;

/// Reads a whole input file. Refuses with Error(kInvalidInput) naming `path` and `what` ("scenario
/// file") a missing or unreadable path, anything but a regular file (a directory, /dev/zero, a
/// FIFO) and a file over `max_bytes` (the size is checked before reading and while reading).
std::string ReadInputFile(const std::string& path, std::string_view what,
                          uint64_t max_bytes = kMaxInputFileBytes);

/// "line:column" (1-based) of byte `offset` in `text`.
std::string LineColumn(std::string_view text, size_t offset);

/// Parses JSON text. A syntax error, a number out of range or a key that appears twice in one
/// object (nlohmann would silently keep the last) throws Error(kInvalidInput):
/// "path:line:column: ..." where the duplicate's message names the JSON pointer of the object
/// and the line:column of the first occurrence.
/// `check_duplicates` false leaves that check to a later RefuseDuplicateKeys call (the scenario
/// parser reports unknown top-level fields first).
nlohmann::json ParseJsonInput(std::string_view text, const std::string& path, bool check_duplicates = true);

/// The duplicate-key check of ParseJsonInput on text that nlohmann has parsed: throws
/// Error(kInvalidInput) at the first key repeated within one object, naming both positions.
void RefuseDuplicateKeys(std::string_view text, const std::string& path);

}  // namespace shardscope::program::detail
