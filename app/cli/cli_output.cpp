#include "cli_output.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
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

// The name prefix of StagedTraceDir's staging directories inside a trace directory.
constexpr const char* kStagingPrefix = ".shardscope-tmp-";
constexpr const char* kUnchanged = " (nothing was written; the old trace, if any, is unchanged)";

// `dir` without trailing separators ("out/" -> "out"), so parent_path() is its parent.
fs::path TrimmedDirPath(const std::string& dir) {
  fs::path p(dir);
  while (!p.empty() && p.filename().empty() && p != p.root_path()) p = p.parent_path();
  return p;
}

// fsync(2) of `path` opened with `flags`: 0, or the errno of the open or the fsync.
int SyncPath(const fs::path& path, int flags) {
  const int fd = ::open(path.c_str(), flags | O_CLOEXEC);
  if (fd < 0) return errno;
  int err = 0;
  while (::fsync(fd) != 0) {
    if (errno == EINTR) continue;
    err = errno;
    break;
  }
  ::close(fd);
  return err;
}

std::string AlreadyHolds(const std::string& dir, const std::string& flag, const std::vector<fs::path>& old) {
  // A trace directory holds one run: rank files of an older one (8 ranks before, 4 now) would sit
  // beside the new ones and make show/check/diff refuse the directory.
  return flag + ": '" + dir + "' already holds a trace (" + std::to_string(old.size()) +
         " rank files, e.g. " + old.front().filename().string() +
         "); writing into it would mix two runs (--force replaces it, or choose another directory)";
}

// A trace directory claimed for one job: its lock, and the rank files of an old trace in it.
struct Claim {
  std::unique_ptr<trace::TraceDirLock> lock;
  std::vector<fs::path> old;
};

// Takes DIR's lock, lists it once for the old trace's rank files (refused unless `force`) and
// removes the staging directories of imports that were killed: each live one is flock'ed by its
// StagedTraceDir, so one that can be locked has no import left.
Claim ClaimDir(const std::string& dir, const std::string& flag, bool force) {
  Claim claim;
  claim.lock = [&] {
    try {
      return std::make_unique<trace::TraceDirLock>(dir);
    } catch (const Error& e) {
      std::string message = e.what();
      if (message.rfind("trace: ", 0) == 0) message.erase(0, 7);  // the flag says what it is about
      throw Error(e.code(), flag + ": " + message);
    }
  }();
  if (!claim.lock->stale_holder().empty()) {
    std::cerr << "shardscope: note: " << flag << ": '" << dir << "' held the stale lock of a job that ended ("
              << claim.lock->stale_holder() << "); taken over\n";
  }
  std::vector<fs::directory_entry> entries;
  try {
    entries = ListDirectory(dir, "trace");
  } catch (const Error& e) {
    throw InvalidInput(flag + ": " + e.what());
  }
  for (const fs::directory_entry& entry : entries) {
    const std::string name = entry.path().filename().string();
    if (trace::RankOfFileName(name) >= 0) claim.old.push_back(entry.path());
    if (name.rfind(kStagingPrefix, 0) != 0) continue;
    std::error_code ec;
    if (fs::exists(entry.path() / "old", ec)) {
      // A commit cut short whose old rank files could not be put back: maybe their only copy.
      std::cerr << "shardscope: note: " << flag << ": '" << entry.path().string()
                << "/old' holds rank files of an older trace that an import could not put back; "
                   "they are left for you to look at\n";
      continue;
    }
    const int fd = ::open(entry.path().c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) continue;
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0) {
      fs::remove_all(entry.path(), ec);
      if (!ec) {
        std::cerr << "shardscope: note: " << flag << ": removed '" << entry.path().string()
                  << "', left by an import that was killed before it finished\n";
      }
    }
    ::close(fd);
  }
  std::sort(claim.old.begin(), claim.old.end());
  if (!claim.old.empty() && !force) throw InvalidInput(AlreadyHolds(dir, flag, claim.old));
  return claim;
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
  Claim claim = ClaimDir(dir, flag, force);
  for (const auto& file : claim.old) {
    std::error_code ec;
    fs::remove(file, ec);  // under MPI every process removes; a file already gone is fine
    if (ec && fs::exists(file)) {
      throw InvalidInput(flag + ": cannot remove the old '" + file.string() + "': " + ec.message());
    }
  }
  return std::move(claim.lock);
}

