// `shardscope bench import`: importing other tools' records as figures (docs/contributing.md rule 17). The
// inputs are made by the repository's generators (tests/trace/make_fr_dumps.py for Flight Recorder
// dumps, the docs/import.md recipe for DebugMode logs, tests/trace/make_kineto_traces.py for profiler
// traces); every tool runs as a child process whose
// wall time and peak RSS (wait4) are its own, beside Python reading the same files in the same run.

#include <cstdio>
#include <filesystem>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "bench.hpp"
#include "child_process.hpp"
#include "shardscope/error.hpp"
#include "shardscope/files.hpp"
#include "shardscope/trace/reader.hpp"

namespace shardscope::app {
namespace {

namespace fs = std::filesystem;

using Child = ChildRun;

// Runs `command` under /bin/sh, its output discarded; wall time and the child's peak RSS.
Child RunChild(const std::string& command) {
  return RunCommand({"/bin/sh", "-c", command + " >/dev/null"}, "bench import");
}

Child MustRun(const std::string& command, bool may_find_problems = false) {
  Child c = RunChild(command);
  if (c.status != 0 && !(may_find_problems && c.status == 1))
    throw InvalidInput("bench import: '" + command + "' exited with status " + std::to_string(c.status));
  return c;
}

int64_t BytesUnder(const fs::path& p) {
  std::error_code ec;
  if (!fs::is_directory(p, ec)) {
    const auto size = fs::file_size(p, ec);
    return ec ? 0 : static_cast<int64_t>(size);
  }
  int64_t bytes = 0;
  for (const auto& e : ListDirectory(p, "bench import")) {
    if (!e.is_regular_file(ec)) continue;
    const auto size = e.file_size(ec);
    if (!ec) bytes += static_cast<int64_t>(size);
  }
  return bytes;
}

std::string Quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::vector<int64_t> ParseCounts(const std::string& text, const char* option) {
  std::vector<int64_t> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (item.empty() || item.find_first_not_of("0123456789") != std::string::npos || item.size() > 9)
      throw InvalidInput(std::string(option) + ": '" + item + "' is not a positive count");
    out.push_back(std::stoll(item));
    if (out.back() == 0) throw InvalidInput(std::string(option) + ": counts must be positive");
  }
  return out;
}

class Table {
 public:
  explicit Table(std::ostream& out) : out_(out) {
    Line("%-48s %9s %9s %9s %8s %9s %9s %9s %9s\n", "case", "input MB", "time s", "cpu s", "vs py", "peak MB",
         "peak/in", "disk B/ev", "peak B/ev");
  }
  // One tool on one input: time against Python's, peak RSS against the input and per event.
  void Row(const std::string& name, int64_t input, int64_t events, const Child& c, double python_s,
           int64_t out_bytes) {
    Line("%-48s %9.1f %9.2f %9.2f %7.2fx %9.0f %9.2f %9.0f %9.0f\n", name.c_str(), input / 1e6, c.seconds,
         c.cpu_seconds, python_s > 0 ? c.seconds / python_s : 0.0, c.peak_rss / 1e6,
         static_cast<double>(c.peak_rss) / static_cast<double>(std::max<int64_t>(1, input)),
         static_cast<double>(out_bytes > 0 ? out_bytes : input) /
             static_cast<double>(std::max<int64_t>(1, events)),
         static_cast<double>(c.peak_rss) / static_cast<double>(std::max<int64_t>(1, events)));
  }

