#include "bench_trace_cost.hpp"

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "bench_cpu.hpp"
#include "shardscope/engine/comm/local_backend.hpp"
#include "shardscope/engine/core/tensor.hpp"
#include "shardscope/engine/exec/executor.hpp"
#include "shardscope/engine/plan/planner.hpp"
#include "shardscope/trace/session.hpp"
#include "shardscope/trace/writer.hpp"

namespace shardscope::app::bench_cpu {

int TraceBlockIterations(int64_t bytes, int requested) {
  if (requested > 0) return requested;
  const int64_t iters = (int64_t{1} << 30) / std::max<int64_t>(bytes, 1);
  return static_cast<int>(std::clamp<int64_t>(iters, 20, 5000));
}

namespace {

// Rank 0's view of one block: wall seconds per redistribute to the redistributes' end and the
// process's CPU seconds per redistribute over the same span (every thread).
struct Block {
  double wall_s = 0, cpu_s = 0;
};

double Median(std::vector<double> v) { return Quantile(std::move(v), 0.5); }

// What a group of blocks runs: untraced, background, deferred, deferred, background, untraced.
enum class Mode { kPlain, kBackground, kDeferred };
constexpr Mode kGroup[] = {Mode::kPlain,    Mode::kBackground, Mode::kDeferred,
                           Mode::kDeferred, Mode::kBackground, Mode::kPlain};
constexpr size_t kBlocks = std::size(kGroup);

}  // namespace

TraceCost MeasureTraceCost(engine::MpiWorld* mpi, int64_t n, const engine::TensorSpec& src,
                           const engine::TensorSpec& dst, const std::string& name, int block_iters,
                           int groups, const std::filesystem::path& trace_dir, TraceCostCheck check) {
  trace::TraceSession session(trace_dir / "background");
  std::vector<Block> blocks;  // rank 0's, in run order
  auto rank_body = [&](engine::Communicator& comm, int64_t rank) {
    const engine::Group world = AllRanks(n);
    const engine::Plan plan = engine::MakePlan(src, dst, rank, {});
    const engine::LocalTensor in(engine::ComputeRankLayout(src, rank).local_shape, src.dtype);
    const trace::Header header =
        trace::MakeHeader(rank, n, src.mesh.shape(), {}, std::string(comm.backend_name()));
    trace::Writer deferred_writer(trace_dir / "deferred", header, {}, trace::Durability::kDeferred);
    engine::ExecuteOptions plain, background, deferred;
    plain.tensor_name = background.tensor_name = deferred.tensor_name = name;
    background.trace = session.WriterFor(rank, header);
    deferred.trace = &deferred_writer;
    if (!check.traced) background.trace = deferred.trace = nullptr;
    int64_t id = 0;
    auto block = [&](Mode mode, bool keep) {
      engine::ExecuteOptions& options = mode == Mode::kPlain        ? plain
                                        : mode == Mode::kBackground ? background
                                                                    : deferred;
      comm.Barrier(world);
      const int64_t t0 = trace::NowNs();
      const double cpu0 = ProcessCpuSeconds();
      const int64_t work_ns = mode == Mode::kPlain ? 0 : check.work_ns;
      for (int i = 0; i < block_iters; ++i) {
        options.trace_id = id++;
        engine::LocalTensor out = engine::Redistribute(comm, rank, in, src, dst, plan, options);
        if (work_ns > 0) {
          const int64_t until = trace::NowNs() + work_ns;
          while (trace::NowNs() < until) {
          }
        }
      }
      comm.Barrier(world);
      const int64_t t1 = trace::NowNs();
      const double cpu1 = ProcessCpuSeconds();
      // What the block captured is written before the next one starts, outside its time.
      if (options.trace) options.trace->Flush();
      comm.Barrier(world);
      if (keep && rank == 0)
        blocks.push_back({static_cast<double>(t1 - t0) * 1e-9 / block_iters, (cpu1 - cpu0) / block_iters});
    };
    for (Mode mode : kGroup) block(mode, false);  // warm-up: plans, layouts, templates, files
    for (int g = 0; g < groups; ++g) {
      for (Mode mode : kGroup) block(mode, true);
    }
  };
  if (mpi != nullptr)
    rank_body(mpi->comm(), mpi->rank());
  else
    engine::LocalWorld::Run(n, rank_body);
  session.Close();
  TraceCost out;
  out.groups = groups;
  out.block_iters = block_iters;
  if (blocks.size() != static_cast<size_t>(groups) * kBlocks) return out;  // not rank 0 under MPI
  std::vector<double> plain, cost, capture, cpu_us;
  for (int g = 0; g < groups; ++g) {
    const Block* b = &blocks[static_cast<size_t>(g) * kBlocks];
    const double u = b[0].wall_s + b[5].wall_s;
    plain.push_back(u / 2);
    cost.push_back((b[1].wall_s + b[4].wall_s - u) / u);
    capture.push_back((b[2].wall_s + b[3].wall_s - u) / u);
    cpu_us.push_back((b[1].cpu_s + b[4].cpu_s - b[0].cpu_s - b[5].cpu_s) / 2 * 1e6);
  }
  auto ci = [groups](const std::vector<double>& v) {
    return 1.58 * (Quantile(v, 0.75) - Quantile(v, 0.25)) / std::sqrt(static_cast<double>(groups));
  };
  out.plain_s = Median(plain);
  out.cost = Median(cost);
  out.cost_ci = ci(cost);
  out.capture = Median(capture);
  out.capture_ci = ci(capture);
  out.cpu_us = Median(cpu_us);
  return out;
}

}  // namespace shardscope::app::bench_cpu
