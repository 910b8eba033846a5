#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "shardscope/engine/comm/communicator.hpp"
#include "shardscope/engine/comm/local_backend.hpp"
#include "shardscope/error.hpp"

using namespace shardscope;
using namespace shardscope::engine;

namespace {

// nccl-tests style inputs: a function of (rank, index) so expected results follow by formula.
LocalTensor RankTensor(Shape shape, DType dtype, int64_t rank, int64_t scale = 100) {
  LocalTensor t(std::move(shape), dtype);
  for (int64_t i = 0; i < t.numel(); ++i) t.SetDouble(i, static_cast<double>(rank * scale + i));
  return t;
}

std::vector<double> Values(const LocalTensor& t) {
  std::vector<double> out;
  for (int64_t i = 0; i < t.numel(); ++i) out.push_back(t.GetDouble(i));
  return out;
}

Group WorldGroup(int64_t n) {
  Group g;
  for (int64_t r = 0; r < n; ++r) g.ranks.push_back(r);
  g.mesh_dims = {0};
  return g;
}

}  // namespace

TEST_CASE("f16 and bf16 conversions round to nearest even", "[engine][tensor]") {
  CHECK(HalfBitsToFloat(FloatToHalfBits(1.0f)) == 1.0f);
  CHECK(FloatToHalfBits(65504.0f) == 0x7BFF);
  CHECK(FloatToHalfBits(65520.0f) == 0x7C00);                   // midpoint to 2^16 rounds to inf
  CHECK(FloatToHalfBits(2049.0f) == FloatToHalfBits(2048.0f));  // tie -> even mantissa
  CHECK(FloatToHalfBits(2051.0f) == FloatToHalfBits(2052.0f));  // tie -> even mantissa
  CHECK(HalfBitsToFloat(0x0001) == 5.9604644775390625e-8f);     // smallest subnormal 2^-24
  CHECK(FloatToHalfBits(5.9604644775390625e-8f) == 0x0001);
  CHECK(FloatToHalfBits(2.98023223876953125e-8f) == 0x0000);  // 2^-25: tie -> 0
  CHECK(FloatToHalfBits(-0.0f) == 0x8000);
  CHECK(BFloat16BitsToFloat(FloatToBFloat16Bits(1.0f)) == 1.0f);
  CHECK(FloatToBFloat16Bits(257.0f) == FloatToBFloat16Bits(256.0f));  // tie -> even
  CHECK(FloatToBFloat16Bits(259.0f) == FloatToBFloat16Bits(260.0f));  // tie -> even
}

TEST_CASE("all_gatherv, all_to_allv, broadcast and barrier move exact bytes", "[engine][local]") {
  const int64_t n = 4;
  std::vector<LocalTensor> gathered(n), exchanged(n), broadcast(n);
  LocalWorld::Run(n, [&](Communicator& comm, int64_t rank) {
    Group g = WorldGroup(n);
    // all_gatherv: rank r contributes r+1 elements (rank 3 none: an empty shard), concatenated.
    LocalTensor mine = RankTensor({rank == 3 ? 0 : rank + 1}, DType::kI32, rank);
    LocalTensor out({6}, DType::kI32);
    std::vector<RecvView> recv;
    int64_t at = 0;
    for (int64_t i = 0; i < n; ++i) {
      int64_t len = i == 3 ? 0 : i + 1;
      recv.push_back(MutableViewOf(out, Box{{IndexSet{{at, at + len}}}}));
      at += len;
    }
    comm.AllGatherV(g, ViewOf(mine), std::move(recv));
    gathered[static_cast<size_t>(rank)] = out;

    // all_to_allv on a 2-d tensor: column j of my 3x4 block goes to rank j, lands in row-of-sender.
    LocalTensor block = RankTensor({3, 4}, DType::kF64, rank);
    LocalTensor result({4, 3}, DType::kF64);
    std::vector<SendView> send;
    std::vector<RecvView> into;
    for (int64_t j = 0; j < n; ++j) {
      send.push_back(ViewOf(block, Box{{IndexSet{{0, 3}}, IndexSet{{j, j + 1}}}}));
      into.push_back(MutableViewOf(result, Box{{IndexSet{{j, j + 1}}, IndexSet{{0, 3}}}}));
    }
    comm.AllToAllV(g, std::move(send), std::move(into));
    exchanged[static_cast<size_t>(rank)] = result;

    LocalTensor root_data = RankTensor({5}, DType::kBF16, rank);
    LocalTensor got({5}, DType::kBF16);
    comm.Broadcast(g, 2, ViewOf(root_data), MutableViewOf(got));
    broadcast[static_cast<size_t>(rank)] = got;
    comm.Barrier(g);
  });
  for (int64_t r = 0; r < n; ++r) {
    // Member i's i+1 values are 100*i + k.
    CHECK(Values(gathered[r]) == std::vector<double>{0, 100, 101, 200, 201, 202});
    // result[i][k] = block_i[k][r] = 100*i + 4*k + r.
    std::vector<double> want;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t k = 0; k < 3; ++k) want.push_back(static_cast<double>(100 * i + 4 * k + r));
    CHECK(Values(exchanged[r]) == want);
    CHECK(Values(broadcast[r]) == std::vector<double>{200, 201, 202, 203, 204});
  }
}

