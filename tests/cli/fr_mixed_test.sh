#!/usr/bin/env bash
# A trace that mixes shardscope's own events with collectives carrying a flight record (each rank
# file: the hand-made clean 2x2 trace of tests/golden/check, then the collectives `import fr -o`
# wrote for the "missing" scenario of tests/trace/make_fr_dumps.py, in which rank 3 never joins
# seq 5; the golden's header says version 2, as the imported lines are, and its version 1 lines are
# valid version 2 lines). check applies both rule sets: Flight Recorder's to the flight records (per process group
# and seq), the call-order pairing to the rest, so the counts of the mix are the sums of the parts'.
source "$(dirname "$0")/lib.sh" "$@"

"$PYTHON" "$ROOT/tests/trace/make_fr_dumps.py" missing "$TMP/dumps" || fail "generator"
run_ok import fr "$TMP/dumps" -o "$TMP/fr"
mkdir -p "$TMP/mixed"
for r in 0 1 2 3; do
  { sed '1s/"version":1,/"version":2,/' "$ROOT/tests/golden/check/clean/rank-$r.jsonl"; tail -n +2 "$TMP/fr/rank-$r.jsonl"; } >"$TMP/mixed/rank-$r.jsonl"
done

# The parts alone.
counts() { "$PYTHON" -c 'import json,sys; j=json.load(sys.stdin); print(j["groups"], j["collectives"], j["redistributes"], j["undecided"])'; }
run_ok check "$ROOT/tests/golden/check/clean" --json
read -r og oc orr ou <<<"$(printf '%s' "$OUT" | counts)"
run check "$TMP/dumps" --json
expect_rc 1
read -r fg fc fr fu <<<"$(printf '%s' "$OUT" | counts)"

run check "$TMP/mixed"
expect_rc 1
expect_out_contains "missing_ranks: process group 0 (default_pg) [0, 1, 2, 3], collective seq 5 (nccl:all_reduce): not all ranks joined: rank 3 never joined it"
expect_out_contains "first divergence: process group 0 seq 5, culprit rank 3"
expect_out_lacks "op #-1"
run check "$TMP/mixed" --json
expect_json "j['mismatch_count'] == 1 and j['mismatches'][0]['process_group'] == '0' and j['mismatches'][0]['seq_id'] == 5"
expect_json "(j['groups'], j['collectives'], j['redistributes'], j['undecided']) == ($og + $fg, $oc + $fc, $orr + $fr, $ou + $fu)"

# An ordinary mismatch in the same trace is still found by the ordinary rules (rank 3's bf16 in
# redistribute #0 of the golden "dtype" case), after the process group finding.
mkdir -p "$TMP/mixed_dtype"
for r in 0 1 2 3; do
  { sed '1s/"version":1,/"version":2,/' "$ROOT/tests/golden/check/dtype/rank-$r.jsonl"; tail -n +2 "$TMP/fr/rank-$r.jsonl"; } >"$TMP/mixed_dtype/rank-$r.jsonl"
done
run check "$TMP/mixed_dtype" --json
expect_json "[m['class'] for m in j['mismatches']] == ['missing_ranks', 'dtype']"
expect_json "j['mismatches'][1]['redistribute_id'] == 0 and j['mismatches'][1]['culprits'] == [3] and j['mismatches'][1]['process_group'] is None"

# show: the summary of the redistributes and the process group section of the flight records.
run_ok show "$TMP/mixed"
expect_out_contains "  seq 5  nccl:all_reduce  [8, 4] -> [8, 4]  Float  started: 0,1,2  absent: 3"
run_ok show "$ROOT/tests/golden/check/clean"
expect_out_lacks "process group"

# diff against the mix without the flight records: they are added, per process group and seq.
run diff "$ROOT/tests/golden/check/clean" "$TMP/mixed"
expect_rc 1
expect_out_contains "+#5 process group 0 (default_pg) [0, 1, 2, 3] collective: added (candidate only: nccl:all_reduce)"

finish
