// `shardscope` command line: the only file that includes CLI11 (it is slow to compile). Each
// subcommand fills a plain option struct (commands.hpp) and calls its Run* function; errors
// become one `shardscope: <message>` line on stderr with exit 2 (bad input) or 3 (internal).

#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>
#include <string>

#include "bench.hpp"
#include "commands.hpp"
#include "import_commands.hpp"
#include "run_commands.hpp"
#include "shardscope/error.hpp"
#include "terminal_output.hpp"
#include "trace_tools.hpp"

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

// --ranks (whose layouts to print) and --json of plan and layout.
void AddRankListOptions(CLI::App* cmd, std::string& ranks, bool& json) {
  cmd->add_option("--ranks", ranks,
                  "whose layouts to print: auto (every rank up to 1024, else 0-7 and the last), all, or "
                  "ranks and ranges like 0-3,8")
      ->capture_default_str();
  cmd->add_flag("--json", json, "print one JSON object (schema: docs/cli.md)");
}

void AddPlanCommand(CLI::App& app, PlanArgs& args) {
  CLI::App* cmd =
      app.add_subcommand("plan", "Plan a redistribute: planner, notation, collectives, costs, layouts");
  AddMeshOptions(cmd, args.mesh);
  AddTensorOptions(cmd, args.tensor);
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
  cmd->footer(
      "Examples:\n"
      "  shardscope plan --mesh 2x2x2 --shape 8x8x8 --from 'S(0),S(0),R' --to 'R,S(1),S(0)'\n"
      "  shardscope plan --mesh 2x2 --mesh-names dp,tp --flatten all --shape 8x8 --from 'S(0),S(0)' --to "
      "R,R\n"
      "  shardscope plan --mesh 2x2x2 --shape 8x8x8 --from 'S(0),S(0),S(0)' --src-order '0:1,0,2' --to "
      "'R,S(0),S(0)'\n"
      "  shardscope plan --mesh 4 --shape 1024x1024 --from 'S(0)' --to R --backward --json");
}

void AddLayoutCommand(CLI::App& app, LayoutArgs& args) {
  CLI::App* cmd =
      app.add_subcommand("layout", "Show every rank's local shard: shape, global offset, index ranges");
  AddMeshOptions(cmd, args.mesh);
  AddTensorOptions(cmd, args.tensor);
  cmd->add_option("--placements", args.placements, "placements, e.g. 'S(0),S(0)' or '_S(0, 2),S(0)'")
      ->required();
  cmd->add_option("--order", args.order, "shard order 'tensor_dim:mesh_dim,...;...', e.g. '0:1,0'");
  AddRankListOptions(cmd, args.ranks, args.json);
  cmd->footer(
      "Examples:\n"
      "  shardscope layout --mesh 4x2 --shape 18x2 --placements 'S(0),S(0)'\n"
      "  shardscope layout --mesh 4x2 --shape 18x2 --placements 'S(0),S(0)' --order '0:1,0'\n"
      "  shardscope layout --mesh 4 --shape 5 --placements 'S(0)' --chunking physicsnemo --json");
}

void AddEnvCommand(CLI::App& app, EnvArgs& args) {
  CLI::App* cmd = app.add_subcommand(
      "env", "List the SHARDSCOPE_* environment knobs: what each does, accepts, defaults to, is now");
  cmd->add_flag("--json", args.json, "print one JSON object (schema: docs/cli.md)");
  cmd->footer(
      "Examples:\n"
      "  shardscope env\n"
      "  SHARDSCOPE_BLOCK_CACHE_MIB=0 shardscope env --json");
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
  cmd->footer(
      "Examples:\n"
      "  shardscope run samples/healda_loop.json --trace /tmp/healda --verify\n"
      "  shardscope run samples/uneven_empty.json --verify --repeat 10\n"
      "  mpirun -np 4 shardscope run samples/tp_mlp.json --backend mpi --verify --trace /tmp/tp\n"
      "  shardscope run samples/fsdp_tp.json --backend cuda --verify");
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
  cmd->footer("Example:\n  shardscope show /tmp/healda");
}

