// TraceDirLock (writer.hpp): one job per trace directory. Same-job locks share, another job is
// refused with the holder named, a crashed job's file is recognised as stale, the last holder
// removes the file, and TraceSession takes the lock with its first writer.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "shardscope/error.hpp"
#include "shardscope/trace/session.hpp"
#include "shardscope/trace/writer.hpp"

namespace fs = std::filesystem;
using namespace shardscope;
using trace::TraceDirLock;

namespace {

fs::path FreshDir(const std::string& name) {
  const fs::path dir =
      fs::temp_directory_path() / ("shardscope_lock_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  return dir;
}

std::string Slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string ErrorOf(const fs::path& dir, const std::string& job) {
  try {
    TraceDirLock lock(dir, job);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("trace dir lock: one job shares it, another is refused naming the holder", "[trace][lock]") {
  const fs::path dir = FreshDir("share");
  const fs::path file = dir / trace::kTraceLockFileName;
  {
    TraceDirLock first(dir, "job-a");
    CHECK(fs::is_regular_file(file));
    CHECK(first.stale_holder().empty());
    const std::string text = Slurp(file);
    CHECK(text.find("job=job-a pid=" + std::to_string(::getpid()) + " ") == 0);
    {
      TraceDirLock second(dir, "job-a");  // another rank of the same job
      const std::string refused = ErrorOf(dir, "job-b");
      CHECK(refused.find("'" + dir.string() + "' is being written by another job (pid " +
                         std::to_string(::getpid()) + " on host ") != std::string::npos);
      CHECK(refused.find(", job job-a") != std::string::npos);
    }
    CHECK(fs::exists(file));  // `first` still holds it
    CHECK_FALSE(ErrorOf(dir, "job-b").empty());
  }
  CHECK_FALSE(fs::exists(file));  // the last holder removed it
  CHECK(ErrorOf(dir, "job-b").empty());
  fs::remove_all(dir);
}

TEST_CASE("trace dir lock: another process is refused while this one holds it", "[trace][lock]") {
  const fs::path dir = FreshDir("fork");
  TraceDirLock held(dir, "parent-job");
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    // Exit 0: refused with the parent named; 1: taken; 2: refused with another message.
    std::string message = ErrorOf(dir, "child-job");
    if (message.empty()) ::_exit(1);
    ::_exit(message.find("pid " + std::to_string(::getppid())) != std::string::npos ? 0 : 2);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}

TEST_CASE("trace dir lock: a crashed job's lock file is stale and taken over", "[trace][lock]") {
  const fs::path dir = FreshDir("stale");
  fs::create_directories(dir);
  // What a job killed by SIGKILL leaves: its text, no kernel lock (that died with the process).
  std::ofstream(dir / trace::kTraceLockFileName)
      << "job=pid:gone:999999 pid=999999 host=gone since=2026-01-01T00:00:00Z\n";
  {
    TraceDirLock lock(dir, "job-new");
    CHECK(lock.stale_holder() == "pid 999999 on host gone, since 2026-01-01T00:00:00Z");
    CHECK(Slurp(dir / trace::kTraceLockFileName).find("job=job-new ") == 0);
  }
  CHECK_FALSE(fs::exists(dir / trace::kTraceLockFileName));
  fs::remove_all(dir);
}

TEST_CASE("trace dir lock: a TraceSession holds it from its first writer to Close", "[trace][lock]") {
  const fs::path dir = FreshDir("session");
  trace::TraceSession session(dir);
  CHECK(ErrorOf(dir, "other-job").empty());  // nothing written yet: no lock
  trace::Header header = trace::MakeHeader(0, 1, {1}, {""}, "local");
  REQUIRE(session.WriterFor(0, header) != nullptr);
  CHECK_FALSE(ErrorOf(dir, "other-job").empty());
  // Same process, default key (this job): shares.
  CHECK(ErrorOf(dir, TraceDirLock::JobKeyFromEnv()).empty());
  session.Close();
  CHECK(ErrorOf(dir, "other-job").empty());
  fs::remove_all(dir);
}

TEST_CASE("trace dir lock: a session of another job warns and stops tracing instead of mixing",
          "[trace][lock]") {
  const fs::path dir = FreshDir("warn");
  auto other = std::make_unique<TraceDirLock>(dir, "someone-else");
  trace::TraceSession session(dir, trace::TraceFailure::kWarnAndStop);
  CHECK(session.WriterFor(0, trace::MakeHeader(0, 1, {1}, {""}, "local")) == nullptr);
  CHECK_FALSE(fs::exists(dir / trace::RankFileName(0)));
  trace::TraceSession strict(dir);
  CHECK_THROWS_AS(strict.WriterFor(0, trace::MakeHeader(0, 1, {1}, {""}, "local")), Error);
  other.reset();
  fs::remove_all(dir);
}
