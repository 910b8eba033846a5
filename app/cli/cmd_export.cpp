#include <ostream>

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
  nlohmann::ordered_json doc = trace::ChromeTraceJson(model);
  // Strings are ASCII already (the exporter replaces anything else); a stray byte is replaced anyway.
  std::string text = doc.dump(-1, ' ', true, nlohmann::json::error_handler_t::replace);
  text += "\n";
  if (args.output == "-") {
    out << text;  // main checks standard output's writes
    return 0;
  }
  WriteOutputFile(args.output, text, "-o");
  out << "wrote " << doc["traceEvents"].size() << " events for " << model.ranks.size() << " ranks to "
      << args.output << " (open in https://ui.perfetto.dev or chrome://tracing)\n";
  return 0;
}

}  // namespace shardscope::app
