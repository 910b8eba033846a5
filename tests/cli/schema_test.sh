#!/usr/bin/env bash
# docs/trace-schema.json against what the writers write: every line of every sample run, program
# run, golden trace, generated trace (format v1 and v2) and imported trace (DebugMode, Flight
# Recorder) must validate with a real JSON Schema validator (Debian's python3-jsonschema), so the
# schema cannot drift from the code silently. The schema is the definition; a failure here means
# the writer or the schema is wrong.
source "$(dirname "$0")/lib.sh" "$@"

SCHEMA="$ROOT/docs/trace-schema.json"
VALIDATE="$ROOT/tests/cli/validate_trace_schema.py"
"$PYTHON" -c 'import jsonschema' 2>/dev/null || { echo "FAIL: python3-jsonschema missing (scripts/deps.sh)" >&2; exit 1; }

# validate WHAT PATH...: every line of PATH validates.
validate() {
  local what=$1
  shift
  CHECKS=$((CHECKS + 1))
  local report
  report=$("$PYTHON" "$VALIDATE" "$SCHEMA" "$@" 2>&1) || fail "$what: lines not valid against docs/trace-schema.json:"$'\n'"$report"
  echo "$what: ${report##*$'\n'}"
}

# versions DIR: the distinct header versions of DIR's rank files.
versions() {
  for f in "$1"/rank-*.jsonl; do head -n 1 "$f" | sed -n 's/.*"version":\([0-9]*\),.*/\1/p'; done | sort -u | tr '\n' ' '
}

# Every sample scenario and program, run and traced by the writer (format v2: version 3's forms
# are an imported DebugMode log's only).
for sample in "$ROOT"/samples/*.json "$ROOT"/samples/programs/*.json; do
  name=$(basename "$sample" .json)
  run run "$sample" --trace "$TMP/run-$name" --force
  expect_rc 0
  validate "run $name" "$TMP/run-$name"
  CHECKS=$((CHECKS + 1))
  [ "$(versions "$TMP/run-$name")" = "2 " ] || fail "run $name: header versions $(versions "$TMP/run-$name"), not 2"
done

# The golden traces that are meant to be valid (corrupt/ and torn/ are broken on purpose).
for dir in two_rank program repeat flight_recorder unfinished_op unknown; do
  validate "golden $dir" "$ROOT/tests/golden/trace/$dir"
done

# The synthetic generator in both format versions.
for version in 1 2; do
  "$PYTHON" "$ROOT/scripts/gen_synthetic_trace.py" --mesh 2x4 --redistributes 3 --out "$TMP/syn-v$version" \
    --format-version "$version" >/dev/null
  validate "generated v$version" "$TMP/syn-v$version"
done

# Imported traces: a DebugMode dump and Flight Recorder dumps.
run import debugmode "$ROOT/samples/pytorch/debugmode_tp.txt" --mesh 4x2 --mesh-names dp,tp --flatten all -o "$TMP/dm"
expect_rc 0
validate "import debugmode" "$TMP/dm"
CHECKS=$((CHECKS + 1))
[ "$(versions "$TMP/dm")" = "3 " ] || fail "import debugmode: header versions $(versions "$TMP/dm"), not 3"
"$PYTHON" "$ROOT/tests/trace/make_fr_dumps.py" wrapped_hang "$TMP/fr_dumps" >/dev/null
run import fr "$TMP/fr_dumps" -o "$TMP/fr_trace"
expect_rc 0
validate "import fr" "$TMP/fr_trace"
CHECKS=$((CHECKS + 1))
[ "$(versions "$TMP/fr_trace")" = "2 " ] || fail "import fr: header versions $(versions "$TMP/fr_trace"), not 2"
# A longer job's dumps: most entries are written as collective_repeat lines.
"$PYTHON" "$ROOT/tests/trace/make_fr_dumps.py" clean "$TMP/fr_clean" --ranks 8 --seqs 40 >/dev/null
run import fr "$TMP/fr_clean" -o "$TMP/fr_clean_trace"
expect_rc 0
CHECKS=$((CHECKS + 1))
grep -q '"type":"collective_repeat"' "$TMP/fr_clean_trace/rank-0.jsonl" ||
  fail "import fr of 8x40 dumps wrote no collective_repeat line"
validate "import fr (repeats)" "$TMP/fr_clean_trace"
# A profiler trace: collectives with flight records and ops.
"$PYTHON" "$ROOT/tests/trace/make_kineto_traces.py" "$TMP/kineto" --ranks 2 --steps 3 >/dev/null
run import kineto "$TMP/kineto" -o "$TMP/kineto_trace"
expect_rc 0
validate "import kineto" "$TMP/kineto_trace"

# The validator itself: a line the schema forbids is reported (a collective without its kind).
printf '%s\n' '{"type":"collective","id":1,"rank":0}' >"$TMP/bad.jsonl"
CHECKS=$((CHECKS + 1))
if "$PYTHON" "$VALIDATE" "$SCHEMA" "$TMP/bad.jsonl" >"$TMP/bad.out" 2>&1; then
  fail "the validator accepted a collective without its fields: $(cat "$TMP/bad.out")"
fi

finish
