#!/usr/bin/env bash
# Flight Recorder dumps end to end: tests/trace/make_fr_dumps.py writes pickle and JSON dumps of
# chosen scenarios; `check` on the dump directory names the class, culprit and first divergent
# sequence id derived from each scenario's definition (see the generator's docstring); `import fr`
# writes a trace that show/check/export read; hostile and bad dumps exit 2 without running code.
source "$(dirname "$0")/lib.sh" "$@"

GEN="$ROOT/tests/trace/make_fr_dumps.py"
gen() { "$PYTHON" "$GEN" "$@" || fail "generator: $*"; }

for s in clean missing size dtype state coalesced p2p p2p_missing wrapped wrapped_hang; do
  gen "$s" "$TMP/$s"
done

# clean: seq 1..6 on default_pg, every rank alike; seq 4 is an all_to_all (undecided).
run_ok check "$TMP/clean"
expect_out_contains "clean: 4 of 4 rank files, 1 groups, 6 collective calls paired, 0 redistributes, 1 all_to_all undecided"

# class, culprit, where: one line per mismatching scenario.
while IFS='|' read -r scen class culprit where; do
  run check "$TMP/$scen"
  expect_rc 1
  expect_out_contains "$class: process group 0 (default_pg) [0, 1, 2, 3], $where"
  expect_out_contains "[culprit: $culprit]"
  expect_out_contains "1 mismatch: "
done <<'LIST'
missing|missing_ranks|rank 3|collective seq 5 (nccl:all_reduce): not all ranks joined: rank 3 never joined it; ranks 0, 1, 2 did (state started on ranks 0, 1, 2); rank 3's last collective of this group is seq 4
size|size_or_syntax|rank 2|collective seq 2 (nccl:_all_gather_base): rank 2 has input [3, 4] (numel 12), output [8, 4] (numel 32), but all_gather needs output numel = input numel x group size 4
dtype|dtype|rank 1|collective seq 1 (nccl:all_reduce): dtypes differ
state|state|rank 0|collective seq 3 (nccl:reduce_scatter_tensor): state differs: scheduled on rank 0, started on ranks 1, 2, 3
p2p_missing|missing_ranks|rank 3|p2p 2 -> 3: 'nccl:send 2->3' (p2p seq 1, started) on rank 2 has no matching recv on rank 3
LIST
run check "$TMP/missing"
expect_out_contains "first divergence: process group 0 seq 5, culprit rank 3"
run check "$TMP/missing" --json
expect_json 'j["mismatches"][0]["class"] == "missing_ranks" and j["mismatches"][0]["culprits"] == [3]'
expect_json 'j["mismatches"][0]["process_group"] == "0" and j["mismatches"][0]["seq_id"] == 5'

# coalesced entries (2 tensors each, the rule per tensor pair) and matched sends/recvs are clean.
run_ok check "$TMP/coalesced"
expect_out_contains "clean: 4 of 4 rank files, 1 groups, 2 collective calls paired"
run_ok check "$TMP/p2p"
expect_out_contains "clean: 4 of 4 rank files, 1 groups, 3 collective calls paired"

# Wrapped buffers of 8: ranks 0,1 issued 3 + 12 entries (record ids 7..14 = seqs 5..12 of
# default_pg), ranks 2,3 1 + 12 (5..12 = seqs 5..12): all matched.
run_ok check "$TMP/wrapped"
expect_out_contains "clean: 4 of 4 rank files"
case "$ERR" in *"nccl_trace_rank_0: the ring buffer wrapped: the oldest entry is record_id 7"*) ;;
  *) fail "check wrapped: stderr lacks rank 0's wrapped buffer: $ERR" ;; esac
case "$ERR" in *"nccl_trace_rank_3: the ring buffer wrapped: the oldest entry is record_id 5"*) ;;
  *) fail "check wrapped: stderr lacks rank 3's wrapped buffer: $ERR" ;; esac
# ... and rank 3 stuck before seq 12: 1 + 11 entries, record ids 4..11 = seqs 4..11. Seq 4 is gone
# from the other ranks' buffers (a note, no blame); rank 3 is the culprit at seq 12.
run check "$TMP/wrapped_hang"
expect_rc 1
expect_out_contains "missing_ranks: process group 0 (default_pg) [0, 1, 2, 3], collective seq 12 (nccl:all_to_all): not all ranks joined: rank 3 never joined it"
expect_out_contains "note: process group 0 (default_pg) [0, 1, 2, 3], collective seq 4 (nccl:all_to_all): rank 0's buffer no longer holds it (its oldest entry in this group is seq 5)"
expect_out_contains "first divergence: process group 0 seq 12, culprit rank 3"
expect_out_contains "1 mismatch: "

# JSON dumps with host names before the rank, and pickles of protocols 4 and 5, read the same.
gen missing "$TMP/json" --format json --prefix node-a.cluster_nccl_trace_rank_
gen missing "$TMP/p4" --protocol 4
gen missing "$TMP/p5" --protocol 5 --prefix 'host-7_dump.'
for d in json p4 p5; do
  run check "$TMP/$d"
  expect_rc 1
  expect_out_contains "first divergence: process group 0 seq 5, culprit rank 3"
done

