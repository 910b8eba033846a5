/* A fault for the CLI tests, loaded with LD_PRELOAD: the Nth listing of one directory fails
 * with EIO after its first entry, as a failing disk or network file system would fail in the
 * middle of a listing. Deterministic, unlike any real way to make readdir(3) fail.
 *
 *   SHARDSCOPE_FAULT_DIR=<directory>   the directory whose listing fails (as realpath(3) gives it)
 *   SHARDSCOPE_FAULT_LISTING=<N>       which listing of it fails, counting from 1 (default 1)
 *
 * Built by tests/cli/io_errors_test.sh with the system C compiler. Single-threaded use only. */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fd_names.h"

static DIR* faulty;  /* the listing that fails, while it is open */
static int served;   /* entries other than "." and ".." it has returned */
static int listings; /* listings of the directory so far */

static int IsTarget(DIR* d) { return d != NULL && FdNamedBy(dirfd(d), "SHARDSCOPE_FAULT_DIR"); }

static DIR* Opened(DIR* d) {
  if (IsTarget(d)) {
    const char* which = getenv("SHARDSCOPE_FAULT_LISTING");
    if (++listings == (which != NULL ? atoi(which) : 1)) {
      faulty = d;
      served = 0;
    }
  }
  return d;
}

DIR* opendir(const char* name) {
  DIR* (*real)(const char*) = (DIR * (*)(const char*)) dlsym(RTLD_NEXT, "opendir");
  return Opened(real(name));
}

DIR* fdopendir(int fd) {
  DIR* (*real)(int) = (DIR * (*)(int)) dlsym(RTLD_NEXT, "fdopendir");
  return Opened(real(fd));
}

int closedir(DIR* d) {
  int (*real)(DIR*) = (int (*)(DIR*))dlsym(RTLD_NEXT, "closedir");
  if (d == faulty) faulty = NULL;
  return real(d);
}

static struct dirent* Next(DIR* d, struct dirent* (*real)(DIR*)) {
  if (d == faulty && served >= 1) {
    errno = EIO;
    return NULL;
  }
  struct dirent* e = real(d);
  if (d == faulty && e != NULL && strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) ++served;
  return e;
}

struct dirent* readdir(DIR* d) {
  return Next(d, (struct dirent * (*)(DIR*)) dlsym(RTLD_NEXT, "readdir"));
}

// On LP64 glibc struct dirent64 is struct dirent, field for field, so Next serves both.
_Static_assert(sizeof(struct dirent64) == sizeof(struct dirent) &&
                   offsetof(struct dirent64, d_name) == offsetof(struct dirent, d_name),
               "readdir64's entries differ from readdir's");

struct dirent64* readdir64(DIR* d) {
  return (struct dirent64*)Next(d, (struct dirent * (*)(DIR*)) dlsym(RTLD_NEXT, "readdir64"));
}
