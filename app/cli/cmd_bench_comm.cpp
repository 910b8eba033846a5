#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <iomanip>
#include <memory>
#include <ostream>
#include <sstream>
#include <streambuf>

#include <filesystem>
#include "bench.hpp"
#include "bench_cpu.hpp"
#include "shardscope/engine/comm/communicator.hpp"
#include "shardscope/engine/comm/local_backend.hpp"
#include "shardscope/engine/comm/mpi_backend.hpp"
#include "shardscope/engine/comm/nccl_backend.hpp"
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

engine::Box RowBox(const engine::Shape& shape, int64_t begin, int64_t end) {
  engine::Box box = engine::FullBox(shape);
  box.dims[0] = {{begin, end}};
  return box;
}

// One collective of the `bench comm` table on `comm`: `count` f32 elements per rank (divisible
// by n), buffers allocated once and reused by every call of the returned body.
std::function<engine::CollectiveStats()> MakeCollective(const std::string& k, Communicator& comm,
                                                        const Group& world, int64_t count, int64_t n) {
  std::function<engine::CollectiveStats()> body;
  if (k == "all_gather") {
    auto in = std::make_shared<LocalTensor>(engine::Shape{count}, DType::kF32);
    auto outt = std::make_shared<LocalTensor>(engine::Shape{count * n}, DType::kF32);
    body = [&comm, &world, in, outt, count, n] {
      std::vector<engine::RecvView> recv;
      for (int64_t i = 0; i < n; ++i)
        recv.push_back(engine::MutableViewOf(*outt, RowBox(outt->shape(), i * count, (i + 1) * count)));
      return comm.AllGatherV(world, engine::ViewOf(*in), std::move(recv));
    };
  } else if (k == "reduce_scatter") {
    auto in = std::make_shared<LocalTensor>(engine::Shape{count * n}, DType::kF32);
    auto outt = std::make_shared<LocalTensor>(engine::Shape{count}, DType::kF32);
    body = [&comm, &world, in, outt, count, n] {
      std::vector<engine::SendView> send;
      for (int64_t i = 0; i < n; ++i)
        send.push_back(engine::ViewOf(*in, RowBox(in->shape(), i * count, (i + 1) * count)));
      return comm.ReduceScatterV(world, {}, std::move(send), engine::MutableViewOf(*outt));
    };
  } else if (k == "all_reduce") {
    auto in = std::make_shared<LocalTensor>(engine::Shape{count}, DType::kF32);
    auto outt = std::make_shared<LocalTensor>(engine::Shape{count}, DType::kF32);
    body = [&comm, &world, in, outt] {
      return comm.AllReduce(world, {}, engine::ViewOf(*in), engine::MutableViewOf(*outt));
    };
  } else {
    auto in = std::make_shared<LocalTensor>(engine::Shape{count}, DType::kF32);
    auto outt = std::make_shared<LocalTensor>(engine::Shape{count}, DType::kF32);
    const int64_t per = count / n;
    body = [&comm, &world, in, outt, per, n] {
      std::vector<engine::SendView> send;
      std::vector<engine::RecvView> recv;
      for (int64_t i = 0; i < n; ++i) {
        send.push_back(engine::ViewOf(*in, RowBox(in->shape(), i * per, (i + 1) * per)));
        recv.push_back(engine::MutableViewOf(*outt, RowBox(outt->shape(), i * per, (i + 1) * per)));
      }
      return comm.AllToAllV(world, std::move(send), std::move(recv));
    };
  }
  return body;
}

