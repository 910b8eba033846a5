#pragma once
// Reading rank-*.jsonl trace files into a Model (docs/trace-format.md).

#include <filesystem>

#include "shardscope/trace/model.hpp"

namespace shardscope::trace {

/// Reads one rank file. Tolerant of a torn last line (warning diagnostic, line skipped) and of
/// unknown event types (one diagnostic per type, lines skipped). Throws Error(kInvalidInput) with
/// "file:line: what was expected" for any other malformed line, a missing header or an
/// inconsistent event; Error(kUnsupported) for a format version newer than kCurrentVersion.
Model ReadTraceFile(const std::filesystem::path& path);

/// Reads every rank-<R>.jsonl in `dir` and merges them into one Model. Throws like ReadTraceFile,
/// and Error(kInvalidInput) when there is no rank file, two files hold the same rank, a file name
/// disagrees with its header's rank, or headers disagree on world or mesh. Ranks of the world with
/// no file are a warning diagnostic.
Model ReadTraceDir(const std::filesystem::path& dir);

}  // namespace shardscope::trace
