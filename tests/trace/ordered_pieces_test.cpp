// MakeInOrder (trace/src/ordered_pieces.hpp): pieces made on several threads are taken in order.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "../../trace/src/ordered_pieces.hpp"  // private: the helper under test

using shardscope::trace::detail::MakeInOrder;

TEST_CASE("pieces are taken in order whatever order they finish in", "[trace][ordered_pieces]") {
  const unsigned threads = GENERATE(0u, 1u, 2u, 4u);
  constexpr size_t kPieces = 200;
  std::vector<size_t> taken;
  // Later pieces of each group of 4 finish first (the earlier ones sleep longer).
  MakeInOrder(
      kPieces, threads,
      [](size_t i) {
        std::this_thread::sleep_for(std::chrono::microseconds(50 * (3 - i % 4)));
        return i;
      },
      [&taken](size_t i) { taken.push_back(i); });
  REQUIRE(taken.size() == kPieces);
  for (size_t i = 0; i < kPieces; ++i) CHECK(taken[i] == i);
}

TEST_CASE("no pieces: nothing is made or taken", "[trace][ordered_pieces]") {
  int calls = 0;
  MakeInOrder(
      0, 2, [&calls](size_t) { return ++calls; }, [&calls](int) { ++calls; });
  CHECK(calls == 0);
}

TEST_CASE("an exception of make or take stops the pieces and passes through", "[trace][ordered_pieces]") {
  const unsigned threads = GENERATE(1u, 2u);
  std::atomic<size_t> made{0};
  std::vector<size_t> taken;
  CHECK_THROWS_WITH(MakeInOrder(
                        1000, threads,
                        [&made](size_t i) {
                          if (i == 10) throw std::runtime_error("make 10");
                          ++made;
                          return i;
                        },
                        [&taken](size_t i) { taken.push_back(i); }),
                    "make 10");
  CHECK(taken.size() <= 10);
  CHECK(made < 1000);  // at most a window of pieces past the failed one
  taken.clear();
  CHECK_THROWS_WITH(MakeInOrder(
                        1000, threads, [](size_t i) { return i; },
                        [&taken](size_t i) {
                          if (i == 5) throw std::runtime_error("take 5");
                          taken.push_back(i);
                        }),
                    "take 5");
  CHECK(taken.size() == 5);
}