TEST_CASE("all_reduce and reduce_scatterv apply every op in group order", "[engine][local]") {
  const int64_t n = 3;
  struct Result {
    std::vector<double> sum, avg, mn, mx, prod, scatter;
  };
  std::vector<Result> results(n);
  LocalWorld::Run(n, [&](Communicator& comm, int64_t rank) {
    Group g = WorldGroup(n);
    LocalTensor in = RankTensor({4}, DType::kI64, rank, 10);  // rank r: 10r + i
    auto reduce = [&](ReduceOp op, int64_t divisor = 1) {
      LocalTensor out({4}, DType::kI64);
      comm.AllReduce(g, Reduction{op, divisor}, ViewOf(in), MutableViewOf(out));
      return Values(out);
    };
    Result& res = results[static_cast<size_t>(rank)];
    res.sum = reduce(ReduceOp::kSum);
    res.avg = reduce(ReduceOp::kAvg);
    res.mn = reduce(ReduceOp::kMin);
    res.mx = reduce(ReduceOp::kMax);
    res.prod = reduce(ReduceOp::kProduct);
    // reduce_scatterv: rank j gets elements [j, j+1) (rank 2: [2,4)), summed then divided by 2.
    std::vector<SendView> send;
    for (int64_t j = 0; j < n; ++j) {
      send.push_back(ViewOf(in, Box{{IndexSet{{j, j == 2 ? 4 : j + 1}}}}));
    }
    LocalTensor out({rank == 2 ? 2 : 1}, DType::kI64);
    comm.ReduceScatterV(g, Reduction{ReduceOp::kSum, 2}, std::move(send), MutableViewOf(out));
    res.scatter = Values(out);
  });
  for (int64_t r = 0; r < n; ++r) {
    // Element i: contributions i, 10+i, 20+i.
    CHECK(results[r].sum == std::vector<double>{30, 33, 36, 39});
    CHECK(results[r].avg == std::vector<double>{10, 11, 12, 13});
    CHECK(results[r].mn == std::vector<double>{0, 1, 2, 3});
    CHECK(results[r].mx == std::vector<double>{20, 21, 22, 23});
    CHECK(results[r].prod == std::vector<double>{0, 1 * 11 * 21, 2 * 12 * 22, 3 * 13 * 23});
  }
  CHECK(results[0].scatter == std::vector<double>{15});      // 30 / 2
  CHECK(results[1].scatter == std::vector<double>{16});      // 33 / 2 truncated
  CHECK(results[2].scatter == std::vector<double>{18, 19});  // 36/2, 39/2 truncated
}

