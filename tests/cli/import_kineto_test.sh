#!/usr/bin/env bash
# `shardscope import kineto` on traces from tests/trace/make_kineto_traces.py. Every expected value
# follows from the generator's parameters (its docstring) and nccl-tests' definitions
# (docs/kineto.md): e.g. all_reduce of 2^20 Float = 4194304 bytes in 100 us -> algbw
# 4194304 / 100000 ns = 41.94304 GB/s, busbw x 2(n-1)/n = 1.5 on 4 ranks.
source "$(dirname "$0")/lib.sh" "$@"
GEN="$PYTHON $ROOT/tests/trace/make_kineto_traces.py"

# 4 ranks, 2 steps, rank 1 arrives 50 us late at every collective.
$GEN "$TMP/a" --ranks 4 --steps 2 --straggler 1 --delay-us 50
run_ok import kineto "$TMP/a" --json
expect_json 'len(j["ranks"]) == 4 and [r["rank"] for r in j["ranks"]] == [0, 1, 2, 3]'
expect_json 'all(r["world_size"] == 4 for r in j["ranks"])'
# Per step: 2 GEMM kernels + 6 NCCL kernels; 2 x (aten::linear + aten::mm) ops.
expect_json 'all(r["kernels"] == 16 and r["ops"] == 8 for r in j["ranks"])'
expect_json 'j["ranks"][0]["collectives"] == {"all_reduce": 2, "all_gather": 2, "reduce_scatter": 2, "broadcast": 2, "all_to_all": 2, "send": 2}'
expect_json 'j["ranks"][1]["collectives"] == {"all_reduce": 2, "all_gather": 2, "reduce_scatter": 2, "broadcast": 2, "all_to_all": 2, "recv": 2}'
expect_json 'j["ranks"][0]["file"] == "rank-0.20260101.1000.pt.trace.json"'
# 5 collectives and 2 send/recv pairs per step.
expect_json 'j["matched"] == 14 and j["unmatched"] == 0'
# Rank 1 is last at the 5 collectives and at its pair with rank 0, in both steps.
expect_json 'j["last_arrivals"] == {"1": 12}'
expect_json 'any("weird_future_category 2" in w for w in j["warnings"])'
expect_json '[s for s in j["steps"] if s["step"] == 0 and s["kind"] == "all_reduce"] == [{"step": 0, "process_group": "0", "group_size": 4, "kind": "all_reduce", "count": 1, "bytes": 4194304, "time_us": 100.0, "algbw_gbps": 41.94304, "busbw_gbps": 41.94304 * 1.5, "wait_us": 150.0}]'
# all_gather: S = output = 4 x 2^20 x 4 bytes; busbw x (n-1)/n.
expect_json '[(s["bytes"], round(s["busbw_gbps"], 6)) for s in j["steps"] if s["step"] == 1 and s["kind"] == "all_gather"] == [(16777216, round(167.77216 * 0.75, 6))]'
expect_json '[c["wait_us"] for c in j["collectives"] if c["kind"] == "all_reduce" and c["seq"] == 1] == [{"0": 50.0, "1": 0.0, "2": 50.0, "3": 50.0}]'
# The other kinds, from nccl-tests' definitions on n = 4: reduce_scatter S = its input (4 x 2^20 x 4
# bytes), busbw x 3/4; broadcast S = 2^20 x 4, busbw x 1; all_to_all S = a rank's send buffer
# (2^20 x 4), busbw x 3/4; send/recv: the pairs 0->1 and 2->3 (S = 2^20 x 4 each, 100 us each, so
# 2 x S in 200 us), busbw x 1. The straggler (rank 1) makes 3 ranks wait 50 us at each collective,
# and rank 0 wait 50 us for it at their send/recv.
expect_json '[(s["bytes"], s["time_us"], round(s["algbw_gbps"], 6), round(s["busbw_gbps"], 6), s["wait_us"]) for s in j["steps"] if s["step"] == 0 and s["kind"] == "reduce_scatter"] == [(16777216, 100.0, 167.77216, round(167.77216 * 0.75, 6), 150.0)]'
expect_json '[(s["bytes"], round(s["algbw_gbps"], 6), round(s["busbw_gbps"], 6)) for s in j["steps"] if s["step"] == 0 and s["kind"] == "broadcast"] == [(4194304, 41.94304, 41.94304)]'
expect_json '[(s["bytes"], round(s["algbw_gbps"], 6), round(s["busbw_gbps"], 6)) for s in j["steps"] if s["step"] == 0 and s["kind"] == "all_to_all"] == [(4194304, 41.94304, round(41.94304 * 0.75, 6))]'
expect_json '[(s["count"], s["bytes"], s["time_us"], round(s["algbw_gbps"], 6), round(s["busbw_gbps"], 6), s["wait_us"]) for s in j["steps"] if s["step"] == 0 and s["kind"] == "send"] == [(2, 8388608, 200.0, 41.94304, 41.94304, 50.0)]'
# Per collective, the rank that arrived last: the straggler wherever it takes part.
expect_json 'all(c["last_rank"] == 1 for c in j["collectives"] if 1 in c["group"] and c["kind"] != "send")'
run_ok import kineto "$TMP/a"
expect_out_contains "collectives: 14 matched, 0 unmatched"
expect_out_contains "arrived last:  rank 1 12x"

