#!/usr/bin/env bash
# Sanitizer builds of the unit suites (not wired into .ci/run; each part prints its duration).
#   asan: ASan + UBSan build (build-asan/), every unit test including the fuzz cases and the
#         property suites with SHARDSCOPE_PROPERTY_CASES cases (default 100, full runs use 2000).
#   tsan: TSan build (build-tsan/), the local-backend suites [local] and [executor] (threads).
# Usage: scripts/sanitize.sh [asan|tsan|all]        (default: all)
# Env:   JOBS (default 2), SHARDSCOPE_PROPERTY_CASES (default 100), SHARDSCOPE_FUZZ_SECONDS (default 30),
#        SHARDSCOPE_SANITIZE_BUILD_ROOT (default: the repository root; dirs are build-asan, build-tsan).
# Exit status: 0 when every selected suite passed, 1 otherwise. Sanitizer reports abort the test.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
mode=${1:-all}
jobs=${JOBS:-2}
build_root=${SHARDSCOPE_SANITIZE_BUILD_ROOT:-$root}
export SHARDSCOPE_PROPERTY_CASES=${SHARDSCOPE_PROPERTY_CASES:-100}
export SHARDSCOPE_FUZZ_SECONDS=${SHARDSCOPE_FUZZ_SECONDS:-30}
export SHARDSCOPE_FUZZ_ITERATIONS=${SHARDSCOPE_FUZZ_ITERATIONS:-1000000}  # the time bound applies
case "$mode" in asan | tsan | all) ;; *) echo "usage: $0 [asan|tsan|all]" >&2; exit 2 ;; esac

# build DIR SANITIZERS: configure (Release layout, -O1 -g) and build only the unit-test binary.
build() {
  local dir=$1 flags="-fsanitize=$2 -fno-omit-frame-pointer -fno-sanitize-recover=all"
  cmake -S "$root" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSHARDSCOPE_WITH_GUI=OFF \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" -DCMAKE_CXX_FLAGS="$flags" \
    -DCMAKE_EXE_LINKER_FLAGS="$flags" >"$dir.configure.log" 2>&1 ||
    { cat "$dir.configure.log"; return 1; }
  cmake --build "$dir" -j"$jobs" --target shardscope_tests
}

# timed LABEL COMMAND...: runs COMMAND and prints how long it took.
timed() {
  local label=$1 start end rc=0
  shift
  start=$(date +%s)
  "$@" || rc=$?
  end=$(date +%s)
  echo "== $label: $((end - start)) s (exit $rc)"
  return $rc
}

status=0
if [ "$mode" = asan ] || [ "$mode" = all ]; then
  dir="$build_root/build-asan"
  mkdir -p "$dir"
  timed "asan build" build "$dir" address,undefined || status=1
  if [ $status -eq 0 ]; then
    # detect_leaks needs ptrace; it is turned off where the kernel refuses it (containers).
    ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_stack_use_after_return=1} \
      UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
      timed "asan+ubsan unit tests (property cases $SHARDSCOPE_PROPERTY_CASES)" \
      "$dir/bin/shardscope_tests" --order decl || status=1
  fi
fi
if [ "$mode" = tsan ] || [ "$mode" = all ]; then
  dir="$build_root/build-tsan"
  mkdir -p "$dir"
  timed "tsan build" build "$dir" thread || status=1
  if [ -x "$dir/bin/shardscope_tests" ]; then
    TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1} \
      timed "tsan local-backend tests [local],[executor]" "$dir/bin/shardscope_tests" "[local],[executor]" ||
      status=1
  fi
fi
exit $status
