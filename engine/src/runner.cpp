#include "shardscope/engine/runner.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <memory>

#include "shardscope/engine/executor.hpp"
#include "shardscope/engine/local_backend.hpp"
#include "shardscope/engine/planner.hpp"
#include "shardscope/error.hpp"
#include "shardscope/trace/session.hpp"
#include "shardscope/trace/writer.hpp"

namespace shardscope::engine {
namespace {

bool HasPartial(const TensorSpec& spec) {
  return std::any_of(spec.placements.begin(), spec.placements.end(),
                     [](const Placement& p) { return p.IsPartial(); });
}

// Relative tolerance for comparing a Partial result through FullTensor: R->P(sum) divides by the
// group size for floats (PyTorch _partition_value), so the reduced value is x only up to rounding.
double Tolerance(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return 1e-5;
    case DType::kF64:
      return 1e-12;
    case DType::kF16:
      return 4e-3;
    case DType::kBF16:
      return 3e-2;
    default:
      return 0.0;
  }
}

// Index of the first element where `got` differs from `want` (bitwise when tol == 0), or -1.
int64_t FirstDifference(const LocalTensor& got, const LocalTensor& want, double tol) {
  if (got.shape() != want.shape() || got.dtype() != want.dtype()) return 0;
  if (tol == 0.0) {
    if (got.BitwiseEqual(want)) return -1;
    for (int64_t i = 0; i < got.numel(); ++i) {
      if (got.GetDouble(i) != want.GetDouble(i)) return i;
    }
    return 0;
  }
  for (int64_t i = 0; i < got.numel(); ++i) {
    double a = got.GetDouble(i), b = want.GetDouble(i);
    if (std::fabs(a - b) > tol * std::max(1.0, std::fabs(b))) return i;
  }
  return -1;
}

struct SharedStep {
  std::vector<LocalTensor> shards;
  std::vector<double> seconds;
  std::vector<int64_t> bytes;
  std::vector<int64_t> mismatch;
};

}  // namespace

uint64_t Checksum(const LocalTensor& tensor) {
  uint64_t h = 1469598103934665603ULL;
  const auto* p = reinterpret_cast<const unsigned char*>(tensor.data());
  for (size_t i = 0; i < tensor.nbytes(); ++i) {
    h ^= p[i];
    h *= 1099511628211ULL;
  }
  return h;
}

