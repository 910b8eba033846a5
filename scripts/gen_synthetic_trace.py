#!/usr/bin/env python3
"""Writes a large synthetic shardscope trace (docs/trace-format.md) for GUI frame-time checks.

Every rank of a ROWSxCOLS mesh runs REDISTRIBUTES redistributes S(0),S(1) -> S(0),R of a
[rows*64, cols*64] f32 tensor: one all_gather over mesh dim 1 each, 5 events per redistribute per
rank. Example (4096 ranks, ~1M events, written to /tmp, never committed):
    scripts/gen_synthetic_trace.py --mesh 64x64 --redistributes 49 --out /tmp/synthetic_4096
--format-version 2 (the default) writes what shardscope's v2 writer writes for these events (a
redistribute refers to the earlier one with the same plan by "like", steps and collectives take
their plan step's fields and the mesh's group, uniform byte counts are one number); --format-version 1 writes every
field in full, as the files of earlier rounds.
"""
import argparse
import json
import os


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mesh", default="64x64", help="ROWSxCOLS mesh (world = ROWS*COLS)")
    ap.add_argument("--redistributes", type=int, default=49, help="redistributes per rank")
    ap.add_argument("--out", required=True, help="output directory (created)")
    ap.add_argument("--format-version", type=int, choices=(1, 2), default=2,
                    help="trace format version to write (docs/trace-format.md)")
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
        v2 = args.format_version == 2
        lines = [dumps({"type": "header", "format": "shardscope-trace", "version": args.format_version,
                        "rank": rank, "world": world,
                        "mesh": {"shape": [rows, cols], "dim_names": ["dp", "tp"]}, "backend": "local",
                        "host": "synthetic", "pid": 1, "clock": {"name": "steady", "offset_ns": 0}})]
        for i in range(args.redistributes):
            t = 1000 + i * 200000 + rank * 7 + (i * 131 + rank * 17) % 2000
            begin = {"type": "redistribute_begin", "id": i, "tensor": "t%d" % (i % 7), "global_shape": shape,
                     "dtype": "f32", "src_placements": ["S(0)", "S(1)"], "dst_placements": ["S(0)", "R"],
                     "src_order": "", "dst_order": "", "planner": "greedy", "planner_reason": "default",
                     "notation": "S(0)S(1)->S(0)R", "notation_unoptimized": "S(0)S(1)->S(0)R",
                     "raw_plan": [step], "optimized_plan": [step], "skipped_merges": [], "cost_us": 12.5,
                     "t_ns": t}
            step_begin = {"type": "step_begin", "redistribute_id": i, "step": 0, "mesh_dims": [1], "src": "S(1)",
                          "dst": "R", "comm": "all_gather", "logical_shape": [64, cols * 64],
                          "local_shape_before": local_before, "global_offset_before": [r * 64, c * 64],
                          "t_ns": t + 100}
            dur = 20000 + (rank * 37 + i * 11) % 60000
            collective = {"type": "collective", "redistribute_id": i, "step": 0, "kind": "all_gather",
                          "mesh_dims": [1], "group": group, "dtype": "f32", "bytes_sent": sent,
                          "bytes_recv": sent, "negotiated": False, "start_ns": t + 200, "end_ns": t + 200 + dur}
            end = {"type": "redistribute_end", "id": i, "t_ns": t + 400 + dur, "ok": True}
            if v2:  # the abbreviations of docs/trace-format.md, "Version 2"
                if i >= 7:  # redistribute i % 7 had the same tensor and plan
                    begin = {"type": "redistribute_begin", "id": i, "like": i % 7, "t_ns": t}
                else:
                    for k in ("src_order", "dst_order", "notation_unoptimized", "optimized_plan", "skipped_merges"):
                        del begin[k]
                    begin["raw_plan"] = [{k: v for k, v in step.items() if k not in ("flattened", "avg_scale")}]
                for k in ("mesh_dims", "src", "dst", "comm", "logical_shape"):
                    del step_begin[k]
                for k in ("kind", "mesh_dims", "dtype", "negotiated", "group"):  # group: the mesh's row
                    del collective[k]
                collective["bytes_sent"] = collective["bytes_recv"] = shard_bytes
                del end["ok"]
            lines.append(dumps(begin))
            lines.append(dumps(step_begin))
            lines.append(dumps(collective))
            lines.append(dumps({"type": "step_end", "redistribute_id": i, "step": 0,
                                "local_shape_after": local_after, "global_offset_after": [r * 64, 0],
                                "t_ns": t + 300 + dur}))
            lines.append(dumps(end))
        with open(os.path.join(args.out, "rank-%d.jsonl" % rank), "w") as f:
            f.write("\n".join(lines) + "\n")
    print("wrote %s: %d ranks, %d events" % (args.out, world, world * args.redistributes * 5))


if __name__ == "__main__":
    main()
