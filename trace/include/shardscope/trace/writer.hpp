#pragma once
// Per-rank trace writer: DIR/rank-<R>.jsonl, one JSON object per line (docs/trace-format.md).

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "shardscope/trace/events.hpp"

namespace shardscope::trace {

namespace detail {
struct Sink;
struct Batch;
class Flusher;
}  // namespace detail

/// An event built once and emitted many times with only its ids and times changed: the engine's
/// redistributes emit the same plan, steps and collectives on every repeat. Immutable once
/// shared; a Writer keeps it alive until every line made from it is written, so capturing it
/// copies nothing but a pointer and the fields below.
using EventTemplate = std::shared_ptr<const Event>;

/// What changes from one emit of an EventTemplate to the next. Each kind takes the fields it has
/// and ignores the others.
struct TemplateFields {
  /// RedistributeBegin/End::id; StepBegin/StepEnd/Collective::redistribute_id; Op::id.
  int64_t id = 0;
  int64_t t_ns = 0;       ///< t_ns; Collective::start_ns
  int64_t end_ns = 0;     ///< Collective::end_ns, Op::end_ns
  int64_t op_id = -1;     ///< RedistributeBegin::op_id (Collective::op_id stays the template's)
  int64_t op_input = -1;  ///< RedistributeBegin::op_input
  IStr tensor;            ///< RedistributeBegin::tensor
};

/// `tmpl` with `fields` set: the event a template capture stands for.
Event Materialize(const Event& tmpl, const TemplateFields& fields);

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

/// When a Writer's completed redistributes reach its file.
enum class Durability {
  /// Emit only captures the event (a move into a vector). At every RedistributeEnd and Op the
  /// captured events are handed to the process's background trace thread, which encodes and
  /// writes them (write(2), no fsync) within about 5 ms. A process killed by SIGKILL loses the
  /// redistributes completed in those last ~5 ms besides the open one; Flush(), Close(),
  /// destruction and a normal exit lose nothing. The default of TraceSession (capture in a job).
  kBackground,
  /// Emit captures, and every RedistributeEnd and Op encodes and writes the captured events on
  /// the calling thread before returning: a SIGKILL loses only the open redistribute. Costs the
  /// encoding and one write(2) per redistribute on the job's thread.
  kEveryEnd,
  /// Emit only captures, and the captured events wait in memory until Flush() or Close(), or
  /// until kMaxQueuedEvents wait (then the emitting thread writes them): the least a traced job
  /// pays while it runs, at the price of losing every unflushed event to a kill. What `bench
  /// redistribute` measures capture alone with.
  kDeferred,
};

/// Writes one rank's trace. Events are captured in memory and handed off (see Durability) at
/// every RedistributeEnd and Op, and when kHandoffEvents are captured inside one redistribute;
/// Flush()/Close() and destruction write everything. Lines keep the order of the Emit calls.
/// At most kMaxQueuedEvents handed-off events wait for the background thread: past that bound
/// (a disk slower than the job) the emitting thread encodes and writes them itself, so the job
/// slows to the disk's pace, memory stays bounded and no event is dropped.
/// Not thread-safe: one Writer per rank, used by one thread at a time (the background thread
/// touches only the handed-off events and the file).
class Writer {
 public:
  /// Captured events that force a hand-off even inside a redistribute.
  static constexpr size_t kHandoffEvents = 1024;
  /// Handed-off events past which the emitting thread writes them itself (the queue's bound).
  static constexpr size_t kMaxQueuedEvents = size_t{1} << 14;

