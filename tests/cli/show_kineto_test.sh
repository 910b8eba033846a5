#!/usr/bin/env bash
# `show`, `check` and `export` of a directory of profiler traces give the answer they give of the
# trace `import kineto DIR -o T` wrote of it (docs/kineto.md, "What becomes what"): the same ops,
# collectives and verdicts. Only what is about the input files themselves may differ: the file
# names in `show --json` and the readers' warnings about the profiler files (not carried into T).
# Counts follow from the generator's parameters (its docstring): per rank and step one
# ProfilerStep#s and --ops (aten::linear with an aten::mm child) pairs.
source "$(dirname "$0")/lib.sh" "$@"
GEN="$PYTHON $ROOT/tests/trace/make_kineto_traces.py"

# Runs a command on the directory and on its imported trace; stdout must be equal (after FILTER).
same() {
  local what=$1 filter=$2
  shift 2
  run "$@" "$DIR"
  local rc_dir=$RC out_dir=$OUT
  run "$@" "$TRACE"
  CHECKS=$((CHECKS + 1))
  [ "$rc_dir" -eq "$RC" ] || fail "$what: shardscope $* exits $rc_dir on the directory, $RC on the trace"
  local a b
  a=$(printf '%s\n' "$out_dir" | $filter)
  b=$(printf '%s\n' "$OUT" | $filter)
  [ "$a" = "$b" ] || fail "$what: shardscope $* differs between the directory and its trace:"$'\n'"$(diff <(echo "$a") <(echo "$b") | head -20)"
}
# The load warnings' block of `show` (about the profiler files: unknown event kinds).
no_diagnostics() { awk '/^diagnostics:$/ {skip = 1; next} skip && /^  / {next} {skip = 0; print}'; }
# `show --json` without each rank's file name and the load warnings.
no_files() { "$PYTHON" -c 'import json, sys
j = json.load(sys.stdin)
def drop(x):
    if isinstance(x, dict):
        return {k: drop(v) for k, v in x.items() if k not in ("file", "diagnostics")}
    if isinstance(x, list):
        return [drop(v) for v in x]
    return x
print(json.dumps(drop(j), sort_keys=True))'; }

check_variant() {
  local name=$1 ranks=$2 steps=$3 ops=$4
  shift 4
  DIR="$TMP/$name"
  TRACE="$TMP/$name.trace"
  $GEN "$DIR" --ranks "$ranks" --steps "$steps" --ops "$ops" "$@" || fail "generator: $name"
  run_ok import kineto "$DIR" -o "$TRACE"

  # Per rank: steps ProfilerStep#N ops, then steps x ops x 2 (linear, mm), numbered from 0.
  local per_rank=$((steps + steps * ops * 2))
  run_ok show "$DIR"
  expect_out_contains "program: $per_rank op(s)"
  expect_out_contains "op #0 ProfilerStep#0() -> ()"
  expect_out_contains "op #$((per_rank - 1)) aten::mm() -> ()"
  same "$name" no_diagnostics show
  same "$name" no_files show --json
  run_ok check "$DIR"
  expect_out_contains "0 redistributes, $per_rank ops"
  same "$name" cat check
  same "$name" cat check --json

  # export: the same Chrome trace, with every op of every rank in it.
  run_ok export "$DIR" -o "$TMP/$name.dir.json"
  run_ok export "$TRACE" -o "$TMP/$name.trace.json"
  CHECKS=$((CHECKS + 1))
  cmp -s "$TMP/$name.dir.json" "$TMP/$name.trace.json" ||
    fail "$name: export of the directory and of its trace differ"
  local mm
  mm=$("$PYTHON" -c 'import json, sys
j = json.load(open(sys.argv[1]))
ev = j["traceEvents"] if isinstance(j, dict) else j
print(sum(1 for e in ev if e.get("cat") == "op" and e.get("args", {}).get("name") == "aten::mm"))' "$TMP/$name.dir.json")
  CHECKS=$((CHECKS + 1))
  [ "$mm" = $((ranks * steps * ops)) ] || fail "$name: export holds $mm aten::mm ops, expected $((ranks * steps * ops))"
}

check_variant plain 4 3 2 --unknown-cat 0
check_variant defaults 2 2 2
check_variant old 4 2 3 --variant old --gzip --unknown-cat 0
check_variant straggler 8 4 1 --straggler 5 --delay-us 2000 --tp 2 --seq --unknown-cat 0

# Without the unknown events, `show` of the directory and of the trace are equal to the byte.
same plain cat show

finish
