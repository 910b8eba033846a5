#include <filesystem>
#include <iostream>
#include <ostream>

#include "shardscope/error.hpp"
#include "shardscope/trace/diff.hpp"
#include "shardscope/trace/reader.hpp"
#include "trace_tools.hpp"

namespace shardscope::app {

trace::Model LoadTrace(const std::string& path, int jobs) {
  std::error_code ec;
  if (path.empty()) throw InvalidInput("missing trace path");
  if (!std::filesystem::exists(path, ec)) throw InvalidInput(path + ": no such trace file or directory");
  trace::Model model = std::filesystem::is_directory(path, ec) ? trace::ReadTraceDir(path, {.jobs = jobs})
                                                               : trace::ReadTraceFile(path);
  for (const auto& d : model.diagnostics) {
    std::cerr << "shardscope: warning: " << path << ": " << d.file
              << (d.line > 0 ? ":" + std::to_string(d.line) : "") << ": " << d.message << "\n";
  }
  return model;
}

int RunDiff(const DiffArgs& args, std::ostream& out) {
  trace::DiffOptions options = args.fail_on.empty() ? trace::DiffOptions{} : trace::ParseFailOn(args.fail_on);
  trace::Model baseline = LoadTrace(args.baseline, args.jobs);
  trace::Model candidate = LoadTrace(args.candidate, args.jobs);
  trace::DiffResult result = trace::DiffTraces(baseline, candidate, options);
  if (args.json) {
    out << trace::DiffJson(result).dump(2) << "\n";
  } else {
    out << trace::FormatDiffText(result);
  }
  return result.Failed() ? 1 : 0;
}

}  // namespace shardscope::app