RunReport RunScenario(const Scenario& scenario, const RunOptions& options) {
  if (options.backend != "local") {
    throw InvalidInput("--backend: '" + options.backend + "' is not available in this build (use local)");
  }
  if (options.repeat < 1) throw InvalidInput("--repeat: must be >= 1");
  const Mesh& mesh = scenario.mesh;
  const int64_t world = mesh.size();

  // Every spec along the run is computed once, the same for every rank.
  struct Planned {
    size_t step;
    bool backward;
    size_t tensor;
    TensorSpec src, dst;
    PlanOptions options;
  };
  std::vector<Planned> schedule;
  std::vector<TensorSpec> current;
  for (const auto& t : scenario.tensors) current.push_back(t.spec);
  for (int rep = 0; rep < options.repeat; ++rep) {
    for (size_t i = 0; i < scenario.steps.size(); ++i) {
      const ScenarioStep& step = scenario.steps[i];
      size_t ti = scenario.TensorIndex(step.tensor);
      const TensorSpec& src = current[ti];
      TensorSpec dst = MakeSpec(mesh, step.to, step.order, src.shape, src.dtype, src.chunking,
                                step.explicit_sizes, "steps[" + std::to_string(i) + "].to");
      schedule.push_back({i, false, ti, src, dst, step.options});
      if (step.backward) schedule.push_back({i, true, ti, dst, BackwardTargetSpec(src, dst), step.options});
      current[ti] = dst;
    }
  }
  // Repeats start each tensor from its scenario spec again only if the step list returns it
  // there; otherwise the next repetition continues from where the last one ended (as a loop in a
  // training job would).

  std::vector<LocalTensor> globals;
  for (const auto& t : scenario.tensors) globals.push_back(SeededTensor(t.spec.shape, t.spec.dtype, t.seed));

  trace::TraceSession session =
      options.trace_dir.empty() ? trace::TraceSession() : trace::TraceSession(options.trace_dir);
  PlanCache cache;
  std::vector<SharedStep> shared(schedule.size());
  for (auto& s : shared) {
    s.shards.resize(static_cast<size_t>(world));
    s.seconds.resize(static_cast<size_t>(world));
    s.bytes.resize(static_cast<size_t>(world));
    s.mismatch.assign(static_cast<size_t>(world), -1);
  }
  std::vector<StepReport> reports(schedule.size());
  std::vector<std::string> verify_errors(schedule.size());

  LocalWorldOptions world_options;
  world_options.timeout = options.timeout;
  int64_t t_start = trace::NowNs();
  LocalWorld::Run(
      world,
      [&](Communicator& comm, int64_t rank) {
        trace::Writer* writer = nullptr;
        if (session.enabled()) {
          writer = session.WriterFor(rank, trace::MakeHeader(rank, world, mesh.shape(), mesh.dim_names(),
                                                             std::string(comm.backend_name())));
        }
        std::vector<LocalTensor> locals;
        for (size_t t = 0; t < scenario.tensors.size(); ++t) {
          locals.push_back(Distribute(globals[t], scenario.tensors[t].spec, rank));
        }
        Group all;
        for (int64_t r = 0; r < world; ++r) all.ranks.push_back(r);
        for (int d = 0; d < mesh.ndim(); ++d) all.mesh_dims.push_back(d);

        for (size_t k = 0; k < schedule.size(); ++k) {
          const Planned& item = schedule[k];
          std::shared_ptr<const Plan> plan = cache.Get(item.src, item.dst, rank, item.options);
          std::vector<ExecutedCollective> ran;
          ExecuteOptions exec;
          exec.shapes = scenario.tensors[item.tensor].shapes;
          exec.trace = writer;
          exec.trace_id = static_cast<int64_t>(k);
          exec.tensor_name = scenario.tensors[item.tensor].name + (item.backward ? ".grad" : "");
          exec.collectives = &ran;
          int64_t t0 = trace::NowNs();
          LocalTensor out = Redistribute(comm, rank, locals[item.tensor], item.src, item.dst, *plan, exec);
          double seconds = static_cast<double>(trace::NowNs() - t0) * 1e-9;
          int64_t bytes = 0;
          for (const auto& c : ran) {
            for (int64_t b : c.stats.bytes_recv) bytes += b;
          }
          SharedStep& sh = shared[k];
          sh.seconds[static_cast<size_t>(rank)] = seconds;
          sh.bytes[static_cast<size_t>(rank)] = bytes;
          if (rank == 0) {
            StepReport& rep = reports[k];
            rep.step = item.step;
            rep.repetition = static_cast<int>(k / std::max<size_t>(1, schedule.size() / options.repeat));
            rep.backward = item.backward;
            rep.tensor = scenario.tensors[item.tensor].name;
            rep.src = item.src.placements;
            rep.dst = item.dst.placements;
            rep.plan = *plan;
            for (const auto& c : ran) {
              if (!c.negotiated)
                ++rep.collectives[std::string(CollectiveKindName(c.stats.kind))];
              else
                ++rep.collectives["shape_exchange"];
            }
          }
          if (options.verify) {
            // Each rank writes only its own slot; rank 0 reads them after the barrier.
            if (!HasPartial(item.dst)) {
              sh.mismatch[static_cast<size_t>(rank)] =
                  FirstDifference(out, Distribute(globals[item.tensor], item.dst, rank), 0.0);
            } else {
              sh.shards[static_cast<size_t>(rank)] = out;
            }
          }
          if (!item.backward) locals[item.tensor] = std::move(out);
          if (options.verify) {
            comm.Barrier(all);
            if (rank == 0) {
              if (!HasPartial(item.dst)) {
                for (int64_t r = 0; r < world && verify_errors[k].empty(); ++r) {
                  int64_t at = sh.mismatch[static_cast<size_t>(r)];
                  if (at >= 0) {
                    verify_errors[k] = "rank " + std::to_string(r) + " local element " + std::to_string(at) +
                                       " differs from Distribute(X, dst)";
                  }
                }
              } else {
                LocalTensor full = FullTensor(sh.shards, item.dst);
                int64_t at = FirstDifference(full, globals[item.tensor], Tolerance(item.dst.dtype));
                if (at >= 0)
                  verify_errors[k] = "full tensor element " + std::to_string(at) + " differs from X";
                sh.shards.assign(static_cast<size_t>(world), LocalTensor());
              }
              reports[k].verified = verify_errors[k].empty();
            }
            comm.Barrier(all);
          }
          if (rank == 0 && options.progress)
            options.progress(static_cast<int64_t>(k) + 1, static_cast<int64_t>(schedule.size()));
        }
      },
      world_options);
  session.Close();

  RunReport report;
  report.world = world;
  report.seconds = static_cast<double>(trace::NowNs() - t_start) * 1e-9;
  for (size_t k = 0; k < schedule.size(); ++k) {
    StepReport& rep = reports[k];
    rep.seconds = *std::max_element(shared[k].seconds.begin(), shared[k].seconds.end());
    for (int64_t b : shared[k].bytes) rep.bytes_moved += b;
    if (options.verify && !verify_errors[k].empty()) {
      throw InternalError("verification failed at step " + std::to_string(rep.step) +
                          (rep.backward ? " (backward)" : "") + " (" + rep.tensor + ": " +
                          FormatPlacements(rep.src) + " -> " + FormatPlacements(rep.dst) +
                          "): " + verify_errors[k]);
    }
    report.steps.push_back(std::move(rep));
  }
  return report;
}

}  // namespace shardscope::engine
