#!/usr/bin/env bash
# `shardscope triage` of PyTorch profiler (Kineto) traces (docs/triage.md, "Profiler traces"):
# stragglers from the arrivals AnalyzeKineto matched, mismatches by Flight Recorder's rules, exit
# codes 0 clean / 1 found / 2 bad input. Every figure is derived by hand from the generator's
# parameters (tests/trace/make_kineto_traces.py, its docstring): each step issues the group
# collectives of --kinds in order on process group 0 (with --tp 2, all_gather and reduce_scatter on
# groups "1".."4" of two consecutive ranks) and one send_recv per pair (2k, 2k+1); the --straggler
# rank starts every collective --delay-us after the others, so in each collective it is a member of
# it arrives last and every other member waits --delay-us for it; a pair without it waits nobody.
source "$(dirname "$0")/lib.sh" "$@"
GEN="$PYTHON $ROOT/tests/trace/make_kineto_traces.py"
gen() { $GEN "$@" || fail "generator: $*"; }

# ---- a straggler: 8 ranks, 4 steps, rank 5 late by 2000 us --------------------------------------
# Per step rank 5 is in 5 collectives of group 0 (8 ranks: 7 others wait 2000 us each) and in the
# send_recv with rank 4 (1 other waits): 4 x 6 = 24 collectives, all delayed, last at all 24; the
# others waited 4 x (5 x 7 + 1) x 2000 us = 288000 us; the worst single wait is 2000 us, first met
# at group 0's first collective (all_reduce, seq 1, step 0). Collectives read: 8 ranks x 4 x 6 = 192.
# Every other rank waits 2000 us in at least 5 of its 6 collectives a step: victims 0-4, 6-7.
gen "$TMP/s5" --ranks 8 --steps 4 --straggler 5 --delay-us 2000 --unknown-cat 0
run triage "$TMP/s5" --json
expect_rc 1
expect_json 'j["verdict"] == "straggler" and j["class"] == "straggler" and j["culprits"] == [5]'
expect_json 'j["victims"] == [0, 1, 2, 3, 4, 6, 7] and j["profiler_traces"] is True'
expect_json 'j["world"] == 8 and j["dumps"] == 8 and j["entries"] == 192'
expect_json 'j["process_group"] is None and j["seq"] is None'
expect_json '[s["rank"] for s in j["stragglers"]] == [5] and j["roots"][0]["stragglers"] == j["stragglers"]'
expect_json 'j["stragglers"][0]["collectives"] == 24 and j["stragglers"][0]["delayed"] == 24 and j["stragglers"][0]["last"] == 24'
expect_json 'j["stragglers"][0]["caused_wait_us"] == 288000 and j["stragglers"][0]["worst_wait_us"] == 2000'
expect_json 'j["stragglers"][0]["mean_own_wait_us"] == 0'
expect_json 'j["stragglers"][0]["worst"] == {"process_group": "0", "kind": "all_reduce", "seq": 1, "p2p": False, "step": 0}'
expect_json '[(g["process_group"], g["group_size"], g["collectives"], g["last"], g["caused_wait_us"]) for g in j["stragglers"][0]["groups"]] == [("0", 8, 24, 24, 288000)]'
expect_json 'len(j["evidence"]) == 2'
run triage "$TMP/s5"
expect_rc 1
expect_out_contains "verdict: straggler (1 culprit, 7 victims); 8 of 8 ranks have a profiler trace, 192 collectives"
expect_out_contains "  class: straggler"
expect_out_contains "  culprits: 5"
expect_out_contains "rank 5 arrived last at 24 of the 24 delayed collectives it is a member of (24 matched in all); the others waited 288.0 ms for it in total, at worst 2.0 ms (all_reduce seq 1 of process group 0, step 0); it waited 0 us itself on average"
expect_out_contains "rank 5 in process group 0 (8 ranks): last at 24 of 24 delayed of 24 collectives"
expect_out_contains "victims (blocked behind the root, not at fault): 0-4, 6-7"

# ---- per process group: --tp 2 puts all_gather and reduce_scatter on pairs ("3" = ranks 4, 5) ----
# Group 0: all_reduce, broadcast, all_to_all (7 others wait) and the send_recv with 4 (1 waits):
# 4 x 4 = 16 collectives, 4 x (3 x 7 + 1) x 2000 = 176000 us. Group "3": 4 x 2 = 8, 8 x 2000 =
# 16000 us. Overall 24 collectives, 192000 us. --mesh dp=4,tp=2 fits the world of 8.
gen "$TMP/tp" --ranks 8 --steps 4 --straggler 5 --delay-us 2000 --tp 2
run triage "$TMP/tp" --json --mesh dp=4,tp=2
expect_rc 1
expect_json 'j["culprits"] == [5] and j["stragglers"][0]["collectives"] == 24 and j["stragglers"][0]["caused_wait_us"] == 192000'
expect_json '[(g["process_group"], g["group_size"], g["collectives"], g["last"], g["caused_wait_us"], g["worst"]["kind"]) for g in j["stragglers"][0]["groups"]] == [("0", 8, 16, 16, 176000, "all_reduce"), ("3", 2, 8, 8, 16000, "all_gather")]'

