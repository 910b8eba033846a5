#!/usr/bin/env bash
# Regenerates the README's GUI screenshots with the GUI itself: traces from the samples, run on the
# local backend, then `shardscope-gui --screenshot` under xvfb-run (no display needed).
#   scripts/screenshots.sh [BUILD_DIR]    (default: build)
# Writes docs/screenshots/{main,layout,timeline,inspector,mesh,merge,program,mesh3d,strided,diff,
# flight,flight4096,import,scale4096}.png: diff, flight and import from the inputs their README sections name
# (the FSDP+TP sample against a graph-planner run with one more redistribute; Flight Recorder dumps
# of a wrapped hang; the DebugMode sample dump imported); scale4096 from a synthetic 64x64 trace.
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

# Diff mode: the FSDP+TP sample against the same steps on the graph planner plus one more redistribute.
python3 - samples/fsdp_tp.json "$build/fsdp_tp_graph.json" <<'EOF_PY'
import json, sys
scenario = json.load(open(sys.argv[1]))
for step in scenario["steps"]:
    step["planner"] = "graph"
scenario["steps"].append({"redistribute": "grad", "to": ["R", "S(1)"]})
json.dump(scenario, open(sys.argv[2], "w"), indent=1)
EOF_PY
run samples/fsdp_tp.json fsdp_tp
run "$build/fsdp_tp_graph.json" fsdp_tp_graph
shot --diff "$build/trace-fsdp_tp" "$build/trace-fsdp_tp_graph" --size 1600x1000 --screenshot "$out/diff.png"

# Flight view: 4 ranks' Flight Recorder dumps, wrapped buffers, rank 3 never joins collective 12.
rm -rf "$build/fr_dumps"
python3 tests/trace/make_fr_dumps.py wrapped_hang "$build/fr_dumps" >/dev/null
shot "$build/fr_dumps" --size 1400x600 --screenshot "$out/flight.png"
# The flight view at 4096 ranks: grouped lanes, the culprit's group open, its lane in view.
rm -rf "$build/fr_hang4096"
python3 tests/trace/make_fr_faults.py not_enqueued "$build/fr_hang4096" --ranks 4096 --entries 24 --seed 11 \
  --no-wrap >/dev/null
shot "$build/fr_hang4096" --size 1400x760 --screenshot "$out/flight4096.png"

# The DebugMode sample imported (README's import tour), the first computed aten::mm selected.
rm -rf "$build/trace-import"
"$bin/shardscope" import debugmode samples/pytorch/debugmode_tp.txt --mesh 4x2 --mesh-names dp,tp \
  --flatten all -o "$build/trace-import" >/dev/null
shot "$build/trace-import" --size 2200x760 --view program --select-op 2 --screenshot "$out/import.png"
# A 4096-rank trace (64x64 mesh, one redistribute): the mesh overview by blocks and the layouts.
rm -rf "$build/trace-synthetic4096"
python3 scripts/gen_synthetic_trace.py --mesh 64x64 --redistributes 1 --out "$build/trace-synthetic4096" >/dev/null
shot "$build/trace-synthetic4096" --size 1600x1000 --select 0 --screenshot "$out/scale4096.png"
echo "screenshots.sh: wrote $out/{main,layout,timeline,inspector,mesh,merge,program,mesh3d,strided,diff,flight,flight4096,import,scale4096}.png"
