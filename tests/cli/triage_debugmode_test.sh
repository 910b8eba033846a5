#!/usr/bin/env bash
# `shardscope triage DUMPS LOG` with a PyTorch DebugMode log beside the dumps names the op and the
# redistribute that issued the stuck collective. Dumps: tests/trace/make_fr_faults.py not_enqueued
# (64 ranks, dp 8 x tp 8); its answer gives the stuck process group PG and seq SEQ. The log is
# written here: SEQ-1 explicit redistributes each running one all_gather on group PG (funcol's
# group_name, the name the dumps use) with an all_reduce on another group between them, then
# aten::mm whose implicit redistribute (S(0)S(1) -> RS(1)) runs the SEQ-th all_gather on PG: by
# the definition (a Flight Recorder seq counts the group's collectives from 1) that one is stuck.
source "$(dirname "$0")/lib.sh" "$@"

"$PYTHON" "$ROOT/tests/trace/make_fr_faults.py" not_enqueued "$TMP/d" --dp 8 --tp 8 --entries 60 --jobs 1 ||
  fail "generator"
want=$(cat "$TMP/d/triage_expected.json")
PG=$("$PYTHON" -c 'import json,sys; print(json.load(sys.stdin)["process_group"])' <<<"$want")
SEQ=$("$PYTHON" -c 'import json,sys; print(json.load(sys.stdin)["seq"])' <<<"$want")
OTHER=$((PG + 100))

log="$TMP/debugmode.txt"
: >"$log"
for ((k = 1; k < SEQ; k++)); do
  cat >>"$log" <<LOG
  redistribute_input [explicit] (t\$5: f32[16, 64], trace: S(0)S(1)->RS(1))
    _c10d_functional::all_gather_into_tensor(t\$5: f32[16, 64], 8, $PG)  ->  t\$6: f32[128, 64]
    _c10d_functional::wait_tensor(t\$6: f32[128, 64])  ->  t\$6: f32[128, 64]
  redistribute_input [explicit] (t\$7: f32[64, 64], trace: P(sum)R->RR)
    _c10d_functional::all_reduce(t\$7: f32[64, 64], sum, $OTHER)  ->  t\$8: f32[64, 64]
    _c10d_functional::wait_tensor(t\$8: f32[64, 64])  ->  t\$8: f32[64, 64]
LOG
done
cat >>"$log" <<LOG
  [nn.Mod] Model.fc1
    aten::mm(dt\$8: f32[256, 64]| S(0)S(1), dt\$9: f32[64, 128]| RS(1))  ->  dt\$10: f32[256, 128]| S(0)S(1)
      redistribute_input [implicit] (0, S(0)S(1) -> RS(1))
        redistribute_input(t\$11: f32[32, 8], trace: S(0)S(1)->RS(1))
          _c10d_functional::all_gather_into_tensor(t\$11: f32[32, 8], 8, $PG)  ->  t\$12: f32[256, 8]
          _c10d_functional::wait_tensor(t\$12: f32[256, 8])  ->  t\$12: f32[256, 8]
LOG
MM_LINE=$(grep -n 'aten::mm' "$log" | cut -d: -f1)
R_LINE=$((MM_LINE + 1))  # its redistribute_input line
NR=$((2 * SEQ - 1))  # the redistributes before mm's, counted from 1, plus mm's own

run triage "$TMP/d" "$log" --json
expect_rc 1
expect_json "j['process_group'] == '$PG' and j['seq'] == $SEQ"
expect_json "j['issued_by']['source'] == 'debugmode' and j['issued_by']['issued']"
expect_json "j['issued_by']['redistribute_id'] == $NR and j['issued_by']['comm'] == 'all_gather'"
expect_json "j['issued_by']['src'] == 'S(0),S(1)' and j['issued_by']['dst'] == 'R,S(1)'"
expect_json "j['issued_by']['op'].startswith('aten::mm (line $MM_LINE') and j['issued_by']['line'] == $R_LINE"

run triage "$TMP/d" "$log"
expect_rc 1
expect_out_contains "stuck collective: issued by redistribute #$NR at line $R_LINE (S(0),S(1) -> R,S(1))"
expect_out_contains "for op aten::mm (line $MM_LINE"

# A log alone is not evidence.
expect_refused "give the dumps beside it" -- triage "$log"

finish
