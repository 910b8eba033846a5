#include <ostream>
#include <utility>

#include "cli_output.hpp"
#include "shardscope/error.hpp"
#include "shardscope/trace/diff.hpp"
#include "shardscope/trace/flight_recorder.hpp"
#include "shardscope/trace/kineto_diff.hpp"
#include "shardscope/trace/reader.hpp"
#include "trace_tools.hpp"

namespace shardscope::app {

int RunDiff(const DiffArgs& args, std::ostream& out) {
  trace::DiffOptions options = args.fail_on.empty() ? trace::DiffOptions{} : trace::ParseFailOn(args.fail_on);
  trace::Model baseline = LoadTrace(args.baseline, args.jobs, !args.json, "baseline");
  trace::Model candidate = LoadTrace(args.candidate, args.jobs, !args.json, "candidate");
  // Two profiler runs have no redistributes to align: they are compared by step time and per
  // process group and kind of collective (docs/kineto.md, "Comparing two runs").
  const bool kineto = trace::IsKinetoModel(baseline) && trace::IsKinetoModel(candidate);
  trace::DiffResult result = kineto ? trace::DiffKineto(baseline, candidate, options)
                                    : trace::DiffTraces(baseline, candidate, options);
  // ... and collective by collective: which were added or removed, or changed size or dtype.
  const trace::KinetoCollectiveDiff collectives =
      kineto ? trace::DiffKinetoCollectives(baseline, candidate, options) : trace::KinetoCollectiveDiff{};
  const bool failed = result.Failed() || collectives.Failed();
  if (args.json) {
    nlohmann::json j = trace::DiffJson(result);
    if (kineto) {
      j["profiler_runs"] = true;
      j["collectives_one_by_one"] = trace::KinetoCollectiveDiffJson(collectives);
      j["failed"] = failed;
    }
    out << DumpJson(j) << "\n";
  } else {
    if (kineto)
      out << trace::FormatKinetoRuns(baseline, candidate) << trace::FormatKinetoCollectiveDiff(collectives);
    out << trace::FormatDiffText(result);
  }
  KeepUntilExit(std::move(baseline));
  KeepUntilExit(std::move(candidate));
  return failed ? 1 : 0;
}

}  // namespace shardscope::app