TEST_CASE("f16 all_reduce accumulates in f32 and rounds once", "[engine][local]") {
  // 2048 + 1 + 1: naive f16 accumulation gives 2048 twice (spacing 2 at 2048, ties to even);
  // f32 accumulation gives 2050, which f16 holds exactly.
  std::vector<double> got(3);
  LocalWorld::Run(3, [&](Communicator& comm, int64_t rank) {
    LocalTensor in({1}, DType::kF16);
    in.SetDouble(0, rank == 0 ? 2048.0 : 1.0);
    LocalTensor out({1}, DType::kF16);
    comm.AllReduce(WorldGroup(3), Reduction{}, ViewOf(in), MutableViewOf(out));
    got[static_cast<size_t>(rank)] = out.GetDouble(0);
  });
  CHECK(got == std::vector<double>{2050, 2050, 2050});
}

TEST_CASE("sub-groups run independently and in order", "[engine][local]") {
  // 2x2 mesh: rows {0,1},{2,3} all_reduce, then columns {0,2},{1,3}.
  std::vector<double> got(4);
  LocalWorld::Run(4, [&](Communicator& comm, int64_t rank) {
    LocalTensor in({1}, DType::kF32);
    in.SetDouble(0, static_cast<double>(1 << rank));
    LocalTensor row({1}, DType::kF32), col({1}, DType::kF32);
    Group rows{{rank / 2 * 2, rank / 2 * 2 + 1}, {1}};
    Group cols{{rank % 2, rank % 2 + 2}, {0}};
    comm.AllReduce(rows, Reduction{}, ViewOf(in), MutableViewOf(row));
    comm.AllReduce(cols, Reduction{}, ViewOf(row), MutableViewOf(col));
    got[static_cast<size_t>(rank)] = col.GetDouble(0);
  });
  CHECK(got == std::vector<double>{15, 15, 15, 15});
}

TEST_CASE("the validation funnel rejects bad groups and mismatched counts", "[engine][local]") {
  auto expect_error = [](const std::function<void(Communicator&, int64_t)>& fn, const std::string& needle) {
    try {
      LocalWorld::Run(2, fn, LocalWorldOptions{std::chrono::milliseconds(500)});
      FAIL("no error");
    } catch (const Error& e) {
      INFO(e.what());
      CHECK(e.code() == ErrorCode::kInvalidInput);
      CHECK(std::string(e.what()).find(needle) != std::string::npos);
    }
  };
  expect_error([](Communicator& comm, int64_t) { comm.Barrier(Group{{0, 0}, {}}); }, "appears twice");
  expect_error([](Communicator& comm, int64_t) { comm.Barrier(Group{{0, 5}, {}}); }, "outside the world");
  expect_error([](Communicator& comm, int64_t r) { comm.Barrier(Group{{1 - r}, {}}); }, "not a member");
  expect_error(
      [](Communicator& comm, int64_t rank) {
        LocalTensor in({rank + 1}, DType::kF32), out({2}, DType::kF32);
        comm.AllGatherV(
            WorldGroup(2), ViewOf(in),
            {MutableViewOf(out, Box{{IndexSet{{0, 1}}}}), MutableViewOf(out, Box{{IndexSet{{1, 2}}}})});
      },
      "rank 0 expects 1 elements from rank 1, which sends 2");
  expect_error(
      [](Communicator& comm, int64_t rank) {
        LocalTensor in({1}, rank == 0 ? DType::kF32 : DType::kF64), out({1}, in.dtype());
        comm.AllReduce(WorldGroup(2), Reduction{}, ViewOf(in), MutableViewOf(out));
      },
      "passes f64 but rank 0 passes f32");
  expect_error(
      [](Communicator& comm, int64_t) {
        LocalTensor in({2}, DType::kF32);
        comm.AllReduce(WorldGroup(2), Reduction{}, ViewOf(in), MutableViewOf(in));
      },
      "overlapping");
  expect_error(
      [](Communicator& comm, int64_t) {
        LocalTensor in({2}, DType::kF32), out({2}, DType::kF32);
        comm.AllReduce(WorldGroup(2), Reduction{}, ViewOf(in, Box{{IndexSet{{0, 3}}}}), MutableViewOf(out));
      },
      "outside dim 0");
}

