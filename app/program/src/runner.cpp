#include "shardscope/program/runner.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>

#include "schedule.hpp"
#include "shardscope/engine/comm/local_backend.hpp"
#include "shardscope/engine/comm/mpi_backend.hpp"
#include "shardscope/engine/comm/nccl_backend.hpp"
#include "shardscope/engine/core/layout.hpp"
#include "shardscope/engine/exec/executor.hpp"
#include "shardscope/engine/ops/op_executor.hpp"
#include "shardscope/engine/plan/planner.hpp"
#include "shardscope/error.hpp"
#include "shardscope/trace/session.hpp"
#include "shardscope/trace/writer.hpp"

namespace shardscope::program {
// The program layer speaks the engine's vocabulary (specs, placements, plans) throughout.
using namespace shardscope::engine;  // NOLINT(google-build-using-namespace)

namespace {

// What every rank's body reads (shared read-only between local-backend threads).
struct RunContext {
  const Scenario& scenario;
  const RunOptions& options;
  // The first repetition, then (with repeat > 1) the steady one that every later repetition
  // runs again: [0, first_rep) and [first_rep, schedule.size()). Repeats are streamed, never
  // expanded, so --repeat 100000 costs no memory and the trace grows from the first step.
  const std::vector<Planned>& schedule;
  size_t first_rep;
  const std::vector<LocalTensor>& globals;
  PlanCache& cache;
};

// Per-rank figures exchanged at the end so that every rank can build the same report:
// per step [wall ns, bytes received, first local mismatch, first full-tensor mismatch (rank 0),
// the op output that mismatched], then [clock offset ns, clock rtt ns].
constexpr size_t kStepFigures = 5;
constexpr size_t kClockFigures = 2;

// Gathers every rank's Partial result to rank 0 through the communicator (shape_exchange, then
// an all_to_all where only rank 0 receives), so the same code serves threads and processes.
std::vector<LocalTensor> GatherToRank0(Communicator& comm, const Group& all, const LocalTensor& out) {
  const size_t n = all.ranks.size();
  const bool root = comm.rank() == 0;
  std::vector<std::vector<int64_t>> shape_send(n);
  shape_send[0] = out.shape();
  shape_send[0].insert(shape_send[0].begin(), static_cast<int64_t>(out.shape().size()));
  std::vector<std::vector<int64_t>> shapes = comm.ExchangeShapes(all, std::move(shape_send));
  std::vector<LocalTensor> shards(root ? n : 0);
  std::vector<SendView> send(n, SendView{nullptr, {}, out.dtype(), {}});
  std::vector<RecvView> recv(n, RecvView{nullptr, {}, out.dtype(), {}});
  send[0] = ViewOf(out);
  if (root) {
    for (size_t i = 0; i < n; ++i) {
      shards[i] = LocalTensor(Shape(shapes[i].begin() + 1, shapes[i].end()), out.dtype());
      recv[i] = MutableViewOf(shards[i]);
    }
  }
  comm.AllToAllV(all, std::move(send), std::move(recv));
  return shards;
}

// Bytes this rank received over `ran`.
int64_t BytesReceived(const std::vector<ExecutedCollective>& ran) {
  int64_t bytes = 0;
  for (const auto& c : ran) {
    for (int64_t b : c.stats.bytes_recv) bytes += b;
  }
  return bytes;
}

// Adds `ran` to a step report's kind -> count table.
void TallyKinds(const std::vector<ExecutedCollective>& ran, std::map<std::string, int64_t>& counts) {
  for (const auto& c : ran) {
    ++counts[c.halo         ? "halo_exchange"
             : c.negotiated ? "shape_exchange"
                            : std::string(CollectiveKindName(c.stats.kind))];
  }
}

// One op step on one rank: runs it (implicit redistributes, halo, kernel), fills this rank's
// figures for the step and, with verification, compares every output with the reference.
void RunOpStep(Communicator& comm, int64_t rank, const RunContext& ctx, trace::Writer* writer,
               const Group& all, size_t k, const Planned& item, int64_t op_id_offset,
               std::vector<LocalTensor>& locals, int64_t& next_redistribute_id, int64_t* f,
               std::vector<StepReport>* report0) {
  const Scenario& scenario = ctx.scenario;
  std::vector<const TensorSpec*> specs;
  std::vector<const LocalTensor*> inputs;
  for (size_t i = 0; i < item.inputs.size(); ++i) {
    const bool present = item.inputs[i] != kNone;
    specs.push_back(present ? &item.input_specs[i] : nullptr);
    inputs.push_back(present ? &locals[item.inputs[i]] : nullptr);
  }
  std::vector<ExecutedCollective> ran;
  OpExecuteOptions exec;
  exec.trace = writer;
  exec.op_id = item.op_id + op_id_offset;
  exec.step = static_cast<int64_t>(item.step);
  exec.next_redistribute_id = &next_redistribute_id;
  exec.cache = &ctx.cache;
  exec.plan_options = item.options;
  exec.checksums = ctx.options.checksums;
  exec.collectives = &ran;
  const size_t first_input = item.inputs.empty() ? kNone : item.inputs[0];
  exec.shapes = first_input == kNone ? ShapeMode::kKnown : scenario.tensors[first_input].shapes;
  const int64_t t0 = trace::NowNs();
  std::vector<std::optional<LocalTensor>> outs =
      ExecuteOp(comm, rank, *item.op, item.decision, specs, inputs, exec);
  f[0] = trace::NowNs() - t0;
  f[1] = BytesReceived(ran);
  if (rank == 0 && report0 != nullptr) {
    StepReport& rep = (*report0)[k];
    rep.step = item.step;
    rep.op = std::string(OpKindName(item.op->kind));
    rep.op_args = item.op->ArgsText();
    for (size_t o = 0; o < item.outputs.size(); ++o) {
      if (item.outputs[o] == kNone) continue;
      rep.tensor += (rep.tensor.empty() ? "" : ",") + scenario.tensors[item.outputs[o]].name;
      rep.op_outputs.push_back(item.decision.outputs[o]->placements);
    }
    TallyKinds(ran, rep.collectives);
    for (size_t i = 0; i < item.inputs.size(); ++i) {
      if (item.inputs[i] != kNone && item.decision.inputs[i] &&
          !(item.decision.inputs[i]->placements == item.input_specs[i].placements))
        ++rep.implicit_redistributes;
    }
  }
  for (size_t o = 0; o < outs.size(); ++o) {
    if (item.outputs[o] == kNone) continue;
    if (ctx.options.verify) {  // every rank gathers every output: the collectives must match
      std::vector<LocalTensor> shards = GatherToRank0(comm, all, *outs[o]);
      if (rank == 0 && f[3] < 0) {
        const TensorSpec& spec = *item.decision.outputs[o];
        LocalTensor full = FullTensor(shards, spec);
        f[3] = FirstDifference(full, ctx.globals[item.outputs[o]], OpTolerance(spec.dtype));
        if (f[3] >= 0) f[4] = static_cast<int64_t>(o);
      }
    }
    locals[item.outputs[o]] = std::move(*outs[o]);
  }
}

// Runs schedule row `k` once on this rank and fills its figures `f` (see kStepFigures); rank 0
// describes the row in `report0` when given. Op ids of later repetitions are shifted by
// `op_id_offset` so every executed op has its own id in the trace.
void RunScheduled(Communicator& comm, int64_t rank, const RunContext& ctx, trace::Writer* writer,
                  const Group& all, size_t k, int64_t op_id_offset, std::vector<LocalTensor>& locals,
                  int64_t& next_redistribute_id, int64_t* f, std::vector<StepReport>* report0) {
  const Scenario& scenario = ctx.scenario;
  const Planned& item = ctx.schedule[k];
  if (item.op != nullptr) {
    RunOpStep(comm, rank, ctx, writer, all, k, item, op_id_offset, locals, next_redistribute_id, f, report0);
    return;
  }
  std::shared_ptr<const Plan> plan = ctx.cache.Get(item.src, item.dst, rank, item.options);
  std::vector<ExecutedCollective> ran;
  ExecuteOptions exec;
  exec.shapes = scenario.tensors[item.tensor].shapes;
  exec.trace = writer;
  exec.trace_id = next_redistribute_id++;
  exec.tensor_name = scenario.tensors[item.tensor].name + (item.backward ? ".grad" : "");
  exec.collectives = &ran;
  exec.checksums = ctx.options.checksums;
  int64_t t0 = trace::NowNs();
  LocalTensor out = Redistribute(comm, rank, locals[item.tensor], item.src, item.dst, *plan, exec);
  f[0] = trace::NowNs() - t0;
  f[1] = BytesReceived(ran);
  if (rank == 0 && report0 != nullptr) {
    StepReport& rep = (*report0)[k];
    rep.step = item.step;
    rep.repetition = k < ctx.first_rep ? 0 : 1;
    rep.backward = item.backward;
    rep.tensor = scenario.tensors[item.tensor].name;
    rep.src = item.src.placements;
    rep.dst = item.dst.placements;
    rep.plan = *plan;
    TallyKinds(ran, rep.collectives);
  }
  if (ctx.options.verify) {
    // Non-Partial results are checked where they are (Distribute is the definition); Partial
    // ones are a different valid decomposition, so rank 0 rebuilds the full tensor.
    // A tensor an op produced holds values computed from partial sums, which equal the global
    // reference only within the op tolerance; seeded inputs are compared bitwise.
    const bool produced = scenario.tensors[item.tensor].produced_by >= 0;
    const double op_tol = produced ? OpTolerance(item.dst.dtype) : 0.0;
    if (!HasPartial(item.dst)) {
      f[2] = FirstDifference(out, Distribute(ctx.globals[item.tensor], item.dst, rank), op_tol);
    } else {
      std::vector<LocalTensor> shards = GatherToRank0(comm, all, out);
      if (rank == 0) {
        LocalTensor full = FullTensor(shards, item.dst);
        f[3] = FirstDifference(full, ctx.globals[item.tensor],
                               std::max(op_tol, PartitionTolerance(item.dst.dtype)));
      }
    }
  }
  if (!item.backward) locals[item.tensor] = std::move(out);
}

// One rank's whole run: distributes, executes every scheduled redistribute, verifies, and
// returns this rank's figures (see kStepFigures) gathered from every rank, indexed [rank][k].
// `report0` is filled on rank 0 only.
std::vector<int64_t> RunRank(Communicator& comm, int64_t rank, const RunContext& ctx, trace::Writer* writer,
                             MpiWorld::ClockEstimate clock, std::vector<StepReport>* report0) {
  const Scenario& scenario = ctx.scenario;
  const Mesh& mesh = scenario.mesh;
  const int64_t world = mesh.size();
  const size_t steps = ctx.schedule.size();
  std::vector<int64_t> figures(steps * kStepFigures + kClockFigures, -1);
  std::vector<LocalTensor> locals(scenario.tensors.size());
  for (size_t t = 0; t < scenario.tensors.size(); ++t) {
    if (scenario.tensors[t].produced_by < 0)
      locals[t] = Distribute(ctx.globals[t], scenario.tensors[t].spec, rank);
  }
  int64_t next_redistribute_id = 0;
  Group all;
  for (int64_t r = 0; r < world; ++r) all.ranks.push_back(r);
  for (int d = 0; d < mesh.ndim(); ++d) all.mesh_dims.push_back(d);

  const int repeat = ctx.options.repeat;
  const size_t steady = steps - ctx.first_rep;
  const int64_t ops_per_rep = [&] {
    int64_t n = 0;
    for (size_t k = 0; k < ctx.first_rep; ++k) n += ctx.schedule[k].op != nullptr ? 1 : 0;
    return n;
  }();
  const int64_t total =
      static_cast<int64_t>(ctx.first_rep) + static_cast<int64_t>(repeat - 1) * static_cast<int64_t>(steady);
  int64_t done = 0;
  for (int r = 0; r < repeat; ++r) {
    const size_t begin = r == 0 ? 0 : ctx.first_rep, end = r == 0 ? ctx.first_rep : steps;
    for (size_t k = begin; k < end; ++k) {
      int64_t step_figures[kStepFigures] = {-1, -1, -1, -1, -1};
      // Rank 0 describes each schedule row once, at its first run.
      std::vector<StepReport>* describe = r <= 1 ? report0 : nullptr;
      RunScheduled(comm, rank, ctx, writer, all, k, r <= 1 ? 0 : (r - 1) * ops_per_rep, locals,
                   next_redistribute_id, step_figures, describe);
      int64_t* f = &figures[k * kStepFigures];
      for (size_t w : {size_t{0}, size_t{1}})
        f[w] = std::max<int64_t>(f[w], 0) + std::max<int64_t>(step_figures[w], 0);
      if (f[2] < 0) f[2] = step_figures[2];
      if (f[3] < 0) {
        f[3] = step_figures[3];
        f[4] = step_figures[4];
      }
      ++done;
      if (rank == 0 && ctx.options.progress) ctx.options.progress(done, total);
    }
  }
  figures[steps * kStepFigures] = clock.offset_ns;
  figures[steps * kStepFigures + 1] = clock.rtt_ns;

  // Every rank gets every rank's figures, so every rank reaches the same verdict.
  LocalTensor mine(Shape{static_cast<int64_t>(figures.size())}, DType::kI64);
  std::memcpy(mine.data(), figures.data(), mine.nbytes());
  LocalTensor gathered(Shape{world, static_cast<int64_t>(figures.size())}, DType::kI64);
  std::vector<RecvView> recv;
  for (int64_t r = 0; r < world; ++r) {
    Box row = FullBox(gathered.shape());
    row.dims[0] = {{r, r + 1}};
    recv.push_back(MutableViewOf(gathered, std::move(row)));
  }
  comm.AllGatherV(all, ViewOf(mine), std::move(recv));
  std::vector<int64_t> result(static_cast<size_t>(gathered.numel()));
  std::memcpy(result.data(), gathered.data(), gathered.nbytes());
  return result;
}

}  // namespace

// Every spec along the run: `repeat` times the step list, each tensor continuing from where
// the previous step left it.
std::vector<Planned> detail::BuildSchedule(const Scenario& scenario, int repeat) {
  std::vector<Planned> schedule;
  const Mesh& mesh = scenario.mesh;
  std::vector<TensorSpec> current;
  for (const auto& t : scenario.tensors) current.push_back(t.spec);
  int64_t op_count = 0;
  for (int rep = 0; rep < repeat; ++rep) {
    for (size_t i = 0; i < scenario.steps.size(); ++i) {
      const ScenarioStep& step = scenario.steps[i];
      if (step.op) {
        Planned item{i, false, 0, {}, {}, step.options};
        item.op = &*step.op;
        item.op_id = op_count++;
        std::vector<const TensorSpec*> specs;
        for (const std::string& name : step.op->inputs) {
          item.inputs.push_back(name.empty() ? kNone : scenario.TensorIndex(name));
          item.input_specs.push_back(name.empty() ? TensorSpec{} : current[item.inputs.back()]);
        }
        for (size_t k = 0; k < item.inputs.size(); ++k) {
          specs.push_back(item.inputs[k] == kNone ? nullptr : &item.input_specs[k]);
        }
        item.decision = PropagateOp(*step.op, specs, step.options.devices_per_host);
        for (size_t o = 0; o < step.op->outputs.size(); ++o) {
          const bool wanted = !step.op->outputs[o].empty() && item.decision.outputs[o];
          item.outputs.push_back(wanted ? scenario.TensorIndex(step.op->outputs[o]) : kNone);
          if (wanted) current[item.outputs.back()] = *item.decision.outputs[o];
        }
        schedule.push_back(std::move(item));
        continue;
      }
      size_t ti = scenario.TensorIndex(step.tensor);
      const TensorSpec& src = current[ti];
      TensorSpec dst = MakeSpec(mesh, step.to, step.order, src.shape, src.dtype, src.chunking,
                                step.explicit_sizes, "steps[" + std::to_string(i) + "].to");
      schedule.push_back({i, false, ti, src, dst, step.options});
      if (step.backward) {
        // Redistribute.backward calls redistribute_local_tensor directly: the internal path.
        PlanOptions backward_options = step.options;
        backward_options.internal_partial_target = true;
        schedule.push_back({i, true, ti, dst, BackwardTargetSpec(src, dst), backward_options});
      }
      current[ti] = dst;
    }
  }
  return schedule;
}

namespace {

// Refuses what cannot run before any thread or process starts: an unknown backend, a GPU or MPI
// backend this build or machine lacks (one message, exit 2), a bad repeat count and a run that
// cannot fit in memory (naming the largest tensor instead of dying in std::bad_alloc later).
void CheckRunnable(const Scenario& scenario, const RunOptions& options) {
  const std::string& backend = options.backend;
  if (backend != "local" && backend != "mpi" && backend != "cuda" && backend != "nccl") {
    throw InvalidInput("--backend: '" + backend + "' is not a backend (use local, mpi, cuda or nccl)");
  }
  if (backend == "cuda" || backend == "nccl") RequireGpuBackend(backend);
  if ((backend == "mpi" || backend == "nccl") && !MpiBackendAvailable()) {
    throw InvalidInput(
        "--backend " + backend +
        ": this build has no MPI backend (reconfigure with MPI installed; nccl bootstraps over MPI)");
  }
  if (options.repeat < 1) throw InvalidInput("--repeat: must be >= 1");
  detail::RefuseWhatCannotFit(scenario, options);
}

// Global values: seeded inputs, and op outputs computed on the unsharded tensors (the reference
// every op output is verified against; values do not change with placements). The first
// repetition computes every op output.
std::vector<LocalTensor> GlobalValues(const Scenario& scenario, const std::vector<Planned>& schedule,
                                      size_t first_rep) {
  std::vector<LocalTensor> globals(scenario.tensors.size());
  for (size_t t = 0; t < scenario.tensors.size(); ++t) {
    const ScenarioTensor& st = scenario.tensors[t];
    if (st.produced_by < 0) globals[t] = SeededTensor(st.spec.shape, st.spec.dtype, st.seed);
  }
  for (size_t k = 0; k < first_rep; ++k) {
    const Planned& item = schedule[k];
    if (item.op == nullptr) continue;
    std::vector<const LocalTensor*> in;
    for (size_t i : item.inputs) in.push_back(i == kNone ? nullptr : &globals[i]);
    std::vector<std::optional<LocalTensor>> out = ComputeOpGlobal(*item.op, in);
    for (size_t o = 0; o < item.outputs.size(); ++o) {
      if (item.outputs[o] != kNone) globals[item.outputs[o]] = std::move(*out[o]);
    }
  }
  return globals;
}

// Ranks as threads of this process: host buffers (local) or virtual ranks on one GPU (cuda).
// Returns every rank's figures (RunRank's, as rank 0 holds them).
std::vector<int64_t> RunInThreads(const RunContext& ctx, std::vector<StepReport>& reports) {
  const RunOptions& options = ctx.options;
  const Mesh& mesh = ctx.scenario.mesh;
  const int64_t world = mesh.size();
  std::vector<int64_t> figures;
  trace::TraceSession session =
      options.trace_dir.empty() ? trace::TraceSession() : trace::TraceSession(options.trace_dir);
  auto body = [&](Communicator& comm, int64_t rank) {
    trace::Writer* writer = nullptr;
    if (session.enabled()) {
      writer = session.WriterFor(rank, trace::MakeHeader(rank, world, mesh.shape(), mesh.dim_names(),
                                                         std::string(comm.backend_name())));
    }
    std::vector<int64_t> mine = RunRank(comm, rank, ctx, writer, {}, &reports);
    if (rank == 0) figures = std::move(mine);
  };
  if (options.backend == "cuda") {
    CudaWorldOptions world_options;
    world_options.timeout = options.timeout;
    CudaLocalWorld::Run(world, body, world_options);
  } else {
    LocalWorldOptions world_options;
    world_options.timeout = options.timeout;
    LocalWorld::Run(world, body, world_options);
  }
  session.Close();
  return figures;
}

// One rank per process (mpi, or nccl bootstrapped over MPI); sets `rank`. An error ends the whole
// job with its message: peers may be inside a collective this rank will never join.
std::vector<int64_t> RunInProcesses(const RunContext& ctx, std::vector<StepReport>& reports, int64_t& rank) {
  const RunOptions& options = ctx.options;
  const std::string& backend = options.backend;
  const Mesh& mesh = ctx.scenario.mesh;
  const int64_t world = mesh.size();
  MpiOptions mpi_options;
  mpi_options.timeout = options.timeout;
  MpiWorld mpi(mpi_options);
  if (mpi.size() != world) {
    throw InvalidInput("--backend " + backend + ": the mesh " + mesh.ToString() + " has " +
                       std::to_string(world) + " ranks but the MPI job has " + std::to_string(mpi.size()) +
                       " processes (run: mpirun -np " + std::to_string(world) + " shardscope run ...)");
  }
  rank = mpi.rank();
  std::unique_ptr<NcclWorld> nccl;
  try {
    // nccl: one GPU per process, bootstrapped over this MPI job; destroyed before MPI.
    if (backend == "nccl") nccl = std::make_unique<NcclWorld>(mpi);
    Communicator& comm = nccl ? nccl->comm() : mpi.comm();
    MpiWorld::ClockEstimate clock = mpi.EstimateClockOffset();
    trace::TraceSession session =
        options.trace_dir.empty() ? trace::TraceSession() : trace::TraceSession(options.trace_dir);
    trace::Writer* writer = nullptr;
    if (session.enabled()) {
      trace::Header header =
          trace::MakeHeader(rank, world, mesh.shape(), mesh.dim_names(), std::string(comm.backend_name()));
      header.clock.offset_ns = clock.offset_ns;
      writer = session.WriterFor(rank, header);
    }
    std::vector<int64_t> figures = RunRank(comm, rank, ctx, writer, clock, &reports);
    session.Close();
    return figures;
  } catch (const Error& e) {
    // A one-process job just throws.
    const std::string what = e.what();
    const bool names_rank = what.rfind("mpi backend, rank ", 0) == 0 ||
                            what.rfind("nccl backend, rank ", 0) == 0;  // the backends' own errors
    if (world > 1) {
      mpi.Abort("shardscope: " + (names_rank ? "" : "rank " + std::to_string(rank) + ": ") + what,
                ExitCodeFor(e.code()));
    }
    throw;
  } catch (const std::exception& e) {
    if (world > 1) mpi.Abort("shardscope: rank " + std::to_string(rank) + ": internal error: " + e.what(), 3);
    throw;
  }
}

// The verification failure of step k from every rank's figures ("" when it verified).
std::string VerifyError(const RunContext& ctx, size_t k, int64_t world,
                        const std::function<int64_t(int64_t, size_t, size_t)>& figure) {
  for (int64_t r = 0; r < world; ++r) {
    if (figure(r, k, 2) >= 0) {
      return "rank " + std::to_string(r) + " local element " + std::to_string(figure(r, k, 2)) +
             " differs from Distribute(X, dst)";
    }
  }
  if (figure(0, k, 3) < 0) return "";
  const Planned& item = ctx.schedule[k];
  if (item.op != nullptr) {
    const size_t o = static_cast<size_t>(figure(0, k, 4));
    return "output '" + ctx.scenario.tensors[item.outputs[o]].name + "' element " +
           std::to_string(figure(0, k, 3)) + " differs from the op on the global tensors";
  }
  return "full tensor element " + std::to_string(figure(0, k, 3)) + " differs from X";
}

// Fills the report's steps from every rank's figures (slowest rank's time, bytes summed over
// ranks) and, with --verify, throws the first step that failed.
void FinishReport(const RunContext& ctx, const std::vector<int64_t>& figures,
                  std::vector<StepReport>& reports, RunReport& report) {
  const std::vector<Planned>& schedule = ctx.schedule;
  const int64_t world = report.world;
  const size_t width = schedule.size() * kStepFigures + kClockFigures;
  auto figure = [&](int64_t r, size_t k, size_t what) {
    return figures[static_cast<size_t>(r) * width + k * kStepFigures + what];
  };
  for (int64_t r = 0; r < world; ++r) {
    report.clock_offset_ns.push_back(figures[static_cast<size_t>(r) * width + width - 2]);
    report.clock_rtt_ns.push_back(figures[static_cast<size_t>(r) * width + width - 1]);
  }
  for (size_t k = 0; k < schedule.size(); ++k) {
    StepReport& rep = reports[k];
    if (report.rank != 0 && schedule[k].op != nullptr) {
      rep.step = schedule[k].step;
      rep.op = std::string(OpKindName(schedule[k].op->kind));
    } else if (report.rank != 0) {
      // Ranks other than 0 did not record the plan; they need the step identity for the message.
      rep.step = schedule[k].step;
      rep.backward = schedule[k].backward;
      rep.tensor = ctx.scenario.tensors[schedule[k].tensor].name;
      rep.src = schedule[k].src.placements;
      rep.dst = schedule[k].dst.placements;
    }
    int64_t slowest = 0;
    for (int64_t r = 0; r < world; ++r) {
      slowest = std::max(slowest, figure(r, k, 0));
      rep.bytes_moved += figure(r, k, 1);
    }
    rep.seconds = static_cast<double>(slowest) * 1e-9;
    rep.repetition = k < ctx.first_rep ? 0 : 1;
    rep.repetitions = k < ctx.first_rep ? 1 : ctx.options.repeat - 1;
    const std::string error = ctx.options.verify ? VerifyError(ctx, k, world, figure) : "";
    if (ctx.options.verify) rep.verified = error.empty();
    if (!error.empty() && schedule[k].op != nullptr) {
      throw InternalError("verification failed at step " + std::to_string(rep.step) + " (op " + rep.op +
                          " -> " + rep.tensor + "): " + error);
    }
    if (!error.empty()) {
      throw InternalError("verification failed at step " + std::to_string(rep.step) +
                          (rep.backward ? " (backward)" : "") + " (" + rep.tensor + ": " +
                          FormatPlacements(rep.src) + " -> " + FormatPlacements(rep.dst) + "): " + error);
    }
    report.steps.push_back(std::move(rep));
  }
}

}  // namespace

RunReport RunScenario(const Scenario& scenario, const RunOptions& options) {
  CheckRunnable(scenario, options);
  // Two repetitions describe any number: from the second on, each repetition starts where the
  // previous one ended, which is the same place every time. Repeats start each tensor from its
  // scenario spec again only if the step list returns it there; otherwise the next repetition
  // continues from where the last one ended (as a loop in a training job would).
  std::vector<Planned> schedule = BuildSchedule(scenario, 1);
  const size_t first_rep = schedule.size();
  if (options.repeat > 1) schedule = BuildSchedule(scenario, 2);
  const std::vector<LocalTensor> globals = GlobalValues(scenario, schedule, first_rep);

  PlanCache cache;
  RunContext ctx{scenario, options, schedule, first_rep, globals, cache};
  std::vector<StepReport> reports(schedule.size());
  RunReport report;
  report.world = scenario.mesh.size();
  const int64_t t_start = trace::NowNs();
  const std::vector<int64_t> figures = options.backend == "local" || options.backend == "cuda"
                                           ? RunInThreads(ctx, reports)
                                           : RunInProcesses(ctx, reports, report.rank);
  report.seconds = static_cast<double>(trace::NowNs() - t_start) * 1e-9;
  FinishReport(ctx, figures, reports, report);
  return report;
}

}  // namespace shardscope::program
