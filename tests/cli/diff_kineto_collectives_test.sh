#!/usr/bin/env bash
# `shardscope diff` of two profiler runs, collective by collective (docs/kineto.md, "Comparing two
# runs"): which collectives one run added or removed, or holds with another size or dtype, and the
# exit codes CI reads (docs/cli.md: 0 nothing failing, 1 something failing, 2 bad input).
# Every run comes from tests/trace/make_kineto_traces.py with the same base; each candidate differs
# in one stated way, so the expected list follows from the generator's parameters: per step the
# collectives of --kinds in order on process group 0 (all 4 ranks), all_reduce of 2^20 elements
# moving S = 2^20 x 4 = 4194304 bytes of Float, all_gather S = its output, 4 x 4194304 = 16777216,
# reduce_scatter S = its input, also 16777216 (nccl-tests' S, docs/kineto.md). With --seq the
# sequence numbers count group 0's collectives from 1 in launch order.
source "$(dirname "$0")/lib.sh" "$@"
GEN="$PYTHON $ROOT/tests/trace/make_kineto_traces.py"
BASE=(--ranks 4 --steps 3 --kinds all_reduce,all_gather --seq)

$GEN "$TMP/base" "${BASE[@]}"
$GEN "$TMP/same" "${BASE[@]}"
$GEN "$TMP/dropped" "${BASE[@]}" --step-kinds 1=all_gather
$GEN "$TMP/inserted" "${BASE[@]}" --step-kinds 1=all_reduce,reduce_scatter,all_gather
$GEN "$TMP/resized" "${BASE[@]}" --elems-at 2:0=2097152
$GEN "$TMP/swapped" "${BASE[@]}" --step-kinds 1=all_gather,all_reduce
$GEN "$TMP/half" "${BASE[@]}" --dtype Half
$GEN "$TMP/retyped" "${BASE[@]}" --dtype Half --dtype-at 0:1=BFloat16

# The same run twice: 3 steps x 2 collectives, all the same; exit 0.
run_ok diff "$TMP/base" "$TMP/same"
expect_out_contains "collectives one by one: 6 same, 0 added, 0 removed, 0 changed"
run_ok diff "$TMP/base" "$TMP/same" --json
expect_json 'j["collectives_one_by_one"] == {"baseline": 6, "candidate": 6, "same": 6, "added": 0, "removed": 0, "changed": 0, "failed": False, "changes": []}'
expect_json 'j["failed"] is False'

# Step 1 without its all_reduce: that one (the 1st of step 1, seq 3) is removed; exit 1.
run diff "$TMP/base" "$TMP/dropped" --json
expect_rc 1
expect_json '[(c["change"], c["category"], c["failing"], c["process_group"], c["kind"], c["baseline_step"], c["candidate_step"], c["baseline_position"], c["candidate_position"], c["baseline_seq"], c["baseline_bytes"], c["baseline_dtype"], c["candidate_bytes"]) for c in j["collectives_one_by_one"]["changes"]] == [("removed", "collectives", True, "0", "all_reduce", 1, 1, 1, None, 3, 4194304, "Float", None)]'
expect_json 'j["collectives_one_by_one"]["same"] == 5 and j["collectives_one_by_one"]["candidate"] == 5'
expect_json 'j["failed"] is True'
run diff "$TMP/base" "$TMP/dropped"
expect_rc 1
expect_out_contains "removed  collectives  0      1       1       all_reduce      4194304 B Float         -"
expect_out_contains "collectives one by one: 5 same, 0 added, 1 removed, 0 changed; 1 failing (collectives)"
# The other way round the same collective is added (the 1st of step 1 in the candidate).
run diff "$TMP/dropped" "$TMP/base" --json
expect_rc 1
expect_json '[(c["change"], c["kind"], c["baseline_position"], c["candidate_position"], c["candidate_seq"], c["candidate_bytes"], c["candidate_dtype"], c["baseline_dtype"]) for c in j["collectives_one_by_one"]["changes"]] == [("added", "all_reduce", None, 1, 3, 4194304, "Float", None)]'

# A reduce_scatter between step 1's two: added as the 2nd of step 1, 16777216 bytes.
run diff "$TMP/base" "$TMP/inserted" --json
expect_rc 1
expect_json '[(c["change"], c["kind"], c["candidate_step"], c["candidate_position"], c["candidate_bytes"]) for c in j["collectives_one_by_one"]["changes"]] == [("added", "reduce_scatter", 1, 2, 16777216)]'
expect_json 'j["collectives_one_by_one"]["same"] == 6'

