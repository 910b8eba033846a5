#!/usr/bin/env bash
# `shardscope diff` of two profiler runs (docs/kineto.md, "Comparing two runs") on traces from
# tests/trace/make_kineto_traces.py. Expected values follow from the generator's parameters (its
# docstring) and nccl-tests' S (docs/kineto.md): all_reduce of 2^20 Float moves S = 4194304 bytes,
# all_gather S = its output, 4 ranks x 4194304 = 16777216; every transfer takes --transfer-us (100 by
# default) and a ProfilerStep lasts --period-us - 10 us (9990 us by default).
source "$(dirname "$0")/lib.sh" "$@"
GEN="$PYTHON $ROOT/tests/trace/make_kineto_traces.py"
BASE=(--ranks 4 --steps 3 --kinds all_reduce,all_gather --straggler 2 --delay-us 50)

$GEN "$TMP/base" "${BASE[@]}"
$GEN "$TMP/same" "${BASE[@]}"
$GEN "$TMP/added" "${BASE[@]/all_reduce,all_gather/all_reduce,all_gather,reduce_scatter}"
$GEN "$TMP/slow" "${BASE[@]}" --transfer-us 300 --period-us 12000
$GEN "$TMP/bigger" "${BASE[@]}" --elems 2097152
$GEN "$TMP/fewer" "${BASE[@]/3/2}"

# The same run twice: exit 0, no differences; the run line is 3 x (4194304 + 16777216) bytes in
# 6 x 100 us.
run_ok diff "$TMP/base" "$TMP/same"
expect_out_contains "baseline:  4 rank(s), 3 profiled step(s), step time 9990.0 us; 6 collective(s), 62914560 bytes, 600.0 us"
expect_out_contains "no differences"

# A reduce_scatter added to every step: one line, exit 1 (collectives fail by default).
run diff "$TMP/base" "$TMP/added"
expect_rc 1
expect_out_contains "process group 0 reduce_scatter: added (candidate only: 3 collective(s) from step 0)"
expect_out_contains "1 difference, 1 failing (collectives)"
run diff "$TMP/added" "$TMP/base" --json
expect_rc 1
expect_json 'j["profiler_runs"] is True and j["failed"] is True'
expect_json '[(d["category"], d["subject"], d["what"], d["baseline"]) for d in j["differences"]] == [("collectives", "process group 0 reduce_scatter", "removed", "3 collective(s) from step 0")]'

# Slower transfers (300 us) and longer steps (12000 - 10 us): time lines, failing only with a
# threshold. Step time +2000/9990 = +20.0%; each kind 3 x 100 -> 3 x 300 us, +200.0%.
run_ok diff "$TMP/base" "$TMP/slow"
expect_out_contains "run: step time (mean ProfilerStep): 9990.0 us -> 11990.0 us (+20.0%)"
expect_out_contains "process group 0 all_reduce: time: 300.0 us -> 900.0 us (+200.0%)"
expect_out_contains "process group 0 all_gather: time: 300.0 us -> 900.0 us (+200.0%)"
expect_out_contains "3 differences, none failing"
run diff "$TMP/base" "$TMP/slow" --fail-on time:10%
expect_rc 1
expect_out_contains "3 differences, 3 failing (time)"
# 20% and 200% are both under 250%: nothing to report.
run_ok diff "$TMP/base" "$TMP/slow" --fail-on time:250%
expect_out_contains "no differences"
# 20% is over 15%, 200% too; the reverse direction is a speed-up: reported, never failing.
run_ok diff "$TMP/slow" "$TMP/base" --fail-on time:15% --json
expect_json 'j["failed"] is False and len(j["differences"]) == 3 and not any(d["failing"] for d in j["differences"])'
expect_json '[d["candidate"] for d in j["differences"] if d["subject"] == "run"] == ["9990.0 us (-16.7%)"]'

# Twice the elements: bytes per kind double (all_reduce 3 x 8388608, all_gather 3 x 33554432).
run diff "$TMP/base" "$TMP/bigger"
expect_rc 1
expect_out_contains "process group 0 all_reduce: bytes: 12582912 -> 25165824 (+100.0%)"
expect_out_contains "process group 0 all_gather: bytes: 50331648 -> 100663296 (+100.0%)"
expect_out_contains "2 differences, 2 failing (bytes)"

# One step fewer: profiled steps; per kind (all_gather before all_reduce) the count 3 -> 2, the
# bytes and the total time 300 -> 200 us (-33.3%, reported, not failing).
run diff "$TMP/base" "$TMP/fewer" --json
expect_rc 1
expect_json '[(d["category"], d["what"], d["baseline"], d["candidate"], d["failing"]) for d in j["differences"] if d["category"] != "bytes"] == [("plan", "profiled steps", "3", "2", True), ("collectives", "count", "3", "2", True), ("time", "time", "300.0 us", "200.0 us (-33.3%)", False), ("collectives", "count", "3", "2", True), ("time", "time", "300.0 us", "200.0 us (-33.3%)", False)]'
expect_json '[d["candidate"] for d in j["differences"] if d["category"] == "bytes"] == ["33554432 (-33.3%)", "8388608 (-33.3%)"]'

# Bad input: exit 2 with one line.
run diff "$TMP/base" "$TMP/missing"
expect_rc 2

finish
