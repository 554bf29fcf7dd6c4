"""Compare the NVMe model with the NVMe kernel lab: ``python -m mpathlab.validate_nvme [results-nvme.json]``.

Reads the cells the NVMe lab measured (validation/kernel-lab/nvme/results-nvme.json, written by
validation/kernel-lab/nvme/nvmelab.py: Debian 6.1 or 6.12 in qemu TCG, nvmet exporting one null_blk
namespace through one port per path, the guest's native NVMe multipath over them, fio randread 4k libaio
on the head) and prints, per cell, the kernel's per-controller shares and failover figures beside the
model's *prediction*.  The model is given the topology only: the ports (each a controller of the one
namespace), each port's netem delay as its path's service time, the ANA states, the iopolicy, fio's depth
and runtime, and the event (an ANA change, or the port removed: the path fails and never comes back),
plus a guest fitted once per kernel and transport on the single-port cells (``C1``, ``C1-loop``: CPU
time per I/O = 1 / IOPS of a CPU-bound single path).  The single-port cells stay out of the table.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Dict, List, Optional

from .klog import wrap
from .nvme.run import lab_figures, run_nvme
from .topology import topology_from_dict
from .workload.fio import parse_fio

DEFAULT_RESULTS = os.path.join("validation", "kernel-lab", "nvme", "results-nvme.json")
TOLERANCE = 0.03
GUEST_CPUS = 2
# All of an I/O's CPU time is charged before it reaches the head.  The model's CPU is a FIFO server, so
# a completion cost charged before end_io would wait behind fio's queued submissions and keep the request
# counted on its path; in the guest the completion runs in softirq / kworker context that preempts fio, and
# the in-flight samples of the single-port cells show 0.3-0.5 started requests per path at fio depth 16:
# a request leaves its path long before fio reaps it.  (Chosen after the first 6.12 boot, where the dm
# lab's 60 / 40 split put E2 queue-depth at 0.50 / 0.50 against the kernel's 0.98 / 0.02.)
SUBMIT_FRACTION = 1.0
# nvme-tcp and nvme-loop: one I/O queue per guest CPU, queue_size 128 (the fabrics default)
QUEUE_SIZE = 128
# A path's time when the calibration saw nothing in flight (the model needs a service time above 0).
NO_DELAY_NS = 1000
WINDOW_NS = 10 ** 6     # the model's dispatch counts per ms: the after-event shares and the stall
# fitted on these cells, per kernel and transport; they are not part of the table
CALIB_CELLS = {"tcp": "C1", "loop": "C1-loop"}


class NvmeGuest:
    """One kernel's guest with one transport: the fio job CPU's time per I/O, and how long a request
    stays started on its path (between queue_rq and its completion) on a port without delay."""

    def __init__(self, kernel: str, transport: str, cpu_ns: int, fitted_on: List[str], on_path_ns: int = 0):
        self.kernel, self.transport = kernel, transport
        self.cpu_ns = int(cpu_ns)
        self.on_path_ns = int(on_path_ns)
        self.fitted_on = fitted_on

    def host(self) -> dict:
        submit = int(self.cpu_ns * SUBMIT_FRACTION)
        return {"cpus": GUEST_CPUS, "submit_cost": "%dns" % submit,
                "complete_cost": "%dns" % (self.cpu_ns - submit)}

    def path_ns(self, delay_us: int) -> int:
        return delay_us * 1000 + self.on_path_ns or NO_DELAY_NS

    def describe(self) -> str:
        return "kernel %s %s: CPU per I/O %d us, on the path %d us, fitted on %s" % (
            self.kernel, self.transport, round(self.cpu_ns / 1000), round(self.on_path_ns / 1000),
            ", ".join(self.fitted_on))


def fit_guests(cells: List[dict]) -> Dict[tuple, NvmeGuest]:
    """One guest per (kernel, transport) from its single-port cell: the median of 1 / IOPS."""
    out = {}
    for c in cells:
        for transport, name in CALIB_CELLS.items():
            if c["cell"] == name:
                reps = [r for r in c["repeats"] if r.get("fio_iops")]
                if reps:
                    per_io = sorted(1e9 / r["fio_iops"] for r in reps)
                    # Little's law on the path: started requests (sampled) / completions per second
                    on_path = sorted(sum(r.get("mean_inflight", {}).values()) * 1e9 / r["fio_iops"] for r in reps)
                    out[(c["kernel"], transport)] = NvmeGuest(
                        c["kernel"], transport, per_io[len(per_io) // 2],
                        ["%s (%d repeats)" % (name, len(per_io))], on_path[len(on_path) // 2])
    return out


def port_names(c: dict) -> List[str]:
    return [str(i + 1) for i in range(len(c["delays_us"]))]


def event_ns(c: dict) -> int:
    """When the event came in fio's run: measured (fio starts a few hundred ms after the guest script
    arms the event's timer), else the nominal second."""
    at = c.get("mean_event_at_fio_s")
    return int((at if at is not None else c.get("event_at_s", 0)) * 10 ** 9)


