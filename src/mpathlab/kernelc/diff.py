"""Differential testing: a C selector against a Python selector.

Random operation traces -- create, add_path, select (+ start_io on the
chosen path, as the multipath core does), end_io with various start times,
clock jumps, fail/reinstate, status INFO/TABLE/IMA -- are replayed through
both implementations in lockstep.  After every operation the results
(chosen path, error string and errno, status text, printk/log lines) must
be equal.  The first divergence is shrunk to a minimal trace (operations
are removed while the divergence persists) and reported.

Traces follow the rules the multipath core keeps: a path is failed only
while valid and reinstated only while failed, start_io goes to the path
just selected, end_io only to an I/O in flight, the CPU is below
nr_cpu_ids.  io-affinity masks include the forms where lib/bitmap.c has
quirks (a chunk wider than eight digits, bits beyond nr_cpu_ids, one
stray character before a full eight-digit group as in "x00000001").
"""
from __future__ import annotations

import logging
import random
from typing import Callable, List, Optional, Sequence, Tuple

from ..kernel import U64
from ..selectors import CpuTopology, SelectorError, lookup
from ..timing import initial_jiffies, jiffies_to_nsecs

U32_TOKENS = ["0", "1", "2", "3", "10", "100", "101", "972", "1023", "1024", "4294967295", "4294967296",
              "18446744073709551617", "+3", "-1", " 7", "\t8", "\xa05", "3x", "0x10", "", "abc", "1 ", "07"]
U32_VALID = ["0", "1", "2", "3", "5", "10", "100", "512", "972", "1000"]
NR_BYTES = [4096] * 12 + [0, 1, 512, 65536, 1 << 20, (1 << 31) - 1, 1 << 31, (1 << 32) - 1, 1 << 32, 1 << 63]


class Trace:
    """One random trace: the selector's environment and its operations."""

    def __init__(self, kind: str, create_args: List[str], nr_cpu_ids: int, node_of: List[int],
                 start_clock: int, ops: List[tuple]):
        self.kind = kind
        self.create_args = create_args
        self.nr_cpu_ids = nr_cpu_ids
        self.node_of = node_of
        self.start_clock = start_clock
        self.ops = ops

    def with_ops(self, ops: List[tuple]) -> "Trace":
        return Trace(self.kind, self.create_args, self.nr_cpu_ids, self.node_of, self.start_clock, list(ops))


def _token(rng: random.Random) -> str:
    return rng.choice(U32_VALID) if rng.random() < 0.6 else rng.choice(U32_TOKENS)


def _mask_text(rng: random.Random, n: int) -> str:
    """A CPU mask as a table would give it, plain or in one of lib/bitmap.c's odd forms."""
    r = rng.random()
    if r < 0.05:
        return rng.choice(["g", "1g", "zz", "-1", "1-2"])          # invalid characters: EINVAL both ways
    if r < 0.10:
        # bitmap_get_x32_reverse steps past one stray character before a full
        # eight-digit group; wider chunks and bits beyond nr_cpu_ids overflow
        return rng.choice(["x00000001", "g00000002", "x0000001", "100000000", "000000001",
                           "%x" % (1 << n), "1,00000000", "ffffffff,ffffffff,ffffffff", "1,", ",1"])
    if r < 0.12:
        return "0"                                                  # parses; maps nothing
    if r < 0.35:
        cpu = rng.randrange(n)
        mask = 1 << cpu                                             # one CPU (often taken already)
    else:
        mask = rng.getrandbits(n) or 1
    chunks = []
    nchunks = (n + 31) // 32
    top = nchunks
    while top > 1 and not (mask >> (32 * (top - 1))):
        top -= 1                                                    # leading zero chunks may be left out
    if rng.random() < 0.5:
        top = nchunks
    for i in range(top - 1, -1, -1):
        word = (mask >> (32 * i)) & 0xFFFFFFFF
        chunks.append(("%08x" if i < top - 1 or rng.random() < 0.3 else "%x") % word)
    text = ",".join(chunks)
    if rng.random() < 0.1:
        text = text.upper()
    return text


