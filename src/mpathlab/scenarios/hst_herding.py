"""Instrumented run of the hst-fast-path-herding scenario: why HST piles up.

:func:`trace` runs the scenario's HST column in the Python engine with the
selector's select_path wrapped, and reports, over the second half of the
run (steady state), what HST saw when it chose: per fast path the median
``hst`` (the EMA of service-time samples, in ns), the mean number of
outstanding I/Os, the median estimate ``(1 + outstanding) * hst``, how often
the path was stale; and, for every choice of a busy ("hot") fast path, why
each idle-capable "cold" fast path lost:

- ``busy``: it had an I/O outstanding, so its estimate was at least 2 * hst;
- ``estimate``: it was idle but its hst exceeded the winner's estimate;
- ``scan order``: it was idle and would have beaten the winner head to head,
  but lost earlier in the linear scan to an idle slower path with an earlier
  ``stale_after`` (two idle paths are ordered by stale_after only, so the
  comparison is not transitive).

and, for every choice of a cold fast path, whether it won as an idle stale
path (the probe) or on estimate.

docs/scenarios.md ("Why HST herds") quotes these numbers; tests/test_policies.py checks
them.  Nothing here changes the selector: it only reads its state.
"""
from __future__ import annotations

import statistics
from collections import Counter
from typing import Optional

from ..sim.engine import Simulation
from ..workload.fio import load_fio
from ..topology import load_topology
from . import HERDING_FAST, SCENARIOS


def trace(seed: Optional[int] = None) -> dict:
    sc = SCENARIOS["hst-fast-path-herding"]
    topo = load_topology(sc.topology).with_selector("historical-service-time")
    jobs = load_fio(sc.job).jobs
    kw = topo.sim_kwargs()
    if seed is not None:
        kw["seed"] = seed
    kw["engine"] = "python"
    sim = Simulation(topo.table, topo.paths, jobs, **kw)
    ps = sim.mp.priority_groups[0].ps
    name_of_devt = {p.devname: p.name for p in topo.paths}
    name = {pg: name_of_devt["%u:%u" % tuple(pg.dev.devt)] for pg in sim.mp.pgpaths}
    snaps = []
    select = ps.select_path

    def traced_select(nr_bytes=0):
        now = ps.select_clock()
        order = list(ps.valid_paths)
        state = {name[pi.path]: (pi.hst >> 10, pi.outstanding, pi.stale_after < now) for pi in order}
        chosen = select(nr_bytes)
        lost = {}
        if ps.path_info(chosen).outstanding:
            # replay the scan to tell "lost on estimate" from "lost by scan order"
            win = ps.path_info(chosen)
            for pi in order:
                n = name[pi.path]
                if n in HERDING_FAST and pi is not win:
                    if pi.outstanding:
                        lost[n] = "busy"
                    elif ps.compare(pi, win, now) < 0:
                        lost[n] = "scan order"
                    else:
                        lost[n] = "estimate"
        snaps.append((name[chosen], state, lost))
        return chosen

    ps.select_path = traced_select
    res = sim.run()
    res.check_accounting()
    half = snaps[len(snaps) // 2:]
    hot = sorted(HERDING_FAST, key=lambda p: -res.shares[p])[:2]
    paths = {}
    for p in HERDING_FAST:
        hst = [s[p][0] for _, s, _ in half]
        out = [s[p][1] for _, s, _ in half]
        paths[p] = {"share": res.shares[p], "hst_ns": statistics.median(hst), "outstanding": statistics.mean(out),
                    "estimate_ns": statistics.median((1 + s[p][1]) * s[p][0] for _, s, _ in half),
                    "stale": sum(s[p][2] for _, s, _ in half) / len(half)}
    # how a cold fast path got the I/O it did get: as an idle stale path (probe) or on estimate
    cold_chosen = Counter()
    for chosen, state, _ in half:
        if chosen in HERDING_FAST and chosen not in hot:
            _, out, stale = state[chosen]
            cold_chosen["busy" if out else ("stale probe" if stale else "estimate")] += 1
    why = Counter()
    for chosen, _, lost in half:
        if chosen in hot:
            for p, reason in lost.items():
                if p not in hot:
                    why[reason] += 1
    return {"hot": hot, "cold": [p for p in HERDING_FAST if p not in hot], "paths": paths,
            "cold_lost": dict(why), "cold_chosen": dict(cold_chosen),
            "chosen": dict(Counter(c for c, _, _ in half))}


def main() -> None:  # python -m mpathlab.scenarios.hst_herding
    t = trace()
    print("hot paths:", ", ".join(t["hot"]), "  cold fast paths:", ", ".join(t["cold"]))
    for p, d in t["paths"].items():
        print("%s share %.3f  hst %6.0f us  outstanding %5.1f  (1+out)*hst %6.0f us  stale %.2f"
              % (p, d["share"], d["hst_ns"] / 1e3, d["outstanding"], d["estimate_ns"] / 1e3, d["stale"]))
    total = sum(t["cold_lost"].values())
    print("when a hot path was chosen, a cold fast path lost because:",
          ", ".join("%s %.0f%%" % (k, 100.0 * v / total) for k, v in sorted(t["cold_lost"].items())))
    print("when a cold fast path was chosen, it was:",
          ", ".join("%s %d" % kv for kv in sorted(t["cold_chosen"].items())))


if __name__ == "__main__":
    main()
