#!/usr/bin/env python3
"""mpathlab trace benchmark: run by hand, prints ratios measured in one run on one machine.

    python bench/bench_trace.py            # 1 M and 10 M I/Os (about 15 CPU minutes, 2 GB of /tmp)
    python bench/bench_trace.py --quick    # 100 k and 1 M

Generates, streamed to temporary files, a fio iolog (version 3), a blktrace binary (queue, issue and
completion events per I/O) and blkparse text of the same events, then measures, each in a fresh process:
  1. reading each format through the replay's io pieces (workload/trace_replay.py): I/Os per CPU second
     and peak memory (max RSS) for the small and the large trace;
  2. replaying the iolog as a job (read_iolog, replay_no_stall=1, iodepth 32 over 4 service-time
     paths) in the Python engine: simulated I/Os per CPU second and peak memory, small and large;
  3. an ordinary fio job (no trace) of the small count on the same paths and depth, in the Python engine
     and in the compiled core: what the engine costs per I/O without a trace (a replay runs in the
     Python engine: the core has no trace feed, see docs/traces.md).
Rates are per CPU second of the measuring process (time.process_time), so a busy machine slows the
run but not the figures much.
Target: memory flat in the trace length (the large trace's peak RSS within 1.1x of the small one's):
the trace is read as the run consumes it, never held whole.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "..", "src")
sys.path.insert(0, SRC)

from mpathlab.workload.trace import BLK_IO_TRACE_MAGIC, BLK_IO_TRACE_VERSION, TA_COMPLETE, TA_QUEUE, \
    TC_COMPLETE, TC_QUEUE, TC_READ, TC_WRITE, tc_act  # noqa: E402
from mpathlab.workload.trace_blktrace import HEADER  # noqa: E402

TOPO = """[multipath]
table = "0 8388608 multipath 0 0 1 1 service-time 0 4 2 sdb 1 1 sdc 1 1 sdd 1 1 sde 1 1"
[paths.sdb]
devt = "8:16"
service = { dist = "exponential", mean = "100us" }
[paths.sdc]
devt = "8:32"
service = { dist = "exponential", mean = "100us" }
[paths.sdd]
devt = "8:48"
service = { dist = "exponential", mean = "150us" }
[paths.sde]
devt = "8:64"
service = { dist = "exponential", mean = "300us" }
"""


def _io(i: int):
    """The i-th I/O of the generated workload: (time us, write?, offset, bytes); a cheap deterministic mix."""
    h = (i * 2654435761) & 0xFFFFFFFF
    return 100 + 20 * i + (h & 15), bool(h & 0x30 == 0x30), (h % 1_000_000) * 4096, 4096 << (h >> 29)


def write_traces(directory: str, n: int) -> dict:
    """The same n I/Os as a v3 iolog, a blktrace binary (a queue and a completion event each) and
    blkparse text of those events (as format_blkparse_line prints them), written in chunks."""
    paths = {k: os.path.join(directory, "t%d.%s" % (n, k)) for k in ("iolog", "blktrace", "txt")}
    pack = HEADER.pack
    magic = BLK_IO_TRACE_MAGIC | BLK_IO_TRACE_VERSION
    dev = 8 << 20 | 16
    acts = [(tc_act(d | TC_QUEUE) | TA_QUEUE, tc_act(d | TC_COMPLETE) | TA_COMPLETE, rwbs)
            for d, rwbs in ((TC_READ, "R"), (TC_WRITE, "W"))]
    with open(paths["iolog"], "w") as lg, open(paths["blktrace"], "wb") as bt, open(paths["txt"], "w") as tx:
        lg.write("fio version 3 iolog\n0 sdb add\n10 sdb open\n")
        for start in range(0, n, 20000):
            lines, events, text = [], [], []
            for i in range(start, min(n, start + 20000)):
                t, w, off, nbytes = _io(i)
                lines.append("%d sdb %s %d %d\n" % (t, "write" if w else "read", off, nbytes))
                qa, ca, rwbs = acts[w]
                sec = off // 512
                events.append(pack(magic, 2 * i + 1, t * 1000, sec, nbytes, qa, 1000, dev, 0, 0, 0))
                events.append(pack(magic, 2 * i + 2, t * 1000 + 90_000, sec, nbytes, ca, 1000, dev, 0, 0, 0))
                blocks = nbytes // 512
                text.append("  8,16   0 %8d %5d.%09d  1000  Q %3s %d + %d [fio]\n"
                            "  8,16   0 %8d %5d.%09d  1000  C %3s %d + %d [0]\n"
                            % (2 * i + 1, t // 10 ** 6, t % 10 ** 6 * 1000, rwbs, sec, blocks,
                               2 * i + 2, (t + 90) // 10 ** 6, (t + 90) % 10 ** 6 * 1000, rwbs, sec, blocks))
            lg.write("".join(lines))
            bt.write(b"".join(events))
            tx.write("".join(text))
    return paths


def _fresh(code: str) -> dict:
    """Run CODE in a fresh interpreter; it prints a JSON dict; add its peak RSS (KiB). The peak is VmHWM
    of /proc/self/status, the process's own: getrusage's ru_maxrss keeps across execve the peak of the
    process forked from this one, so every child would report at least this process's size."""
    prog = ("import sys, json, time, re; sys.path.insert(0, %r)\n%s\n"
            "out['rss_kib'] = int(re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read()).group(1))\n"
            "print(json.dumps(out))" % (SRC, code))
    p = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True, check=True)
    return json.loads(p.stdout.strip().splitlines()[-1])


