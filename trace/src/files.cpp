#include "shardscope/files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "shardscope/error.hpp"

namespace shardscope {

std::string FileKindName(unsigned mode) {
  switch (mode & S_IFMT) {
    case S_IFREG:
      return "a regular file";
    case S_IFDIR:
      return "a directory";
    case S_IFIFO:
      return "a FIFO";
    case S_IFCHR:
      return "a character device";
    case S_IFBLK:
      return "a block device";
    case S_IFSOCK:
      return "a socket";
    default:
      return "a special file";
  }
}

std::FILE* OpenRegularFileForReading(const std::filesystem::path& path, const std::string& what) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever. A stat before
  // the open would leave a window in which the name could become a FIFO; fstat of the open file
  // has none.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) throw InvalidInput("cannot open " + what + " '" + path.string() + "': " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    const std::string kind = FileKindName(st.st_mode);
    ::close(fd);
    throw InvalidInput(what + " '" + path.string() + "' is " + kind + ", not a regular file");
  }
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  std::FILE* file = ::fdopen(fd, "rb");
  if (file == nullptr) {
    const int err = errno;
    ::close(fd);
    throw InvalidInput("cannot open " + what + " '" + path.string() + "': " + std::strerror(err));
  }
  return file;
}

std::vector<std::filesystem::directory_entry> ListDirectory(const std::filesystem::path& dir,
                                                            const std::string& who) {
  std::vector<std::filesystem::directory_entry> out;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    out.push_back(*it);
  if (ec) throw InvalidInput(who + ": cannot list '" + dir.string() + "': " + ec.message());
  return out;
}

}  // namespace shardscope
