#pragma once
// What the CLI writes never destroys what the user owns (docs/cli.md "Outputs"): -o files, trace
// directories (the imports' written whole or not at all), and standard output whose write errors
// are reported.

#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "shardscope/trace/model.hpp"
#include "shardscope/trace/writer.hpp"

namespace shardscope::app {

/// Writes `text` to the output file `path` named by `flag` ("-o"):
/// - a regular file (also through a symlink, which is followed and kept) or a new name: written to a
///   temporary file beside it, flushed to disk and renamed over it, so a failure leaves the old file;
/// - a character device or a FIFO with a reader: written in place, nothing replaced;
/// - a FIFO without a reader, a block device, a socket, a directory or a dangling symlink: refused.
/// Every write is checked. Throws Error(kInvalidInput) naming the flag, the path and the reason.
void WriteOutputFile(const std::string& path, std::string_view text, const std::string& flag);

/// An output's bytes made piece by piece: each handed to `write` as it is made.
using OutputProducer = std::function<void(const std::function<void(std::string_view)>& write)>;

/// WriteOutputFile of what `produce` writes, streamed: the bytes go to the file (the temporary one
/// for a regular file) as they come, so memory does not hold the whole output. A failed write ends
/// `produce` (through an exception it must let pass) and is thrown as for the text; any other
/// exception of `produce` removes the temporary file and passes through (the old file is unchanged).
void WriteOutputFile(const std::string& path, const OutputProducer& produce, const std::string& flag);

/// Refuses an output that is, or would become, one of the inputs read from `inputs` (trace files,
/// trace or dump directories): the same file, or a file inside an input directory that exists or
/// has a name a reader picks up (rank-<R>.jsonl, a Flight Recorder dump name ending in a rank).
/// Throws Error(kInvalidInput) naming `flag`.
void RefuseOutputOverInputs(const std::vector<std::string>& inputs, const std::string& output,
                            const std::string& flag);

/// Claims the trace directory `dir` (flag names it in messages) for this job before anything is
/// written: takes its TraceDirLock (a second job is refused, naming the holder), then refuses a
/// trace already there (rank-<R>.jsonl files) unless `force`, which removes those files. A stale
/// lock of a crashed job is noted on stderr and taken over, and so is the staging directory of a
/// killed StagedTraceDir (removed). The lock is held until the result is destroyed.
std::unique_ptr<trace::TraceDirLock> ClaimTraceDir(const std::string& dir, const std::string& flag,
                                                   bool force);

/// A trace directory written whole or not at all (the imports' -o DIR). The constructor claims DIR
/// as ClaimTraceDir does (lock, an old trace refused unless `force`) but removes nothing. The rank
/// files are written into a staging directory inside DIR (DIR/.shardscope-tmp-XXXXXX: readers look
/// at DIR's rank files only), and Commit() flushes them to disk and moves them into place, the old
/// trace's rank files out. Until Commit succeeds DIR keeps what it held: a failed write or move, an
/// exception of the command, or destruction without Commit removes the staging directory, and DIR
/// itself (with its parents) when the claim created it. Not thread-safe; `write` may use threads.
class StagedTraceDir {
 public:
  /// Throws Error(kInvalidInput) like ClaimTraceDir, or when the staging directory cannot be made.
  StagedTraceDir(const std::string& dir, const std::string& flag, bool force);
  ~StagedTraceDir();
  StagedTraceDir(const StagedTraceDir&) = delete;
  StagedTraceDir& operator=(const StagedTraceDir&) = delete;

  /// Runs `write`, which writes rank files into `staging`. An Error naming a file in it (a writer's
  /// failed create, write or close) is thrown as Error(kInvalidInput) "FLAG: 'DIR': write failed:
  /// <OS reason> (nothing was written; ...)"; any other exception passes through. Either way the
  /// staging directory is removed first. Call once, then Commit.
  void Write(const std::function<void(const std::filesystem::path& staging)>& write);
  /// fsyncs every staged file, moves the old rank files aside, renames the new ones into DIR, fsyncs
  /// DIR, removes the staging directory (with the old files) and releases the lock. A failure moves
  /// everything back and throws Error(kInvalidInput) naming DIR and the OS's reason.
  void Commit();

 private:
  void Abandon() noexcept;  // removes the staging directory and what the claim created; unlocks
  // The renames of Commit, undone on a failure.
  void MoveIntoPlace(const std::vector<std::string>& staged, const std::vector<std::filesystem::path>& old);

  std::string dir_, flag_;
  bool force_ = false;
  std::vector<std::filesystem::path> created_;  ///< directories the claim created, deepest first
  std::unique_ptr<trace::TraceDirLock> lock_;
  std::string staging_;  ///< empty once removed (or committed)
  int staging_fd_ = -1;  ///< flock'ed while the staging directory is in use
  bool committed_ = false;
};

/// Writes one rank file per rank of `model` into `dir` (what an import's -o holds), each closed
/// before the next is opened. Throws the Writer's Error(kInvalidInput) naming the file on a failure.
void WriteRankFiles(const trace::Model& model, const std::filesystem::path& dir);

/// `j.dump(2)` with bytes that are not UTF-8 (a mesh name, a path, a dump line) replaced by U+FFFD,
/// never an exception: what --json prints.
template <typename Json>
std::string DumpJson(const Json& j, int indent = 2) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace shardscope::app