# import fr: a summary, and with -o a trace that the tools read like the dumps themselves.
run_ok import fr "$TMP/missing" -o "$TMP/trace"
expect_out_contains "flight recorder: 4 dump(s), world 4"
expect_out_contains "rank 3  nccl_trace_rank_3  4 entries, record_id 0..3; 4 completed"
expect_out_contains "0 (default_pg)  ranks [0, 1, 2, 3]  19 entries"
[ -f "$TMP/trace/rank-0.jsonl" ] || fail "import fr -o wrote no rank-0.jsonl"
run check "$TMP/trace"
expect_rc 1
expect_out_contains "first divergence: process group 0 seq 5, culprit rank 3"
run_ok show "$TMP/trace"
expect_out_contains "backend flight_recorder"
expect_out_contains "  seq 5  nccl:all_reduce  [8, 4] -> [8, 4]  Float  started: 0,1,2  absent: 3"
run_ok import fr "$TMP/json/node-a.cluster_nccl_trace_rank_0" "$TMP/json/node-a.cluster_nccl_trace_rank_3" --json
expect_json 'j["dumps"] == 2 and [r["rank"] for r in j["ranks"]] == [0, 3] and j["ranks"][1]["entries"] == 4'
run_ok show "$TMP/missing" --json
expect_json 'j["flight"]["process_groups"][0]["collectives"][4]["states"] == {"0": "started", "1": "started", "2": "started"}'
run_ok export --format chrome "$TMP/missing" -o "$TMP/fr.json"
[ -s "$TMP/fr.json" ] || fail "export of dumps wrote nothing"

# diff of two dump directories, per process group and seq id: the "dtype" scenario differs from
# "clean" only in rank 1's seq 1 (BFloat16), "missing" in seq 5's states and rank 3's absence.
run diff "$TMP/clean" "$TMP/dtype"
expect_rc 1
expect_out_contains "bytes        #1 process group 0 (default_pg) [0, 1, 2, 3] collective: rank 1 dtypes: Float -> BFloat16"
expect_out_contains "1 difference, 1 failing (bytes)"
run diff "$TMP/clean" "$TMP/missing"
expect_rc 1
expect_out_contains "#5 process group 0 (default_pg) [0, 1, 2, 3] collective: rank 3 state: completed -> absent"
expect_out_contains "-#6 process group 0 (default_pg) [0, 1, 2, 3] collective: removed (baseline only: nccl:_all_gather_base)"
run_ok diff "$TMP/missing" "$TMP/trace"
expect_out_contains "no differences"

# Bad input: exit 2 with one line naming the problem; a malicious pickle never runs.
mkdir -p "$TMP/evil"
"$PYTHON" - "$TMP/evil/nccl_trace_rank_0" "$TMP/pwned" <<'EOF'
import os, pickle, sys
class Evil:
    def __reduce__(self):
        return (os.system, ("touch " + sys.argv[2],))
with open(sys.argv[1], "wb") as f:
    pickle.dump({"version": "2.10", "entries": [Evil()]}, f, protocol=2)
EOF
expect_refused "nccl_trace_rank_0: pickle byte" "opcode GLOBAL" "could import or call code" -- check "$TMP/evil"
[ ! -e "$TMP/pwned" ] || fail "the malicious pickle ran code"
expect_refused "opcode GLOBAL" -- import fr "$TMP/evil"

mkdir -p "$TMP/v3"
printf '{"version": "3.0", "entries": []}' >"$TMP/v3/nccl_trace_rank_0.json"
expect_refused "nccl_trace_rank_0.json: Flight Recorder dump version '3.0' is not supported (this shardscope reads versions 2.x)" -- check "$TMP/v3"

cp "$TMP/json/node-a.cluster_nccl_trace_rank_1" "$TMP/json/other_rank_1"
expect_refused "two dumps for rank 1" -- import fr "$TMP/json"

expect_refused "cannot tell the rank of" "make_fr_dumps.py" -- import fr "$TMP/missing/nccl_trace_rank_0" "$GEN"
expect_refused "does-not-exist: no such file or directory" -- import fr "$TMP/does-not-exist"

# Strings from a dump are untrusted: a process group description carrying ESC and a newline is
# shown escaped (\x1b, \x0a), so it cannot forge an output line or drive the terminal.
"$PYTHON" "$GEN" missing "$TMP/evil_src" --format json >/dev/null
mkdir -p "$TMP/evil_fr"
for f in "$TMP"/evil_src/*; do
  sed 's/"default_pg"/"default_pg\\u001b[2J\\nFAKE"/g' "$f" >"$TMP/evil_fr/$(basename "$f")"
done
run_ok show "$TMP/evil_fr"
expect_out_contains 'default_pg\x1b[2J\x0aFAKE'
CHECKS=$((CHECKS + 1))
case "$OUT" in *$'\e'*) fail "raw ESC on stdout" ;; esac
CHECKS=$((CHECKS + 1))
grep -q '^FAKE' <<<"$OUT" && fail "a newline in a process group description forged an output line"
run check "$TMP/evil_fr"
expect_rc 1
CHECKS=$((CHECKS + 1))
grep -q '^FAKE' <<<"$OUT" && fail "check: a newline in a process group description forged an output line"

finish
