// `shardscope` command line: the only file that includes CLI11 (it is slow to compile). Each
// subcommand fills a plain option struct (commands.hpp) and calls its Run* function; errors
// become one `shardscope: <message>` line on stderr with exit 2 (bad input) or 3 (internal).

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <iostream>
#include <string>

#include "bench.hpp"
#include "bench_trace_cost.hpp"
#include "commands.hpp"
#include "import_commands.hpp"
#include "run_commands.hpp"
#include "shardscope/error.hpp"
#include "terminal_output.hpp"
#include "trace_tools.hpp"
#include "triage_commands.hpp"

namespace shardscope::app {
namespace {

constexpr int kUsageExit = 2;
constexpr int kInternalExit = 3;

std::string OneLine(std::string message) {
  std::replace(message.begin(), message.end(), '\n', ' ');
  while (!message.empty() && message.back() == ' ') message.pop_back();
  return Printable(message);
}

// Option values are validated when parsed, so a bad number or an empty path is one usage error
// naming the flag (exit 2) before anything runs.
const CLI::Validator kNonEmpty(
    [](std::string& value) { return value.empty() ? std::string("must not be empty") : std::string(); },
    "NONEMPTY");
CLI::Validator AtLeast(int64_t min) {
  return CLI::Validator(
      [min](std::string& value) {
        int64_t n = 0;
        if (!CLI::detail::lexical_cast(value, n) || n < min)
          return "'" + value + "' must be an integer >= " + std::to_string(min);
        return std::string();
      },
      ">=" + std::to_string(min));
}

void AddMeshOptions(CLI::App* cmd, MeshArgs& mesh) {
  cmd->add_option("--mesh", mesh.mesh, "device mesh shape, e.g. 2x2x2 (row-major ranks)")->required();
  cmd->add_option("--mesh-names", mesh.mesh_names, "mesh dim names, e.g. dp,tp (used in output)");
  cmd->add_option("--flatten", mesh.flatten,
                  "flattened sub-meshes that merged collectives may use: none, all, or e.g. '0,1;1,2' "
                  "(dims by index or name)")
      ->capture_default_str();
}

void AddTensorOptions(CLI::App* cmd, TensorArgs& tensor) {
  cmd->add_option("--shape", tensor.shape, "global tensor shape, e.g. 8x8x8 (0 extents allowed)")->required();
  cmd->add_option("--dtype", tensor.dtype, "f32, f64, f16, bf16, i32 or i64")->capture_default_str();
  cmd->add_option("--chunking", tensor.chunking,
                  "how an extent splits over ranks: torch (torch.chunk, DTensor) or physicsnemo "
                  "(ShardTensor compute_split_shapes)")
      ->capture_default_str();
}

// A command about one tensor on one mesh (plan, layout): the mesh and tensor options.
CLI::App* AddTensorCommand(CLI::App& app, const std::string& name, const std::string& description,
                           MeshArgs& mesh, TensorArgs& tensor) {
  CLI::App* cmd = app.add_subcommand(name, description);
  AddMeshOptions(cmd, mesh);
  AddTensorOptions(cmd, tensor);
  return cmd;
}

// --ranks (whose layouts to print) and --json of plan and layout.
void AddRankListOptions(CLI::App* cmd, std::string& ranks, bool& json) {
  cmd->add_option("--ranks", ranks,
                  "whose layouts to print: auto (every rank up to 1024, else 0-7 and the last), all, or "
                  "ranks and ranges like 0-3,8")
      ->capture_default_str();
  cmd->add_flag("--json", json, "print one JSON object (schema: docs/cli.md)");
}

// The footer of a command's --help: "Example:" or "Examples:", then each command line indented.
void Examples(CLI::App* cmd, std::initializer_list<const char*> lines) {
  std::string text = lines.size() == 1 ? "Example:" : "Examples:";
  for (const char* line : lines) text += std::string("\n  ") + line;
  cmd->footer(text);
}

void AddPlanCommand(CLI::App& app, PlanArgs& args) {
  CLI::App* cmd =
      AddTensorCommand(app, "plan", "Plan a redistribute: planner, notation, collectives, costs, layouts",
                       args.mesh, args.tensor);
  cmd->add_option("--from", args.from, "source placements, e.g. 'S(0),S(0),R' (one per mesh dim)")
      ->required();
  cmd->add_option("--to", args.to, "destination placements, e.g. 'R,S(1),S(0)'")->required();
  cmd->add_option("--src-order", args.src_order,
                  "source shard order 'tensor_dim:mesh_dim,...;...', e.g. '0:1,0'");
  cmd->add_option("--dst-order", args.dst_order, "destination shard order");
  cmd->add_option("--planner", args.planner, "auto (PyTorch's rule), greedy or graph")->capture_default_str();
  cmd->add_option("--devices-per-host", args.devices_per_host, "devices per host for the cost model")
      ->capture_default_str()
      ->check(AtLeast(1));
  cmd->add_flag("--no-optimize", args.no_optimize, "skip the flattening optimizer");
  cmd->add_flag("--backward", args.backward, "plan the gradient redistribute of this forward one");
  cmd->add_flag("--allow-partial-target", args.allow_partial_target,
                "allow a new Partial target (R -> P), PyTorch's internal redistribute used by ops and "
                "imported dumps; the public DTensor.redistribute refuses it");
  cmd->add_option("--rank", args.rank, "whose plan to show (logical shapes are per rank)")
      ->capture_default_str();
  AddRankListOptions(cmd, args.ranks, args.json);
  Examples(
      cmd,
      {"shardscope plan --mesh 2x2x2 --shape 8x8x8 --from 'S(0),S(0),R' --to 'R,S(1),S(0)'",
       "shardscope plan --mesh 2x2 --mesh-names dp,tp --flatten all --shape 8x8 --from 'S(0),S(0)' --to R,R",
       "shardscope plan --mesh 2x2x2 --shape 8x8x8 --from 'S(0),S(0),S(0)' --src-order '0:1,0,2' --to "
       "'R,S(0),S(0)'",
       "shardscope plan --mesh 4 --shape 1024x1024 --from 'S(0)' --to R --backward --json"});
}

void AddLayoutCommand(CLI::App& app, LayoutArgs& args) {
  CLI::App* cmd =
      AddTensorCommand(app, "layout", "Show every rank's local shard: shape, global offset, index ranges",
                       args.mesh, args.tensor);
  cmd->add_option("--placements", args.placements, "placements, e.g. 'S(0),S(0)' or '_S(0, 2),S(0)'")
      ->required();
  cmd->add_option("--order", args.order, "shard order 'tensor_dim:mesh_dim,...;...', e.g. '0:1,0'");
  AddRankListOptions(cmd, args.ranks, args.json);
  Examples(cmd, {"shardscope layout --mesh 4x2 --shape 18x2 --placements 'S(0),S(0)'",
                 "shardscope layout --mesh 4x2 --shape 18x2 --placements 'S(0),S(0)' --order '0:1,0'",
                 "shardscope layout --mesh 4 --shape 5 --placements 'S(0)' --chunking physicsnemo --json"});
}

void AddEnvCommand(CLI::App& app, EnvArgs& args) {
  CLI::App* cmd = app.add_subcommand(
      "env", "List the SHARDSCOPE_* environment knobs: what each does, accepts, defaults to, is now");
  cmd->add_flag("--json", args.json, "print one JSON object (schema: docs/cli.md)");
  Examples(cmd, {"shardscope env", "SHARDSCOPE_BLOCK_CACHE_MIB=0 shardscope env --json"});
}

void AddRunCommand(CLI::App& app, RunArgs& args) {
  CLI::App* cmd =
      app.add_subcommand("run", "Execute a scenario for real, optionally writing a trace and verifying");
  cmd->add_option("scenario", args.scenario, "scenario file (JSON, schema: docs/scenario.md)")->required();
  cmd->add_option("--backend", args.backend,
                  "communication backend: local (threads), mpi (one process per rank, under mpirun), cuda "
                  "(virtual ranks as threads sharing one GPU) or nccl (one GPU per process, under mpirun)")
      ->capture_default_str();
  cmd->add_option("--ranks", args.ranks,
                  "number of ranks; must equal the mesh size (default: the mesh size)");
  cmd->add_option("--trace", args.trace_dir,
                  "write a trace (one rank-<R>.jsonl per rank) into this directory "
                  "(default: $SHARDSCOPE_TRACE when set)")
      ->check(kNonEmpty);
  cmd->add_flag("--verify", args.verify,
                "check every result against Distribute(X, dst) (full tensor for Partial)");
  cmd->add_option("--repeat", args.repeat, "run the steps this many times")
      ->capture_default_str()
      ->check(AtLeast(1));
  cmd->add_flag("--checksums", args.checksums, "record shard checksums before/after in the trace");
  cmd->add_flag("--force", args.force, "replace a trace already in the --trace directory (its rank files)");
  cmd->add_option("--timeout", args.timeout_s, "collective watchdog in seconds")->capture_default_str();
  Examples(cmd, {"shardscope run samples/healda_loop.json --trace /tmp/healda --verify",
                 "shardscope run samples/uneven_empty.json --verify --repeat 10",
                 "mpirun -np 4 shardscope run samples/tp_mlp.json --backend mpi --verify --trace /tmp/tp",
                 "shardscope run samples/fsdp_tp.json --backend cuda --verify"});
}

// --jobs of the commands that read traces: rank files parsed concurrently.
void AddJobsOption(CLI::App* cmd, int& jobs) {
  cmd->add_option("--jobs", jobs, "threads reading rank files (default 0: every core)")
      ->check(CLI::Range(0, 1024));
}

void AddShowCommand(CLI::App& app, ShowArgs& args) {
  CLI::App* cmd =
      app.add_subcommand("show", "Summarize a trace: notation, collectives, bytes, time, layouts");
  cmd->add_option("trace", args.path, "trace directory (rank-*.jsonl) or one rank file")->required();
  cmd->add_flag("--json", args.json, "print one JSON object");
  AddJobsOption(cmd, args.jobs);
  Examples(cmd, {"shardscope show /tmp/healda"});
}

void AddBenchCommand(CLI::App& app, BenchPlanArgs& args, CLI::App*& bench_plan) {
  CLI::App* bench = app.add_subcommand("bench", "Benchmark programs that print figures");
  bench->require_subcommand(1);
  Examples(bench, {"shardscope bench plan"});
  bench_plan =
      bench->add_subcommand("plan", "Planning cost: greedy, graph (2-D..4-D meshes), plan cache hit");
  bench_plan->add_option("--repetitions", args.repetitions, "timed batches per case (median reported)")
      ->capture_default_str()
      ->check(AtLeast(1));
  Examples(bench_plan, {"shardscope bench plan"});
}

void AddBenchCommOptions(CLI::App* cmd, BenchCommArgs& args) {
  cmd->add_option("--ranks", args.ranks, "ranks (threads of the local backend)")
      ->capture_default_str()
      ->check(AtLeast(1));
  cmd->add_option("--sizes", args.sizes, "per-rank sizes, e.g. 64K,1M,16M")->capture_default_str();
  cmd->add_option("--iterations", args.iterations, "timed iterations per size (0: by size)")
      ->capture_default_str()
      ->check(AtLeast(0));
  cmd->add_option(
         "--backend", args.backend,
         "backend: local, mpi under mpirun (local figures beside), cuda (virtual ranks on one GPU) or "
         "nccl under mpirun (one GPU per process; figures from CUDA events)")
      ->capture_default_str();
}

void AddTraceToolCommands(CLI::App& app, DiffArgs& diff, CheckArgs& check, ExportArgs& exp) {
  CLI::App* d =
      app.add_subcommand("diff", "Compare two traces: plans, collectives, bytes, shapes, cost, ops, time");
  d->add_option("baseline", diff.baseline, "baseline trace directory (rank-*.jsonl) or rank file")
      ->required();
  d->add_option("candidate", diff.candidate, "candidate trace directory or rank file")->required();
  d->add_option(
       "--fail-on", diff.fail_on,
       "what fails (exit 1): plan,collectives,bytes,shapes,cost,ops,time:N%,all (default: all = every "
       "category but time)")
      ->check(kNonEmpty);
  d->add_flag("--json", diff.json, "print one JSON object (schema: docs/trace-tools.md)");
  AddJobsOption(d, diff.jobs);
  Examples(d, {"shardscope diff samples/ci/golden /tmp/candidate --fail-on plan"});
  CLI::App* c =
      app.add_subcommand("check", "Cross-rank consistency of a multi-rank trace (Flight Recorder classes)");
  c->add_option("trace", check.path, "trace directory (rank-*.jsonl) or Flight Recorder dump directory")
      ->required();
  c->add_option("--max-reports", check.max_reports, "mismatches to print (all are counted)")
      ->capture_default_str()
      ->check(AtLeast(0));
  c->add_flag("--json", check.json, "print one JSON object (schema: docs/trace-tools.md)");
  AddJobsOption(c, check.jobs);
  Examples(c, {"shardscope check /tmp/healda", "shardscope check /tmp/fr_dumps"});
  CLI::App* e = app.add_subcommand("export", "Export a trace for Perfetto / chrome://tracing");
  e->add_option("trace", exp.path, "trace directory (rank-*.jsonl) or rank file")->required();
  e->add_option("--format", exp.format, "output format (chrome: Chrome Trace Event JSON)")
      ->capture_default_str();
  e->add_option("-o,--output", exp.output, "output file, - for stdout")->required()->check(kNonEmpty);
  AddJobsOption(e, exp.jobs);
  Examples(e, {"shardscope export --format chrome /tmp/healda -o healda.json"});
}

// `import fr`: the `import` parent holds one subcommand per foreign record format.
CLI::App* AddImportFrCommand(CLI::App* import_cmd, ImportFrArgs& args) {
  CLI::App* fr = import_cmd->add_subcommand(
      "fr", "Read NCCL Flight Recorder dumps (pickle or JSON, one file per rank) into a trace");
  fr->add_option("paths", args.paths, "dump directories or files; a file name ends in its rank")->required();
  fr->add_option("-o,--output", args.output, "write the trace (rank-<R>.jsonl files) into this directory");
  fr->add_flag("--json", args.json, "print what was read as one JSON object");
  fr->add_flag("--force", args.force, "replace a trace already in the -o directory (its rank files)");
  Examples(fr, {"shardscope import fr /tmp/fr_dumps -o /tmp/fr_trace", "shardscope check /tmp/fr_dumps"});
  return fr;
}

// `import kineto`: PyTorch profiler traces, one per rank.
CLI::App* AddImportKinetoCommand(CLI::App* import_cmd, ImportKinetoArgs& args) {
  CLI::App* cmd = import_cmd->add_subcommand(
      "kineto",
      "Read PyTorch profiler (Kineto) traces (.json or .json.gz, one per rank) and match their collectives");
  cmd->add_option("paths", args.paths, "trace files and/or directories of them")->required();
  cmd->add_option("-o,--output", args.output, "write the trace (rank-<R>.jsonl files) into this directory");
  cmd->add_flag("--json", args.json, "print one JSON object (schema: docs/kineto.md)");
  cmd->add_flag("--force", args.force, "replace a trace already in the -o directory (its rank files)");
  Examples(cmd, {"shardscope import kineto /tmp/profiler_traces",
                 "shardscope import kineto rank-0.pt.trace.json.gz "
                 "rank-1.pt.trace.json.gz --json"});
  return cmd;
}

// `import debugmode` under the `import` parent (other importers add siblings).
CLI::App* AddImportDebugModeCommand(CLI::App* import_cmd, ImportDebugModeArgs& args) {
  CLI::App* cmd = import_cmd->add_subcommand("debugmode",
                                             "Import a PyTorch DebugMode dump: re-plan, judge and replay its "
                                             "redistributes, judge and compute its ops");
  cmd->add_option("dump", args.dump, "DebugMode.debug_string() text or DebugMode.save_logs JSON")->required();
  AddMeshOptions(cmd, args.mesh);
  cmd->add_option("-o,--output", args.trace_dir, "write the replayed trace into this directory");
  cmd->add_flag("--force", args.force, "replace a trace already in the -o directory (its rank files)");
  cmd->add_flag("--json", args.json, "print one JSON object (schema: docs/import.md)");
  cmd->add_flag(
      "--strict", args.strict,
      "exit 1 when any redistribute's verdict is not 'same' or any op's is differs or not_computed");
  cmd->add_option("--max-replay-elements", args.max_replay_elements,
                  "replay only tensors with at most this many elements (larger ones are judged only)")
      ->capture_default_str();
  Examples(cmd, {"shardscope import debugmode samples/pytorch/debugmode_tp.txt --mesh 4x2 --mesh-names dp,tp "
                 "-o /tmp/tp",
                 "shardscope import debugmode dump.json --mesh 8 --json --strict"});
  return cmd;
}

CLI::App* AddBenchLoadCommand(CLI::App* bench, BenchLoadArgs& args) {
  CLI::App* cmd = bench->add_subcommand(
      "load", "Trace loading: MB/s, events/s, peak RSS, bytes/event; fast vs reference reader");
  cmd->add_option("trace", args.path, "trace directory (rank-*.jsonl) or rank file")->required();
  AddJobsOption(cmd, args.jobs);
  cmd->add_option("--repetitions", args.repetitions, "loads per reader (median reported)")
      ->capture_default_str();
  Examples(cmd, {"shardscope bench load samples/ci/golden"});
  return cmd;
}

CLI::App* AddBenchImportCommand(CLI::App* bench, BenchImportArgs& args) {
  CLI::App* cmd = bench->add_subcommand("import",
                                        "Importing Flight Recorder dumps, DebugMode logs and Kineto traces: "
                                        "time vs Python, bytes/event, peak RSS");
  cmd->add_option("--repo", args.repo, "repository root (its generators and sample log)")
      ->capture_default_str();
  cmd->add_option("--work-dir", args.work_dir, "directory for the generated inputs")->capture_default_str();
  cmd->add_option("--ranks", args.ranks, "Flight Recorder world sizes, comma-separated")
      ->capture_default_str();
  cmd->add_option("--seqs", args.seqs, "entries per rank")->capture_default_str();
  cmd->add_option("--lines", args.lines, "DebugMode log lengths, comma-separated")->capture_default_str();
  cmd->add_option("--kineto-steps", args.kineto_steps,
                  "profiler steps of the Kineto traces (2,500 small ops each, ~0.47 MB), comma-separated")
      ->capture_default_str();
  cmd->add_flag("!--no-json", args.json, "skip the JSON form of the dumps");
  cmd->add_flag("!--no-write", args.write, "skip import -o and show of the written traces");
  cmd->add_flag("--keep", args.keep, "keep the generated inputs");
  Examples(cmd, {"shardscope bench import --ranks 256 --lines 100000",
                 "shardscope bench import --ranks '' --lines '' --kineto-steps 400"});
  return cmd;
}

CLI::App* AddBenchTraceCommand(CLI::App* bench, BenchTraceArgs& args) {
  CLI::App* cmd =
      bench->add_subcommand("trace", "Trace writer cost per event: tracing on vs off, interleaved batches");
  cmd->add_option("--repetitions", args.repetitions, "batches of each (median, p10, p90)")
      ->capture_default_str();
  cmd->add_option("--redistributes", args.redistributes, "redistributes (5 events) per batch")
      ->capture_default_str();
  Examples(cmd, {"shardscope bench trace"});
  return cmd;
}

void AddTriageCommands(CLI::App& app, CLI::App* bench, TriageArgs& args, BenchTriageArgs& bench_args,
                       CLI::App*& bench_cmd) {
  CLI::App* cmd = app.add_subcommand(
      "triage", "Root cause of a hung or diverged job from Flight Recorder dumps: culprits, not victims");
  cmd->add_option("path", args.paths,
                  "dump directories or files (pickle or JSON), shardscope traces, PyTorch profiler "
                  "(Kineto) traces, DebugMode logs")
      ->required()
      ->check(kNonEmpty);
  cmd->add_option("--mesh", args.mesh,
                  "the device mesh as NAME=EXTENT,... (row-major), e.g. dp=8,tp=8: names "
                  "the mesh dim each process group spans");
  cmd->add_flag("--json", args.json, "print one JSON object (schema: docs/triage.md)");
  AddJobsOption(cmd, args.jobs);
  Examples(cmd, {"shardscope triage /tmp/fr_dumps", "shardscope triage /tmp/fr_dumps --mesh dp=8,tp=8 --json",
                 "shardscope triage /tmp/profiler_traces"});
  bench_cmd = bench->add_subcommand(
      "triage", "Triage over fault cases: precision/recall, time and peak RSS vs Python's pickle.load");
  bench_cmd->add_option("case", bench_args.cases, "case directories written by tests/trace/make_fr_faults.py")
      ->required();
  AddJobsOption(bench_cmd, bench_args.jobs);
  bench_cmd->add_option("--python", bench_args.python, "interpreter of the pickle.load baseline")
      ->capture_default_str();
  bench_cmd->add_flag("!--no-python", bench_args.python_baseline, "skip the pickle.load baseline");
  Examples(bench_cmd, {"shardscope bench triage /tmp/cases/*"});
}

// A missing or unknown command, or bench benchmark, is the usage and one line naming it (CLI11
// would only say "A subcommand is required"); false then.
bool KnownCommand(const CLI::App& app, const CLI::App& bench, int argc, char** argv) {
  constexpr const char* kCommands =
      "plan, layout, run, show, diff, check, triage, export, import, env or bench";
  if (argc < 2) {
    std::cerr << app.help() << "shardscope: missing command (expected " << kCommands << ")\n";
    return false;
  }
  const std::string first = argv[1];
  auto has = [](const CLI::App& parent, const std::string& name) {
    bool known = false;
    for (const CLI::App* sub : parent.get_subcommands({})) known = known || sub->get_name() == name;
    return known;
  };
  if ((first.empty() || first[0] != '-') && !has(app, first)) {
    std::cerr << app.help() << "shardscope: unknown command '" << Printable(first) << "' (expected "
              << kCommands << ")\n";
    return false;
  }
  if (first != "bench") return true;
  const std::string second = argc > 2 ? argv[2] : "";
  if (second == "-h" || second == "--help" || has(bench, second)) return true;
  std::cerr << "shardscope: bench: "
            << (second.empty() ? "missing benchmark" : "unknown benchmark '" + Printable(second) + "'")
            << " (expected plan, comm, redistribute, load, trace or triage)\n";
  return false;
}

// Every command's options and the subcommands whose parse Main checks.
struct Commands {
  PlanArgs plan;
  LayoutArgs layout;
  BenchPlanArgs bench_plan;
  RunArgs run;
  ShowArgs show;
  EnvArgs env;
  DiffArgs diff;
  CheckArgs check;
  ExportArgs export_;
  BenchCommArgs bench_comm, bench_redistribute;
  ImportFrArgs import_fr;
  ImportDebugModeArgs import_debugmode;
  ImportKinetoArgs import_kineto;
  CLI::App* import_kineto_cmd = nullptr;
  BenchLoadArgs bench_load;
  BenchTraceArgs bench_trace;
  BenchImportArgs bench_import;
  CLI::App* bench_import_cmd = nullptr;
  TriageArgs triage;
  BenchTriageArgs bench_triage;
  CLI::App* bench_triage_cmd = nullptr;
  CLI::App *bench_plan_cmd = nullptr, *bench_comm_cmd = nullptr, *bench_redistribute_cmd = nullptr,
           *bench_load_cmd = nullptr, *bench_trace_cmd = nullptr, *import_fr_cmd = nullptr,
           *import_debugmode_cmd = nullptr;
};

void AddCommands(CLI::App& app, Commands& c) {
  AddPlanCommand(app, c.plan);
  AddLayoutCommand(app, c.layout);
  AddBenchCommand(app, c.bench_plan, c.bench_plan_cmd);
  AddRunCommand(app, c.run);
  AddShowCommand(app, c.show);
  AddEnvCommand(app, c.env);
  AddTraceToolCommands(app, c.diff, c.check, c.export_);
  c.bench_redistribute.sizes = "64K,1M,16M,64M";
  CLI::App* import_cmd = app.add_subcommand("import", "Import other tools' records as shardscope traces");
  import_cmd->require_subcommand(1);
  c.import_fr_cmd = AddImportFrCommand(import_cmd, c.import_fr);
  CLI::App* bench = app.get_subcommand("bench");
  c.bench_comm_cmd = bench->add_subcommand("comm", "Collectives on the local backend: algbw/busbw vs memcpy");
  AddBenchCommOptions(c.bench_comm_cmd, c.bench_comm);
  c.bench_redistribute_cmd = bench->add_subcommand(
      "redistribute", "Whole redistributes: bandwidth vs memcpy, tracing cost, known vs negotiated shapes");
  AddBenchCommOptions(c.bench_redistribute_cmd, c.bench_redistribute);
  c.bench_redistribute_cmd
      ->add_option("--trace-groups", c.bench_redistribute.trace_groups,
                   "groups of interleaved traced/untraced blocks behind each 'trace cost' figure (its "
                   "interval narrows as 1/sqrt(groups))")
      ->capture_default_str()
      ->check(AtLeast(3));
  c.bench_redistribute_cmd->add_flag(
      "--calibrate", c.bench_redistribute.calibrate,
      "under each case, an A/A row: the same groups of blocks with tracing off in the traced ones, so the "
      "trace cost method's zero and scatter are printed beside its figures; and an A/B row: tracing off "
      "and every rank busy " +
          std::to_string(bench_cpu::kCalibrationWorkNs) +
          " ns after each redistribute of those blocks, what that much plain CPU costs the redistribute "
          "on this machine");
  c.import_debugmode_cmd = AddImportDebugModeCommand(import_cmd, c.import_debugmode);
  c.import_kineto_cmd = AddImportKinetoCommand(import_cmd, c.import_kineto);
  c.bench_load_cmd = AddBenchLoadCommand(bench, c.bench_load);
  c.bench_trace_cmd = AddBenchTraceCommand(bench, c.bench_trace);
  c.bench_import_cmd = AddBenchImportCommand(bench, c.bench_import);
  AddTriageCommands(app, bench, c.triage, c.bench_triage, c.bench_triage_cmd);
}

// Runs the parsed command; -1 when none was given.
int RunCommand(const CLI::App& app, Commands& c) {
  if (app.got_subcommand("plan")) return RunPlan(c.plan, std::cout);
  if (app.got_subcommand("layout")) return RunLayout(c.layout, std::cout);
  if (c.bench_plan_cmd != nullptr && c.bench_plan_cmd->parsed()) return RunBenchPlan(c.bench_plan, std::cout);
  if (c.bench_comm_cmd->parsed()) return RunBenchComm(c.bench_comm, std::cout);
  if (c.bench_redistribute_cmd->parsed()) return RunBenchRedistribute(c.bench_redistribute, std::cout);
  if (c.bench_load_cmd->parsed()) return RunBenchLoad(c.bench_load, std::cout);
  if (c.bench_trace_cmd->parsed()) return RunBenchTrace(c.bench_trace, std::cout);
  if (c.bench_import_cmd->parsed()) return RunBenchImport(c.bench_import, std::cout);
  if (c.bench_triage_cmd->parsed()) return RunBenchTriage(c.bench_triage, std::cout);
  if (app.got_subcommand("triage")) return RunTriage(c.triage, std::cout);
  if (app.got_subcommand("run")) return RunRun(c.run, std::cout);
  if (app.got_subcommand("show")) return RunShow(c.show, std::cout);
  if (app.got_subcommand("env")) return RunEnv(c.env, std::cout);
  if (app.got_subcommand("diff")) return RunDiff(c.diff, std::cout);
  if (app.got_subcommand("check")) return RunCheck(c.check, std::cout);
  if (app.got_subcommand("export")) return RunExport(c.export_, std::cout);
  if (c.import_fr_cmd->parsed()) return RunImportFr(c.import_fr, std::cout);
  if (c.import_debugmode_cmd->parsed()) return RunImportDebugMode(c.import_debugmode, std::cout);
  if (c.import_kineto_cmd->parsed()) return RunImportKineto(c.import_kineto, std::cout);
  return -1;
}

// Flushes standard output and says whether every write to it succeeded; prints the error
// otherwise. A report that never reached its reader (a full disk, a closed pipe, /dev/full) must not
// exit 0.
bool StandardOutputWritten() {
  std::cout.flush();
  errno = 0;
  const bool flushed = std::fflush(stdout) == 0;
  const int err = errno;
  if (flushed && !std::cout.fail() && std::ferror(stdout) == 0) return true;
  std::cerr << "shardscope: writing standard output failed"
            << (err != 0 ? std::string(": ") + std::strerror(err) : std::string())
            << " (the output is incomplete)\n";
  return false;
}

int Main(int argc, char** argv) {
  CLI::App app{"shardscope: plan, inspect and debug DTensor-style redistributions", "shardscope"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("shardscope ") + SHARDSCOPE_VERSION);
  app.footer(
      "Examples:\n"
      "  shardscope plan --mesh 2x2x2 --shape 8x8x8 --from 'S(0),S(0),R' --to 'R,S(1),S(0)'\n"
      "  shardscope layout --mesh 4x2 --shape 18x2 --placements 'S(0),S(0)'\n"
      "  shardscope run samples/healda_loop.json --trace /tmp/healda --verify\n"
      "  shardscope show /tmp/healda\n"
      "  shardscope bench plan\n"
      "Run 'shardscope <command> --help' for a command's options.");
  Commands commands;
  AddCommands(app, commands);
  if (!KnownCommand(app, *app.get_subcommand("bench"), argc, argv)) return kUsageExit;

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help
    std::cerr << "shardscope: " << OneLine(e.what()) << "\n";
    return kUsageExit;
  }

