#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <ostream>
#include <sstream>

#include "cli_output.hpp"
#include "run_commands.hpp"
#include "shardscope/error.hpp"
#include "shardscope/knobs.hpp"
#include "shardscope/program/runner.hpp"
#include "shardscope/trace/session.hpp"
#include "shardscope/trace/writer.hpp"

namespace shardscope::app {
namespace {

std::string Collectives(const std::map<std::string, int64_t>& counts) {
  if (counts.empty()) return "none";
  std::string s;
  for (const auto& [kind, n] : counts) s += (s.empty() ? "" : " ") + kind + "x" + std::to_string(n);
  return s;
}

std::string Bytes(int64_t b) {
  std::ostringstream s;
  if (b >= (int64_t{1} << 20)) {
    s << std::fixed << std::setprecision(2) << static_cast<double>(b) / (1 << 20) << " MiB";
  } else if (b >= 1024) {
    s << std::fixed << std::setprecision(1) << static_cast<double>(b) / 1024 << " KiB";
  } else {
    s << b << " B";
  }
  return s.str();
}

// " rep 0" for the first repetition's rows, " reps 1-9999" for the row of every later one.
std::string RepLabel(const program::StepReport& s, int repeat) {
  if (repeat <= 1) return "";
  if (s.repetitions <= 1) return " rep " + std::to_string(s.repetition);
  return " reps " + std::to_string(s.repetition) + "-" + std::to_string(s.repetition + s.repetitions - 1);
}

// The run's options from the flags, checked: ranks, repeat, timeout and the trace directory
// (--trace, else $SHARDSCOPE_TRACE).
program::RunOptions RunOptionsOf(const RunArgs& args, const program::Scenario& scenario) {
  if (args.ranks != 0 && args.ranks != scenario.mesh.size()) {
    throw InvalidInput("--ranks: " + std::to_string(args.ranks) + " ranks given but the mesh " +
                       scenario.mesh.ToString() + " has " + std::to_string(scenario.mesh.size()));
  }
  if (args.repeat < 1) throw InvalidInput("--repeat: must be >= 1, got " + std::to_string(args.repeat));
  // One week bounds the watchdog: beyond it (1e10 s, inf) the deadline overflows the clock.
  constexpr double kMaxTimeoutSeconds = 7 * 24 * 3600;
  if (!(args.timeout_s >= 0.001 && args.timeout_s <= kMaxTimeoutSeconds)) {
    std::ostringstream value;
    value << args.timeout_s;
    throw InvalidInput("--timeout: '" + value.str() + "' must be between 0.001 and " +
                       std::to_string(static_cast<int>(kMaxTimeoutSeconds)) + " seconds (one week)");
  }
  program::RunOptions options;
  options.backend = args.backend;
  options.trace_dir = args.trace_dir.empty() ? KnobValue(knobs::TraceDir()).value_or("") : args.trace_dir;
  options.verify = args.verify;
  options.repeat = args.repeat;
  options.checksums = args.checksums;
  options.timeout = std::chrono::milliseconds(static_cast<int64_t>(args.timeout_s * 1000));
  if (isatty(STDERR_FILENO) != 0) {
    options.progress = [](int64_t done, int64_t total) {
      std::fprintf(stderr, "\r  running: %lld/%lld steps", static_cast<long long>(done),
                   static_cast<long long>(total));
      if (done == total) std::fprintf(stderr, "\r%60s\r", "");
    };
  }
  return options;
}

// "  step 2  op linear(a, w2) -> y: P(sum)" and its collectives line.
void PrintOpStep(const program::StepReport& s, const program::Scenario& scenario, const RunArgs& args,
                 std::ostream& out) {
  const engine::OpCall& call = *scenario.steps[s.step].op;
  std::string inputs;
  for (const auto& name : call.inputs)
    inputs += (inputs.empty() ? "" : ", ") + (name.empty() ? "None" : name);
  std::string outputs;
  size_t k = 0;
  for (const auto& name : call.outputs) {
    if (name.empty() || k >= s.op_outputs.size()) continue;
    outputs += (outputs.empty() ? "" : ", ") + name + ": " + engine::ConcatPlacements(s.op_outputs[k++]);
  }
  out << "  step " << s.step << RepLabel(s, args.repeat) << "  op " << s.op << "(" << inputs
      << (s.op_args.empty() ? "" : ", " + s.op_args) << ") -> " << outputs << "\n      "
      << s.implicit_redistributes << " implicit redistribute" << (s.implicit_redistributes == 1 ? "" : "s")
      << "; collectives: " << Collectives(s.collectives) << ", moved " << Bytes(s.bytes_moved) << ", "
      << std::fixed << std::setprecision(3) << s.seconds * 1e3 << " ms" << std::defaultfloat
      << (args.verify ? (s.verified ? ", verified" : ", NOT verified") : "") << "\n";
}

// "  step 0  x  S(0) -> R" with its plan and collectives lines.
void PrintRedistributeStep(const program::StepReport& s, const RunArgs& args, std::ostream& out) {
  out << "  step " << s.step << (s.backward ? " (backward)" : "") << RepLabel(s, args.repeat) << "  "
      << s.tensor << "  " << engine::FormatPlacements(s.src) << " -> " << engine::FormatPlacements(s.dst)
      << "\n      " << engine::PlannerName(s.plan.planner) << ": "
      << (s.plan.notation.empty() ? "(no-op)" : s.plan.notation)
      << (s.plan.internal_partial_target ? "  (internal redistribute to Partial: the public API refuses it)"
                                         : "")
      << "\n      collectives: " << Collectives(s.collectives) << ", moved " << Bytes(s.bytes_moved) << ", "
      << std::fixed << std::setprecision(3) << s.seconds * 1e3 << " ms" << std::defaultfloat
      << (args.verify ? (s.verified ? ", verified" : ", NOT verified") : "") << "\n";
}

}  // namespace

int RunRun(const RunArgs& args, std::ostream& out) {
  program::Scenario scenario = program::LoadScenario(args.scenario);
  const program::RunOptions options = RunOptionsOf(args, scenario);
  // Claimed before anything is written and held to the end: a second job in the same directory is
  // refused, and the old run's rank files go only with --force.
  std::unique_ptr<trace::TraceDirLock> trace_lock;
  if (!options.trace_dir.empty()) {
    const std::string flag = args.trace_dir.empty() ? std::string("$") + trace::kTraceEnvVar : "--trace";
    trace_lock = ClaimTraceDir(options.trace_dir.string(), flag, args.force);
  }
  program::RunReport report = program::RunScenario(scenario, options);
  if (report.rank != 0) return 0;  // under MPI every process ran; rank 0 speaks for the job

  // Executed counts: a row of the later repetitions stands for all of them.
  int64_t op_steps = 0, executed = 0;
  for (const auto& s : report.steps) {
    op_steps += s.op.empty() ? 0 : s.repetitions;
    executed += s.repetitions;
  }
  out << (op_steps > 0 ? "program " : "scenario ") << args.scenario << ": mesh " << scenario.mesh.ToString()
      << ", " << report.world << " ranks on the " << args.backend << " backend, ";
  if (op_steps > 0) {
    out << op_steps << " ops and " << executed - op_steps << " explicit redistributes\n";
  } else {
    out << executed << " redistributes\n";
  }
  for (const auto& s : report.steps) {
    if (s.op.empty()) {
      PrintRedistributeStep(s, args, out);
    } else {
      PrintOpStep(s, scenario, args, out);
    }
  }
  if ((args.backend == "mpi" || args.backend == "nccl") && report.world > 1) {
    // On one host every process reads the same CLOCK_MONOTONIC, so each offset is the estimate's
    // own error; across hosts it is the skew the merged timeline corrects.
    out << "clock offsets to rank 0 (min-RTT ping-pong of 50):";
    for (size_t r = 1; r < report.clock_offset_ns.size(); ++r) {
      out << " r" << r << " " << report.clock_offset_ns[r] << " ns (rtt " << report.clock_rtt_ns[r] << ")";
    }
    out << "\n";
  }
  out << "total " << std::fixed << std::setprecision(3) << report.seconds << " s" << std::defaultfloat
      << "\n";
  if (!options.trace_dir.empty()) out << "trace written to " << options.trace_dir.string() << "\n";
  return 0;
}

}  // namespace shardscope::app
