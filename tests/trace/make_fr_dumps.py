#!/usr/bin/env python3
"""Writes NCCL Flight Recorder dumps (one file per rank) for chosen scenarios, in the format of
torch/csrc/distributed/c10d/FlightRecorder*.hpp as described in
docs/pytorch-artifacts.md section 2: the default pickle of a dict (protocol
2, as torch's C++ pickler writes it; --protocol picks another) or the same dict as JSON, where
unknown discovered times are 0 instead of None and there are no stack frames.

Usage: make_fr_dumps.py SCENARIO OUTDIR [--format pickle|json] [--protocol N] [--prefix P]
                       [--ranks N --seqs M]
Scenarios (4 ranks, process group "0" = default_pg over ranks 0..3, unless said):
  clean         all_reduce, _all_gather_base, reduce_scatter_tensor, all_to_all, all matched
                (--ranks N and --seqs M scale it: N ranks, M collectives each, for timing)
  missing       rank 3 never joins collective seq 5 (ranks 0-2 are stuck in it, "started")
  size          rank 2's _all_gather_base has input [3, 4] where the others have [2, 4]
  dtype         rank 1's all_reduce is BFloat16, the others' Float
  state         collective seq 3 is "scheduled" on rank 0, "started" on ranks 1-3
  coalesced     reduce_scatter_tensor_coalesced and allgather_into_tensor_coalesced, 2 tensors each
  p2p           send 0->1 and 2->3 with their recvs (process group "0")
  p2p_missing   as p2p, but rank 3 never posts its recv
  wrapped       12 collectives on "0" plus extra ones on "1" (ranks 0,1: 3) and "2" (ranks 2,3: 1);
                a ring buffer of 8, so the ranks start at record_id 7, 7, 5, 5
  wrapped_hang  as wrapped, but rank 3 never joins seq 12 (its buffer starts at record_id 4)
Standard library only (json, pickle).
"""
import argparse
import json
import os
import pickle

WORLD = 4  # --ranks (clean only)
SEQS = 6  # --seqs (clean only)
T0 = 1_764_000_000_000_000_000  # wall-clock ns (late 2025)


_PG_CONFIG = {}  # by world size: the rank list's text is O(WORLD), and every entry asks for it


def pg_config():
    if WORLD not in _PG_CONFIG:
        _PG_CONFIG[WORLD] = {
            "0": {"name": "0", "desc": "default_pg", "ranks": str(list(range(WORLD)))},
            "1": {"name": "1", "desc": "tp", "ranks": "[0, 1]"},
            "2": {"name": "2", "desc": "tp", "ranks": "[2, 3]"},
        }
    return _PG_CONFIG[WORLD]


class Rank:
    """One rank's recorder: record ids count every entry, seq ids count per process group."""

    def __init__(self, rank, buffer_size=2000):
        self.rank = rank
        self.entries = []
        self.record_id = 0
        self.seq = {}
        self.p2p_seq = {}
        self.buffer_size = buffer_size

    def add(self, pg, name, ins, outs, dtype="Float", state="completed", p2p=False, out_dtype=None):
        if p2p:
            self.p2p_seq[pg] = self.p2p_seq.get(pg, 0) + 1
        else:
            self.seq[pg] = self.seq.get(pg, 0) + 1
        t = T0 + 1_000_000 * self.record_id + 1000 * self.rank
        e = {
            "record_id": self.record_id,
            "pg_id": int(pg),
            "process_group": [pg, pg_config()[pg]["desc"]],
            "collective_seq_id": self.seq.get(pg, 0),
            "p2p_seq_id": self.p2p_seq.get(pg, 0),
            "op_id": self.record_id + 1,
            "profiling_name": "nccl:" + name,
            "time_created_ns": t,
            "duration_ms": 0.5 if state == "completed" else None,
            "input_sizes": ins,
            "output_sizes": outs,
            "input_dtypes": [dtype] * len(ins),
            "output_dtypes": [out_dtype or dtype] * len(outs),
            "state": state,
            "time_discovered_started_ns": t + 10_000 if state != "scheduled" else None,
            "time_discovered_completed_ns": t + 500_000 if state == "completed" else None,
            "retired": state == "completed",
            "timeout_ms": 600000,
            "is_p2p": p2p,
            "thread_name": "pt_main_thread",
            "thread_id": 1234,
            "frames": [{"name": "train_step", "filename": "train.py", "line": 42}],
        }
        if e["duration_ms"] is None:
            del e["duration_ms"]
        self.entries.append(e)
        self.record_id += 1

    def dump(self, fmt):
        entries = self.entries[-self.buffer_size:]
        if fmt == "json":
            entries = [dict(e) for e in entries]
            for e in entries:
                e.pop("frames")
                for k in ("time_discovered_started_ns", "time_discovered_completed_ns"):
                    if e[k] is None:
                        e[k] = 0
        return {
            "version": "2.10",
            "comm_lib_version": "2.21.5",
            "pg_config": pg_config(),
            "pg_status": {"0": {"last_enqueued_collective": self.seq.get("0", 0)}},
            "entries": entries,
        }


