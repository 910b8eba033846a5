#!/usr/bin/env python3
"""Fault injection for `shardscope triage`: NCCL Flight Recorder dumps (one file per rank, pickle or
JSON, the format of docs/flight-recorder.md) of a 2-D data-parallel x tensor-parallel training job
with one injected fault, plus the expected answer (culprit ranks, class) for the tests.

Usage: make_fr_faults.py SCENARIO OUTDIR [--ranks N | --dp D --tp T] [--entries E]
                         [--format pickle|json] [--prefix P] [--seed S] [--expected FILE] [--no-wrap]
       make_fr_faults.py --list

The job: rank = d * tp + t. Process groups: "0" (default_pg, every rank), tensor-parallel groups
"1".."dp" (desc mesh_tp, ranks d*tp .. d*tp+tp-1) and data-parallel groups "dp+1".."dp+tp" (desc
mesh_dp, ranks t, t+tp, ...); each rank's pg_config names only its own three groups, as PyTorch's
recorder does. Every training step issues, in this order:
  tp  nccl:_all_gather_base      BFloat16 [256, 1024] -> [256*tp, 1024]
  tp  nccl:_reduce_scatter_base  BFloat16 [256*tp, 1024] -> [256, 1024]
  tp  nccl:all_reduce            Float [4096]
  tp  nccl:_all_gather_base      BFloat16 [512, 1024] -> [512*tp, 1024]
  dp  nccl:all_reduce            Float [1048576]   (gradients)
  pg0 nccl:all_reduce            Float [1]         (the loss; the CPU waits for it: .item())
The job runs until every rank's ring buffer (E entries, default 2000) has wrapped. Faults are
injected in the last step, and the states follow from a simulation of how NCCL proceeds: a rank
enqueues collectives ahead of its GPU until it reaches one it must wait for (the loss all_reduce);
its GPU runs them in order, a collective starts when the GPU reaches it and completes when every
member has started it (and, for the mismatches that hang, their sizes agree); ranks blocked in a
collective block everything their GPU and CPU would do after it, so the cascade is realistic.

Scenarios (the culprit ranks are chosen from --seed; the expected answer names them):
  clean         nothing wrong
  not_enqueued  one rank is stuck in compute before its 2nd tp collective of the step
  not_started   one rank's GPU never starts its 4th tp collective (enqueued, "scheduled")
  deadlock      one rank issues the loss all_reduce (pg0) before its 4th tp collective
  size          one rank's _reduce_scatter_base has another input size (the collective hangs)
  dtype         one rank's tp all_reduce is BFloat16 (the collective completes: silent)
  kind          one rank calls _all_gather_base where its tp peers call all_reduce (hangs)
  skipped       one rank skips its 2nd tp collective: its seq ids run one ahead (hangs)
  extra         one rank issues an extra tp all_reduce before its 2nd tp collective (hangs)
  p2p           after the step, a ring send/recv along dp; one rank posts its recv from the
                wrong peer
  dead          one rank dies before its 2nd tp collective and leaves no dump
  straggler     every collective completes; one rank arrives 10 ms late at each of them
  network       one tp group's 3rd collective is started by all its members and never
                completes (no culprit)
  wrapped       tp group d issues d % 3 extra tp all_reduces per step, so the buffers wrap at
                different record ids; one rank is stuck in compute as in not_enqueued
  multi         two independent roots in different groups: one rank stuck in compute
                (not_enqueued), another's GPU never starts a collective (not_started)
The expected answer goes to --expected (default OUTDIR/triage_expected.json, a name the dump
reader ignores): {"scenario", "verdict", "class", "culprits", "process_group", "seq", "dp", "tp",
"world", "entries", "roots": [{"class", "culprits", "process_group", "seq"}]}.
Standard library only; 16,384 ranks x 200 entries take about 13 s on 2 cores.
"""
import argparse
import json
import multiprocessing
import os
import pickle
import random
import sys

T0 = 1_764_000_000_000_000_000  # wall-clock ns (late 2025)
OP_NS = 2_000_000  # nominal time between two collectives of a rank
STRAGGLE_NS = 10_000_000