TEST_CASE("watchdog: a rank that skips a collective is named on every waiting rank", "[engine][local]") {
  const int64_t n = 4;
  std::mutex mutex;
  std::vector<std::string> errors(n);
  std::vector<ErrorCode> codes(n, ErrorCode::kInternal);
  auto start = std::chrono::steady_clock::now();
  try {
    LocalWorld::Run(
        n,
        [&](Communicator& comm, int64_t rank) {
          if (rank == 2) {
            // Alive but never joins: the timeout path (not the "finished" fast path).
            std::this_thread::sleep_for(std::chrono::milliseconds(400));
            return;
          }
          LocalTensor in({1}, DType::kF32);
          std::vector<RecvView> recv;
          LocalTensor out({4}, DType::kF32);
          for (int64_t i = 0; i < n; ++i) recv.push_back(MutableViewOf(out, Box{{IndexSet{{i, i + 1}}}}));
          try {
            comm.AllGatherV(WorldGroup(n), ViewOf(in), std::move(recv));
          } catch (const Error& e) {
            std::lock_guard<std::mutex> lock(mutex);
            errors[static_cast<size_t>(rank)] = e.what();
            codes[static_cast<size_t>(rank)] = e.code();
            throw;
          }
        },
        LocalWorldOptions{std::chrono::milliseconds(200)});
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::kTimeout);
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(seconds < 2.0);
  for (int64_t r : {0, 1, 3}) {
    INFO(errors[r]);
    CHECK(codes[r] == ErrorCode::kTimeout);
    CHECK(errors[r] == "all_gather on group [0,1,2,3] (mesh dim 0): ranks 2 never joined within 0.2 s");
  }
}

TEST_CASE("a rank that finishes without joining fails its peers at once", "[engine][local]") {
  auto start = std::chrono::steady_clock::now();
  try {
    LocalWorld::Run(3, [&](Communicator& comm, int64_t rank) {
      if (rank == 1) return;
      comm.Barrier(WorldGroup(3));
    });
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::kBackend);
    CHECK(std::string(e.what()) ==
          "barrier on group [0,1,2] (mesh dim 0): ranks 1 finished without joining it");
  }
  // Default timeout is 30 s: finishing fast proves the exit path, not the timer, ended it.
  CHECK(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < 2.0);
}

TEST_CASE("the first error of any rank is rethrown", "[engine][local]") {
  try {
    LocalWorld::Run(4, [&](Communicator& comm, int64_t rank) {
      if (rank == 3) throw InvalidInput("rank 3 broke");
      comm.Barrier(WorldGroup(4));
    });
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()) == "rank 3 broke");
  }
}

TEST_CASE("tensors of 2 MiB and more are 2 MiB aligned (huge-page candidates); sizes around it are usable",
          "[engine][tensor]") {
  // kHugePageBytes is the threshold; the alignment is what madvise(MADV_HUGEPAGE) needs for whole
  // huge pages. Sizes straddle the threshold in every dtype width.
  for (DType dtype : {DType::kF16, DType::kF32, DType::kF64}) {
    const int64_t es = DTypeSize(dtype);
    const int64_t at = static_cast<int64_t>(detail::kHugePageBytes) / es;
    for (int64_t n : {at - 1, at, at + 1, 3 * at + 5}) {
      LocalTensor t = LocalTensor::Uninitialized(Shape{n}, dtype);
      const auto address = reinterpret_cast<uintptr_t>(t.data());
      INFO(DTypeName(dtype) << " x " << n);
      if (n * es >= static_cast<int64_t>(detail::kHugePageBytes))
        CHECK(address % detail::kHugePageBytes == 0);
      // Usable to the last byte, and a copy and a move keep the contents.
      std::memset(t.data(), 0x5A, t.nbytes());
      LocalTensor copy = t;
      CHECK(copy.BitwiseEqual(t));
      LocalTensor moved = std::move(copy);
      CHECK(moved.BitwiseEqual(t));
    }
  }
}

