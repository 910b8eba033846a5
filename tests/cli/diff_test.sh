#!/usr/bin/env bash
# `shardscope diff` end to end: re-runs of one scenario are equal (timing is not compared by
# default), an intentional planner change is caught (exit 1 naming it), bad input exits 2.
# Expectations follow from the scenario (samples/flatten_merge.json, mesh 2x2x2 pp,dp,tp with
# dp,tp flattened): step 0 gathers w [8,8] R,S(0),S(0) -> R,R,R in one all_gather over the
# flattened mesh dims [1, 2]; without the optimizer it takes one all_gather per mesh dim.
source "$(dirname "$0")/lib.sh" "$@"

SCEN="$ROOT/samples/flatten_merge.json"
mkdir -p "$TMP/s"
# Runs a copy of the scenario changed by the Python statement $2 (on d, the parsed JSON) with a
# trace in $TMP/$1.
run_variant() {
  "$PYTHON" - "$SCEN" "$TMP/s/$1.json" "$2" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
exec(sys.argv[3])
json.dump(d, open(sys.argv[2], "w"))
PY
  "$BIN" run "$TMP/s/$1.json" --trace "$TMP/$1" >/dev/null || fail "run $1"
}
"$BIN" run "$SCEN" --trace "$TMP/a" >/dev/null || fail "run $SCEN (a)"
"$BIN" run "$SCEN" --trace "$TMP/b" >/dev/null || fail "run $SCEN (b)"

# The unchanged re-run: nothing differs, exit 0.
run_ok diff "$TMP/a" "$TMP/b"
expect_out_contains "no differences; aligned 2 of 2 baseline / 2 candidate redistributes"
run_ok diff "$TMP/a" "$TMP/b" --json
expect_json 'j["failed"] is False and j["differences"] == [] and j["aligned"] == 2'

# The checked-in golden trace of the CI sample matches this build, and the CI script says so.
run_ok diff "$ROOT/samples/ci/golden" "$TMP/b"
CHECKS=$((CHECKS + 1))
bash "$ROOT/samples/ci/check_plans.sh" "$BIN" >"$TMP/ci.out" 2>&1 || fail "samples/ci/check_plans.sh: exit $?: $(cat "$TMP/ci.out")"

# Planner change 1: the flattening optimizer off for step 0.
run_variant noopt 'd["steps"][0]["optimize"] = False'
run diff "$TMP/a" "$TMP/noopt"
expect_rc 1
expect_out_contains "#0 w [8, 8] R,S(0),S(0) -> R,R,R: notation: "
# 8 ranks each issued the merged all_gather; now each issues one per mesh dim.
expect_out_contains "collectives all_gather on mesh dims [1, 2]: 8 rank-side calls -> 0 rank-side calls"
expect_out_contains "collectives all_gather on mesh dims [1]: 0 rank-side calls -> 8 rank-side calls"
expect_out_contains "collectives all_gather on mesh dims [2]: 0 rank-side calls -> 8 rank-side calls"
expect_out_lacks "#1 loss"
# Bytes are unchanged: a rank sends its [2,8] f32 shard (64 B) to 3 peers = 192 B merged, and
# 64 B then 128 B to one peer each = 192 B unmerged. So failing on bytes only passes.
run_ok diff "$TMP/a" "$TMP/noopt" --fail-on bytes
expect_out_lacks "bytes "
expect_out_contains "none failing"
run diff "$TMP/a" "$TMP/noopt" --fail-on plan --json
expect_rc 1
expect_json 'j["failed"] and any(d["category"] == "plan" and d["what"] == "notation" and d["baseline_id"] == 0 for d in j["differences"])'

# Planner change 2: step 1 forced to the graph planner.
run_variant graph 'd["steps"][1]["planner"] = "graph"'
run diff "$TMP/a" "$TMP/graph" --fail-on plan
expect_rc 1
expect_out_contains "#1 loss [8, 8] P(sum),P(sum),R -> R,R,R: planner: greedy -> graph"

# An added redistribute: one more step at the end.
run_variant more 'd["steps"].append({"redistribute": "w", "to": ["R", "S(0)", "R"]})'
run diff "$TMP/a" "$TMP/more"
expect_rc 1
expect_out_contains "+#2 w [8, 8] R,R,R -> R,S(0),R: added (candidate only: "
expect_out_contains "aligned 2 of 2 baseline / 3 candidate redistributes"
run diff "$TMP/more" "$TMP/a" --fail-on plan
expect_rc 1
expect_out_contains "-#2 w [8, 8] R,R,R -> R,S(0),R: removed (baseline only: "

# Bad input: exit 2, one line.
expect_refused "nowhere" "no such trace" -- diff "$TMP/a" "$TMP/nowhere"
expect_refused "--fail-on" "'bogus'" -- diff "$TMP/a" "$TMP/b" --fail-on plan,bogus
expect_refused "--fail-on" "time:fast" -- diff "$TMP/a" "$TMP/b" --fail-on time:fast
run diff "$TMP/a" "$ROOT/tests/golden/trace/corrupt/missing_field.jsonl"
expect_rc 2
run diff "$TMP/a"
expect_rc 2

# Program traces: ops are aligned and counted in the summary; op differences fail by default.
run_ok diff "$ROOT/tests/golden/trace/program" "$ROOT/tests/golden/trace/program"
expect_out_contains "no differences; aligned 3 of 3 baseline / 3 candidate redistributes, 3 of 3 baseline / 3 candidate ops (fail on: plan,collectives,bytes,shapes,cost,ops)"
run diff "$ROOT/tests/golden/trace/program" "$ROOT/tests/golden/trace/two_rank"
expect_rc 1
expect_out_contains "ops          op -#0 mm(x, w): removed (baseline only: S(0)R, RS(1) => S(0)S(1))"

finish
