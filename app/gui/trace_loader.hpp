#pragma once
// Loads a trace on a background thread through trace::ReadAnyTrace (the GUI never parses files
// itself), so the window stays responsive while a big trace is read.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "shardscope/trace/model.hpp"
#include "shardscope/trace/reader.hpp"

namespace shardscope::app::gui {

/// One background load. Start in the constructor; poll done() from the main thread.
class TraceLoader {
 public:
  /// Starts reading `path` with trace::ReadAnyTrace: a trace directory or rank file, Flight Recorder
  /// dumps or profiler traces.
  explicit TraceLoader(std::string path);
  ~TraceLoader();  ///< Joins the thread (a load cannot be cancelled; it finishes first).
  TraceLoader(const TraceLoader&) = delete;
  TraceLoader& operator=(const TraceLoader&) = delete;

  const std::string& path() const { return path_; }
  /// True once the thread finished, successfully or not. Thread-safe.
  bool done() const { return done_.load(std::memory_order_acquire); }
  /// Bytes of the files the reader reads (rank files, dumps or profiler traces, not the other files
  /// of a directory); 0 until it has listed them. Thread-safe.
  int64_t total_bytes() const { return progress_.bytes_total.load(); }
  /// Seconds since the start.
  double elapsed_s() const;
  /// The reader's live counters (rank files and bytes done of total). Thread-safe.
  const trace::ReadProgress& progress() const { return progress_; }
  /// After done(): the model, or null when loading failed.
  std::shared_ptr<const trace::Model> model() const;
  /// After done(): the reader's one-line error ("rank-0.jsonl:3: ..."), "" on success.
  std::string error() const;

 private:
  std::string path_;
  std::chrono::steady_clock::time_point start_;
  std::atomic<bool> done_{false};
  trace::ReadProgress progress_;
  mutable std::mutex mutex_;
  std::shared_ptr<const trace::Model> model_;
  std::string error_;
  std::thread thread_;
};

}  // namespace shardscope::app::gui
