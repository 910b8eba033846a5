#!/usr/bin/env bash
# `shardscope plan`: notation strings, collective counts, logical shapes, costs, merges and
# layouts. Every expected value is derived by hand from PyTorch's rules or quoted from the
# worked examples in docs/pytorch-semantics.md (section numbers cited).
source "$(dirname "$0")/lib.sh" "$@"

# §3 table: (2,2) S0S0 -> S1S1, greedy. Pass 1: mesh dim 1 misaligned -> S0->R; mesh dim 0
# S0->S1 (a2a); pass 2: mesh dim 1 R->S1 (local). AG 1, a2a 1.
run_ok plan --mesh 2x2 --shape 8x8 --from 'S(0),S(0)' --to 'S(1),S(1)'
expect_out_contains 'notation: S(0)[0]S(0)[1]->S(0)R->S(1)R->S(1)[0]S(1)[1]'
expect_out_contains 'planner: greedy'
expect_out_contains 'total: 2 collectives (all_gather 1, all_to_all 1)'
run_ok plan --mesh 2x2 --shape 8x8 --from 'S(0),S(0)' --to 'S(1),S(1)' --json
expect_json 'j["planner"] == "greedy" and j["notation"] == "S(0)[0]S(0)[1]->S(0)R->S(1)R->S(1)[0]S(1)[1]"'
expect_json '[(t["mesh_dims"], t["src"], t["dst"], t["comm"]) for t in j["transforms"]] == [([1],"S(0)","R","all_gather"), ([0],"S(0)","S(1)","all_to_all"), ([1],"R","S(1)","local")]'
# Logical shapes (rank 0): mesh dim 0 sees the full 8x8, mesh dim 1 sees dim 0 halved by mesh dim 0.
expect_json '[t["logical_shape"] for t in j["transforms"]] == [[4,8],[8,8],[4,8]]'
expect_json 'j["comm_counts"] == {"all_gather":1,"all_reduce":0,"reduce_scatter":0,"all_to_all":1,"total":2}'
expect_json 'j["skipped_merges"] == [] and all(not t["flattened"] and t["avg_scale"] == 1 for t in j["transforms"])'
# Layouts of every rank: rank 3 = coord (1,1) holds rows [6,8) of S0S0 and cols [6,8) of S1S1.
expect_json 'len(j["ranks"]) == 4 and j["ranks"][3]["coord"] == [1,1]'
expect_json 'j["ranks"][3]["src"]["local_shape"] == [2,8] and j["ranks"][3]["src"]["global_offset"] == [6,0]'
expect_json 'j["ranks"][3]["dst"]["local_shape"] == [8,2] and j["ranks"][3]["dst"]["global_offset"] == [0,6]'
expect_json 'j["ranks"][3]["src"]["indices"] == [[[6,8]],[[0,8]]] and j["ranks"][3]["dst"]["indices"] == [[[0,8]],[[6,8]]]'

# §3 table: (2,2,2) S0S1S0 -> S1S0S0: AG 2, a2a 1. The two all_gathers (S0->R, S1->R) have
# different src placements, so they are not one merge group (R-new are_placements_mergeable).
run_ok plan --mesh 2x2x2 --shape 8x8x8 --from 'S(0),S(1),S(0)' --to 'S(1),S(0),S(0)' --json
expect_json 'j["notation"] == "S(0)[0]S(1)S(0)[1]->S(0)S(1)R->S(0)RR->S(1)RR->S(1)S(0)R->S(1)S(0)[0]S(0)[1]"'
expect_json 'j["comm_counts"]["all_gather"] == 2 and j["comm_counts"]["all_to_all"] == 1 and j["comm_counts"]["total"] == 3'
expect_json 'j["skipped_merges"] == []'

# §3 table: (2,2,2) S1RS0 -> RS0S0 and S0S0S1 -> S0S1S2.
run_ok plan --mesh 2x2x2 --shape 8x8x8 --from 'S(1),R,S(0)' --to 'R,S(0),S(0)' --json
expect_json 'j["notation"] == "S(1)RS(0)->S(1)RR->S(1)S(0)R->RS(0)R->RS(0)[0]S(0)[1]" and j["comm_counts"]["all_gather"] == 2'
run_ok plan --mesh 2x2x2 --shape 8x8x8 --from 'S(0),S(0),S(1)' --to 'S(0),S(1),S(2)' --json
expect_json 'j["notation"] == "S(0)[0]S(0)[1]S(1)->S(0)[0]S(0)[1]S(2)->S(0)S(1)S(2)" and j["comm_counts"]["all_to_all"] == 2'

