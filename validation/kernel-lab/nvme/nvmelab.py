#!/usr/bin/env python3
"""The NVMe kernel lab: native NVMe multipath over nvmet (one null_blk namespace, one port per path).

    nvmelab.py plan BATCH                       # the guest's cells.txt
    nvmelab.py run BATCH [--rep N] [--runs-dir DIR]   # one boot (KLAB_DIR selects the kernel's lab)
    nvmelab.py summarise BOOTDIR                # summary.json per cell (run does it), raw files dropped
    nvmelab.py collect                          # results-nvme.json from runs/*/cells/*/summary.json

A cell: transport (tcp over the guest's loopback, or loop), one netem delay per port (TCP: the commands
sent to that port's TCP port wait that long), the ANA state of each port's group, the iopolicy, fio's
depth and runtime, and an optional event (an ANA state change, or the port unlinked from the subsystem)
at a given second.  Every boot goes to runs/<batch>-<series>-<UTC stamp>/.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Dict, List

HERE = os.path.dirname(os.path.abspath(__file__))
RUN_SH = os.path.join(HERE, "..", "lab", "run.sh")
RUNS = os.path.join(HERE, "runs")
RESULTS = os.path.join(HERE, "results-nvme.json")

ANA = {"o": "optimized", "n": "non-optimized", "i": "inaccessible"}

# name: (transport, delays_us per port, ANA state per port, iopolicy, fio iodepth, runtime s, event, event at s
#        [, options: trace, ffail0 (guest/main.sh)])
CELLS: Dict[str, tuple] = {
    # one port: the guest's CPU time per I/O of each transport (the model's guest is fitted on these)
    "C1": ("tcp", (0,), "o", "round-robin", 16, 4, "none", 0),
    "C1-loop": ("loop", (0,), "o", "round-robin", 16, 4, "none", 0),
    # two equal ports
    "E2-numa": ("tcp", (0, 0), "oo", "numa", 16, 4, "none", 0),
    "E2-rr": ("tcp", (0, 0), "oo", "round-robin", 16, 4, "none", 0),
    "E2-qd": ("tcp", (0, 0), "oo", "queue-depth", 16, 4, "none", 0),
    # the commands sent to port 1 wait 4 ms, to port 2 12 ms (netem)
    "A2-numa": ("tcp", (4000, 12000), "oo", "numa", 16, 4, "none", 0),
    "A2-rr": ("tcp", (4000, 12000), "oo", "round-robin", 16, 4, "none", 0),
    "A2-qd": ("tcp", (4000, 12000), "oo", "queue-depth", 16, 4, "none", 0),
    # three equal ports
    "E3-rr": ("tcp", (0, 0, 0), "ooo", "round-robin", 16, 4, "none", 0),
    # ANA groups: port 1 non-optimized
    "N2-rr": ("tcp", (0, 0), "no", "round-robin", 16, 4, "none", 0),
    "N3-rr": ("tcp", (0, 0, 0), "noo", "round-robin", 16, 4, "none", 0),
    "N2nn-rr": ("tcp", (0, 0), "nn", "round-robin", 16, 4, "none", 0),
    # events at 2 s
    "ev-ana-inacc-rr": ("tcp", (0, 0), "oo", "round-robin", 16, 4, "ana:1:inaccessible", 2),
    "ev-ana-nonopt-numa": ("tcp", (0, 0), "oo", "numa", 16, 4, "ana:1:non-optimized", 2),
    "ev-rmport-rr": ("tcp", (0, 0), "oo", "round-robin", 16, 4, "rmport:1", 2),
    "ev-rmport-numa": ("tcp", (0, 0), "oo", "numa", 16, 4, "rmport:1", 2),
    # the loop transport (6.12 only)
    "L2-rr": ("loop", (0, 0), "oo", "round-robin", 16, 4, "none", 0),
    "L2-qd": ("loop", (0, 0), "oo", "queue-depth", 16, 4, "none", 0),
    "ev-rmport-rr-loop": ("loop", (0, 0), "oo", "round-robin", 16, 4, "rmport:1", 2),
    # transitions timed from the kernel's completion tracepoint, nothing else running around the event
    "tr-rmport-rr": ("tcp", (0, 0), "oo", "round-robin", 16, 4, "rmport:1", 2, "trace"),
    "tr-rmport-numa": ("tcp", (0, 0), "oo", "numa", 16, 4, "rmport:1", 2, "trace"),
    "tr-ana-inacc-rr": ("tcp", (0, 0), "oo", "round-robin", 16, 4, "ana:1:inaccessible", 2, "trace"),
    "tr-ana-inacc-numa": ("tcp", (0, 0), "oo", "numa", 16, 4, "ana:1:inaccessible", 2, "trace"),
    "tr-ana-nonopt-numa": ("tcp", (0, 0), "oo", "numa", 16, 4, "ana:1:non-optimized", 2, "trace"),
    "tr-rmport-rr-loop": ("loop", (0, 0), "oo", "round-robin", 16, 4, "rmport:1", 2, "trace"),
    # queue-depth with each command's time on its controller traced (the A2-qd and L2-qd question)
    "tq-A2-qd": ("tcp", (4000, 12000), "oo", "queue-depth", 16, 4, "none", 0, "reqtrace"),
    "tq-L2-qd": ("loop", (0, 0), "oo", "queue-depth", 16, 4, "none", 0, "reqtrace"),
    # one port removed, fast_io_fail_tmo 0: the guest's error recovery of one controller, alone
    "C1-rmport": ("tcp", (0,), "o", "round-robin", 16, 4, "rmport:1", 2, "trace,ffail0"),
    # one port going non-optimized (it keeps serving): when the host reads the ANA log after the notice
    "C1-ana-nonopt": ("tcp", (0,), "o", "numa", 16, 4, "ana:1:non-optimized", 2, "trace"),
}

BATCHES = {
    "calib": ["C1", "C1-loop"],
    "smoke": ["E2-rr", "A2-qd", "ev-rmport-numa", "L2-rr"],
    "steady": ["E2-numa", "E2-rr", "E2-qd", "A2-numa", "A2-rr", "A2-qd", "E3-rr", "N2-rr", "N3-rr", "N2nn-rr"],
    "events": ["ev-ana-inacc-rr", "ev-ana-nonopt-numa", "ev-rmport-rr", "ev-rmport-numa"],
    "loop": ["L2-rr", "L2-qd", "ev-rmport-rr-loop"],
    "transitions": ["C1-rmport", "C1-ana-nonopt", "tr-rmport-rr", "tr-rmport-numa", "tr-ana-inacc-rr", "tr-ana-inacc-numa",
                    "tr-ana-nonopt-numa", "tq-A2-qd", "tq-L2-qd"],
    "transitions-loop": ["tr-rmport-rr-loop"],
}


def series_of(release: str) -> str:
    parts = release.split(".")
    return ".".join(parts[:2])


def cells_for(batches: List[str], series: str) -> List[str]:
    names = []
    for b in batches:
        if b not in BATCHES:
            raise SystemExit("nvmelab.py: unknown batch %s (one of %s)" % (b, ", ".join(BATCHES)))
        for n in BATCHES[b]:
            c = CELLS[n]
            if series == "6.1" and (c[0] == "loop" or c[3] == "queue-depth"):
                continue        # nvme-loop is not built in Debian's 6.1; queue-depth arrived in 6.11
            names.append(n)
    return names


def plan_lines(names: List[str], reps: int) -> List[str]:
    lines = []
    for r in range(1, reps + 1):
        for n in names:
            t, delays, ana, pol, depth, rt, ev, at = CELLS[n][:8]
            opts = CELLS[n][8] if len(CELLS[n]) > 8 else "-"
            lines.append("%s--r%d %s %s %s %s %d %d %s %d %s" % (
                n, r, t, ",".join(map(str, delays)), ",".join(ANA[a] for a in ana), pol, depth, rt, ev, at, opts))
    return lines


def _stat(path):
    """stat.* written by the guest: uptime, then per port: port ctrl disk reads sectors state ana."""
    with open(path) as f:
        lines = f.read().split("\n")
    out = {"uptime": float(lines[0].split()[0]), "ports": {}}
    for ln in lines[1:]:
        w = ln.split()
        if len(w) >= 7:
            out["ports"][w[0]] = {"ctrl": w[1], "disk": w[2], "reads": int(w[3]), "sectors": int(w[4]),
                                  "state": w[5], "ana": w[6]}
    return out


def _shares(a, b):
    """Per-port share of the 4k reads completed between two snapshots (sectors / 8, as the dm lab)."""
    # a port whose path disk is gone (nvme-loop deletes the controller) kept no count: nothing after a
    d = {p: max(0, b["ports"][p]["sectors"] - a["ports"][p]["sectors"]) // 8 for p in a["ports"]
         if p in b["ports"]}
    tot = sum(d.values())
    return {p: (v / tot if tot else 0.0) for p, v in sorted(d.items())}, tot


def _lat_log(path):
    """fio's per-I/O latency log with Unix-epoch timestamps: [(completion ms, latency ms)]."""
    out = []
    with open(path) as f:
        for ln in f:
            w = ln.split(",")
            if len(w) >= 2:
                out.append((int(w[0]), int(w[1]) / 1e6))
    out.sort()
    return out


