#!/usr/bin/env python3
"""Writes a large synthetic shardscope trace (docs/trace-format.md) for GUI frame-time checks.

Every rank of a ROWSxCOLS mesh runs REDISTRIBUTES redistributes S(0),S(1) -> S(0),R of a
[rows*64, cols*64] f32 tensor: one all_gather over mesh dim 1 each, 5 events per redistribute per
rank. Example (4096 ranks, ~1M events, written to /tmp, never committed):
    scripts/gen_synthetic_trace.py --mesh 64x64 --redistributes 49 --out /tmp/synthetic_4096
"""
import argparse
import json
import os


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mesh", default="64x64", help="ROWSxCOLS mesh (world = ROWS*COLS)")
    ap.add_argument("--redistributes", type=int, default=49, help="redistributes per rank")
    ap.add_argument("--out", required=True, help="output directory (created)")
    args = ap.parse_args()
    rows, cols = (int(x) for x in args.mesh.split("x"))
    world = rows * cols
    shape = [rows * 64, cols * 64]
    os.makedirs(args.out, exist_ok=True)
    dumps = lambda o: json.dumps(o, separators=(",", ":"))
    step = {"mesh_dims": [1], "src": "S(1)", "dst": "R", "comm": "all_gather", "logical_shape": [64, cols * 64],
            "flattened": False, "avg_scale": 1, "cost_us": 12.5}
    for rank in range(world):
        r, c = divmod(rank, cols)
        group = [r * cols + k for k in range(cols)]
        local_before = [64, 64]
        local_after = [64, cols * 64]
        shard_bytes = 64 * 64 * 4
        sent = [0 if g == rank else shard_bytes for g in group]
        lines = [dumps({"type": "header", "format": "shardscope-trace", "version": 1, "rank": rank, "world": world,
                        "mesh": {"shape": [rows, cols], "dim_names": ["dp", "tp"]}, "backend": "local",
                        "host": "synthetic", "pid": 1, "clock": {"name": "steady", "offset_ns": 0}})]
        for i in range(args.redistributes):
            t = 1000 + i * 200000 + rank * 7 + (i * 131 + rank * 17) % 2000
            lines.append(dumps({"type": "redistribute_begin", "id": i, "tensor": "t%d" % (i % 7),
                                "global_shape": shape, "dtype": "f32", "src_placements": ["S(0)", "S(1)"],
                                "dst_placements": ["S(0)", "R"], "src_order": "", "dst_order": "",
                                "planner": "greedy", "planner_reason": "default", "notation": "S(0)S(1)->S(0)R",
                                "notation_unoptimized": "S(0)S(1)->S(0)R", "raw_plan": [step],
                                "optimized_plan": [step], "skipped_merges": [], "cost_us": 12.5, "t_ns": t}))
            lines.append(dumps({"type": "step_begin", "redistribute_id": i, "step": 0, "mesh_dims": [1],
                                "src": "S(1)", "dst": "R", "comm": "all_gather", "logical_shape": [64, cols * 64],
                                "local_shape_before": local_before, "global_offset_before": [r * 64, c * 64],
                                "t_ns": t + 100}))
            dur = 20000 + (rank * 37 + i * 11) % 60000
            lines.append(dumps({"type": "collective", "redistribute_id": i, "step": 0, "kind": "all_gather",
                                "mesh_dims": [1], "group": group, "dtype": "f32", "bytes_sent": sent,
                                "bytes_recv": sent, "negotiated": False, "start_ns": t + 200,
                                "end_ns": t + 200 + dur}))
            lines.append(dumps({"type": "step_end", "redistribute_id": i, "step": 0,
                                "local_shape_after": local_after, "global_offset_after": [r * 64, 0],
                                "t_ns": t + 300 + dur}))
            lines.append(dumps({"type": "redistribute_end", "id": i, "t_ns": t + 400 + dur, "ok": True}))
        with open(os.path.join(args.out, "rank-%d.jsonl" % rank), "w") as f:
            f.write("\n".join(lines) + "\n")
    print("wrote %s: %d ranks, %d events" % (args.out, world, world * args.redistributes * 5))


if __name__ == "__main__":
    main()
