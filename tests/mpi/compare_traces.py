#!/usr/bin/env python3
"""Compares two shardscope trace directories event by event, apart from timing fields.

usage: compare_traces.py BASELINE_DIR CANDIDATE_DIR
Ignored: the header's host, pid, backend and clock, every key ending in "_ns" (at any depth) and
the time offsets "dt" of redistribute_repeat lines.
Everything else (plans, notation, collectives, groups, bytes per peer, shapes, offsets, event
order) must be equal. Exit 0 when equal, 1 with the first difference, 2 on unreadable input.
"""
import json
import pathlib
import sys

HEADER_IGNORED = {"host", "pid", "backend", "clock"}


def strip(value):
    if isinstance(value, dict):
        return {k: strip(v) for k, v in value.items() if not k.endswith("_ns") and k != "dt"}
    if isinstance(value, list):
        return [strip(v) for v in value]
    return value


def load(path):
    events = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        event = json.loads(line)
        if event.get("type") == "header":
            event = {k: v for k, v in event.items() if k not in HEADER_IGNORED}
        events.append((number, strip(event)))
    return events


def main():
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    base, cand = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    try:
        base_files = sorted(p.name for p in base.glob("rank-*.jsonl"))
        cand_files = sorted(p.name for p in cand.glob("rank-*.jsonl"))
        if not base_files:
            print(f"{base}: no rank-*.jsonl files", file=sys.stderr)
            return 2
        if base_files != cand_files:
            print(f"rank files differ: {base_files} vs {cand_files}")
            return 1
        events = 0
        for name in base_files:
            a, b = load(base / name), load(cand / name)
            for (la, ea), (lb, eb) in zip(a, b):
                if ea != eb:
                    keys = sorted(k for k in set(ea) | set(eb) if ea.get(k) != eb.get(k))
                    print(f"{name}: line {la} vs {lb} differ in {keys}:\n  {json.dumps(ea)}\n  {json.dumps(eb)}")
                    return 1
            if len(a) != len(b):
                print(f"{name}: {len(a)} events vs {len(b)}")
                return 1
            events += len(a)
    except (OSError, ValueError) as e:
        print(f"compare_traces: {e}", file=sys.stderr)
        return 2
    print(f"traces equal apart from timing: {len(base_files)} rank files, {events} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