def _path_args(rng: random.Random, kind: str, nr_cpu_ids: int) -> List[str]:
    r = rng.random()
    if kind == "io-affinity":
        if r < 0.05:
            return []
        if r < 0.08:
            return [_mask_text(rng, nr_cpu_ids), "1"]
        return [_mask_text(rng, nr_cpu_ids)]
    most = {"service-time": 2}.get(kind, 1)
    if r < 0.06:
        return [_token(rng) for _ in range(most + 1)]               # one argument too many
    return [_token(rng) for _ in range(rng.randint(0, most))]


def _clock_delta(rng: random.Random) -> int:
    r = rng.random()
    if r < 0.1:
        return 0
    if r < 0.35:
        return rng.randint(1, 1000)
    if r < 0.7:
        return rng.randint(1000, 10 ** 6)
    if r < 0.85:
        return rng.randint(10 ** 6, 10 ** 8)
    if r < 0.93:
        return rng.randint(1, 64) << 24                             # HST weight buckets
    if r < 0.98:
        return rng.getrandbits(40)
    return rng.getrandbits(64)                                      # wrap-around


def random_trace(rng: random.Random, kind: str, max_ops: int = 60) -> Trace:
    """A random trace for a selector of kind ``kind`` (the Python selector's name)."""
    if kind == "historical-service-time":
        create_args = [_token(rng) for _ in range(rng.choice([0, 0, 1, 2, 2, 3]))]
    else:
        create_args = [_token(rng) for _ in range(rng.choice([0, 0, 0, 1, 2]))]
    nr_cpu_ids = rng.choice([1, 2, 4, 8, 8, 16, 33, 64, 70])
    nodes = rng.choice([1, 1, 2, 3])
    node_of = sorted(rng.randrange(nodes) for _ in range(nr_cpu_ids)) if rng.random() < 0.7 else \
        [rng.randrange(nodes) for _ in range(nr_cpu_ids)]
    start_clock = rng.choice([0, 3600 * 10 ** 9, rng.getrandbits(64), (1 << 64) - rng.randint(1, 10 ** 9)])
    ops: List[tuple] = []
    npaths = rng.randint(1, 6)
    for i in range(npaths):
        ops.append(("add", "p%d" % i, _path_args(rng, kind, nr_cpu_ids)))
    nio = 0
    for _ in range(rng.randint(1, max_ops)):
        r = rng.random()
        if r < 0.32:
            ops.append(("select", "io%d" % nio, rng.choice(NR_BYTES), rng.randrange(nr_cpu_ids)))
            nio += 1
        elif r < 0.55 and nio:
            mode = rng.random()
            if mode < 0.6:
                start = ("ktime", 0)
            elif mode < 0.75:
                start = ("delta", rng.choice([-1, 1]) * _clock_delta(rng))
            elif mode < 0.9:
                start = ("abs", jiffies_to_nsecs(initial_jiffies(250) + rng.getrandbits(20), 250))
            else:
                start = ("abs", rng.choice([0, rng.getrandbits(64)]))
            ops.append(("end", "io%d" % rng.randrange(nio), start))
        elif r < 0.75:
            ops.append(("clock", _clock_delta(rng)))
        elif r < 0.82:
            ops.append(("fail", "p%d" % rng.randrange(npaths)))
        elif r < 0.89:
            ops.append(("reinstate", "p%d" % rng.randrange(npaths)))
        elif r < 0.97:
            ops.append(("status", rng.choice([None] + ["p%d" % i for i in range(npaths)]),
                        rng.choice(["info", "info", "table", "ima"])))
        else:
            ops.append(("add", "p%d" % npaths, _path_args(rng, kind, nr_cpu_ids)))
            npaths += 1
    return Trace(kind, create_args, nr_cpu_ids, node_of, start_clock, ops)


