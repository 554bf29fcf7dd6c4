#!/usr/bin/env python3
"""The capture loop's host side: for every cell of a capture run (run.sh), the topology that
`mpathlab capture --from` makes of the dump taken in the guest during the run, simulated with the run's
workload, against what the kernel did (per-path shares from the paths' stat counters, fio's IOPS).

    python3 validation/kernel-lab/capture/loop.py [RUNDIR...] [--write]

Without RUNDIR: every runs/*/ beside this file. With --write: results.json and results.md here, and each
cell's captured topology as captured.toml in its run folder.

What the simulation is given: the captured topology file, unchanged, and the guest model the validation
fits on the lab's single-path calibration cells of the same kernel and UTC day (mpathlab.validate.fit_guest:
CPU time per I/O and its submission part; its timer lateness is not used, since the captured service times
already hold it). Nothing is fitted on these cells.
"""
from __future__ import annotations

import argparse
import glob
import gzip
import json
import os
import sys
import tempfile
from typing import Dict, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "src"))

from mpathlab import __version__  # noqa: E402
from mpathlab.capture import DumpSource, collect, write_nvme_topology, write_topology  # noqa: E402
from mpathlab.runner import run_simulation  # noqa: E402
from mpathlab.topology import load_topology  # noqa: E402
from mpathlab.validate import TOLERANCE, fit_guest  # noqa: E402
from mpathlab.workload.fio import parse_fio  # noqa: E402

RESULTS = os.path.join(ROOT, "validation", "kernel-lab", "results.json")
# fio command-line options the lab passes that name the device or the run's bookkeeping, not the workload
NOT_WORKLOAD = ("name", "filename", "output", "output-format", "write_iolog")


def fio_job(args_text: str) -> str:
    """The lab's fio command line (fio.args) as a job file."""
    lines = ["[captured]"]
    for a in args_text.split():
        key, _, val = a.lstrip("-").partition("=")
        if key in NOT_WORKLOAD:
            continue
        lines.append("%s=%s" % (key, val) if val else key)
    return "\n".join(lines) + "\n"


def trace_job(cell_dir: str, args_text: str, tmp: str) -> str:
    """The run's own I/O as the workload: fio's write_iolog of the run (decompressed into ``tmp``),
    replayed with its timing (read_iolog), at the run's iodepth."""
    depth = [a.split("=", 1)[1] for a in args_text.split() if a.startswith("--iodepth=")][0]
    log = os.path.join(tmp, os.path.basename(cell_dir) + ".iolog")
    with gzip.open(os.path.join(cell_dir, "iolog.gz"), "rb") as src, open(log, "wb") as dst:
        dst.write(src.read())
    return "[replay]\nread_iolog=%s\nioengine=libaio\niodepth=%s\n" % (log, depth)


def kernel_shares(cell_dir: str) -> Dict[str, float]:
    """Each path's share of the data written during the run (stat field 7, sectors written: the I/O count
    of field 5 also holds issues a path refused, which blk_insert_cloned_request counts as done; every
    I/O of the lab's job is 4 KiB, so sectors count I/Os)."""
    def read(name):
        out = {}
        with open(os.path.join(cell_dir, name)) as f:
            for line in f:
                parts = line.split()
                out[parts[0]] = int(parts[2 + 6])
        return out
    before, after = read("stat_before"), read("stat_after")
    done = {k: after[k] - before[k] for k in after}
    total = sum(done.values()) or 1
    return {k: v / total for k, v in done.items()}


def identical_paths(cell_dir: str) -> Dict[str, List[str]]:
    """Paths the lab built alike (same completion time and tags, from the cell's topology) are compared as
    a group, by their mean share, as the validation does: which of three identical paths
    historical-service-time piles onto is arbitrary in the kernel and the model alike."""
    groups: Dict[tuple, List[str]] = {}
    with open(os.path.join(cell_dir, "meta")) as f:
        for line in f.readlines()[1:]:
            parts = line.split()
            if parts and not parts[0].startswith("#"):
                groups.setdefault(tuple(parts[1:]), []).append(parts[0])
    return {(v[0] if len(v) == 1 else "%s..%s" % (v[0], v[-1])): v for v in groups.values()}


def grouped(groups: Dict[str, List[str]], shares: Dict[str, float]) -> Dict[str, float]:
    return {g: sum(shares.get(p, 0.0) for p in ps) / len(ps) for g, ps in groups.items()}


