// TraceDirLock: one job per trace directory (writer.hpp).
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <thread>

#include "shardscope/error.hpp"
#include "shardscope/trace/writer.hpp"

namespace shardscope::trace {
namespace {

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? std::string() : std::string(v);
}

std::string HostName() {
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) != 0) return "?";
  return host;
}

// The directory itself is the guard around "look at the lock file, then take or join it" and around
// "leave, and remove the file when last": with it, a process never locks a file that another has
// just removed. It is held for microseconds; a holder that is stopped (SIGSTOP) must not hang the
// next job, so it is waited for at most kGuardWait.
class DirGuard {
 public:
  explicit DirGuard(const std::filesystem::path& dir) {
    fd_ = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd_ < 0) return;
    constexpr auto kGuardWait = std::chrono::seconds(10);
    const auto deadline = std::chrono::steady_clock::now() + kGuardWait;
    while (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      if (errno != EWOULDBLOCK && errno != EINTR) return;  // no flock here (some network file systems)
      if (std::chrono::steady_clock::now() > deadline) {
        ::close(fd_);
        fd_ = -1;
        throw InvalidInput("trace: '" + dir.string() +
                           "': another process has held the directory's lock guard for over 10 s (a "
                           "stopped job?); resume or end it, or choose another directory");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  ~DirGuard() {
    if (fd_ >= 0) ::close(fd_);  // closing drops the flock
  }
  DirGuard(const DirGuard&) = delete;
  DirGuard& operator=(const DirGuard&) = delete;

 private:
  int fd_ = -1;
};

std::string ReadAll(int fd) {
  std::string text;
  char buf[512];
  ::lseek(fd, 0, SEEK_SET);
  for (ssize_t n; (n = ::read(fd, buf, sizeof(buf))) > 0 && text.size() < 4096;)
    text.append(buf, static_cast<size_t>(n));
  while (!text.empty() && (text.back() == '\n' || text.back() == '\0')) text.pop_back();
  return text;
}

// "job=KEY pid=P host=H since=T": the value of `field`, "" when absent.
std::string Field(const std::string& text, const std::string& field) {
  const std::string key = field + "=";
  size_t at = 0;
  while ((at = text.find(key, at)) != std::string::npos) {
    if (at == 0 || text[at - 1] == ' ') break;
    at += key.size();
  }
  if (at == std::string::npos) return "";
  const size_t begin = at + key.size();
  return text.substr(begin, text.find(' ', begin) - begin);
}

// "pid 123 on host h, job K, since 2026-12-06T16:00:00Z" for a message.
std::string Holder(const std::string& text) {
  if (text.empty()) return "a process that has not yet said who it is";
  std::string out = "pid " + Field(text, "pid") + " on host " + Field(text, "host");
  const std::string job = Field(text, "job");
  if (job.rfind("pid:", 0) != 0 && !job.empty()) out += ", job " + job;
  const std::string since = Field(text, "since");
  if (!since.empty()) out += ", since " + since;
  return out;
}

std::string UtcNow() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace

std::string TraceDirLock::JobKeyFromEnv() {
  // Every process of one launch sees the same value of these; nothing else is shared before MPI_Init.
  for (const char* name : {"PMIX_NAMESPACE", "OMPI_MCA_ess_base_jobid", "OMPI_MCA_orte_ess_jobid"}) {
    if (const std::string v = Env(name); !v.empty()) return std::string(name) + ":" + v;
  }
  if (const std::string job = Env("SLURM_JOB_ID"); !job.empty())
    return "slurm:" + job + "." + Env("SLURM_STEP_ID");
  return "pid:" + HostName() + ":" + std::to_string(::getpid());
}

TraceDirLock::TraceDirLock(const std::filesystem::path& dir, std::string job) : dir_(dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw InvalidInput("trace: cannot create directory '" + dir.string() + "': " + ec.message());
  if (!std::filesystem::is_directory(dir, ec))
    throw InvalidInput("trace: '" + dir.string() + "' exists and is not a directory");
  const std::filesystem::path path = dir / kTraceLockFileName;
  DirGuard guard(dir);
  // O_NOFOLLOW: a symlink planted as the lock file must not make us truncate its target.
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);
  if (fd_ < 0) {
    throw InvalidInput("trace: cannot create the lock file '" + path.string() + "': " + std::strerror(errno) +
                       " (a trace directory must be writable)");
  }
  struct stat st {};
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd_);
    fd_ = -1;
    throw InvalidInput("trace: the lock file '" + path.string() + "' is not a regular file; remove it");
  }
  const std::string held = ReadAll(fd_);
  const bool alone = ::flock(fd_, LOCK_EX | LOCK_NB) == 0;
  if (!alone && errno != EWOULDBLOCK) {
    // No flock on this file system (some network ones): no lock can be had, and none is claimed.
    ::close(fd_);
    fd_ = -1;
    return;
  }
  if (alone) {
    // Nobody holds it: a file left with text in it is the lock of a job that ended without leaving
    // (killed, crashed); its kernel lock went with its process.
    if (!held.empty()) stale_holder_ = Holder(held);
    const std::string text = "job=" + job + " pid=" + std::to_string(::getpid()) + " host=" + HostName() +
                             " since=" + UtcNow() + "\n";
    if (::ftruncate(fd_, 0) != 0 ||
        ::pwrite(fd_, text.data(), text.size(), 0) != static_cast<ssize_t>(text.size())) {
      const int err = errno;
      ::close(fd_);
      fd_ = -1;
      throw InvalidInput("trace: cannot write the lock file '" + path.string() + "': " + std::strerror(err));
    }
    ::flock(fd_, LOCK_SH | LOCK_NB);  // now others of this job may join; the guard keeps out the rest
    return;
  }
  if (Field(held, "job") == job && ::flock(fd_, LOCK_SH | LOCK_NB) == 0) return;  // a rank of this job
  ::close(fd_);
  fd_ = -1;
  throw InvalidInput("trace: '" + dir.string() + "' is being written by another job (" + Holder(held) +
                     "; lock file " + path.string() +
                     "): two jobs in one trace directory would mix their rank files; wait for it to end "
                     "or choose another directory");
}

TraceDirLock::~TraceDirLock() {
  if (fd_ < 0) return;
  try {
    DirGuard guard(dir_);
    // The last holder can take the lock exclusively: it removes the file, so a finished trace
    // directory holds rank files only.
    if (::flock(fd_, LOCK_EX | LOCK_NB) == 0) ::unlink((dir_ / kTraceLockFileName).c_str());
  } catch (...) {
    // A guard held by a stopped process: leave the file; the next job finds it stale.
  }
  ::close(fd_);
}

}  // namespace shardscope::trace
