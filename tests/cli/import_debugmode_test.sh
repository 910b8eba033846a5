#!/usr/bin/env bash
# `shardscope import debugmode` (issue 14): one golden dump per DebugMode variant of the reference
# (docs/pytorch-artifacts.md section 1), with expectations derived by hand:
# placements and shapes as the dump prints them, PyTorch's plans from its greedy rule
# (_redistribute.py: nested shards replicate inner mesh dims first; a merged all_gather
# of an extent the group does not divide is pytorch#194457), and the replayed layouts from
# torch.chunk (ceil(n/k) rows per rank, in shard order).
source "$(dirname "$0")/lib.sh" "$@"
D="$ROOT/tests/golden/import/debugmode"

# json_lines FILE PYEXPR: prints PYEXPR over `rows`, the JSON lines of FILE, with a version 2 op
# line that names an earlier op by `like` completed from it (docs/trace-format.md, "Version 2":
# the fields it leaves out of name..note are that op's; `redistribute_ids` relinks the inputs).
json_lines() {
  "$PYTHON" -c '
import copy, json, sys
rows, ops = [], {}
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r["type"] == "op":
        if "like" in r:
            base = ops[r["like"]]
            for k in ("name", "args", "inputs", "outputs", "candidates", "chosen", "rule", "note"):
                r.setdefault(k, copy.deepcopy(base[k]))
            for i, rid in enumerate(r.pop("redistribute_ids", [])):
                r["inputs"][i]["redistribute_id"] = rid
        ops.setdefault(r["id"], r)
    rows.append(r)
print(json.dumps(eval(sys.argv[2])))' "$1" "$2"
}
expect_eq() {
  CHECKS=$((CHECKS + 1))
  [ "$1" = "$2" ] || fail "$3: got '$1', expected '$2'"
}
# expect_rows FILE EXPR WANT WHAT: json_lines FILE EXPR prints WANT.
expect_rows() { expect_eq "$(json_lines "$1" "$2")" "$3" "$4"; }

# ---- the reference's example (1-D mesh of 8, mm of [8,8] S(0) by [8,32] S(0)) ----
run_ok import debugmode "$D/mm_1d.txt" --mesh 8 --json
expect_json 'j["format"] == "text" and j["mesh"] == [8] and j["ops"] == 4'
expect_json 'len(j["redistributes"]) == 1'
expect_json '(lambda r: (r["line"], r["op"], r["arg_index"], r["explicit"], r["global_shape"], r["dtype"]))(j["redistributes"][0]) == (3, "aten::mm", 1, False, [8, 32], "f32")'
expect_json '(lambda r: (r["src"], r["src_text"], r["dst"], r["dst_text"], r["pytorch_trace"]))(j["redistributes"][0]) == (["S(0)"], "S(0)", ["R"], "R", "S(0)->R")'
expect_json 'j["redistributes"][0]["recorded_collectives"] == [{"kind": "all_gather", "group_size": 8, "group_name": "0"}]'
expect_json 'j["redistributes"][0]["shardscope_notation"] == "S(0)->R" and j["redistributes"][0]["verdict"] == "same"'
expect_json 'j["redistributes"][0]["local_shape"] == [1, 32] and j["warnings"] == []'

# With -o: a trace that show and check read; every rank's layout is torch.chunk's: rank r holds
# row r of 8 before, all 8 rows after.
run_ok import debugmode "$D/mm_1d.txt" --mesh 8 -o "$TMP/mm"
expect_out_contains "same              1"
expect_out_contains "corrupting_merge  0"
run_ok show "$TMP/mm"
expect_out_contains "program: 4 op(s)"
expect_out_contains "rank 5: [1, 32] @ [5, 0] -> [8, 32] @ [0, 0]"
expect_out_contains "debugmode (line 3): S(0)->R, same"
run_ok check "$TMP/mm"
run_ok export --format chrome "$TMP/mm" -o "$TMP/mm.json"
expect_rows "$TMP/mm/rank-5.jsonl" '[r["imported"] for r in rows if r["type"] == "redistribute_begin"]' '[{"source": "debugmode", "line": 3, "notation": "S(0)->R", "collectives": [{"kind": "all_gather", "group_size": 8, "group_name": "0"}], "verdict": "same", "reason": ""}]' "imported plan on rank 5"
expect_rows "$TMP/mm/rank-5.jsonl" '[(r["name"], [i["placements"] for i in r["inputs"]]) for r in rows if r["type"] == "op"]' '[["torch.mm", [["S(0)"], ["S(0)"]]], ["aten::mm", [["S(0)"], ["S(0)"]]], ["<method '"'"'sum'"'"' of '"'"'torch._C.TensorBase'"'"' objects>", [["S(0)"]]], ["aten::sum", [["S(0)"]]]]' "opaque ops"
expect_rows "$TMP/mm/rank-5.jsonl" '[(r["op_id"], r["op_input"]) for r in rows if r["type"] == "redistribute_begin"] + [i["redistribute_id"] for r in rows if r["type"] == "op" and r["name"] == "aten::mm" for i in r["inputs"]]' '[[1, 1], -1, 0]' "aten::mm input 1 links to redistribute 0"
# A diff of the import against itself finds nothing.
run_ok diff "$TMP/mm" "$TMP/mm"