# Step 2's all_reduce of twice the elements: changed, category bytes (4194304 -> 8388608).
run diff "$TMP/base" "$TMP/resized"
expect_rc 1
expect_out_contains "changed  bytes        0      2       1       all_reduce      4194304 B Float         8388608 B Float"
expect_out_contains "collectives one by one: 5 same, 0 added, 0 removed, 1 changed; 1 failing (bytes)"
# Failing on time only: the change is listed, exit 0 ... and bytes alone fail again.
run_ok diff "$TMP/base" "$TMP/resized" --fail-on time:10% --json
expect_json '[(c["change"], c["category"], c["failing"]) for c in j["collectives_one_by_one"]["changes"]] == [("changed", "bytes", False)]'
expect_json 'j["failed"] is False and j["collectives_one_by_one"]["failed"] is False'
run diff "$TMP/base" "$TMP/resized" --fail-on bytes
expect_rc 1

# Step 1 in the other order (all_gather, then all_reduce): the all_gathers pair up; the all_reduce
# is removed from the 1st place and added at the 2nd, as a diff of lines shows a moved line.
run diff "$TMP/base" "$TMP/swapped" --json
expect_rc 1
expect_json '[(c["change"], c["kind"], c["baseline_position"], c["candidate_position"]) for c in j["collectives_one_by_one"]["changes"]] == [("removed", "all_reduce", 1, None), ("added", "all_reduce", None, 2)]'

# Half -> BFloat16 for step 0's all_gather: same bytes (2 per element: 4 x 2^20 x 2 = 8388608),
# another dtype: changed, category collectives; with --fail-on bytes it is listed but not failing.
run diff "$TMP/half" "$TMP/retyped" --json
expect_rc 1
expect_json '[(c["change"], c["category"], c["kind"], c["baseline_step"], c["baseline_position"], c["baseline_bytes"], c["candidate_bytes"], c["baseline_dtype"], c["candidate_dtype"]) for c in j["collectives_one_by_one"]["changes"]] == [("changed", "collectives", "all_gather", 0, 2, 8388608, 8388608, "Half", "BFloat16")]'
run_ok diff "$TMP/half" "$TMP/retyped" --fail-on bytes
expect_out_contains "changed  collectives  0      0       2       all_gather      8388608 B Half          8388608 B BFloat16"

# Random single edits (fixed seed): one collective of one step dropped, inserted or resized, on
# steps of 3 to 6 collectives of distinct-neighbour kinds. The list must hold exactly that one
# change, and in every case same + removed + changed = the baseline's count and same + added +
# changed = the candidate's.
KINDS=(all_reduce all_gather reduce_scatter broadcast)
RANDOM=32
for trial in 1 2 3 4 5 6; do
  n=$((3 + RANDOM % 4))
  list=() prev=""
  for ((k = 0; k < n; k++)); do
    kind=${KINDS[RANDOM % 4]}
    while [ "$kind" = "$prev" ]; do kind=${KINDS[RANDOM % 4]}; done
    list+=("$kind") prev=$kind
  done
  base=$(IFS=,; echo "${list[*]}")
  step=$((RANDOM % 3)) at=$((RANDOM % n)) edit=$((RANDOM % 3))
  $GEN "$TMP/r$trial" --ranks 2 --steps 3 --kinds "$base"
  case $edit in
    0)  # drop the collective at $at: removed, baseline position at+1
      cand=("${list[@]:0:at}" "${list[@]:at+1}")
      $GEN "$TMP/c$trial" --ranks 2 --steps 3 --kinds "$base" --step-kinds "$step=$(IFS=,; echo "${cand[*]}")"
      want="[(\"removed\", \"${list[at]}\", $step, $((at + 1)), None)]" ;;
    1)  # insert an all_to_all (a kind the lists do not use) before $at: added at at+1
      cand=("${list[@]:0:at}" all_to_all "${list[@]:at}")
      $GEN "$TMP/c$trial" --ranks 2 --steps 3 --kinds "$base" --step-kinds "$step=$(IFS=,; echo "${cand[*]}")"
      want="[(\"added\", \"all_to_all\", $step, None, $((at + 1)))]" ;;
    2)  # twice the elements for the collective at $at: changed at at+1 in both
      $GEN "$TMP/c$trial" --ranks 2 --steps 3 --kinds "$base" --elems-at "$step:$at=2097152"
      want="[(\"changed\", \"${list[at]}\", $step, $((at + 1)), $((at + 1)))]" ;;
  esac
  run diff "$TMP/r$trial" "$TMP/c$trial" --json
  expect_rc 1
  expect_json "[(c[\"change\"], c[\"kind\"], c[\"baseline_step\"], c[\"baseline_position\"], c[\"candidate_position\"]) for c in j[\"collectives_one_by_one\"][\"changes\"]] == $want"
  expect_json '(lambda d: d["same"] + d["removed"] + d["changed"] == d["baseline"] and d["same"] + d["added"] + d["changed"] == d["candidate"])(j["collectives_one_by_one"])'
done

# Bad input: exit 2.
run diff "$TMP/base" "$TMP/missing"
expect_rc 2

finish
