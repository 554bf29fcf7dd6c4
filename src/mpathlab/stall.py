"""A run that ends with I/O pending says so the same way in every mode (dm, NVMe, several hosts,
--conf): ``stalled``, why, and what is pending (docs/limits.md).

The engines stop when no I/O can make progress (no usable path and nothing scheduled that could
bring one back) or at the hard stop (the jobs' runtime plus the drain time).  The runners that know
the topology (:func:`annotate`) tell those apart and name a path that would have come back too
late; :func:`describe` gives the one description the text and JSON outputs print.
"""
from __future__ import annotations

from typing import Optional, Sequence

from .units import format_ns

# a target's own timers stop once no I/O has ended for this long, so a run whose timers re-arm forever ends
# (an ANA group left in change resets its controller every 2 x ANATT; ctrl_loss_tmo = -1 reconnects forever)
TARGET_TIMER_STOP_NS = 600 * 1_000_000_000
NO_PATH = "no usable path (every path failed or inaccessible) and nothing scheduled that could bring one back"


def annotate(sim, result, paths: Sequence = (), events: Sequence = ()) -> None:
    """Set ``result.stalled`` and ``result.stall`` ({at_ns, pending, queued, why}) when I/O is pending."""
    if not result.pending:
        result.stall = None
        return
    result.stalled = True
    end = sim.now
    queued = len(getattr(sim.mp, "queued_bios", ()) or ())
    hard_stop = sim.run_plan()[2]
    later = []
    for pm in paths:
        for f in getattr(pm, "faults", ()) or ():
            if f.action == "reinstate" and f.at_ns > end:
                later.append((f.at_ns + f.reinstate_after_ns, "path %s comes back only at %s"
                              % (pm.name, format_ns(f.at_ns + f.reinstate_after_ns))))
    for ev in events:
        if ev[0] > end:
            later.append((ev[0], "%r is only due at %s" % (ev[1], format_ns(ev[0]))))
    suspended = [d.model.name for d in getattr(sim, "devices", ()) if getattr(d, "dm_suspended", False)]
    if hard_stop is not None and later:
        why = "cut off at the jobs' runtime plus the %s drain (%s); %s" % (
            format_ns(sim.drain_ns), format_ns(hard_stop), min(later)[1])
    elif suspended:
        why = "the dm device of path %s stays suspended (no resume) and holds the I/O sent to it" % (
            ", ".join(suspended))
    elif getattr(result, "timers_stopped_ns", None) is not None:
        why = ("no I/O ended for %s while only the target's own timers ran (e.g. reconnecting forever with "
               "ctrl_loss_tmo = -1): the run stopped them at %s" % (
                   format_ns(TARGET_TIMER_STOP_NS), format_ns(result.timers_stopped_ns)))
    else:
        why = NO_PATH
    result.stall = {"at_ns": end, "pending": result.pending, "queued": min(queued, result.pending), "why": why}


def describe(result) -> Optional[dict]:
    """{at_ns, pending, queued, why} for a run that ended with I/O pending, else None; runs that did
    not go through :func:`annotate` (several hosts, --conf) get the engine's reason."""
    if not result.pending and not result.stalled:
        return None
    st = getattr(result, "stall", None)
    if st:
        return st
    return {"at_ns": None, "pending": result.pending, "queued": None, "why": NO_PATH}


def stall_line(result) -> Optional[str]:
    st = describe(result)
    if st is None:
        return None
    where = " at %s" % format_ns(st["at_ns"]) if st["at_ns"] is not None else ""
    what = "%d I/O(s) pending" % st["pending"]
    if st["queued"] is not None:
        what += " (%d queued in the target, %d requeued or in flight)" % (st["queued"], st["pending"] - st["queued"])
    return "stalled: the run ended%s with %s: %s" % (where, what, st["why"])
