#pragma once
// Private to the CPU benchmarks (cmd_bench_comm.cpp, cmd_bench_redistribute.cpp): the timing
// loop on local threads or under mpirun, its statistics and units, and the start-up both share.

#include <unistd.h>

#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <iomanip>
#include <memory>
#include <ostream>
#include <sstream>
#include <streambuf>
#include <string>
#include <vector>

#include "bench.hpp"
#include "shardscope/engine/comm/communicator.hpp"
#include "shardscope/engine/comm/local_backend.hpp"
#include "shardscope/engine/comm/mpi_backend.hpp"
#include "shardscope/error.hpp"
#include "shardscope/trace/writer.hpp"

namespace shardscope::app::bench_cpu {

using engine::Communicator;
using engine::Group;

// The group of ranks 0..n-1 over mesh dim 0: every benchmark's collective group.
inline Group AllRanks(int64_t n) {
  Group world;
  for (int64_t r = 0; r < n; ++r) world.ranks.push_back(r);
  world.mesh_dims = {0};
  return world;
}

inline std::string HumanBytes(int64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 3) {
    v /= 1024;
    ++u;
  }
  std::ostringstream s;
  s << std::setprecision(v < 10 ? 2 : 4) << v << " " << units[u];
  return s.str();
}

// CPU time of the whole process, every thread (a background trace writer's too), in seconds.
inline double ProcessCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// The q-quantile (nearest rank) of per-iteration times, and "[p10, p90]" of them in us.
inline double Quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5)];
}

inline std::string Spread(const std::vector<double>& v) {
  std::ostringstream text;
  text << std::fixed << std::setprecision(1) << "[" << Quantile(v, 0.1) * 1e6 << ", "
       << Quantile(v, 0.9) * 1e6 << "]";
  return text.str();
}

inline int IterationsFor(int64_t bytes, int requested) {
  if (requested > 0) return requested;
  if (bytes <= (int64_t{1} << 20)) return 200;
  if (bytes <= (int64_t{16} << 20)) return 20;
  return 5;
}

// Runs `body` `iters` times on every rank after one warm-up and returns the seconds per
// iteration seen by rank 0 (collectives synchronize the ranks, so rank 0's time is the group's).
// Ranks are threads of this process (mpi == nullptr) or, under mpirun, this process is one rank
// of the MPI job (then every process returns its own time and rank 0's is the one printed).
// With `samples`, rank 0's time of every iteration is appended to it (seconds).
template <class Setup>
double TimePerIteration(engine::MpiWorld* mpi, int64_t ranks, int iters, Setup&& setup,
                        std::vector<double>* samples = nullptr) {
  if (mpi != nullptr) {
    Communicator& comm = mpi->comm();
    const Group world = AllRanks(ranks);
    auto body = setup(comm, mpi->rank(), world);
    body();
    comm.Barrier(world);
    int64_t t0 = trace::NowNs();
    for (int i = 0; i < iters; ++i) {
      const int64_t start = samples ? trace::NowNs() : 0;
      body();
      if (samples) samples->push_back(static_cast<double>(trace::NowNs() - start) * 1e-9);
    }
    comm.Barrier(world);
    return static_cast<double>(trace::NowNs() - t0) * 1e-9 / iters;
  }
  std::atomic<int64_t> elapsed{0};
  engine::LocalWorld::Run(ranks, [&](Communicator& comm, int64_t rank) {
    const Group world = AllRanks(ranks);
    auto body = setup(comm, rank, world);
    body();
    comm.Barrier(world);
    int64_t t0 = trace::NowNs();
    for (int i = 0; i < iters; ++i) {
      const int64_t start = samples && rank == 0 ? trace::NowNs() : 0;
      body();
      if (samples && rank == 0) samples->push_back(static_cast<double>(trace::NowNs() - start) * 1e-9);
    }
    comm.Barrier(world);
    if (rank == 0) elapsed = trace::NowNs() - t0;
  });
  return static_cast<double>(elapsed.load()) * 1e-9 / iters;
}

// Every rank copies `bytes` with memcpy concurrently: the baseline a thread backend is held to.
inline double MemcpySeconds(int64_t ranks, int64_t bytes, int iters) {
  return TimePerIteration(nullptr, ranks, iters, [bytes](Communicator&, int64_t, const Group&) {
    auto src = std::make_shared<std::vector<std::byte>>(static_cast<size_t>(bytes), std::byte{1});
    auto dst = std::make_shared<std::vector<std::byte>>(static_cast<size_t>(bytes));
    return [src, dst] { std::memcpy(dst->data(), src->data(), src->size()); };
  });
}

// The median of `rounds` MemcpySeconds runs: a baseline for ratios whose other side is itself a
// median of rounds (one run of it swings by 1.5x on a loaded 2-core machine).
inline double MedianMemcpySeconds(int64_t ranks, int64_t bytes, int iters, int rounds) {
  std::vector<double> seconds;
  for (int r = 0; r < rounds; ++r) seconds.push_back(MemcpySeconds(ranks, bytes, iters));
  return Quantile(seconds, 0.5);
}

// Under MPI: runs `fn` on rank 0 alone (a local-backend baseline on threads) while the other
// processes sleep in a barrier, so they do not take the cores the threads need.
template <class Fn>
double OnRank0(engine::MpiWorld& mpi, Fn&& fn) {
  double value = 0;
  if (mpi.rank() == 0) value = fn();
  mpi.IdleBarrier();
  return value;
}

// The MPI job of `bench --backend mpi` (its size is the rank count), or none for local.
inline std::unique_ptr<engine::MpiWorld> StartBackend(const BenchCommArgs& args) {
  if (args.backend == "local") return nullptr;
  if (args.backend != "mpi") {
    throw InvalidInput("--backend: '" + args.backend + "' is not a backend (use local, mpi, cuda or nccl)");
  }
  engine::MpiOptions options;
  options.timeout = std::chrono::milliseconds(600000);
  auto mpi = std::make_unique<engine::MpiWorld>(options);
  if (mpi->size() < 2) {
    throw InvalidInput(
        "--backend mpi: the MPI job has 1 process; run it as mpirun -np 4 shardscope bench ...");
  }
  return mpi;
}

// Discards everything (output of ranks other than 0).
struct NullBuffer : std::streambuf {
  int overflow(int c) override { return c; }
};

// What bench comm and bench redistribute on the CPU backends start with: the MPI world under
// mpirun (else `--ranks` local threads), where rank 0 prints (other ranks print nothing), the
// sizes and whether to show progress.
struct CpuBench {
  CpuBench(const BenchCommArgs& args, std::ostream& out_rank0)
      : mpi(StartBackend(args)), out(mpi && mpi->rank() != 0 ? null_out : out_rank0) {
    if (!mpi && (args.ranks < 2 || args.ranks > 256)) throw InvalidInput("--ranks: need 2 to 256 ranks");
    n = mpi ? mpi->size() : args.ranks;
    sizes = ParseByteSizes(args.sizes);
    progress = isatty(STDERR_FILENO) && (!mpi || mpi->rank() == 0);
  }
  std::unique_ptr<engine::MpiWorld> mpi;
  NullBuffer null_buffer;
  std::ostream null_out{&null_buffer};
  std::ostream& out;  ///< rank 0's stream; a null one on the other ranks
  int64_t n = 0;
  std::vector<int64_t> sizes;
  bool progress = false;
};
}  // namespace shardscope::app::bench_cpu