TEST_CASE("freed large blocks are reused by the same size class, never handed out twice",
          "[engine][tensor][local]") {
  const std::size_t mib = std::size_t{1} << 20;
  void* a = detail::AllocateLarge(3 * mib);
  detail::FreeLarge(a, 3 * mib);
  void* b = detail::AllocateLarge(3 * mib + 1);  // rounds to the same 4 MiB class
  CHECK(b == a);
  void* c = detail::AllocateLarge(3 * mib);  // b is taken: any other block of the class
  CHECK(c != b);
  detail::FreeLarge(b, 3 * mib + 1);
  detail::FreeLarge(c, 3 * mib);
  // Threads allocating and freeing at once: each block is written with its owner's pattern and
  // checked before it is freed, so a block given to two owners would show.
  std::vector<std::thread> threads;
  std::vector<int> bad(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([t, mib, &bad] {
      for (int k = 0; k < 200; ++k) {
        const std::size_t bytes = (2 + static_cast<std::size_t>((k * 7 + t) % 5)) * mib;
        auto* p = static_cast<unsigned char*>(detail::AllocateLarge(bytes));
        std::memset(p, t + 1, bytes);
        std::this_thread::yield();
        for (std::size_t i = 0; i < bytes; i += 4096) bad[static_cast<size_t>(t)] += p[i] != t + 1;
        detail::FreeLarge(p, bytes);
      }
    });
  }
  for (std::thread& th : threads) th.join();
  CHECK(bad == std::vector<int>(4, 0));
}

TEST_CASE(
    "a thread's next large allocation takes the block it freed itself; an exited thread's blocks are reused",
    "[engine][tensor][local]") {
  // Rank threads allocate and free the same sizes every redistribute. A thread gets back the block
  // it freed last (still in its core's caches), not the one another thread freed since, which a
  // process-wide last-in-first-out list would hand it; blocks a thread kept are not lost when it
  // exits.
  const std::size_t bytes = std::size_t{5} << 20;  // the 6 MiB class
  void* mine = detail::AllocateLarge(bytes);
  void* theirs = nullptr;
  detail::FreeLarge(mine, bytes);
  std::thread([&] {
    theirs = detail::AllocateLarge(bytes);  // not `mine`: that one is kept for this test's thread
    detail::FreeLarge(theirs, bytes);       // freed after `mine`
  }).join();
  CHECK(theirs != mine);
  void* first = detail::AllocateLarge(bytes);
  void* second = detail::AllocateLarge(bytes);
  CHECK(first == mine);
  CHECK(second == theirs);  // handed to the process's lists when its thread exited
  detail::FreeLarge(first, bytes);
  detail::FreeLarge(second, bytes);
}

