#!/usr/bin/env bash
# `shardscope check` end to end: clean traces of every sample scenario on the local backend exit 0;
# the hand-made divergent traces (tests/golden/check/<class>/, one edited line each, see
# tests/trace/check_test.cpp) exit 1 naming the class and the culprit; bad input exits 2.
source "$(dirname "$0")/lib.sh" "$@"

CASES="$ROOT/tests/golden/check"

for scen in "$ROOT"/samples/*.json; do
  name=$(basename "$scen" .json)
  "$BIN" run "$scen" --trace "$TMP/$name" >/dev/null || fail "run $scen"
  run check "$TMP/$name"
  expect_rc 0
  expect_out_contains "clean: "
done

run_ok check "$CASES/clean"
expect_out_contains "clean: 4 of 4 rank files, 3 groups, 9 collective calls paired, 5 redistributes"

# class culprit-phrase for each single-edit case
while read -r case class culprit; do
  run check "$CASES/$case"
  expect_rc 1
  expect_out_contains "$class: "
  expect_out_contains "[culprit: $culprit]"
  expect_out_contains "1 mismatch: "
done <<'LIST'
missing_rank_file missing_rank_file rank 3
collective_type collective_type rank 2
collective_sequence collective_sequence rank 2
dtype dtype rank 3
size_reduce_scatter size_or_syntax rank 1
size_pairwise size_or_syntax ranks 0, 2
all_to_all_total all_to_all_total ranks 0, 2
redistribute redistribute rank 1
state state rank 3
shape_replica shape rank 3
checksum checksum rank 2
op_strategy op rank 3
halo_size size_or_syntax ranks 1, 3
LIST

# Programs: the hand-made op trace is clean; a rank that skipped an op (and its halo) is named at it.
run_ok check "$ROOT/tests/golden/trace/program"
expect_out_contains "clean: 4 of 4 rank files, 4 groups, 8 collective calls paired, 3 redistributes, 3 ops"
run check "$CASES/op_missing" --json
expect_rc 1
expect_json 'j["ops"] == 3 and j["mismatches"][0]["class"] == "op" and j["mismatches"][0]["op_id"] == 1'
expect_json 'j["mismatches"][0]["culprits"] == [2] and j["mismatches"][1]["class"] == "collective_type"'

# A rank that stopped: 7 mismatches, the first is the missing collective; the cap applies to output.
run check "$CASES/missing_ranks" --max-reports 1
expect_rc 1
expect_out_contains "missing_ranks: call 0 of group [1, 3], all_gather on mesh dims [0] (redistribute #0 step 0): rank 3 never issued it; rank 1 did [culprit: rank 3]"
expect_out_contains "7 mismatches (1 shown, --max-reports 1)"
run check "$CASES/missing_ranks" --json --max-reports 3
expect_rc 1
expect_json 'j["clean"] is False and j["mismatch_count"] == 7 and len(j["mismatches"]) == 3'
expect_json 'j["mismatches"][0]["class"] == "missing_ranks" and j["mismatches"][0]["culprits"] == [3]'
run check "$CASES/missing_ranks"
expect_rc 1
expect_out_lacks "shown"

# Bad input.
expect_refused "no such trace" -- check "$TMP/nowhere"
run check "$CASES/clean" --max-reports -1
expect_rc 2
run check "$ROOT/tests/golden/trace/dirs/duplicate_rank"
expect_rc 2

finish
