#include <functional>
#include <ostream>
#include <string_view>

#include "cli_output.hpp"
#include "shardscope/error.hpp"
#include "shardscope/trace/chrome_export.hpp"
#include "trace_tools.hpp"

namespace shardscope::app {

int RunExport(const ExportArgs& args, std::ostream& out) {
  if (args.format != "chrome")
    throw InvalidInput("--format: '" + args.format + "' is not supported (expected chrome)");
  if (args.output.empty()) throw InvalidInput("-o: missing output file (use - for stdout)");
  if (args.output != "-") RefuseOutputOverInputs({args.path}, args.output, "-o");
  trace::Model model = LoadTrace(args.path, args.jobs);
  // Streamed, one event at a time: memory is the model's plus a chunk, not the document's.
  // Strings are ASCII already (the exporter replaces anything else); a stray byte is replaced anyway.
  size_t events = 0;
  auto produce = [&](const std::function<void(std::string_view)>& write) {
    events = trace::WriteChromeTrace(model, write);
    write("\n");
  };
  if (args.output == "-") {
    produce([&](std::string_view piece) { out << piece; });  // main checks standard output's writes
    return 0;
  }
  WriteOutputFile(args.output, produce, "-o");
  out << "wrote " << events << " events for " << model.ranks.size() << " ranks to " << args.output
      << " (open in https://ui.perfetto.dev or chrome://tracing)\n";
  return 0;
}

}  // namespace shardscope::app