TEST_CASE("a large all_reduce (split over the members) gives every rank the group-order result bitwise",
          "[engine][local]") {
  // 70001 f32 per rank (273 KiB): above kLocalSplitAllReduceBytes, parts of unequal size. Float
  // sums depend on the order: the expected value folds rank 0, 1, 2 in that order, in f32.
  const int64_t n = 3, count = 70001;
  REQUIRE(count * 4 >= kLocalSplitAllReduceBytes);
  auto input = [](int64_t rank, int64_t i) {
    return static_cast<float>(rank + 1) * 0.1f + static_cast<float>(i % 1000) * 1.0e-3f;
  };
  std::vector<std::vector<uint32_t>> bits(n);
  LocalWorld::Run(n, [&](Communicator& comm, int64_t rank) {
    LocalTensor in({count}, DType::kF32), out({count}, DType::kF32);
    float* x = reinterpret_cast<float*>(in.data());
    for (int64_t i = 0; i < count; ++i) x[i] = input(rank, i);
    comm.AllReduce(WorldGroup(n), Reduction{ReduceOp::kAvg, 1}, ViewOf(in), MutableViewOf(out));
    bits[static_cast<size_t>(rank)].resize(static_cast<size_t>(count));
    std::memcpy(bits[static_cast<size_t>(rank)].data(), out.data(), static_cast<size_t>(count) * 4);
  });
  for (int64_t i = 0; i < count; i += 997) {
    const float want = ((input(0, i) + input(1, i)) + input(2, i)) / 3.0f;
    uint32_t want_bits;
    std::memcpy(&want_bits, &want, 4);
    INFO("element " << i);
    CHECK(bits[0][static_cast<size_t>(i)] == want_bits);
  }
  CHECK(bits[1] == bits[0]);
  CHECK(bits[2] == bits[0]);
}

TEST_CASE("collectives of 16 MiB and more (streamed stores) give the definition's values",
          "[engine][local]") {
  // 3 ranks x 1.5M f32 (6 MiB) per rank: every collective's receive views hold at least 16 MiB
  // over the group, so the backend writes them with non-temporal stores. Inputs are exact in f32
  // (integers below 2^24), so sums are exact and expected values follow by formula.
  const int64_t n = 3, count = 1'500'001 / n * n;
  auto input = [](int64_t rank, int64_t i) { return static_cast<float>(rank * 7 + i % 100003); };
  std::vector<int64_t> bad(n, 0);
  LocalWorld::Run(n, [&](Communicator& comm, int64_t rank) {
    LocalTensor in({count}, DType::kF32), gathered({n * count}, DType::kF32), sum({count}, DType::kF32);
    LocalTensor part({count / n}, DType::kF32);
    float* x = reinterpret_cast<float*>(in.data());
    for (int64_t i = 0; i < count; ++i) x[i] = input(rank, i);
    std::vector<RecvView> rows;
    for (int64_t i = 0; i < n; ++i) {
      Box box = FullBox(gathered.shape());
      box.dims[0] = {{i * count, (i + 1) * count}};
      rows.push_back(MutableViewOf(gathered, box));
    }
    comm.AllGatherV(WorldGroup(n), ViewOf(in), std::move(rows));
    comm.AllReduce(WorldGroup(n), Reduction{ReduceOp::kSum, 1}, ViewOf(in), MutableViewOf(sum));
    std::vector<SendView> parts;
    for (int64_t i = 0; i < n; ++i) {
      Box box = FullBox(in.shape());
      box.dims[0] = {{i * count / n, (i + 1) * count / n}};
      parts.push_back(ViewOf(in, box));
    }
    comm.ReduceScatterV(WorldGroup(n), Reduction{ReduceOp::kSum, 1}, std::move(parts), MutableViewOf(part));
    const float* g = reinterpret_cast<const float*>(gathered.data());
    const float* s = reinterpret_cast<const float*>(sum.data());
    const float* p = reinterpret_cast<const float*>(part.data());
    int64_t wrong = 0;
    for (int64_t i = 0; i < count; ++i) {
      float want_sum = 0;
      for (int64_t r = 0; r < n; ++r) {
        want_sum += input(r, i);
        wrong += g[r * count + i] != input(r, i);
      }
      wrong += s[i] != want_sum;
      if (i < count / n) {
        const int64_t at = rank * count / n + i;
        wrong += p[i] != input(0, at) + input(1, at) + input(2, at);
      }
    }
    bad[static_cast<size_t>(rank)] = wrong;
  });
  CHECK(bad == std::vector<int64_t>(n, 0));
}

