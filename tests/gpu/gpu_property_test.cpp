// GPU suite (ctest label gpu). Without arguments: Catch2 tests of the `cuda` backend (virtual
// ranks sharing one GPU): random redistributes must equal Distribute(X, dst) and the local
// backend bitwise, every dtype and reduce op included (the reduce kernel combines in group order
// like the local backend); direct collectives on uneven, empty and partly covered views; error
// messages identical to the local backend's; CUDA-event times in the stats.
// With `--nccl [CASES]` under `mpirun -np K` (K GPUs, K >= 1): the same property check on the
// `nccl` backend, one rank per process, against Distribute and the local backend (bitwise unless
// a float reduction over more than one rank ran natively in NCCL's order: then within
// PartitionTolerance). Exits 77 (skipped) with a message when there is no GPU.

#define CATCH_CONFIG_RUNNER
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "../common/random_redistribute.hpp"
#include "shardscope/engine/comm/local_backend.hpp"
#include "shardscope/engine/comm/mpi_backend.hpp"
#include "shardscope/engine/comm/nccl_backend.hpp"
#include "shardscope/engine/core/shard_order.hpp"
#include "shardscope/engine/exec/executor.hpp"
#include "shardscope/engine/plan/planner.hpp"
#include "shardscope/error.hpp"

using namespace shardscope;
using namespace shardscope::engine;
using namespace shardscope::testing;  // the shared random redistribute cases

namespace {

using RankFn = std::function<void(Communicator&, int64_t)>;

// Runs `fn` on `n` ranks of the backend: "cuda" (virtual ranks on the GPU) or "local".
void RunOn(const std::string& backend, int64_t n, const RankFn& fn) {
  if (backend == "cuda") {
    CudaWorldOptions options;
    options.timeout = std::chrono::milliseconds(60000);
    CudaLocalWorld::Run(n, fn, options);
  } else {
    LocalWorld::Run(n, fn);
  }
}

// Every rank's redistributed shard of case `c` on `backend`.
std::vector<LocalTensor> RedistributeAll(const std::string& backend, const Case& c,
                                         const LocalTensor& global) {
  const int64_t n = c.src.mesh.size();
  std::vector<LocalTensor> out(static_cast<size_t>(n));
  RunOn(backend, n, [&](Communicator& comm, int64_t r) {
    Plan plan = MakePlan(c.src, c.dst, r, c.plan_options);
    ExecuteOptions exec;
    exec.shapes = c.shapes;
    out[static_cast<size_t>(r)] =
        Redistribute(comm, r, Distribute(global, c.src, r), c.src, c.dst, plan, exec);
  });
  return out;
}

// Every rank's output of `post` on `backend`: `post` fills the rank's output tensor.
std::vector<LocalTensor> Outputs(const std::string& backend, int64_t n,
                                 const std::function<void(Communicator&, int64_t, LocalTensor&)>& post) {
  std::vector<LocalTensor> out(static_cast<size_t>(n));
  RunOn(backend, n, [&](Communicator& comm, int64_t r) { post(comm, r, out[static_cast<size_t>(r)]); });
  return out;
}

// The error message `post` raises on rank `rank` ("" when none).
std::string MessageOn(const std::string& backend, int64_t n, int64_t rank, const RankFn& post) {
  std::string message;
  std::mutex mutex;
  try {
    RunOn(backend, n, [&](Communicator& comm, int64_t r) {
      try {
        post(comm, r);
      } catch (const Error& e) {
        std::lock_guard<std::mutex> lock(mutex);
        if (r == rank) message = e.what();
        throw;
      }
    });
  } catch (const Error&) {
  }
  return message;
}

Box Rows(const Shape& shape, int64_t begin, int64_t end) {
  Box box = FullBox(shape);
  box.dims[0] = begin < end ? IndexSet{{begin, end}} : IndexSet{};
  return box;
}

LocalTensor Filled(Shape shape, DType dtype, int64_t rank, int64_t salt) {
  LocalTensor t(std::move(shape), dtype);
  for (int64_t i = 0; i < t.numel(); ++i) {
    // Small values of both signs so that sums, products and averages stay exact-ish but nontrivial.
    t.SetDouble(
        i, static_cast<double>(((i * 7 + rank * 13 + salt) % 11) - 5) * (IsFloating(dtype) ? 0.37 : 1.0));
  }
  return t;
}

}  // namespace

