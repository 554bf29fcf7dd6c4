"""What the reports say about runs, independent of how it is drawn (HTML or terminal).

The data model is generic: an ordered list of runs, each labelled by the
name of its policy (a dm selector, or anything else that produces a
:class:`~mpathlab.sim.engine.SimResult`).  This module derives from them:

- the priority groups of the map (from the run's own ``dmsetup table``);
- Best for a map with several groups, where Best over all paths would be
  meaningless (only one group carries I/O at a time);
- the timed events of a run (faults of the topology, dm messages) and what
  each run made of them;
- which runs behaved identically, so a plot can say so instead of hiding
  one curve under another.
"""
from __future__ import annotations

import math
from typing import Dict, List, Optional, Sequence, Tuple, Union

Runs = Union[Dict[str, object], Sequence[Tuple[str, object]]]

BEST_GROUPS_NOTE = (
    "This map has several priority groups and dm-mpath sends I/O to one group at a time, so Best over all "
    "paths is meaningless. Best here is defined per group: within each priority group, every path gets its "
    "share of the group's capacity (servers / mean service time), weighted by the I/O that group actually "
    "carried over the run. A path that was failed for part of the run still counts at full capacity in its "
    "group, so its share falls short of this Best by the time it was down.")


def as_runs(results: Runs) -> List[Tuple[str, object]]:
    """(label, result) pairs from a dict or a sequence of pairs."""
    items = list(results.items()) if isinstance(results, dict) else [tuple(x) for x in results]
    if not items:
        raise ValueError("no runs to report")
    return items


def priority_groups(result) -> List[List[str]]:
    """Path names per priority group, in table order (one group of every path if unknown)."""
    names = [p["name"] for p in result.paths]
    by_dev = {p.get("dev"): p["name"] for p in result.paths}
    table = getattr(result, "status_table", "") or ""
    if table.strip():
        try:
            from ..target import parse
            m = parse(table if table.split()[2:3] == ["multipath"] else "0 1 multipath " + table)
            groups = [[by_dev.get(pgp.dev.name, pgp.dev.name) for pgp in pg.pgpaths] for pg in m.priority_groups]
            if groups and all(g for g in groups):
                return groups
        except Exception:   # a table this parser does not take (live mode, a foreign target): one group
            pass
    return [names]


def _capacity(p: dict) -> float:
    """I/Os per second the path's device completes when saturated (Best's weight)."""
    m = p.get("mean_service_ns") or 0.0
    return float("inf") if m <= 0 else p.get("parallelism", 1) * 1e9 / m


def best_shares(result) -> Tuple[Dict[str, float], Optional[str]]:
    """Best per path, and a note saying how it was defined when the map has several groups.

    One group: the run's own Best (every path's share of the total capacity).
    Several groups: Best within each group, weighted by the I/O the group
    completed (see BEST_GROUPS_NOTE).
    """
    groups = priority_groups(result)
    if len(groups) <= 1:
        return dict(result.best), None
    paths = {p["name"]: p for p in result.paths}
    total = sum(p["completed"] for p in result.paths)
    best = {n: 0.0 for n in paths}
    for g in groups:
        members = [n for n in g if n in paths]
        carried = sum(paths[n]["completed"] for n in members)
        if not total or not carried:
            continue
        caps = {n: _capacity(paths[n]) for n in members}
        infs = [n for n, c in caps.items() if math.isinf(c)]
        tot = sum(caps.values())
        for n in members:
            within = (1.0 / len(infs) if n in infs else 0.0) if infs else (caps[n] / tot if tot else 0.0)
            best[n] += carried / total * within
    return best, BEST_GROUPS_NOTE


def mean_deviation(shares: Dict[str, float], best: Dict[str, float]) -> float:
    from ..sim.stats import mean_abs_deviation
    return mean_abs_deviation(shares, best)


class Event:
    """A timed event of a run: a device fault or a dm message, with each run's outcome."""

    def __init__(self, at_ns: int, kind: str, what: str):
        self.at_ns = at_ns
        self.kind = kind        # "fault" or "message"
        self.what = what
        self.outcome: Dict[str, str] = {}


