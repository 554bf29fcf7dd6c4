"""What a run may cost, checked before it starts (docs/limits.md).

The engines jump from event to event, but while I/O waits for a path (queue_if_no_path) the
requeue loop walks simulated time: about 3.7 s of wall time and 20 MB per simulated day.  A job
that thinks for 1,000 days, a 365-day time-based job, or a path that comes back after 100,000
days would run for hours or exhaust memory, so a run whose plan reaches past the budget of
simulated time is refused before it starts, naming what sets the span; the budget is raised
with MPATHLAB_MAX_SIM_SECONDS.  A large run the compiled core cannot take gets a warning with
the reason and an estimate.
"""
from __future__ import annotations

import os
import sys
from typing import List, Optional, Tuple

SIM_SECONDS_ENV = "MPATHLAB_MAX_SIM_SECONDS"
DEFAULT_MAX_SIM_SECONDS = 86400            # one simulated day: a few seconds of requeue loop at most
PYTHON_IOS_WARN = 1_000_000                 # the Python engine does roughly 100,000-300,000 I/Os a second
PYTHON_IOS_PER_SECOND = 150_000


class BudgetError(ValueError):
    """The run's plan is beyond the run budget (the CLI exits 3)."""


def max_sim_seconds() -> int:
    text = os.environ.get(SIM_SECONDS_ENV)
    if text is None or text == "":
        return DEFAULT_MAX_SIM_SECONDS
    if not (text.isascii() and text.isdigit()) or len(text) > 10 or int(text) == 0:
        raise BudgetError("%s=%r: a whole number of simulated seconds from 1 to 9223372036"
                          % (SIM_SECONDS_ENV, text[:40]))
    return min(int(text), (2 ** 63 - 1) // 10 ** 9)


def _span(sim, topo, paths=None, messages=None, events="messages", job_source="") -> List[Tuple[int, str]]:
    """(simulated ns, what) for everything that sets how far the run's clock may go."""
    out: List[Tuple[int, str]] = []
    src = getattr(topo, "source", "") or "topology"
    for j in sim.jobs:
        spec = j.spec
        where = "%sjob %r" % (job_source + ": " if job_source else "", spec.name)
        if j.stop_ns:
            out.append((j.stop_ns, "%s: runtime (with startdelay) %s" % (where, _human(j.stop_ns))))
        if spec.thinktime_ns:
            ios = j.remaining if j.remaining is not None else None
            if ios is None and j.gen is not None:
                ios = j.gen.ios_left
            if ios:
                think = spec.thinktime_ns * -(-ios // max(1, spec.thinktime_blocks))
                if j.stop_ns:
                    think = min(think, j.stop_ns)
                out.append((think, "%s: thinktime %s between blocks of %d I/O(s), %d I/Os"
                            % (where, _human(spec.thinktime_ns), max(1, spec.thinktime_blocks), ios)))
    paths = getattr(topo, "paths", ()) if paths is None else paths
    messages = getattr(topo, "messages", ()) if messages is None else messages
    for pm in paths or ():
        for i, f in enumerate(getattr(pm, "faults", ()) or ()):
            end = f.at_ns + (f.reinstate_after_ns or 0)
            what = "at" if not f.reinstate_after_ns else "at + reinstate_after"
            out.append((end, "%s: paths.%s.faults[%d].%s = %s" % (src, pm.name, i, what, _human(end))))
    for i, ev in enumerate(messages or ()):
        out.append((ev[0], "%s: %s[%d].at = %s" % (src, events, i, _human(ev[0]))))
    qto = getattr(topo, "queue_if_no_path_timeout_secs", 0) or 0
    if qto and any(f.action == "fail" for pm in paths or () for f in (getattr(pm, "faults", None) or ())):
        out.append((qto * 10 ** 9, "%s: [multipath] queue_if_no_path_timeout_secs = %d (I/O queues that long "
                                   "once every path has failed)" % (src, qto)))
    return out


def _human(ns: int) -> str:
    s = ns / 1e9
    for unit, size in (("days", 86400), ("hours", 3600), ("s", 1)):
        if s >= size:
            return "%.4g %s" % (s / size, unit)
    return "%.4g s" % s


def check_run(sim, topo, stream=None, **where) -> None:
    """Refuse a run whose simulated span is beyond the budget; warn about a large Python-engine run.
    ``where``: the paths and messages (events) when they are not the topology's dm ones (NVMe)."""
    budget = max_sim_seconds()
    spans = _span(sim, topo, **where)
    if spans:
        ns, what = max(spans)
        if ns > budget * 10 ** 9:
            raise BudgetError("%s: the run would walk %s of simulated time, beyond the run budget of %d s "
                              "(raise %s to run it; docs/limits.md)" % (what, _human(ns), budget, SIM_SECONDS_ENV))
    expected = sim.run_plan()[0]
    if expected > PYTHON_IOS_WARN:
        reason = _python_reason(sim)
        if reason:
            print("mpathlab: warning: about %d I/Os on the Python engine (%s): expect %d s or more"
                  % (expected, reason, expected // PYTHON_IOS_PER_SECOND), file=stream or sys.stderr)


def _python_reason(sim) -> Optional[str]:
    if getattr(sim, "engine", "auto") == "python":
        return "engine=python"
    from .sim import fast
    return fast.eligible(sim) or None