TEST_CASE("cuda backend: random redistributes equal Distribute and the local backend bitwise",
          "[gpu][property]") {
  const int64_t cases = shardscope::KnobInteger(shardscope::knobs::GpuCases()).value_or(300);
  Generator gen(20240611, {{4}, {2, 2}, {4, 1}, {1, 4}, {2, 2, 2}, {8}, {1}});
  int64_t run = 0, skipped = 0, strided = 0;
  for (int64_t k = 0; k < cases; ++k) {
    Case c = gen.Next();
    try {
      MakePlan(c.src, c.dst, 0, c.plan_options);
    } catch (const Error&) {
      ++skipped;
      continue;
    }
    const LocalTensor global = SeededTensor(c.src.shape, c.src.dtype, c.seed);
    std::vector<LocalTensor> local;
    try {
      local = RedistributeAll("local", c, global);
    } catch (const Error& e) {
      if (e.code() != ErrorCode::kUnsupported)
        FAIL("local backend threw " << e.what() << ": " << c.Describe());
      ++skipped;
      continue;
    }
    std::vector<LocalTensor> gpu = RedistributeAll("cuda", c, global);
    ++run;
    if (c.src.HasStridedShard() || c.dst.HasStridedShard()) ++strided;
    for (int64_t r = 0; r < c.src.mesh.size(); ++r) {
      INFO("case " << k << " rank " << r << ": " << c.Describe());
      const LocalTensor& got = gpu[static_cast<size_t>(r)];
      REQUIRE(got.shape() == local[static_cast<size_t>(r)].shape());
      REQUIRE(got.BitwiseEqual(local[static_cast<size_t>(r)]));
      if (!HasPartial(c.dst)) REQUIRE(got.BitwiseEqual(Distribute(global, c.dst, r)));
    }
  }
  std::printf("cuda property: %lld cases checked (%lld with _StridedShard), %lld skipped as unsupported\n",
              static_cast<long long>(run), static_cast<long long>(strided), static_cast<long long>(skipped));
  if (cases >= 20) REQUIRE(run > 0);
  // The shared generator draws literal and encoded _StridedShard cases.
  if (cases >= 100) REQUIRE(strided > 0);
}

