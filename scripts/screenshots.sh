#!/usr/bin/env bash
# Regenerates the README's GUI screenshots with the GUI itself: traces from the samples, run on the
# local backend, then `shardscope-gui --screenshot` under xvfb-run (no display needed).
#   scripts/screenshots.sh [BUILD_DIR]    (default: build)
# Writes docs/screenshots/{main,layout,timeline,inspector,mesh,merge,program,mesh3d,strided}.png.
# diff.png, flight.png and import.png come from other inputs (README sections name them) and are
# left as they are.
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
bin="$build/bin"
out=docs/screenshots
command -v xvfb-run >/dev/null || { echo "screenshots.sh: xvfb-run is needed" >&2; exit 2; }

# Traces under the build dir, so the GUI's menu bar shows a short path (build/trace-NAME).
run() { "$bin/shardscope" run "$1" --trace "$build/trace-$2" --force --verify >/dev/null; }
shot() { xvfb-run -a -s "-screen 0 2400x1400x24" "$bin/shardscope-gui" "$@"; }

run samples/uneven_empty.json uneven
run samples/programs/tp_mlp.json tp_mlp
run samples/flatten_merge.json flatten
run samples/strided.json strided

# PyTorch #194457's case (S(0),S(0) -> R,R over uneven rows), step 0; "Down,Right" selects the
# next redistribute and its second step as a user would (the panels follow).
shot "$build/trace-uneven" --size 1280x800 --select 0 --screenshot "$out/main.png"
for view in layout timeline inspector mesh merge; do
  shot "$build/trace-uneven" --size 1280x800 --view "$view" --keys "Down,Right" --screenshot "$out/$view.png"
done
shot "$build/trace-tp_mlp" --size 1400x900 --view program --select-op 1 --screenshot "$out/program.png"
shot "$build/trace-flatten" --size 1400x900 --screenshot "$out/mesh3d.png"
shot "$build/trace-strided" --size 1280x800 --view layout --screenshot "$out/strided.png"
echo "screenshots.sh: wrote $out/{main,layout,timeline,inspector,mesh,merge,program,mesh3d,strided}.png"
