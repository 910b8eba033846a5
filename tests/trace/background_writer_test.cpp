// The background trace writer (Durability::kBackground): events handed off at a redistribute end
// reach the file within the flush period, in Emit order; Close and destruction drain everything;
// the queue is bounded (a blocked disk slows the emitting thread, drops nothing); a write error on
// the background thread reaches on_write_error, or is thrown by the owner's next call.
// Tagged [local] as well: ranks as threads, so scripts/sanitize.sh tsan runs these under TSan.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "../common/all_gather_events.hpp"
#include "../common/temp_dir.hpp"
#include "shardscope/error.hpp"
#include "shardscope/trace/reader.hpp"
#include "shardscope/trace/session.hpp"
#include "shardscope/trace/writer.hpp"

namespace fs = std::filesystem;
using namespace shardscope::trace;
using namespace std::chrono_literals;

namespace {

fs::path TempDir(const std::string& name) { return shardscope::testing::FreshTempDir("bgw_" + name); }

Header RankHeader(int64_t rank, int64_t world) {
  Header h;
  h.rank = rank;
  h.world = world;
  h.mesh_shape = {world};
  h.mesh_dim_names = {"dp"};
  h.backend = "local";
  return h;
}

// Redistribute `id` on `rank`: begin, one all_gather step, end (five events, the end last).
std::vector<Event> Redistribute(int64_t rank, int64_t world, int64_t id) {
  return shardscope::testing::AllGatherRedistribute(rank, world, id, 4 * world, 128, "x", 10 * id, 1);
}

size_t LineCount(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
}

// Waits up to 10 s (a loaded machine) for `path` to hold `lines` lines; returns what it holds.
size_t WaitForLines(const fs::path& path, size_t lines) {
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  size_t n = LineCount(path);
  while (n < lines && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(1ms);
    n = LineCount(path);
  }
  return n;
}

// The redistribute ids of the rank file, in file order, each checked complete.
std::vector<int64_t> CompleteIds(const fs::path& path) {
  Model model = ReadTraceFile(path);
  std::vector<int64_t> ids;
  for (const RedistributeRecord& r : model.redistributes) {
    CHECK(r.end.has_value());
    CHECK(r.steps.size() == 1);
    CHECK(r.collectives.size() == 1);
    ids.push_back(r.begin->id);
  }
  return ids;
}

std::vector<int64_t> Iota(int64_t n) {
  std::vector<int64_t> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(i);
  return v;
}

}  // namespace

TEST_CASE("background writer: a handed-off redistribute reaches the file without Flush, an open one does not",
          "[trace][writer][local]") {
  fs::path dir = TempDir("period");
  Writer w(dir, RankHeader(0, 2), {}, Durability::kBackground);
  REQUIRE(w.durability() == Durability::kBackground);
  std::vector<Event> events = Redistribute(0, 2, 0);
  for (size_t i = 0; i + 1 < events.size(); ++i) w.Emit(events[i]);
  std::this_thread::sleep_for(50ms);  // ten flush periods: nothing was handed off
  CHECK(LineCount(w.path()) == 1);    // the header, written at open
  w.Emit(events.back());
  CHECK(WaitForLines(w.path(), 6) == 6);  // the background thread wrote it, no Flush called
  CHECK(CompleteIds(w.path()) == std::vector<int64_t>{0});
  w.Close();
  fs::remove_all(dir);
}

TEST_CASE("background writer: Close and destruction drain every event in Emit order",
          "[trace][writer][local]") {
  fs::path dir = TempDir("drain");
  constexpr int64_t kCount = 3000;  // 15,000 events: several hand-off batches and flush periods
  {
    Writer w(dir, RankHeader(0, 2), {}, Durability::kBackground);
    for (int64_t id = 0; id < kCount; ++id) {
      for (Event& e : Redistribute(0, 2, id)) w.Emit(std::move(e));  // the rvalue overload
    }
    w.Close();
  }
  CHECK(CompleteIds(dir / RankFileName(0)) == Iota(kCount));
  {
    Writer w(dir, RankHeader(1, 2), {}, Durability::kBackground);
    for (int64_t id = 0; id < kCount; ++id) {
      for (const Event& e : Redistribute(1, 2, id)) w.Emit(e);
    }
    // A begin with no end yet: destruction writes it too (Flush/Close/destruction lose nothing).
    w.Emit(Redistribute(1, 2, kCount).front());
  }
  Model model = ReadTraceFile(dir / RankFileName(1));
  REQUIRE(model.redistributes.size() == kCount + 1);
  CHECK_FALSE(model.redistributes.back().end.has_value());
  fs::remove_all(dir);
}