// The best a collective on the local backend can do against the bench's memcpy baseline (a
// memcpy of the algbw bytes by each thread), counting every byte read or written once: the same
// traffic for all_gather and all_to_all (1.0); a reduction over n inputs reads n bytes and writes
// 1 per output byte where the memcpy reads 1 and writes 1, and reduce_scatter's baseline copies
// the n x count bytes each rank sends, so 2n/(n+1); all_reduce's baseline copies count bytes:
// unsplit (below kLocalSplitAllReduceBytes) each member reads n x count and writes count,
// 2/(n+1); split, each member reduces count/n elements (reads n x count/n) and writes them into
// the n outputs (n x count/n): count + count per member, 1.0.
double TrafficBound(const std::string& kind, int64_t n, int64_t bytes_per_rank) {
  const double dn = static_cast<double>(n);
  if (kind == "reduce_scatter") return 2 * dn / (dn + 1);
  if (kind == "all_reduce") return bytes_per_rank >= engine::kLocalSplitAllReduceBytes ? 1.0 : 2 / (dn + 1);
  return 1.0;
}

// H200/H100 SXM NVLink 4: 18 links x 50 GB/s = 900 GB/s bidirectional, 450 GB/s per direction.
// nccl-tests' busbw is comparable with the per-direction rate.
constexpr double kNvlinkPerDirectionGBs = 450.0;

// Rank 0's seconds per iteration on a GPU backend: wall time per call (host staging included)
// and device time from the collectives' CUDA-event stats (pack, transfer, unpack).
struct GpuTiming {
  double wall = 0;
  double device = 0;
};

template <class Setup>
GpuTiming TimeOnGpu(engine::NcclWorld* nccl, int64_t ranks, int iters, Setup&& setup) {
  GpuTiming rank0;
  auto run = [&](Communicator& comm, int64_t rank) {
    const Group world = AllRanks(ranks);
    auto body = setup(comm, rank, world);
    body();
    comm.Barrier(world);
    int64_t device_ns = 0;
    const int64_t t0 = trace::NowNs();
    for (int i = 0; i < iters; ++i) {
      engine::CollectiveStats stats = body();
      device_ns += stats.end_ns - stats.start_ns;
    }
    comm.Barrier(world);
    if (rank == 0) {
      rank0.wall = static_cast<double>(trace::NowNs() - t0) * 1e-9 / iters;
      rank0.device = static_cast<double>(device_ns) * 1e-9 / iters;
    }
  };
  if (nccl != nullptr) {
    run(nccl->comm(), nccl->rank());
  } else {
    engine::CudaWorldOptions options;
    options.timeout = std::chrono::milliseconds(600000);
    engine::CudaLocalWorld::Run(ranks, run, options);
  }
  return rank0;
}

