// A real transfer of more than 2^31 elements through the MPI backend, run as
// `mpirun -np 2 shardscope_mpi_large_test [ELEMENTS]` (default 2^31 + 3 f16 elements, 4 GiB):
// rank 0 broadcasts a tensor whose element k holds the f16 bits (k * 2654435761) mod 2^15 to
// rank 1, and both ranks check every element of what they received against that formula. MPI
// counts are int, so the backend must split the transfer into rounds (docs/mpi.md: at most
// min(1 GiB, INT_MAX / group size) bytes per peer and round) and address elements with 64-bit
// offsets. Peak memory is about 10 GiB on rank 0 (input, output, one round's send and receive
// buffers) and 5 GiB on rank 1; tests/mpi/run.sh skips the test when less memory is available.
// Prints the time and the rate; exit 0 when every element arrived intact.

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "shardscope/engine/comm/mpi_backend.hpp"
#include "shardscope/error.hpp"

using namespace shardscope;
using namespace shardscope::engine;

namespace {

uint16_t Pattern(uint64_t k) { return static_cast<uint16_t>((k * 2654435761ULL) & 0x7FFFu); }

}  // namespace

int main(int argc, char** argv) {
  const long long requested = argc > 1 ? std::atoll(argv[1]) : (1LL << 31) + 3;
  const int64_t count = requested > 0 ? requested : (int64_t{1} << 31) + 3;
  try {
    MpiOptions options;
    options.timeout = std::chrono::milliseconds(600000);
    MpiWorld mpi(options);
    const int64_t rank = mpi.rank();
    if (mpi.size() != 2) {
      if (rank == 0) std::fprintf(stderr, "shardscope_mpi_large_test: needs mpirun -np 2\n");
      return 2;
    }
    LocalTensor in = LocalTensor::Uninitialized(Shape{rank == 0 ? count : 0}, DType::kF16);
    LocalTensor out = LocalTensor::Uninitialized(Shape{count}, DType::kF16);
    // 0xFFFF (a NaN) is never a pattern value, so an element the transfer missed is caught; it
    // also faults the pages in before the clock starts (first-touch page faults are slow on VMs).
    std::memset(out.data(), 0xFF, out.nbytes());
    if (rank == 0) {
      auto* bits = reinterpret_cast<uint16_t*>(in.data());
      for (int64_t k = 0; k < count; ++k) bits[k] = Pattern(static_cast<uint64_t>(k));
    }
    const Group pair{{0, 1}, {0}};
    mpi.comm().Barrier(pair);
    const auto t0 = std::chrono::steady_clock::now();
    mpi.comm().Broadcast(pair, 0, ViewOf(in), MutableViewOf(out));
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const auto* bits = reinterpret_cast<const uint16_t*>(out.data());
    int64_t wrong = 0, first_wrong = -1;
    for (int64_t k = 0; k < count; ++k) {
      if (bits[k] != Pattern(static_cast<uint64_t>(k))) {
        if (first_wrong < 0) first_wrong = k;
        ++wrong;
      }
    }
    // Both ranks' verdicts, through the backend under test.
    LocalTensor mine(Shape{1}, DType::kI64), total(Shape{1}, DType::kI64);
    mine.SetDouble(0, static_cast<double>(wrong));
    mpi.comm().AllReduce(pair, {}, ViewOf(mine), MutableViewOf(total));
    if (wrong > 0)
      std::fprintf(stderr, "rank %lld: %lld of %lld elements differ, the first at %lld\n",
                   static_cast<long long>(rank), static_cast<long long>(wrong), static_cast<long long>(count),
                   static_cast<long long>(first_wrong));
    if (rank == 0) {
      const double gib = static_cast<double>(count) * 2 / (1024.0 * 1024.0 * 1024.0);
      std::printf(
          "shardscope_mpi_large_test: broadcast of %lld f16 elements (%.2f GiB, %s 2^31) from rank 0 to 2 "
          "ranks: %.2f s, %.2f GB/s per receiver; %s\n",
          static_cast<long long>(count), gib, count > (int64_t{1} << 31) ? "above" : "not above", seconds,
          static_cast<double>(count) * 2 / seconds / 1e9, total.GetDouble(0) == 0 ? "PASS" : "FAIL");
    }
    return total.GetDouble(0) == 0 ? 0 : 1;
  } catch (const Error& e) {
    std::fprintf(stderr, "shardscope_mpi_large_test: %s\n", e.what());
    return 3;
  }
}