void AddBenchCommand(CLI::App& app, BenchPlanArgs& args, CLI::App*& bench_plan) {
  CLI::App* bench = app.add_subcommand("bench", "Benchmark programs that print figures");
  bench->require_subcommand(1);
  bench->footer("Example:\n  shardscope bench plan");
  bench_plan =
      bench->add_subcommand("plan", "Planning cost: greedy, graph (2-D..4-D meshes), plan cache hit");
  bench_plan->add_option("--repetitions", args.repetitions, "timed batches per case (median reported)")
      ->capture_default_str()
      ->check(AtLeast(1));
  bench_plan->footer("Example:\n  shardscope bench plan");
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
  d->footer("Example:\n  shardscope diff samples/ci/golden /tmp/candidate --fail-on plan");
  CLI::App* c =
      app.add_subcommand("check", "Cross-rank consistency of a multi-rank trace (Flight Recorder classes)");
  c->add_option("trace", check.path, "trace directory (rank-*.jsonl) or Flight Recorder dump directory")
      ->required();
  c->add_option("--max-reports", check.max_reports, "mismatches to print (all are counted)")
      ->capture_default_str()
      ->check(AtLeast(0));
  c->add_flag("--json", check.json, "print one JSON object (schema: docs/trace-tools.md)");
  AddJobsOption(c, check.jobs);
  c->footer("Examples:\n  shardscope check /tmp/healda\n  shardscope check /tmp/fr_dumps");
  CLI::App* e = app.add_subcommand("export", "Export a trace for Perfetto / chrome://tracing");
  e->add_option("trace", exp.path, "trace directory (rank-*.jsonl) or rank file")->required();
  e->add_option("--format", exp.format, "output format (chrome: Chrome Trace Event JSON)")
      ->capture_default_str();
  e->add_option("-o,--output", exp.output, "output file, - for stdout")->required()->check(kNonEmpty);
  AddJobsOption(e, exp.jobs);
  e->footer("Example:\n  shardscope export --format chrome /tmp/healda -o healda.json");
}

// `import fr`: the `import` parent holds one subcommand per foreign record format.
CLI::App* AddImportFrCommand(CLI::App* import_cmd, ImportFrArgs& args) {
  CLI::App* fr = import_cmd->add_subcommand(
      "fr", "Read NCCL Flight Recorder dumps (pickle or JSON, one file per rank) into a trace");
  fr->add_option("paths", args.paths, "dump directories or files; a file name ends in its rank")->required();
  fr->add_option("-o,--output", args.output, "write the trace (rank-<R>.jsonl files) into this directory");
  fr->add_flag("--json", args.json, "print what was read as one JSON object");
  fr->footer(
      "Examples:\n"
      "  shardscope import fr /tmp/fr_dumps -o /tmp/fr_trace\n"
      "  shardscope check /tmp/fr_dumps");
  return fr;
}

// `import debugmode` under the `import` parent (other importers add siblings).
CLI::App* AddImportDebugModeCommand(CLI::App* import_cmd, ImportDebugModeArgs& args) {
  CLI::App* cmd = import_cmd->add_subcommand("debugmode",
                                             "Import a PyTorch DebugMode dump: re-plan, judge and replay its "
                                             "redistributes, judge and compute its ops");
  cmd->add_option("dump", args.dump, "DebugMode.debug_string() text or DebugMode.save_logs JSON")->required();
  AddMeshOptions(cmd, args.mesh);
  cmd->add_option("-o,--output", args.trace_dir, "write the replayed trace into this directory");
  cmd->add_flag("--json", args.json, "print one JSON object (schema: docs/import.md)");
  cmd->add_flag(
      "--strict", args.strict,
      "exit 1 when any redistribute's verdict is not 'same' or any op's is differs or not_computed");
  cmd->add_option("--max-replay-elements", args.max_replay_elements,
                  "replay only tensors with at most this many elements (larger ones are judged only)")
      ->capture_default_str();
  cmd->footer(
      "Examples:\n"
      "  shardscope import debugmode samples/pytorch/debugmode_tp.txt --mesh 4x2 --mesh-names dp,tp -o "
      "/tmp/tp\n"
      "  shardscope import debugmode dump.json --mesh 8 --json --strict");
  return cmd;
}

CLI::App* AddBenchLoadCommand(CLI::App* bench, BenchLoadArgs& args) {
  CLI::App* cmd = bench->add_subcommand(
      "load", "Trace loading: MB/s, events/s, peak RSS, bytes/event; fast vs reference reader");
  cmd->add_option("trace", args.path, "trace directory (rank-*.jsonl) or rank file")->required();
  AddJobsOption(cmd, args.jobs);
  cmd->add_option("--repetitions", args.repetitions, "loads per reader (median reported)")
      ->capture_default_str();
  cmd->footer("Example:\n  shardscope bench load samples/ci/golden");
  return cmd;
}