def cell_topology(c: dict, guest: NvmeGuest) -> dict:
    """The cell's topology as a topology file would give it: what a user knows of the ports."""
    doc: dict = {"host": guest.host(), "paths": {}, "nvme": {}}
    at = "%dns" % event_ns(c)
    event = c.get("event", "none")
    kind, _, rest = event.partition(":")
    for port, delay_us in zip(port_names(c), c["delays_us"]):
        p = {"service": {"dist": "constant", "mean": "%dns" % guest.path_ns(delay_us)},
             "parallelism": QUEUE_SIZE * GUEST_CPUS, "hw_queue_depth": QUEUE_SIZE, "nr_hw_queues": GUEST_CPUS}
        if kind == "rmport" and rest == port:
            p["faults"] = [{"at": at, "action": "fail"}]   # the port never comes back
        doc["paths"]["p" + port] = p
    nv = doc["nvme"]
    nv["iopolicy"] = c["iopolicy"]
    nv["controllers"] = {"c" + port: {"path": "p" + port} for port in port_names(c)}
    nv["ana_groups"] = [{"id": 1, "namespaces": [1],
                         "state": {"c" + port: st for port, st in zip(port_names(c), c["ana"])}}]
    if kind == "ana":
        port, state = rest.split(":")
        nv["events"] = [{"at": at, "ana": {"group": 1, "controller": "c" + port,
                                                               "state": state}}]
    return doc


def fio_job(c: dict) -> str:
    return ("[cell]\nioengine=libaio\ndirect=1\nrw=randread\nbs=4k\niodepth=%d\nruntime=%d\ntime_based\n"
            % (c["iodepth"], c["runtime_s"]))


def simulate_cell(c: dict, guest: NvmeGuest, seed: int = 1) -> dict:
    """The model's figures for one cell: shares per port, after the event too, and fio's errors."""
    topo = topology_from_dict(cell_topology(c, guest), source="nvme lab cell %s" % c["cell"])
    at_ns = event_ns(c)
    res = run_nvme(topo, parse_fio(fio_job(c), "nvme lab cell %s" % c["cell"]), seed=seed, kernel=c["kernel"],
                   window_ns=WINDOW_NS)
    fig = lab_figures(res, at_ns if c.get("event", "none") != "none" else None)
    out = {"shares": {ctrl[1:]: v for ctrl, v in fig["shares"].items()}, "errors": fig["errors"],
           "stall_ms": None if fig["stall_ns"] is None else fig["stall_ns"] / 1e6}
    if c.get("event", "none") != "none":
        out["shares_after"] = {ctrl[1:]: res.share_in_window("p" + ctrl[1:], at_ns, res.runtime_ns)
                               for ctrl in fig["shares"]}
    return out


def simulate_repeats(c: dict, guest: NvmeGuest, seed: int = 1) -> dict:
    """An event cell's repeats had their events at different times of fio's run (measured per repeat):
    one model run per repeat with its time, the shares averaged as the kernel's are; the stall is the
    longest of the runs'.  A cell without an event is one run."""
    times = [r.get("event_at_fio_s") for r in c.get("repeats", [])]
    if c.get("event", "none") == "none" or None in times or not times:
        return simulate_cell(c, guest, seed)
    runs = [simulate_cell(dict(c, mean_event_at_fio_s=t), guest, seed) for t in times]
    out = {"errors": max(m["errors"] for m in runs),
           "stall_ms": max((m["stall_ms"] for m in runs if m["stall_ms"] is not None), default=None)}
    for key in ("shares", "shares_after"):
        out[key] = {p: sum(m[key][p] for m in runs) / len(runs) for p in runs[0][key]}
    return out


