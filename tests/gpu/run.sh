#!/usr/bin/env bash
# One script for a GPU machine (written for an H200 with CUDA 13 in /usr/local/cuda, 16 cores,
# Debian, no internet): configures with CUDA (sm_90) and NCCL when present, builds with -j16,
# runs the gpu-labelled tests and the GPU benchmarks, and prints every phase with its duration.
# Outputs (logs, benchmark tables, a summary) go to $OUT when set, else to build-gpu/out.
#   tests/gpu/run.sh            from the repository root (or anywhere: it finds the root)
# Environment: BUILD_DIR (default build-gpu), JOBS (default 16), CUDA_HOME (default /usr/local/cuda),
# CUDA_ARCHS (default 90), BENCH_SIZES (default 64K,1M,16M,64M), GPU_CASES (property cases, 300).
# Exit status: 0 when every phase passed, 1 when a test failed, 2 when the build could not be set up.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
build=${BUILD_DIR:-build-gpu}
jobs=${JOBS:-16}
cuda_home=${CUDA_HOME:-/usr/local/cuda}
archs=${CUDA_ARCHS:-90}
sizes=${BENCH_SIZES:-64K,1M,16M,64M}
out=${OUT:-$build/out}
mkdir -p "$out"
summary="$out/summary.txt"
: >"$summary"
failures=0
t_start=$(date +%s)

say() { echo "$*" | tee -a "$summary"; }
# phase NAME LIMIT_S CMD...: runs CMD under `timeout`, logs to $out/NAME.log, prints duration.
phase() {
  local name=$1 limit=$2
  shift 2
  local t0 rc=0
  t0=$(date +%s)
  echo "== [$name] $* (limit ${limit}s)"
  set +e
  timeout --kill-after=10 "$limit" "$@" 2>&1 | tee "$out/$name.log"
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
# only for what is missing and only when it exists (the machine may be offline).
missing=()
command -v cmake >/dev/null || missing+=(cmake)
command -v g++ >/dev/null || missing+=(g++)
command -v make >/dev/null || command -v ninja >/dev/null || missing+=(make)
command -v python3 >/dev/null || missing+=(python3)
[ -e /usr/include/nlohmann/json.hpp ] || missing+=(nlohmann-json3-dev)
[ -e /usr/include/catch2/catch.hpp ] || missing+=(catch2)
[ -e /usr/include/CLI/CLI.hpp ] || missing+=(libcli11-dev)
command -v mpirun >/dev/null || missing+=(libopenmpi-dev openmpi-bin)
if [ ${#missing[@]} -gt 0 ]; then
  say "missing packages: ${missing[*]}"
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" -eq 0 ]; then
    phase apt 180 bash -c "DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ${missing[*]} \
      || { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ${missing[*]}; }" \
      || say "apt-get could not install them (offline?); continuing with what is there"
  fi
fi
for tool in cmake g++; do
  command -v "$tool" >/dev/null || { say "required tool $tool is missing"; exit 2; }
done
generator=()
command -v make >/dev/null || { command -v ninja >/dev/null && generator=(-G Ninja); }

# ---- configure and build ---------------------------------------------------------------------
phase configure 240 cmake -S "$root" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DSHARDSCOPE_WITH_CUDA=ON -DSHARDSCOPE_WITH_NCCL=AUTO -DSHARDSCOPE_WITH_GUI=OFF \
  -DCMAKE_CUDA_ARCHITECTURES="$archs" || exit 2
targets=(shardscope shardscope_gpu_tests)
phase build 300 cmake --build "$build" -j "$jobs" --target "${targets[@]}" || exit 2
bin="$build/bin/shardscope"
nccl_built=$(grep -c "SHARDSCOPE_NCCL_ENABLED:.*ON\|NCCL backend: ON" "$out/configure.log" || true)

# ---- tests -----------------------------------------------------------------------------------
export SHARDSCOPE_GPU_CASES=${GPU_CASES:-300}
phase gpu_tests 300 ctest --test-dir "$build" -L gpu --output-on-failure --timeout 280 || failures=$((failures + 1))
phase sample_run 60 "$bin" run samples/fsdp_tp.json --backend cuda --verify --trace "$out/trace-fsdp_tp-cuda" \
  || failures=$((failures + 1))
phase sample_show 30 "$bin" show "$out/trace-fsdp_tp-cuda" || true

# ---- benchmarks (figures, not pass/fail) -----------------------------------------------------
phase bench_cuda 150 "$bin" bench comm --backend cuda --ranks 8 --sizes "$sizes" || true
phase bench_local 90 "$bin" bench comm --backend local --ranks 8 --sizes 64K,1M,16M || true
if [ "$nccl_built" -gt 0 ] && command -v mpirun >/dev/null 2>&1; then
  gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
  np=$(( ${gpus:-1} > 8 ? 8 : ${gpus:-1} ))
  [ "$np" -ge 1 ] || np=1
  phase bench_nccl 150 mpirun -np "$np" --oversubscribe --allow-run-as-root \
    "$bin" bench comm --backend nccl --sizes "$sizes" || true
else
  say "nccl benchmark skipped (NCCL backend not built or mpirun missing)"
fi

say "total: $(( $(date +%s) - t_start )) s, failed test phases: $failures"
say "outputs in $out"
[ "$failures" -eq 0 ]
