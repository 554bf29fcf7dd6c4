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
from typing import Dict, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "src"))

from mpathlab import __version__  # noqa: E402
from mpathlab.capture import collect, read_dump, write_topology  # noqa: E402
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


def kernel_shares(cell_dir: str) -> Dict[str, float]:
    """Each path's share of the writes completed during the run (stat field 5 = writes completed)."""
    def read(name):
        out = {}
        with open(os.path.join(cell_dir, name)) as f:
            for line in f:
                parts = line.split()
                out[parts[0]] = int(parts[2 + 4])
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
    try:
        with open(os.path.join(cell_dir, "fio.json")) as f:
            doc = json.load(f)
        return float(doc["jobs"][0]["write"]["iops"])
    except (OSError, ValueError, KeyError, IndexError):
        return None


def iolog_ios(cell_dir: str) -> Optional[int]:
    """How many I/Os fio's write_iolog of the run records."""
    p = os.path.join(cell_dir, "iolog.gz")
    if not os.path.exists(p):
        return None
    with gzip.open(p, "rt") as f:
        return sum(1 for line in f if " write " in line or " read " in line or " trim " in line)


def run_cell(cell_dir: str, guest, write: bool) -> dict:
    meta = dict(kv.split("=", 1) for kv in open(os.path.join(cell_dir, "meta")).readline().split())
    cap = collect(read_dump(os.path.join(cell_dir, "capture.dump")), 0)
    if len(cap.maps) != 1:
        raise SystemExit("%s: %d maps captured, expected 1" % (cell_dir, len(cap.maps)))
    text = write_topology(cap, cap.maps[0], __version__)
    topo_path = os.path.join(cell_dir, "captured.toml")
    if write or not os.path.exists(topo_path):
        with open(topo_path, "w") as f:
            f.write(text)
    topo = load_topology(topo_path)
    with open(os.path.join(cell_dir, "fio.args")) as f:
        job = fio_job(f.read())
    res = run_simulation(topo, parse_fio(job, "fio.args"), host=guest.host())
    groups = identical_paths(cell_dir)
    kern = grouped(groups, kernel_shares(cell_dir))
    pred = grouped(groups, res.shares)
    diffs = {k: pred[k] - kern[k] for k in kern}
    worst = max(diffs, key=lambda k: abs(diffs[k]))
    return {"cell": meta["cell"], "kernel_series": cap.series, "run": os.path.basename(os.path.dirname(os.path.dirname(cell_dir))),
            "selector": meta["selector"], "queue_mode": meta["queue_mode"], "iodepth": int(meta["iodepth"]),
            "captured_service_ms": {p.name: round(p.service_ms()[0], 3) for p in cap.paths.values() if p.service_ms()},
            "captured_tags": {p.name: p.queue.get("nr_tags") for p in cap.paths.values()},
            "window_s": round(cap.window_s or 0, 2), "kernel": kern, "predicted": pred, "worst_path": worst,
            "diff": diffs[worst], "within": abs(diffs[worst]) <= TOLERANCE + 1e-12,
            "kernel_iops": kernel_iops(cell_dir), "predicted_iops": res.completed / (res.runtime_ns / 1e9),
            "iolog_ios": iolog_ios(cell_dir), "guest": guest.describe()}


def markdown(rows: List[dict]) -> str:
    out = ["| kernel | cell | captured service ms (tags) | path | kernel share | predicted | diff | kernel IOPS "
           "| pred. IOPS |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        svc = ", ".join("%s %.2f (%s)" % (k, v, r["captured_tags"].get(k)) for k, v in sorted(r["captured_service_ms"].items()))
        w = r["worst_path"]
        out.append("| %s | %s | %s | %s | %.3f | %.3f | %+.3f%s | %.0f | %.0f |" % (
            r["kernel_series"], r["cell"], svc, w, r["kernel"][w], r["predicted"][w], r["diff"],
            "" if r["within"] else " **X**", r["kernel_iops"] or 0, r["predicted_iops"]))
    n = sum(r["within"] for r in rows)
    out += ["", "captured -> predicted: %d of %d cells within %.2f of the kernel's shares" % (n, len(rows), TOLERANCE)]
    for g in sorted({r["guest"] for r in rows}):
        out.append("guest model %s" % g)
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="*", help="run folders (default: runs/*/ beside this file)")
    ap.add_argument("--write", action="store_true", help="write results.json, results.md and captured.toml files")
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
            if os.path.exists(os.path.join(cell_dir, "capture.dump")):
                rows.append(run_cell(cell_dir, guest, a.write))
    md = markdown(rows)
    sys.stdout.write(md)
    if a.write:
        with open(os.path.join(HERE, "results.json"), "w") as f:
            json.dump(rows, f, indent=1, sort_keys=True)
        with open(os.path.join(HERE, "results.md"), "w") as f:
            f.write(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
