"""Fault studies: what happens to I/O when paths fail, come back or slow down.

Each study is a small topology with scheduled faults, run once per selector.
The accounting invariant (submitted = completed + errored + pending, per-path
counts adding up) is checked after every run.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from ..units import format_ns
from ..workload.fio import parse_fio
from .devices import Exponential, Fault, PathModel
from .engine import Simulation

MS = 1_000_000
SELECTORS = ("round-robin", "queue-length", "service-time", "historical-service-time")
_PER_PATH_ARGS: Dict[str, Optional[Tuple[int, str]]] = {
    "round-robin": (1, "1"), "queue-length": (1, "1"), "service-time": (2, "1 1"),
    "historical-service-time": (1, "0"), "io-affinity": None}


def _table(selector: str, devs: List[str], features: str = "0") -> str:
    per_path = _PER_PATH_ARGS[selector]
    if per_path is None:
        raise ValueError("fault studies do not run %s (it needs CPU masks)" % selector)
    n, arg = per_path
    paths = " ".join("%s %s" % (d, arg) for d in devs)
    return "0 1048576 multipath %s 0 1 1 %s 0 %d %d %s" % (features, selector, len(devs), n, paths)


def _paths(n: int, faults: Dict[int, List[Fault]], service_us: float = 100.0, parallelism: int = 4):
    return [PathModel("sd%s" % chr(ord("a") + i), (8, 16 * i), Exponential(service_us * 1000),
                      parallelism=parallelism, faults=faults.get(i, ())) for i in range(n)]


class FaultStudy:
    def __init__(self, name: str, title: str, build, expect: str):
        self.name = name
        self.title = title
        self.build = build   # selector -> (table, paths, job text, sim kwargs)
        self.expect = expect

    def run(self, selector: str, seed: int = 1, kernel=None, progress=None):
        """progress: called with the run's fraction done, as Simulation calls it."""
        table, paths, job, kw = self.build(selector)
        sim = Simulation(table, paths, parse_fio(job).jobs, seed=seed, kernel=kernel, progress=progress, **kw)
        res = sim.run()
        res.check_accounting()
        return res


def _fail_reinstate(sel):
    faults = {1: [Fault(20 * MS, "fail"), Fault(60 * MS, "reinstate")]}
    job = "[j]\nrw=randwrite\nbs=4k\nioengine=libaio\niodepth=64\nruntime=100ms\ntime_based\n"
    return _table(sel, ["sda", "sdb", "sdc", "sdd"]), _paths(4, faults), job, {"window_ns": MS}


def _all_fail(sel, queue: bool):
    faults = {i: [Fault(20 * MS, "fail"), Fault(50 * MS, "reinstate")] for i in range(2)}
    feats = "1 queue_if_no_path" if queue else "0"
    job = "[j]\nrw=randwrite\nbs=4k\nioengine=libaio\niodepth=64\nruntime=100ms\ntime_based\n"
    if not queue:
        job += "continue_on_error=io\n"
    return _table(sel, ["sda", "sdb"], feats), _paths(2, faults), job, {"window_ns": MS}


def _all_fail_bio(sel):
    faults = {i: [Fault(20 * MS, "fail"), Fault(50 * MS, "reinstate")] for i in range(2)}
    job = "[j]\nrw=randwrite\nbs=4k\nioengine=libaio\niodepth=64\nruntime=100ms\ntime_based\n"
    return (_table(sel, ["sda", "sdb"], "3 queue_if_no_path queue_mode bio"), _paths(2, faults), job,
            {"window_ns": MS})


def _slow(sel, depth: int):
    faults = {1: [Fault(50 * MS, "slow", factor=20.0)]}
    job = "[j]\nrw=randwrite\nbs=4k\nioengine=libaio\niodepth=%d\nruntime=200ms\ntime_based\n" % depth
    # windows short enough to time the reaction, long enough to hold a few I/Os
    window = MS // 10 if depth >= 16 else MS
    return _table(sel, ["sda", "sdb", "sdc", "sdd"]), _paths(4, faults), job, {"window_ns": window}


STUDIES: Dict[str, FaultStudy] = {s.name: s for s in [
    FaultStudy("path-fail-reinstate", "4 paths at iodepth 64; sdb fails at 20 ms, is reinstated at 60 ms",
               _fail_reinstate, "in-flight I/O on sdb is requeued to other paths; no job sees an error"),
    FaultStudy("all-fail-queue", "2 paths, queue_if_no_path; both fail at 20 ms, come back at 50 ms",
               lambda s: _all_fail(s, True), "I/O queues (requeued every 100 ms), completes after reinstatement"),
    FaultStudy("all-fail-queue-bio", "as all-fail-queue, bio-based: bios wait inside the target",
               _all_fail_bio, "bios queue in the target and are re-mapped when a path returns"),
    FaultStudy("all-fail-error", "2 paths, no queue_if_no_path; both fail at 20 ms, come back at 50 ms",
               lambda s: _all_fail(s, False), "I/O fails with EIO while no path is left (counted as errors)"),
    FaultStudy("slow-path-20x", "4 paths at iodepth 64; sdb becomes 20x slower at 50 ms",
               lambda s: _slow(s, 64), "queues build on sdb: every load-aware selector moves I/O off it"),
    FaultStudy("slow-path-20x-depth1", "4 paths at iodepth 1; sdb becomes 20x slower at 50 ms",
               lambda s: _slow(s, 1), "no queue builds at depth 1: only HST, which measures service time, "
                                      "moves I/O off sdb"),
]}


def summarize(study: FaultStudy, selector: str, res) -> dict:
    d = {"study": study.name, "selector": selector, "submitted": res.submitted, "completed": res.completed,
         "errored": res.errored, "pending": res.pending,
         "path_errors": {p["name"]: p["errors"] for p in res.paths}}
    if study.name.startswith("slow-path-20x"):
        before = res.share_in_window("sdb", 10 * MS, 50 * MS)
        after = res.share_in_window("sdb", 150 * MS, 200 * MS)
        react = res.reaction_ns("sdb", 50 * MS, before / 2)
        d.update({"sdb_share_before": round(before, 4), "sdb_share_after": round(after, 4),
                  "reaction_ns": react})
    return d


def format_row(d: dict) -> str:
    s = "%-24s submitted %6d  completed %6d  errored %5d  pending %3d" % (
        d["selector"], d["submitted"], d["completed"], d["errored"], d["pending"])
    if "reaction_ns" in d:
        r = d["reaction_ns"]
        # on a line of its own: the row stays within the terminal views' 100 columns
        s += "\n%-24s sdb share %.3f -> %.3f, halved after %s" % ("",
            d["sdb_share_before"], d["sdb_share_after"], format_ns(r) if r is not None else "never")
    return s
