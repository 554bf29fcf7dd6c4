"""Bridge to the optional compiled core (mpathlab._fastcore).

:func:`try_run_fast` runs a :class:`~mpathlab.sim.engine.Simulation` in C when
the configuration is one the core models and writes the final state back into the same Python objects, so results,
status strings and JSON are produced by the same code either way.  The C
core reproduces the Python engine exactly (same random streams, same event
order); tests compare the two.  Set MPATHLAB_ENGINE=python to force the
pure-Python engine.

What the core runs (everything else falls back, :func:`eligible` says why):
one priority group without a hardware handler, every path valid; the four
load-balancing selectors in C (round-robin, queue-length, service-time,
historical-service-time); any other selector -- io-affinity, the policies of
mpathlab.policies, a third party's -- as Python code called from the compiled
loop (its select_path, start_io and end_io, with the Simulation's clock and
CPU kept current), so only the selector's own code runs at Python speed;
'slow' faults; dispatch windows (window_ns); path tags and the host's CPUs.

The split for what is left (fail/reinstate faults, dm messages, several
priority groups, queue_if_no_path): the per-I/O steps those need are the
target's map and end_io with a failed path (requeue, queue, error), so they
belong in C; the rare events (a message, a fault) would call back into the
Python target and copy the selector and path state across.  Not done yet.
"""
from __future__ import annotations

import math
import os

from ..selectors import HistoricalServiceTime, QueueLength, RoundRobin, ServiceTime as STSelector
from ..timing import initial_jiffies
from .devices import Empirical, Exponential, LogNormal, ServiceTime

try:
    from .. import _fastcore
except ImportError:  # not built: pure Python only
    _fastcore = None  # type: ignore[assignment]

_SELECTORS = {RoundRobin: 0, QueueLength: 1, STSelector: 2, HistoricalServiceTime: 3}


def available() -> bool:
    return _fastcore is not None


def _dist(svc):
    t = type(svc)
    if t is ServiceTime:
        return 0, svc.mean_ns, 0.0, 0.0, []
    if t is Exponential:
        return 1, svc.mean_ns, 0.0, 0.0, []
    if t is LogNormal:
        mu = math.log(svc.mean_ns) - svc.sigma ** 2 / 2 if svc.mean_ns else 0.0
        return 2, svc.mean_ns, mu, svc.sigma, []
    if t is Empirical:
        return 3, svc.mean_ns, 0.0, 0.0, list(svc.samples)
    return None


def _py_selector(ps) -> bool:
    """A selector the core calls back into (not one of its own C selectors)."""
    return type(ps) not in _SELECTORS


def _fault_events(sim):
    """The faults Simulation.__init__ scheduled, in their order: (at_ns, device index, Fault)."""
    from .engine import EV_FAULT
    index = {d: i for i, d in enumerate(sim.devices)}
    return [(t, index[obj[0]], obj[1]) for t, _, kind, obj in sorted(sim._heap, key=lambda e: e[1])
            if kind == EV_FAULT]


def eligible(sim) -> str:
    """'' when the compiled core can run this simulation, else the reason."""
    if _fastcore is None:
        return "compiled core not built"
    if os.environ.get("MPATHLAB_ENGINE", "").lower() == "python":
        return "MPATHLAB_ENGINE=python"
    if getattr(sim, "daemons", None):
        return "a user-space daemon (multipathd) needs the Python engine"
    if len(getattr(sim, "targets", ())) > 1:
        return "several hosts (mpathlab.sim.multihost) need the Python engine"
    mp = sim.mp
    if getattr(mp, "stack", "dm") != "dm":
        return "the %s stack is not in the compiled core" % mp.stack
    if len(mp.priority_groups) != 1 or mp.hw_handler_name:
        return "needs exactly one priority group and no hardware handler"
    pg = mp.priority_groups[0]
    if mp.nr_valid_paths != len(pg.pgpaths) or len(pg.pgpaths) != len(sim.devices):
        return "every device must be one active path of the table"
    if len({sim.dev_of_pgpath[p] for p in pg.pgpaths}) != len(pg.pgpaths):
        return "a device appears twice in the table"
    from .engine import EV_FAULT, EV_MESSAGE
    kinds = {e[2] for e in sim._heap}
    if EV_MESSAGE in kinds:
        return "dm messages (fail_path, switch_group, queue_if_no_path, ...) need the Python engine"
    if any(f.action != "slow" for _, _, f in _fault_events(sim)):
        return "fail and reinstate faults need the Python engine (only 'slow' faults are in the compiled core)"
    if kinds - {EV_FAULT}:
        return "simulation already started"
    if any(_dist(d.model.service) is None for d in sim.devices):
        return "custom service-time distribution"
    if len(sim._groups) > 1:
        return "stonewall groups need the Python engine"
    for j in sim.jobs:
        # not in the core (sim/arrival.py): mixed sizes, trims, open-loop arrivals
        if j.gen is not None:
            return "mixed I/O sizes, trims and open-loop arrivals (rate, thinktime) need the Python engine"
        if j.spec.bs > 0x7FFFFFFF:
            return "block sizes of 2 GiB and more need the Python engine"
        if j.log is not None:
            return "fio logs (write_*_log) need the Python engine"
        if j.spec.wait_for or sim._waits:
            return "wait_for and exitall need the Python engine"
    if mp.queued_bios or any(j.submitted for j in sim.jobs):
        return "simulation already started"
    return ""


