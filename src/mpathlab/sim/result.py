"""What a run produced (the engine fills it; mpathlab.report prints it)."""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from .jobrules import JobState
from .stats import LatencyStats


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
        self.stalled = False
        self.status_info = ""
        self.status_table = ""
        self.messages: List[Tuple[int, str, str]] = []
        self.timeline: List[Tuple[int, Dict[str, int]]] = []
        self.path_latency: Dict[str, LatencyStats] = {}   # path name -> latency of the I/O it completed
        self.windows: List[Tuple[int, Dict[str, int]]] = []
        self.window_ns = 0
        self.events = 0
        self.engine = "python"

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
        assert per_path == self.completed, "per-path completions %d != total %d" % (per_path, self.completed)
        assert sum(j.completed for j in self.io_jobs) == self.completed
        assert sum(j.errored for j in self.jobs) == self.errored
        assert all(p["in_flight"] == 0 for p in self.paths), "I/O still in flight on a path at the end"