# Older traces: nccl:* ops with Input Dims only, ncclKernel_* names, gzip.
$GEN "$TMP/old" --ranks 2 --steps 1 --variant old --gzip
run_ok import kineto "$TMP/old" --json
expect_json 'j["ranks"][0]["file"].endswith(".json.gz")'
expect_json 'j["ranks"][0]["collectives"] == {"all_reduce": 1, "all_gather": 1, "reduce_scatter": 1, "broadcast": 1, "all_to_all": 1, "send": 1}'
expect_json 'j["matched"] == 6 and j["unmatched"] == 0'
expect_json '[s["bytes"] for s in j["steps"] if s["kind"] == "all_reduce"] == [4194304]'

# No record_param_comms args, no distributedInfo, kernels linked by the ac2g flow only.
$GEN "$TMP/noargs" --ranks 2 --steps 1 --variant noargs --dist-info none --no-correlation
run_ok import kineto "$TMP/noargs" --json
expect_json 'j["ranks"][1]["rank"] == 1 and j["ranks"][1]["rank_from_file_name"]'
expect_json 'sum("rank 1 taken from the file name" in w for w in j["warnings"]) == 1'
expect_json 'j["ranks"][0]["collectives"]["all_to_all"] == 1 and j["matched"] == 6'

# Partial distributedInfo claiming 8 ranks, written last, on one line.
$GEN "$TMP/partial" --ranks 2 --steps 1 --world 8 --dist-info partial --dist-info-last --compact
run_ok import kineto "$TMP/partial" --json
expect_json 'all(r["world_size"] == 8 for r in j["ranks"])'
expect_json 'any("6 of 8 ranks have no profiler trace (2, 3, 4, 5, 6, 7)" in w for w in j["warnings"])'
expect_json 'j["ranks"][0]["collectives"]["all_reduce"] == 1'

# Without NCCL kernels (a CPU-only profile), collectives are counted from the CPU records.
$GEN "$TMP/a" --ranks 4 --steps 2 >/dev/null
"$PYTHON" - "$TMP/a" "$TMP/cpu" <<'EOF'
import json, os, sys
src, dst = sys.argv[1], sys.argv[2]
os.makedirs(dst)
for name in os.listdir(src):
    j = json.load(open(os.path.join(src, name)))
    j["traceEvents"] = [e for e in j["traceEvents"] if e.get("cat") != "kernel"]
    json.dump(j, open(os.path.join(dst, name), "w"))
EOF
run_ok import kineto "$TMP/cpu" --json
expect_json 'all(r["kernels"] == 0 and r["counted_from"] == "cpu_records" for r in j["ranks"])'
expect_json 'j["ranks"][2]["collectives"] == {"all_reduce": 2, "all_gather": 2, "reduce_scatter": 2, "broadcast": 2, "all_to_all": 2, "send": 2}'

# check: clean traces exit 0; a rank whose dtypes differ is named (exit 1).
run_ok check "$TMP/a"
mkdir -p "$TMP/dtype"
cp "$TMP"/a/*.json "$TMP/dtype/"
sed -i 's/"dtype": "Float"/"dtype": "BFloat16"/g' "$TMP"/dtype/rank-2.*.json
run check "$TMP/dtype"
expect_rc 1
expect_out_contains "dtype"

# Bad input: one line naming the file and the byte offset, exit 2.
f=$(ls "$TMP"/old/rank-0.*.gz)
head -c 700 "$f" >"$TMP/cut.json.gz"
expect_refused "cut.json.gz" "gzip stream is truncated at compressed byte 700" -- import kineto "$TMP/cut.json.gz"
printf '\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03garbage!' >"$TMP/bad.json.gz"
expect_refused "bad.json.gz" "corrupt gzip data at compressed byte" -- import kineto "$TMP/bad.json.gz"
f=$(ls "$TMP"/a/rank-0.*.json)
head -c 3000 "$f" >"$TMP/rank-0.cut.json"
expect_refused "rank-0.cut.json" "truncated JSON" "at byte 3000" -- import kineto "$TMP/rank-0.cut.json"
printf '{"traceEvents": [{"ph": "X", "ts": 1,}]}' >"$TMP/rank-0.bad.json"
expect_refused "rank-0.bad.json" "malformed traceEvents element" "at byte 17" -- import kineto "$TMP/rank-0.bad.json"
printf '[1, 2]' >"$TMP/rank-0.arr.json"
expect_refused "rank-0.arr.json" "expected '{'" "at byte 0" -- import kineto "$TMP/rank-0.arr.json"
printf '{"traceEvents": []}' >"$TMP/trace.json"
expect_refused "trace.json" "cannot tell the rank" -- import kineto "$TMP/trace.json"
mkdir -p "$TMP/dup"
cp "$TMP"/a/rank-0.*.json "$TMP/dup/rank-0.a.json"
cp "$TMP"/a/rank-0.*.json "$TMP/dup/rank-0.b.json"
expect_refused "two traces of rank 0" -- import kineto "$TMP/dup"
expect_refused "no such file or directory" -- import kineto "$TMP/nothing-here"

finish
