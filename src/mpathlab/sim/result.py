"""What a run produced (the engine fills it; mpathlab.report prints it)."""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from .arrival import mean_size
from .devices import best_distribution
from .jobstate import JobState
from .stats import LatencyStats, mean_abs_deviation


class SimResult:
    """Everything a run produced; see :mod:`mpathlab.report` for output."""

    def __init__(self):
        self.selector = ""
        self.paths: List[dict] = []
        self.jobs: List[JobState] = []
        self.shares: Dict[str, float] = {}
        self.best: Dict[str, float] = {}
        self.mean_deviation = 0.0
        self.runtime_ns = 0
        self.submitted = 0
        self.completed = 0
        self.errored = 0
        self.pending = 0
        # of those, I/O dm had ended but fio had not reaped yet (its completion's CPU time under way): already in
        # its path's completions
        self.pending_reap = 0
        self.stalled = False
        self.timers_stopped_ns: Optional[int] = None     # when a target's own timers stopped (no progress)
        self.status_info = ""
        self.status_table = ""
        self.messages: List[Tuple[int, str, str]] = []
        self.timeline: List[Tuple[int, Dict[str, int]]] = []
        self.path_latency: Dict[str, LatencyStats] = {}   # path name -> latency of the I/O it completed
        self.windows: List[Tuple[int, Dict[str, int]]] = []
        self.window_ns = 0
        self.events = 0
        self.engine = "python"
        # a fault study's measurements (sim/faults.py: stall, longest gap, recovery, retried I/O)
        self.fault: Dict[str, Optional[int]] = {}
        # Simulation(record_completions=True): when each I/O completed; and always the path errors
        # dm-mpath took back (requeued or held) instead of ending the I/O with them
        self.done_at: Optional[List[int]] = None
        self.requeued_errors = 0

    def share_in_window(self, path: str, t0: int, t1: int) -> float:
        """Share of dispatches to ``path`` between t0 and t1 (needs window_ns)."""
        tot = mine = 0
        for t, counts in self.windows:
            if t0 <= t < t1:
                tot += sum(counts.values())
                mine += counts.get(path, 0)
        return mine / tot if tot else 0.0

    def reaction_ns(self, path: str, since: int, below: float, span: int = 5) -> Optional[int]:
        """Time after ``since`` until the share of dispatches to ``path``,
        over ``span`` consecutive windows, first drops below ``below``
        (None if it never does).  Needs window_ns."""
        ws = [(t, c) for t, c in self.windows if t >= since]
        for i in range(len(ws) - span + 1):
            tot = mine = 0
            for _, c in ws[i:i + span]:
                tot += sum(c.values())
                mine += c.get(path, 0)
            if tot and mine / tot < below:
                return ws[i + span - 1][0] + self.window_ns - since
        return None

    @property
    def io_jobs(self) -> List[JobState]:
        """The clones that did I/O: not the cpuio burners, whose 'I/Os' burn a CPU and never reach the
        target (live mode's clones have no burner attribute)."""
        return [j for j in self.jobs if not getattr(j, "burner", False)]

    def check_accounting(self) -> None:
        """Raise AssertionError if any I/O was lost or counted twice."""
        assert self.submitted == self.completed + self.errored + self.pending, (
            "accounting: submitted %d != completed %d + errored %d + pending %d"
            % (self.submitted, self.completed, self.errored, self.pending))
        per_path = sum(p["completed"] for p in self.paths)
        assert per_path == self.completed + self.pending_reap, "per-path completions %d != total %d%s" % (
            per_path, self.completed, " + %d ended, not reaped" % self.pending_reap if self.pending_reap else "")
        assert sum(j.completed for j in self.io_jobs) == self.completed
        assert sum(j.errored for j in self.jobs) == self.errored
        assert all(p["in_flight"] == 0 for p in self.paths), "I/O still in flight on a path at the end"


def collect(sim) -> SimResult:
    """Fill the run's result from its devices, jobs and target at the end of a run."""
    res = sim.result
    mp = sim.mp
    res.selector = ",".join(sorted({pg.ps.name for pg in mp.priority_groups}))
    res.runtime_ns = max([j.end_ns for j in sim.jobs] + [0]) - min([j.start_ns for j in sim.jobs] + [0])
    res.jobs = sim.jobs
    total = sum(d.completed for d in sim.devices)
    io_jobs = res.io_jobs
    bs = (io_jobs[0].spec.bs if not io_jobs[0].spec.mixed_sizes else int(mean_size(io_jobs[0].spec))) \
        if io_jobs else 4096
    res.best = best_distribution(sim.paths, bs)
    for d in sim.devices:
        m = d.model
        share = d.completed / total if total else 0.0
        res.shares[m.name] = share
        res.paths.append({
            "name": m.name, "dev": m.devname, "dispatched": d.dispatched, "completed": d.completed,
            "errors": d.errors, "share": share, "best": res.best[m.name], "in_flight": d.in_flight,
            "peak_in_flight": d.peak_in_flight,
            "mean_service_ns": m.mean_service_ns(bs), "parallelism": m.parallelism,
            "delay_ns": m.delay_ns,
        })
    res.mean_deviation = mean_abs_deviation(res.shares, res.best)
    res.path_latency = {d.model.name: d.lat for d in sim.devices}
    names = [d.model.name for d in sim.devices]
    res.windows = [(k * sim.window_ns, dict(zip(names, v))) for k, v in sorted(sim._windows.items())]
    res.window_ns = sim.window_ns
    res.status_info = mp.status("info")
    res.status_table = mp.status("table")
    return res
