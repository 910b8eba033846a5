#!/usr/bin/env bash
# gpu.nccl_mpi (ctest label gpu): the nccl backend under MPI, one process per GPU.
#   nccl_mpi.sh MPIEXEC GPU_TESTS SHARDSCOPE SRC_DIR
# Runs `shardscope_gpu_tests --nccl` with -np 1 (and -np K for K = the GPU count, up to 8, when
# K > 1), then a one-rank scenario with --backend nccl --verify. Exit 77 (skipped) with a
# message when mpirun or a GPU is missing.
set -u
mpiexec=${1:-}
tests=$2
shardscope=$3
src=$4
if [ -z "$mpiexec" ] || ! command -v "$mpiexec" >/dev/null 2>&1; then
  mpiexec=$(command -v mpirun || true)
fi
if [ -z "$mpiexec" ]; then
  echo "SKIP: mpirun not found; the NCCL test needs Open MPI's launcher"
  exit 77
fi
probe=$("$tests" --list-tests 2>&1)
if [ $? -eq 77 ]; then
  echo "$probe"
  exit 77
fi
export OMPI_MCA_btl_vader_single_copy_mechanism=none
mpirun_np() { "$mpiexec" -np "$1" --oversubscribe --allow-run-as-root "${@:2}"; }

status=0
echo "== shardscope_gpu_tests --nccl, 1 process"
mpirun_np 1 "$tests" --nccl 200 || status=1
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
if [ "${gpus:-0}" -gt 1 ]; then
  np=$((gpus > 8 ? 8 : gpus))
  echo "== shardscope_gpu_tests --nccl, $np processes"
  mpirun_np "$np" "$tests" --nccl 200 || status=1
  echo "== same, SHARDSCOPE_NCCL_REDUCE=exact (bitwise everywhere)"
  SHARDSCOPE_NCCL_REDUCE=exact mpirun_np "$np" -x SHARDSCOPE_NCCL_REDUCE "$tests" --nccl 100 || status=1
fi

# A one-rank scenario end to end (the samples need 4-8 ranks: one GPU each).
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat >"$work/one.json" <<'JSON'
{
  "mesh": [1],
  "tensors": {"x": {"shape": [6, 5], "dtype": "f32", "placements": ["S(0)"]}},
  "steps": [{"redistribute": "x", "to": ["R"]}, {"redistribute": "x", "to": ["P(sum)"], "allow_partial_target": true},
            {"redistribute": "x", "to": ["S(1)"]}]
}
JSON
echo "== shardscope run --backend nccl (1 rank)"
if ! mpirun_np 1 "$shardscope" run "$work/one.json" --backend nccl --verify --trace "$work/trace" \
    >"$work/out" 2>&1; then
  cat "$work/out"; status=1
elif grep -q "NOT verified" "$work/out"; then
  cat "$work/out"; status=1
else
  grep -E "^total|collectives" "$work/out"
fi
exit $status