// `bench comm --backend cuda|nccl`: algbw/busbw from the device time of each collective.
int RunBenchCommGpu(const BenchCommArgs& args, std::ostream& out_rank0) {
  engine::RequireGpuBackend(args.backend);
  std::unique_ptr<engine::MpiWorld> mpi;
  std::unique_ptr<engine::NcclWorld> nccl;
  if (args.backend == "nccl") {
    engine::MpiOptions options;
    options.timeout = std::chrono::milliseconds(600000);
    mpi = std::make_unique<engine::MpiWorld>(options);
    engine::NcclOptions nccl_options = engine::NcclOptions::FromEnv();
    nccl_options.timeout = std::chrono::milliseconds(600000);
    nccl = std::make_unique<engine::NcclWorld>(*mpi, nccl_options);
  } else if (args.ranks < 1 || args.ranks > 64) {
    throw InvalidInput("--ranks: need 1 to 64 virtual ranks on the GPU");
  }
  const int64_t n = nccl ? nccl->size() : args.ranks;
  NullBuffer null_buffer;
  std::ostream null_out(&null_buffer);
  std::ostream& out = nccl && nccl->rank() != 0 ? null_out : out_rank0;
  const std::vector<int64_t> sizes = ParseByteSizes(args.sizes);
  const bool progress = isatty(STDERR_FILENO) && (!nccl || nccl->rank() == 0);
  if (nccl) {
    out << "shardscope bench comm: nccl backend, " << n
        << " processes x 1 GPU (--ranks ignored: the job size), f32; reductions "
        << (engine::NcclOptions::FromEnv().exact_reductions ? "exact (SHARDSCOPE_NCCL_REDUCE=exact)"
                                                            : "native")
        << "\n";
  } else {
    out << "shardscope bench comm: cuda backend, " << n << " virtual ranks (threads) sharing one GPU, f32\n";
  }
  out << "device us = CUDA-event time of pack + transfer + unpack (rank 0, mean); wall us = whole call with "
         "host<->device staging of the host tensors\n"
      << "algbw/busbw in GB/s (1e9 B/s) from the device time, nccl-tests' definitions (busbw = algbw x "
         "(n-1)/n, "
         "2(n-1)/n for all_reduce)\n"
      << "limit: NVLink 4 line rate (H100/H200 SXM) 900 GB/s bidirectional = " << kNvlinkPerDirectionGBs
      << " GB/s per direction, the busbw ceiling between GPUs; "
      << (nccl ? "'of NVLink' = busbw / 450 GB/s"
               : "virtual ranks copy inside one GPU's memory (HBM3e, 4.8 TB/s on H200), so NVLink does not "
                 "bound "
                 "them; 'of NVLink' is shown for scale")
      << "\n\n"
      << std::left << std::setw(16) << "collective" << std::right << std::setw(12) << "size/rank"
      << std::setw(12) << "device us" << std::setw(10) << "algbw" << std::setw(10) << "busbw" << std::setw(11)
      << "of NVLink" << std::setw(12) << "wall us"
      << "\n";
  const char* kinds[] = {"all_gather", "reduce_scatter", "all_reduce", "all_to_all"};
  for (const char* kind : kinds) {
    for (int64_t bytes : sizes) {
      const int64_t count = std::max<int64_t>(n, bytes / 4 / n * n);
      const int iters = IterationsFor(bytes, args.iterations);
      if (progress) std::fprintf(stderr, "\r  %s %s ...        ", kind, HumanBytes(bytes).c_str());
      const std::string k = kind;
      GpuTiming t = TimeOnGpu(nccl.get(), n, iters, [&](Communicator& comm, int64_t, const Group& world) {
        return MakeCollective(k, comm, world, count, n);
      });
      const int64_t algbytes = (k == "all_gather" || k == "reduce_scatter") ? count * n * 4 : count * 4;
      const double factor = k == "all_reduce" ? 2.0 * (n - 1) / n : static_cast<double>(n - 1) / n;
      const double algbw = t.device > 0 ? static_cast<double>(algbytes) / t.device / 1e9 : 0;
      const double busbw = algbw * factor;
      out << std::left << std::setw(16) << kind << std::right << std::setw(12) << HumanBytes(count * 4)
          << std::fixed << std::setprecision(1) << std::setw(12) << t.device * 1e6 << std::setprecision(2)
          << std::setw(10) << algbw << std::setw(10) << busbw << std::setprecision(1) << std::setw(10)
          << 100.0 * busbw / kNvlinkPerDirectionGBs << "%" << std::setw(12) << t.wall * 1e6 << "\n"
          << std::defaultfloat;
    }
  }
  if (progress) std::fprintf(stderr, "\r%40s\r", "");
  return 0;
}

}  // namespace

std::vector<int64_t> ParseByteSizes(const std::string& text) {
  std::vector<int64_t> out;
  std::stringstream ss(text);
  std::string tok;
  while (std::getline(ss, tok, ',')) {
    if (tok.empty()) throw InvalidInput("--sizes: empty size in '" + text + "'");
    int64_t mult = 1;
    char last = static_cast<char>(std::toupper(static_cast<unsigned char>(tok.back())));
    if (last == 'K' || last == 'M' || last == 'G') {
      mult = last == 'K' ? 1024 : last == 'M' ? 1024 * 1024 : int64_t{1024} * 1024 * 1024;
      tok.pop_back();
    }
    char* end = nullptr;
    long long v = std::strtoll(tok.c_str(), &end, 10);
    if (tok.empty() || *end != '\0' || v <= 0 || v > (int64_t{1} << 40) / mult) {
      throw InvalidInput("--sizes: '" + tok + "' is not a positive size (e.g. 64K, 16M)");
    }
    out.push_back(v * mult);
  }
  if (out.empty()) throw InvalidInput("--sizes: no sizes given");
  return out;
}

