// The benches' child processes (child_process.hpp): fork, pipe back, wait4.
#include "child_process.hpp"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <exception>

#include "shardscope/error.hpp"

namespace shardscope::app {

namespace {

// Waits for `pid`; its wall time since `start`, peak RSS and exit status.
ChildRun Wait(pid_t pid, std::chrono::steady_clock::time_point start, const std::string& who) {
  int status = 0;
  rusage usage{};
  if (wait4(pid, &status, 0, &usage) < 0) throw InternalError(who + ": wait4 failed");
  ChildRun run;
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  run.peak_rss = static_cast<int64_t>(usage.ru_maxrss) * 1024;
  auto secs = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
  };
  run.cpu_seconds = secs(usage.ru_utime) + secs(usage.ru_stime);
  run.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
  return run;
}

void WriteAll(int fd, const std::string& text) {
  size_t off = 0;
  while (off < text.size()) {
    ssize_t n = write(fd, text.data() + off, text.size() - off);
    if (n <= 0) break;
    off += static_cast<size_t>(n);
  }
}

}  // namespace

ChildRun RunInChild(const std::function<std::string()>& fn, const std::string& who) {
  int fds[2];
  if (pipe(fds) != 0) throw InternalError(who + ": pipe failed");
  std::fflush(nullptr);
  const auto start = std::chrono::steady_clock::now();
  pid_t pid = fork();
  if (pid < 0) throw InternalError(who + ": fork failed");
  if (pid == 0) {
    close(fds[0]);
    int code = 0;
    std::string text;
    try {
      text = fn();
    } catch (const std::exception& e) {
      text = e.what();
      code = 2;
    }
    WriteAll(fds[1], text);
    close(fds[1]);
    _exit(code);
  }
  close(fds[1]);
  std::string text;
  char buf[4096];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) text.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  ChildRun run = Wait(pid, start, who);
  run.output = std::move(text);
  return run;
}

ChildRun RunCommand(const std::vector<std::string>& argv, const std::string& who) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::fflush(nullptr);
  const auto start = std::chrono::steady_clock::now();
  pid_t pid = fork();
  if (pid < 0) throw InternalError(who + ": fork failed");
  if (pid == 0) {
    execvp(args[0], args.data());
    _exit(127);
  }
  return Wait(pid, start, who);
}

}  // namespace shardscope::app
