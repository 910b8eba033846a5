#!/usr/bin/env python3
"""Writes PyTorch profiler (Kineto) Chrome traces, one file per rank, in the layout docs/kineto.md
describes: a top-level object with schemaVersion, deviceProperties, distributedInfo, traceEvents
(one event per line, as Kineto writes them), traceName, displayTimeUnit and baseTimeNanoseconds.

Usage: make_kineto_traces.py OUTDIR [options]   (--help lists them)

What every rank r does in step s (all times are a function of the parameters, so tests derive
their expectations by hand):
  - a ProfilerStep#s annotation over [s*period, s*period + period - 10) us (from --t0-us);
  - --ops cpu_ops "aten::linear" (each with an "aten::mm" child and a GEMM kernel);
  - the collectives of --kinds, in order, collective j of the step launched on the CPU at
    s*period + 100 + j*gap us (+ --delay-us on the --straggler rank); its kernel starts --launch-us
    later on that rank and ends on every rank at (the latest start over the group) + --transfer-us.
    So the straggler arrives last at every collective, every other rank waits --delay-us, and the
    time of the transfer is --transfer-us.
Kinds: all_reduce, all_gather, reduce_scatter, broadcast, all_to_all, send_recv (even ranks send to
rank+1, odd ranks receive from rank-1), barrier. --elems is the element count of a rank's input
(all_gather's output and reduce_scatter's input are --elems x group size).

Variants (--variant): new = record_param_comms with its args (Process Group Name/Desc/Ranks,
In/Out msg nelems, dtype, Group size, split sizes; Seq with --seq) enclosing an nccl:* op and the
launch, ncclDevKernel_* kernels; old = no record_param_comms, nccl:* cpu_ops with Input Dims /
Input type only, ncclKernel_* kernels; noargs = record_param_comms without comms args and nccl:*
ops without Input Dims (kinds from kernel names only). --kernel-args copies the comms args onto
the kernel; --no-correlation drops `correlation` from kernels (the ac2g flow links them);
--dist-info full|partial|none (partial: backend and world_size only, no rank, no pg_config);
--dist-info-last writes distributedInfo after traceEvents; --tp N puts all_gather and
reduce_scatter on process groups of N consecutive ranks ("1", "2", ...); --world W claims a world
larger than --ranks (only ranks 0..ranks-1 are written); --only R,R writes just those ranks;
--gzip writes .json.gz; --name PATTERN ({rank}, default rank-{rank}.20260101.{pid}.pt.trace.json).
Per-step variants, for `diff` of two runs: --step-kinds S=KINDS gives step S its own list of kinds
(repeatable); --elems-at S:J=N and --dtype-at S:J=DTYPE change the element count or dtype of
collective J (0-based, in the step's list) of step S (repeatable).
--pad-ops N adds N extra small cpu_ops per step (file size for benchmarks); --compact writes the
whole file on one line. Standard library only.
"""
import argparse
import gzip
import json
import os

KERNEL_NEW = {
    "all_reduce": "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
    "all_gather": "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
    "reduce_scatter": "ncclDevKernel_ReduceScatter_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
    "broadcast": "ncclDevKernel_Broadcast_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
    "all_to_all": "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)",
    "send": "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)",
    "recv": "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)",
    "barrier": "ncclDevKernel_AllReduce_Sum_u8_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
}
KERNEL_OLD = {
    "all_reduce": "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)",
    "all_gather": "ncclKernel_AllGather_RING_LL_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)",
    "reduce_scatter": "ncclKernel_ReduceScatter_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)",
    "broadcast": "ncclKernel_Broadcast_RING_LL_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)",
    "all_to_all": "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)",
    "send": "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)",
    "recv": "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)",
    "barrier": "ncclKernel_AllReduce_RING_LL_Sum_uint8_t(ncclDevComm*, unsigned long, ncclWork*)",
}
# record_param_comms "Collective name" (as ProcessGroupNCCL records it) and the nccl:* op name.
COLL_NAME = {"all_reduce": "allreduce", "all_gather": "_allgather_base", "reduce_scatter": "_reduce_scatter_base",
             "broadcast": "broadcast", "all_to_all": "all_to_all", "send": "send", "recv": "recv",
             "barrier": "barrier"}
NCCL_OP = {"all_reduce": "nccl:all_reduce", "all_gather": "nccl:_all_gather_base",
           "reduce_scatter": "nccl:_reduce_scatter_base", "broadcast": "nccl:broadcast",
           "all_to_all": "nccl:all_to_all", "send": "nccl:send", "recv": "nccl:recv", "barrier": "nccl:all_reduce"}