TEST_CASE("background writer: one writer per rank thread, every file complete and ordered",
          "[trace][writer][session][local]") {
  fs::path dir = TempDir("ranks");
  constexpr int64_t kWorld = 4, kCount = 500;
  {
    TraceSession session(dir);
    std::vector<std::thread> ranks;
    for (int64_t rank = 0; rank < kWorld; ++rank) {
      ranks.emplace_back([&session, rank] {
        Writer* w = session.WriterFor(rank, RankHeader(rank, kWorld));
        CHECK(w->durability() == Durability::kBackground);
        for (int64_t id = 0; id < kCount; ++id) {
          for (Event& e : Redistribute(rank, kWorld, id)) w->Emit(std::move(e));
        }
      });
    }
    for (std::thread& t : ranks) t.join();
    session.Close();
  }
  for (int64_t rank = 0; rank < kWorld; ++rank) CHECK(CompleteIds(dir / RankFileName(rank)) == Iota(kCount));
  fs::remove_all(dir);
}

TEST_CASE("background writer: a blocked file bounds the queue and slows the emitter, losing nothing",
          "[trace][writer][local]") {
  // rank-0.jsonl is a FIFO nobody reads yet: the background thread blocks in write(2) once the
  // pipe is full, the queue fills to its bound, and the emitting thread must then write itself.
  fs::path dir = TempDir("bound");
  fs::create_directories(dir);
  const fs::path fifo = dir / RankFileName(0);
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  const int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);  // lets the writer's open succeed
  REQUIRE(reader >= 0);
  constexpr int64_t kCount = 3 * static_cast<int64_t>(Writer::kMaxQueuedEvents) / 5;  // redistributes
  std::atomic<int64_t> emitted{0};
  Writer w(dir, RankHeader(0, 2), {}, Durability::kBackground);
  std::thread emitter([&] {
    for (int64_t id = 0; id < kCount; ++id) {
      for (Event& e : Redistribute(0, 2, id)) w.Emit(std::move(e));
      emitted.store(id + 1);
    }
  });
  // Wait until the emitter stops making progress (blocked behind the full pipe).
  int64_t seen = -1;
  while (seen != emitted.load()) {
    seen = emitted.load();
    std::this_thread::sleep_for(300ms);
  }
  // In memory at most: the queue's bound, one hand-off batch and the batch the background thread
  // is writing (another bound); in the pipe and stdio's buffer, under 1,000 events of ~100 bytes.
  const auto bound = static_cast<int64_t>(2 * (Writer::kMaxQueuedEvents + Writer::kHandoffEvents) + 1000) / 5;
  CHECK(seen < kCount);
  CHECK(seen <= bound);
  // Now read: the emitter goes on and every line arrives, in order.
  const int flags = ::fcntl(reader, F_GETFL);
  ::fcntl(reader, F_SETFL, flags & ~O_NONBLOCK);
  std::string text;
  std::thread drain([&] {
    char buf[1 << 16];
    for (ssize_t n; (n = ::read(reader, buf, sizeof buf)) > 0;) text.append(buf, static_cast<size_t>(n));
  });
  emitter.join();
  w.Close();  // EOF for the reader
  drain.join();
  ::close(reader);
  fs::remove(fifo);
  std::ofstream(fifo, std::ios::binary) << text;
  CHECK(CompleteIds(fifo) == Iota(kCount));
  fs::remove_all(dir);
}

namespace {

// A rank file whose reader goes away after the header: the next write fails with EPIPE (SIGPIPE
// ignored meanwhile). Returns the reader's fd, to be closed once the writer is open.
struct BrokenPipe {
  explicit BrokenPipe(const fs::path& dir) : fifo(dir / RankFileName(0)) {
    fs::create_directories(dir);
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
    REQUIRE(reader >= 0);
    old_handler = std::signal(SIGPIPE, SIG_IGN);
  }
  ~BrokenPipe() { std::signal(SIGPIPE, old_handler); }
  void Break() const { ::close(reader); }
  fs::path fifo;
  int reader = -1;
  void (*old_handler)(int) = nullptr;
};

}  // namespace

