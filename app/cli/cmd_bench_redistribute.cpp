// shardscope bench redistribute: redistributes on the CPU backends (local threads, or mpi under
// mpirun), untraced and traced, and known against negotiated shapes.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iomanip>
#include <memory>
#include <ostream>

#include "bench.hpp"
#include "bench_cpu.hpp"
#include "bench_trace_cost.hpp"
#include "shardscope/engine/core/layout.hpp"
#include "shardscope/engine/core/tensor.hpp"
#include "shardscope/engine/exec/executor.hpp"
#include "shardscope/engine/plan/planner.hpp"
#include "shardscope/error.hpp"
#include "shardscope/trace/session.hpp"
#include "shardscope/trace/writer.hpp"

namespace shardscope::app {
namespace {

using namespace bench_cpu;  // bench_cpu.hpp
using engine::DType;
using engine::LocalTensor;

// Runs of the memcpy baseline (their median is the 'vs memcpy' baseline).
constexpr int kMemcpyRounds = 5;

struct RedistCase {
  std::string name;
  engine::TensorSpec src, dst;
};

// Seconds per redistribute of `c` (rank 0's time; see TimePerIteration), untraced.
double TimeRedistribute(engine::MpiWorld* mpi, const RedistCase& c, int iters, engine::ShapeMode shapes,
                        std::vector<double>* samples = nullptr) {
  const int64_t n = c.src.mesh.size();
  return TimePerIteration(
      mpi, n, iters,
      [&](Communicator& comm, int64_t rank, const Group&) {
        auto plan = std::make_shared<engine::Plan>(engine::MakePlan(c.src, c.dst, rank, {}));
        auto in =
            std::make_shared<LocalTensor>(engine::ComputeRankLayout(c.src, rank).local_shape, c.src.dtype);
        engine::ExecuteOptions options;
        options.shapes = shapes;
        options.tensor_name = c.name;
        return [&comm, rank, plan, in, options, &c]() mutable {
          engine::LocalTensor out = engine::Redistribute(comm, rank, *in, c.src, c.dst, *plan, options);
        };
      },
      samples);
}

engine::TensorSpec OneD(int64_t n, const char* placements, engine::Shape shape) {
  return engine::MakeSpec(engine::Mesh({n}), engine::ParsePlacements(placements, "bench"), std::nullopt,
                          std::move(shape), DType::kF32, engine::ChunkRule::kTorch, {}, "bench");
}

// HealDA-like [T, X, C] with X and C divisible by n, each rank's shard `elems` elements: HealDA's
// C=1536 scaled to 96 n channels (384 on 4 ranks: 1.5 KiB runs).
engine::Shape HealdaShape(int64_t n, int64_t elems) {
  const int64_t t_dim = 16, c_dim = 96 * n;
  const int64_t x_dim = std::max<int64_t>(n, elems * n / (t_dim * c_dim) / n * n);
  return {t_dim, x_dim, c_dim};
}

// What the trace columns mean (both backends).
constexpr const char* kTraceColumns =
    "'trace cost' = tracing's cost on the redistribute's time, as a job traces (SHARDSCOPE_TRACE, run "
    "--trace: the background thread encodes and writes beside the ranks; on this machine it competes with "
    "them for the cores), median over groups of blocks of (traced - untraced) / untraced +- the half-width "
    "of its 95% interval; 'capture' = the same with the events kept in memory until after each block "
    "(Durability::kDeferred): what the ranks pay themselves, i.e. the cost where a spare core writes the "
    "trace; 'cpu us' = median traced - untraced process CPU (every thread) per redistribute, which counts "
    "the ranks' spinning waits too; 'block' = redistributes per block; with --calibrate, an 'A/A' row "
    "under each case runs the same groups with tracing off in the traced blocks: what the method reads "
    "where tracing costs nothing (its bias and scatter here), and an 'A/B' row with tracing off and "
    "instead every rank busy for 250 ns after each redistribute of those blocks (about a rank's own "
    "capture CPU): what that much plain work costs the redistribute here, i.e. how this machine turns "
    "small CPU costs into time\n\n";
static_assert(kCalibrationWorkNs == 250, "kTraceColumns names the A/B row's work");

// The table heads of bench redistribute: what is timed and what the columns mean.
void PrintRedistributeHeader(CpuBench& bench) {
  auto& [mpi, null_buffer, null_out, out, n, sizes, progress] = bench;
  if (mpi) {
    out << "shardscope bench redistribute: mpi backend, " << n
        << " processes (--ranks ignored: the job size), f32, 1-D mesh; local backend (" << n
        << " threads in rank 0's process, the other processes asleep) on the same work\n"
        << "size = bytes of each rank's destination shard; GB/s = those bytes / time; 'local x' = mpi time / "
           "local time; "
        << kTraceColumns << std::left << std::setw(26) << "redistribute" << std::right << std::setw(12)
        << "size/rank" << std::setw(12) << "mpi us" << std::setw(10) << "GB/s" << std::setw(16)
        << "trace cost" << std::setw(16) << "capture" << std::setw(9) << "cpu us" << std::setw(7) << "block"
        << std::setw(12) << "local us" << std::setw(10) << "GB/s" << std::setw(10) << "local x"
        << "\n";
  } else {
    out << "shardscope bench redistribute: local backend, " << n << " ranks (threads), f32, 1-D mesh\n"
        << "size = bytes of each rank's destination shard; time = median untraced time per redistribute; "
           "GB/s "
           "= those bytes / time; 'vs memcpy' = median time of "
        << kMemcpyRounds << " runs of " << n
        << " threads each memcpy-ing the same bytes / redistribute time; " << kTraceColumns << std::left
        << std::setw(26) << "redistribute" << std::right << std::setw(12) << "size/rank" << std::setw(12)
        << "time us" << std::setw(10) << "GB/s" << std::setw(11) << "vs memcpy" << std::setw(16)
        << "trace cost" << std::setw(16) << "capture" << std::setw(9) << "cpu us" << std::setw(7) << "block"
        << "\n";
  }
}

// "+1.23% +-0.45" for a cost and its interval.
std::string CostText(double cost, double ci) {
  char text[48];
  std::snprintf(text, sizeof text, "%+.2f%% +-%.2f", cost * 100, ci * 100);
  return text;
}

// Each case at every --sizes size, untraced and traced (the trace goes to `trace_dir`).
void BenchRedistributeTable(CpuBench& bench, const BenchCommArgs& args,
                            const std::filesystem::path& trace_dir) {
  auto& [mpi, null_buffer, null_out, out, n, sizes, progress] = bench;
  for (int64_t bytes : sizes) {
    const int64_t elems = std::max<int64_t>(n * n, bytes / 4);  // destination elements per rank
    const int64_t cols = 64;
    const int64_t rows_out = std::max<int64_t>(1, elems / cols);  // per-rank output rows when gathering
    const engine::Shape healda = HealdaShape(n, elems);
    std::vector<RedistCase> cases = {
        {"S(0)->R all_gather", OneD(n, "S(0)", {rows_out, cols}), OneD(n, "R", {rows_out, cols})},
        {"S(1)->S(2) all_to_all", OneD(n, "S(1)", healda), OneD(n, "S(2)", healda)},
        {"P->S(0) reduce_scatter", OneD(n, "P(sum)", {rows_out * n, cols}),
         OneD(n, "S(0)", {rows_out * n, cols})},
    };
    // The trace cost columns of a row (a traced case or its A/A check). A space before each cost
    // keeps the columns apart when a noisy interval outgrows its width.
    auto cost_columns = [&out](const TraceCost& t) {
      out << ' ' << std::setw(15) << CostText(t.cost, t.cost_ci) << ' ' << std::setw(15)
          << CostText(t.capture, t.capture_ci) << std::setprecision(1) << std::setw(9) << t.cpu_us
          << std::setw(7) << t.block_iters;
    };
    for (const RedistCase& c : cases) {
      const int iters = IterationsFor(bytes, args.iterations);
      if (progress) std::fprintf(stderr, "\r  %s %s ...        ", c.name.c_str(), HumanBytes(bytes).c_str());
      int64_t out_bytes = engine::NumElements(engine::ComputeRankLayout(c.dst, 0).local_shape) * 4;
      const TraceCost tc =
          MeasureTraceCost(mpi.get(), n, c.src, c.dst, c.name, TraceBlockIterations(bytes, args.iterations),
                           args.trace_groups, trace_dir);
      const double plain = tc.plain_s;
      out << std::left << std::setw(26) << c.name << std::right << std::setw(12) << HumanBytes(out_bytes)
          << std::fixed << std::setprecision(1) << std::setw(12) << plain * 1e6 << std::setprecision(2)
          << std::setw(10) << static_cast<double>(out_bytes) / plain / 1e9;
      if (!mpi) out << std::setw(11) << MedianMemcpySeconds(n, out_bytes, iters, kMemcpyRounds) / plain;
      cost_columns(tc);
      if (mpi) {
        double local =
            OnRank0(*mpi, [&] { return TimeRedistribute(nullptr, c, iters, engine::ShapeMode::kKnown); });
        out << std::setprecision(1) << std::setw(12) << local * 1e6 << std::setprecision(2) << std::setw(10)
            << static_cast<double>(out_bytes) / local / 1e9 << std::setw(9) << plain / local << "x";
      }
      out << "\n" << std::defaultfloat;
      if (args.calibrate) {
        // The same measurement with tracing off in the traced blocks (the method's own zero), then
        // with a known amount of plain CPU work instead of tracing (what that much costs here).
        const std::string work_row = "  A/B: +" + std::to_string(kCalibrationWorkNs) + " ns work";
        for (const auto& [row, check] :
             {std::pair<std::string, TraceCostCheck>{"  A/A: tracing off", {false, 0}},
              {work_row, {false, kCalibrationWorkNs}}}) {
          if (progress)
            std::fprintf(stderr, "\r  %s %s%s ...        ", c.name.c_str(), HumanBytes(bytes).c_str(),
                         row.c_str() + 1);
          const TraceCost cal = MeasureTraceCost(mpi.get(), n, c.src, c.dst, c.name,
                                                 TraceBlockIterations(bytes, args.iterations),
                                                 args.trace_groups, trace_dir, check);
          out << std::left << std::setw(26) << row << std::right << std::setw(12) << HumanBytes(out_bytes)
              << std::fixed << std::setprecision(1) << std::setw(12) << cal.plain_s * 1e6
              << std::setprecision(2) << std::setw(10) << static_cast<double>(out_bytes) / cal.plain_s / 1e9;
          if (!mpi) out << std::setw(11) << "";  // no 'vs memcpy'
          cost_columns(cal);
          out << "\n" << std::defaultfloat;
        }
      }
    }
  }
}

// Known shapes (PhysicsNeMo PR #1779's fast path) vs one negotiation all_to_all before the
// data: a 256 B shard per rank (latency) and the table's HealDA-like S(1)->S(2) at its sizes.
void BenchKnownShapes(CpuBench& bench, const BenchCommArgs& args) {
  auto& [mpi, null_buffer, null_out, out, n, sizes, progress] = bench;
  out << "\nknown shapes (PR #1779 fast path) vs negotiated shapes, S(1)->S(2)" << (mpi ? " (mpi)" : "")
      << "; rank 0's time per redistribute: median and [p10, p90] over the iterations\n"
      << std::left << std::setw(12) << "size/rank" << std::right << std::setw(8) << "iters" << std::setw(12)
      << "known us" << std::setw(22) << "[p10, p90]" << std::setw(12) << "infer us" << std::setw(22)
      << "[p10, p90]" << std::setw(10) << "speedup"
      << "\n";
  std::vector<int64_t> known_sizes = {0};  // 0: the 256 B latency case
  known_sizes.insert(known_sizes.end(), sizes.begin(), sizes.end());
  for (int64_t bytes : known_sizes) {
    RedistCase c{"S(1)->S(2)", OneD(n, "S(1)", {2, 16, 2 * n}), OneD(n, "S(2)", {2, 16, 2 * n})};
    int iters = args.iterations > 0 ? std::max(args.iterations, 100) : 1000;
    if (bytes > 0) {
      const engine::Shape healda = HealdaShape(n, std::max<int64_t>(n * n, bytes / 4));
      c = {"S(1)->S(2)", OneD(n, "S(1)", healda), OneD(n, "S(2)", healda)};
      iters = IterationsFor(bytes, args.iterations);
    }
    if (progress) std::fprintf(stderr, "\r  known vs negotiated %s ...        ", HumanBytes(bytes).c_str());
    const int64_t out_bytes = engine::NumElements(engine::ComputeRankLayout(c.dst, 0).local_shape) * 4;
    std::vector<double> known, infer;
    TimeRedistribute(mpi.get(), c, iters, engine::ShapeMode::kKnown, &known);
    TimeRedistribute(mpi.get(), c, iters, engine::ShapeMode::kInfer, &infer);
    const double known_median = Quantile(known, 0.5), infer_median = Quantile(infer, 0.5);
    out << std::left << std::setw(12) << HumanBytes(out_bytes) << std::right << std::setw(8) << iters
        << std::fixed << std::setprecision(1) << std::setw(12) << known_median * 1e6 << std::setw(22)
        << Spread(known) << std::setw(12) << infer_median * 1e6 << std::setw(22) << Spread(infer)
        << std::setprecision(2) << std::setw(9) << infer_median / known_median << "x\n"
        << std::defaultfloat;
  }
}

}  // namespace

int RunBenchRedistribute(const BenchCommArgs& args, std::ostream& out_rank0) {
  if (args.backend == "cuda" || args.backend == "nccl") {
    throw InvalidInput("bench redistribute: --backend " + args.backend +
                       " is not supported; time GPU redistributes with shardscope run SCENARIO --backend " +
                       args.backend + " --repeat N, or bench comm --backend " + args.backend);
  }
  CpuBench bench(args, out_rank0);
  std::filesystem::path trace_dir =
      std::filesystem::temp_directory_path() / ("shardscope-bench-trace-" + std::to_string(::getpid()));
  PrintRedistributeHeader(bench);
  BenchRedistributeTable(bench, args, trace_dir);
  std::filesystem::remove_all(trace_dir);
  BenchKnownShapes(bench, args);
  if (bench.progress) std::fprintf(stderr, "\r%50s\r", "");
  return 0;
}

}  // namespace shardscope::app