def try_run_fast(sim) -> bool:
    """Run ``sim`` in the compiled core if possible; True if it did."""
    if eligible(sim):
        return False
    mp = sim.mp
    pg = mp.priority_groups[0]
    ps = pg.ps
    py_sel = _py_selector(ps)
    devices = sim.devices
    index = {d: i for i, d in enumerate(devices)}
    info_of_dev = {}
    paths_cfg: list = [None] * len(devices)
    for pgpath in pg.pgpaths:
        d = sim.dev_of_pgpath[pgpath]
        # a Python selector keeps its own state: the core only needs the pgpath
        info = None if py_sel else ps._info[pgpath]
        info_of_dev[index[d]] = (pgpath, info)
    for i, d in enumerate(devices):
        pgpath, info = info_of_dev[i]
        kind, mean, mu, sigma, samples = _dist(d.model.service)
        paths_cfg[i] = {
            "parallelism": d.model.parallelism, "delay_ns": d.model.delay_ns, "ns_per_kib": d.model.ns_per_kib,
            "slow_factor": float(d.slow_factor),
            "dist": kind, "mean": float(mean), "mu": float(mu), "sigma": float(sigma), "samples": samples,
            "seed": d.seed, "rt": getattr(info, "relative_throughput", 1),
            "hst": getattr(info, "hst", 0), "outstanding": getattr(info, "outstanding", 0),
            "stale_after": getattr(info, "stale_after", 0), "last_finish": getattr(info, "last_finish", 0),
            "nr_hw_queues": d.model.nr_hw_queues if sim.blk is not None else 1,
            "hctx_tags": d.model.hctx_tags if sim.blk is not None else 0,
            "hctx_sched_tags": d.model.hctx_sched_tags if sim.blk is not None else 0,
        }
    order = (list(range(len(devices))) if py_sel
             else [index[sim.dev_of_pgpath[pi.path]] for pi in ps._valid])
    is_hst = type(ps) is HistoricalServiceTime
    jobs_cfg = [{"bs": j.spec.bs, "iodepth": j.spec.iodepth,
                 "remaining": -1 if j.remaining is None else j.remaining,
                 "stop_ns": -1 if j.stop_ns is None else j.stop_ns, "startdelay_ns": j.spec.startdelay_ns,
                 "read_fraction": float(j.spec.read_fraction), "seed": j.seed,
                 "cpu": j.cpu} for j in sim.jobs]
    expected, horizon, hard_stop, tl_step, tl_count = sim.run_plan()
    bio = mp.queue_mode == "bio"
    cfg = {
        "selector": 4 if py_sel else _SELECTORS[type(ps)], "paths": paths_cfg, "jobs": jobs_cfg, "order": order,
        "base_ns": sim._base, "bio": int(bio), "rq_stats": int(mp.rq_stats),
        "use_hr": int(bio and ps.uses_hr_timer() and not mp.force_jiffies_start),
        "hz": sim.timebase.hz, "initial_jiffies": initial_jiffies(sim.timebase.hz),
        "weights": list(ps.weights) if is_hst else [0] * 64,
        "threshold": ps.threshold_multiplier if is_hst else 0,
        "valid_count": ps.valid_count if is_hst else 0,
        "has_select_offset": int(sim.sched_clock_offset_ns is not None),
        "select_offset": sim.sched_clock_offset_ns or 0,
        "timeline_step": tl_step, "timeline_count": tl_count,
        "expected": expected, "horizon": horizon,
        "hard_stop": -1 if hard_stop is None else hard_stop,
        "progress": sim.progress,
        "window_ns": sim.window_ns,
        "faults": [(t, i, float(f.factor)) for t, i, f in _fault_events(sim)],
        "blk": int(sim.blk is not None),
        "host": int(sim.host is not None),
        "ncpus": sim.host.model.cpus if sim.host is not None else 1,
        "submit_cost": sim.host.model.submit_ns if sim.host is not None else 0,
        "complete_cost": sim.host.model.complete_ns if sim.host is not None else 0,
        "wake_cost": sim.host.model.wake_ns if sim.host is not None else 0,
        "steal_ns": sim.host.model.steal_ns if sim.host is not None else 0,
        "steal_period": sim.host.model.steal_period_ns if sim.host is not None else 1,
        "work_latency": sim.host.model.work_latency_ns if sim.host is not None else 0,
    }
    if py_sel:
        pgpaths = [info_of_dev[i][0] for i in range(len(devices))]
        cfg.update({"py_selector": ps, "py_pgpaths": pgpaths, "py_index": {p: i for i, p in enumerate(pgpaths)},
                    "py_sim": sim, "py_hooks": int(ps.has_io_hooks)})
    sim._heap.clear()           # the faults now run in the core
    sim._state_changes = 0
    out = _fastcore.simulate(cfg)
    _write_back(sim, out, info_of_dev)
    return True


