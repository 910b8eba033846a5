#!/usr/bin/env bash
# shellcheck disable=SC2317  # build and run_tests are called through timed
# Sanitizer builds of the unit suites; .ci/run runs `scripts/sanitize.sh all` after the normal tests.
#   asan: ASan + UBSan build (build-asan/) of the suites that touch memory a user's input or a
#         rank's buffers decide: every trace and program test source (readers, importers of
#         Flight Recorder, DebugMode and profiler files, writers, checker, triage, the fuzz cases,
#         each bounded by SHARDSCOPE_FUZZ_SECONDS) and the engine's executor, local backend, view
#         ops and redistribute property suites (SHARDSCOPE_PROPERTY_CASES cases).
#   asan-full: the same build over every unit test source (the planner, notation, placement and
#         optimizer suites too: pure computation, run by the normal build and the long sweeps).
#   tsan: TSan build (build-tsan/): the local-backend suites [local] and [executor] (rank threads;
#         [executor] includes the redistribute property suite, same case count).
# Builds use g++ at -O0 -g1 (line tables for the reports; the engine library at -O1: it does the
# property suites' arithmetic, and ASan at -O1 costs 2.5x the compile CPU of -O0 on the JSON-heavy
# trace and program sources, 23.5 against 9.5 s for trace/src/summary.cpp), without GUI, MPI and CUDA, of the
# engine, trace and program libraries plus only the selected test sources, through a small
# wrapper project generated in build-<mode>/src (it adds the repository as a subproject). Each
# part prints its duration.
# Usage: scripts/sanitize.sh [asan|asan-full|tsan|all]        (default: all = asan + tsan)
# Env:   JOBS (default 2), SHARDSCOPE_PROPERTY_CASES (default 200; full runs use 2000),
#        SHARDSCOPE_FUZZ_SECONDS (default 10 per fuzz case), SANITIZE_CXX (compiler, default g++),
#        SHARDSCOPE_SANITIZE_BUILD_ROOT (default: the repository root; dirs are build-asan, build-tsan).
# Exit status: 0 when every selected suite built and passed with no sanitizer report, 1 otherwise.
# A report fails the run twice over: the runtimes abort the test binary (halt/abort on error,
# -fno-sanitize-recover), and the test log is also searched for report headers.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
mode=${1:-all}
jobs=${JOBS:-2}
cxx=${SANITIZE_CXX:-g++}
build_root=${SHARDSCOPE_SANITIZE_BUILD_ROOT:-$root}
export SHARDSCOPE_PROPERTY_CASES=${SHARDSCOPE_PROPERTY_CASES:-200}
export SHARDSCOPE_FUZZ_SECONDS=${SHARDSCOPE_FUZZ_SECONDS:-10}
export SHARDSCOPE_FUZZ_ITERATIONS=${SHARDSCOPE_FUZZ_ITERATIONS:-1000000} # the time bound applies
case "$mode" in asan | asan-full | tsan | all) ;; *)
  echo "usage: $0 [asan|asan-full|tsan|all]" >&2
  exit 2
  ;;
esac

# Lines that start a sanitizer report (ASan, LSan, UBSan, TSan).
report_pattern='ERROR: (AddressSanitizer|LeakSanitizer)|runtime error: |WARNING: ThreadSanitizer|ThreadSanitizer: reported'

# tests_project DIR SOURCE...: writes DIR/src/CMakeLists.txt, a project that builds the
# repository's libraries and a shardscope_tests binary from the given test sources.
tests_project() {
  local dir=$1
  shift
  mkdir -p "$dir/src"
  cat >"$dir/src/CMakeLists.txt" <<EOF
cmake_minimum_required(VERSION 3.25)
project(shardscope_sanitized_tests LANGUAGES CXX)
set(CMAKE_CXX_STANDARD 20)
set(CMAKE_CXX_STANDARD_REQUIRED ON)
set(CMAKE_RUNTIME_OUTPUT_DIRECTORY \${PROJECT_BINARY_DIR}/bin)
add_subdirectory("$root" shardscope)
# The engine's arithmetic (the property suites) at -O1; everything else at the -O0 of the build type.
target_compile_options(shardscope_engine PRIVATE -O1)
find_package(Catch2 2 REQUIRED)
add_executable(shardscope_tests $*)
target_link_libraries(shardscope_tests PRIVATE shardscope::program shardscope::engine shardscope::trace Catch2::Catch2WithMain)
target_compile_definitions(shardscope_tests PRIVATE SHARDSCOPE_SOURCE_DIR="$root"
  SHARDSCOPE_BIN_DIR="\${PROJECT_BINARY_DIR}/bin")
shardscope_precompile(shardscope_tests CATCH)
EOF
}