def summarise_cell(d: str) -> dict:
    name = os.path.basename(d)
    base, _, rep = name.rpartition("--r")
    s = {"cell": base, "run": name, "repeat": int(rep)}
    with open(os.path.join(d, "head.txt")) as f:
        s["head"] = f.readline().strip()
    pre = _stat(os.path.join(d, "stat.pre"))
    post = _stat(os.path.join(d, "stat.post"))
    after = post
    if os.path.exists(os.path.join(d, "stat.ev")):
        post = json.loads(json.dumps(post))
        # a path disk deleted with its controller (nvme-loop) took its counts along: the last snapshot
        # before the event stands in for it (what it completed after that is not counted)
        last = _stat(os.path.join(d, "stat.ev"))
        for port, v in post["ports"].items():
            if v["state"] == "gone" and port in last["ports"]:
                post["ports"][port] = dict(last["ports"][port], state="gone", ana="-")
    s["shares"], s["ios"] = _shares(pre, post)
    s["state_after"] = {p: [v["state"], v["ana"]] for p, v in post["ports"].items()}
    try:
        if not os.path.exists(os.path.join(d, "fio.json")) and os.path.exists(os.path.join(d, "summary.json")):
            raise FileNotFoundError      # summarised before, fio.json dropped: its figures stay (below)
        with open(os.path.join(d, "fio.json")) as f:
            txt = f.read()
        fj = json.loads(txt[txt.index("{"):])
        job = fj["jobs"][0]
        s["fio_errors"] = job.get("total_err", 0)
        s["fio_error"] = job.get("error", 0)
        s["fio_iops"] = round(job["read"]["iops"], 1)
        s["clat_mean_us"] = round(job["read"]["clat_ns"]["mean"] / 1e3, 1)
        s["clat_max_ms"] = round(job["read"]["clat_ns"]["max"] / 1e6, 2)
    except FileNotFoundError:
        pass
    except (OSError, ValueError, KeyError) as e:
        s["fio_problem"] = str(e)
    infl = os.path.join(d, "inflight.txt")
    if os.path.exists(infl):
        per: Dict[str, List[int]] = {}
        with open(infl) as f:
            for ln in f:
                w = ln.split()
                if len(w) >= 3:
                    per.setdefault(w[1], []).append(int(w[2]))
        s["mean_inflight"] = {p: round(sum(v) / len(v), 2) for p, v in sorted(per.items())}
    ev = os.path.join(d, "stat.ev")
    if os.path.exists(ev):
        mid = _stat(ev)
        mid2 = _stat(os.path.join(d, "stat.ev2"))
        s["shares_before"], s["ios_before"] = _shares(pre, mid)
        s["shares_after"], s["ios_after"] = _shares(mid2, after)
        s["event_snapshot_s"] = round(mid2["uptime"] - mid["uptime"], 2)
        ev_ms, s["event"] = _event_time(d)
        trace = os.path.join(d, "trace.txt")
        if os.path.exists(trace):
            s["transition"] = transition(trace, os.path.join(d, "map.txt"), s["event"],
                                         os.path.join(d, "dmesg.event"))
        lat = os.path.join(d, "lat_clat.1.log")
        if os.path.exists(lat):
            log = _lat_log(lat)
            after = [t for t, _ in log if t >= ev_ms]
            win = [t for t in after if t <= ev_ms + 1000]
            gaps = [b - a for a, b in zip([ev_ms] + win, win)]
            s["stall_first_ms"] = round(after[0] - ev_ms, 1) if after else None
            s["stall_max_gap_ms"] = round(max(gaps), 1) if gaps else None
            s["lat_max_after_ms"] = round(max([l for t, l in log if ev_ms <= t <= ev_ms + 1000] or [0]), 2)
            s["ios_logged"] = len(log)
            # fio's first I/O started at its completion less its latency: the event's time in fio's run
            s["event_at_fio_s"] = round((ev_ms - min(t - l for t, l in log)) / 1000.0, 3)
    rq = os.path.join(d, "reqtime.txt")
    if os.path.exists(rq):
        s["on_ctrl_us"] = request_times(rq, os.path.join(d, "map.txt"))
    old = os.path.join(d, "summary.json")
    if os.path.exists(old):
        with open(old) as f:          # summarised before: the raw logs are gone, their figures stay
            prev = json.load(f)
        for k in RAW_FIGURES:
            if k in prev and k not in s:
                s[k] = prev[k]
    return s