DTYPE_BYTES = {"Float": 4, "BFloat16": 2, "Half": 2, "Long": 8, "Byte": 1}
DTYPE_INPUT_TYPE = {"Float": "float", "BFloat16": "c10::BFloat16", "Half": "c10::Half", "Long": "long int",
                    "Byte": "unsigned char"}


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("outdir")
    p.add_argument("--ranks", type=int, default=4)
    p.add_argument("--world", type=int, default=0, help="world_size to claim (default: --ranks)")
    p.add_argument("--only", default="", help="comma-separated ranks to write (default all)")
    p.add_argument("--steps", type=int, default=2)
    p.add_argument("--kinds", default="all_reduce,all_gather,reduce_scatter,broadcast,all_to_all,send_recv")
    p.add_argument("--elems", type=int, default=1 << 20)
    p.add_argument("--dtype", default="Float", choices=sorted(DTYPE_BYTES))
    p.add_argument("--straggler", type=int, default=-1)
    p.add_argument("--delay-us", type=float, default=0.0)
    p.add_argument("--transfer-us", type=float, default=100.0)
    p.add_argument("--launch-us", type=float, default=5.0)
    p.add_argument("--period-us", type=float, default=10000.0)
    p.add_argument("--gap-us", type=float, default=1000.0)
    p.add_argument("--ops", type=int, default=2)
    p.add_argument("--pad-ops", type=int, default=0)
    p.add_argument("--t0-us", type=float, default=1000.0)
    p.add_argument("--base-ns", type=int, default=1_767_225_600_000_000_000)
    p.add_argument("--variant", default="new", choices=["new", "old", "noargs"])
    p.add_argument("--seq", action="store_true")
    p.add_argument("--kernel-args", action="store_true")
    p.add_argument("--no-correlation", action="store_true")
    p.add_argument("--dist-info", default="full", choices=["full", "partial", "none"])
    p.add_argument("--dist-info-last", action="store_true")
    p.add_argument("--tp", type=int, default=0)
    p.add_argument("--gzip", action="store_true")
    p.add_argument("--compact", action="store_true")
    p.add_argument("--name", default="rank-{rank}.20260101.{pid}.pt.trace.json")
    p.add_argument("--step-kinds", action="append", default=[], metavar="S=KINDS")
    p.add_argument("--elems-at", action="append", default=[], metavar="S:J=N")
    p.add_argument("--dtype-at", action="append", default=[], metavar="S:J=DTYPE")
    p.add_argument("--unknown-cat", type=int, default=1, help="events of an unknown category per step")
    return p.parse_args()


class RankWriter:
    def __init__(self, a, rank, world):
        self.a, self.rank, self.world = a, rank, world
        self.events = []
        self.ext = 0
        self.corr = 0
        self.pid = 1000 + rank

    def next_ext(self):
        self.ext += 1
        return self.ext

    def x(self, cat, name, ts, dur, tid, args=None, pid=None):
        e = {"ph": "X", "cat": cat, "name": name, "pid": self.pid if pid is None else pid, "tid": tid,
             "ts": round(ts, 3), "dur": round(dur, 3)}
        if args is not None:
            e["args"] = args
        self.events.append(e)
        return e

    def launch_and_kernel(self, cpu_ts, gpu_ts, gpu_dur, kname, ext, extra_kernel_args=None):
        """cudaLaunchKernel at cpu_ts (1 us), its ac2g flow and the kernel on stream 7."""
        self.corr += 1
        corr = self.corr
        self.x("cuda_runtime", "cudaLaunchKernel", cpu_ts, 1.0, self.pid, {"External id": ext, "correlation": corr})
        self.events.append({"ph": "s", "id": corr, "pid": self.pid, "tid": self.pid, "ts": round(cpu_ts, 3),
                            "cat": "ac2g", "name": "ac2g"})
        kargs = {"External id": ext, "queued": 0, "device": 0, "context": 1, "stream": 7,
                 "registers per thread": 96, "grid": [2, 1, 1], "block": [256, 1, 1]}
        if not self.a.no_correlation:
            kargs["correlation"] = corr
        if extra_kernel_args:
            kargs.update(extra_kernel_args)
        self.x("kernel", kname, gpu_ts, gpu_dur, 7, kargs, pid=0)
        self.events.append({"ph": "f", "id": corr, "pid": 0, "tid": 7, "ts": round(gpu_ts, 3), "cat": "ac2g",
                            "name": "ac2g", "bp": "e"})