TEST_CASE("background writer: a write error on the background thread reaches on_write_error once",
          "[trace][writer][local]") {
  fs::path dir = TempDir("error_cb");
  BrokenPipe pipe(dir);
  std::atomic<int> calls{0};
  std::atomic<bool> on_emitting_thread{false};
  std::string message;
  const std::thread::id emitting = std::this_thread::get_id();
  Writer w(
      dir, RankHeader(0, 2),
      [&](const std::string& m) {
        if (calls.load() == 0) message = m;
        on_emitting_thread = std::this_thread::get_id() == emitting;
        calls.fetch_add(1);  // last: the test reads message once it sees the call
      },
      Durability::kBackground);
  pipe.Break();
  for (const Event& e : Redistribute(0, 2, 0)) CHECK_NOTHROW(w.Emit(e));
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (calls.load() == 0 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(1ms);
  REQUIRE(calls.load() == 1);
  CHECK_FALSE(on_emitting_thread.load());  // the background thread wrote, and reported
  CHECK_THAT(message, Catch::Contains("trace: write to '" + pipe.fifo.string() + "' failed"));
  CHECK_FALSE(w.ok());
  for (const Event& e : Redistribute(0, 2, 1)) CHECK_NOTHROW(w.Emit(e));  // ignored from now on
  CHECK_NOTHROW(w.Close());
  CHECK(calls.load() == 1);
  fs::remove_all(dir);
}

TEST_CASE("background writer: without on_write_error the owner's next call throws the background error",
          "[trace][writer][local]") {
  fs::path dir = TempDir("error_throw");
  BrokenPipe pipe(dir);
  Writer w(dir, RankHeader(0, 2), {}, Durability::kBackground);
  pipe.Break();
  for (const Event& e : Redistribute(0, 2, 0)) w.Emit(e);
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (w.ok() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(1ms);
  REQUIRE_FALSE(w.ok());
  CHECK_THROWS_WITH(w.Flush(), Catch::Contains("trace: write to '" + pipe.fifo.string() + "' failed"));
  CHECK_NOTHROW(w.Close());  // thrown once
  fs::remove_all(dir);
}

namespace {

// Runs `child` in a fork()ed process that ends with _exit(child()), or is killed after 20 s (a hang
// is a failure, not a stuck test); returns its exit status, or -1 when it did not exit normally.
int InChild(const std::function<int()>& child) {
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    alarm(20);
    int code = 99;
    try {
      code = child();
    } catch (...) {
      code = 98;
    }
    _exit(code);
  }
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  if (WIFSIGNALED(status)) UNSCOPED_INFO("the child was killed by signal " << WTERMSIG(status));
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

// Not [local]: TSan does not support threads started after a multi-threaded fork.
TEST_CASE("background writer: a forked child writes its own trace and never waits for the parent's thread",
          "[trace][writer]") {
  fs::path dir = TempDir("fork");
  // The parent's writer is open, so its background thread runs when fork() is called.
  Writer parent(dir / "parent", RankHeader(0, 2), {}, Durability::kBackground);
  for (Event& e : Redistribute(0, 2, 0)) parent.Emit(std::move(e));
  parent.Flush();  // nothing queued at fork(): the child's copy holds no event of the parent's
  const int status = InChild([&] {
    // A new writer in the child: a background thread of the child's own writes it.
    Writer child(dir / "child", RankHeader(1, 2), {}, Durability::kBackground);
    for (int64_t id = 0; id < 3; ++id) {
      for (Event& e : Redistribute(1, 2, id)) child.Emit(std::move(e));
    }
    if (WaitForLines(child.path(), 1 + 3 * 5) != 16) return 1;  // written without Close
    child.Close();
    // The inherited writer: its thread is the parent's, so it writes on this thread; closing it
    // (the last reference to the inherited flusher) must not join a thread this process lacks.
    for (Event& e : Redistribute(0, 2, 1)) parent.Emit(std::move(e));
    parent.Close();
    return 0;
  });
  CHECK(status == 0);
  CHECK(CompleteIds(dir / "child" / RankFileName(1)) == Iota(3));
  // The parent's writer and thread are untouched by the child. The child's copy appended its
  // redistribute 1 to the same file (a shared offset), so the file reads 0, 1, 2, every line whole.
  for (Event& e : Redistribute(0, 2, 2)) parent.Emit(std::move(e));
  CHECK(WaitForLines(parent.path(), 1 + 3 * 5) == 16);  // the parent's thread still writes
  parent.Close();
  CHECK(CompleteIds(parent.path()) == Iota(3));
  fs::remove_all(dir);
}

TEST_CASE("background writer: exit() with a writer still open writes every handed-off event first",
          "[trace][writer]") {
  fs::path dir = TempDir("exit");
  const int status = InChild([&] {
    // Never closed or destroyed (a session a job leaks): the atexit handler drains it.
    static Writer* w = nullptr;  // static: reachable, so LeakSanitizer does not report it at exit
    w = new Writer(dir, RankHeader(0, 2), {}, Durability::kBackground);
    for (int64_t id = 0; id < 200; ++id) {
      for (Event& e : Redistribute(0, 2, id)) w->Emit(std::move(e));
    }
    std::exit(0);  // runs atexit handlers, unlike the _exit InChild ends with
    return 1;
  });
  CHECK(status == 0);
  CHECK(CompleteIds(dir / RankFileName(0)) == Iota(200));
  fs::remove_all(dir);
}
