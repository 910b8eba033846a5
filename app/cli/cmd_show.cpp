#include <filesystem>
#include <ostream>
#include <utility>

#include "cli_output.hpp"
#include "run_commands.hpp"
#include "shardscope/error.hpp"
#include "shardscope/trace/flight_recorder.hpp"
#include "shardscope/trace/summary.hpp"
#include "trace_tools.hpp"

namespace shardscope::app {

int RunShow(const ShowArgs& args, std::ostream& out) {
  trace::Model model = LoadTrace(args.path, args.jobs, !args.json);
  if (args.json) {
    out << DumpJson(trace::ShowJson(model)) << "\n";
  } else {
    out << trace::FormatShowText(model);
  }
  KeepUntilExit(std::move(model));
  return 0;
}

}  // namespace shardscope::app