def groups_of(a, world):
    """(pg_name, desc, ranks) of every process group: "0" the world, tp groups "1".."""
    out = [("0", "default_pg", list(range(world)))]
    if a.tp > 0:
        for g in range(world // a.tp):
            out.append((str(g + 1), "tp", list(range(g * a.tp, (g + 1) * a.tp))))
    return out


def group_for(a, kind, rank, world):
    if a.tp > 0 and kind in ("all_gather", "reduce_scatter"):
        g = rank // a.tp
        return str(g + 1), "tp", list(range(g * a.tp, (g + 1) * a.tp))
    return "0", "default_pg", list(range(world))


def rank_kind(kind, rank):
    if kind == "send_recv":
        return "send" if rank % 2 == 0 else "recv"
    return kind


def per_step(a):
    """(step -> kinds, (step, j) -> elems, (step, j) -> dtype) from the per-step options."""
    kinds, elems, dtypes = {}, {}, {}
    for text in a.step_kinds:
        s, _, ks = text.partition("=")
        kinds[int(s)] = [k for k in ks.split(",") if k]
    for text in a.elems_at:
        at, _, n = text.partition("=")
        s, _, j = at.partition(":")
        elems[(int(s), int(j))] = int(n)
    for text in a.dtype_at:
        at, _, d = text.partition("=")
        s, _, j = at.partition(":")
        if d not in DTYPE_BYTES:
            raise SystemExit("--dtype-at: unknown dtype %r" % d)
        dtypes[(int(s), int(j))] = d
    return kinds, elems, dtypes


def write_rank(a, rank, world, kinds):
    w = RankWriter(a, rank, world)
    step_kinds, elems_at, dtype_at = per_step(a)
    seqs = {}
    for s in range(a.steps):
        step_ts = a.t0_us + s * a.period_us
        w.x("user_annotation", "ProfilerStep#%d" % s, step_ts, a.period_us - 10, w.pid,
            {"External id": w.next_ext(), "Record function id": 0})
        # Ops: aten::linear with an aten::mm child and its GEMM kernel.
        for k in range(a.ops):
            t = step_ts + 10 + k * 20
            w.x("cpu_op", "aten::linear", t, 15, w.pid, {"External id": w.next_ext(), "Ev Idx": k,
                                                         "Input Dims": [[64, 64], [64, 64]],
                                                         "Input type": ["float", "float"]})
            ext = w.next_ext()
            w.x("cpu_op", "aten::mm", t + 1, 12, w.pid, {"External id": ext})
            w.launch_and_kernel(t + 2, t + 30, 8, "sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32", ext)
        for k in range(a.pad_ops):
            w.x("cpu_op", "aten::empty", step_ts + 5000 + k * 0.5, 0.2, w.pid,
                {"External id": w.next_ext(), "Record function id": 0, "Ev Idx": k})
        for k in range(a.unknown_cat):
            w.x("weird_future_category", "mystery", step_ts + 3, 1, w.pid)
        w.events.append({"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": w.pid, "tid": w.pid,
                         "ts": round(step_ts + 4, 3), "s": "t", "args": {"Bytes": 4096}})
        for j, kind in enumerate(step_kinds.get(s, kinds)):
            elems = elems_at.get((s, j), a.elems)
            dtype = dtype_at.get((s, j), a.dtype)
            rk = rank_kind(kind, rank)
            pg, desc, members = group_for(a, kind, rank, world)
            n = len(members)
            arrive = step_ts + 100 + j * a.gap_us
            delay = a.delay_us if rank == a.straggler else 0.0
            latest = arrive + (a.delay_us if a.straggler in members else 0.0) + a.launch_us
            if kind == "send_recv":  # a pair: the straggler holds up its partner only
                pair = {rank, rank ^ 1}
                latest = arrive + (a.delay_us if a.straggler in pair else 0.0) + a.launch_us
            cpu_ts = arrive + delay
            gpu_ts = cpu_ts + a.launch_us
            gpu_end = latest + a.transfer_us
            in_n, out_n = elems, elems
            if kind == "all_gather":
                out_n = elems * n
            elif kind == "reduce_scatter":
                in_n = elems * n
            elif kind == "barrier":
                in_n = out_n = 1
            p2p = rk in ("send", "recv")
            key = (pg, p2p)
            seqs[key] = seqs.get(key, 0) + 1
            comm_args = {"Collective name": COLL_NAME[rk], "In msg nelems": in_n, "Out msg nelems": out_n,
                         "Group size": n if not p2p else 2, "dtype": dtype if kind != "barrier" else "Byte",
                         "In split size": "[]" if kind != "all_to_all" else str([in_n // n] * n),
                         "Out split size": "[]" if kind != "all_to_all" else str([out_n // n] * n),
                         "Global rank start": members[0], "Global rank stride": 1,
                         "Process Group Name": pg, "Process Group Description": desc,
                         "Process Group Ranks": str(members)}
            if p2p:
                comm_args["Src Rank"] = rank if rk == "send" else rank - 1
                comm_args["Dst Rank"] = rank + 1 if rk == "send" else rank
            if a.seq:
                comm_args["Seq"] = seqs[key]
            ext_outer = w.next_ext()
            if a.variant == "new":
                args = {"External id": ext_outer, "Record function id": 0}
                args.update(comm_args)
                w.x("cpu_op", "record_param_comms", cpu_ts, 20, w.pid, args)
            elif a.variant == "noargs":
                w.x("cpu_op", "record_param_comms", cpu_ts, 20, w.pid, {"External id": ext_outer})
            ext = w.next_ext()
            nargs = {"External id": ext}
            if a.variant == "old":
                dtype_name = DTYPE_INPUT_TYPE[dtype if kind != "barrier" else "Byte"]
                nargs["Input Dims"] = [[in_n]] if not p2p or rk == "send" else [[out_n]]
                nargs["Input type"] = [dtype_name]
            w.x("cpu_op", NCCL_OP[rk], cpu_ts + 1, 15, w.pid, nargs)
            kname = (KERNEL_OLD if a.variant == "old" else KERNEL_NEW)[rk]
            w.launch_and_kernel(cpu_ts + 2, gpu_ts, gpu_end - gpu_ts, kname, ext,
                                comm_args if a.kernel_args else None)
    # Kineto writes CPU events first, then GPU events; a stable sort by pid keeps that shape.
    w.events.sort(key=lambda e: (e["pid"] == 0, e["ts"]))
    return w.events


def dist_info(a, rank, world):
    if a.dist_info == "none":
        return None
    d = {"backend": "nccl", "world_size": world}
    if a.dist_info == "full":
        d["rank"] = rank
        d["pg_count"] = len(groups_of(a, world))
        d["pg_config"] = [{"pg_name": name, "pg_desc": desc, "backend_config": "cuda:nccl", "pg_size": len(r),
                           "ranks": r} for name, desc, r in groups_of(a, world)]
        d["nccl_version"] = "2.21.5"
    return d


def render(a, rank, world, events):
    top = [("schemaVersion", 1),
           ("deviceProperties", [{"id": 0, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85045690368,
                                  "computeMajor": 9, "computeMinor": 0, "numSms": 132}])]
    d = dist_info(a, rank, world)
    if d is not None and not a.dist_info_last:
        top.append(("distributedInfo", d))
    tail = [("traceName", "rank-%d.pt.trace.json" % rank), ("displayTimeUnit", "ms"),
            ("baseTimeNanoseconds", a.base_ns)]
    if d is not None and a.dist_info_last:
        tail.insert(0, ("distributedInfo", d))
    if a.compact:
        obj = dict(top)
        obj["traceEvents"] = events
        obj.update(dict(tail))
        return json.dumps(obj, separators=(",", ":"))
    parts = ["{"]
    for k, v in top:
        parts.append('  "%s": %s,' % (k, json.dumps(v)))
    parts.append('  "traceEvents": [')
    parts.append(",\n".join("  " + json.dumps(e) for e in events))
    parts.append("  ],")
    parts.append(",\n".join('  "%s": %s' % (k, json.dumps(v)) for k, v in tail))
    parts.append("}")
    return "\n".join(parts) + "\n"


def main():
    a = parse_args()
    world = a.world or a.ranks
    kinds = [k for k in a.kinds.split(",") if k]
    os.makedirs(a.outdir, exist_ok=True)
    only = [int(x) for x in a.only.split(",") if x] or list(range(a.ranks))
    for rank in only:
        text = render(a, rank, world, write_rank(a, rank, world, kinds))
        name = a.name.format(rank=rank, pid=1000 + rank)
        if a.gzip and not name.endswith(".gz"):
            name += ".gz"
        path = os.path.join(a.outdir, name)
        if a.gzip:
            with gzip.open(path, "wt", encoding="utf-8") as f:
                f.write(text)
        else:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)


if __name__ == "__main__":
    main()
