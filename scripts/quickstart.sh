#!/usr/bin/env bash
# README quick start, command 1: install what is missing, build, plan a sample redistribute
# (a 2x2x2 mesh moving an 8x8x8 tensor from S(0),S(0),R to R,S(1),S(0)), then run a sample
# scenario (FSDP + TP on a 2x4 mesh) end to end on the embedded local backend with a trace and a
# check against the definition, and print the trace summary (`shardscope show`); then a sample
# program (a tensor-parallel MLP: ops whose sharding strategies cause the redistributes).
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
run build/bin/shardscope run samples/fsdp_tp.json --trace build/trace-fsdp_tp --force --verify
run build/bin/shardscope show build/trace-fsdp_tp
rm -rf build/trace-tp_mlp
run build/bin/shardscope run samples/programs/tp_mlp.json --trace build/trace-tp_mlp --force --verify
# The GUI on the sample's trace: a window when a display is present, otherwise screenshots.
if [ -x build/bin/shardscope-gui ]; then
  if [ -n "${DISPLAY:-}" ]; then
    run build/bin/shardscope-gui build/trace-fsdp_tp
  elif command -v xvfb-run >/dev/null 2>&1; then
    mkdir -p build/screenshots
    for view in main layout mesh; do
      xvfb-run -a -s "-screen 0 1600x1000x24" build/bin/shardscope-gui build/trace-fsdp_tp \
        --screenshot "build/screenshots/fsdp_tp-$view.png" --view "$view" --select 1
    done
    xvfb-run -a -s "-screen 0 1600x1000x24" build/bin/shardscope-gui build/trace-tp_mlp \
      --screenshot build/screenshots/tp_mlp-program.png --view program --select 1
    echo
    echo "no display: wrote screenshots of the traces to build/screenshots/ (fsdp_tp-main.png, -layout.png, -mesh.png,"
    echo "tp_mlp-program.png); on a desktop, open them with: build/bin/shardscope-gui build/trace-fsdp_tp"
    echo "and build/bin/shardscope-gui build/trace-tp_mlp"
  else
    echo "no display and no xvfb-run: open the trace on a desktop with build/bin/shardscope-gui build/trace-fsdp_tp"
  fi
fi