  /// Creates `dir` (and parents) if needed, truncates dir/rank-<header.rank>.jsonl and writes and
  /// flushes the header line. The format is set to this library's; `header.version` 1 writes format
  /// version 1 (for readers that predate v2), kCurrentVersion (3) or more writes version 3 (the
  /// compact forms of an imported DebugMode log; older readers refuse it), any other value
  /// kDefaultVersion (2). Throws
  /// Error(kInvalidInput) naming the path when the directory or file cannot be created.
  ///
  /// With `on_write_error` set, a failed write or close (disk full, ...) does not throw: it is
  /// called once with the message (from the background thread when that wrote), the writer stops
  /// writing (ok() turns false) and the lines written so far stay readable. Capture inside a job
  /// uses this: tracing must never take the job down. Opening still throws. Without it, the error
  /// of a background write is thrown by the next Emit, Flush or Close. The message of a failed
  /// write or close names the file, says that `dir` holds a partial trace and ends in the OS's
  /// reason: "trace: write to 'DIR/rank-2.jsonl' failed, leaving a partial trace in 'DIR': ...".
  /// kBackground falls back to kEveryEnd when the background thread cannot be started.
  Writer(const std::filesystem::path& dir, Header header,
         std::function<void(const std::string&)> on_write_error = {},
         Durability durability = Durability::kEveryEnd);
  ~Writer();  ///< Close()s, swallowing errors (check ok() or call Close() to see them).
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  /// Captures one event line. A RedistributeEnd or an Op (written when the op finished) also hands
  /// off (see Durability). Throws Error(kInvalidInput) when a write failed (disk full, ...) and
  /// there is no on_write_error; after Close() calls are ignored. The rvalue overloads move the
  /// event instead of copying it.
  void Emit(const RedistributeBegin& event);
  void Emit(const RedistributeEnd& event);
  void Emit(const StepBegin& event);
  void Emit(const StepEnd& event);
  void Emit(const Collective& event);
  void Emit(const Op& event);
  void Emit(const Event& event);
  void Emit(RedistributeBegin&& event);
  void Emit(RedistributeEnd&& event);
  void Emit(StepBegin&& event);
  void Emit(StepEnd&& event);
  void Emit(Collective&& event);
  void Emit(Op&& event);
  void Emit(Event&& event);
  /// Captures `tmpl` with `fields` set (see Materialize): the line written is that of
  /// Materialize(*tmpl, fields), but the emitting thread copies only a pointer and `fields`.
  /// A null `tmpl` is ignored. Hands off like the event kind it holds.
  void Emit(const EventTemplate& tmpl, const TemplateFields& fields);

  /// Encodes and writes every captured line and fflush()es, on the calling thread. Throws
  /// Error(kInvalidInput) on a write error.
  void Flush();
  /// Flushes and closes the file; later Emit calls are ignored. Idempotent; throws like Flush.
  void Close();

  const Header& header() const { return header_; }
  const std::filesystem::path& path() const { return path_; }
  Durability durability() const { return durability_; }
  /// False once a write has failed (also one on the background thread).
  bool ok() const;

 private:
  template <typename E>
  void Capture(E&& event, bool handoff);
  bool Capturing();  // false: closed or failed (this call may throw a background write's error)
  void Pin(const EventTemplate& tmpl);
  size_t Enqueue();
  void Handoff();
  void ThrowPendingError();

  Header header_;
  std::filesystem::path path_;
  Durability durability_;
  bool closed_ = false;
  std::unique_ptr<detail::Batch> captured_;  ///< this rank's events since the last hand-off
  /// The templates captured recently, kept alive here; one that leaves is handed off with the
  /// batch being captured, and released once that batch (the last that can refer to it) is written.
  std::vector<EventTemplate> pins_;
  static constexpr size_t kPins = 32;
  std::shared_ptr<detail::Sink> sink_;
  std::shared_ptr<detail::Flusher> flusher_;  ///< null: kEveryEnd
};

/// The lock file of a trace directory, present while a job writes it (docs/trace-format.md).
inline constexpr const char* kTraceLockFileName = ".shardscope-lock";

/// One job writes a trace directory at a time. Constructing a TraceDirLock creates `dir` (and
/// parents) if needed and takes DIR/.shardscope-lock: an flock(2) that the kernel drops when the
/// process ends (so a crashed job's lock is stale, recognised and taken over), and the holder's
/// job, pid, host and start time written in the file for the next job's message. Processes with
/// the same `job` key share the lock (the ranks of one MPI job, see JobKeyFromEnv); any other
/// holder makes the constructor throw Error(kInvalidInput) naming the directory and the holder.
/// The last holder's destructor removes the file. Take it before anything is written into the
/// directory, and hold it until the last rank file is closed. Several locks of one directory in
/// one process (same key) are fine. Not thread-safe; needs flock (local file systems).
class TraceDirLock {
 public:
  explicit TraceDirLock(const std::filesystem::path& dir, std::string job = JobKeyFromEnv());
  ~TraceDirLock();
  TraceDirLock(const TraceDirLock&) = delete;
  TraceDirLock& operator=(const TraceDirLock&) = delete;

  /// The key shared by the processes of this job: the MPI or Slurm job id from the environment
  /// (PMIX_NAMESPACE, OMPI_MCA_ess_base_jobid, SLURM_JOB_ID.SLURM_STEP_ID), else this process
  /// ("pid:HOST:PID"), so two unrelated processes never share.
  static std::string JobKeyFromEnv();
  /// What the stale lock file of a job that ended without removing it said ("pid 12 on host h,
  /// since ..."); empty when there was none.
  const std::string& stale_holder() const { return stale_holder_; }
  const std::filesystem::path& dir() const { return dir_; }

 private:
  std::filesystem::path dir_;
  int fd_ = -1;
  std::string stale_holder_;
};

}  // namespace shardscope::trace