# A tensor over --max-replay-elements (8x32 = 256 > 100) is judged but not replayed; its trace
# record ends not ok.
run_ok import debugmode "$D/mm_1d.txt" --mesh 8 --max-replay-elements 100 -o "$TMP/small" --json
expect_json 'j["redistributes"][0]["verdict"] == "same" and not j["redistributes"][0]["replayed"] and j["replays"] == 0'
expect_json '[w["line"] for w in j["warnings"]] == [3] and "not replayed" in j["warnings"][0]["message"]'
expect_rows "$TMP/small/rank-0.jsonl" '[(r["ok"], r["error"][:13]) for r in rows if r["type"] == "redistribute_end"]' '[[false, "not replayed:"]]' "not replayed: redistribute_end not ok"

# ---- newer form: ids and outputs ----
run_ok import debugmode "$D/mm_1d_ids.txt" --mesh 8 -o "$TMP/ids" --json
expect_json 'j["ops"] == 2 and j["redistributes"][0]["verdict"] == "same" and j["redistributes"][0]["trace_id"] == 0'
expect_rows "$TMP/ids/rank-3.jsonl" '[(o["tensor"], o["placements"], o["global_shape"], o["local_shape"]) for r in rows if r["type"] == "op" and r["name"] == "torch.mm" for o in r["outputs"]]' '[["dt$6", ["S(0)"], [8, 32], [1, 32]]]' "torch.mm output on rank 3"
expect_rows "$TMP/ids/rank-3.jsonl" '[r["tensor"] for r in rows if r["type"] == "redistribute_begin"]' '["dt$1"]' "redistribute named after the DTensor id"

# ---- explicit redistribute (newest form, no outer line, _wrap_tensor_autograd) ----
# The global shape is not printed: 1 row per rank on 8 ranks gives 8 rows (even shards).
run_ok import debugmode "$D/explicit.txt" --mesh 8 --json
expect_json '(lambda r: (r["op"], r["arg_index"], r["explicit"], r["global_shape"], r["global_shape_inferred"], r["module"]))(j["redistributes"][0]) == (None, None, True, [8, 8], True, "Model")'
expect_json 'j["redistributes"][0]["verdict"] == "same" and [w["line"] for w in j["warnings"]] == [3]'

# ---- old form: DM(8)[...] placements, outer-only and inner "[P] -> [R]" lines, plain P ----
run_ok import debugmode "$D/old_dm.txt" --mesh 8 --json
expect_json '[(r["line"], r["src"], r["dst"], r["pytorch_trace"]) for r in j["redistributes"]] == [(2, ["S(0)"], ["R"], None), (7, ["P(sum)"], ["R"], None)]'
expect_json 'j["redistributes"][1]["recorded_collectives"] == [{"kind": "all_reduce", "group_size": None, "group_name": "0"}]'
expect_json '[r["verdict"] for r in j["redistributes"]] == ["same", "same"]'
expect_refused "line 1" "DM(8)" "--mesh 8 would fit" -- import debugmode "$D/old_dm.txt" --mesh 2x4

