#pragma once
// `shardscope diff`, `check` and `export`: the trace tools for CI and for other viewers. Plain
// option structs filled by main.cpp; the logic lives in the trace library (diff.hpp, check.hpp,
// chrome_export.hpp). Exit codes: 0 ok, 1 differences or mismatches found, 2 bad input.

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "shardscope/trace/model.hpp"
#include "shardscope/trace/reader.hpp"

namespace shardscope::app {

/// `shardscope diff BASELINE CANDIDATE`.
struct DiffArgs {
  std::string baseline;   ///< trace directory or rank file
  std::string candidate;  ///< trace directory or rank file
  std::string fail_on;    ///< --fail-on list; empty: every category but time
  bool json = false;
  int jobs = 0;  ///< --jobs: threads reading rank files, 0 = every core
};

/// `shardscope check DIR`.
struct CheckArgs {
  std::string path;          ///< trace directory or rank file
  int64_t max_reports = 20;  ///< --max-reports: mismatches printed (all are counted)
  bool json = false;
  int jobs = 0;  ///< --jobs: threads reading rank files, 0 = every core
};

/// `shardscope export --format chrome DIR -o OUT`.
struct ExportArgs {
  std::string path;               ///< trace directory or rank file
  std::string format = "chrome";  ///< only "chrome" for now
  std::string output;             ///< -o file ("-" writes to `out`)
  int jobs = 0;                   ///< --jobs: threads reading rank files, 0 = every core
};

/// `shardscope import fr PATH... [-o DIR] [--json]`.
struct ImportFrArgs {
  std::vector<std::string> paths;  ///< dump directories and/or dump files (one per rank)
  std::string output;              ///< -o: write the trace here (rank-<R>.jsonl); "" prints only
  bool json = false;
  bool force = false;  ///< --force: replace a trace already in the -o directory
};

/// Reads a trace directory, one rank file or Flight Recorder dumps (trace::ReadAnyTrace) with
/// `jobs` threads (0 = every core). When stderr is a terminal and `progress` is true, a load that
/// lasts over half a second shows one self-erasing line of rank files and bytes done. Throws
/// Error(kInvalidInput) for a missing path or an unreadable trace.
trace::Model ReadTraceWithProgress(const std::string& path, int jobs, bool progress);
/// Runs `read` with counters that, when `progress` is set and stderr is a terminal, a line on
/// stderr shows while it lasts over half a second (as ReadTraceWithProgress). Rethrows what `read` throws.
void RunWithProgress(const std::string& path, bool progress,
                     const std::function<void(trace::ReadProgress&)>& read);

/// "FILE:LINE: message" for a load diagnostic (no file part for one about the whole trace), without
/// a leading "warning: " (callers print "shardscope: warning: " before it).
std::string DiagnosticText(const trace::Diagnostic& d);

/// One "shardscope: warning: SOURCE: FILE:LINE: message" line on stderr per load diagnostic of
/// `model` (no "SOURCE: " when `source` is empty).
void PrintLoadWarnings(const trace::Model& model, const std::string& source);
/// The same for diagnostics read without a model (check of Flight Recorder dumps).
void PrintLoadWarnings(const std::vector<trace::Diagnostic>& diagnostics, const std::string& source);

/// Takes a model that the command is done with, to be freed only when the process ends: for the
/// commands of the CLI, which exit after one command (never in a loop: it keeps every model).
void KeepUntilExit(trace::Model&& model);

/// How every command reads a trace (show, check, export, diff): ReadTraceWithProgress, then load
/// diagnostics become "shardscope: warning: FILE:LINE: message" lines on stderr. A non-empty
/// `role` ("baseline", "candidate") starts every message with "ROLE PATH: ", so diff says which
/// input is broken.
trace::Model LoadTrace(const std::string& path, int jobs = 0, bool progress = true,
                       const std::string& role = "");

/// Prints one line per difference and a summary; returns 1 when a --fail-on category differs.
int RunDiff(const DiffArgs& args, std::ostream& out);
/// Prints the mismatches (at most max_reports) and a summary; returns 1 when any was found.
int RunCheck(const CheckArgs& args, std::ostream& out);
/// Reads Flight Recorder dumps, prints what was read (ranks, entries, process groups) and with -o
/// writes them as a shardscope trace. Returns 0; bad dumps throw Error (exit 2).
int RunImportFr(const ImportFrArgs& args, std::ostream& out);
/// Writes Chrome Trace Event JSON; prints one summary line to `out` unless writing to stdout.
int RunExport(const ExportArgs& args, std::ostream& out);

}  // namespace shardscope::app
