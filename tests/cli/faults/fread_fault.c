/* A fault for the CLI tests, loaded with LD_PRELOAD: every fread(3) of one file fails with EIO,
 * as a failing disk would, for readers that open a file by its size (a Flight Recorder dump) where
 * /proc/self/mem (size 0) cannot stand in for it. Before the read, the stream's descriptor is made
 * to point at /proc/self/mem, whose offset 0 fails every read with EIO, so the C library sets the
 * stream's error flag and errno exactly as a real read error would.
 *
 *   SHARDSCOPE_FAULT_FILE=<file>   the file whose reads fail (as realpath(3) gives it)
 *
 * Built by tests/cli/io_errors_test.sh with the system C compiler. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fd_names.h"

static int IsTarget(FILE* f) { return f != NULL && FdNamedBy(fileno(f), "SHARDSCOPE_FAULT_FILE"); }

size_t fread(void* ptr, size_t size, size_t n, FILE* f) {
  static size_t (*real)(void*, size_t, size_t, FILE*) = NULL;
  if (real == NULL) real = (size_t(*)(void*, size_t, size_t, FILE*))dlsym(RTLD_NEXT, "fread");
  if (IsTarget(f)) {
    int fd = open("/proc/self/mem", O_RDONLY);
    if (fd >= 0) {
      dup2(fd, fileno(f));
      close(fd);
    }
  }
  return real(ptr, size, n, f);
}