# ---- 2-D mesh, bf16, [implicit], markers, comments, tensor lists, -> output ----
run_ok import debugmode "$D/tp_2d.txt" --mesh 2x2 --mesh-names dp,tp -o "$TMP/tp" --json
expect_json 'j["ops"] == 3 and [w["line"] for w in j["warnings"]] == [22]'
expect_json '[(r["line"], r["op"], r["arg_index"], r["src"], r["dst"], r["dtype"]) for r in j["redistributes"]] == [(5, "aten::mm", 0, ["S(0)", "S(1)"], ["S(0)", "R"], "bf16"), (15, "aten::add.Tensor", 1, ["P(sum)", "R"], ["S(0)", "S(1)"], "bf16")]'
expect_json 'j["redistributes"][0]["module"] == "Block.attn" and j["redistributes"][1]["module"] == ""'
expect_json 'j["redistributes"][1]["recorded_collectives"] == [{"kind": "reduce_scatter", "group_size": 2, "group_name": "0"}]'
expect_json '[r["verdict"] for r in j["redistributes"]] == ["same", "same"]'
# P(sum)R -> S(0)R -> S(0)S(1) of [16,64]: rank 3 = (dp 1, tp 1) ends with rows 8..15, cols 32..63.
expect_rows "$TMP/tp/rank-3.jsonl" '[(r["local_shape_after"], r["global_offset_after"]) for r in rows if r["type"] == "step_end" and r["redistribute_id"] == 1][-1]' '[[8, 32], [8, 32]]' "rank 3 after the reduce_scatter redistribute"
expect_rows "$TMP/tp/rank-0.jsonl" '[r["rule"].split("; ")[0] for r in rows if r["type"] == "op"]' '["recorded by PyTorch DebugMode (line 3, module Block.attn)", "recorded by PyTorch DebugMode (line 14)", "recorded by PyTorch DebugMode (line 20)"]' "module boundaries in the ops' rules"
# mm and add are shardscope's ops; aten::sum with a positional dim list is not aten::sum's schema.
expect_rows "$TMP/tp/rank-0.jsonl" '[r["rule"].split("; ")[1].split(":")[0] for r in rows if r["type"] == "op"]' '["computed as mm", "computed as add", "opaque"]' "computed and opaque ops"

# ---- non-default shard order S(0)[1]S(0)[0] (mesh dim 1 shards first) ----
# 18 rows: mesh dim 1 splits 9/9, then mesh dim 0 splits each 9 into 5/4. Rank 1 = (0,1) holds
# rows 9..13. PyTorch pops the last-applied mesh dim (0) first: ->RS(0)->RR.
run_ok import debugmode "$D/nested_order.txt" --mesh 2x2 -o "$TMP/order" --json
expect_json 'j["redistributes"][0]["src_text"] == "S(0)[1]S(0)[0]" and j["redistributes"][0]["verdict"] == "same"'
expect_rows "$TMP/order/rank-1.jsonl" '[(r["local_shape_before"], r["global_offset_before"]) for r in rows if r["type"] == "step_begin"][0]' '[[5, 4], [9, 0]]' "rank 1 before, S(0)[1]S(0)[0] of 18 rows"

# ---- tuple repr with _StridedShard ----
run_ok import debugmode "$D/strided.txt" --mesh 2x2 --json
expect_json 'j["redistributes"][0]["src"] == ["_S(0, 2)", "S(0)"] and j["redistributes"][0]["verdict"] == "same"'

# ---- differs: PyTorch gathered mesh dim 0 first; the greedy rule gathers the inner dim first ----
run_ok import debugmode "$D/differs.txt" --mesh 2x2 --json
expect_json '[r["verdict"] for r in j["redistributes"]] == ["differs", "same"]'
expect_json '"S(0)S(1)->RS(1)->RR" in j["redistributes"][0]["reason"] and "S(0)S(1)->S(0)R->RR" in j["redistributes"][0]["reason"]'
run import debugmode "$D/differs.txt" --mesh 2x2 --strict
expect_rc 1
expect_out_contains "differs           1"

