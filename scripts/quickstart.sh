#!/usr/bin/env bash
# README quick start, command 1: install what is missing, build, plan a sample redistribute
# (a 2x2x2 mesh moving an 8x8x8 tensor from S(0),S(0),R to R,S(1),S(0)), then run a sample
# scenario (FSDP + TP on a 2x4 mesh) end to end on the embedded local backend with a trace and a
# check against the definition, and print the trace summary (`shardscope show`).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/deps.sh
./scripts/build.sh
run() {
  echo
  echo "+ $*"
  "$@"
}
run build/bin/shardscope plan --mesh 2x2x2 --mesh-names dp,tp,cp --flatten all --shape 8x8x8 \
  --from 'S(0),S(0),R' --to 'R,S(1),S(0)'
rm -rf build/trace-fsdp_tp
run build/bin/shardscope run samples/fsdp_tp.json --trace build/trace-fsdp_tp --verify
run build/bin/shardscope show build/trace-fsdp_tp
