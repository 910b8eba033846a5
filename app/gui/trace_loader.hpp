#pragma once
// Loads a trace on a background thread through trace::ReadAnyTrace (the GUI never parses files
// itself), so the window stays responsive while a big trace is read. Flight Recorder dumps load
// in two passes: triage streams the dumps first (trace::TriagePaths, a few bytes an entry, every
// core), summarising each rank's dump for the view as it goes by (FlightLoadCollector) and giving
// the verdict; then the model is read for the lanes, and the checker and the flight view's lanes
// are computed here too, off the main thread.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "flight_load.hpp"
#include "flight_view_model.hpp"
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
  /// After done(): the flight view's check, triage and lanes of model(), computed on the loader's
  /// thread, when the model holds flight records (trace::HasFlightRecords); else null.
  std::shared_ptr<const FlightAnalysis> analysis() const;
  /// Flight Recorder dumps: what is read so far (rebuilt at most every `max_age_s` seconds, and
  /// whenever the stage changes); null before the first dump is read and for other inputs.
  /// Main thread.
  std::shared_ptr<const FlightLoadSnapshot> snapshot(double max_age_s = 0.2);
  /// When each stage began and when the load ended ("triage: reading dumps", "reading dumps for the
  /// lanes" (triage's verdict is known from then on), "checking", "building the lanes", "done"),
  /// seconds after the start, in order. Thread-safe.
  std::vector<std::pair<std::string, double>> stages() const;
  /// Tests: wait this long after each dump is read (a small dump directory then loads as slowly as
  /// a big one, so what the GUI shows during a load can be tested).
  static void SetDumpDelayForTests(int milliseconds);

 private:
  std::string path_;
  std::chrono::steady_clock::time_point start_;
  std::atomic<bool> done_{false};
  trace::ReadProgress progress_;
  mutable std::mutex mutex_;
  std::shared_ptr<const trace::Model> model_;
  std::shared_ptr<const FlightAnalysis> analysis_;
  std::string error_;
  // Flight Recorder dumps: the summaries, the stage and triage once known (under mutex_), and the
  // last snapshot handed out (main thread).
  FlightLoadCollector collector_;
  std::atomic<bool> flight_{false};
  std::string stage_;
  std::vector<std::pair<std::string, double>> stages_;
  std::shared_ptr<const trace::TriageResult> triage_;
  std::shared_ptr<const FlightLoadSnapshot> snapshot_;
  std::chrono::steady_clock::time_point snapshot_at_{};
  int64_t snapshot_ranks_ = -1;
  std::thread thread_;
};

}  // namespace shardscope::app::gui
