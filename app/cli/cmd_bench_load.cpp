// `shardscope bench load DIR`: trace loading as figures (docs/contributing.md rule 17). Every configuration
// runs in a forked child so that its peak RSS is its own; the reference reader (nlohmann on one
// thread, the reader before the fast path) is measured in the same run on the same files.

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include "bench.hpp"
#include "child_process.hpp"
#include "shardscope/error.hpp"
#include "shardscope/files.hpp"
#include "shardscope/trace/importers.hpp"
#include "shardscope/trace/reader.hpp"

namespace shardscope::app {
namespace {

struct LoadFigure {
  double seconds = 0;
  int64_t events = 0;
  int64_t peak_rss = 0;     // bytes, the child's ru_maxrss
  int64_t model_bytes = 0;  // resident bytes the loaded model added
  int64_t skipped = 0;      // diagnostics
};

int64_t ResidentBytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * static_cast<int64_t>(sysconf(_SC_PAGESIZE));
}

// Loads `path` in a forked child and returns its figures; throws when the child fails.
LoadFigure MeasureInChild(const std::filesystem::path& path, const trace::ReadOptions& options) {
  const ChildRun run = RunInChild(
      [&] {
        LoadFigure f;
        int64_t before = ResidentBytes();
        auto start = std::chrono::steady_clock::now();
        // As show and the GUI read it: a shardscope trace, or another tool's records by their importer.
        trace::Model model = trace::ReadAnyTrace(path, options);
        f.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        for (const trace::RankTrace& r : model.ranks) f.events += static_cast<int64_t>(r.events.size());
        f.model_bytes = ResidentBytes() - before;
        f.skipped = static_cast<int64_t>(model.diagnostics.size());
        return std::string(reinterpret_cast<const char*>(&f), sizeof f);
      },
      "bench load");
  if (!run.Ok() || run.output.size() != sizeof(LoadFigure))
    throw InvalidInput("bench load: loading '" + path.string() + "' failed" +
                       (run.Ok() ? std::string() : ": " + run.output));
  LoadFigure f;
  std::memcpy(&f, run.output.data(), sizeof f);
  f.peak_rss = run.peak_rss;
  return f;
}

// The input's bytes: a shardscope trace's rank files, or every file of another tool's directory.
int64_t TraceBytes(const std::filesystem::path& path, bool shardscope) {
  std::error_code ec;
  if (!std::filesystem::is_directory(path, ec)) {
    const auto size = std::filesystem::file_size(path, ec);
    return ec ? 0 : static_cast<int64_t>(size);
  }
  int64_t bytes = 0;
  for (const auto& entry : ListDirectory(path, "bench load")) {
    if (shardscope ? entry.path().extension() != ".jsonl" : !entry.is_regular_file(ec)) continue;
    const auto size = entry.file_size(ec);
    if (!ec) bytes += static_cast<int64_t>(size);
  }
  return bytes;
}

}  // namespace

int RunBenchLoad(const BenchLoadArgs& args, std::ostream& out) {
  std::error_code ec;
  if (!std::filesystem::exists(args.path, ec))
    throw InvalidInput(args.path + ": no such trace file or directory");
  if (args.repetitions < 1 || args.repetitions > 100)
    throw InvalidInput("--repetitions: " + std::to_string(args.repetitions) + " is outside [1, 100]");
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int jobs = args.jobs > 0 ? args.jobs : cores;
  const std::string importer = trace::ImporterFor(args.path);
  const int64_t bytes = TraceBytes(args.path, importer == "shardscope");
  struct Config {
    std::string name;
    trace::ReadOptions options;
  };
  std::vector<Config> configs = {{"reference, 1 thread", {.jobs = 1, .fast = false}},
                                 {"fast, 1 thread", {.jobs = 1, .fast = true}}};
  if (jobs > 1)
    configs.push_back({"fast, " + std::to_string(jobs) + " threads", {.jobs = jobs, .fast = true}});

  char line[256];
  std::vector<LoadFigure> medians;
  for (const Config& c : configs) {
    std::vector<LoadFigure> runs;
    for (int r = 0; r < args.repetitions; ++r) runs.push_back(MeasureInChild(args.path, c.options));
    std::sort(runs.begin(), runs.end(),
              [](const LoadFigure& a, const LoadFigure& b) { return a.seconds < b.seconds; });
    medians.push_back(runs[runs.size() / 2]);
  }
  const LoadFigure& ref = medians.front();
  std::snprintf(line, sizeof line, "bench load %s (%s): %.1f MB, %lld events, %d cores, median of %d\n",
                args.path.c_str(), importer.c_str(), static_cast<double>(bytes) / 1e6,
                static_cast<long long>(ref.events), cores, args.repetitions);
  out << line;
  std::snprintf(line, sizeof line, "%-22s %9s %9s %12s %10s %9s %10s %10s %8s\n", "reader", "time s", "MB/s",
                "events/s", "peak MB", "peak/file", "model B/ev", "model/file", "speedup");
  out << line;
  for (size_t i = 0; i < configs.size(); ++i) {
    const LoadFigure& f = medians[i];
    std::snprintf(line, sizeof line, "%-22s %9.2f %9.1f %12.0f %10.0f %9.2f %10.0f %10.2f %7.1fx\n",
                  configs[i].name.c_str(), f.seconds, static_cast<double>(bytes) / 1e6 / f.seconds,
                  static_cast<double>(f.events) / f.seconds, static_cast<double>(f.peak_rss) / 1e6,
                  static_cast<double>(f.peak_rss) / static_cast<double>(std::max<int64_t>(1, bytes)),
                  static_cast<double>(f.model_bytes) / static_cast<double>(std::max<int64_t>(1, f.events)),
                  static_cast<double>(f.model_bytes) / static_cast<double>(std::max<int64_t>(1, bytes)),
                  ref.seconds / f.seconds);
    out << line;
  }
  if (ref.skipped > 0) out << "note: " << ref.skipped << " load diagnostics (see shardscope show)\n";
  out << "peak/file: peak resident bytes over the trace's bytes; model B/ev: resident bytes the loaded model "
         "adds, per event; model/file: those bytes over the trace's bytes\n";
  return 0;
}

}  // namespace shardscope::app
