// `shardscope bench trace`: the trace writer's cost per event (docs/contributing.md rule 17). Batches with
// tracing on (trace::Writer::Emit into a file, flushes included) and off (the same loop taking the
// tracing-off branch) alternate, so drifts of a shared machine hit both alike; the median and the
// 10th-90th percentile spread of each are printed, in wall-clock time and in the thread's CPU time
// (which a loaded machine inflates less: time spent waiting for a core is not counted). Both
// durability modes run: the background one (capture on the emitting thread, encoding and writing
// on the process's trace thread) and every-end (all of it on the emitting thread). Beside the
// emitting thread's cost, the process's CPU time over all on batches (every thread, so the
// background writer's encoding and write(2) too) per event is the price in CPU.

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "bench.hpp"
#include "bench_cpu.hpp"
#include "shardscope/engine/comm/local_backend.hpp"
#include "shardscope/engine/core/layout.hpp"
#include "shardscope/engine/core/tensor.hpp"
#include "shardscope/engine/exec/executor.hpp"
#include "shardscope/engine/exec/trace_events.hpp"
#include "shardscope/engine/plan/planner.hpp"
#include "shardscope/error.hpp"
#include "shardscope/trace/reader.hpp"
#include "shardscope/trace/session.hpp"
#include "shardscope/trace/writer.hpp"

