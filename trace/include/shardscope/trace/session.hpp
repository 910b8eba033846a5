#pragma once
// Headless trace capture in any process: SHARDSCOPE_TRACE=<dir> or an explicit directory.

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "shardscope/trace/events.hpp"
#include "shardscope/trace/writer.hpp"

namespace shardscope::trace {

/// Name of the environment variable that turns tracing on: its value is the trace directory.
inline constexpr const char* kTraceEnvVar = "SHARDSCOPE_TRACE";

/// A header for this process: the given rank, world, mesh and backend, plus host name, pid and
/// the steady clock with offset 0. Never throws except std::bad_alloc.
Header MakeHeader(int64_t rank, int64_t world, std::vector<int64_t> mesh_shape,
                  std::vector<std::string> mesh_dim_names, std::string backend);

/// What a session does when its trace cannot be written.
enum class TraceFailure {
  kThrow,        ///< WriterFor and the writers throw Error(kInvalidInput) (`shardscope run --trace`)
  kWarnAndStop,  ///< one warning line on stderr, tracing off, the job goes on (capture in a job)
};

/// Owns the per-rank Writers of one trace directory. Disabled sessions hand out nullptr, so
/// tracing off costs one branch at the call site: `if (auto* w = session.WriterFor(r, h)) w->Emit(e);`.
/// WriterFor and Close are thread-safe (ranks as threads); each returned Writer is not.
class TraceSession {
 public:
  /// A disabled session: WriterFor always returns nullptr.
  TraceSession();
  /// An enabled session writing into `dir` (created on the first WriterFor). Its writers hand
  /// completed redistributes to the background trace thread by default (Durability::kBackground:
  /// the job's threads only capture events; a SIGKILL can lose the last ~5 ms of them).
  explicit TraceSession(std::filesystem::path dir, TraceFailure on_failure = TraceFailure::kThrow,
                        Durability durability = Durability::kBackground);
  /// Enabled iff SHARDSCOPE_TRACE is set and non-empty; its value is the directory. The capture
  /// API: failures follow TraceFailure::kWarnAndStop, so an unwritable directory, a regular file
  /// or a full disk never disturbs the job (the lines written before a failure are kept).
  static TraceSession FromEnv();

  TraceSession(TraceSession&&) noexcept;
  TraceSession& operator=(TraceSession&&) noexcept;
  ~TraceSession();  ///< Closes every writer, swallowing write errors.

  bool enabled() const { return enabled_; }
  const std::filesystem::path& dir() const { return dir_; }

  /// The writer of `rank`, opened with `header` (header.rank is set to `rank`) on the first call
  /// and returned as is afterwards; nullptr when disabled. The session keeps ownership; the pointer
  /// stays valid until Close() or destruction. The first call takes the directory's TraceDirLock
  /// (held until Close), so a second job writing the same directory is refused. Throws
  /// Error(kInvalidInput) if the lock or the file cannot be had (kWarnAndStop: warns once, turns
  /// tracing off and returns nullptr from then on).
  Writer* WriterFor(int64_t rank, const Header& header);

  /// Flushes and closes all writers (later WriterFor calls reopen, truncating). Throws the first
  /// write error after closing them all.
  void Close();

 private:
  struct Warning;  // shared with the writers' error callbacks: warn once per session

  bool enabled_ = false;
  std::filesystem::path dir_;
  TraceFailure on_failure_ = TraceFailure::kThrow;
  Durability durability_ = Durability::kBackground;
  std::shared_ptr<Warning> warning_;
  bool failed_ = false;  ///< kWarnAndStop: a writer could not open; guarded by mutex_
  std::unique_ptr<std::mutex> mutex_;
  std::map<int64_t, std::unique_ptr<Writer>> writers_;
  std::unique_ptr<TraceDirLock> lock_;  ///< taken by the first WriterFor; guarded by mutex_
};

}  // namespace shardscope::trace