def standard(r, seqs=6, skip_from=None, over=None):
    """Seq 1..seqs on process group 0: all_reduce, _all_gather_base, reduce_scatter_tensor, all_to_all, ..."""
    kinds = [
        ("all_reduce", [[8, 4]], [[8, 4]]),
        ("_all_gather_base", [[2, 4]], [[2 * WORLD, 4]]),
        ("reduce_scatter_tensor", [[2 * WORLD, 4]], [[2, 4]]),
        ("all_to_all", [[8]], [[8]]),
    ]
    for s in range(1, seqs + 1):
        if skip_from is not None and s >= skip_from:
            break
        name, ins, outs = kinds[(s - 1) % len(kinds)]
        kw = (over or {}).get(s, {})
        r.add("0", name, kw.get("ins", ins), kw.get("outs", outs), dtype=kw.get("dtype", "Float"),
              state=kw.get("state", "completed"))


def clean_rank(i):
    r = Rank(i)
    standard(r, seqs=SEQS)
    return r


def scenario(name):
    ranks = [Rank(i) for i in range(WORLD)]
    if name == "clean":
        for r in ranks:
            standard(r, seqs=SEQS)
    elif name == "missing":
        for r in ranks:
            standard(r, seqs=5, skip_from=5 if r.rank == 3 else None, over={5: {"state": "started"}})
    elif name == "size":
        for r in ranks:
            standard(r, over={2: {"ins": [[3, 4]]}} if r.rank == 2 else None)
    elif name == "dtype":
        for r in ranks:
            standard(r, over={1: {"dtype": "BFloat16"}} if r.rank == 1 else None)
    elif name == "state":
        for r in ranks:
            standard(r, seqs=3, over={3: {"state": "scheduled" if r.rank == 0 else "started"}})
    elif name == "coalesced":
        for r in ranks:
            r.add("0", "reduce_scatter_tensor_coalesced", [[8, 4], [16]], [[2, 4], [4]])
            r.add("0", "allgather_into_tensor_coalesced", [[2], [3]], [[8], [12]])
    elif name in ("p2p", "p2p_missing"):
        for r in ranks:
            standard(r, seqs=1)
        ranks[0].add("0", "send 0->1", [[4, 4]], [[4, 4]], p2p=True)
        ranks[1].add("0", "recv 1<-0", [[4, 4]], [[4, 4]], p2p=True)
        ranks[2].add("0", "send 2->3", [[4, 4]], [[4, 4]], p2p=True,
                     state="started" if name == "p2p_missing" else "completed")
        if name == "p2p":
            ranks[3].add("0", "recv 3<-2", [[4, 4]], [[4, 4]], p2p=True)
    elif name in ("wrapped", "wrapped_hang"):
        ranks = [Rank(i, buffer_size=8) for i in range(WORLD)]
        for r in ranks:
            extra_pg, extra = ("1", 3) if r.rank < 2 else ("2", 1)
            for _ in range(extra):
                r.add(extra_pg, "all_reduce", [[16]], [[16]])
            hang = name == "wrapped_hang"
            standard(r, seqs=12, skip_from=12 if hang and r.rank == 3 else None,
                     over={12: {"state": "started"}} if hang else None)
    else:
        raise SystemExit("unknown scenario " + name)
    return ranks


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("scenario")
    ap.add_argument("outdir")
    ap.add_argument("--format", choices=["pickle", "json"], default="pickle")
    ap.add_argument("--protocol", type=int, default=2)
    ap.add_argument("--prefix", default="nccl_trace_rank_")
    ap.add_argument("--ranks", type=int, default=4, help="world size (scenario clean only)")
    ap.add_argument("--seqs", type=int, default=6, help="collectives per rank (scenario clean only)")
    a = ap.parse_args()
    global WORLD, SEQS
    if a.scenario == "clean":
        WORLD, SEQS = a.ranks, a.seqs
    os.makedirs(a.outdir, exist_ok=True)
    # clean writes each rank as soon as it is made, so thousands of ranks fit in memory.
    ranks = (clean_rank(i) for i in range(WORLD)) if a.scenario == "clean" else scenario(a.scenario)
    for r in ranks:
        path = os.path.join(a.outdir, a.prefix + str(r.rank))
        d = r.dump(a.format)
        if a.format == "json":
            with open(path, "w") as f:
                json.dump(d, f)
        else:
            with open(path, "wb") as f:
                pickle.dump(d, f, protocol=a.protocol)


if __name__ == "__main__":
    main()