TEST_CASE("cuda backend: v-collectives on uneven, empty and partly covered views", "[gpu]") {
  const int64_t n = 4;
  const DType dtype = GENERATE(DType::kF32, DType::kF64, DType::kF16, DType::kBF16, DType::kI32, DType::kI64);
  Group world{{0, 1, 2, 3}, {0}};
  // Rank r holds r rows (rank 0 none); everyone gathers all 6 rows into rows [1, 7) of an 8-row
  // tensor whose first and last rows keep their values (the views cover it partly).
  auto all_gather = [&](Communicator& c, int64_t r, LocalTensor& out) {
    LocalTensor in = Filled(Shape{r, 3}, dtype, r, 1);
    out = Filled(Shape{8, 3}, dtype, 100 + r, 2);
    std::vector<RecvView> recv;
    int64_t at = 1;
    for (int64_t i = 0; i < n; ++i) {
      recv.push_back(MutableViewOf(out, Rows(out.shape(), at, at + i)));
      at += i;
    }
    c.AllGatherV(world, ViewOf(in), std::move(recv));
  };
  // Uneven reduce_scatter per op, with the flattened avg divisor.
  auto reduce_scatter = [&](ReduceOp op, int64_t divisor) {
    return [&, op, divisor](Communicator& c, int64_t r, LocalTensor& out) {
      LocalTensor in = Filled(Shape{10, 2}, dtype, r, 3);
      const int64_t split[] = {0, 1, 4, 4, 10};  // member 2's share is empty
      std::vector<SendView> send;
      for (int64_t j = 0; j < n; ++j) send.push_back(ViewOf(in, Rows(in.shape(), split[j], split[j + 1])));
      out = LocalTensor(Shape{split[r + 1] - split[r], 2}, dtype);
      c.ReduceScatterV(world, Reduction{op, divisor}, std::move(send), MutableViewOf(out));
    };
  };
  auto all_to_all = [&](Communicator& c, int64_t r, LocalTensor& out) {
    // Member r sends j+r rows to member j; a strided column box on the way in.
    LocalTensor in = Filled(Shape{20, 4}, dtype, r, 4);
    std::vector<SendView> send;
    int64_t at = 0;
    for (int64_t j = 0; j < n; ++j) {
      send.push_back(ViewOf(in, Rows(in.shape(), at, at + j + r)));
      at += j + r;
    }
    int64_t total = 0;
    for (int64_t i = 0; i < n; ++i) total += r + i;
    out = Filled(Shape{total, 5}, dtype, r, 5);
    std::vector<RecvView> recv;
    at = 0;
    for (int64_t i = 0; i < n; ++i) {
      Box b = Rows(out.shape(), at, at + r + i);
      b.dims[1] = {{0, 1}, {2, 5}};  // column 1 is never written
      recv.push_back(MutableViewOf(out, b));
      at += r + i;
    }
    c.AllToAllV(world, std::move(send), std::move(recv));
  };
  auto all_reduce = [&](ReduceOp op) {
    return [&, op](Communicator& c, int64_t r, LocalTensor& out) {
      LocalTensor in = Filled(Shape{3, 5}, dtype, r, 6);
      out = LocalTensor(Shape{3, 5}, dtype);
      c.AllReduce(Group{{3, 1, 0, 2}, {0}}, Reduction{op, 1}, ViewOf(in), MutableViewOf(out));
    };
  };
  auto broadcast = [&](Communicator& c, int64_t r, LocalTensor& out) {
    LocalTensor in = Filled(Shape{7}, dtype, r, 7);
    out = LocalTensor(Shape{7}, dtype);
    c.Broadcast(world, 2, ViewOf(in), MutableViewOf(out));
  };
  std::vector<std::pair<std::string, std::function<void(Communicator&, int64_t, LocalTensor&)>>> posts = {
      {"all_gather", all_gather},
      {"all_to_all", all_to_all},
      {"broadcast", broadcast},
      {"reduce_scatter sum", reduce_scatter(ReduceOp::kSum, 1)},
      {"reduce_scatter avg /3", reduce_scatter(ReduceOp::kAvg, 3)},
      {"reduce_scatter product", reduce_scatter(ReduceOp::kProduct, 1)},
      {"reduce_scatter min", reduce_scatter(ReduceOp::kMin, 1)},
      {"all_reduce max", all_reduce(ReduceOp::kMax)},
      {"all_reduce avg", all_reduce(ReduceOp::kAvg)},
  };
  for (const auto& [name, post] : posts) {
    INFO(name << " " << DTypeName(dtype));
    std::vector<LocalTensor> want = Outputs("local", n, post);
    std::vector<LocalTensor> got = Outputs("cuda", n, post);
    for (int64_t r = 0; r < n; ++r) {
      INFO("rank " << r);
      REQUIRE(got[static_cast<size_t>(r)].BitwiseEqual(want[static_cast<size_t>(r)]));
    }
  }
}

TEST_CASE("cuda backend: shapes, barriers, timing and errors as the local backend", "[gpu]") {
  // Shape exchange and barrier: host-side, like the local backend.
  std::vector<std::vector<std::vector<int64_t>>> shapes(3);
  CudaLocalWorld::Run(3, [&](Communicator& c, int64_t r) {
    Group g{{0, 1, 2}, {0}};
    std::vector<std::vector<int64_t>> send(3);
    for (int64_t j = 0; j < 3; ++j)
      send[static_cast<size_t>(j)] = std::vector<int64_t>(static_cast<size_t>(j), r);
    c.Barrier(g);
    shapes[static_cast<size_t>(r)] = c.ExchangeShapes(g, send);
  });
  for (int64_t r = 0; r < 3; ++r) {
    for (int64_t i = 0; i < 3; ++i)
      REQUIRE(shapes[static_cast<size_t>(r)][static_cast<size_t>(i)] ==
              std::vector<int64_t>(static_cast<size_t>(r), i));
  }
  // Device times: within the wall-clock bracket of the call (checked here, not on the rank
  // threads: Catch2 v2 assertions are not thread-safe).
  CollectiveStats timed;
  int64_t before = 0, after = 0;
  CudaLocalWorld::Run(2, [&](Communicator& c, int64_t r) {
    LocalTensor in(Shape{1 << 16}, DType::kF32), out(Shape{2 << 16}, DType::kF32);
    std::vector<RecvView> recv{MutableViewOf(out, Rows(out.shape(), 0, 1 << 16)),
                               MutableViewOf(out, Rows(out.shape(), 1 << 16, 2 << 16))};
    auto now = [] {
      return std::chrono::duration_cast<std::chrono::nanoseconds>(
                 std::chrono::steady_clock::now().time_since_epoch())
          .count();
    };
    const int64_t t0 = now();
    CollectiveStats s = c.AllGatherV(Group{{0, 1}, {0}}, ViewOf(in), std::move(recv));
    if (r == 0) {
      after = now();
      before = t0;
      timed = s;
    }
  });
  // start = end - elapsed, and the host sees the end event after the device finished it (10 us
  // of slack for the event timer's resolution).
  REQUIRE(timed.start_ns >= before - 10000);
  REQUIRE(timed.end_ns >= timed.start_ns);
  REQUIRE(timed.end_ns <= after);
  REQUIRE(timed.bytes_recv == std::vector<int64_t>{0, (1 << 16) * 4});
  // Mismatched counts: the same message as the local backend on every member.
  Group world{{0, 1, 2, 3}, {0}};
  RankFn mismatch = [&](Communicator& c, int64_t r) { PostMismatchedAllGather(c, r, world); };
  for (int64_t r = 0; r < 4; ++r) {
    const std::string local = MessageOn("local", 4, r, mismatch);
    REQUIRE(!local.empty());
    REQUIRE(MessageOn("cuda", 4, r, mismatch) == local);
  }
  // A rank that never joins: every waiting member fails with the missing rank's name.
  CudaWorldOptions options;
  options.timeout = std::chrono::milliseconds(300);
  std::string missing;
  try {
    CudaLocalWorld::Run(
        2,
        [&](Communicator& c, int64_t r) {
          if (r == 1) return;
          c.Barrier(Group{{0, 1}, {0}});
        },
        options);
  } catch (const Error& e) {
    missing = e.what();
  }
  REQUIRE(missing.find("ranks 1") != std::string::npos);
}