# §3: a misaligned Partial: (P,P,S0) -> (S0,S0,S0) on (2,2,2) = AG, AR, RS, 2 local chunks (T1).
run_ok plan --mesh 2x2x2 --shape 8x8x8 --from 'P,P,S(0)' --to 'S(0),S(0),S(0)' --json
expect_json 'j["notation"] == "P(sum)P(sum)S(0)->P(sum)P(sum)R->P(sum)RR->S(0)RR->S(0)[0]S(0)[1]R->S(0)[0]S(0)[1]S(0)[2]"'
expect_json 'j["comm_counts"] == {"all_gather":1,"all_reduce":1,"reduce_scatter":1,"all_to_all":0,"total":3}'

# §3: Partials only: everything in pass 2, ascending: [P,P] -> [S0,S0] is (0,P->S0),(1,P->S0).
run_ok plan --mesh 2x2 --shape 8x8 --from 'P,P' --to 'S(0),S(0)' --no-optimize --json
expect_json '[(t["mesh_dims"], t["src"], t["dst"], t["comm"]) for t in j["transforms"]] == [([0],"P(sum)","S(0)","reduce_scatter"), ([1],"P(sum)","S(0)","reduce_scatter")]'
expect_json 'j["optimized"] == False'

# §4 verified: graph on (2,2,2), (8,8,8) f32, S0[0,1,2] -> S1[0,1,2] = 3 AG, about 21.62 us.
# By hand (§5): one host, bw 87.7 GB/s, lat 0.6 us; bytes 4*512/8 = 256 B, doubled per S->R:
# 7.2 + 256B/87.7 + 7.2 + 512B/87.7 + 7.2 + 1024B/87.7 (B = 1e6/2^30 us per GB-byte) = 21.619 us.
run_ok plan --mesh 2x2x2 --shape 8x8x8 --from 'S(0),S(0),S(0)' --to 'S(1),S(1),S(1)' --planner graph --json
expect_json 'j["planner"] == "graph"'
expect_json 'j["notation_unoptimized"] == "S(0)[0]S(0)[1]S(0)[2]->S(0)[0]S(0)[1]R->S(0)RR->RRR->S(1)RR->S(1)[0]S(1)[1]R->S(1)[0]S(1)[1]S(1)[2]"'
expect_json 'j["comm_counts_unoptimized"]["all_gather"] == 3 and j["comm_counts_unoptimized"]["total"] == 3'
expect_json 'abs(j["cost_us"] - 21.619) < 0.01'
# Three descending all_gathers S0->R with no flattened mesh: one skipped merge, no_flattened_mesh.
expect_json '[(s["mesh_dims"], s["comm"], s["reason"]) for s in j["skipped_merges"]] == [([2,1,0], "all_gather", "no_flattened_mesh")]'
# Greedy on the same: 2 AG + 1 a2a (§4 "Greedy, for comparison").
run_ok plan --mesh 2x2x2 --shape 8x8x8 --from 'S(0),S(0),S(0)' --to 'S(1),S(1),S(1)' --planner greedy --no-optimize --json
expect_json '"->S(0)RR->S(1)RR->" in j["notation"] and j["comm_counts"]["all_gather"] == 2 and j["comm_counts"]["all_to_all"] == 1'

# §2 + §4 verified: a non-default source order picks the graph planner:
# S0[1,0,2] -> R S0[1,2] = S(0)[1]S(0)[0]S(0)[2]->S(0)[1]S(0)[0]R->RS(0)R->RS(0)[0]S(0)[1].
run_ok plan --mesh 2x2x2 --shape 8x8x8 --from 'S(0),S(0),S(0)' --src-order '0:1,0,2' --to 'R,S(0),S(0)'
expect_out_contains 'planner: graph'
expect_out_contains 'S(0)[1]S(0)[0]S(0)[2]->S(0)[1]S(0)[0]R->RS(0)R->RS(0)[0]S(0)[1]'
# §4 verified: S0[0,1]R -> R S1[1] S0[2].
run_ok plan --mesh 2x2x2 --shape 8x8x8 --from 'S(0),S(0),R' --to 'R,S(1),S(0)' --planner graph --json
expect_json 'j["notation"] == "S(0)[0]S(0)[1]R->S(0)RR->S(0)S(1)R->RS(1)R->RS(1)S(0)"'

