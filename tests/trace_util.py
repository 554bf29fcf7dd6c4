"""Helpers of the trace tests: kernel-shaped blktrace events and the real blkparse run over them."""
import os
import random
import subprocess

from mpathlab.workload.trace import (TA_BACKMERGE, TA_COMPLETE, TA_ISSUE, TA_QUEUE, TC_AHEAD, TC_COMPLETE,
                                     TC_DISCARD, TC_FLUSH, TC_FUA, TC_ISSUE, TC_META, TC_QUEUE, TC_READ, TC_SYNC,
                                     TC_WRITE, BlkEvent, tc_act)
from mpathlab.workload.trace_blktrace import write_blktrace

DATA = os.path.join(os.path.dirname(__file__), "data", "traces")
DEV = 7 << 20 | 3           # loop3


def kernel_event(rng, t, cpu, seq, action_low, op=None):
    """An event as the kernel's __blk_add_trace marks it: read or write by the op (a discard writes, a flush
    reads), sync/ahead/meta/preflush/fua flags, the category of the action."""
    op = op or rng.choice(["read", "write", "write", "discard", "flush", "read"])
    cats = {"read": TC_READ, "write": TC_WRITE, "discard": TC_WRITE | TC_DISCARD, "flush": TC_READ | TC_FLUSH}[op]
    if op in ("read", "write"):
        for bit in (TC_SYNC, TC_AHEAD, TC_META, TC_FUA):
            if rng.random() < 0.15:
                cats |= bit
        if op == "write" and rng.random() < 0.1:
            cats |= TC_FLUSH            # a write with REQ_PREFLUSH
    cats |= {TA_QUEUE: TC_QUEUE, TA_BACKMERGE: TC_QUEUE, TA_ISSUE: TC_ISSUE, TA_COMPLETE: TC_COMPLETE}[action_low]
    nbytes = 0 if op == "flush" else rng.choice([512, 4096, 8192, 65536, 131072])
    return BlkEvent(t, 0 if op == "flush" else rng.randrange(1 << 30), nbytes, tc_act(cats) | action_low,
                    rng.randrange(1, 1 << 16), DEV, cpu, seq, 0, "")


def percpu_events(seed=1, per_cpu=60, cpus=2):
    """Per-CPU event lists: each I/O queued (sometimes merged instead), issued and completed on one CPU."""
    rng = random.Random(seed)
    out = []
    for cpu in range(cpus):
        t = 1_000_000 + rng.randrange(5000)
        seq = 1
        evs = []
        while len(evs) < per_cpu:
            t += rng.randrange(1, 40_000)
            q = kernel_event(rng, t, cpu, seq, TA_QUEUE)
            evs.append(q)
            seq += 1
            if rng.random() < 0.15 and q.nbytes:
                evs.append(q._replace(time_ns=t + 300, sequence=seq, sector=q.sector + q.nbytes // 512,
                                      action=(q.action & ~0xFFFF) | TA_BACKMERGE))
                seq += 1
                continue
            for low, dt, cat in ((TA_ISSUE, 2_000, TC_ISSUE), (TA_COMPLETE, 90_000, TC_COMPLETE)):
                t += dt
                evs.append(q._replace(time_ns=t, sequence=seq,
                                      action=(q.action & ~0xFFFF & ~tc_act(TC_QUEUE)) | tc_act(cat) | low))
                seq += 1
        out.append(evs)
    return out


def write_percpu(directory, name, per_cpu):
    for cpu, evs in enumerate(per_cpu):
        with open(os.path.join(directory, "%s.blktrace.%d" % (name, cpu)), "wb") as f:
            write_blktrace(f, evs)
    return os.path.join(directory, name)


def blkparse(args, cwd):
    return subprocess.run(["blkparse"] + args, cwd=cwd, capture_output=True, check=True, timeout=60).stdout
