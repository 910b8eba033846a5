#!/usr/bin/env bash
# `shardscope triage` end to end on tests/trace/make_fr_faults.py cases (64 ranks, dp 8 x tp 8):
# exit codes (0 clean, 1 a problem, 2 bad input), the --json contract's keys and values against the
# generator's injected answer, and the text report's verdict, root cause, evidence and wavefront
# with rank ranges. `bench triage` prints precision/recall over cases.
source "$(dirname "$0")/lib.sh" "$@"

GEN="$ROOT/tests/trace/make_fr_faults.py"
gen() { "$PYTHON" "$GEN" "$@" --jobs 1 || fail "generator: $*"; }

for s in clean not_enqueued network dead p2p; do
  gen "$s" "$TMP/$s" --dp 8 --tp 8 --entries 60
done

# clean: exit 0
run_ok triage "$TMP/clean"
expect_out_contains "verdict: clean"
run_ok triage "$TMP/clean" --json
expect_json 'j["verdict"] == "clean" and j["culprits"] == [] and j["class"] is None and j["victims"] == []'

# not_enqueued: the JSON contract, values from the generator's answer.
want=$(cat "$TMP/not_enqueued/triage_expected.json")
C=$("$PYTHON" -c 'import json,sys; print(json.load(sys.stdin)["culprits"][0])' <<<"$want")
PG=$("$PYTHON" -c 'import json,sys; print(json.load(sys.stdin)["process_group"])' <<<"$want")
SEQ=$("$PYTHON" -c 'import json,sys; print(json.load(sys.stdin)["seq"])' <<<"$want")
run triage "$TMP/not_enqueued" --json --mesh dp=8,tp=8
expect_rc 1
expect_json 'set(j) >= {"verdict", "culprits", "class", "process_group", "pg_desc", "seq", "victims", "wavefront", "evidence"}'
expect_json "j['verdict'] == 'hang' and j['culprits'] == [$C] and j['class'] == 'not_enqueued'"
expect_json "j['process_group'] == '$PG' and j['pg_desc'] == 'mesh_tp' and j['seq'] == $SEQ"
expect_json "sorted(j['victims']) == [r for r in range(64) if r != $C]"
expect_json "j['wavefront']['$PG']['mesh_dim'] == 'tp' and j['wavefront']['$PG']['size'] == 8"
expect_json "any(s['ranks'] == '$C' and 'never enqueued seq $SEQ' in s['state'] for s in j['wavefront']['$PG']['states'])"
expect_json 'len(j["evidence"]) >= 2'

# The text: verdict, root cause, evidence, wavefront with ranges.
run triage "$TMP/not_enqueued" --mesh dp=8,tp=8
expect_rc 1
expect_out_contains "verdict: hang (1 culprit, 63 victims); 64 of 64 ranks have a dump"
expect_out_contains "root cause: rank $C never enqueued collective seq $SEQ"
expect_out_contains "class: not_enqueued; process group $PG (mesh_tp), mesh dim tp; seq $SEQ"
expect_out_contains "evidence:"
expect_out_contains "how the job got stuck"
expect_out_contains "done through seq $((SEQ - 1)), never enqueued seq $SEQ: rank $C"
D=$((C / 8))
LO=$((D * 8))
HI=$((D * 8 + 7))
if [ "$C" -eq "$LO" ]; then R="$((LO + 1))-$HI"; elif [ "$C" -eq "$HI" ]; then R="$LO-$((HI - 1))";
elif [ "$C" -eq "$((LO + 1))" ]; then R="$LO, $((C + 1))-$HI"; elif [ "$C" -eq "$((HI - 1))" ]; then R="$LO-$((C - 1)), $HI";
else R="$LO-$((C - 1)), $((C + 1))-$HI"; fi
expect_out_contains "ranks $R"

# A network hang: no culprit, and the text says so.
run triage "$TMP/network"
expect_rc 1
expect_out_contains "culprits: none (no rank is at fault)"
expect_out_contains "a network or NCCL-level hang"
run triage "$TMP/network" --json
expect_json 'j["verdict"] == "hang" and j["culprits"] == [] and j["class"] == "network_hang"'

# A dead rank (no dump) and a p2p mismatch.
want=$(cat "$TMP/dead/triage_expected.json")
C=$("$PYTHON" -c 'import json,sys; print(json.load(sys.stdin)["culprits"][0])' <<<"$want")
run triage "$TMP/dead" --json
expect_json "j['culprits'] == [$C] and j['class'] == 'dead_rank' and j['dumps'] == 63"
want=$(cat "$TMP/p2p/triage_expected.json")
C=$("$PYTHON" -c 'import json,sys; print(json.load(sys.stdin)["culprits"][0])' <<<"$want")
run triage "$TMP/p2p" --json
expect_json "j['verdict'] == 'mismatch' and j['culprits'] == [$C] and j['class'] == 'p2p_mismatch'"

# Several inputs (one directory per host) read as one job.
mkdir -p "$TMP/hosts/a" "$TMP/hosts/b"
cp "$TMP/not_enqueued"/nccl_trace_rank_[0-9] "$TMP/hosts/a/"
for f in "$TMP/not_enqueued"/nccl_trace_rank_[1-9][0-9]; do cp "$f" "$TMP/hosts/b/"; done
run triage "$TMP/hosts/a" "$TMP/hosts/b" --json
expect_json "j['culprits'] == [$(cat "$TMP/not_enqueued/triage_expected.json" | "$PYTHON" -c 'import json,sys; print(json.load(sys.stdin)["culprits"][0])')] and j['dumps'] == 64"

# A shardscope trace (every collective completed, all agree): clean.
run_ok triage "$ROOT/samples/ci/golden"
expect_out_contains "verdict: clean"

# Bad input: exit 2, one line.
expect_refused "no such file or directory" -- triage "$TMP/nope"
expect_refused "--mesh" "NAME=EXTENT" -- triage "$TMP/clean" --mesh 8x8
expect_refused "--mesh" "64" -- triage "$TMP/clean" --mesh dp=4,tp=4
mkdir -p "$TMP/bad"
printf '\x80\x02\x63os\nsystem\n' >"$TMP/bad/nccl_trace_rank_0"
run triage "$TMP/bad"
expect_rc 2
cp "$TMP/clean/nccl_trace_rank_0" "$TMP/hosts/b/other_prefix_0"
expect_refused "two dumps for rank 0" -- triage "$TMP/hosts/a" "$TMP/hosts/b"

# bench triage: precision and recall against the cases' answers.
run bench triage "$TMP/not_enqueued" "$TMP/dead" "$TMP/network" --no-python
expect_rc 0
expect_out_contains "culprits: precision 1.000, recall 1.000 (2 found, 0 healthy ranks blamed, 0 missed)"
expect_out_contains "class and verdict right in 3 of 3 cases"

finish