namespace {

// `--nccl [CASES]`: the property check on the nccl backend, one rank per MPI process.
int RunNccl(int64_t cases) {
  MpiOptions mpi_options;
  mpi_options.timeout = std::chrono::milliseconds(120000);
  MpiWorld mpi(mpi_options);
  NcclOptions nccl_options = NcclOptions::FromEnv();
  nccl_options.timeout = std::chrono::milliseconds(120000);
  NcclWorld nccl(mpi, nccl_options);
  const int64_t rank = nccl.rank(), n = nccl.size();
  Communicator& comm = nccl.comm();
  std::vector<Shape> meshes{{n}, {n, 1}, {1, n}};
  if (n % 2 == 0) meshes.push_back({2, n / 2});
  Generator gen(20240612, meshes);
  int64_t run = 0, skipped = 0, failed = 0;
  for (int64_t k = 0; k < cases; ++k) {
    Case c = gen.Next();
    const LocalTensor global = SeededTensor(c.src.shape, c.src.dtype, c.seed);
    LocalTensor got;
    std::string error;
    const CaseRun outcome = RedistributeCase(comm, rank, c, global, got, error);
    if (outcome == CaseRun::kSkipped) ++skipped;
    if (outcome == CaseRun::kFailed) {
      ++failed;
      std::fprintf(stderr, "rank %lld: FAIL case %lld threw %s: %s\n", static_cast<long long>(rank),
                   static_cast<long long>(k), error.c_str(), c.Describe().c_str());
    }
    if (outcome != CaseRun::kRan) continue;
    ++run;
    std::vector<LocalTensor> reference = RedistributeAll("local", c, global);
    const LocalTensor& want = reference[static_cast<size_t>(rank)];
    // NCCL reduces floats in its own order (f16/bf16 in their own precision): bitwise only
    // where that order cannot matter.
    const bool bitwise =
        n == 1 || nccl_options.exact_reductions || !IsFloating(c.src.dtype) || !HasPartial(c.src);
    const double tolerance = bitwise ? 0.0 : PartitionTolerance(c.src.dtype);
    std::string why;
    if (got.shape() != want.shape()) {
      why = "shape " + FormatShape(got.shape()) + " vs local " + FormatShape(want.shape());
    } else if (bitwise ? !got.BitwiseEqual(want) : FirstDifference(got, want, tolerance) >= 0) {
      why = "differs from the local backend";
    } else if (!HasPartial(c.dst) && FirstDifference(got, Distribute(global, c.dst, rank), tolerance) >= 0) {
      why = "differs from Distribute(X, dst)";
    }
    if (!why.empty()) {
      ++failed;
      if (failed <= 10)
        std::fprintf(stderr, "rank %lld: FAIL case %lld %s: %s\n", static_cast<long long>(rank),
                     static_cast<long long>(k), why.c_str(), c.Describe().c_str());
    }
  }
  // Direct collectives on the whole job (with one GPU, n = 1, the only way NCCL itself runs):
  // uneven all_gather, all_to_all, broadcast, reduce_scatter and all_reduce per op and dtype.
  Group world;
  for (int64_t r = 0; r < n; ++r) world.ranks.push_back(r);
  for (DType dtype : {DType::kF32, DType::kF64, DType::kF16, DType::kBF16, DType::kI32, DType::kI64}) {
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProduct}) {
      auto post = [&](Communicator& c, int64_t r, LocalTensor& out) {
        // all_gather: rank i holds i + 1 rows; then the gathered rows all-reduced into `out`.
        LocalTensor in = Filled(Shape{r + 1, 3}, dtype, r, 1);
        LocalTensor gathered(Shape{n * (n + 1) / 2, 3}, dtype);
        std::vector<RecvView> recv;
        for (int64_t i = 0, at = 0; i < n; at += i + 1, ++i)
          recv.push_back(MutableViewOf(gathered, Rows(gathered.shape(), at, at + i + 1)));
        c.AllGatherV(world, ViewOf(in), std::move(recv));
        LocalTensor mixed(gathered.shape(), dtype);
        std::vector<SendView> send;
        std::vector<RecvView> back;
        const int64_t rows = gathered.shape()[0];
        for (int64_t j = 0; j < n; ++j) {
          send.push_back(ViewOf(gathered, Rows(gathered.shape(), rows * j / n, rows * (j + 1) / n)));
          back.push_back(MutableViewOf(mixed, Rows(mixed.shape(), rows * j / n, rows * (j + 1) / n)));
        }
        c.AllToAllV(world, std::move(send), std::move(back));
        LocalTensor root_copy(mixed.shape(), dtype);
        c.Broadcast(world, n - 1, ViewOf(mixed), MutableViewOf(root_copy));
        out = LocalTensor(root_copy.shape(), dtype);
        c.AllReduce(world, Reduction{op, op == ReduceOp::kAvg ? 2 : 1}, ViewOf(root_copy),
                    MutableViewOf(out));
      };
      std::vector<LocalTensor> want = Outputs("local", n, post);
      LocalTensor got;
      post(comm, rank, got);
      const bool bitwise = n <= 1 || nccl_options.exact_reductions || !IsFloating(dtype);
      const LocalTensor& w = want[static_cast<size_t>(rank)];
      ++run;
      if (bitwise ? !got.BitwiseEqual(w) : FirstDifference(got, w, PartitionTolerance(dtype)) >= 0) {
        ++failed;
        std::fprintf(stderr, "rank %lld: FAIL direct collectives %s %s differ from the local backend\n",
                     static_cast<long long>(rank), std::string(DTypeName(dtype)).c_str(),
                     std::string(ReduceOpName(op)).c_str());
      }
    }
  }
  // Sum the tallies over ranks with the backend under test.
  LocalTensor mine(Shape{3}, DType::kI64), sum(Shape{3}, DType::kI64);
  mine.SetDouble(0, static_cast<double>(run));
  mine.SetDouble(1, static_cast<double>(skipped));
  mine.SetDouble(2, static_cast<double>(failed));
  comm.AllReduce(world, {}, ViewOf(mine), MutableViewOf(sum));
  const long long total_failed = static_cast<long long>(sum.GetDouble(2));
  if (rank == 0) {
    std::printf(
        "shardscope_gpu_tests --nccl: %lld ranks (one GPU each), reductions %s; %lld rank-cases checked "
        "(%lld skipped as unsupported), %lld failed\n%s\n",
        static_cast<long long>(n), nccl_options.exact_reductions ? "exact" : "native",
        static_cast<long long>(sum.GetDouble(0)), static_cast<long long>(sum.GetDouble(1)), total_failed,
        total_failed == 0 ? "PASS" : "FAIL");
  }
  return total_failed == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string why;
  if (CudaDeviceCount(&why) == 0) {
    std::printf("SKIP: %s\n", why.c_str());
    return 77;
  }
  if (argc > 1 && std::strcmp(argv[1], "--nccl") == 0) {
    try {
      return RunNccl(argc > 2 ? std::max<long long>(1, std::atoll(argv[2])) : 200);
    } catch (const Error& e) {
      std::fprintf(stderr, "shardscope_gpu_tests --nccl: %s\n", e.what());
      return 3;
    }
  }
  return Catch::Session().run(argc, argv);
}
