#pragma once
// Private: pieces of an output made on several threads and consumed in order on the calling one
// (show's text: ranges of ops and redistributes formatted in parallel, written as they finish).

#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace shardscope::trace::detail {

/// Calls `make(i)` for every i in [0, n) on up to `threads` threads (0: one per core) and
/// `take(result)` for each on the calling thread, in order of i. At most 2 results per thread wait
/// to be taken, so memory holds a few pieces, not the whole output. `make` must be safe to call
/// concurrently. An exception of `make` or `take` stops the making of further pieces and passes
/// through once the threads have ended.
template <class Make, class Take>
void MakeInOrder(size_t n, unsigned threads, Make&& make, Take&& take) {
  using Piece = std::invoke_result_t<Make&, size_t>;
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  threads = static_cast<unsigned>(std::min<size_t>(threads, n));
  if (threads <= 1) {
    for (size_t i = 0; i < n; ++i) take(make(i));
    return;
  }
  const size_t window = 2 * size_t{threads};
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<std::optional<Piece>> made(n);
  size_t next = 0;   // the next piece to make
  size_t taken = 0;  // pieces taken so far
  bool stop = false;
  std::exception_ptr error;
  auto work = [&] {
    for (;;) {
      size_t i = 0;
      {
        std::unique_lock<std::mutex> lock(mutex);
        changed.wait(lock, [&] { return stop || next >= n || next < taken + window; });
        if (stop || next >= n) return;
        i = next++;
      }
      try {
        Piece piece = make(i);
        std::lock_guard<std::mutex> lock(mutex);
        made[i] = std::move(piece);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex);
        if (!error) error = std::current_exception();
        stop = true;
      }
      changed.notify_all();
    }
  };
  std::vector<std::thread> pool;
  // Ends the threads on every way out, an exception of take or of starting a thread included.
  struct Joiner {
    std::vector<std::thread>& pool;
    std::mutex& mutex;
    std::condition_variable& changed;
    bool& stop;
    ~Joiner() {
      {
        std::lock_guard<std::mutex> lock(mutex);
        stop = true;
      }
      changed.notify_all();
      for (std::thread& t : pool) t.join();
    }
  } joiner{pool, mutex, changed, stop};
  for (unsigned t = 0; t < threads; ++t) pool.emplace_back(work);
  for (size_t i = 0; i < n; ++i) {
    Piece piece;
    {
      std::unique_lock<std::mutex> lock(mutex);
      changed.wait(lock, [&] { return made[i].has_value() || error != nullptr; });
      if (!made[i]) break;  // a maker failed: rethrown below
      piece = std::move(*made[i]);
      made[i].reset();
    }
    take(std::move(piece));
    {
      std::lock_guard<std::mutex> lock(mutex);
      ++taken;
    }
    changed.notify_all();
  }
  {
    std::lock_guard<std::mutex> lock(mutex);
    stop = true;
  }
  changed.notify_all();
  for (std::thread& t : pool) t.join();
  pool.clear();
  if (error) std::rethrow_exception(error);
}

}  // namespace shardscope::trace::detail
