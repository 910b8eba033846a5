#!/usr/bin/env bash
# Loading traces: --jobs on the trace tools, a directory with one corrupt rank file (loaded without
# it, with a warning naming it) and `bench load`'s table.
source "$(dirname "$0")/lib.sh" "$@"

TRACES="$ROOT/tests/golden/trace"
CLEAN="$ROOT/tests/golden/check/clean"

# The same summary whatever the thread count.
run_ok show "$TRACES/program" --jobs 1
ONE="$OUT"
run_ok show "$TRACES/program" --jobs 3
CHECKS=$((CHECKS + 1))
[ "$OUT" == "$ONE" ] || fail "show --jobs 3 differs from --jobs 1"
CHECKS=$((CHECKS + 1))
[ "$OUT" == "$(cat "$TRACES/program.show.txt")" ] || fail "show --jobs 3: stdout differs from program.show.txt"

run show "$TRACES/program" --jobs -1
expect_rc 2

# Rank 1 of a 4-rank trace gets a line that is not JSON (line 2 of 4+): the other three load.
mkdir -p "$TMP/one_bad"
cp "$CLEAN"/rank-*.jsonl "$TMP/one_bad/"
sed -i '2s/.*/{"type": oops/' "$TMP/one_bad/rank-1.jsonl"
run_ok show "$TMP/one_bad"
expect_out_contains "trace: world 4, 3 rank file(s)"
expect_err_contains "warning: 1 of 4 rank files could not be read and were skipped (rank-1.jsonl)"
expect_err_contains "rank-1.jsonl:2: skipped rank 1: expected one JSON object"
run check "$TMP/one_bad" --jobs 2
expect_err_contains "skipped rank 1"

# The same file alone is still an error naming file and line.
expect_refused "rank-1.jsonl:2: expected one JSON object" -- show "$TMP/one_bad/rank-1.jsonl"

# bench load: one row per reader, events counted from the files (8 ranks x 13 event lines).
EVENTS=$(cat "$ROOT"/samples/ci/golden/rank-*.jsonl | grep -vc '"type":"header"')
run_ok bench load "$ROOT/samples/ci/golden" --jobs 2 --repetitions 1
expect_out_contains "$EVENTS events"
expect_out_contains "reference, 1 thread"
expect_out_contains "fast, 1 thread"
expect_out_contains "fast, 2 threads"
run bench load "$TMP/nope"
expect_rc 2

# bench trace: on and off rows and the on-disk size per event.
run_ok bench trace --repetitions 3 --redistributes 10
expect_out_contains "3 interleaved on/off batches of 10 redistributes (5 events each)"
expect_out_contains "bytes per event on disk"
expect_out_contains "template: on - off"
expect_out_contains "every-end: on - off"
run bench trace --repetitions 2
expect_rc 2

finish