  try {
    if (int code = RunCommand(app, commands); code >= 0) return StandardOutputWritten() ? code : kUsageExit;
  } catch (const Error& e) {
    std::cerr << "shardscope: " << OneLine(e.what()) << "\n";
    return ExitCodeFor(e.code());
  } catch (const std::bad_alloc&) {
    // The run's memory estimate refuses what cannot fit; this is what slipped past it.
    std::cerr << "shardscope: out of memory (an allocation failed; the estimate checked before running "
                 "did not foresee it: use smaller tensors, or set SHARDSCOPE_MEMORY_LIMIT to the bytes "
                 "this process may use)\n";
    return kInternalExit;
  } catch (const std::exception& e) {
    std::cerr << "shardscope: internal error: " << OneLine(e.what()) << "\n";
    return kInternalExit;
  }
  std::cerr << "shardscope: no command given\n";
  return kUsageExit;
}

}  // namespace
}  // namespace shardscope::app

int main(int argc, char** argv) {
  // Under a file size limit (ulimit -f) a write past it fails with EFBIG, which the command reports
  // with the file's name (and an import leaves its -o directory as it was), instead of the kernel's
  // SIGXFSZ ending the process part way through a write.
  std::signal(SIGXFSZ, SIG_IGN);
  // Every line the CLI prints may carry text from files: escape control characters on the way out.
  shardscope::app::TerminalSafeBuf safe_out(std::cout.rdbuf());
  shardscope::app::TerminalSafeBuf safe_err(std::cerr.rdbuf());
  std::streambuf* out_buf = std::cout.rdbuf(&safe_out);
  std::streambuf* err_buf = std::cerr.rdbuf(&safe_err);
  const int rc = shardscope::app::Main(argc, argv);
  std::cout.flush();
  std::cerr.flush();
  std::cout.rdbuf(out_buf);
  std::cerr.rdbuf(err_buf);
  return rc;
}
