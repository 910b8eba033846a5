#!/usr/bin/env bash
# `shardscope layout`: text goldens and JSON fields, all derived by hand from PyTorch's
# compute_local_shape_and_global_offset (torch.chunk, nested shards left to right or in shard
# order, empty shard offset = global extent), _StridedShard and ShardTensor's chunking.
source "$(dirname "$0")/lib.sh" "$@"

# U1: (18,2) on a (4,2) mesh, [S0,S0]. Dim 0 chunks 5,5,5,3; each split again over 2.
run_ok layout --mesh 4x2 --shape 18x2 --placements 'S(0),S(0)'
expect_golden layout_u1_18x2_on_4x2.txt

# Same placements, order 0:1,0 (mesh dim 1 shards first): 9,9 then 3,3,3,0 (empty tail at 18).
run_ok layout --mesh 4x2 --shape 18x2 --placements 'S(0),S(0)' --order '0:1,0'
expect_golden layout_18x2_on_4x2_order_1_0.txt

# ShardTensor compute_split_shapes: 5 over 4 is 1,1,1,2 (torch.chunk would give 2,2,1,0).
run_ok layout --mesh 4 --mesh-names dp --shape 5 --placements 'S(0)' --chunking physicsnemo
expect_golden layout_5_on_4_physicsnemo.txt

# torch.chunk: 5 over 4 is 2,2,1,0; the empty shard's offset is the extent 5.
run_ok layout --mesh 4 --shape 5 --placements 'S(0)' --json
expect_json '[r["local_shape"] for r in j["ranks"]] == [[2],[2],[1],[0]]'
expect_json '[r["global_offset"] for r in j["ranks"]] == [[0],[2],[4],[5]]'
expect_json '[r["indices"] for r in j["ranks"]] == [[[[0,2]]],[[[2,4]]],[[[4,5]]],[[]]]'
expect_json '[r["coord"] for r in j["ranks"]] == [[0],[1],[2],[3]] and [r["rank"] for r in j["ranks"]] == [0,1,2,3]'

# U1 JSON: the same (18,2) example, every field.
run_ok layout --mesh 4x2 --shape 18x2 --placements 'S(0),S(0)' --json
expect_json '[r["local_shape"] for r in j["ranks"]] == [[3,2],[2,2],[3,2],[2,2],[3,2],[2,2],[2,2],[1,2]]'
expect_json '[r["global_offset"][0] for r in j["ranks"]] == [0,3,5,8,10,13,15,17]'
expect_json 'j["ranks"][7]["coord"] == [3,1] and j["ranks"][7]["indices"] == [[[17,18]],[[0,2]]]'
expect_json 'j["mesh"]["shape"] == [4,2] and j["shape"] == [18,2] and j["placements"] == "S(0),S(0)"'

# _StridedShard (U1): arange(8) with _S(0, 2) on 4 ranks is [0,4 | 1,5 | 2,6 | 3,7].
run_ok layout --mesh 4 --shape 8 --placements '_S(0, 2)' --json
expect_json '[r["indices"][0] for r in j["ranks"]] == [[[0,1],[4,5]],[[1,2],[5,6]],[[2,3],[6,7]],[[3,4],[7,8]]]'
expect_json '[r["local_shape"] for r in j["ranks"]] == [[2]]*4 and [r["global_offset"] for r in j["ranks"]] == [[0],[1],[2],[3]]'
run_ok layout --mesh 4 --shape 8 --placements '_S(0,2)'
expect_out_contains '[0,1)+[4,5)'

# U1: (4,2) mesh, [_S(0,2), S(0)] on (15,5): dim-0 sizes 2,2,2,2,2,2,2,1, offsets 0,8,2,10,4,12,6,14.
run_ok layout --mesh 4x2 --shape 15x5 --placements '_S(0,2),S(0)' --json
expect_json '[r["local_shape"][0] for r in j["ranks"]] == [2,2,2,2,2,2,2,1]'
expect_json '[r["global_offset"][0] for r in j["ranks"]] == [0,8,2,10,4,12,6,14]'

# T0: on a (4,2) mesh [_S(0,2), S(0)] holds the same data as [S0,S0] with order 0:1,0.
run_ok layout --mesh 4x2 --shape 16x2 --placements 'S(0),S(0)' --order '0:1,0' --json
ORDERED=$OUT
run_ok layout --mesh 4x2 --shape 16x2 --placements '_S(0,2),S(0)' --json
CHECKS=$((CHECKS + 1))
"$PYTHON" -c '
import json, sys
a = json.loads(sys.argv[1]); b = json.loads(sys.argv[2])
flat = lambda r: sorted(i for b_, e in r["indices"][0] for i in range(b_, e))
sys.exit(0 if [flat(r) for r in a["ranks"]] == [flat(r) for r in b["ranks"]] else 1)' "$ORDERED" "$OUT" ||
  fail "[_S(0,2),S(0)] and S0S0 with order 0:1,0 hold different rows"

# Zero-size dim: 0x8 on 2 ranks: every shard empty along dim 0, offset = extent 0.
run_ok layout --mesh 2 --shape 0x8 --placements 'S(0)' --json
expect_json '[r["local_shape"] for r in j["ranks"]] == [[0,8],[0,8]] and [r["global_offset"] for r in j["ranks"]] == [[0,0],[0,0]]'

# Replicate and Partial do not split; a 3-D mesh with named dims.
run_ok layout --mesh 2x2x2 --mesh-names dp,tp,cp --shape 4x6 --placements 'R,S(1),P(sum)' --json
expect_json '[r["local_shape"] for r in j["ranks"]] == [[4,3],[4,3],[4,3],[4,3]]*2'
expect_json '[r["global_offset"] for r in j["ranks"]] == [[0,0],[0,0],[0,3],[0,3]]*2'
expect_json 'j["mesh"]["dim_names"] == ["dp","tp","cp"]'

# --ranks auto (the default): a mesh above 1024 ranks prints ranks 0-7 and the last, and says so.
# 2^20 ranks, S(0) over 2^21 rows: torch.chunk gives every rank 2 rows, rank r at offset 2r.
run_ok layout --mesh 1048576 --shape 2097152 --placements 'S(0)'
expect_out_contains '9 of 1048576 ranks shown'
expect_out_contains '1048575  (1048575)  2            (2097150)      [2097150,2097152)'
run_ok layout --mesh 1048576 --shape 2097152 --placements 'S(0)' --json
expect_json '[r["rank"] for r in j["ranks"]] == [0,1,2,3,4,5,6,7,1048575]'
expect_json '[r["global_offset"] for r in j["ranks"]] == [[2*r] for r in [0,1,2,3,4,5,6,7,1048575]]'
# Up to 1024 ranks auto prints every rank, with no note.
run_ok layout --mesh 1024 --shape 2048 --placements 'S(0)' --json
expect_json 'len(j["ranks"]) == 1024'

# --help has examples.
run_ok layout --help
expect_out_contains 'Examples:'
expect_out_contains '--placements'

finish
