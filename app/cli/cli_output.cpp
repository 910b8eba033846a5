#include "cli_output.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "shardscope/error.hpp"
#include "shardscope/files.hpp"
#include "shardscope/printable.hpp"
#include "shardscope/trace/flight_recorder.hpp"

namespace shardscope::app {
namespace {

namespace fs = std::filesystem;

std::string Quoted(const std::string& flag, const std::string& path) { return flag + ": '" + path + "'"; }

// Writes all of `text` to `fd`, retrying short writes; false with errno set on a failure.
bool WriteAll(int fd, std::string_view text) {
  while (!text.empty()) {
    const ssize_t n = ::write(fd, text.data(), text.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    if (n == 0) {
      errno = EIO;
      return false;
    }
    text.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

// Hands `produce` a writer to `fd` that retries short writes; the first failure ends `produce` (an
// exception of this file's own, caught here): false with its errno in `err`. Other exceptions of
// `produce` close `fd`, remove `temp` when one is named, and pass through.
struct WriteFailed {};

bool WriteProduced(int fd, const OutputProducer& produce, int& err, const std::string& temp = {}) {
  try {
    produce([&](std::string_view piece) {
      if (!WriteAll(fd, piece)) {
        err = errno;
        throw WriteFailed{};
      }
    });
  } catch (const WriteFailed&) {
    return false;
  } catch (...) {
    ::close(fd);
    if (!temp.empty()) ::unlink(temp.c_str());
    throw;
  }
  return true;
}

// A regular file (the resolved target of any symlink) replaced atomically: a temporary file beside it,
// the old file's permissions, fsync, rename. A failure leaves the old file as it was.
void ReplaceRegularFile(const fs::path& target, const OutputProducer& produce, const std::string& flag,
                        const std::string& shown, mode_t mode) {
  const fs::path dir = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  std::string temp = (dir / ("." + target.filename().string() + ".tmp-XXXXXX")).string();
  const int fd = ::mkstemp(temp.data());
  if (fd < 0)
    throw InvalidInput(Quoted(flag, shown) + ": cannot create a file beside it: " + std::strerror(errno));
  ::fchmod(fd, mode);
  int err = 0;
  bool ok = WriteProduced(fd, produce, err, temp);
  if (ok && ::fsync(fd) != 0) ok = false, err = errno;
  if (::close(fd) != 0 || !ok) {
    ::unlink(temp.c_str());
    throw InvalidInput(Quoted(flag, shown) + ": write failed: " + std::strerror(ok ? errno : err) +
                       " (the old file, if any, is unchanged)");
  }
  if (::rename(temp.c_str(), target.c_str()) != 0) {
    const int rename_err = errno;
    ::unlink(temp.c_str());
    throw InvalidInput(Quoted(flag, shown) + ": cannot replace it: " + std::strerror(rename_err));
  }
}

bool IsInputName(const std::string& name) {
  return trace::RankOfFileName(name) >= 0 || trace::FlightRecorderRankOfFileName(name) >= 0;
}

}  // namespace

void WriteOutputFile(const std::string& path, std::string_view text, const std::string& flag) {
  WriteOutputFile(
      path, [text](const std::function<void(std::string_view)>& write) { write(text); }, flag);
}

void WriteOutputFile(const std::string& path, const OutputProducer& produce, const std::string& flag) {
  // Opened without O_CREAT or O_TRUNC, and without blocking on a FIFO that has no reader: whatever
  // is there is looked at (fstat) before anything is written or replaced.
  const int fd = ::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    const int err = errno;
    struct stat lst {};
    if (err == ENOENT && ::lstat(path.c_str(), &lst) == 0 && S_ISLNK(lst.st_mode))
      throw InvalidInput(Quoted(flag, path) +
                         " is a symlink to a missing file; refusing to write through it");
    if (err == ENOENT) {  // a new name
      ReplaceRegularFile(
          fs::path(path), produce, flag, path, 0666 & ~[] {
            const mode_t mask = ::umask(0);
            ::umask(mask);
            return mask;
          }());
      return;
    }
    if (err == ENXIO)
      throw InvalidInput(Quoted(flag, path) +
                         " is a FIFO or socket with no reader; refusing to wait for one");
    if (err == EISDIR) throw InvalidInput(Quoted(flag, path) + " is a directory; name a file");
    throw InvalidInput(Quoted(flag, path) + ": cannot write: " + std::strerror(err));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    throw InvalidInput(Quoted(flag, path) + ": cannot write: " + std::strerror(err));
  }
  if (S_ISREG(st.st_mode)) {
    ::close(fd);
    std::error_code ec;
    const fs::path target = fs::canonical(path, ec);  // a symlink is followed: its target is replaced
    if (ec) throw InvalidInput(Quoted(flag, path) + ": cannot resolve it: " + ec.message());
    ReplaceRegularFile(target, produce, flag, path, st.st_mode & 07777);
    return;
  }
  if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) {
    // Not ours to replace (/dev/null, a terminal, a pipe someone reads): written where it is.
    const int flags = ::fcntl(fd, F_GETFL);
    if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
    int err = 0;
    const bool ok = WriteProduced(fd, produce, err);
    if (::close(fd) != 0 || !ok)
      throw InvalidInput(Quoted(flag, path) + " (" + FileKindName(st.st_mode) +
                         "): write failed: " + std::strerror(ok ? errno : err));
    return;
  }
  ::close(fd);
  throw InvalidInput(Quoted(flag, path) + " is " + FileKindName(st.st_mode) +
                     "; refusing to write to it (name a regular file, a character device or a FIFO)");
}

void RefuseOutputOverInputs(const std::vector<std::string>& inputs, const std::string& output,
                            const std::string& flag) {
  std::error_code ec;
  // Where the output would land: through a symlink, its target.
  fs::path out = fs::weakly_canonical(fs::path(output), ec);
  if (ec) out = fs::absolute(fs::path(output), ec);
  const bool out_exists = fs::exists(out, ec);
  const fs::path out_dir = out.parent_path();
  for (const std::string& input : inputs) {
    if (out_exists && fs::equivalent(out, fs::path(input), ec)) {
      throw InvalidInput(Quoted(flag, output) + " is the input '" + input +
                         "' itself; writing it would destroy what is being read (choose another output)");
    }
    if (!fs::is_directory(input, ec)) continue;
    if (!fs::exists(out_dir, ec) || !fs::equivalent(out_dir, fs::path(input), ec)) continue;
    if (out_exists || IsInputName(out.filename().string())) {
      throw InvalidInput(Quoted(flag, output) + " is " +
                         (out_exists ? "a file" : "a file name that is read") +
                         " inside the input directory '" + input +
                         "'; writing it would change or destroy an input (choose another output)");
    }
  }
}

std::unique_ptr<trace::TraceDirLock> ClaimTraceDir(const std::string& dir, const std::string& flag,
                                                   bool force) {
  std::unique_ptr<trace::TraceDirLock> lock = [&] {
    try {
      return std::make_unique<trace::TraceDirLock>(dir);
    } catch (const Error& e) {
      std::string message = e.what();
      if (message.rfind("trace: ", 0) == 0) message.erase(0, 7);  // the flag says what it is about
      throw Error(e.code(), flag + ": " + message);
    }
  }();
  if (!lock->stale_holder().empty()) {
    std::cerr << "shardscope: note: " << flag << ": '" << dir << "' held the stale lock of a job that ended ("
              << lock->stale_holder() << "); taken over\n";
  }
  std::vector<fs::path> old = [&] {
    try {
      return trace::RankFilesIn(dir);
    } catch (const Error& e) {
      throw InvalidInput(flag + ": " + e.what());
    }
  }();
  // A trace directory holds one run: rank files of an older one (8 ranks before, 4 now) would sit
  // beside the new ones and make show/check/diff refuse the directory.
  if (!old.empty() && !force) {
    throw InvalidInput(
        flag + ": '" + dir + "' already holds a trace (" + std::to_string(old.size()) + " rank files, e.g. " +
        old.front().filename().string() +
        "); writing into it would mix two runs (--force replaces it, or choose another directory)");
  }
  for (const auto& file : old) {
    std::error_code ec;
    fs::remove(file, ec);  // under MPI every process removes; a file already gone is fine
    if (ec && fs::exists(file)) {
      throw InvalidInput(flag + ": cannot remove the old '" + file.string() + "': " + ec.message());
    }
  }
  return lock;
}

}  // namespace shardscope::app
