#!/usr/bin/env bash
# One script for a GPU machine (written for an H200 with CUDA 13 in /usr/local/cuda, 16 cores,
# Debian, no internet): configures with CUDA (sm_90) and NCCL when present, builds with -j16,
# runs the gpu-labelled tests and the GPU benchmarks, and prints every phase with its duration.
# Outputs go to $OUT when set, else to build-gpu/out: two files only (a device lease returns at
# most 8), summary.txt and run.log (every phase's output, benchmark tables included); per-phase
# logs and the sample trace stay in $BUILD_DIR/logs and $BUILD_DIR/trace-fsdp_tp-cuda.
#   tests/gpu/run.sh            from the repository root (or anywhere: it finds the root)
#   tests/gpu/run.sh stage-deps on the build machine: copies the build dependencies a CUDA image
#                               lacks (nlohmann-json, Catch2 v2, CLI11: headers and CMake package
#                               files; simdjson: header, shared library and package file)
#                               into build-gpu-deps/ (git-ignored) to carry to a GPU machine that
#                               has CUDA but not them and cannot download; run.sh uses that folder
#                               as CMAKE_PREFIX_PATH when it exists.
# Environment: BUILD_DIR (default build-gpu), JOBS (default 16), CUDA_HOME (default /usr/local/cuda),
# CUDA_ARCHS (default 90), BENCH_SIZES (default 64K,1M,16M,64M), GPU_CASES (property cases, 300),
# BUDGET_S (default 450: every phase's limit is cut to what is left of it, so the whole script
# ends within it; phases that get under 15 s are skipped).
# Exit status: 0 when every phase passed, 1 when a test failed, 2 when the build could not be set up.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
deps="$root/build-gpu-deps"
if [ "${1:-}" = "stage-deps" ]; then
  rm -rf "$deps"
  mkdir -p "$deps/include" "$deps/lib"
  for dir in nlohmann catch2 CLI; do cp -r "/usr/include/$dir" "$deps/include/"; done
  # simdjson (the trace reader's parser) is a shared library: its header, the library (the build
  # tree's RPATH finds it there) and its package file.
  cp /usr/include/simdjson.h "$deps/include/"
  simdjson_lib=$(ls /usr/lib/*/libsimdjson.so.*.* 2>/dev/null | head -1 || true)
  [ -n "$simdjson_lib" ] || { echo "stage-deps: no libsimdjson under /usr/lib (libsimdjson-dev)" >&2; exit 2; }
  mkdir -p "$deps/${simdjson_lib%/*}"
  cp -P "${simdjson_lib%/*}"/libsimdjson.so* "$deps/${simdjson_lib%/*}/"
  mv "$deps/usr/lib"/* "$deps/lib/" && rm -rf "$deps/usr"
  # Package files at their path under /usr: they locate the headers relative to themselves.
  for pkg in nlohmann_json Catch2 CLI11 simdjson; do
    config=$(ls /usr/share/cmake/$pkg/*[Cc]onfig.cmake /usr/lib/cmake/$pkg/*[Cc]onfig.cmake \
      /usr/lib/*/cmake/$pkg/*[Cc]onfig.cmake 2>/dev/null | grep -v -- -version | head -1 || true)
    [ -n "$config" ] || { echo "stage-deps: no CMake package file for $pkg under /usr" >&2; exit 2; }
    rel=$(dirname "${config#/usr/}")
    mkdir -p "$deps/$(dirname "$rel")"
    cp -r "$(dirname "$config")" "$deps/$rel"
  done
  # Catch2's package file checks that its static main library exists.
  cp /usr/lib/libCatch2WithMain.a "$deps/lib/" 2>/dev/null || true
  du -sh "$deps"
  exit 0
fi
build=${BUILD_DIR:-build-gpu}
jobs=${JOBS:-16}
cuda_home=${CUDA_HOME:-/usr/local/cuda}
archs=${CUDA_ARCHS:-90}
sizes=${BENCH_SIZES:-64K,1M,16M,64M}
out=${OUT:-$build/out}
budget=${BUDGET_S:-450}
logs="$build/logs"
mkdir -p "$out" "$logs"
summary="$out/summary.txt"
runlog="$out/run.log"
: >"$summary"
: >"$runlog"
failures=0
t_start=$(date +%s)

say() { echo "$*" | tee -a "$summary"; }
# phase NAME LIMIT_S CMD...: runs CMD under `timeout` (LIMIT_S, cut to what is left of the
# budget), appends its output to $runlog and $logs/NAME.log, prints its duration.
phase() {
  local name=$1 limit=$2
  shift 2
  local t0 rc=0 left
  t0=$(date +%s)
  left=$((budget - (t0 - t_start) - 10))
  if [ "$left" -lt 15 ]; then
    say "phase $name: SKIPPED (the ${budget} s budget is spent)"
    return 124
  fi
  [ "$limit" -le "$left" ] || limit=$left
  echo "== [$name] $* (limit ${limit}s)" | tee -a "$runlog"
  set +e
  timeout --kill-after=5 "$limit" "$@" 2>&1 | tee -a "$runlog" | tee "$logs/$name.log"
  rc=${PIPESTATUS[0]}
  set -e
  local status=ok
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then status="TIMEOUT"; elif [ "$rc" -ne 0 ]; then status="FAILED (exit $rc)"; fi
  say "phase $name: $status, $(( $(date +%s) - t0 )) s"
  return "$rc"
}

# ---- environment -----------------------------------------------------------------------------
if ! command -v nvcc >/dev/null 2>&1 && [ -x "$cuda_home/bin/nvcc" ]; then
  export PATH="$cuda_home/bin:$PATH"
fi
# check_language(CUDA) finds nvcc through PATH or $CUDACXX (STACK.md: do not preset CMAKE_CUDA_COMPILER).
export CUDACXX=${CUDACXX:-$(command -v nvcc || true)}
export OMPI_MCA_btl_vader_single_copy_mechanism=none
{
  echo "host: $(hostname), $(nproc) cores, $(date -u +%FT%TZ)"
  echo "git: $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo "nvcc: ${CUDACXX:-missing} $( [ -n "${CUDACXX:-}" ] && "$CUDACXX" --version | tail -1)"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null \
    | sed 's/^/gpu: /' || echo "gpu: nvidia-smi not available"
  echo "mpirun: $(command -v mpirun || echo missing)"
} | tee -a "$summary"
if [ -z "${CUDACXX:-}" ]; then
  say "no nvcc found (PATH or $cuda_home/bin): cannot build the GPU backends"
  exit 2
fi

# What the build needs (STACK.md): cmake, a C++ compiler, a build tool, nlohmann-json, Catch2 v2,
# CLI11; MPI is optional (nccl needs it), python3 is used by the samples test. apt-get is tried
# only for a missing required package and only when it exists (the machine may be offline: a
# missing MPI alone is not worth the wait).
missing=()
command -v cmake >/dev/null || missing+=(cmake)
command -v g++ >/dev/null || missing+=(g++)
command -v make >/dev/null || command -v ninja >/dev/null || missing+=(make)
command -v python3 >/dev/null || missing+=(python3)
prefix=()
if [ -d "$deps/include" ]; then
  say "build dependencies from $deps (tests/gpu/run.sh stage-deps)"
  prefix=(-DCMAKE_PREFIX_PATH="$deps")
fi
[ -e /usr/include/nlohmann/json.hpp ] || [ -e "$deps/include/nlohmann/json.hpp" ] || missing+=(nlohmann-json3-dev)
[ -e /usr/include/catch2/catch.hpp ] || [ -e "$deps/include/catch2/catch.hpp" ] || missing+=(catch2)
[ -e /usr/include/CLI/CLI.hpp ] || [ -e "$deps/include/CLI/CLI.hpp" ] || missing+=(libcli11-dev)
if [ ${#missing[@]} -gt 0 ]; then
  command -v mpirun >/dev/null || missing+=(libopenmpi-dev openmpi-bin)
  say "missing packages: ${missing[*]}"
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" -eq 0 ]; then
    # Short network timeouts: an offline machine must not spend the budget here.
    apt_opts="-o Acquire::Retries=0 -o Acquire::http::Timeout=10 -o Acquire::https::Timeout=10"
    phase apt 60 bash -c "DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ${missing[*]} \
      || { apt-get $apt_opts update && DEBIAN_FRONTEND=noninteractive apt-get $apt_opts install -y \
      --no-install-recommends ${missing[*]}; }" \
      || say "apt-get could not install them (offline?); continuing with what is there"
  fi
fi
command -v mpirun >/dev/null || say "no mpirun: the nccl backend, its test and benchmark are skipped"
for tool in cmake g++; do
  command -v "$tool" >/dev/null || { say "required tool $tool is missing"; exit 2; }
done
generator=()
command -v make >/dev/null || { command -v ninja >/dev/null && generator=(-G Ninja); }

# ---- configure and build ---------------------------------------------------------------------
phase configure 120 cmake -S "$root" -B "$build" "${generator[@]}" "${prefix[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DSHARDSCOPE_WITH_CUDA=ON -DSHARDSCOPE_WITH_NCCL=AUTO -DSHARDSCOPE_WITH_GUI=OFF \
  -DCMAKE_CUDA_ARCHITECTURES="$archs" || exit 2
targets=(shardscope shardscope_gpu_tests)
phase build 300 cmake --build "$build" -j "$jobs" --target "${targets[@]}" || exit 2
bin="$build/bin/shardscope"
nccl_built=$(grep -c "NCCL backend: ON" "$logs/configure.log" || true)

# ---- tests -----------------------------------------------------------------------------------
# The three gpu tests in parallel (one GPU is plenty for them), each under its TIMEOUT.
export SHARDSCOPE_GPU_CASES=${GPU_CASES:-300}
phase gpu_tests 240 ctest --test-dir "$build" -L gpu -j 3 --output-on-failure \
  || failures=$((failures + 1))
# A skipped test passes in ctest: say so, with the reason the test printed.
grep -E "Skipped|^SKIP" "$logs/gpu_tests.log" 2>/dev/null | sed 's/^/gpu_tests: /' >>"$summary" || true
trace="$build/trace-fsdp_tp-cuda"
rm -rf "$trace"
phase sample_run 60 "$bin" run samples/fsdp_tp.json --backend cuda --verify --trace "$trace" \
  || failures=$((failures + 1))
phase sample_show 20 "$bin" show "$trace" || true

# ---- benchmarks (figures, not pass/fail) -----------------------------------------------------
phase bench_cuda 120 "$bin" bench comm --backend cuda --ranks 8 --sizes "$sizes" || true
if [ "$nccl_built" -gt 0 ] && command -v mpirun >/dev/null 2>&1; then
  gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
  np=$(( ${gpus:-1} > 8 ? 8 : ${gpus:-1} ))
  [ "$np" -ge 1 ] || np=1
  phase bench_nccl 90 mpirun -np "$np" --oversubscribe --allow-run-as-root \
    "$bin" bench comm --backend nccl --sizes "$sizes" || true
else
  say "nccl benchmark skipped (NCCL backend not built or mpirun missing)"
fi
phase bench_local 60 "$bin" bench comm --backend local --ranks 8 --sizes 64K,1M,16M || true

say "total: $(( $(date +%s) - t_start )) s, failed test phases: $failures"
say "outputs in $out"
[ "$failures" -eq 0 ]
