#include <ostream>

#include "cli_output.hpp"
#include "shardscope/error.hpp"
#include "shardscope/trace/diff.hpp"
#include "shardscope/trace/flight_recorder.hpp"
#include "shardscope/trace/reader.hpp"
#include "trace_tools.hpp"

namespace shardscope::app {

int RunDiff(const DiffArgs& args, std::ostream& out) {
  trace::DiffOptions options = args.fail_on.empty() ? trace::DiffOptions{} : trace::ParseFailOn(args.fail_on);
  trace::Model baseline = LoadTrace(args.baseline, args.jobs, !args.json, "baseline");
  trace::Model candidate = LoadTrace(args.candidate, args.jobs, !args.json, "candidate");
  trace::DiffResult result = trace::DiffTraces(baseline, candidate, options);
  if (args.json) {
    out << DumpJson(trace::DiffJson(result)) << "\n";
  } else {
    out << trace::FormatDiffText(result);
  }
  return result.Failed() ? 1 : 0;
}

}  // namespace shardscope::app