 private:
  template <typename... A>
  void Line(const char* format, A... a) {
    char line[512];
    std::snprintf(line, sizeof line, format, a...);
    out_ << line;
  }
  std::ostream& out_;
};

// The trace an import wrote: its size against the input and per event, the share of its lines
// the readers' fast path takes, then show, check and diff (of the trace with itself) as child
// processes in events/s, beside Python's json.loads of every line of the same files in this run.
// The events of a trace and the lines each reader path took, counted by reading it in a child
// process (the model's memory would otherwise count in every later child's peak RSS).
struct TraceCounts {
  int64_t events = 0, lines_fast = 0, lines_reference = 0;
};
TraceCounts CountInChild(const fs::path& trace) {
  const ChildRun run = RunInChild(
      [&] {
        trace::ReadProgress progress;
        const trace::Model model = trace::ReadTraceDir(trace, {.progress = &progress});
        int64_t events = 0;
        for (const trace::RankTrace& r : model.ranks) events += static_cast<int64_t>(r.events.size());
        return std::to_string(events) + " " + std::to_string(progress.lines_fast) + " " +
               std::to_string(progress.lines_reference);
      },
      "bench import");
  TraceCounts c;
  std::istringstream in(run.output);
  if (!run.Ok() || !(in >> c.events >> c.lines_fast >> c.lines_reference))
    throw InternalError("bench import: counting the trace's events failed: " + run.output);
  return c;
}

void TraceRows(Table& table, std::ostream& out, const std::string& tool, const std::string& name,
               const fs::path& trace, int64_t input, const Child& imported) {
  const int64_t written = BytesUnder(trace);
  const TraceCounts counts = CountInChild(trace);
  const int64_t events = counts.events;
  struct {
    int64_t lines_fast, lines_reference;
  } progress{counts.lines_fast, counts.lines_reference};
  table.Row(name + ": import -o", input, events, imported, 0, written);
  const Child py = MustRun(
      "python3 -c \"import json, os, sys\nd = sys.argv[1]\nfor n in sorted(os.listdir(d)):\n"
      "    with open(os.path.join(d, n), 'rb') as f:\n        for line in f: json.loads(line)\" " +
      Quote(trace.string()));
  table.Row(name + ": python json.loads of the trace", written, events, py, py.seconds, 0);
  const std::string t = Quote(trace.string());
  const Child show = MustRun(tool + " show " + t, true);
  const Child check = MustRun(tool + " check " + t, true);
  const Child diff = MustRun(tool + " diff " + t + " " + t, true);
  table.Row(name + ": show of that trace", written, events, show, py.seconds, 0);
  table.Row(name + ": check of that trace", written, events, check, py.seconds, 0);
  table.Row(name + ": diff of that trace with itself", written, events, diff, py.seconds, 0);
  const int64_t lines = progress.lines_fast + progress.lines_reference;
  // Events per second of wall time and per CPU second (user + system, over every thread).
  auto rate = [&](double seconds, int times) {
    return static_cast<double>(times * events) / 1e6 / std::max(1e-9, seconds);
  };
  char line[640];
  std::snprintf(
      line, sizeof line,
      "%s: trace %.2fx the input's bytes, %.0f B/event, %lld events, %.1f%% of %lld lines on the fast "
      "path\n  M events/s (wall | per CPU second): show %.2f | %.2f, check %.2f | %.2f, diff %.2f | %.2f "
      "(reads it twice), python json.loads %.2f | %.2f\n",
      name.c_str(), static_cast<double>(written) / static_cast<double>(std::max<int64_t>(1, input)),
      static_cast<double>(written) / static_cast<double>(std::max<int64_t>(1, events)),
      static_cast<long long>(events),
      100.0 * static_cast<double>(progress.lines_fast) / static_cast<double>(std::max<int64_t>(1, lines)),
      static_cast<long long>(lines), rate(show.seconds, 1), rate(show.cpu_seconds, 1), rate(check.seconds, 1),
      rate(check.cpu_seconds, 1), rate(diff.seconds, 2), rate(diff.cpu_seconds, 2), rate(py.seconds, 1),
      rate(py.cpu_seconds, 1));
  out << line;
}

}  // namespace