def events(runs: Runs, topology=None) -> List[Event]:
    """Faults of the topology's devices and the dm messages each run received, in time order.

    Messages include the reinstate_path that multipathd sends after a
    'reinstate' fault; their outcome ("ok" or the kernel's error) is per run.
    """
    runs = as_runs(runs)
    out: Dict[Tuple[int, str, str], Event] = {}
    if topology is not None:
        for pm in topology.paths:
            for f in pm.faults:
                what = {"fail": "device %s (%s) fails: every I/O on it errors" % (pm.name, pm.devname),
                        "reinstate": "device %s (%s) works again; multipathd reinstates it after %s"
                                     % (pm.name, pm.devname, _dur(f.reinstate_after_ns)),
                        "slow": "device %s (%s) becomes %g times slower" % (pm.name, pm.devname, f.factor),
                        "suspend": "the dm device over %s (%s) is suspended: new I/O to it waits"
                                   % (pm.name, pm.devname),
                        "resume": "the dm device over %s (%s) resumes%s" % (
                            pm.name, pm.devname, "" if f.delay_ns is None else " with a delay of %s"
                            % _dur(f.delay_ns)),
                        }.get(f.action, "%s %s" % (f.action, pm.name))
                ev = out.setdefault((f.at_ns, "fault", what), Event(f.at_ns, "fault", what))
                for label, res in runs:
                    ev.outcome[label] = _fault_outcome(f, pm, res)
    for label, res in runs:
        for t, text, outcome in getattr(res, "messages", []):
            ev = out.setdefault((t, "message", text), Event(t, "message", "dm message: %s" % text))
            ev.outcome[label] = outcome
    return sorted(out.values(), key=lambda e: (e.at_ns, e.kind != "fault", e.what))


def _fault_outcome(fault, pm, res) -> str:
    """What a run shows of a device fault (the simulator counts errors per path, not per fault)."""
    if fault.action == "fail":
        p = next((p for p in res.paths if p["name"] == pm.name), None)
        n = p["errors"] if p else 0
        return "%d I/O error%s on %s over the run" % (
            n, "" if n == 1 else "s", pm.name) if n else "no I/O was on %s: no error" % pm.name
    if fault.action == "reinstate":
        return "device usable again (see the reinstate_path message)"
    if fault.action == "suspend":
        return "I/O sent to %s is held until its resume" % pm.name
    if fault.action == "resume":
        return "the held I/O goes on to the device"
    return "service times x %g from here" % fault.factor


def _dur(ns: int) -> str:
    from ..units import format_ns
    return format_ns(ns)


def same_behaviour(a, b) -> bool:
    """True when two runs made the same decisions: same per-path counts, in-flight and latencies."""
    if [(p["name"], p["completed"], p["dispatched"], p["errors"]) for p in a.paths] != \
            [(p["name"], p["completed"], p["dispatched"], p["errors"]) for p in b.paths]:
        return False
    if a.timeline != b.timeline:
        return False
    from ..sim.stats import merged_latency
    la, lb = merged_latency(a.jobs), merged_latency(b.jobs)
    return (la.n, la.hist, la.max) == (lb.n, lb.hist, lb.max)


def identical_sets(runs: Runs) -> List[List[str]]:
    """Labels grouped by identical behaviour, in first-seen order (singletons included)."""
    runs = as_runs(runs)
    sets: List[List[Tuple[str, object]]] = []
    for label, res in runs:
        for s in sets:
            if same_behaviour(s[0][1], res):
                s.append((label, res))
                break
        else:
            sets.append([(label, res)])
    return [[lab for lab, _ in s] for s in sets]


def identical_note(runs: Runs, workload: str = "this workload") -> List[str]:
    """One sentence per set of runs that behaved identically."""
    return ["%s identical on %s (same per-path counts, in-flight over time and latencies)"
            % (_and(s), workload) for s in identical_sets(runs) if len(s) > 1]


def _and(items: Sequence[str]) -> str:
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def describe_service(p: dict, model=None) -> str:
    """The service-time model of a path, from the topology's model if given."""
    if model is not None:
        return model.service.describe()
    return "mean %.1f us" % ((p.get("mean_service_ns") or 0) / 1e3)