TEST_CASE("small and large collectives alternate on one group without mixing up rounds", "[engine][local]") {
  // Small ones are carried out by the last member to arrive, large ones by every member; both
  // kinds share the group's two slots. all_gather of rank-tagged values, expected by formula.
  const int64_t n = 4;
  std::vector<int> failures(n, 0);
  LocalWorld::Run(n, [&](Communicator& comm, int64_t rank) {
    for (int64_t round = 0; round < 40; ++round) {
      const int64_t per = round % 2 == 0 ? 4 : 4096;  // 64 B vs 64 KiB per rank
      LocalTensor in({per}, DType::kI32), out({per * n}, DType::kI32);
      for (int64_t i = 0; i < per; ++i)
        in.SetDouble(i, static_cast<double>(round * 1000 + rank * 100 + i % 100));
      std::vector<RecvView> recv;
      for (int64_t i = 0; i < n; ++i)
        recv.push_back(MutableViewOf(out, Box{{IndexSet{{i * per, (i + 1) * per}}}}));
      comm.AllGatherV(WorldGroup(n), ViewOf(in), std::move(recv));
      for (int64_t j = 0; j < per * n; ++j) {
        const double want = static_cast<double>(round * 1000 + (j / per) * 100 + (j % per) % 100);
        if (out.GetDouble(j) != want) ++failures[static_cast<size_t>(rank)];
      }
    }
  });
  CHECK(failures == std::vector<int>(n, 0));
}

TEST_CASE("after a member gave up on a collective, later ones on that group fail at once",
          "[engine][local]") {
  std::vector<std::string> second(2);
  auto start = std::chrono::steady_clock::now();
  try {
    LocalWorld::Run(
        2,
        [&](Communicator& comm, int64_t rank) {
          if (rank == 1) {
            std::this_thread::sleep_for(std::chrono::milliseconds(300));
            try {
              comm.Barrier(WorldGroup(2));
            } catch (const Error& e) {
              second[1] = e.what();
            }
            return;
          }
          try {
            comm.Barrier(WorldGroup(2));
          } catch (const Error&) {
          }
          try {
            comm.Barrier(WorldGroup(2));
          } catch (const Error& e) {
            second[0] = e.what();
          }
        },
        LocalWorldOptions{std::chrono::milliseconds(100)});
  } catch (const Error&) {
  }
  const std::string timeout = "barrier on group [0,1] (mesh dim 0): ranks 1 never joined within 0.1 s";
  CHECK(second[0] == timeout);
  CHECK(second[1] == timeout);
  CHECK(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < 2.0);
}

TEST_CASE("large all_reduces between other collectives on one group", "[engine][local]") {
  // The two-phase path has a rendezvous of its own; it must line up whatever ran on the group
  // before (here barriers and small all_reduces in between). Integer sums: exact by formula,
  // sum over ranks r of (r + 1) * (i % 7 + 1) = 10 * (i % 7 + 1) on 4 ranks.
  const int64_t n = 4;
  std::vector<int> failures(n, 0);
  LocalWorld::Run(n, [&](Communicator& comm, int64_t rank) {
    for (int64_t round = 0; round < 7; ++round) {
      for (int64_t b = 0; b < round; ++b) comm.Barrier(WorldGroup(n));
      const int64_t count = round % 2 == 0 ? 70000 : 8;  // 280 KiB (split) or 32 B per rank
      LocalTensor in({count}, DType::kI32), out({count}, DType::kI32);
      for (int64_t i = 0; i < count; ++i) in.SetDouble(i, static_cast<double>((rank + 1) * (i % 7 + 1)));
      comm.AllReduce(WorldGroup(n), Reduction{}, ViewOf(in), MutableViewOf(out));
      for (int64_t i = 0; i < count; ++i) {
        if (out.GetDouble(i) != static_cast<double>(10 * (i % 7 + 1))) ++failures[static_cast<size_t>(rank)];
      }
    }
  });
  CHECK(failures == std::vector<int>(n, 0));
}