def read_run(path: str) -> dict:
    return _fresh("""
from mpathlab.workload.trace_replay import ReplayOptions, find_source, open_pieces
t = time.process_time()
n = sum(1 for p in open_pieces(find_source(%r, '.'), ReplayOptions()) if p[0] == 0)
out = {'pieces': n, 'per_s': n / (time.process_time() - t)}""" % path)


def replay_run(path: str, topo: str) -> dict:
    return _fresh("""
from mpathlab.runner import run_simulation
from mpathlab.topology import load_topology
from mpathlab.workload.fio import parse_fio
jobs = parse_fio('[r]\\nread_iolog=%s\\nreplay_no_stall=1\\nioengine=libaio\\niodepth=32\\n')
t = time.process_time()
res = run_simulation(load_topology(%r), jobs)
out = {'ios': res.completed, 'per_s': res.completed / (time.process_time() - t), 'engine': res.engine,
       'shares': res.shares}""" % (path, topo))


def job_run(n: int, topo: str, engine: str) -> dict:
    """The same topology and depth with an ordinary fio job of N I/Os (no trace), on ENGINE: what the
    engine costs per I/O without a trace, and what the compiled core would allow a trace feed."""
    return _fresh("""
import os
os.environ['MPATHLAB_ENGINE'] = %r
from mpathlab.runner import run_simulation
from mpathlab.topology import load_topology
from mpathlab.workload.fio import parse_fio
jobs = parse_fio('[r]\\nrw=randrw\\nrwmixread=75\\nbs=4k\\nnumber_ios=%d\\nsize=4g\\nioengine=libaio\\niodepth=32\\n')
t = time.process_time()
res = run_simulation(load_topology(%r), jobs)
out = {'ios': res.completed, 'per_s': res.completed / (time.process_time() - t), 'engine': res.engine}""" % (
        engine, n, topo))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--sizes", metavar="SMALL,LARGE", help="the two trace lengths (default 1000000,10000000)")
    ap.add_argument("--formats", default="iolog,blktrace,txt", help="formats to read (default: %(default)s; "
                    "empty: none)")
    ap.add_argument("--no-replay", action="store_true", help="do not replay the iolog")
    ap.add_argument("--no-baseline", action="store_true", help="do not run the ordinary job (no trace)")
    a = ap.parse_args()
    small, large = (100_000, 1_000_000) if a.quick else (1_000_000, 10_000_000)
    if a.sizes:
        small, large = (int(x) for x in a.sizes.split(","))
    out: dict = {"small": small, "large": large}
    formats = [k for k in a.formats.split(",") if k]
    with tempfile.TemporaryDirectory(prefix="mpathlab-bench-trace-") as d:
        topo = os.path.join(d, "t.toml")
        with open(topo, "w") as f:
            f.write(TOPO)
        if formats or not a.no_replay:
            t = time.perf_counter()
            traces = {n: write_traces(d, n) for n in (small, large)}
            print("generated %d and %d I/Os in three formats (%.0f s; %s MB on disk)"
                  % (small, large, time.perf_counter() - t,
                     sum(os.path.getsize(p) for ps in traces.values() for p in ps.values()) >> 20))
        if formats:
            print("\n== reading a trace into io pieces (fresh process each)")
            print("%-10s %14s %14s %12s %12s %8s" % ("format", "I/O/s small", "I/O/s large", "RSS small",
                                                     "RSS large", "ratio"))
        for kind in formats:
            s, l_ = read_run(traces[small][kind]), read_run(traces[large][kind])
            assert s["pieces"] == small and l_["pieces"] == large, (kind, s, l_)
            out["read_" + kind] = {"small": s, "large": l_}
            print("%-10s %14.0f %14.0f %9d KiB %9d KiB %7.2fx" % (kind, s["per_s"], l_["per_s"], s["rss_kib"],
                                                                 l_["rss_kib"], l_["rss_kib"] / s["rss_kib"]))
        if not a.no_replay:
            print("\n== replaying the iolog as a job (replay_no_stall, iodepth 32, 4 paths, service-time)")
            s, l_ = replay_run(traces[small]["iolog"], topo), replay_run(traces[large]["iolog"], topo)
            assert s["ios"] == small and l_["ios"] == large, (s["ios"], l_["ios"])
            out["replay"] = {"small": s, "large": l_}
            print("%s engine: %d I/Os at %.0f I/O/s, %d KiB; %d I/Os at %.0f I/O/s, %d KiB (x%.2f RSS for 10x "
                  "the I/Os)" % (l_["engine"], small, s["per_s"], s["rss_kib"], large, l_["per_s"], l_["rss_kib"],
                                 l_["rss_kib"] / s["rss_kib"]))
            print("shares (large): %s" % ", ".join("%s %.3f" % kv for kv in sorted(l_["shares"].items())))
        if not a.no_baseline:
            print("\n== the same paths and depth, an ordinary job of %d I/Os (randrw 75/25, 4k), no trace" % small)
            for engine in ("python", ""):
                r = job_run(small, topo, engine)
                assert r["ios"] == small, r
                out["job_" + (engine or "default")] = r
                print("%s engine: %.0f I/O/s, %d KiB" % (r["engine"], r["per_s"], r["rss_kib"]))
    if a.json:
        print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
