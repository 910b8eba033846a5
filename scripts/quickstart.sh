#!/usr/bin/env bash
# README quick start, command 1: install what is missing, build, and plan a sample redistribute
# (a 2x2x2 mesh moving an 8x8x8 tensor from S(0),S(0),R to R,S(1),S(0)), printing the plan and
# every rank's source and destination layout.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/deps.sh
./scripts/build.sh
echo
echo "+ build/bin/shardscope plan --mesh 2x2x2 --mesh-names dp,tp,cp --flatten all --shape 8x8x8 --from 'S(0),S(0),R' --to 'R,S(1),S(0)'"
build/bin/shardscope plan --mesh 2x2x2 --mesh-names dp,tp,cp --flatten all --shape 8x8x8 \
  --from 'S(0),S(0),R' --to 'R,S(1),S(0)'
