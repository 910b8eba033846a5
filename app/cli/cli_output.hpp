#pragma once
// What the CLI writes never destroys what the user owns (docs/cli.md "Outputs"): -o files, trace
// directories, and standard output whose write errors are reported.

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

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
/// lock of a crashed job is noted on stderr and taken over. The lock is held until the result is
/// destroyed.
std::unique_ptr<trace::TraceDirLock> ClaimTraceDir(const std::string& dir, const std::string& flag,
                                                   bool force);

/// `j.dump(2)` with bytes that are not UTF-8 (a mesh name, a path, a dump line) replaced by U+FFFD,
/// never an exception: what --json prints.
template <typename Json>
std::string DumpJson(const Json& j, int indent = 2) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace shardscope::app