namespace {

// The table heads of bench comm: what is timed and what the columns mean.
void PrintCommHeader(CpuBench& bench) {
  auto& [mpi, null_buffer, null_out, out, n, sizes, progress] = bench;
  if (mpi) {
    out << "shardscope bench comm: mpi backend, " << n << " processes (--ranks ignored: the job size), f32; "
        << "local backend (" << n
        << " threads in rank 0's process, the other processes asleep) on the same work\n"
        << "algbw/busbw in GB/s (1e9 B/s) with nccl-tests' definitions; 'local x' = mpi time / local time\n\n"
        << std::left << std::setw(16) << "collective" << std::right << std::setw(12) << "size/rank"
        << std::setw(12) << "mpi us" << std::setw(10) << "algbw" << std::setw(10) << "busbw" << std::setw(12)
        << "local us" << std::setw(10) << "algbw" << std::setw(10) << "local x"
        << "\n";
  } else {
    out << "shardscope bench comm: local backend, " << n << " ranks (threads), f32\n"
        << "algbw/busbw in GB/s (1e9 B/s) with nccl-tests' definitions; 'vs memcpy' = time of " << n
        << " threads each memcpy-ing the algbw bytes, divided by the collective's time (1.0 = as fast as "
           "memcpy)\n"
        << "'bound' = the best 'vs memcpy' for the bytes the collective must read and write (each once): "
           "1 for all_gather and all_to_all; a reduce over n inputs moves n+1 bytes per output byte against "
           "memcpy's 2, so reduce_scatter (baseline: the n x count bytes sent) 2n/(n+1) = "
        << std::setprecision(3) << TrafficBound("reduce_scatter", n, 0)
        << ", all_reduce (baseline: count bytes) 2/(n+1) = " << TrafficBound("all_reduce", n, 0)
        << " when every member reduces every element, "
        << TrafficBound("all_reduce", n, engine::kLocalSplitAllReduceBytes)
        << " split (each member reduces 1/n and stores it into all n outputs; from "
        << HumanBytes(engine::kLocalSplitAllReduceBytes) << " per rank); 'of bound' = vs memcpy / bound\n\n"
        << std::defaultfloat << std::left << std::setw(16) << "collective" << std::right << std::setw(12)
        << "size/rank" << std::setw(12) << "time us" << std::setw(10) << "algbw" << std::setw(10) << "busbw"
        << std::setw(12) << "vs memcpy" << std::setw(8) << "bound" << std::setw(10) << "of bound"
        << "\n";
  }
}

// Bandwidth: every collective at every --sizes size.
void BenchCommBandwidth(CpuBench& bench, const BenchCommArgs& args) {
  auto& [mpi, null_buffer, null_out, out, n, sizes, progress] = bench;
  const char* kinds[] = {"all_gather", "reduce_scatter", "all_reduce", "all_to_all"};
  for (const char* kind : kinds) {
    for (int64_t bytes : sizes) {
      const int64_t count = std::max<int64_t>(n, bytes / 4 / n * n);  // elements per rank, divisible by n
      const int iters = IterationsFor(bytes, args.iterations);
      if (progress) std::fprintf(stderr, "\r  %s %s ...        ", kind, HumanBytes(bytes).c_str());
      std::string k = kind;
      auto setup = [&](Communicator& comm, int64_t, const Group& world) {
        return MakeCollective(k, comm, world, count, n);
      };
      double seconds = TimePerIteration(mpi.get(), n, iters, setup);
      // nccl-tests: all_gather / reduce_scatter use the total array (count * n), all_reduce and
      // all_to_all the per-rank buffer; busbw = algbw * (n-1)/n, or 2(n-1)/n for all_reduce.
      int64_t algbytes = (k == "all_gather" || k == "reduce_scatter") ? count * n * 4 : count * 4;
      double factor = k == "all_reduce" ? 2.0 * (n - 1) / n : static_cast<double>(n - 1) / n;
      double algbw = static_cast<double>(algbytes) / seconds / 1e9;
      if (mpi) {
        double local = OnRank0(*mpi, [&] { return TimePerIteration(nullptr, n, iters, setup); });
        double local_algbw = static_cast<double>(algbytes) / local / 1e9;
        out << std::left << std::setw(16) << kind << std::right << std::setw(12) << HumanBytes(count * 4)
            << std::fixed << std::setprecision(1) << std::setw(12) << seconds * 1e6 << std::setprecision(2)
            << std::setw(10) << algbw << std::setw(10) << algbw * factor << std::setprecision(1)
            << std::setw(12) << local * 1e6 << std::setprecision(2) << std::setw(10) << local_algbw
            << std::setw(9) << seconds / local << "x\n"
            << std::defaultfloat;
        continue;
      }
      double memcpy_s = MemcpySeconds(n, algbytes, iters);
      const double bound = TrafficBound(k, n, count * 4);
      out << std::left << std::setw(16) << kind << std::right << std::setw(12) << HumanBytes(count * 4)
          << std::fixed << std::setprecision(1) << std::setw(12) << seconds * 1e6 << std::setprecision(2)
          << std::setw(10) << algbw << std::setw(10) << algbw * factor << std::setw(12) << memcpy_s / seconds
          << std::setw(8) << bound << std::setw(10) << memcpy_s / seconds / bound << "\n"
          << std::defaultfloat;
    }
  }
}

// Small messages: latency, not bandwidth (the rendezvous and wake-up path of docs/local-backend.md).
void BenchCommLatency(CpuBench& bench, const BenchCommArgs& args) {
  auto& [mpi, null_buffer, null_out, out, n, sizes, progress] = bench;
  const int latency_iters = args.iterations > 0 ? std::max(args.iterations, 100) : 2000;
  out << "\nsmall messages (" << (mpi ? "mpi" : "local")
      << "): rank 0's time per call, median and [p10, p90] over " << latency_iters << " calls\n"
      << std::left << std::setw(16) << "collective" << std::right << std::setw(12) << "size/rank"
      << std::setw(12) << "median us" << std::setw(22) << "[p10, p90]"
      << "\n";
  for (const char* kind : {"barrier", "all_gather", "all_to_all", "all_reduce"}) {
    const std::string k = kind;
    const int64_t count = 64;  // f32: 256 B per rank
    if (progress) std::fprintf(stderr, "\r  %s 256 B ...        ", kind);
    std::vector<double> samples;
    TimePerIteration(
        mpi.get(), n, latency_iters,
        [&](Communicator& comm, int64_t, const Group& world) -> std::function<engine::CollectiveStats()> {
          if (k == "barrier") return [&comm, &world] { return comm.Barrier(world); };
          return MakeCollective(k, comm, world, count / n * n, n);
        },
        &samples);
    out << std::left << std::setw(16) << kind << std::right << std::setw(12)
        << (k == "barrier" ? std::string("-") : HumanBytes(count / n * n * 4)) << std::fixed
        << std::setprecision(1) << std::setw(12) << Quantile(samples, 0.5) * 1e6 << std::setw(22)
        << Spread(samples) << "\n"
        << std::defaultfloat;
  }
}

}  // namespace

int RunBenchComm(const BenchCommArgs& args, std::ostream& out_rank0) {
  if (args.backend == "cuda" || args.backend == "nccl") return RunBenchCommGpu(args, out_rank0);
  CpuBench bench(args, out_rank0);
  PrintCommHeader(bench);
  BenchCommBandwidth(bench, args);
  BenchCommLatency(bench, args);
  if (bench.progress) std::fprintf(stderr, "\r%40s\r", "");
  return 0;
}

}  // namespace shardscope::app
