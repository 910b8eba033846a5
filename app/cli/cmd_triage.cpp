// `shardscope triage PATH...` (the root cause of a hung or diverged job, docs/triage.md) and
// `shardscope bench triage CASE...` (precision and recall over generated fault cases, time and peak
// RSS beside Python's pickle.load of the same files, measured in the same run).

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <map>
#include <ostream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "child_process.hpp"
#include "import_commands.hpp"
#include "shardscope/engine/core/placement.hpp"
#include "shardscope/error.hpp"
#include "shardscope/files.hpp"
#include "shardscope/program/debugmode.hpp"
#include "shardscope/trace/flight_recorder.hpp"
#include "shardscope/trace/triage.hpp"
#include "triage_commands.hpp"

namespace shardscope::app {

namespace fs = std::filesystem;

namespace {

// A DebugMode log (DebugMode.debug_string() text or save_logs JSON), told from a shardscope trace
// or a dump by what its text holds.
bool IsDebugModeLog(const fs::path& p) {
  std::error_code ec;
  if (!fs::is_regular_file(p, ec) || trace::IsFlightRecorderDump(p)) return false;
  std::ifstream in(p, std::ios::binary);
  std::string head(1 << 16, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<size_t>(in.gcount()));
  return head.find("redistribute_input") != std::string::npos ||
         head.find("_c10d_functional") != std::string::npos;
}

// The log's collectives in order, each with the redistribute and op that issued it.
std::vector<trace::LoggedCollective> LoggedCollectives(const program::DebugModeDump& dump) {
  std::vector<trace::LoggedCollective> out;
  for (size_t i = 0; i < dump.redistributes.size(); ++i) {
    const program::DumpRedistribute& r = dump.redistributes[i];
    for (const program::DumpCollective& c : r.collectives) {
      trace::LoggedCollective lc;
      lc.group_name = c.group_name;
      trace::TriageIssuer& is = lc.issuer;
      is.redistribute_id = static_cast<int64_t>(i) + 1;  // the log's redistributes, counted from 1
      is.src = engine::FormatPlacements(r.src);
      is.dst = engine::FormatPlacements(r.dst);
      is.comm = c.kind;
      if (r.op >= 0 && static_cast<size_t>(r.op) < dump.ops.size()) {
        const program::DumpOp& op = dump.ops[static_cast<size_t>(r.op)];
        is.op =
            op.name + " (line " + std::to_string(op.line) + (op.module.empty() ? "" : ", " + op.module) + ")";
      }
      is.line = r.line;
      out.push_back(std::move(lc));
    }
  }
  return out;
}

}  // namespace

int RunTriage(const TriageArgs& args, std::ostream& out) {
  if (args.paths.empty()) throw InvalidInput("triage: give at least one dump directory, dump file or trace");
  if (args.jobs < 0) throw InvalidInput("--jobs: " + std::to_string(args.jobs) + " is negative");
  trace::TriageMesh mesh = trace::ParseTriageMesh(args.mesh);
  std::vector<fs::path> paths;
  std::vector<trace::LoggedCollective> log;
  for (const std::string& p : args.paths) {
    if (!IsDebugModeLog(p)) {
      paths.push_back(p);
      continue;
    }
    program::DebugModeDump dump = program::ParseDebugModeDump(ReadDebugModeText(p, "triage"));
    // Only an old dump prints its mesh ("DM(8)"); --mesh wins.
    if (mesh.shape.empty() && !dump.printed_mesh.empty()) {
      mesh.shape = dump.printed_mesh;
      for (size_t d = 0; d < mesh.shape.size(); ++d) mesh.names.push_back(std::to_string(d));
    }
    std::vector<trace::LoggedCollective> more = LoggedCollectives(dump);
    log.insert(log.end(), more.begin(), more.end());
  }
  if (paths.empty()) throw InvalidInput("triage: a DebugMode log names what ran; give the dumps beside it");
  trace::TriageResult result = trace::TriagePaths(paths, mesh, args.jobs);
  trace::NameIssuersFromLog(result, log);
  if (!mesh.shape.empty()) {
    int64_t total = 1;
    for (int64_t n : mesh.shape) total *= n;
    if (total != result.world)
      throw InvalidInput("--mesh: '" + args.mesh + "' has " + std::to_string(total) + " ranks, the " +
                         (result.profiler ? "profiler traces " : "dumps ") + std::to_string(result.world));
  }
  if (args.json)
    out << trace::TriageJson(result).dump(2) << "\n";
  else
    out << trace::FormatTriageText(result);
  return result.verdict == "clean" ? 0 : 1;
}

namespace {

struct Figure {
  bool ok = false;
  double seconds = 0;
  int64_t peak_kb = 0;
  std::string verdict, cls, error;
  std::vector<int64_t> culprits;
};

// Runs `fn` in a forked child; its wall time and peak RSS come back with what fn wrote.
template <typename Fn>
Figure InChild(Fn fn) {
  const ChildRun run = RunInChild(fn, "bench triage");
  Figure f;
  f.seconds = run.seconds;
  f.peak_kb = run.peak_rss / 1024;
  if (!run.Ok()) {
    f.error = run.output.empty() ? "child failed" : run.output;
    return f;
  }
  f.ok = true;
  auto j = nlohmann::json::parse(run.output, nullptr, false);
  if (j.is_object()) {
    f.verdict = j.value("verdict", "");
    f.cls = j["class"].is_string() ? j["class"].get<std::string>() : "";
    f.culprits = j["culprits"].get<std::vector<int64_t>>();
  }
  return f;
}

// Python's pickle.load of every dump file of `dir`, in one process (a child).
Figure PythonLoad(const std::string& python, const fs::path& dir) {
  const std::string code =
      "import os,pickle,re,sys\n"
      "d=sys.argv[1]\n"
      "for f in sorted(os.listdir(d)):\n"
      "  if re.search(r'\\d+(\\.pkl|\\.pickle)?$', f):\n"
      "    with open(os.path.join(d,f),'rb') as h: pickle.load(h)\n";
  const ChildRun run = RunCommand({python, "-c", code, dir.string()}, "bench triage");
  Figure f;
  f.seconds = run.seconds;
  f.peak_kb = run.peak_rss / 1024;
  f.ok = run.Ok();
  if (!f.ok) f.error = python + " failed (exit " + std::to_string(run.status) + ")";
  return f;
}

int64_t DumpBytes(const fs::path& dir) {
  int64_t total = 0;
  std::error_code ec;
  for (const auto& e : ListDirectory(dir, "bench triage")) {
    if (trace::FlightRecorderRankOfFileName(e.path().filename().string()) < 0 || !e.is_regular_file(ec))
      continue;
    const auto size = e.file_size(ec);
    if (!ec) total += static_cast<int64_t>(size);
  }
  return total;
}

std::string Fixed(double v, int digits) {
  std::ostringstream o;
  o << std::fixed << std::setprecision(digits) << v;
  return o.str();
}

}  // namespace

int RunBenchTriage(const BenchTriageArgs& args, std::ostream& out) {
  if (args.cases.empty())
    throw InvalidInput("bench triage: give case directories (tests/trace/make_fr_faults.py)");
  struct Row {
    std::string name;
    nlohmann::json expected;
    Figure triage, python;
    int64_t bytes = 0;
    int64_t tp = 0, fp = 0, fn = 0;
    bool class_ok = false;
  };
  std::vector<Row> rows;
  for (const std::string& c : args.cases) {
    fs::path dir(c);
    std::ifstream in(dir / "triage_expected.json");
    if (!in) throw InvalidInput("bench triage: " + (dir / "triage_expected.json").string() + " is missing");
    Row row;
    row.name = dir.filename().string();
    row.expected = nlohmann::json::parse(in, nullptr, false);
    if (!row.expected.is_object())
      throw InvalidInput("bench triage: " + (dir / "triage_expected.json").string() + " is not JSON");
    row.bytes = DumpBytes(dir);
    const int jobs = args.jobs;
    row.triage = InChild([&] { return trace::TriageJson(trace::TriagePaths({dir}, {}, jobs)).dump(); });
    if (!row.triage.ok) throw InvalidInput("bench triage: " + c + ": " + row.triage.error);
    std::set<int64_t> want;
    for (int64_t r : row.expected["culprits"]) want.insert(r);
    for (int64_t r : row.triage.culprits) (want.count(r) ? row.tp : row.fp)++;
    for (int64_t r : want)
      if (std::find(row.triage.culprits.begin(), row.triage.culprits.end(), r) == row.triage.culprits.end())
        ++row.fn;
    const std::string want_cls =
        row.expected["class"].is_string() ? row.expected["class"].get<std::string>() : "";
    row.class_ok = row.triage.cls == want_cls && row.triage.verdict == row.expected.value("verdict", "");
    if (args.python_baseline) {
      std::ifstream probe;
      bool pickle = false;
      for (const auto& e : ListDirectory(dir, "bench triage")) {
        if (trace::FlightRecorderRankOfFileName(e.path().filename().string()) < 0) continue;
        std::ifstream f(e.path(), std::ios::binary);
        pickle = f.get() == 0x80;
        break;
      }
      if (pickle) row.python = PythonLoad(args.python, dir);
    }
    rows.push_back(std::move(row));
  }
  out << "bench triage: " << rows.size() << " case(s); triage with "
      << (args.jobs ? std::to_string(args.jobs) : "all")
      << " thread(s), each case in a forked child; python: " << args.python
      << " pickle.load of the same files, one process\n";
  out << std::left << std::setw(22) << "case" << std::right << std::setw(7) << "ranks" << std::setw(9)
      << "entries" << std::setw(9) << "dump MB" << std::setw(11) << "verdict"
      << "  " << std::left << std::setw(20) << "class" << std::right << std::setw(4) << "TP" << std::setw(4)
      << "FP" << std::setw(4) << "FN" << std::setw(10) << "triage s" << std::setw(10) << "peak MB"
      << std::setw(10) << "pickle s" << std::setw(9) << "ratio" << std::setw(11) << "RSS/dump"
      << "\n";
  int64_t tp = 0, fp = 0, fn = 0, class_ok = 0;
  for (const Row& r : rows) {
    tp += r.tp, fp += r.fp, fn += r.fn, class_ok += r.class_ok;
    out << std::left << std::setw(22) << r.name << std::right << std::setw(7) << r.expected.value("world", 0)
        << std::setw(9) << r.expected.value("entries", 0) << std::setw(9) << Fixed(r.bytes / 1e6, 1)
        << std::setw(11) << r.triage.verdict << "  " << std::left << std::setw(20)
        << (r.triage.cls.empty() ? "-" : r.triage.cls) + (r.class_ok ? "" : "!") << std::right << std::setw(4)
        << r.tp << std::setw(4) << r.fp << std::setw(4) << r.fn << std::setw(10) << Fixed(r.triage.seconds, 2)
        << std::setw(10) << Fixed(r.triage.peak_kb / 1024.0, 1) << std::setw(10)
        << (r.python.ok ? Fixed(r.python.seconds, 2) : "-") << std::setw(9)
        << (r.python.ok ? Fixed(r.triage.seconds / r.python.seconds, 2) : "-") << std::setw(11)
        << (r.bytes ? Fixed(r.triage.peak_kb * 1024.0 / static_cast<double>(r.bytes), 2) : "-") << "\n";
  }
  const double precision = tp + fp ? static_cast<double>(tp) / static_cast<double>(tp + fp) : 1.0;
  const double recall = tp + fn ? static_cast<double>(tp) / static_cast<double>(tp + fn) : 1.0;
  out << "culprits: precision " << Fixed(precision, 3) << ", recall " << Fixed(recall, 3) << " (" << tp
      << " found, " << fp << " healthy ranks blamed, " << fn << " missed); class and verdict right in "
      << class_ok << " of " << rows.size() << " cases ('!' marks a wrong one)\n";
  out << "ratio = triage s / pickle s (below 1: triage, reading and analysis included, is faster than Python "
         "only unpickling); RSS/dump = triage peak RSS / dump bytes\n";
  return 0;
}

}  // namespace shardscope::app