class _LogCapture(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.lines: List[str] = []

    def emit(self, record):
        self.lines.append(record.getMessage())


def _strip_dm_prefix(text: str) -> str:
    """'device-mapper: multipath io-affinity: CPU ...' -> 'CPU ...' (Python logs the bare text)."""
    parts = text.split(": ", 2)
    return parts[2] if len(parts) == 3 and parts[0] == "device-mapper" else text


class Divergence:
    def __init__(self, trace: Trace, index: int, c_result, py_result, lines: List[str]):
        self.trace = trace
        self.index = index          # operation index in trace.ops, -1 for create
        self.c_result = c_result
        self.py_result = py_result
        self.lines = lines          # the replay, one line per operation up to the divergence

    def format(self, c_label: str = "C", py_label: str = "Python") -> str:
        out = ["  " + ln for ln in self.lines]
        out.append("    -> %-7s %s" % (c_label + ":", _describe(self.c_result)))
        out.append("    -> %-7s %s" % (py_label + ":", _describe(self.py_result)))
        return "\n".join(out)


def _describe(result) -> str:
    """One operation's outcome for a reader: value or error, then the log lines it produced."""
    outcome, logged = result
    if outcome[0] == "ok":
        text = "returned %r" % (outcome[1],) if len(outcome) > 1 else "ok"
    elif outcome[0] == "SelectorError":
        text = "error %r, errno %d" % (outcome[1], outcome[2])
    else:
        text = "raised %s" % outcome[1]
    if logged:
        text += "; logged %s" % "; ".join(repr(x) for x in logged)
    return text


def _call(fn, *a):
    try:
        return ("ok", fn(*a))
    except SelectorError as e:
        return ("SelectorError", e.message, e.errno)
    except Exception as e:  # an implementation bug shows as a divergence, not a crash of the tool
        return ("exception", type(e).__name__)


def replay(trace: Trace, c_cls, py_cls) -> Optional[Divergence]:
    """Run ``trace`` through both selector types; the first divergence or None."""
    now = [trace.start_clock & U64]
    topo = CpuTopology(trace.nr_cpu_ids, trace.node_of)
    cpu = [0]
    env = dict(clock=lambda: now[0], cpu=lambda: cpu[0], topology=topo)
    lib = c_cls.lib
    py_log = _LogCapture()
    loggers = [logging.getLogger("mpathlab.selectors"), logging.getLogger("mpathlab.kernelc")]
    saved = [(lg.level, lg.propagate) for lg in loggers]
    loggers[0].addHandler(py_log)
    for lg in loggers:
        lg.setLevel(logging.DEBUG)
        lg.propagate = False
    lines = ["create %s args=%r nr_cpu_ids=%d node_of=%s clock=%d"
             % (trace.kind, trace.create_args, trace.nr_cpu_ids, trace.node_of, now[0])]

    def step(fc, fp, *a):
        """(c result, python result) including the log lines each produced."""
        n0 = lib.dmesg_count
        del py_log.lines[:]
        rc = _call(fc, *a)
        rp = _call(fp, *a)
        c_lines = [_strip_dm_prefix(t) for _, t in lib.dmesg[len(lib.dmesg) - (lib.dmesg_count - n0):]] \
            if lib.dmesg_count > n0 else []
        return (rc, c_lines), (rp, list(py_log.lines))

    try:
        rc, rp = step(lambda: c_cls(trace.create_args, **env), lambda: py_cls(trace.create_args, **env))
        # compare outcomes, not the objects
        oc = (rc[0][0] if rc[0][0] != "ok" else "ok",) + tuple(rc[0][1:] if rc[0][0] != "ok" else ()), rc[1]
        op = (rp[0][0] if rp[0][0] != "ok" else "ok",) + tuple(rp[0][1:] if rp[0][0] != "ok" else ()), rp[1]
        if oc != op:
            return Divergence(trace, -1, oc, op, lines)
        if rc[0][0] != "ok":
            return None
        cps, pps = rc[0][1], rp[0][1]
        paths = {}            # label -> path object (the label itself)
        failed = set()
        inflight = {}         # io label -> (path, nr_bytes, ktime at start)
        for i, op_ in enumerate(trace.ops):
            kind = op_[0]
            line = None
            res = None
            if kind == "add":
                _, label, args = op_
                if label in paths:
                    continue
                line = "add_path %s %r" % (label, args)
                res = step(cps.add_path, pps.add_path, label, args)
                if res[0][0][0] == "ok" and res[1][0][0] == "ok":
                    paths[label] = label
            elif kind == "select":
                _, io, nr, c = op_
                cpu[0] = c
                line = "select nr_bytes=%d cpu=%d" % (nr, c)
                res = step(cps.select_path, pps.select_path, nr)
                if res[0] == res[1] and res[0][0][0] == "ok" and res[0][0][1] is not None:
                    p = res[0][0][1]
                    lines.append(line + "  -> %s" % p)
                    line = "start_io %s nr_bytes=%d (%s)" % (p, nr, io)
                    res = step(cps.start_io, pps.start_io, p, nr)
                    inflight[io] = (p, nr, now[0])
            elif kind == "end":
                _, io, (mode, val) = op_
                if io not in inflight:
                    continue
                p, nr, t0 = inflight.pop(io)
                start = t0 if mode == "ktime" else (t0 + val) & U64 if mode == "delta" else val & U64
                line = "end_io %s nr_bytes=%d start_time=%d (%s)" % (p, nr, start, io)
                res = step(cps.end_io, pps.end_io, p, nr, start)
            elif kind == "clock":
                now[0] = (now[0] + op_[1]) & U64
                lines.append("clock += %d  (now %d)" % (op_[1], now[0]))
                continue
            elif kind == "fail":
                p = op_[1]
                if p not in paths or p in failed:
                    continue
                failed.add(p)
                line = "fail_path %s" % p
                res = step(cps.fail_path, pps.fail_path, p)
            elif kind == "reinstate":
                p = op_[1]
                if p not in failed:
                    continue
                failed.discard(p)
                line = "reinstate_path %s" % p
                res = step(cps.reinstate_path, pps.reinstate_path, p)
            elif kind == "status":
                _, p, k = op_
                if p is not None and p not in paths:
                    continue
                line = "status %s %s" % (p or "(selector)", k)
                res = step(cps.status, pps.status, p, k)
            if res is None:
                continue
            if res[0] != res[1]:
                lines.append(line)
                return Divergence(trace, i, res[0], res[1], lines)
            lines.append(line + ("  -> %r" % (res[0][0][1],) if res[0][0][0] == "ok" and res[0][0][1] is not None
                                 else "" if res[0][0][0] == "ok" else "  -> %r" % (res[0][0],)))
        # finally every status line
        for p in [None] + sorted(paths):
            for k in ("info", "table", "ima"):
                line = "status %s %s" % (p or "(selector)", k)
                res = step(cps.status, pps.status, p, k)
                if res[0] != res[1]:
                    lines.append(line)
                    return Divergence(trace, len(trace.ops), res[0], res[1], lines)
        return None
    finally:
        loggers[0].removeHandler(py_log)
        for lg, (lvl, prop) in zip(loggers, saved):
            lg.setLevel(lvl)
            lg.propagate = prop


def shrink(div: Divergence, c_cls, py_cls) -> Divergence:
    """Remove operations while the trace still diverges (ddmin on the operation list)."""
    trace = div.trace
    best = div
    ops = list(trace.ops[:div.index + 1]) if div.index >= 0 else []
    again = replay(trace.with_ops(ops), c_cls, py_cls)
    if again is not None:
        best = again
    else:
        ops = list(trace.ops)
    n = 2
    while len(ops) >= 1:
        chunk = max(1, (len(ops) + n - 1) // n)
        reduced = False
        for start in range(0, len(ops), chunk):
            cand = ops[:start] + ops[start + chunk:]
            d = replay(trace.with_ops(cand), c_cls, py_cls)
            if d is not None:
                ops, best = cand, d
                n = max(n - 1, 2)
                reduced = True
                break
        if not reduced:
            if chunk == 1:
                break
            n = min(len(ops), n * 2)
    return best


class DiffResult:
    def __init__(self, traces: int, divergence: Optional[Divergence], original_ops: int = 0):
        self.traces = traces
        self.divergence = divergence
        self.original_ops = original_ops


def run_diff(c_cls, py_name: str, traces: int, seed: int = 1, max_ops: int = 60,
             progress: Optional[Callable[[float], None]] = None) -> DiffResult:
    """Replay ``traces`` random traces; stop at the first divergence and shrink it."""
    py_cls = lookup(py_name)
    if py_cls is None:
        raise SelectorError("unknown Python selector %r" % py_name)
    kind = py_cls.name
    for t in range(traces):
        rng = random.Random((seed << 32) ^ t)
        trace = random_trace(rng, kind, max_ops)
        d = replay(trace, c_cls, py_cls)
        if d is not None:
            return DiffResult(t + 1, shrink(d, c_cls, py_cls), len(trace.ops))
        if progress and t % 50 == 0:
            progress(t / traces)
    return DiffResult(traces, None)
