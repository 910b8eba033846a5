/* Shared by the fault shims: whether descriptor `fd` is the file or directory that environment
 * variable `env` names (both as realpath(3) gives them); 0 when `env` is unset. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int FdNamedBy(int fd, const char* env) {
  const char* want = getenv(env);
  char link[64], path[PATH_MAX], real_want[PATH_MAX];
  if (fd < 0 || want == NULL || realpath(want, real_want) == NULL) return 0;
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link, path, sizeof path - 1);
  if (n < 0) return 0;
  path[n] = '\0';
  return strcmp(path, real_want) == 0;
}