# ---- ops shardscope implements (the mapping table of docs/import.md), 1-D mesh of 2 ----
# Recorded outputs follow PyTorch's propagation rules (see tests/golden/import/debugmode/README).
run import debugmode "$D/ops.txt" --mesh 2 -o "$TMP/ops" --json --strict
expect_rc 0
expect_json '[o["shardscope_op"] for o in j["op_results"]] == ["transpose", "transpose", "permute", "sum", "sum", "mean", "softmax", "select", "cat", "stack", "mul", "sub", "bmm", None, None, None, "layer_norm"]'
expect_json '[o["verdict"] for o in j["op_results"]] == ["same"] * 13 + ["opaque"] * 3 + ["same"]'
expect_json 'j["op_runs"] == 14 and all(o["computed"] == (o["verdict"] == "same") for o in j["op_results"])'
expect_json 'j["op_results"][3] == {"line": 4, "op": "aten::sum.dim_IntList", "shardscope_op": "sum", "inputs": ["S(0)"], "recorded_outputs": ["P(sum)"], "shardscope_outputs": ["P(sum)"], "verdict": "same", "reason": "", "computed": True, "trace_id": 3}'
# aten::t of [8,4] S(0) is [4,8] S(1): each rank holds 4 of the 8 columns; stack's [2,4,4] S(2)
# holds 2 of the 4 last-dim entries.
expect_rows "$TMP/ops/rank-1.jsonl" '[(r["name"], o["placements"], o["local_shape"]) for r in rows if r["type"] == "op" and r["name"] in ("aten::t", "aten::stack") for o in r["outputs"]]' '[["aten::t", ["S(1)"], [4, 4]], ["aten::stack", ["S(2)"], [2, 4, 2]]]' "computed op outputs on rank 1"
run check "$TMP/ops"
expect_rc 0
run import debugmode "$D/ops_differs.txt" --mesh 2 --strict
expect_rc 1
expect_out_contains "line 1 (op differs): output 0: PyTorch R, shardscope P(sum)"
expect_out_contains "line 3 (op not_computed)"

# ---- the README's tour: the sample imports and opens ----
# Its embedding gather merges 50 rows over 8 ranks (pytorch#194457); the add's RR -> RP(sum) is an
# op input's redistribute (PyTorch's internal path, no collective); every op but embedding and
# view is shardscope's and keeps the placements PyTorch recorded.
run import debugmode "$ROOT/samples/pytorch/debugmode_tp.txt" --mesh 4x2 --mesh-names dp,tp --flatten all -o "$TMP/tour" --json
expect_rc 0
expect_json '[r["verdict"] for r in j["redistributes"]] == ["corrupting_merge", "same", "same", "same", "same"] and j["replays"] == 5'
expect_json '[o["shardscope_op"] for o in j["op_results"]] == [None, None, "mm", "gelu", "mm", "add", "layer_norm", "sum"]'
expect_json '[o["verdict"] for o in j["op_results"]] == ["opaque"] * 2 + ["same"] * 6 and j["op_runs"] == 6'
run show "$TMP/tour"
expect_rc 0
expect_out_contains "computed as mm"
run check "$TMP/tour"
expect_rc 0

# ---- corrupting merge: [6,4] S(0)S(0) merged all_gather over 4 ranks, 6 % 4 != 0 ----
run_ok import debugmode "$D/corrupting_merge.txt" --mesh 2x2 --flatten all --json
expect_json '[r["verdict"] for r in j["redistributes"]] == ["corrupting_merge", "same"]'
expect_json '"pytorch#194457" in j["redistributes"][0]["reason"] and "extent 6" in j["redistributes"][0]["reason"]'
# Without a flattened mesh shardscope runs two all_gathers where PyTorch merged them.
run import debugmode "$D/corrupting_merge.txt" --mesh 2x2 --json
expect_json '[r["verdict"] for r in j["redistributes"]] == ["corrupting_merge", "differs"]'

# ---- save_logs JSON ----
run_ok import debugmode "$D/save_logs.json" --mesh 8 --json
expect_json 'j["format"] == "save_logs" and j["ops"] == 1'
expect_json '(lambda r: (r["line"], r["arg_index"], r["global_shape"], r["pytorch_trace"], r["verdict"]))(j["redistributes"][0]) == (2, 1, [8, 32], "S(0)->R", "same")'
expect_json 'j["redistributes"][0]["recorded_collectives"] == [{"kind": "all_gather", "group_size": 8, "group_name": "0"}]'
expect_json '[w["line"] for w in j["warnings"]] == [10]'