def compare(cells: List[dict], seed: int = 1) -> List[dict]:
    guests = fit_guests(cells)
    rows = []
    for c in cells:
        if c["cell"] in CALIB_CELLS.values():
            continue
        g = guests.get((c["kernel"], c["transport"]))
        if g is None:
            continue
        m = simulate_repeats(c, g, seed)
        row = {"kernel": c["kernel"], "cell": c["cell"], "n": c["n"], "kernel_shares": c["mean_share"],
               "model_shares": m["shares"], "kernel_errors": max(c["fio_errors"]), "model_errors": m["errors"],
               "guest": g.describe()}
        diffs = [abs(c["mean_share"][p] - m["shares"].get(p, 0.0)) for p in c["mean_share"]]
        if "mean_share_after" in c:
            row["kernel_after"] = c["mean_share_after"]
            row["model_after"] = m["shares_after"]
            row["kernel_stall_ms"] = c.get("stall_max_gap_ms")
            row["model_stall_ms"] = m["stall_ms"]
            diffs += [abs(c["mean_share_after"][p] - m["shares_after"].get(p, 0.0)) for p in c["mean_share_after"]]
        row["max_diff"] = max(diffs)
        row["ok"] = row["max_diff"] <= TOLERANCE and row["kernel_errors"] == row["model_errors"]
        rows.append(row)
    return rows


def _fmt(shares: Optional[Dict[str, float]]) -> str:
    return " / ".join("%.3f" % shares[p] for p in sorted(shares, key=int)) if shares else ""


def _cells(r: dict) -> List[str]:
    """A row's figures as printed, in the order of HEAD."""
    stall = ", ".join("%g" % s for s in r.get("kernel_stall_ms") or [] if s is not None)
    mstall = "" if r.get("model_stall_ms") is None else "%.1f" % r["model_stall_ms"]
    return [r["kernel"], r["cell"], str(r["n"]), _fmt(r["kernel_shares"]), _fmt(r["model_shares"]),
            _fmt(r.get("kernel_after")), _fmt(r.get("model_after")), stall, mstall,
            "%d/%d" % (r["kernel_errors"], r["model_errors"]), "%.3f" % r["max_diff"]]


HEAD = ["kernel", "cell", "n", "kernel shares", "model shares", "after event: kernel", "model",
        "stall ms (kernel)", "stall ms (model)", "errors k/m", "max diff", "within %.2f" % TOLERANCE]


def markdown(rows: List[dict]) -> str:
    out = ["| " + " | ".join(HEAD) + " |", "|" + "---|" * len(HEAD)]
    for r in rows:
        out.append("| " + " | ".join(_cells(r) + ["yes" if r["ok"] else "**no**"]) + " |")
    return "\n".join(out)


def terminal(rows: List[dict]) -> str:
    """The table within 100 columns: the verdict and the shares, then the failover figures in a
    second table."""
    from .report.text import columns
    head = ["cell", "n", "max diff", "within %.2f" % TOLERANCE, "kernel shares", "model shares", "errors k/m",
            "after: kernel", "after: model", "stall ms kernel", "model"]
    out = []
    for r in rows:
        c = _cells(r)
        out.append([c[0] + " " + c[1], c[2], c[10], "yes" if r["ok"] else "no"] + c[3:5] + [c[9]] + c[5:9])
    return "\n".join(columns(head, out))


def load_cells(path: str) -> List[dict]:
    try:
        with open(path) as f:
            cells = json.load(f)
    except OSError as e:
        raise SystemExit("%s: %s" % (path, e.strerror))
    except ValueError as e:
        raise SystemExit("%s: line %d: not JSON (%s)" % (path, getattr(e, "lineno", 0), e))
    if not isinstance(cells, list):
        raise SystemExit("%s: line 1: a list of cells expected" % path)
    return cells


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="mpathlab validate-nvme", description=__doc__.split("\n")[0])
    ap.add_argument("results", nargs="?", default=DEFAULT_RESULTS)
    ap.add_argument("--kernel", help="only this kernel series (6.1, 6.12)")
    ap.add_argument("--json", action="store_true", help="the rows as JSON")
    ap.add_argument("--markdown", action="store_true",
                    help="the table as Markdown, one line per cell, as docs/validation-nvme.md shows it")
    a = ap.parse_args(argv)
    try:
        cells = load_cells(a.results)
    except SystemExit as e:
        print(e, file=sys.stderr)
        return 3
    if a.kernel:
        cells = [c for c in cells if c["kernel"] == a.kernel]
    rows = compare(cells)
    if a.json:
        print(json.dumps(rows, indent=1, sort_keys=True))
    else:
        for g in sorted({r["guest"] for r in rows}):
            print("\n".join(wrap("guest: " + g)))
        print(markdown(rows) if a.markdown else terminal(rows))
        print("\n%d of %d cells within %.2f with the kernel's error count" % (
            sum(r["ok"] for r in rows), len(rows), TOLERANCE))
    return 0


if __name__ == "__main__":
    sys.exit(main())