def _write_back(sim, out, info_of_dev) -> None:
    mp = sim.mp
    pg = mp.priority_groups[0]
    ps = pg.ps
    names = [d.model.name for d in sim.devices]
    for i, (d, p) in enumerate(zip(sim.devices, out["paths"])):
        d.dispatched, d.completed = p["dispatched"], p["completed"]
        d.in_flight, d.peak_in_flight = p["in_flight"], p["peak_in_flight"]
        st = d.lat
        st.n, st.min, st.max, st.mean, st._m2, st.hist = p["lat"]
        d.slow_factor = p["slow_factor"]
        _, info = info_of_dev[i]
        if info is None:
            continue
        if hasattr(info, "qlen"):
            info.qlen = p["qlen"]
        if hasattr(info, "in_flight_size"):
            info.in_flight_size = p["in_flight_size"]
        if hasattr(info, "hst"):
            info.hst, info.outstanding = p["hst"], p["outstanding"]
            info.stale_after, info.last_finish = p["stale_after"], p["last_finish"]
    if info_of_dev[0][1] is not None:
        ps._valid[:] = [info_of_dev[i][1] for i in out["order"]]
    sim.now = out["now"]
    sim._windows = {k: v for k, v in out["windows"].items()}
    if out["first_choice"] >= 0:
        mp.current_pgpath = info_of_dev[out["first_choice"]][0]
        mp.current_pg = pg
        mp.next_pg = None
        mp.queue_io = False
        mp.pg_init_required = False
        mp.pg_init_count = 0
    for j, o in zip(sim.jobs, out["jobs"]):
        j.submitted, j.completed, j.end_ns = o["submitted"], o["completed"], o["end_ns"]
        j.remaining = None if o["remaining"] < 0 else o["remaining"]
        j.inflight = 0
        j.bytes_read, j.bytes_written = o["bytes_read"], o["bytes_written"]
        j.rate_windows.windows = [list(w) for w in o["windows"]]
        j.depth_map = list(o["depth_map"])
        j.lat_ranges = list(o["lat_ranges"])
        for st, (n, lo, hi, mean, m2, hist) in ((j.read_lat, o["read_lat"]), (j.write_lat, o["write_lat"])):
            st.n, st.min, st.max, st.mean, st._m2, st.hist = n, lo, hi, mean, m2, hist
    res = sim.result
    res.submitted, res.completed, res.events = out["submitted"], out["completed"], out["events"]
    res.pending, res.stalled = out["pending"], bool(out["stalled"])
    res.timeline = [(t, dict(zip(names, counts))) for t, counts in out["timeline"]]
    if sim.blk is not None:
        sim.blk.resource_stalls = out["resource_stalls"]
    if sim.host is not None:
        for c, busy in zip(sim.host.cpus, out["cpu_busy_ns"]):
            c.busy_ns = busy
    res.engine = "compiled"