# ---- a mesh that cannot fit ----
expect_refused "mm_1d.txt: line 5: all_gather over a group of 8 ranks" "--mesh 8 would fit" -- import debugmode "$D/mm_1d.txt" --mesh 4
expect_refused "line 1" "has 1 placements" "a 1-d mesh would fit" -- import debugmode "$D/mm_1d.txt" --mesh 2x4
expect_refused "line 7" "group of 2 ranks" "--mesh 2x2 would fit" -- import debugmode "$D/tp_2d.txt" --mesh 2x4

# ---- truncated and garbage input ----
# Cut inside line 4 (the inner redistribute_input): that line is a warning; the outer record of
# line 3 stands, with no collectives recorded, so it differs from shardscope's one all_gather.
head -c 200 "$D/mm_1d.txt" >"$TMP/truncated.txt"
run_ok import debugmode "$TMP/truncated.txt" --mesh 8 --json
expect_json 'j["ops"] == 2 and len(j["redistributes"]) == 1 and [w["line"] for w in j["warnings"]] == [4]'
expect_json 'j["redistributes"][0]["verdict"] == "differs"'
printf 'hello\nthis is not a dump\n\x01\x02\n' >"$TMP/garbage.txt"
expect_refused "no DTensor content" -- import debugmode "$TMP/garbage.txt" --mesh 8
head -c 300 "$D/save_logs.json" >"$TMP/truncated.json"
expect_refused "not valid JSON" -- import debugmode "$TMP/truncated.json" --mesh 8
expect_refused "cannot open dump" "No such file or directory" -- import debugmode "$TMP/missing.txt" --mesh 8

# ---- plan and scenarios accept placements as PyTorch prints them, order included ----
run_ok plan --mesh 2x2 --shape 18x4 --from 'S(0)[1]S(0)[0]' --to RR --json
expect_json 'j["notation"] == "S(0)[1]S(0)[0]->RS(0)->RR"'
run plan --mesh 2x2 --shape 18x4 --from 'S(0),S(0)' --src-order '0:1,0' --to RR --json
expect_json 'j["notation"] == "S(0)[1]S(0)[0]->RS(0)->RR"'
run_ok plan --mesh 2x2 --shape 8x8 --from 'P(sum)R' --to 'S(0)S(1)' --json
expect_json 'j["notation"] == "P(sum)R->S(0)R->S(0)S(1)"'
expect_refused "--src-order" "contradicts" -- plan --mesh 2x2 --shape 18x4 --from 'S(0)[1]S(0)[0]' --src-order '0:0,1' --to RR
cat >"$TMP/order.json" <<'EOF'
{"mesh": [2, 2], "tensors": {"x": {"shape": [18, 4], "placements": "S(0)[1]S(0)[0]"}},
 "steps": [{"redistribute": "x", "to": "RS(0)"}]}
EOF
run_ok run "$TMP/order.json" --verify

# ---- newer PyTorch's literal _StridedShard notation (issue 36): "_S(0, 3)" without a position,
# and plan states whose positions count the mesh dims a _StridedShard left in the list. The dump
# holds the issue's two cases as PyTorch plans them (mesh 2x2x2, 31x13x11): the first through
# four all_to_alls and an all_gather (shardscope plans three all_gathers: differs, see
# docs/planning.md), the second as shardscope plans it (same).
run_ok import debugmode "$D/strided_literal.txt" --mesh 2x2x2 --json
expect_json '[r["verdict"] for r in j["redistributes"]] == ["differs", "same"]'
expect_json '[c["kind"] for c in j["redistributes"][0]["recorded_collectives"]] == ["all_to_all", "all_to_all", "all_gather", "all_to_all", "all_to_all"]'
expect_json 'j["redistributes"][1]["shardscope_notation"] == "S(0)[0]S(0)[1]R->S(0)_S(1, 5)R->R_S(1, 5)R->R_S(1, 5)S(0)"'
run_ok import debugmode "$D/strided_literal.txt" --mesh 2x2x2 -o "$TMP/strided_literal"
run_ok check "$TMP/strided_literal"
# The source as PyTorch prints it is accepted on the command line too ([2] for the _S is implied).
run_ok plan --mesh 2x2x2 --shape 31x13x11 --from 'S(0)[0]S(0)[1]_S(0, 3)' --to 'RS(0)[0]S(0)[1]' --json
expect_json 'j["notation"].startswith("S(0)[0]S(0)[1]_S(0, 3)->")'

finish