# §6.1 + T1 test_debug_mode_shows_optimized_trace: with a flattened (dp,tp) mesh, S0S0 -> RR
# on an even shape is one flattened all_gather, notated "-->".
run_ok plan --mesh 2x2 --mesh-names dp,tp --flatten all --shape 8x3 --from 'S(0),S(0)' --to 'R,R' --json
expect_json 'j["notation"] == "S(0)[0]S(0)[1]-->RR" and j["notation_unoptimized"] == "S(0)[0]S(0)[1]->S(0)R->RR"'
expect_json 'len(j["transforms"]) == 1 and j["transforms"][0]["flattened"] and j["transforms"][0]["mesh_dims"] == [0,1] and j["transforms"][0]["comm"] == "all_gather"'
expect_json 'j["transforms"][0]["mesh_dim_names"] == ["dp","tp"] and j["transforms"][0]["group_size"] == 4'
expect_json 'j["comm_counts"]["all_gather"] == 1 and j["comm_counts_unoptimized"]["all_gather"] == 2'
run_ok plan --mesh 2x2 --mesh-names dp,tp --flatten all --shape 8x3 --from 'S(0),S(0)' --to 'R,R'
expect_out_contains 'made: 2 all_gather on mesh dims dp,tp -> one flattened all_gather over 4 ranks'
expect_out_contains 'notation: S(0)[0]S(0)[1]-->RR'
# Without a flattened mesh the merge is not made: no_flattened_mesh, dims in emission order 1,0.
run_ok plan --mesh 2x2 --mesh-names dp,tp --shape 8x3 --from 'S(0),S(0)' --to 'R,R' --json
expect_json '[(s["mesh_dims"], s["comm"], s["reason"]) for s in j["skipped_merges"]] == [([1,0], "all_gather", "no_flattened_mesh")]'
expect_json 'j["notation"] == "S(0)[0]S(0)[1]->S(0)R->RR" and all(s["hint"] for s in j["skipped_merges"])'

# §6.3 #194457: (5,3) on 2x2, S0S0 -> RR. Nested sizes 3|2 then 2,1|1,1 are uneven (5 % 4 != 0);
# PyTorch merges and corrupts data, shardscope refuses and says so.
run_ok plan --mesh 2x2 --mesh-names dp,tp --flatten all --shape 5x3 --from 'S(0),S(0)' --to 'R,R' --json
expect_json '[(s["mesh_dims"], s["comm"], s["reason"], s["differs_from_pytorch"]) for s in j["skipped_merges"]] == [([1,0], "all_gather", "uneven_tensor_shape", True)]'
expect_json 'j["notation"] == "S(0)[0]S(0)[1]->S(0)R->RR"'
expect_json '[t["logical_shape"] for t in j["transforms"]] == [[3,3],[5,3]]'
run_ok plan --mesh 2x2 --mesh-names dp,tp --flatten all --shape 5x3 --from 'S(0),S(0)' --to 'R,R'
expect_out_contains 'not made: 2 all_gather on mesh dims tp,dp: uneven_tensor_shape'
expect_out_contains 'differs from PyTorch'
expect_out_contains '#194457'

# §6.1 avg_scale: (P(avg),P(avg),P(sum)) -> RRR on 2x2x2 with flattened meshes: one all_reduce
# (sum over 8) divided by 4.
run_ok plan --mesh 2x2x2 --mesh-names a,b,c --flatten all --shape 8x8 --from 'P(avg),P(avg),P(sum)' --to 'R,R,R' --json
expect_json 'len(j["transforms"]) == 1 and j["transforms"][0]["comm"] == "all_reduce" and j["transforms"][0]["avg_scale"] == 4 and j["transforms"][0]["src"] == "P(sum)"'
expect_json 'j["comm_counts"]["all_reduce"] == 1 and j["comm_counts"]["total"] == 1'

