#!/usr/bin/env bash
# `shardscope show` end to end on the hand-written traces: the golden texts (derived by hand, see
# tests/trace/summary_test.cpp) and the program under --json.
source "$(dirname "$0")/lib.sh" "$@"

TRACES="$ROOT/tests/golden/trace"

run_ok show "$TRACES/program"
CHECKS=$((CHECKS + 1))
[ "$OUT" == "$(cat "$TRACES/program.show.txt")" ] || fail "show program: stdout differs from program.show.txt"
expect_out_contains "op #1 conv2d(y: S(0)S(1), kernel=3, padding=1) -> z: S(0)S(1)  [chosen 0/1, cost 0.00 us"

run_ok show "$TRACES/two_rank"
expect_out_lacks "program:"

run_ok show "$TRACES/program" --json
expect_json 'len(j["ops"]) == 3 and j["ops"][0]["call"] == "mm(x: S(0)R, w: S(0)R->RS(1)) -> y: S(0)S(1)"'
expect_json 'j["ops"][1]["collectives"][0]["kind"] == "halo_exchange" and j["redistributes"][0]["op_id"] == 0'

finish