CLI::App* AddBenchTraceCommand(CLI::App* bench, BenchTraceArgs& args) {
  CLI::App* cmd =
      bench->add_subcommand("trace", "Trace writer cost per event: tracing on vs off, interleaved batches");
  cmd->add_option("--repetitions", args.repetitions, "batches of each (median, p10, p90)")
      ->capture_default_str();
  cmd->add_option("--redistributes", args.redistributes, "redistributes (5 events) per batch")
      ->capture_default_str();
  cmd->footer("Example:\n  shardscope bench trace");
  return cmd;
}

// A missing or unknown command, or bench benchmark, is the usage and one line naming it (CLI11
// would only say "A subcommand is required"); false then.
bool KnownCommand(const CLI::App& app, const CLI::App& bench, int argc, char** argv) {
  constexpr const char* kCommands = "plan, layout, run, show, diff, check, export, import, env or bench";
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
            << " (expected plan, comm, redistribute, load or trace)\n";
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
  PlanArgs plan_args;
  LayoutArgs layout_args;
  BenchPlanArgs bench_args;
  AddPlanCommand(app, plan_args);
  AddLayoutCommand(app, layout_args);
  CLI::App* bench_plan = nullptr;
  AddBenchCommand(app, bench_args, bench_plan);
  RunArgs run_args;
  ShowArgs show_args;
  AddRunCommand(app, run_args);
  AddShowCommand(app, show_args);
  EnvArgs env_args;
  AddEnvCommand(app, env_args);
  DiffArgs diff_args;
  CheckArgs check_args;
  ExportArgs export_args;
  AddTraceToolCommands(app, diff_args, check_args, export_args);
  BenchCommArgs comm_args;
  BenchCommArgs redist_args;
  redist_args.sizes = "64K,1M,16M,64M";
  CLI::App* import_cmd = app.add_subcommand("import", "Import other tools' records as shardscope traces");
  import_cmd->require_subcommand(1);
  ImportFrArgs import_fr_args;
  CLI::App* import_fr = AddImportFrCommand(import_cmd, import_fr_args);
  CLI::App* bench = app.get_subcommand("bench");
  CLI::App* bench_comm =
      bench->add_subcommand("comm", "Collectives on the local backend: algbw/busbw vs memcpy");
  AddBenchCommOptions(bench_comm, comm_args);
  CLI::App* bench_redist = bench->add_subcommand(
      "redistribute", "Whole redistributes: bandwidth vs memcpy, tracing cost, known vs negotiated shapes");
  AddBenchCommOptions(bench_redist, redist_args);
  ImportDebugModeArgs import_debugmode_args;
  CLI::App* import_debugmode = AddImportDebugModeCommand(import_cmd, import_debugmode_args);
  BenchLoadArgs load_args;
  CLI::App* bench_load = AddBenchLoadCommand(bench, load_args);
  BenchTraceArgs trace_args;
  CLI::App* bench_trace = AddBenchTraceCommand(bench, trace_args);
  if (!KnownCommand(app, *bench, argc, argv)) return kUsageExit;

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help
    std::cerr << "shardscope: " << OneLine(e.what()) << "\n";
    return kUsageExit;
  }

  try {
    if (app.got_subcommand("plan")) return RunPlan(plan_args, std::cout);
    if (app.got_subcommand("layout")) return RunLayout(layout_args, std::cout);
    if (bench_plan != nullptr && bench_plan->parsed()) return RunBenchPlan(bench_args, std::cout);
    if (bench_comm->parsed()) return RunBenchComm(comm_args, std::cout);
    if (bench_redist->parsed()) return RunBenchRedistribute(redist_args, std::cout);
    if (bench_load->parsed()) return RunBenchLoad(load_args, std::cout);
    if (bench_trace->parsed()) return RunBenchTrace(trace_args, std::cout);
    if (app.got_subcommand("run")) return RunRun(run_args, std::cout);
    if (app.got_subcommand("show")) return RunShow(show_args, std::cout);
    if (app.got_subcommand("env")) return RunEnv(env_args, std::cout);
    if (app.got_subcommand("diff")) return RunDiff(diff_args, std::cout);
    if (app.got_subcommand("check")) return RunCheck(check_args, std::cout);
    if (app.got_subcommand("export")) return RunExport(export_args, std::cout);
    if (import_fr->parsed()) return RunImportFr(import_fr_args, std::cout);
    if (import_debugmode->parsed()) return RunImportDebugMode(import_debugmode_args, std::cout);
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