namespace shardscope::app {
namespace {

// One redistribute as the engine records it on rank 0 of an 8-rank 2x4 mesh: begin, one step
// (begin, all_gather over mesh dim 1, end) and end, i.e. five events.
struct Redistribute {
  trace::RedistributeBegin begin;
  trace::StepBegin step_begin;
  trace::Collective collective;
  trace::StepEnd step_end;
  trace::RedistributeEnd end;
};

// The events as the engine's conversion makes them (engine/exec/trace_events.hpp): S(0),S(1) ->
// S(0),R of a 1024x4096 f32 tensor, one all_gather over mesh dim 1, seen from rank 0.
Redistribute Sample() {
  const engine::Mesh mesh({2, 4});
  auto spec = [&](const char* placements) {
    return engine::MakeSpec(mesh, engine::ParsePlacements(placements, "bench"), std::nullopt, {1024, 4096},
                            engine::DType::kF32, engine::ChunkRule::kTorch, {}, "bench");
  };
  const engine::TensorSpec src = spec("S(0),S(1)"), dst = spec("S(0),R");
  const engine::Plan plan = engine::MakePlan(src, dst, 0, {});
  if (plan.optimized.size() != 1) throw InternalError("bench trace: the sample plan is no longer one step");
  const engine::Transform& t = plan.optimized[0];
  const engine::RankLayout before = engine::ComputeRankLayout(src, 0),
                           after = engine::ComputeRankLayout(dst, 0);
  int64_t shard_bytes = engine::DTypeSize(src.dtype);
  for (int64_t e : before.local_shape) shard_bytes *= e;
  const std::vector<int64_t> group = mesh.Group(0, t.mesh_dims);
  std::vector<int64_t> bytes;  // all_gather: the whole shard to and from every other member
  for (int64_t peer : group) bytes.push_back(peer == 0 ? 0 : shard_bytes);
  Redistribute r;
  r.begin = engine::TraceBegin(src, dst, plan);
  r.begin.Mutable().tensor = "act";
  r.step_begin = engine::TraceStepBegin(0, t, before);
  r.collective = engine::TraceCollective(0, engine::CommKindName(t.comm), t.mesh_dims, group, src.dtype,
                                         bytes, bytes, false);
  r.step_end = engine::TraceStepEnd(0, after);
  return r;
}

double ThreadCpuNs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

struct Elapsed {
  double wall_ns = 0, cpu_ns = 0;
};

// The five events as templates (trace::EventTemplate), emitted with only their ids and times set:
// how the executor captures a redistribute it has traced before on the same thread.
struct Templates {
  trace::EventTemplate begin, step_begin, collective, step_end, end;
};

Templates MakeTemplates(const Redistribute& r) {
  auto make = [](const auto& e) { return std::make_shared<const trace::Event>(e); };
  return {make(r.begin), make(r.step_begin), make(r.collective), make(r.step_end), make(r.end)};
}

// Emits `count` redistributes (5 events each) through `writer`, whole events copied from `r` or,
// given `templates`, as templates; takes the off branch when `writer` is null. Returns the elapsed
// wall-clock and thread CPU nanoseconds.
Elapsed Batch(trace::Writer* writer, Redistribute& r, const Templates* templates, int64_t first_id,
              int count) {
  const double cpu_start = ThreadCpuNs();
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < count; ++i) {
    const int64_t id = first_id + i;
    if (writer != nullptr && templates != nullptr) {
      trace::TemplateFields f;
      f.id = id, f.t_ns = f.end_ns = trace::NowNs();
      f.tensor = r.begin.tensor();
      writer->Emit(templates->begin, f);
      writer->Emit(templates->step_begin, f);
      writer->Emit(templates->collective, f);
      writer->Emit(templates->step_end, f);
      writer->Emit(templates->end, f);
    } else if (writer != nullptr) {
      const int64_t t = trace::NowNs();
      r.begin.id = id, r.begin.t_ns = t;
      writer->Emit(r.begin);
      r.step_begin.redistribute_id = id, r.step_begin.t_ns = t;
      writer->Emit(r.step_begin);
      r.collective.redistribute_id = id, r.collective.start_ns = t, r.collective.end_ns = t;
      writer->Emit(r.collective);
      r.step_end.redistribute_id = id, r.step_end.t_ns = t;
      writer->Emit(r.step_end);
      r.end.id = id, r.end.t_ns = t;
      writer->Emit(r.end);
    }
  }
  const double wall =
      std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
  return {wall, ThreadCpuNs() - cpu_start};
}

// Per-event figures of one durability mode: the emitting thread's on/off batches, and the whole
// process's CPU (the background writer thread included) per traced event.
struct ModeResult {
  std::vector<double> on_ns, off_ns, on_cpu, off_cpu;
  double process_cpu_ns = 0;
  double file_bytes = 0;
};

ModeResult RunMode(const BenchTraceArgs& args, trace::Durability durability, bool templated,
                   const std::filesystem::path& dir) {
  Redistribute r = Sample();
  const Templates templates = MakeTemplates(r);
  const Templates* t = templated ? &templates : nullptr;
  ModeResult m;
  const double events = 5.0 * args.redistributes;
  trace::Header header;
  header.world = 8;
  header.mesh_shape = {2, 4};
  header.mesh_dim_names = {"dp", "tp"};
  header.backend = "local";
  {
    trace::Writer writer(dir, header, {}, durability);
    Batch(&writer, r, t, 0, args.redistributes);  // warm-up: buffers, page cache
    writer.Flush();
    int64_t next_id = args.redistributes;
    double off_thread_cpu = 0;
    const double process_start = bench_cpu::ProcessCpuSeconds() * 1e9;
    for (int rep = 0; rep < args.repetitions; ++rep) {
      const Elapsed on = Batch(&writer, r, t, next_id, args.redistributes);
      next_id += args.redistributes;
      const Elapsed off = Batch(nullptr, r, t, 0, args.redistributes);
      off_thread_cpu += off.cpu_ns;
      m.on_ns.push_back(on.wall_ns / events), m.on_cpu.push_back(on.cpu_ns / events);
      m.off_ns.push_back(off.wall_ns / events), m.off_cpu.push_back(off.cpu_ns / events);
    }
    writer.Close();  // what the background thread still had to write counts too
    m.process_cpu_ns =
        (bench_cpu::ProcessCpuSeconds() * 1e9 - process_start - off_thread_cpu) / (events * args.repetitions);
  }
  m.file_bytes = static_cast<double>(std::filesystem::file_size(dir / trace::RankFileName(0))) /
                 (events * (args.repetitions + 1));
  std::filesystem::remove_all(dir);
  return m;
}

void PrintMode(const char* name, const ModeResult& m, std::ostream& out) {
  char line[256];
  for (auto [row, v] : {std::pair<const char*, const std::vector<double>*>{"on", &m.on_ns},
                        {"off", &m.off_ns},
                        {"on (cpu)", &m.on_cpu},
                        {"off (cpu)", &m.off_cpu}}) {
    std::snprintf(line, sizeof line, "%-12s %-12s %10.0f %10.0f %10.0f\n", name, row,
                  bench_cpu::Quantile(*v, 0.5), bench_cpu::Quantile(*v, 0.1), bench_cpu::Quantile(*v, 0.9));
    out << line;
  }
  std::snprintf(line, sizeof line,
                "%s: on - off: %.0f ns per event on the emitting thread (cpu: %.0f ns); process cpu, every "
                "thread: %.0f ns per event\n",
                name, bench_cpu::Quantile(m.on_ns, 0.5) - bench_cpu::Quantile(m.off_ns, 0.5),
                bench_cpu::Quantile(m.on_cpu, 0.5) - bench_cpu::Quantile(m.off_cpu, 0.5), m.process_cpu_ns);
  out << line;
}

// The executor's side of tracing: redistributes on a 1-rank mesh (no peer to wait for, so the
// thread's CPU time is this rank's own work), batches traced into a background writer alternating
// with untraced ones. Their difference is what tracing costs a rank per redistribute: building
// the events in the executor plus capturing them (the encoding and write(2) run on the background
// thread, counted in the process line).
struct EngineCost {
  std::vector<double> on_cpu, off_cpu;     // ns per redistribute, thread CPU
  double process_on = 0, process_off = 0;  // ns per redistribute, process CPU (every thread)
  double events = 0;                       // trace events per redistribute
};

EngineCost RunEngine(const BenchTraceArgs& args, const std::filesystem::path& dir) {
  auto spec = [](const char* placements) {
    return engine::MakeSpec(engine::Mesh({1}), engine::ParsePlacements(placements, "bench"), std::nullopt,
                            {64, 16}, engine::DType::kF32, engine::ChunkRule::kTorch, {}, "bench");
  };
  const engine::TensorSpec src = spec("P(sum)"), dst = spec("S(0)");
  EngineCost cost;
  engine::LocalWorld::Run(1, [&](engine::Communicator& comm, int64_t rank) {
    const engine::Plan plan = engine::MakePlan(src, dst, rank, {});
    const engine::LocalTensor in(engine::ComputeRankLayout(src, rank).local_shape, src.dtype);
    trace::TraceSession session(dir);
    engine::ExecuteOptions traced, plain;
    traced.trace = session.WriterFor(rank, trace::MakeHeader(rank, 1, {1}, {}, "local"));
    traced.tensor_name = plain.tensor_name = "act";
    int64_t id = 0;
    auto batch = [&](engine::ExecuteOptions& options, double* process) {
      const double cpu = ThreadCpuNs(), process_start = bench_cpu::ProcessCpuSeconds();
      for (int i = 0; i < args.redistributes; ++i) {
        options.trace_id = id++;
        engine::Redistribute(comm, rank, in, src, dst, plan, options);
      }
      *process += (bench_cpu::ProcessCpuSeconds() - process_start) * 1e9 / args.redistributes;
      return (ThreadCpuNs() - cpu) / args.redistributes;
    };
    double warm = 0;
    batch(traced, &warm);
    batch(plain, &warm);
    for (int rep = 0; rep < args.repetitions; ++rep) {
      cost.on_cpu.push_back(batch(traced, &cost.process_on));
      cost.off_cpu.push_back(batch(plain, &cost.process_off));
    }
    const double close_start = bench_cpu::ProcessCpuSeconds();
    session.Close();  // what the background thread had not written yet
    cost.process_on += (bench_cpu::ProcessCpuSeconds() - close_start) * 1e9 / args.redistributes;
  });
  cost.process_on /= args.repetitions, cost.process_off /= args.repetitions;
  cost.events =
      static_cast<double>(trace::ReadTraceFile(dir / trace::RankFileName(0)).ranks[0].events.size()) /
      (static_cast<double>(args.redistributes) * (args.repetitions + 1));
  std::filesystem::remove_all(dir);
  return cost;
}

}  // namespace