# --rank: logical shapes are per rank. (5,4) on 2x2 S0S0 -> S1S1: mesh dim 1's transform sees
# dim 0 chunked by mesh dim 0: 3 rows at coord 0 (rank 0), 2 rows at coord 1 (rank 2).
run_ok plan --mesh 2x2 --shape 5x4 --from 'S(0),S(0)' --to 'S(1),S(1)' --rank 0 --json
expect_json 'j["rank"] == 0 and j["transforms"][0]["logical_shape"] == [3,4]'
run_ok plan --mesh 2x2 --shape 5x4 --from 'S(0),S(0)' --to 'S(1),S(1)' --rank 2 --json
expect_json 'j["rank"] == 2 and j["coord"] == [1,0] and j["transforms"][0]["logical_shape"] == [2,4]'
run_ok plan --mesh 2x2 --shape 5x4 --from 'S(0),S(0)' --to 'S(1),S(1)' --rank 2
expect_out_contains 'rank 2 at (1,0)'

# Size-1 mesh dim (PyTorch #163742): a transform over it runs no collective.
run_ok plan --mesh 1x4 --shape 8x8 --from 'S(0),S(1)' --to 'R,R' --json
expect_json 'j["comm_counts"]["all_gather"] == 1 and j["comm_counts"]["total"] == 1'
expect_json '[t["runs"] for t in j["transforms"] if t["mesh_dims"] == [0]] == [False]'

# §5 cost by hand: mesh 4, 1024x1024 f32, S0 -> R. bytes = 4 MiB/4 = 2^-10 GB, S->R * 4 = 2^-8;
# 6.6 + 3*0.6 + (2^-8 * 3/4)/87.7*1e6 = 41.806 us.
run_ok plan --mesh 4 --shape 1024x1024 --from 'S(0)' --to 'R' --json
expect_json 'abs(j["cost_us"] - 41.806) < 0.01 and abs(j["transforms"][0]["cost_us"] - 41.806) < 0.01'
# Across hosts (mesh 16 > 8 devices per host): bw 87.7*0.22, lat 2.7:
# 6.6 + 15*2.7 + (2^-8 * 15/16)/19.294*1e6 = 236.906 us; with 16 devices per host:
# 6.6 + 15*0.6 + (2^-8 * 15/16)/87.7*1e6 = 57.357 us.
run_ok plan --mesh 16 --shape 1024x1024 --from 'S(0)' --to 'R' --json
expect_json 'abs(j["cost_us"] - 236.906) < 0.01'
run_ok plan --mesh 16 --shape 1024x1024 --from 'S(0)' --to 'R' --devices-per-host 16 --json
expect_json 'abs(j["cost_us"] - 57.357) < 0.01'

# §10 backward: forward R -> S0 has a backward S0 -> R (1 all_gather); forward S0 -> R has
# backward R -> S0 (0 comms); forward P -> R has R -> P normalized to R (nothing to do).
run_ok plan --mesh 4 --shape 8x8 --from 'R' --to 'S(0)' --backward --json
expect_json 'j["backward"] and j["src"]["placements"] == "S(0)" and j["dst"]["placements"] == "R"'
expect_json 'j["comm_counts"]["all_gather"] == 1 and j["comm_counts"]["total"] == 1'
expect_json 'j["forward"]["src"]["placements"] == "R" and j["forward"]["dst"]["placements"] == "S(0)"'
run_ok plan --mesh 4 --shape 8x8 --from 'S(0)' --to 'R' --backward --json
expect_json 'j["comm_counts"]["total"] == 0 and [t["comm"] for t in j["transforms"]] == ["local"]'
run_ok plan --mesh 4 --shape 8x8 --from 'P' --to 'R' --backward --json
expect_json 'j["dst"]["placements"] == "R" and j["transforms"] == [] and j["comm_counts"]["total"] == 0'
run_ok plan --mesh 4 --shape 8x8 --from 'P' --to 'R' --backward
expect_out_contains 'backward: the gradient redistribute of the forward P(sum) -> R'

# Text output has every section; mesh names appear in the mesh-dim column; all ranks listed.
run_ok plan --mesh 2x2x2 --mesh-names dp,tp,cp --flatten all --shape 8x8x8 --from 'S(0),S(0),R' --to 'R,S(1),S(0)'
for needle in 'planner: ' 'notation: ' 'transforms:' 'merges:' 'layouts (every rank' 'coord (dp,tp,cp)' \
  'src -> dst' 'logical shape' 'cost (us)' 'S(0) -> R'; do
  expect_out_contains "$needle"