# ---- a small delay: 300 us is over the 100 us threshold (Flight Recorder's 1 ms would miss it) ----
# 3 steps: 3 x 6 = 18 collectives, 3 x 36 x 300 = 32400 us. gzip input reads the same.
gen "$TMP/small" --ranks 8 --steps 3 --straggler 5 --delay-us 300 --gzip
run triage "$TMP/small" --json
expect_rc 1
expect_json 'j["culprits"] == [5] and j["stragglers"][0]["last"] == 18 and j["stragglers"][0]["caused_wait_us"] == 32400'
expect_json 'j["stragglers"][0]["worst_wait_us"] == 300'
# 4 ranks, rank 2 late, gzip: 2 x (5 x 3 + 1) x 1500 = 48000 us over 2 x 6 = 12 collectives.
gen "$TMP/gz" --ranks 4 --steps 2 --straggler 2 --delay-us 1500 --gzip
run triage "$TMP/gz" --json
expect_rc 1
expect_json 'j["culprits"] == [2] and j["victims"] == [0, 1, 3] and j["stragglers"][0]["caused_wait_us"] == 48000'
expect_json 'j["stragglers"][0]["collectives"] == 12'

# ---- clean: no straggler, or a delay within the 100 us threshold ----------------------------------
gen "$TMP/clean" --ranks 8 --steps 3
run_ok triage "$TMP/clean" --json
expect_json 'j["verdict"] == "clean" and j["culprits"] == [] and j["class"] is None and j["victims"] == []'
expect_json 'j["stragglers"] == [] and j["roots"] == [] and j["notes"] == [] and j["entries"] == 8 * 3 * 6'
run_ok triage "$TMP/clean"
expect_out_contains "verdict: clean; 8 of 8 ranks have a profiler trace, 144 collectives"
gen "$TMP/jitter" --ranks 8 --steps 3 --straggler 5 --delay-us 50
run_ok triage "$TMP/jitter" --json
expect_json 'j["verdict"] == "clean" and j["culprits"] == []'
# Ranks 4-7 without a file: the matched collectives are those of ranks 0-3; a note names the rest.
gen "$TMP/half" --ranks 8 --only 0,1,2,3 --steps 2
run_ok triage "$TMP/half" --json
expect_json 'j["verdict"] == "clean" and j["world"] == 8 and j["dumps"] == 4'
expect_json 'j["notes"] == ["ranks 4-7 left no profiler trace and no blocked rank waits for them"]'

# ---- mismatches: rank 3's file from a run that differs in one collective of step 1 ---------------
# With the 5 default group kinds, collective j of step s has seq 5 s + j + 1 on group 0.
mix() {  # mix NAME GENERATOR-OPTIONS...: a clean 8-rank run with rank 3's file from a changed one
  local name=$1
  shift
  gen "$TMP/$name.base" --ranks 8 --steps 3
  gen "$TMP/$name.changed" --ranks 8 --steps 3 "$@"
  cp "$TMP/$name.changed"/rank-3.* "$TMP/$name.base"/
}
mix size --elems-at 1:0=4096  # all_reduce of step 1: seq 6
run triage "$TMP/size.base" --json
expect_rc 1
expect_json 'j["verdict"] == "mismatch" and j["class"] == "size_mismatch" and j["culprits"] == [3]'
expect_json 'j["process_group"] == "0" and j["seq"] == 6 and j["stragglers"] == []'
mix dtype --dtype-at 1:2=BFloat16  # reduce_scatter of step 1: seq 8
run triage "$TMP/dtype.base" --json
expect_rc 1
expect_json 'j["class"] == "dtype_mismatch" and j["culprits"] == [3] and j["seq"] == 8'
mix kind --step-kinds 1=all_reduce,broadcast,reduce_scatter,broadcast,all_to_all,send_recv  # seq 7
run triage "$TMP/kind.base" --json
expect_rc 1
expect_json 'j["class"] == "kind_mismatch" and j["culprits"] == [3] and j["seq"] == 7'
# Rank 3 skips step 1's all_gather: its seq 7 is the others' seq 8 (reduce_scatter).
mix skipped --step-kinds 1=all_reduce,reduce_scatter,broadcast,all_to_all,send_recv
run triage "$TMP/skipped.base"
expect_rc 1
expect_out_contains "class: skipped_collective; process group 0 (default_pg); seq 7"
expect_out_contains "  culprits: 3"

# ---- bad input: exit 2, one line naming the file ---------------------------------------------------
gen "$TMP/bad" --ranks 2 --steps 1
f=$(ls "$TMP"/bad/rank-1.*)
head -c 3000 "$f" >"$TMP/cut" && mv "$TMP/cut" "$f"
expect_refused "$(basename "$f")" "truncated JSON" -- triage "$TMP/bad"
expect_refused "--mesh: 'dp=4,tp=4' has 16 ranks, the profiler traces 8" -- triage "$TMP/clean" --mesh dp=4,tp=4

finish
