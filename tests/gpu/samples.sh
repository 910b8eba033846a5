#!/usr/bin/env bash
# gpu.samples (ctest label gpu): every samples/*.json on the `cuda` backend (virtual ranks on one
# GPU) with --verify and --checksums; its trace must equal the local backend's apart from timing
# (tests/mpi/compare_traces.py), checksums of every shard included, i.e. bitwise equal results.
# Exit 77 (skipped) with the binary's own message when there is no GPU or no CUDA in the build.
#   samples.sh SHARDSCOPE SRC_DIR
set -u
shardscope=$1
src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

probe=$("$shardscope" run "$src/samples/uneven_empty.json" --backend cuda 2>&1)
rc=$?
if [ $rc -eq 2 ] && printf '%s' "$probe" | grep -qE "no CUDA device|built without CUDA"; then
  echo "SKIP: $probe"
  exit 77
fi

status=0
for sample in "$src"/samples/*.json; do
  name=$(basename "$sample" .json)
  echo "== $name"
  if ! "$shardscope" run "$sample" --backend cuda --verify --checksums --trace "$work/cuda-$name" \
      >"$work/$name.cuda.out" 2>&1; then
    echo "FAIL: cuda run of $name"; cat "$work/$name.cuda.out"; status=1; continue
  fi
  grep -E "^total" "$work/$name.cuda.out"
  if grep -q "NOT verified" "$work/$name.cuda.out"; then
    echo "FAIL: $name not verified"; status=1; continue
  fi
  if ! "$shardscope" run "$sample" --backend local --verify --checksums --trace "$work/local-$name" \
      >"$work/$name.local.out" 2>&1; then
    echo "FAIL: local run of $name"; cat "$work/$name.local.out"; status=1; continue
  fi
  python3 "$src/tests/mpi/compare_traces.py" "$work/local-$name" "$work/cuda-$name" || status=1
done
exit $status