void WriteRankFiles(const trace::Model& model, const fs::path& dir) {
  for (const trace::RankTrace& rt : model.ranks) {
    trace::Writer writer(dir, rt.header);
    for (const trace::Event& e : rt.events) writer.Emit(e);
    writer.Close();
  }
}

StagedTraceDir::StagedTraceDir(const std::string& dir, const std::string& flag, bool force)
    : dir_(dir), flag_(flag), force_(force) {
  // The directories the claim is about to create (the lock needs DIR to exist): removed again, when
  // empty, if nothing is committed, so an absent DIR stays absent.
  for (fs::path p = TrimmedDirPath(dir); !p.empty() && p != p.root_path(); p = p.parent_path()) {
    std::error_code ec;
    if (fs::symlink_status(p, ec).type() != fs::file_type::not_found) break;  // there, or not knowable
    created_.push_back(p);
  }
  try {
    lock_ = std::move(ClaimDir(dir, flag, force).lock);
    staging_ = (TrimmedDirPath(dir) / (std::string(kStagingPrefix) + "XXXXXX")).string();
    if (::mkdtemp(staging_.data()) == nullptr) {
      const int err = errno;
      staging_.clear();
      throw InvalidInput(Quoted(flag, dir) +
                         ": cannot create a staging directory in it: " + std::strerror(err));
    }
    // Held until the staging directory is gone: a claim that can lock a staging directory knows its
    // import has ended (ClaimDir removes such leftovers).
    // Without flock (some network file systems) it is not locked, and ClaimDir cannot lock it either.
    staging_fd_ = ::open(staging_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (staging_fd_ >= 0) ::flock(staging_fd_, LOCK_EX | LOCK_NB);
  } catch (...) {
    Abandon();
    throw;
  }
}

StagedTraceDir::~StagedTraceDir() {
  if (!committed_) Abandon();
}

void StagedTraceDir::Abandon() noexcept {
  if (!staging_.empty()) {
    std::error_code ec;
    fs::remove_all(staging_, ec);
    staging_.clear();
  }
  if (staging_fd_ >= 0) ::close(staging_fd_);
  staging_fd_ = -1;
  lock_.reset();  // removes the lock file, so DIR is as empty as it was
  // Another job may claim DIR the moment the lock is released: its lock file makes the rmdir fail
  // (DIR is then its), or, in the microseconds before it creates one, its claim fails cleanly.
  for (const fs::path& p : created_) {
    if (::rmdir(p.c_str()) != 0) break;
  }
  created_.clear();
}

void StagedTraceDir::Write(const std::function<void(const fs::path& staging)>& write) {
  const std::string staging = staging_;
  try {
    write(fs::path(staging));
  } catch (const Error& e) {
    // A writer's message names its file and ends in the OS's reason: "trace: write to
    // 'DIR/.shardscope-tmp-X/rank-3.jsonl' failed: No space left on device".
    const std::string message = e.what();
    const bool ours = !staging.empty() && message.find(staging) != std::string::npos;
    Abandon();
    if (ours) {
      const size_t at = message.rfind(": ");
      throw InvalidInput(Quoted(flag_, dir_) + ": write failed: " +
                         (at == std::string::npos ? message : message.substr(at + 2)) + kUnchanged);
    }
    throw;
  } catch (...) {
    Abandon();
    throw;
  }
}

void StagedTraceDir::Commit() {
  const fs::path dir = TrimmedDirPath(dir_), staging = staging_;
  // Every new file reaches the disk before anything of the old trace is touched.
  std::vector<std::string> staged;
  try {
    for (const auto& entry : ListDirectory(staging, flag_))
      staged.push_back(entry.path().filename().string());
  } catch (const Error& e) {
    Abandon();
    throw InvalidInput(Quoted(flag_, dir_) + ": write failed: " + e.what() + kUnchanged);
  }
  std::sort(staged.begin(), staged.end());
  for (const std::string& name : staged) {
    if (const int err = SyncPath(staging / name, O_RDONLY); err != 0) {
      Abandon();
      throw InvalidInput(Quoted(flag_, dir_) + ": write failed: " + std::strerror(err) + kUnchanged);
    }
  }
  // Listed again: the claim's list is as old as the import.
  std::vector<fs::path> old;
  try {
    old = trace::RankFilesIn(dir);
  } catch (const Error& e) {
    Abandon();
    throw InvalidInput(flag_ + ": " + e.what() + kUnchanged);
  }
  if (!old.empty() && !force_) {
    Abandon();
    throw InvalidInput(AlreadyHolds(dir_, flag_, old));
  }
  MoveIntoPlace(staged, old);
}

void StagedTraceDir::MoveIntoPlace(const std::vector<std::string>& staged, const std::vector<fs::path>& old) {
  const fs::path dir = TrimmedDirPath(dir_), staging = staging_, aside = staging / "old";
  // The old trace's rank files are moved aside (not removed) until the new ones are all in place,
  // so a failed rename can be undone. Renames stay inside DIR's file system.
  std::vector<std::pair<fs::path, fs::path>> moves;  // (from, to), in order
  for (const fs::path& file : old) moves.emplace_back(file, aside / file.filename());
  for (const std::string& name : staged) moves.emplace_back(staging / name, dir / name);
  size_t done = 0;
  int err = 0;
  if (!old.empty() && ::mkdir(aside.c_str(), 0700) != 0) err = errno;
  while (err == 0 && done < moves.size()) {
    if (::rename(moves[done].first.c_str(), moves[done].second.c_str()) != 0) {
      err = errno;
    } else {
      ++done;
    }
  }
  std::string what = done < old.size() ? "cannot move the old rank files aside"
                                       : "cannot move the new rank files into place";
  if (err == 0 && (err = SyncPath(dir, O_RDONLY | O_DIRECTORY)) != 0) what = "cannot flush it to disk";
  if (err == 0) {
    committed_ = true;
    created_.clear();  // DIR is the trace now
    std::error_code ec;
    fs::remove_all(staging, ec);  // with the old trace's files
    if (ec) {
      std::cerr << "shardscope: note: " << flag_ << ": the trace is in '" << dir_
                << "' but its staging directory '" << staging_ << "' could not be removed: " << ec.message()
                << "\n";
    }
    staging_.clear();
    Abandon();  // releases the lock
    return;
  }
  int undo_err = 0;
  for (size_t i = done; i-- > 0;) {
    if (::rename(moves[i].second.c_str(), moves[i].first.c_str()) != 0 && undo_err == 0) undo_err = errno;
  }
  const std::string reason = Quoted(flag_, dir_) + ": " + what + ": " + std::strerror(err);
  if (undo_err != 0) {
    // The staging directory may hold the only copy of old rank files: it stays (ClaimDir leaves a
    // staging directory with old/ in it alone).
    const std::string kept = staging_;
    staging_.clear();
    created_.clear();
    Abandon();
    throw InvalidInput(
        reason + "; undoing the moves failed too (" + std::strerror(undo_err) + "): '" + dir_ +
        "' may hold old and new rank files" +
        (old.empty() ? std::string() : "; the old ones missing from it are in '" + kept + "/old'"));
  }
  Abandon();
  throw InvalidInput(reason + kUnchanged);
}

}  // namespace shardscope::app