# what summarise_cell reads from the raw files it drops (fio.json, fio's per-I/O log, the trace)
RAW_FIGURES = ("stall_first_ms", "stall_max_gap_ms", "lat_max_after_ms", "ios_logged", "event_at_fio_s",
               "fio_errors", "fio_error", "fio_iops", "clat_mean_us", "clat_max_ms", "transition", "on_ctrl_us")


def read_port_map(map_path) -> Dict[str, str]:
    """The guest's map of controller names ("nvme0:") to the lab's ports, one "PORT CONTROLLER" a line."""
    port_of = {}
    with open(map_path) as f:
        for ln in f:
            w = ln.split()
            if len(w) >= 2:
                port_of[w[1] + ":"] = w[0]
    return port_of


def request_times(path, map_path):
    """Per port: how long its I/O commands stayed on the controller (nvme_setup_cmd to nvme_complete_rq,
    microseconds): count, mean and the 10/50/90/99th percentiles."""
    port_of = read_port_map(map_path)
    per: Dict[str, List[int]] = {}
    with open(path) as f:
        for ln in f:
            w = ln.split()
            if len(w) == 2:
                per.setdefault(port_of.get(w[0], "?"), []).append(int(w[1]))
    out = {}
    for p, v in sorted(per.items()):
        v.sort()
        q = {"p%d" % k: v[min(len(v) - 1, len(v) * k // 100)] for k in (10, 50, 90, 99)}
        out[p] = dict(q, n=len(v), mean=round(sum(v) / len(v), 1))
    return out


def _event_time(d):
    """The event's wall-clock time (ms) and its name.  A traced cell stamps the wall clock half a second
    before the event (sync.txt) and both moments in the trace (markers KLAB-SYNC and KLAB-EVENT)."""
    with open(os.path.join(d, "event.txt")) as f:
        w = f.read().split()
    if len(w) >= 3:
        return int(w[0]) * 1000 + int(w[1]) / 1000.0, w[2]
    with open(os.path.join(d, "sync.txt")) as f:
        sec, usec = f.read().split()[:2]
    marks = {}
    with open(os.path.join(d, "trace.txt")) as f:
        for ln in f:
            x = ln.split()
            if len(x) == 3 and x[1] == "mark":
                marks["sync" if x[2] == "KLAB-SYNC" else "event"] = float(x[0])
    return int(sec) * 1000 + int(usec) / 1000.0 + (marks["event"] - marks["sync"]) * 1000, w[0]


def _dmesg_times(path, t_event):
    """Seconds after the event of the kernel's messages on the lost controller's recovery."""
    out = {}
    if not os.path.exists(path):
        return out
    keys = {"starting error recovery": "recovery_start_ms", "Reconnecting in": "recovery_done_ms",
            "Removing ctrl": "remove_ms", "KLAB-EVENT": "event"}
    with open(path) as f:
        for ln in f:
            if not ln.startswith("["):
                continue
            t = float(ln[1:ln.index("]")])
            for k, name in keys.items():
                if k in ln and name not in out:
                    out[name] = t
    t0 = out.pop("event", None)
    return {k: round((v - t0) * 1000, 2) for k, v in out.items()} if t0 is not None else {}


def transition(trace_path, map_path, event, dmesg_path=None):
    """The event seen in the kernel's nvme_complete_rq trace (I/O queues only), in ms after the event:
    ``failed``: completions on the event's port with an error status (each fails over: the ANA status,
    or HOST_ABORTED_CMD from the error recovery's cancel), the first and last of them; ``resume_ms``: the
    first good completion on another port after the last one failed over; ``max_gap_ms``: the longest
    time without a good completion in the second after the event, and ``base_gap_ms``: the same over the
    0.45 s before it (fio alone); ``last_good_lost_ms``: the last good completion on the event's port;
    ``admin_lost_ms``: its first admin completions after the event; ``dmesg``: the recovery's messages."""
    port_of = read_port_map(map_path)
    lost = event.split(":")[1]
    t_ev = None
    rows, admin = [], []
    with open(trace_path) as f:
        for ln in f:
            w = ln.split()
            if len(w) == 3 and w[1] == "mark" and w[2] != "KLAB-SYNC":
                t_ev = float(w[0])
            elif len(w) == 4 and w[2] == "qid=0,":
                admin.append((float(w[0]), port_of.get(w[1], "?")))
            elif len(w) == 4:
                rows.append((float(w[0]), port_of.get(w[1], "?"), int(w[3].split("=")[1], 16)))
    rows = [((t - t_ev) * 1000, p, st) for t, p, st in rows]
    failed = [(round(t, 3), st) for t, p, st in rows if t >= 0 and p == lost and st != 0]
    good = [t for t, p, st in rows if st == 0]

    def max_gap(lo, hi):
        ts = [lo] + [t for t in good if lo <= t <= hi]
        return round(max(b - a for a, b in zip(ts, ts[1:] + [hi])), 3)

    out = {"failed": len(failed), "statuses": sorted({"%#x" % st for _, st in failed}),
           "max_gap_ms": max_gap(0, 1000), "base_gap_ms": max_gap(-450, 0),
           "last_good_lost_ms": round(max([t for t, p, st in rows if t >= 0 and p == lost and st == 0],
                                          default=0), 3)}
    # the admin commands the event brings on the port (the ANA notice's AER, the ANA log read)
    out["admin_lost_ms"] = [round((t - t_ev) * 1000, 3) for t, p in admin if t >= t_ev and p == lost][:4]
    if failed:
        out["first_failed_ms"], out["last_failed_ms"] = failed[0][0], failed[-1][0]
        nxt = [t for t, p, st in rows if t > failed[-1][0] and p != lost and st == 0]
        out["resume_ms"] = round(nxt[0], 3) if nxt else None
    if dmesg_path:
        out["dmesg"] = _dmesg_times(dmesg_path, t_ev)
    return out


def summarise(boot: str, keep_raw: bool = False) -> List[dict]:
    out = []
    cdir = os.path.join(boot, "cells")
    for name in sorted(os.listdir(cdir)):
        d = os.path.join(cdir, name)
        try:
            s = summarise_cell(d)
        except (OSError, ValueError, IndexError) as e:
            s = {"run": name, "problem": "%s" % e}
        with open(os.path.join(d, "summary.json"), "w") as f:
            json.dump(s, f, indent=1, sort_keys=True)
        if not keep_raw:
            for raw in os.listdir(d):
                if raw.startswith("lat_") or raw in ("fio.stdout", "fio.json", "trace.txt", "reqtime.txt"):
                    os.remove(os.path.join(d, raw))
        out.append(s)
    for big in ("dmesg.txt",):
        p = os.path.join(boot, big)
        if os.path.exists(p):
            with open(p) as f:
                tail = [ln for ln in f if "nvme" in ln.lower()][-200:]
            with open(os.path.join(boot, "dmesg-nvme.txt"), "w") as f:
                f.writelines(tail)
            os.remove(p)
    return out


def run(batches: List[str], reps: int, runs_dir: str) -> str:
    kl = os.environ.get("KLAB_DIR") or os.path.join(os.environ.get("TMPDIR", "/tmp"), "klab-6.1")
    with open(os.path.join(kl, "kernel-release")) as f:
        series = series_of(f.read().strip())
    names = cells_for(batches, series)
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    boot = os.path.join(runs_dir, "%s-%s-%s" % ("+".join(batches), series, stamp))
    exp = tempfile.mkdtemp(prefix="nvmelab-exp-")
    try:
        shutil.copy(os.path.join(HERE, "guest", "main.sh"), exp)
        with open(os.path.join(exp, "cells.txt"), "w") as f:
            f.write("\n".join(plan_lines(names, reps)) + "\n")
        t0 = time.time()
        rc = subprocess.call([RUN_SH, exp, boot])
        print("nvmelab: boot rc %d, %.1f s, %d cells" % (rc, time.time() - t0, len(names) * reps))
    finally:
        shutil.rmtree(exp)
    with open(os.path.join(boot, "cells.txt"), "w") as f:
        f.write("\n".join(plan_lines(names, reps)) + "\n")
    for s in summarise(boot):
        print(json.dumps({k: s.get(k) for k in ("run", "shares", "fio_errors", "fio_iops", "shares_after",
                                                    "stall_first_ms", "stall_max_gap_ms", "problem")}))
    return boot


def collect(runs_dir: str = RUNS, results: str = RESULTS) -> List[dict]:
    cells: Dict[tuple, dict] = {}
    for boot in sorted(os.listdir(runs_dir)):
        kt = os.path.join(runs_dir, boot, "kernel.txt")
        if not os.path.exists(kt):
            continue
        with open(kt) as f:
            release = f.read().split()[-1]
        series = series_of(release)
        cdir = os.path.join(runs_dir, boot, "cells")
        for name in sorted(os.listdir(cdir)):
            p = os.path.join(cdir, name, "summary.json")
            if not os.path.exists(p):
                continue
            with open(p) as f:
                s = json.load(f)
            if "problem" in s or s.get("cell") not in CELLS:
                continue
            s["boot"] = boot
            s["kernel_release"] = release
            c = cells.setdefault((series, s["cell"]), _cell_doc(series, s["cell"]))
            c["repeats"].append(s)
    out = []
    for key in sorted(cells):
        c = cells[key]
        reps = c["repeats"]
        c["n"] = len(reps)
        ports = sorted(reps[0]["shares"])
        c["mean_share"] = {p: round(sum(r["shares"].get(p, 0) for r in reps) / len(reps), 4) for p in ports}
        c["fio_errors"] = [r.get("fio_errors") for r in reps]
        if c["event"] != "none":
            # a repeat whose fio ended before the after-event snapshot has no after-event shares
            after = [r for r in reps if r.get("ios_after")]
            c["mean_share_after"] = {p: round(sum(r["shares_after"].get(p, 0) for r in after) / len(after), 4)
                                     for p in ports} if after else None
            c["stall_max_gap_ms"] = [r.get("stall_max_gap_ms") for r in reps]
            at = [r["event_at_fio_s"] for r in reps if r.get("event_at_fio_s") is not None]
            c["mean_event_at_fio_s"] = round(sum(at) / len(at), 3) if at else None
        out.append(c)
    with open(results, "w") as f:
        json.dump(out, f, indent=1, sort_keys=True)
        f.write("\n")
    return out


def _cell_doc(series, name):
    t, delays, ana, pol, depth, rt, ev, at = CELLS[name][:8]
    traced = len(CELLS[name]) > 8 and "trace" in CELLS[name][8].split(",")
    return {"kernel": series, "cell": name, "transport": t, "delays_us": list(delays),
            # a traced cell's after-event snapshot comes 1.5 s after the event (guest/main.sh)
            "after_from_event_s": 1.5 if traced else 0.0,
            "ana": [ANA[a] for a in ana], "iopolicy": pol, "iodepth": depth, "runtime_s": rt, "event": ev,
            "event_at_s": at, "repeats": []}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("plan")
    p.add_argument("batch", nargs="+")
    p.add_argument("--series", default="6.12")
    p.add_argument("--rep", type=int, default=1)
    p = sub.add_parser("run")
    p.add_argument("batch", nargs="+")
    p.add_argument("--rep", type=int, default=1)
    p.add_argument("--runs-dir", default=RUNS)
    p = sub.add_parser("summarise")
    p.add_argument("boot")
    p = sub.add_parser("collect")
    p.add_argument("--runs-dir", default=RUNS)
    p.add_argument("-o", "--output", default=RESULTS)
    a = ap.parse_args(argv)
    if a.cmd == "plan":
        print("\n".join(plan_lines(cells_for(a.batch, a.series), a.rep)))
    elif a.cmd == "run":
        run(a.batch, a.rep, a.runs_dir)
    elif a.cmd == "summarise":
        for s in summarise(a.boot):
            print(json.dumps(s))
    else:
        out = collect(a.runs_dir, a.output)
        print("%s: %d cells" % (a.output, len(out)))


if __name__ == "__main__":
    sys.exit(main())