done
# Rank 7 = coord (1,1,1): src S0S0R holds rows [6,8); dst R,S1,S0 holds cols [4,8), rows [4,8).
expect_out_contains '7     (1,1,1)'
expect_out_contains '[6,8) x [0,8) x [0,8)'
expect_out_contains '[4,8) x [4,8) x [0,8)'

run_ok plan --help
expect_out_contains 'Examples:'
for flag in --mesh --shape --from --to --dtype --src-order --dst-order --mesh-names --planner --flatten \
  --chunking --devices-per-host --no-optimize --backward --rank --json; do
  expect_out_contains "$flag"
done

# Issue 36: the graph planner's _StridedShard moves (docs/planning.md, derivations in
# tests/engine/make_plan_test.cpp). Case 9, S(0) -> _S(1, 5) by all_to_all, PyTorch's string:
run_ok plan --mesh 2x2x2 --shape 31x13x11 --from 'S(0),S(0),R' --src-order '0:0,1' --to 'R,_S(1,5),S(0)' --dst-order '0:2;1:1'
expect_out_contains 'notation: S(0)[0]S(0)[1]R->S(0)_S(1, 5)R->R_S(1, 5)R->R_S(1, 5)S(0)'
expect_out_contains 'total: 2 collectives (all_gather 1, all_to_all 1)'
# --planner greedy with a _StridedShard (or a non-default order) is planned by the graph planner,
# and the output names the rule that overrode the request.
run_ok plan --mesh 2x2x2 --shape 31x13x11 --from 'S(0),S(0),R' --src-order '0:0,1' --to 'R,_S(1,5),S(0)' --dst-order '0:2;1:1' --planner greedy --json
expect_json 'j["planner"] == "graph" and j["planner_reason"].startswith("--planner greedy overridden by PyTorch") and "strided shard forces the graph planner" in j["planner_reason"]'
expect_json 'j["notation"] == "S(0)[0]S(0)[1]R->S(0)_S(1, 5)R->R_S(1, 5)R->R_S(1, 5)S(0)"'
run_ok plan --mesh 2x2 --shape 8x8 --from 'S(0),S(0)' --src-order '0:1,0' --to 'R,R' --planner greedy
expect_out_contains "planner: graph (--planner greedy overridden by PyTorch's rule: non-default shard order forces the graph planner"
expect_out_contains 'notation: S(0)[1]S(0)[0]->RS(0)->RR'
# Case 7, _S(0, 2) -> S(1) by all_to_all; case 10, P(sum) -> _S(1, 2) by reduce_scatter.
run_ok plan --mesh 2x2x2 --shape 9x6x5 --dtype f64 --from '_S(0,2),R,S(2)' --src-order '0:0;2:2' --to 'S(1),R,S(2)' --json
expect_json '[(t["src"], t["dst"], t["comm"]) for t in j["transforms"]] == [("_S(0, 2)", "S(1)", "all_to_all")]'
run_ok plan --mesh 2x2x2 --shape 12x10 --dtype i32 --from 'P(sum),R,S(0)' --to '_S(1,2),R,S(0)' --dst-order '0:2;1:0' --json
expect_json '[(t["src"], t["dst"], t["comm"]) for t in j["transforms"]] == [("P(sum)", "_S(1, 2)", "reduce_scatter")]'
# Every one of them runs and verifies (local backend; mpi.samples runs the sample under mpirun).
run_ok run "$ROOT/samples/strided_moves.json" --verify
expect_out_contains 'graph: S(0)[0]S(0)[1]R->S(0)_S(1, 5)R->R_S(1, 5)R->R_S(1, 5)S(0)'
CHECKS=$((CHECKS + 1))
[ "$(grep -c verified <<<"$OUT")" -eq 4 ] || fail "strided_moves.json: not every step verified: $OUT"
# A plan PyTorch runs but shardscope refuses (uneven _StridedShard, PyTorch #168134) shows
# PyTorch's plan, why, and what is safe.
expect_refused 'refused on purpose: PyTorch runs the graph plan RR->' -- plan --mesh 4x2 --shape 9 --from 'R,R' --to '_S(0,2),S(0)'
CHECKS=$((CHECKS + 1))
case "$ERR" in *"safe: give the shard order explicitly"*) ;; *) fail "no safe alternative named: $ERR" ;; esac

finish
