#!/usr/bin/env bash
# Issue 16: every printed plan runs; _StridedShard with shard orders; Partial targets; the trace's
# shard order text; one step numbering. Expected values come from PyTorch's rules
# (docs/pytorch-semantics.md, sections cited) or hand derivation.
source "$(dirname "$0")/lib.sh" "$@"

# --- 1. Forced greedy with _StridedShard (§2: has_strided_shard picks the graph planner before the
# flag is read; issue 36: planned by the graph planner and the override named). The issue's case:
# mesh [2,2,4], 5 i32, S(0),P(max),S(0) -> _S(0, 8),_S(0, 4),S(0).
run_ok plan --mesh 2x2x4 --shape 5 --dtype i32 --from 'S(0),P(max),S(0)' --to '_S(0, 8),_S(0, 4),S(0)' --planner greedy
expect_out_contains "planner: graph (--planner greedy overridden by PyTorch's rule: strided shard forces the graph planner"
cat >"$TMP/greedy.json" <<'JSON'
{"mesh": [2, 2, 4], "tensors": {"x": {"shape": [5], "dtype": "i32", "placements": "S(0),P(max),S(0)"}},
 "steps": [{"redistribute": "x", "to": "_S(0, 8),_S(0, 4),S(0)", "planner": "greedy"}]}
JSON
run_ok run "$TMP/greedy.json" --verify
expect_out_contains 'verified'
sed -e 's/, "planner": "greedy"//' "$TMP/greedy.json" >"$TMP/auto.json"
run_ok run "$TMP/auto.json" --verify
expect_out_contains 'verified'

# --- 2. Literal _StridedShard with an explicit order (§4 cases 7, 8 and 11; hand derivation in
# tests/engine/make_plan_test.cpp): mesh 2x2x2, 31x13x11, S(0),S(0),_S(0,3) order 0:0,1,2 ->
# R,S(0),S(0) order 0:1,2. _S->R first (the newest of tensor dim 0), then dims 1 and 0 gathered,
# then dims 1 and 2 chunked in the target's order. Notation as PyTorch's stringify prints it: no
# position on _S, and the _S source pops nothing from tensor dim 0's list.
run_ok plan --mesh 2x2x2 --shape 31x13x11 --from 'S(0),S(0),_S(0,3)' --src-order '0:0,1,2' --to 'R,S(0),S(0)' --dst-order '0:1,2'
expect_out_contains 'notation: S(0)[0]S(0)[1]_S(0, 3)->S(0)[0]S(0)[1]R->S(0)[0]RR->RRR->RS(0)[1]R->RS(0)[1]S(0)[2]'
expect_out_contains 'planner: graph (strided shard)'
cat >"$TMP/literal.json" <<'JSON'
{"mesh": [2, 2, 2], "tensors": {"x": {"shape": [31, 13, 11], "dtype": "i32",
   "placements": "S(0),S(0),_S(0,3)", "order": "0:0,1,2"}},
 "steps": [{"redistribute": "x", "to": "R,S(0),S(0)", "order": "0:1,2"}]}
JSON
run_ok run "$TMP/literal.json" --verify --trace "$TMP/literal"
expect_out_contains 'verified'
# The trace keeps the order in PyTorch's notation (format_shard_order_str, §9).
CHECKS=$((CHECKS + 1))
grep -q '"src_order":"S(0)\[0\]S(0)\[1\]_S(0, 3)\[2\]"' "$TMP/literal/rank-0.jsonl" ||
  fail "trace src_order is not S(0)[0]S(0)[1]_S(0, 3)[2]: $(grep -o '"src_order":"[^"]*"' "$TMP/literal/rank-0.jsonl")"

# Layout of literal _S with an order (§8.1-8.2): 31 rows, mesh dims 0 and 1 chunk 31 -> 16 -> 8 for
# rank 0; _S(0, 3) on 2 ranks splits those 8 into pieces 3,3,2 and takes chunk 0 of each:
# [0,2)+[3,5)+[6,7). With order 0:2,0,1 the _S splits all 31 first: pieces 11,11,9, chunk 0 of
# each over 2 ranks is 6,6,5 rows, then S(0) twice: rank 0 keeps the first 17 -> 9 -> 5 of them.
run_ok layout --mesh 2x2x2 --shape 31 --placements 'S(0),S(0),_S(0,3)' --order '0:0,1,2' --json
expect_json 'j["ranks"][0]["indices"] == [[[0,2],[3,5],[6,7]]]'
run_ok layout --mesh 2x2x2 --shape 31 --placements 'S(0),S(0),_S(0,3)' --order '0:2,0,1' --json
expect_json 'j["ranks"][0]["indices"] == [[[0,5]]]'

# --- 3. Partial targets (§7.3, API): the public DTensor.redistribute refuses R -> P.
expect_refused 'mesh dim 0: Can not redistribute from R to P(sum), redistributing to Partial is for internal use only!' -- plan --mesh 2x2 --shape 4x4 --from 'R,S(0)' --to 'P(sum),S(0)'
run_ok plan --mesh 2x2 --shape 4x4 --from 'R,S(0)' --to 'P(sum),S(0)' --allow-partial-target
expect_out_contains 'notation: RS(0)->P(sum)S(0)'
expect_out_contains 'internal redistribute to Partial (public API refuses it)'
# Keeping the same Partial is no redistribute to Partial (T0 test_redistribute_to_partial).
run_ok plan --mesh 2x2 --shape 4x4 --from 'P(sum),S(0)' --to 'P(sum),R'
cat >"$TMP/partial.json" <<'JSON'
{"mesh": [2, 2], "tensors": {"x": {"shape": [4, 4], "dtype": "i32", "placements": "R,S(0)"}},
 "steps": [{"redistribute": "x", "to": "P(sum),S(0)", "allow_partial_target": true}]}
JSON
run_ok run "$TMP/partial.json" --verify
expect_out_contains 'verified'
expect_out_contains '(internal redistribute to Partial: the public API refuses it)'
sed -e 's/, "allow_partial_target": true//' "$TMP/partial.json" >"$TMP/public.json"
expect_refused 'redistributing to Partial is for internal use only!' -- run "$TMP/public.json" --verify

# --- 4. A non-default order in a run's trace is PyTorch's notation: 2x2, order 0:1,0 is
# S(0)[1]S(0)[0] (k = the mesh dim's position in the order).
cat >"$TMP/order.json" <<'JSON'
{"mesh": [2, 2], "tensors": {"x": {"shape": [8, 6], "placements": "S(0),S(0)", "order": "0:1,0"}},
 "steps": [{"redistribute": "x", "to": "R,R"}]}
JSON
run_ok run "$TMP/order.json" --verify --trace "$TMP/order"
CHECKS=$((CHECKS + 1))
grep -q '"src_order":"S(0)\[1\]S(0)\[0\]"' "$TMP/order/rank-0.jsonl" ||
  fail "trace src_order is not S(0)[1]S(0)[0]: $(grep -o '"src_order":"[^"]*"' "$TMP/order/rank-0.jsonl")"

# --- 5. One numbering: steps from 0 in plan's table, as in the trace and show.
run_ok plan --mesh 2x2 --shape 8x8 --from 'S(0),S(0)' --to 'S(1),S(1)'
CHECKS=$((CHECKS + 1))
first=$(printf '%s\n' "$OUT" | sed -n '/^  step  mesh dims/{n;p;}' | awk '{print $1}')
[ "$first" = "0" ] || fail "plan's first step is numbered '$first', expected 0"

finish