int RunBenchTrace(const BenchTraceArgs& args, std::ostream& out) {
  if (args.repetitions < 3 || args.repetitions > 1001)
    throw InvalidInput("--repetitions: " + std::to_string(args.repetitions) + " is outside [3, 1001]");
  if (args.redistributes < 1 || args.redistributes > 1000000)
    throw InvalidInput("--redistributes: " + std::to_string(args.redistributes) + " is outside [1, 1000000]");
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("shardscope_bench_trace_" + std::to_string(::getpid()));
  const ModeResult templated = RunMode(args, trace::Durability::kBackground, true, dir);
  const ModeResult background = RunMode(args, trace::Durability::kBackground, false, dir);
  const ModeResult every_end = RunMode(args, trace::Durability::kEveryEnd, false, dir);
  char line[256];
  std::snprintf(
      line, sizeof line,
      "bench trace: %d interleaved on/off batches of %d redistributes (5 events each), ns per event\n",
      args.repetitions, args.redistributes);
  out << line
      << "template = the events captured as templates plus their ids and times (what the executor does for a "
         "redistribute it traced before on the thread), handed to the background writer thread at each "
         "redistribute end;\nbackground = the same with whole events copied;\nevery-end = encoded and "
         "written (write(2)) on the emitting thread at each "
         "redistribute end; process cpu counts every thread, the background writer included\n";
  std::snprintf(line, sizeof line, "%-12s %-12s %10s %10s %10s\n", "durability", "tracing", "median", "p10",
                "p90");
  out << line;
  PrintMode("template", templated, out);
  PrintMode("background", background, out);
  PrintMode("every-end", every_end, out);
  std::snprintf(line, sizeof line,
                "%.0f bytes per event on disk (format v%d) for whole events, %.0f for template captures (a "
                "repeated redistribute is one redistribute_repeat line)\n",
                background.file_bytes, trace::kDefaultVersion, templated.file_bytes);
  out << line;
  const EngineCost engine_cost = RunEngine(args, dir);
  std::snprintf(
      line, sizeof line,
      "engine: a traced P(sum)->S(0) redistribute on a 1-rank mesh (%.0f events) costs its thread "
      "%.0f ns more CPU than an untraced one (median; p10-p90 of traced %.0f-%.0f, untraced %.0f-%.0f "
      "ns)\n",
      engine_cost.events,
      bench_cpu::Quantile(engine_cost.on_cpu, 0.5) - bench_cpu::Quantile(engine_cost.off_cpu, 0.5),
      bench_cpu::Quantile(engine_cost.on_cpu, 0.1), bench_cpu::Quantile(engine_cost.on_cpu, 0.9),
      bench_cpu::Quantile(engine_cost.off_cpu, 0.1), bench_cpu::Quantile(engine_cost.off_cpu, 0.9));
  out << line;
  std::snprintf(line, sizeof line,
                "engine: process cpu, every thread (the background writer included): %.0f ns more per "
                "redistribute (mean)\n",
                engine_cost.process_on - engine_cost.process_off);
  out << line;
  return 0;
}

}  // namespace shardscope::app
