#include <filesystem>
#include <ostream>
#include <utility>
#include <vector>

#include "cli_output.hpp"
#include "shardscope/error.hpp"
#include "shardscope/trace/check.hpp"
#include "shardscope/trace/flight_recorder.hpp"
#include "shardscope/trace/importers.hpp"
#include "trace_tools.hpp"

namespace shardscope::app {

int RunCheck(const CheckArgs& args, std::ostream& out) {
  if (args.max_reports < 0)
    throw InvalidInput("--max-reports: " + std::to_string(args.max_reports) + " is negative");
  trace::CheckResult result;
  std::error_code ec;
  if (!args.path.empty() && std::filesystem::exists(args.path, ec) &&
      trace::ImporterFor(args.path) == "flight_recorder") {
    // Flight Recorder dumps are checked one at a time, never held whole (the same result and
    // warnings as reading them into a model first).
    std::vector<trace::Diagnostic> diagnostics;
    RunWithProgress(args.path, !args.json, [&](trace::ReadProgress& counters) {
      result =
          trace::CheckFlightRecorder({args.path}, {.jobs = args.jobs, .progress = &counters}, diagnostics);
    });
    PrintLoadWarnings(diagnostics, "");
  } else {
    trace::Model model = LoadTrace(args.path, args.jobs, !args.json);
    result = trace::CheckTrace(model);
    KeepUntilExit(std::move(model));
  }
  if (args.json) {
    out << DumpJson(trace::CheckJson(result, args.max_reports)) << "\n";
  } else {
    out << trace::FormatCheckText(result, args.max_reports);
  }
  return result.Clean() ? 0 : 1;
}

}  // namespace shardscope::app