namespace {

// The HealDA-like S(1)->S(2) exchange with column blocks of `width` (at `offset`, of C columns):
// rank r holds rows [r*X, (r+1)*X) of a [T, nX, C] tensor as [T, X, C]; it sends columns
// [o_m, o_m + w_m) to rank m, which stores them as rows [r*X, (r+1)*X) of its [T, nX, w_m]. Values
// are exact integers in f32 and follow from the global index; returns each rank's wrong elements.
std::vector<int64_t> ColumnBlockAllToAll(int64_t t_dim, int64_t x_dim, const std::vector<int64_t>& width,
                                         const std::vector<int64_t>& offset, int64_t c_dim) {
  const auto n = static_cast<int64_t>(width.size());
  auto value = [&](int64_t t, int64_t gx, int64_t c) {
    return static_cast<float>((t * n * x_dim + gx) * c_dim + c);
  };
  std::vector<int64_t> bad(static_cast<size_t>(n), 0);
  LocalWorld::Run(n, [&](Communicator& comm, int64_t rank) {
    LocalTensor in({t_dim, x_dim, c_dim}, DType::kF32);
    LocalTensor out({t_dim, n * x_dim, width[static_cast<size_t>(rank)]}, DType::kF32);
    float* x = reinterpret_cast<float*>(in.data());
    for (int64_t t = 0; t < t_dim; ++t)
      for (int64_t r = 0; r < x_dim; ++r)
        for (int64_t c = 0; c < c_dim; ++c) x[(t * x_dim + r) * c_dim + c] = value(t, rank * x_dim + r, c);
    std::vector<SendView> send;
    std::vector<RecvView> recv;
    for (int64_t m = 0; m < n; ++m) {
      Box s = FullBox(in.shape());
      s.dims[2] = {
          {offset[static_cast<size_t>(m)], offset[static_cast<size_t>(m)] + width[static_cast<size_t>(m)]}};
      send.push_back(ViewOf(in, s));
      Box d = FullBox(out.shape());
      d.dims[1] = {{m * x_dim, (m + 1) * x_dim}};
      recv.push_back(MutableViewOf(out, d));
    }
    comm.AllToAllV(WorldGroup(n), std::move(send), std::move(recv));
    const int64_t w = width[static_cast<size_t>(rank)], o = offset[static_cast<size_t>(rank)];
    const float* y = reinterpret_cast<const float*>(out.data());
    int64_t wrong = 0;
    for (int64_t t = 0; t < t_dim; ++t)
      for (int64_t gx = 0; gx < n * x_dim; ++gx)
        for (int64_t c = 0; c < w; ++c) wrong += y[(t * n * x_dim + gx) * w + c] != value(t, gx, o + c);
    bad[static_cast<size_t>(rank)] = wrong;
  });
  return bad;
}

}  // namespace

TEST_CASE("a large all_to_all of uneven column blocks (shared work, one sender's pieces together) is exact",
          "[engine][local]") {
  // Three ranks, blocks of 40, 56 and 100 columns of 196. The group receives more than 16 MiB, so
  // the members share the copies (each work item: one sender's three pieces, of different sizes).
  CHECK(ColumnBlockAllToAll(8, 900, {40, 56, 100}, {0, 40, 96}, 196) == std::vector<int64_t>(3, 0));
}

TEST_CASE("a large all_to_all of whole-cache-line column blocks (streamed row by row) is exact",
          "[engine][local]") {
  // Blocks of 96, 16 and 112 f32 columns (384, 64 and 448 B): each source run fills whole cache
  // lines of a long destination run, so the shared copy takes the pieces row by row with
  // non-temporal stores. X = 1001 rows puts the work items' chunk boundaries inside runs.
  CHECK(ColumnBlockAllToAll(8, 1001, {96, 16, 112}, {0, 96, 112}, 224) == std::vector<int64_t>(3, 0));
  // Four ranks of 96 columns (the bench's HealDA-like shape at 4 ranks), 17 MB over the group.
  CHECK(ColumnBlockAllToAll(4, 700, {96, 96, 96, 96}, {0, 96, 192, 288}, 384) == std::vector<int64_t>(4, 0));
}