# (group type, op name, input sizes, output sizes, dtype); sizes use TP for the tp group size.
STEP = [
    ("tp", "_all_gather_base", [[256, 1024]], [["TP256", 1024]], "BFloat16"),
    ("tp", "_reduce_scatter_base", [["TP256", 1024]], [[256, 1024]], "BFloat16"),
    ("tp", "all_reduce", [[4096]], [[4096]], "Float"),
    ("tp", "_all_gather_base", [[512, 1024]], [["TP512", 1024]], "BFloat16"),
    ("dp", "all_reduce", [[1048576]], [[1048576]], "Float"),
    ("pg0", "all_reduce", [[1]], [[1]], "Float"),
]
SYNC_OP = 5  # the CPU waits for the loss all_reduce
EXTRA = ("tp", "all_reduce", [[64]], [[64]], "Float")

SCENARIOS = {
    "clean": ("clean", None),
    "not_enqueued": ("hang", "not_enqueued"),
    "not_started": ("hang", "not_started"),
    "deadlock": ("hang", "deadlock"),
    "size": ("mismatch", "size_mismatch"),
    "dtype": ("mismatch", "dtype_mismatch"),
    "kind": ("mismatch", "kind_mismatch"),
    "skipped": ("mismatch", "skipped_collective"),
    "extra": ("mismatch", "extra_collective"),
    "p2p": ("mismatch", "p2p_mismatch"),
    "dead": ("hang", "dead_rank"),
    "straggler": ("straggler", "straggler"),
    "network": ("hang", "network_hang"),
    "wrapped": ("hang", "not_enqueued"),
    "multi": ("hang", "multiple"),
}


class Op:
    __slots__ = ("gtype", "name", "ins", "outs", "dtype", "peer", "send", "key", "seq", "p2p_seq", "sig")

    def __init__(self, gtype, name, ins, outs, dtype, tp, peer=None, send=False):
        sub = lambda v: tp * int(v[2:]) if isinstance(v, str) else v  # noqa: E731
        self.gtype = gtype
        self.name = name
        self.ins = [[sub(x) for x in s] for s in ins]
        self.outs = [[sub(x) for x in s] for s in outs]
        self.dtype = dtype
        self.peer = peer  # p2p: the global peer rank
        self.send = send
        self.key = None
        self.seq = 0
        self.p2p_seq = 0
        self.sig = (name, str(self.ins), str(self.outs), dtype)


