#pragma once
// Reading rank-*.jsonl trace files into a Model (docs/trace-format.md).

#include <atomic>
#include <cstdint>
#include <filesystem>

#include "shardscope/trace/model.hpp"

namespace shardscope::trace {

/// How far a load has got; written by the reader's threads, read by any thread (GUI, terminal).
struct ReadProgress {
  std::atomic<int64_t> files_total{0};      ///< rank files to read (set once they are listed)
  std::atomic<int64_t> files_done{0};       ///< rank files read (or skipped)
  std::atomic<int64_t> bytes_total{0};      ///< their sizes on disk
  std::atomic<int64_t> bytes_done{0};       ///< bytes consumed so far
  std::atomic<int64_t> lines_fast{0};       ///< lines decoded by the simdjson fast path
  std::atomic<int64_t> lines_reference{0};  ///< lines parsed by the reference (nlohmann) path
};

/// Knobs of one load. The defaults are what every tool uses.
struct ReadOptions {
  /// Threads that parse rank files concurrently; 0 = every core (std::thread::hardware_concurrency),
  /// but no more than one per 4 MiB of input.
  int jobs = 0;
  /// false: parse every line with the reference (nlohmann) path only, the reader before the
  /// simdjson fast path; kept for `shardscope bench load` and the equivalence tests. Same results.
  bool fast = true;
  /// When not null, updated while loading; must outlive the call.
  ReadProgress* progress = nullptr;
};

/// Reads one rank file. Tolerant of a torn last line (warning diagnostic, line skipped) and of
/// unknown event types (one diagnostic per type, lines skipped). Throws Error(kInvalidInput) with
/// "file:line: what was expected" for any other malformed line, a missing header or an
/// inconsistent event; Error(kUnsupported) for a format version newer than kCurrentVersion.
Model ReadTraceFile(const std::filesystem::path& path, const ReadOptions& options = {});

/// Reads every rank-<R>.jsonl in `dir` (concurrently, options.jobs threads) and merges them into
/// one Model. A rank file that ReadTraceFile would refuse is skipped with a diagnostic naming it
/// and its error, and one counting the skipped files; only when no rank file is readable is the
/// first one's error thrown. Throws Error(kInvalidInput) when there is no rank file, two files
/// hold the same rank, a file name disagrees with its header's rank, or readable headers disagree
/// on world or mesh. Ranks of the world with no file are a warning diagnostic.
Model ReadTraceDir(const std::filesystem::path& dir, const ReadOptions& options = {});

}  // namespace shardscope::trace
