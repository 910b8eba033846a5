/* A fault for the CLI tests, loaded with LD_PRELOAD: writes, fsyncs and renames of files under one
 * directory fail as a full or failing disk would fail them, while every other file (a replay's
 * scratch trace in $TMPDIR) is written as usual. Deterministic, and needs neither root nor a
 * full disk.
 *
 *   SHARDSCOPE_FAULT_UNDER=<directory>  the files concerned: those below it (as realpath(3) gives it)
 *   SHARDSCOPE_FAULT_BYTES=<N>          such a file takes N bytes; an fwrite(3) past them writes what
 *                                       fits and fails (unset: writes do not fail)
 *   SHARDSCOPE_FAULT_ERRNO=<name>       the error of a failing write: ENOSPC (default), EIO or EFBIG
 *   SHARDSCOPE_FAULT_FSYNC=1            fsync(2) of a file or directory below it fails with EIO
 *   SHARDSCOPE_FAULT_RENAME=<K>[+]      the Kth rename(2) to a name below it fails with EIO (K+: the
 *                                       Kth and every later one)
 *
 * Built by tests/cli/atomic_output_test.sh with the system C compiler. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Whether `path` (a real path) is below SHARDSCOPE_FAULT_UNDER. */
static int Below(const char* path) {
  const char* under = getenv("SHARDSCOPE_FAULT_UNDER");
  char real_under[PATH_MAX];
  if (under == NULL || realpath(under, real_under) == NULL) return 0;
  size_t n = strlen(real_under);
  return strncmp(path, real_under, n) == 0 && path[n] == '/';
}

static int FdBelow(int fd) {
  char link[64], path[PATH_MAX];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link, path, sizeof path - 1);
  if (n < 0) return 0;
  path[n] = '\0';
  return Below(path);
}

static int FaultErrno(void) {
  const char* name = getenv("SHARDSCOPE_FAULT_ERRNO");
  if (name != NULL && strcmp(name, "EIO") == 0) return EIO;
  if (name != NULL && strcmp(name, "EFBIG") == 0) return EFBIG;
  return ENOSPC;
}

size_t fwrite(const void* ptr, size_t size, size_t n, FILE* f) {
  static size_t (*real)(const void*, size_t, size_t, FILE*) = NULL;
  if (real == NULL) real = (size_t(*)(const void*, size_t, size_t, FILE*))dlsym(RTLD_NEXT, "fwrite");
  const char* limit_text = getenv("SHARDSCOPE_FAULT_BYTES");
  if (limit_text == NULL || size == 0 || f == NULL || !FdBelow(fileno(f))) return real(ptr, size, n, f);
  /* The bytes the file holds or will hold: on disk, plus those waiting in the stream's buffer. */
  struct stat st;
  if (fstat(fileno(f), &st) != 0) return real(ptr, size, n, f);
  long long held = (long long)st.st_size + (long long)(f->_IO_write_ptr - f->_IO_write_base);
  long long room = atoll(limit_text) - held;
  if (room >= (long long)(size * n)) return real(ptr, size, n, f);
  size_t fits = room > 0 ? (size_t)room / size : 0;
  size_t done = fits > 0 ? real(ptr, size, fits, f) : 0;
  errno = FaultErrno();
  return done;
}

int fsync(int fd) {
  static int (*real)(int) = NULL;
  if (real == NULL) real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
  const char* on = getenv("SHARDSCOPE_FAULT_FSYNC");
  if (on != NULL && strcmp(on, "1") == 0 && FdBelow(fd)) {
    errno = EIO;
    return -1;
  }
  return real(fd);
}

int rename(const char* from, const char* to) {
  static int (*real)(const char*, const char*) = NULL;
  static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
  static int renames = 0;
  if (real == NULL) real = (int (*)(const char*, const char*))dlsym(RTLD_NEXT, "rename");
  const char* which = getenv("SHARDSCOPE_FAULT_RENAME");
  if (which != NULL) {
    /* The new name's directory exists: its real path tells where the name lands. */
    char dir[PATH_MAX], real_dir[PATH_MAX + 2];
    snprintf(dir, sizeof dir, "%s", to);
    char* slash = strrchr(dir, '/');
    if (slash != NULL) *slash = '\0';
    if (realpath(slash != NULL ? dir : ".", real_dir) != NULL) {
      strcat(real_dir, "/x");
      pthread_mutex_lock(&mu);
      int k = Below(real_dir) ? ++renames : 0;
      int fail = k > 0 && (k == atoi(which) || (strchr(which, '+') != NULL && k > atoi(which)));
      pthread_mutex_unlock(&mu);
      if (fail) {
        errno = EIO;
        return -1;
      }
    }
  }
  return real(from, to);
}