# The test sources holding [local] or [executor] cases (rank threads, buffers).
executor_sources() {
  grep -lE '"[^"]*\[(local|executor)\]' "$root"/tests/engine/*_test.cpp "$root"/tests/program/*_test.cpp "$root"/tests/trace/*_test.cpp
}

# build DIR SANITIZERS: configure DIR/src (see tests_project) and build only the unit-test binary.
build() {
  local dir=$1 flags="-fsanitize=$2 -fno-omit-frame-pointer -fno-sanitize-recover=all" src=$1/src
  mkdir -p "$dir"
  CXX=$cxx cmake -S "$src" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O0 -g1" -DCMAKE_CXX_FLAGS="$flags" \
    -DCMAKE_EXE_LINKER_FLAGS="$flags" -DSHARDSCOPE_WITH_GUI=OFF -DSHARDSCOPE_WITH_MPI=OFF \
    -DSHARDSCOPE_WITH_CUDA=OFF -DSHARDSCOPE_WITH_NCCL=OFF -DSHARDSCOPE_INSTALL=OFF \
    >"$dir.configure.log" 2>&1 || {
    cat "$dir.configure.log"
    return 1
  }
  cmake --build "$dir" -j"$jobs" --target shardscope_tests
}

# run_tests LOG COMMAND...: runs the test binary, keeping its output in LOG; fails on a non-zero
# exit or on any sanitizer report in the output.
run_tests() {
  local log=$1 rc=0
  shift
  "$@" 2>&1 | tee "$log" || rc=${PIPESTATUS[0]}
  if grep -qE "$report_pattern" "$log"; then
    echo "sanitizer report(s) in $log:" >&2
    grep -E "$report_pattern" "$log" | head -n 20 >&2
    [ "$rc" -ne 0 ] || rc=1
  fi
  return "$rc"
}

# timed LABEL COMMAND...: runs COMMAND and prints how long it took.
timed() {
  local label=$1 start rc=0
  shift
  start=$(date +%s)
  "$@" || rc=$?
  echo "== $label: $(($(date +%s) - start)) s (exit $rc)"
  return "$rc"
}

status=0
if [ "$mode" = asan ] || [ "$mode" = asan-full ] || [ "$mode" = all ]; then
  dir="$build_root/build-asan"
  if [ "$mode" = asan-full ]; then
    mapfile -t sources < <(ls "$root"/tests/engine/*_test.cpp "$root"/tests/program/*_test.cpp "$root"/tests/trace/*_test.cpp)
  else
    mapfile -t sources < <({
      ls "$root"/tests/program/*_test.cpp "$root"/tests/trace/*_test.cpp
      executor_sources
    } | sort -u)
  fi
  tests_project "$dir" "${sources[@]}"
  if timed "asan+ubsan build ($cxx, ${#sources[@]} test sources)" build "$dir" address,undefined; then
    # LeakSanitizer stops the world with ptrace, which some containers refuse; set
    # ASAN_OPTIONS=detect_leaks=0 there.
    ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_stack_use_after_return=1:strict_string_checks=1} \
      UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
      timed "asan+ubsan unit tests (property cases $SHARDSCOPE_PROPERTY_CASES, fuzz ${SHARDSCOPE_FUZZ_SECONDS} s/case)" \
      run_tests "$dir/test.log" "$dir/bin/shardscope_tests" --order decl || status=1
  else
    status=1
  fi
fi
if [ "$mode" = tsan ] || [ "$mode" = all ]; then
  dir="$build_root/build-tsan"
  mapfile -t sources < <(executor_sources)
  tests_project "$dir" "${sources[@]}"
  if timed "tsan build ($cxx, ${#sources[@]} local-backend test sources)" build "$dir" thread; then
    TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1} \
      timed "tsan local-backend tests [local],[executor] (property cases $SHARDSCOPE_PROPERTY_CASES)" \
      run_tests "$dir/test.log" "$dir/bin/shardscope_tests" "[local],[executor]" || status=1
  else
    status=1
  fi
fi
if [ "$status" -eq 0 ]; then
  echo "sanitize: $mode passed"
else
  echo "sanitize: $mode FAILED" >&2
fi
exit "$status"
