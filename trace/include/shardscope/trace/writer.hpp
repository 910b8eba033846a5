#pragma once
// Per-rank trace writer: DIR/rank-<R>.jsonl, one JSON object per line (docs/trace-format.md).

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "shardscope/trace/events.hpp"

namespace shardscope::trace {

namespace detail {
class EncoderV2;
}

/// Nanoseconds of std::chrono::steady_clock since its epoch; the clock every *_ns field uses
/// (Header::clock.name == "steady"). Thread-safe, never throws.
int64_t NowNs() noexcept;

/// The file name of rank R's trace inside a trace directory: "rank-<R>.jsonl".
std::string RankFileName(int64_t rank);
/// The inverse of RankFileName: R for "rank-<R>.jsonl" (at most 9 digits), -1 for any other name.
int64_t RankOfFileName(const std::string& name);

/// The rank files ("rank-<R>.jsonl", R decimal) directly inside `dir`, sorted by name; empty when
/// `dir` does not exist. Writers truncate only their own rank's file, so a run writing into a
/// directory that holds these would leave another run's ranks beside its own: callers refuse or
/// remove them first. Throws Error(kInvalidInput) when `dir` exists but is not a directory.
std::vector<std::filesystem::path> RankFilesIn(const std::filesystem::path& dir);

/// Writes one rank's trace. Events are buffered in memory and written (fwrite + fflush) at every
/// RedistributeEnd and Op, when the buffer passes kFlushBytes, at Flush()/Close() and at destruction, so a
/// process killed mid-run leaves every completed redistribute readable.
/// Not thread-safe: one Writer per rank, used by one thread at a time.
class Writer {
 public:
  /// Buffered bytes that force a write even inside a redistribute (bounds memory).
  static constexpr size_t kFlushBytes = size_t{1} << 20;

  /// Creates `dir` (and parents) if needed, truncates dir/rank-<header.rank>.jsonl and writes and
  /// flushes the header line. The format is set to this library's; `header.version` 1 writes format
  /// version 1 (for readers that predate v2), any other value this library's kCurrentVersion. Throws
  /// Error(kInvalidInput) naming the path when the directory or file cannot be created.
  ///
  /// With `on_write_error` set, a failed write or close (disk full, ...) does not throw: it is
  /// called once with the message, the writer stops writing (ok() turns false) and the lines
  /// written so far stay readable. Capture inside a job uses this: tracing must never take the
  /// job down. Opening still throws.
  Writer(const std::filesystem::path& dir, Header header,
         std::function<void(const std::string&)> on_write_error = {});
  ~Writer();  ///< Close()s, swallowing errors (check ok() or call Close() to see them).
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  /// Appends one event line. A RedistributeEnd or an Op (written when the op finished) also flushes. Throws
  /// Error(kInvalidInput) when a write fails (disk full, ...); after Close() calls are ignored.
  void Emit(const RedistributeBegin& event);
  void Emit(const RedistributeEnd& event);
  void Emit(const StepBegin& event);
  void Emit(const StepEnd& event);
  void Emit(const Collective& event);
  void Emit(const Op& event);
  void Emit(const Event& event);

  /// Writes buffered lines and fflush()es. Throws Error(kInvalidInput) on a write error.
  void Flush();
  /// Flushes and closes the file; later Emit calls are ignored. Idempotent; throws like Flush.
  void Close();

  const Header& header() const { return header_; }
  const std::filesystem::path& path() const { return path_; }
  /// False once a write has failed.
  bool ok() const { return ok_; }

 private:
  void Append(const std::string& line, bool flush);
  void Fail(const std::string& message);
  template <typename E>
  void EmitFast(const E& event, bool flush);

  Header header_;
  std::filesystem::path path_;
  std::FILE* file_ = nullptr;
  std::string buffer_;
  bool ok_ = true;
  std::function<void(const std::string&)> on_write_error_;  ///< empty: throw
  std::unique_ptr<detail::EncoderV2> v2_;                   ///< null: version 1
};

}  // namespace shardscope::trace
