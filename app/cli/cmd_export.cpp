#include <fstream>
#include <ostream>

#include "shardscope/error.hpp"
#include "shardscope/trace/chrome_export.hpp"
#include "trace_tools.hpp"

namespace shardscope::app {

int RunExport(const ExportArgs& args, std::ostream& out) {
  if (args.format != "chrome")
    throw InvalidInput("--format: '" + args.format + "' is not supported (expected chrome)");
  if (args.output.empty()) throw InvalidInput("-o: missing output file (use - for stdout)");
  trace::Model model = LoadTrace(args.path, args.jobs);
  nlohmann::ordered_json doc = trace::ChromeTraceJson(model);
  // Strings are ASCII already (the exporter replaces anything else), so dump cannot throw on UTF-8.
  std::string text = doc.dump(-1, ' ', true);
  if (args.output == "-") {
    out << text << "\n";
    return 0;
  }
  std::ofstream file(args.output, std::ios::binary | std::ios::trunc);
  if (!file) throw InvalidInput("-o: cannot write '" + args.output + "'");
  file << text << "\n";
  file.close();
  if (!file) throw Error(ErrorCode::kInternal, "-o: writing '" + args.output + "' failed");
  out << "wrote " << doc["traceEvents"].size() << " events for " << model.ranks.size() << " ranks to "
      << args.output << " (open in https://ui.perfetto.dev or chrome://tracing)\n";
  return 0;
}

}  // namespace shardscope::app
