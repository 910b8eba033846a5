#include <ostream>

#include "cli_output.hpp"
#include "shardscope/error.hpp"
#include "shardscope/trace/check.hpp"
#include "trace_tools.hpp"

namespace shardscope::app {

int RunCheck(const CheckArgs& args, std::ostream& out) {
  if (args.max_reports < 0)
    throw InvalidInput("--max-reports: " + std::to_string(args.max_reports) + " is negative");
  trace::Model model = LoadTrace(args.path, args.jobs, !args.json);
  trace::CheckResult result = trace::CheckTrace(model);
  if (args.json) {
    out << DumpJson(trace::CheckJson(result, args.max_reports)) << "\n";
  } else {
    out << trace::FormatCheckText(result, args.max_reports);
  }
  return result.Clean() ? 0 : 1;
}

}  // namespace shardscope::app
