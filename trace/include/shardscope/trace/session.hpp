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

/// Owns the per-rank Writers of one trace directory. Disabled sessions hand out nullptr, so
/// tracing off costs one branch at the call site: `if (auto* w = session.WriterFor(r, h)) w->Emit(e);`.
/// WriterFor and Close are thread-safe (ranks as threads); each returned Writer is not.
class TraceSession {
 public:
  /// A disabled session: WriterFor always returns nullptr.
  TraceSession();
  /// An enabled session writing into `dir` (created on the first WriterFor).
  explicit TraceSession(std::filesystem::path dir);
  /// Enabled iff SHARDSCOPE_TRACE is set and non-empty; its value is the directory.
  static TraceSession FromEnv();

  TraceSession(TraceSession&&) noexcept;
  TraceSession& operator=(TraceSession&&) noexcept;
  ~TraceSession();  ///< Closes every writer, swallowing write errors.

  bool enabled() const { return enabled_; }
  const std::filesystem::path& dir() const { return dir_; }

  /// The writer of `rank`, opened with `header` (header.rank is set to `rank`) on the first call
  /// and returned as is afterwards; nullptr when disabled. The session keeps ownership; the pointer
  /// stays valid until Close() or destruction. Throws Error(kInvalidInput) if the file cannot open.
  Writer* WriterFor(int64_t rank, const Header& header);

  /// Flushes and closes all writers (later WriterFor calls reopen, truncating). Throws the first
  /// write error after closing them all.
  void Close();

 private:
  bool enabled_ = false;
  std::filesystem::path dir_;
  std::unique_ptr<std::mutex> mutex_;
  std::map<int64_t, std::unique_ptr<Writer>> writers_;
};

}  // namespace shardscope::trace
