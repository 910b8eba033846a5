#pragma once
// Private to the trace library: one Writer's file and event queue (Sink), and the one background
// thread per process that encodes and writes every sink's queued events (Flusher). The capture
// side (Writer::Emit) only moves an event into a vector; encoding (encode_v2.cpp, fast_encode.cpp)
// and the write(2) happen in Sink::Drain, on the flusher thread or, when asked, on the caller's.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "shardscope/trace/events.hpp"
#include "shardscope/trace/writer.hpp"

namespace shardscope::trace::detail {

class EncoderV2;

/// One captured line: a whole event (Batch::full[index]) or a template and its changing fields.
struct Captured {
  const Event* tmpl = nullptr;  ///< null: the line is Batch::full[index]
  size_t index = 0;
  TemplateFields fields;
};

/// Set on an event the fields a template capture changes (what Materialize sets).
inline void ApplyTemplateFields(RedistributeBegin& e, const TemplateFields& f) {
  e.id = f.id, e.t_ns = f.t_ns, e.op_id = f.op_id, e.op_input = f.op_input;
  if (e.tensor() != f.tensor) e.Mutable().tensor = f.tensor;  // the template's shape, unless the name differs
}
inline void ApplyTemplateFields(RedistributeEnd& e, const TemplateFields& f) { e.id = f.id, e.t_ns = f.t_ns; }
inline void ApplyTemplateFields(StepBegin& e, const TemplateFields& f) {
  e.redistribute_id = f.id, e.t_ns = f.t_ns;
}
inline void ApplyTemplateFields(StepEnd& e, const TemplateFields& f) {
  e.redistribute_id = f.id, e.t_ns = f.t_ns;
}
inline void ApplyTemplateFields(Collective& e, const TemplateFields& f) {
  e.redistribute_id = f.id, e.start_ns = f.t_ns, e.end_ns = f.end_ns;
}
inline void ApplyTemplateFields(Op& e, const TemplateFields& f) {
  e.id = f.id, e.t_ns = f.t_ns, e.end_ns = f.end_ns;
}

/// Captured lines in emit order, and what they need kept alive until they are written.
struct Batch {
  std::vector<Captured> records;
  std::vector<Event> full;          ///< the whole events records point to
  std::vector<EventTemplate> pins;  ///< templates released once this batch is written
  size_t size() const { return records.size(); }
  bool empty() const { return records.empty() && pins.empty(); }
  void clear() {  // keeps the vectors' capacity
    records.clear();
    full.clear();
    pins.clear();
  }
  /// Moves `other`'s lines and pins behind this batch's; `other` is left empty.
  void Append(Batch& other);
};

struct Sink {
  Sink();
  ~Sink();  // closes the file if still open (errors ignored)
  Sink(const Sink&) = delete;
  Sink& operator=(const Sink&) = delete;

  /// Encodes and writes every handed-off event, in hand-off order, then fflush()es. A failed write
  /// turns ok false and is reported once (on_write_error, else kept in `error` for the owner).
  void Drain();
  /// Drains, then closes the file (a failed fclose is reported like a failed write); later drains
  /// do nothing.
  void CloseFile();
  /// Writes `text` as is (the header line) and fflush()es; a failure is reported like Drain's.
  void WriteNow(const std::string& text);

  // Hand-off side, guarded by queue_mu.
  std::mutex queue_mu;
  Batch queue;        ///< handed off by the writer, not yet taken by a drain
  std::string error;  ///< the first write error of a writer without on_write_error

  // Drain side, guarded by write_mu (taken before queue_mu when both are held, so a drain that
  // took its batch first also writes it first: lines keep their hand-off order).
  std::mutex write_mu;
  Batch draining;
  std::string buffer;
  std::vector<const Event*>
      whole_run;  ///< Drain's whole redistribute of whole events (kept for its capacity)
  std::FILE* file = nullptr;
  std::unique_ptr<EncoderV2> v2;  ///< null: format version 1
  std::filesystem::path path;

  std::function<void(const std::string&)> on_write_error;  ///< set once, before any drain
  std::atomic<bool> ok{true};

 private:
  void Fail(const std::string& message);  // write_mu held
  std::string Partial() const;            // ", leaving a partial trace in 'DIR': " of a failure
  void WriteBuffer();                     // write_mu held
};

/// The process's background trace thread: every kPeriod it drains each registered sink, so an
/// event handed off is in the file (write(2) done, not fsync'ed) within about kPeriod. It sleeps
/// without waking while no sink is registered. Shared by every Writer of the process and alive
/// while one of them is: the last writer's Close() or destruction stops the thread.
///
/// Exit and fork, since this thread runs inside a user's job:
/// - At exit() (an atexit handler registered with the first flusher) the thread drains every sink
///   one last time and stops, before static destructors run, so it never runs beside them; writers
///   still open (a session in a static) then write on their own thread and at Close().
/// - fork() waits for a drain in progress (pthread_atfork), so the child inherits no lock held by
///   a thread it does not have. In the child the thread does not exist: running() is false, the
///   child's writers write on their own thread, and the inherited Flusher is never joined nor
///   destroyed there (its condition variable may count the parent's thread as a waiter).
class Flusher {
 public:
  static constexpr std::chrono::milliseconds kPeriod{5};

  /// The process's flusher, its thread started on first use. Throws std::system_error when the
  /// thread cannot be started.
  static std::shared_ptr<Flusher> Get();

  Flusher();
  ~Flusher();  ///< drains every sink still registered, then stops the thread
  Flusher(const Flusher&) = delete;
  Flusher& operator=(const Flusher&) = delete;

  void Add(std::shared_ptr<Sink> sink);
  void Remove(const Sink* sink);
  /// Drains now rather than at the next period (a queue past half its bound).
  void Wake();
  /// False once the thread has stopped (exit) or is not in this process (a forked child): handed-off
  /// events are then the writer's to drain.
  bool running() const { return running_.load(std::memory_order_acquire); }

  /// Drains every sink a last time and joins the thread; idempotent. (The atexit handler.)
  void Stop();
  /// pthread_atfork: the forking thread holds drain_mu_ and mu_ across fork(); the child marks the
  /// thread as gone.
  void LockForFork();
  void UnlockAfterFork(bool child);

 private:
  void Loop();

  std::mutex mu_;
  std::mutex drain_mu_;  ///< held by the thread while it drains (never together with mu_)
  std::condition_variable cv_;
  bool stop_ = false;
  bool wake_ = false;
  std::atomic<bool> running_{false};
  std::vector<std::shared_ptr<Sink>> sinks_;
  std::unique_ptr<std::thread> thread_;  // last: started once the members above exist
};

}  // namespace shardscope::trace::detail
