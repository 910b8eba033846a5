#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <ostream>

#include "shardscope/error.hpp"
#include "shardscope/trace/chrome_export.hpp"
#include "trace_tools.hpp"

namespace shardscope::app {
namespace {

// The output must not be the input: not the rank file read, nor any rank file name inside the
// trace directory read (that would add a rank to the trace or overwrite one).
void RefuseOutputOverInput(const std::string& input, const std::string& output) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path out(output);
  if (fs::exists(out, ec) && fs::equivalent(out, fs::path(input), ec)) {
    throw InvalidInput("-o: '" + output + "' is the trace being exported; choose another output file");
  }
  fs::path in_dir = fs::is_directory(input, ec) ? fs::path(input) : fs::path(input).parent_path();
  if (in_dir.empty()) in_dir = ".";
  fs::path out_dir = out.parent_path().empty() ? fs::path(".") : out.parent_path();
  const std::string name = out.filename().string();
  const bool rank_name =
      name.rfind("rank-", 0) == 0 && name.size() > 11 && name.compare(name.size() - 6, 6, ".jsonl") == 0;
  if (rank_name && fs::exists(out_dir, ec) && fs::equivalent(out_dir, in_dir, ec)) {
    throw InvalidInput(
        "-o: '" + output +
        "' is a rank file name inside the trace directory being exported; choose another output file");
  }
}

}  // namespace

int RunExport(const ExportArgs& args, std::ostream& out) {
  if (args.format != "chrome")
    throw InvalidInput("--format: '" + args.format + "' is not supported (expected chrome)");
  if (args.output.empty()) throw InvalidInput("-o: missing output file (use - for stdout)");
  if (args.output != "-") RefuseOutputOverInput(args.path, args.output);
  trace::Model model = LoadTrace(args.path, args.jobs);
  nlohmann::ordered_json doc = trace::ChromeTraceJson(model);
  // Strings are ASCII already (the exporter replaces anything else), so dump cannot throw on UTF-8.
  std::string text = doc.dump(-1, ' ', true);
  if (args.output == "-") {
    out << text << "\n";
    return 0;
  }
  // Written beside the target and renamed over it: a failed write never leaves half a file.
  const std::string temp = args.output + ".tmp-" + std::to_string(::getpid());
  std::ofstream file(temp, std::ios::binary | std::ios::trunc);
  if (!file) throw InvalidInput("-o: cannot write '" + args.output + "'");
  file << text << "\n";
  file.close();
  std::error_code ec;
  if (!file) {
    std::filesystem::remove(temp, ec);
    throw InvalidInput("-o: writing '" + args.output + "' failed (disk full?)");
  }
  std::filesystem::rename(temp, args.output, ec);
  if (ec) {
    std::filesystem::remove(temp, ec);
    throw InvalidInput("-o: cannot replace '" + args.output + "'");
  }
  out << "wrote " << doc["traceEvents"].size() << " events for " << model.ranks.size() << " ranks to "
      << args.output << " (open in https://ui.perfetto.dev or chrome://tracing)\n";
  return 0;
}

}  // namespace shardscope::app