int RunBenchImport(const BenchImportArgs& args, std::ostream& out) {
  const fs::path repo = args.repo;
  const fs::path gen = repo / "tests/trace/make_fr_dumps.py";
  const fs::path sample = repo / "samples/pytorch/debugmode_tp.txt";
  if (!fs::exists(gen) || !fs::exists(sample))
    throw InvalidInput("--repo: '" + args.repo +
                       "' lacks tests/trace/make_fr_dumps.py or samples/pytorch/debugmode_tp.txt");
  const std::vector<int64_t> ranks = ParseCounts(args.ranks, "--ranks");
  const std::vector<int64_t> lines = ParseCounts(args.lines, "--lines");
  const std::vector<int64_t> kineto_steps = ParseCounts(args.kineto_steps, "--kineto-steps");
  const fs::path kineto_gen = repo / "tests/trace/make_kineto_traces.py";
  if (!kineto_steps.empty() && !fs::exists(kineto_gen))
    throw InvalidInput("--repo: '" + args.repo + "' lacks tests/trace/make_kineto_traces.py");
  const fs::path work = args.work_dir;
  fs::create_directories(work);
  std::error_code ec;
  const std::string self = fs::read_symlink("/proc/self/exe", ec).string();
  if (ec) throw InternalError("bench import: cannot find this executable: " + ec.message());
  const std::string tool = Quote(self);

  out << "bench import: every row one child process (wall time, CPU time = user + system, peak RSS by "
         "wait4); "
         "'vs py' is its wall time over "
         "Python reading the same files in this run; disk B/ev the input's (or written trace's) bytes per "
         "event, peak B/ev peak RSS per event\n";
  Table table(out);
  if (args.write) {
    // The baseline: a trace of our own generator (scripts/gen_synthetic_trace.py, v2) of 512,000
    // events (256 ranks x 400 redistributes x 5), read by the same tools in this run.
    const fs::path syn = work / "synthetic_256.trace";
    fs::remove_all(syn);
    const fs::path syn_gen = repo / "scripts/gen_synthetic_trace.py";
    const Child made = MustRun("python3 " + Quote(syn_gen.string()) +
                               " --mesh 16x16 --redistributes 400 --out " + Quote(syn.string()));
    TraceRows(table, out, tool, "own generator 256x400 (baseline)", syn, BytesUnder(syn), made);
    fs::remove_all(syn);
  }
  for (int64_t n : ranks) {
    for (const char* format : {"pickle", "json"}) {
      if (std::string(format) == "json" && !args.json) continue;
      const fs::path dir = work / ("fr_" + std::to_string(n) + "_" + format);
      const fs::path trace = work / ("fr_" + std::to_string(n) + "_" + format + ".trace");
      fs::remove_all(dir);
      fs::remove_all(trace);
      MustRun("python3 " + Quote(gen.string()) + " clean " + Quote(dir.string()) + " --ranks " +
              std::to_string(n) + " --seqs " + std::to_string(args.seqs) + " --format " + format);
      const int64_t input = BytesUnder(dir);
      const int64_t events = n * args.seqs;
      const std::string load = std::string(format) == "json" ? "json.load(f)" : "pickle.load(f)";
      const std::string mode = std::string(format) == "json" ? "'r'" : "'rb'";
      const Child py = MustRun(
          "python3 -c \"import json, os, pickle, sys\nd = sys.argv[1]\nfor n in sorted(os.listdir(d)):\n"
          "    with open(os.path.join(d, n), " +
          mode + ") as f: " + load + "\" " + Quote(dir.string()));
      const std::string name = "FR " + std::to_string(n) + "x" + std::to_string(args.seqs) + " " + format;
      table.Row(name + ": python " + load.substr(0, load.find('(')), input, events, py, py.seconds, 0);
      table.Row(name + ": check", input, events, MustRun(tool + " check " + Quote(dir.string()), true),
                py.seconds, 0);
      if (!args.write) continue;
      const Child imported =
          MustRun(tool + " import fr " + Quote(dir.string()) + " -o " + Quote(trace.string()));
      TraceRows(table, out, tool, name + " fr", trace, input, imported);
      fs::remove_all(trace);
      if (!args.keep) fs::remove_all(dir);
    }
  }
  for (int64_t n : lines) {
    const fs::path log = work / ("debugmode_" + std::to_string(n) + ".txt");
    const fs::path trace = work / ("debugmode_" + std::to_string(n) + ".trace");
    fs::remove_all(trace);
    // docs/import.md's recipe: the sample log repeated to n lines.
    MustRun(
        "python3 -c \"import itertools, sys; L = open(sys.argv[1]).read().splitlines(); "
        "sys.stdout.write(chr(10).join(itertools.islice(itertools.cycle(L), int(sys.argv[2]))) + "
        "chr(10))\" " +
        Quote(sample.string()) + " " + std::to_string(n) + " > " + Quote(log.string()) + " #");
    const int64_t input = BytesUnder(log);
    const Child py =
        MustRun("python3 -c \"import sys; sum(len(l) for l in open(sys.argv[1]))\" " + Quote(log.string()));
    const std::string name = "DebugMode " + std::to_string(n) + " lines";
    table.Row(name + ": python read lines", input, n, py, py.seconds, 0);
    const std::string import =
        tool + " import debugmode " + Quote(log.string()) + " --mesh 4x2 --flatten all";
    table.Row(name + ": import (judge)", input, n, MustRun(import, true), py.seconds, 0);
    if (args.write) {
      const Child imported = MustRun(import + " -o " + Quote(trace.string()), true);
      TraceRows(table, out, tool, name, trace, input, imported);
      fs::remove_all(trace);
    }
    if (!args.keep) fs::remove(log);
  }
  for (int64_t steps : kineto_steps) {
    // One rank's profiler trace of `steps` steps, each with 2,500 small cpu_ops beside the
    // generator's collectives and kernels (docs/performance.md, "Kineto").
    const fs::path dir = work / ("kineto_" + std::to_string(steps));
    fs::remove_all(dir);
    MustRun("python3 " + Quote(kineto_gen.string()) + " " + Quote(dir.string()) + " --ranks 1 --steps " +
            std::to_string(steps) + " --pad-ops 2500");
    const int64_t input = BytesUnder(dir);
    const int64_t events = steps * 2500;
    const std::string name = "Kineto " + std::to_string(steps) + " steps";
    const Child py = MustRun(
        "python3 -c \"import json, os, sys\nd = sys.argv[1]\nfor n in sorted(os.listdir(d)):\n"
        "    with open(os.path.join(d, n), 'rb') as f: json.load(f)\" " +
        Quote(dir.string()));
    table.Row(name + ": python json.load", input, events, py, py.seconds, 0);
    const Child imported = MustRun(tool + " import kineto " + Quote(dir.string()) + " --json");
    table.Row(name + ": import kineto --json", input, events, imported, py.seconds, 0);
    if (args.write) {
      const fs::path trace = work / ("kineto_" + std::to_string(steps) + ".trace");
      fs::remove_all(trace);
      const Child written =
          MustRun(tool + " import kineto " + Quote(dir.string()) + " -o " + Quote(trace.string()));
      TraceRows(table, out, tool, name, trace, input, written);
      fs::remove_all(trace);
    }
    char line[160];
    std::snprintf(line, sizeof line, "%s: import kineto %.0f MB/s of JSON, json.load %.0f MB/s (%.1fx)\n",
                  name.c_str(), input / 1e6 / std::max(1e-9, imported.seconds),
                  input / 1e6 / std::max(1e-9, py.seconds), py.seconds / std::max(1e-9, imported.seconds));
    out << line;
    if (!args.keep) fs::remove_all(dir);
  }
  out << "per event: a Flight Recorder entry, a DebugMode log line, a Kineto trace's small op (2,500 a step, "
         "the step's few other events aside)\n";
  return 0;
}

}  // namespace shardscope::app