def kernel_iops(cell_dir: str) -> Optional[float]:
    """fio's write IOPS of the run (fio.json, or fio_iops.txt once the run is packed)."""
    try:
        with open(os.path.join(cell_dir, "fio.json")) as f:
            return float(json.load(f)["jobs"][0]["write"]["iops"])
    except (OSError, ValueError, KeyError, IndexError):
        pass
    try:
        with open(os.path.join(cell_dir, "fio_iops.txt")) as f:
            return float(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def read_cell_dump(cell_dir: str) -> DumpSource:
    """The capture script's dump of the cell (capture.dump, or capture.dump.gz once packed)."""
    name = os.path.relpath(os.path.join(cell_dir, "capture.dump"), ROOT)
    path = os.path.join(cell_dir, "capture.dump")
    if os.path.exists(path):
        with open(path, "rb") as f:
            data = f.read()
    else:
        with gzip.open(path + ".gz", "rb") as f:
            data = f.read()
    return DumpSource(data.decode("utf-8"), name)


def pack(cell_dir: str) -> None:
    """Keep what the results rest on, small: the dump gzipped, fio's IOPS and the iolog's I/O count
    in text files; fio.json and the iolog itself stay out of the repository (.gitignore)."""
    iops = kernel_iops(cell_dir)
    if iops is not None:
        with open(os.path.join(cell_dir, "fio_iops.txt"), "w") as f:
            f.write("%.3f\n" % iops)
    n = iolog_ios(cell_dir)
    if n is not None:
        with open(os.path.join(cell_dir, "iolog_ios.txt"), "w") as f:
            f.write("%d\n" % n)
    path = os.path.join(cell_dir, "capture.dump")
    if os.path.exists(path) and not os.path.exists(path + ".gz"):
        with open(path, "rb") as src, open(path + ".gz", "wb") as raw, \
                gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as dst:   # no timestamp: the same bytes each time
            dst.write(src.read())


def iolog_ios(cell_dir: str) -> Optional[int]:
    """How many I/Os fio's write_iolog of the run records."""
    p = os.path.join(cell_dir, "iolog.gz")
    if not os.path.exists(p):
        try:
            with open(os.path.join(cell_dir, "iolog_ios.txt")) as f:
                return int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            return None
    with gzip.open(p, "rt") as f:
        return sum(1 for line in f if " write " in line or " read " in line or " trim " in line)


def nvme_kernel_shares(cell_dir: str) -> Dict[str, float]:
    """Each controller's share of the data the run wrote (paths_end: "<controller> <path> <ana> <stat>";
    the paths were created for the cell, so their counters start at the cell)."""
    done = {}
    with open(os.path.join(cell_dir, "paths_end")) as f:
        for line in f:
            parts = line.split()
            done[parts[0]] = int(parts[3 + 6])
    total = sum(done.values()) or 1
    return {k: v / total for k, v in done.items()}


def run_cell(cell_dir: str, guest, write: bool, workload: str = "job", tmp: str = "") -> dict:
    with open(os.path.join(cell_dir, "meta")) as f:
        meta = dict(kv.split("=", 1) for kv in f.readline().split())
    nvme = meta.get("kind") == "nvme"
    cap = collect(read_cell_dump(cell_dir), 0)
    if nvme:
        subs = [s for s in cap.nvme if s["controllers"]]
        if len(subs) != 1:
            raise SystemExit("%s: %d NVMe subsystems captured, expected 1" % (cell_dir, len(subs)))
        text = write_nvme_topology(cap, subs[0], __version__)
        paths = [c["paths"][0] for c in subs[0]["controllers"] if c["paths"]]
        names = [c["name"] for c in subs[0]["controllers"] if c["paths"]]
    else:
        if len(cap.maps) != 1:
            raise SystemExit("%s: %d maps captured, expected 1" % (cell_dir, len(cap.maps)))
        text = write_topology(cap, cap.maps[0], __version__)
        paths = [cap.paths[d] for d in cap.maps[0].path_devts if d in cap.paths]
        names = [p.name for p in paths]
    topo_path = os.path.join(cell_dir, "captured.toml")
    if write or not os.path.exists(topo_path):
        with open(topo_path, "w") as f:
            f.write(text)
    topo = load_topology(topo_path)
    topo.host = guest.host(late_timers=False)
    with open(os.path.join(cell_dir, "fio.args")) as f:
        args_text = f.read()
    job = trace_job(cell_dir, args_text, tmp) if workload == "trace" and not nvme else fio_job(args_text)
    res = run_simulation(topo, parse_fio(job, "fio.args"))
    captured = {n: (round(p.service_ms()[0], 3) if p.service_ms() else None,
                    min(x for x in (p.queue.get("nr_tags"), p.queue.get("queue_depth")) if x is not None)
                    if p.queue.get("nr_tags") or p.queue.get("queue_depth") else None) for n, p in zip(names, paths)}
    if nvme:
        kern, pred = nvme_kernel_shares(cell_dir), res.shares
        kern = {k: kern.get(k, 0.0) for k in names}
        pred = {k: pred.get(k, 0.0) for k in names}
        diffs = {k: pred[k] - kern[k] for k in kern}
        worst = max(diffs, key=lambda k: abs(diffs[k]))
        return {"cell": meta["cell"], "kernel_series": cap.series, "selector": "nvme:" + meta["iopolicy"],
                "queue_mode": "nvme", "iodepth": int(meta["iodepth"]), "captured": captured,
                "window_s": round(cap.window_s or 0, 2), "kernel": kern, "predicted": pred, "worst_path": worst,
                "diff": diffs[worst], "within": abs(diffs[worst]) <= TOLERANCE + 1e-12,
                "kernel_iops": kernel_iops(cell_dir), "predicted_iops": res.completed / (res.runtime_ns / 1e9),
                "iolog_ios": None, "guest": guest.describe(), "guest_ns": [guest.submit_ns, guest.complete_ns, guest.late_ns], "ana": meta.get("ana")}
    groups = identical_paths(cell_dir)
    kern = grouped(groups, kernel_shares(cell_dir))
    pred = grouped(groups, res.shares)
    diffs = {k: pred[k] - kern[k] for k in kern}
    worst = max(diffs, key=lambda k: abs(diffs[k]))
    return {"cell": meta["cell"], "kernel_series": cap.series,
            "selector": meta["selector"], "queue_mode": meta["queue_mode"], "iodepth": int(meta["iodepth"]),
            "captured": captured,
            "window_s": round(cap.window_s or 0, 2), "kernel": kern, "predicted": pred, "worst_path": worst,
            "diff": diffs[worst], "within": abs(diffs[worst]) <= TOLERANCE + 1e-12,
            "kernel_iops": kernel_iops(cell_dir), "predicted_iops": res.completed / (res.runtime_ns / 1e9),
            "iolog_ios": iolog_ios(cell_dir), "guest": guest.describe(), "guest_ns": [guest.submit_ns, guest.complete_ns, guest.late_ns]}


def markdown(rows: List[dict]) -> str:
    out = ["| boot (kernel-UTC) | cell | captured service ms (tags) | path(s) | kernel share | predicted | diff "
           "| kernel IOPS | pred. IOPS |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        svc = ", ".join("%s %s (%s)" % (k, "%.2f" % v[0] if v[0] is not None else "-", v[1] if v[1] else "-")
                        for k, v in sorted(r["captured"].items()))
        w = r["worst_path"]
        out.append("| %s | %s | %s | %s | %.3f | %.3f | %+.3f%s | %.0f | %.0f |" % (
            r["boot"], r["cell"], svc, w, r["kernel"][w], r["predicted"][w], r["diff"],
            "" if r["within"] else " **X**", r["kernel_iops"] or 0, r["predicted_iops"]))
    counts: Dict[str, List[int]] = {}
    for r in rows:
        c = counts.setdefault("%s %s" % (r["kernel_series"], "NVMe" if r["queue_mode"] == "nvme" else "dm-multipath"),
                              [0, 0])
        c[0] += r["within"]
        c[1] += 1
    out += ["", "captured -> predicted, cells within %.2f of the kernel's shares: %s; %d of %d in all" % (
        TOLERANCE, ", ".join("%s %d of %d" % (k, v[0], v[1]) for k, v in sorted(counts.items())),
        sum(r["within"] for r in rows), len(rows))]
    for g in sorted({r["guest"] for r in rows}):
        out.append("guest model %s" % g)
    return "\n".join(out) + "\n"


DOCS = os.path.join(ROOT, "docs", "capture.md")


def update_docs(md: str, suffix: str) -> None:
    """Put the table between its markers in docs/capture.md."""
    begin = "<!-- captured -> predicted%s: generated by validation/kernel-lab/capture/loop.py --write -->" % suffix
    end = "<!-- end of captured -> predicted%s -->" % suffix
    with open(DOCS) as f:
        doc = f.read()
    if begin not in doc or end not in doc:
        return
    head, rest = doc.split(begin, 1)
    _, tail = rest.split(end, 1)
    with open(DOCS, "w") as f:
        f.write(head + begin + "\n\n" + md + "\n" + end + tail)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="*", help="run folders (default: runs/*/ beside this file)")
    ap.add_argument("--write", action="store_true", help="write results.json, results.md and captured.toml files")
    ap.add_argument("--workload", choices=("job", "trace"), default="job",
                    help="job: the run's fio job; trace: the run's own write_iolog replayed with its timing "
                         "(default: job)")
    a = ap.parse_args(argv)
    runs = a.runs or sorted(glob.glob(os.path.join(HERE, "runs", "*")))
    with open(RESULTS) as f:
        lab_cells = json.load(f)
    rows = []
    for run in runs:
        series = os.path.basename(run.rstrip("/")).split("-")[0]
        day = os.path.basename(run.rstrip("/")).split("-")[1][:8]
        guest = fit_guest(lab_cells, series, day)
        for cell_dir in sorted(glob.glob(os.path.join(run, "cells", "*"))):
            if any(os.path.exists(os.path.join(cell_dir, f)) for f in ("capture.dump", "capture.dump.gz")):
                if a.write:
                    pack(cell_dir)
                with tempfile.TemporaryDirectory() as tmp:
                    rows.append(dict(run_cell(cell_dir, guest, a.write, a.workload, tmp), workload=a.workload,
                                     boot=os.path.basename(run.rstrip("/"))))
    md = markdown(rows)
    sys.stdout.write(md)
    if a.write:
        suffix = "" if a.workload == "job" else "-" + a.workload
        with open(os.path.join(HERE, "results%s.json" % suffix), "w") as f:
            json.dump(rows, f, indent=1, sort_keys=True)
        with open(os.path.join(HERE, "results%s.md" % suffix), "w") as f:
            f.write(md)
        update_docs(md, suffix)
    return 0


if __name__ == "__main__":
    sys.exit(main())