class Job:
    def __init__(self, a):
        self.dp, self.tp = a.dp, a.tp
        self.world = a.dp * a.tp
        self.entries = a.entries
        self.scenario = a.scenario
        self.rng = random.Random(a.seed)
        self.steps = a.entries // len(STEP) + 3  # every buffer wraps (unless --no-wrap)
        if a.no_wrap:
            self.entries = 1 << 40  # the buffers hold the whole run
        self.dead = set()
        self.limit = {}  # rank -> window index it never enqueues (stuck in compute or dead)
        self.gpu_stuck = {}  # rank -> window index its GPU never starts
        self.hang_keys = set()  # collectives forced never to complete (network hang)
        self.silent = set()  # mismatching collectives that complete anyway
        self.roots = []

    def rank(self, d, t):
        return d * self.tp + t

    def gname(self, r, gtype):
        if gtype == "pg0":
            return "0"
        if gtype == "tp":
            return str(1 + r // self.tp)
        return str(1 + self.dp + r % self.tp)

    def gdesc(self, gtype):
        return {"pg0": "default_pg", "tp": "mesh_tp", "dp": "mesh_dp"}[gtype]

    def granks(self, r, gtype):
        if gtype == "pg0":
            return list(range(self.world))
        if gtype == "tp":
            d = r // self.tp
            return list(range(d * self.tp, (d + 1) * self.tp))
        t = r % self.tp
        return list(range(t, self.world, self.tp))

    def gsize(self, gtype):
        return {"pg0": self.world, "tp": self.tp, "dp": self.dp}[gtype]

    # ---- programs ----
    def step_ops(self, r, extras=0):
        ops = [Op(*s, tp=self.tp) for s in STEP]
        for _ in range(extras):
            ops.insert(3, Op(*EXTRA, tp=self.tp))
        return ops

    def build(self):
        sc = self.scenario
        pick = self.rng
        d_c = pick.randrange(self.dp)
        t_c = pick.randrange(self.tp)
        c = self.rank(d_c, t_c)
        self.culprit = c
        extras = (lambda r: (r // self.tp) % 3) if sc == "wrapped" else (lambda r: 0)
        # The prefix (steps before the last one) is the same for every rank of a tp group.
        self.prefix_cache = {}
        self.window = {}
        for r in range(self.world):
            self.window[r] = self.step_ops(r, extras(r))
        base_step = len(STEP)

        def pos(r, i):  # window index of step op i (after extras)
            return i + (extras(r) if i >= 3 else 0)

        first_tp = {}  # seq of the window's first tp collective, per rank

        if sc in ("not_enqueued", "wrapped"):
            self.limit[c] = pos(c, 1)
            self.roots.append(("not_enqueued", [c], "tp", pos(c, 1)))
        elif sc == "not_started":
            self.gpu_stuck[c] = pos(c, 3)
            self.roots.append(("not_started", [c], "tp", pos(c, 3)))
        elif sc == "dead":
            self.limit[c] = pos(c, 1)
            self.dead.add(c)
            self.roots.append(("dead_rank", [c], "tp", pos(c, 1)))
        elif sc == "deadlock":
            w = self.window[c]
            w.insert(3, w.pop(5))  # the loss all_reduce before the 4th tp collective
            self.roots.append(("deadlock", [c], "pg0", 3))
        elif sc == "size":
            op = self.window[c][1]
            op.ins = [[256 * self.tp + 128, 1024]]
            op.sig = (op.name, str(op.ins), str(op.outs), op.dtype)
            self.roots.append(("size_mismatch", [c], "tp", 1))
        elif sc == "dtype":
            op = self.window[c][2]
            op.dtype = "BFloat16"
            op.sig = (op.name, str(op.ins), str(op.outs), op.dtype)
            self.silent_rank_op = (c, 2)
            self.roots.append(("dtype_mismatch", [c], "tp", 2))
        elif sc == "kind":
            self.window[c][2] = Op("tp", "_all_gather_base", [[4096]], [["TP4096"]], "Float", tp=self.tp)
            self.roots.append(("kind_mismatch", [c], "tp", 2))
        elif sc == "skipped":
            del self.window[c][1]
            self.roots.append(("skipped_collective", [c], "tp", 1))
        elif sc == "extra":
            self.window[c].insert(1, Op(*EXTRA, tp=self.tp))
            self.roots.append(("extra_collective", [c], "tp", 1))
        elif sc == "p2p":
            if self.dp < 4 or self.dp % 2:
                raise SystemExit("p2p needs an even dp >= 4")
            if d_c % 2 == 0:
                d_c = (d_c + 1) % self.dp
                c = self.culprit = self.rank(d_c, t_c)
            for r in range(self.world):
                d, t = divmod(r, self.tp)
                nxt, prv = self.rank((d + 1) % self.dp, t), self.rank((d - 1) % self.dp, t)
                if r == c:
                    prv = self.rank((d - 3) % self.dp, t)  # the wrong peer
                send = Op("dp", "send", [[64, 1024]], [[64, 1024]], "BFloat16", tp=self.tp, peer=nxt, send=True)
                recv = Op("dp", "recv", [[64, 1024]], [[64, 1024]], "BFloat16", tp=self.tp, peer=prv)
                self.window[r] += [send, recv] if d % 2 == 0 else [recv, send]
            self.roots.append(("p2p_mismatch", [c], "dp", None))
        elif sc == "network":
            self.net_group = d_c
            self.roots.append(("network_hang", [], "tp", 2))
        elif sc == "straggler":
            self.roots.append(("straggler", [c], None, None))
        elif sc == "multi":
            d2 = (d_c + 1 + pick.randrange(self.dp - 1)) % self.dp if self.dp > 1 else d_c
            t2 = (t_c + 1) % self.tp
            c2 = self.rank(d2, t2)
            self.limit[c] = pos(c, 1)
            self.gpu_stuck[c2] = pos(c2, 3)
            self.roots.append(("not_enqueued", [c], "tp", pos(c, 1)))
            self.roots.append(("not_started", [c2], "tp", pos(c2, 3)))
        self.extras = extras
        self.number()
        if sc == "network":
            r0 = self.rank(self.net_group, 0)
            self.hang_keys.add(self.window[r0][2].key)
        if sc == "dtype":
            r, i = self.silent_rank_op
            self.silent.add(self.window[r][i].key)

    def number(self):
        """Seq ids: per process group on each rank over its own program (so a skipped or extra
        collective shifts them); p2p ops count p2p_seq_id and keep the last collective seq."""
        self.prefix_len = {}
        self.prefix_seq = {}
        for r in range(self.world):
            per_step = {"tp": 0, "dp": 0, "pg0": 0}
            for op in self.step_ops(r, self.extras(r)):
                per_step[op.gtype] += 1
            n_prefix = self.steps - 1
            seq = {g: per_step[g] * n_prefix for g in per_step}
            p2p = {}
            self.prefix_len[r] = n_prefix * (len(STEP) + self.extras(r))
            self.prefix_seq[r] = dict(seq)
            sends = {}
            for op in self.window[r]:
                g = self.gname(r, op.gtype)
                if op.peer is not None:
                    p2p[g] = p2p.get(g, 0) + 1
                    op.p2p_seq = p2p[g]
                    op.seq = seq[op.gtype]
                    a, b = (r, op.peer) if op.send else (op.peer, r)
                    k = sends.get((a, b), 0)
                    sends[(a, b)] = k + 1
                    op.key = ("p2p", g, a, b, k)
                else:
                    seq[op.gtype] += 1
                    op.seq = seq[op.gtype]
                    op.key = (g, op.seq)

    # ---- the simulation of the last steps ----
    def simulate(self):
        W = self.world
        n = {r: len(self.window[r]) for r in range(W)}
        enq = [0] * W
        gpu = [0] * W
        limit = [self.limit.get(r, n[r]) for r in range(W)]
        stuck = [self.gpu_stuck.get(r, -1) for r in range(W)]
        size_of = {}
        for r in range(W):
            for op in self.window[r]:
                if op.key not in size_of:
                    size_of[op.key] = 2 if op.peer is not None else self.gsize(op.gtype)
        changed = True
        while changed:
            changed = False
            for r in range(W):
                w = self.window[r]
                while enq[r] < limit[r]:
                    # the CPU waits for a sync collective before issuing anything after it
                    blocked = any(w[i].gtype == "pg0" and gpu[r] <= i for i in range(enq[r]))
                    if blocked:
                        break
                    enq[r] += 1
                    changed = True
            started = {}
            for r in range(W):
                i = gpu[r]
                if i < enq[r] and i != stuck[r]:
                    op = self.window[r][i]
                    started.setdefault(op.key, []).append(op.sig)
            ok = {}
            for key, sigs in started.items():
                ok[key] = (len(sigs) == size_of[key] and key not in self.hang_keys and
                           (key[0] == "p2p" or len(set(sigs)) == 1 or key in self.silent))
            for r in range(W):
                i = gpu[r]
                if i < enq[r] and i != stuck[r] and ok[self.window[r][i].key]:
                    gpu[r] += 1
                    changed = True
            # a collective completes on all its members in the same round: recheck was per rank,
            # and each member advanced only if every member had started it, so this is consistent
        self.enq, self.gpu = enq, gpu

    # ---- timing ----
    def straggler_times(self):
        """Arrival and completion per (rank, op index) over the whole run: a rank arrives at a
        collective 1 ms (+ jitter) after its previous one completed; the straggler 10 ms later;
        a collective completes 100 us after its last member arrived."""
        W, tp, dp = self.world, self.tp, self.dp
        total = self.steps * len(STEP)
        arrive = [[0] * total for _ in range(W)]
        done = [[0] * total for _ in range(W)]
        prev = [T0] * W
        s = self.culprit
        for j in range(total):
            gt = STEP[j % len(STEP)][0]
            a = [prev[r] + 1_000_000 + jitter(r, j) + (STRAGGLE_NS if r == s else 0) for r in range(W)]
            if gt == "pg0":
                m = max(a)
                comp = [m + 100_000] * W
            elif gt == "tp":
                comp = [0] * W
                for d in range(dp):
                    m = max(a[d * tp:(d + 1) * tp]) + 100_000
                    for r in range(d * tp, (d + 1) * tp):
                        comp[r] = m
            else:
                comp = [0] * W
                for t in range(tp):
                    m = max(a[t::tp]) + 100_000
                    for r in range(t, W, tp):
                        comp[r] = m
            for r in range(W):
                arrive[r][j] = a[r]
                done[r][j] = comp[r]
            prev = comp
        return arrive, done

    def answer(self):
        verdict, cls = SCENARIOS[self.scenario]
        roots = []
        for rcls, culprits, gtype, widx in self.roots:
            pg, seq = None, None
            if culprits and widx is not None:
                r = culprits[0]
                op = self.window[r][widx]
                pg, seq = self.gname(r, op.gtype), op.seq
            elif rcls == "network_hang":
                r0 = self.rank(self.net_group, 0)
                op = self.window[r0][2]
                pg, seq = self.gname(r0, "tp"), op.seq
            elif rcls == "p2p_mismatch":
                r = culprits[0]
                recv = [op for op in self.window[r] if op.peer is not None and not op.send][0]
                pg, seq = self.gname(r, "dp"), recv.p2p_seq
            roots.append({"class": rcls, "culprits": sorted(culprits), "process_group": pg, "seq": seq})
        culprits = sorted({c for r in roots for c in r["culprits"]})
        first = roots[0] if roots else {"process_group": None, "seq": None}
        return {"scenario": self.scenario, "verdict": verdict, "class": cls, "culprits": culprits,
                "process_group": first["process_group"], "seq": first["seq"], "dp": self.dp,
                "tp": self.tp, "world": self.world, "entries": min(self.entries, self.steps * len(STEP)), "roots": roots,
                "dead": sorted(self.dead)}


def jitter(r, j):
    return ((r * 7919 + j * 104729) % 53) * 1000


JOB = None


RANKS_TEXT = {}


def pg_config(job, r):
    cfg = {}
    for gt in ("pg0", "tp", "dp"):
        name = job.gname(r, gt)
        if name not in RANKS_TEXT:
            RANKS_TEXT[name] = str(job.granks(r, gt))
        cfg[name] = {"name": name, "desc": job.gdesc(gt), "ranks": RANKS_TEXT[name]}
    return cfg


FRAMES = [{"name": "train_step", "filename": "train.py", "line": 42},
          {"name": "forward", "filename": "model.py", "line": 117}]


def rank_entries(job, r, fmt, times):
    """The ring buffer of rank r: its last `entries` enqueued collectives."""
    ops_prefix = job.step_ops(r, job.extras(r))
    for op in ops_prefix:
        op.key = None
    n_prefix_steps = job.steps - 1
    per_step = len(ops_prefix)
    enq, gpu = job.enq[r], job.gpu[r]
    window = job.window[r][:enq]
    total = n_prefix_steps * per_step + len(window)
    first = max(0, total - job.entries)
    out = []
    names = {gt: (job.gname(r, gt), job.gdesc(gt)) for gt in ("pg0", "tp", "dp")}
    gid = {gt: int(names[gt][0]) for gt in names}
    seq = {"tp": 0, "dp": 0, "pg0": 0}
    counts = {"tp": 0, "dp": 0, "pg0": 0}
    for op in ops_prefix:
        counts[op.gtype] += 1
    json_fmt = fmt == "json"
    # seq ids before `first`: whole steps of the prefix, then op by op
    start_step = min(first // per_step, n_prefix_steps)
    for gt in seq:
        seq[gt] = counts[gt] * start_step
    p2p_seq = {}
    for rec in range(start_step * per_step, total):
        if rec < n_prefix_steps * per_step:
            step, i = divmod(rec, per_step)
            op = ops_prefix[i]
            seq[op.gtype] += 1
            cseq = seq[op.gtype]
            p2p = 0
            state = "completed"
        else:
            step = n_prefix_steps
            i = rec - n_prefix_steps * per_step
            op = window[i]
            cseq = op.seq
            p2p = op.p2p_seq
            state = "completed" if i < gpu else ("started" if i == gpu and job.gpu_stuck.get(r) != i else "scheduled")
        if rec < first:
            continue
        j = step * len(STEP) + min(i, len(STEP) - 1)
        if times is not None:
            created = times[0][r][j] + skew(r)
            t_start = created + 20_000
            t_done = times[1][r][j] + skew(r)
        else:
            created = T0 + rec * OP_NS + jitter(r, rec) + skew(r)
            t_start = created + 20_000
            t_done = t_start + 300_000 + (53_000 - jitter(r, rec))
        pg_name, pg_desc = names[op.gtype]
        if op.peer is not None:
            grank = lambda x: job.granks(r, op.gtype).index(x)  # noqa: E731
            me, other = grank(r), grank(op.peer)
            prof = "nccl:send %d->%d" % (me, other) if op.send else "nccl:recv %d<-%d" % (me, other)
        else:
            prof = "nccl:" + op.name
        done = state == "completed"
        e = {
            "record_id": rec,
            "pg_id": gid[op.gtype],
            "process_group": [pg_name, pg_desc],
            "collective_seq_id": cseq,
            "p2p_seq_id": p2p,
            "op_id": rec + 1,
            "profiling_name": prof,
            "time_created_ns": created,
            "input_sizes": op.ins,
            "output_sizes": op.outs,
            "input_dtypes": [op.dtype] * len(op.ins),
            "output_dtypes": [op.dtype] * len(op.outs),
            "state": state,
            "time_discovered_started_ns": t_start if state != "scheduled" else (0 if json_fmt else None),
            "time_discovered_completed_ns": t_done if done else (0 if json_fmt else None),
            "retired": done,
            "timeout_ms": 600000,
            "is_p2p": op.peer is not None,
            "thread_name": "pt_main_thread",
            "thread_id": 1234,
        }
        if done:
            e["duration_ms"] = (t_done - t_start) / 1e6
        if not json_fmt:
            e["frames"] = FRAMES
        out.append(e)
    return out


def skew(r):
    return ((r // 8) * 7_654_321) % 3_000_000  # each host (8 ranks) has its own wall clock offset


def write_rank(r):
    job, a, times = JOB
    entries = rank_entries(job, r, a.format, times)
    d = {
        "version": "2.10",
        "comm_lib_version": "2.21.5",
        "pg_config": pg_config(job, r),
        "pg_status": {"0": {"last_enqueued_collective": 0}},
        "entries": entries,
    }
    path = os.path.join(a.outdir, a.prefix + str(r))
    if a.format == "json":
        with open(path, "w") as f:
            json.dump(d, f, separators=(",", ":"))
    else:
        with open(path, "wb") as f:
            pickle.dump(d, f, protocol=2)


def write_ranks(chunk):
    for r in chunk:
        write_rank(r)
    return len(chunk)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("scenario", nargs="?")
    ap.add_argument("outdir", nargs="?")
    ap.add_argument("--list", action="store_true", help="print the scenario names")
    ap.add_argument("--ranks", type=int, help="world size (tp 8, dp = ranks / 8)")
    ap.add_argument("--dp", type=int, default=8)
    ap.add_argument("--tp", type=int, default=8)
    ap.add_argument("--entries", type=int, default=200, help="ring buffer entries per rank")
    ap.add_argument("--format", choices=["pickle", "json"], default="pickle")
    ap.add_argument("--prefix", default="nccl_trace_rank_")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--expected", help="where the expected answer goes (default OUTDIR/triage_expected.json)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--no-wrap", action="store_true", help="ring buffers large enough for the whole run")
    a = ap.parse_args()
    if a.list:
        print("\n".join(SCENARIOS))
        return
    if not a.scenario or not a.outdir:
        ap.error("SCENARIO and OUTDIR are required")
    if a.scenario not in SCENARIOS:
        raise SystemExit("unknown scenario %s (one of %s)" % (a.scenario, ", ".join(SCENARIOS)))
    if a.ranks:
        if a.ranks % 8:
            raise SystemExit("--ranks must be a multiple of 8")
        a.tp, a.dp = 8, a.ranks // 8
    if a.dp < 2 or a.tp < 4:
        raise SystemExit("need dp >= 2 and tp >= 4")
    job = Job(a)
    job.build()
    job.simulate()
    times = job.straggler_times() if a.scenario == "straggler" else None
    os.makedirs(a.outdir, exist_ok=True)
    global JOB
    JOB = (job, a, times)
    ranks = [r for r in range(job.world) if r not in job.dead]
    if a.jobs > 1 and len(ranks) > 256:
        chunks = [ranks[i::a.jobs * 8] for i in range(a.jobs * 8)]
        with multiprocessing.get_context("fork").Pool(a.jobs) as pool:
            sum(pool.map(write_ranks, chunks))
    else:
        write_ranks(ranks)
    with open(a.expected or os.path.join(a.outdir, "triage_expected.json"), "w") as f:
        json.dump(job.answer(), f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    sys.setrecursionlimit(10000)
    main()
