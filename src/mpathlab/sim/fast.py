"""Bridge to the optional compiled core (mpathlab._fastcore).

:func:`try_run_fast` runs a :class:`~mpathlab.sim.engine.Simulation` in C when
the configuration is one the core models, and writes the final state back
into the same Python objects, so results, status strings and JSON are
produced by the same code either way.  The C core reproduces the Python
engine exactly (same random streams, same event order); tests compare the
two run for run.  Set MPATHLAB_ENGINE=python to force the pure-Python engine.
What crosses (constants, event kinds, tuple layouts) is declared once in :mod:`.boundary`, from
which the core's C header is generated.

What the core runs is an allow-list (:func:`eligible`; any other part of a run falls back, and the run
says why once on stderr):
round-robin, queue-length, service-time, historical-service-time and
io-affinity in C; any other selector (mpathlab.policies, a third party's, a
kernelc-built one) as Python code the compiled loop calls through its
select_path, start_io and end_io, with the Simulation's clock and CPU kept
current, so only the selector's own code runs at Python speed; path tags and
host CPUs; dispatch windows; faults (fail, reinstate, slow); dm messages;
several priority groups (each with its own selector, C or Python) with
switching and hardware-handler pg_init;
queue_if_no_path with its timeout; bio-based queueing; jobs with an IoGen
(sim/arrival.py: mixed sizes, trims, open-loop arrivals; :mod:`.fast_gen`
hands it over and names what of it stays in Python).

The split, and why: every per-I/O step (submit, map through the selector,
tags, device, completion through end_io, fio's statistics) is in C, because
that is where the time goes.  The dm-mpath target's logic for the rare
events -- a message, a fault's reinstate_path, an I/O that failed on a dead
path, a map while no path is valid or a group switch or pg_init is pending,
the kick of queued bios, the no-path timeout -- stays in the Python target
(:class:`_Target` calls it), so it exists in one place and a change to the
target needs no C mirror.  Each such call copies the C selectors' state to
the Python selector and back (O(paths), rare), and the events the target
schedules (kicks, timers, activations, messages) land in the core's heap in
the order the Python engine would push them.  Moving map/end_io into C for
both engines would make failover runs faster still, at the price of a
second target implementation; the measured cost of the calls back
(bench/bench.py) did not justify that.
"""
from __future__ import annotations

import math
import os
import sys
from typing import Optional

from ..selectors import HistoricalServiceTime
from ..selectors.io_affinity import IOAffinity
from ..timing import initial_jiffies
from ..target import (END_DELAY_REQUEUE, END_DONE, END_INCOMPLETE, END_REQUEUE, MAP_DELAY_REQUEUE, MAP_KILL,
                      MAP_REMAPPED, MAP_REQUEUE, MAP_SUBMITTED, MpathIO)
from ..target.multipath import DH_OK, Multipath
from ..workload.fio import JobSpec
from . import boundary as b
from .boundary import (EV_ACTIVATED, EV_FAULT, EV_KICK, EV_MESSAGE, EV_NOPATH_TIMEOUT, CoreEvent, CoreFault,
                       LatState, SelPathState, TargetFlags)
from .arrival import IoGen
from .devices import Empirical, Exponential, Fault, LogNormal, PathDevice, PathModel, ServiceTime
from .host import HostModel
from . import fast_gen

try:
    from .. import _fastcore
except ImportError:  # not built: pure Python only
    _fastcore = None  # type: ignore[assignment]

SEL_PY, SEL_IOA = b.SEL_PY, b.SEL_IOA   # a Python selector called from the core; io-affinity in C (no faults)


def available() -> bool:
    return _fastcore is not None


def _dist(svc):
    t = type(svc)
    if t is ServiceTime:
        return b.DIST_CONST, svc.mean_ns, 0.0, 0.0, []
    if t is Exponential:
        return b.DIST_EXP, svc.mean_ns, 0.0, 0.0, []
    if t is LogNormal:
        mu = math.log(svc.mean_ns) - svc.sigma ** 2 / 2 if svc.mean_ns else 0.0
        return b.DIST_LOGNORMAL, svc.mean_ns, mu, svc.sigma, []
    if t is Empirical:
        return b.DIST_EMPIRICAL, svc.mean_ns, 0.0, 0.0, list(svc.samples)
    return None


def core_kind(ps) -> int:
    """The core's own implementation of PS (boundary.SEL_*), or SEL_PY: the core calls its Python
    methods.  Only a class that declares core_selector itself has one (not a subclass of it)."""
    name = type(ps).__dict__.get("core_selector")
    return b.SELECTOR_KINDS.get(name, SEL_PY) if name else SEL_PY


def _py_selector(ps) -> bool:
    """A selector the core calls back into (not one of its own C selectors)."""
    return core_kind(ps) == SEL_PY


def _fault_events(sim):
    """The faults Simulation.__init__ scheduled, in their order: (at_ns, device index, Fault)."""
    index = {d: i for i, d in enumerate(sim.devices)}
    return [(t, index[obj[0]], obj[1]) for t, _, kind, obj in sorted(sim._heap, key=lambda e: e[1])
            if kind == EV_FAULT]


_MAP = {r: b.MAP_CODES[r] for r in (MAP_REMAPPED, MAP_SUBMITTED, MAP_REQUEUE, MAP_DELAY_REQUEUE, MAP_KILL)}
_END = {r: b.END_CODES[r] for r in (END_DONE, END_REQUEUE, END_DELAY_REQUEUE, END_INCOMPLETE)}
# the events the target schedules that the core runs (one numbering with the Python engine)
_TARGET_EVENTS = (EV_KICK, EV_MESSAGE, EV_NOPATH_TIMEOUT, EV_ACTIVATED)


class _CoreIO(MpathIO):
    """The target's view of one of the core's I/Os while the Python target handles it."""
    __slots__ = ("cid",)


class _Target:
    """The Python target (and selector), called by the core for the rare events: a fault's
    reinstate_path message, dm messages, end_io with an error, map while no path is valid or
    queueing is pending, the kick of queued bios, the queue_if_no_path timeout.  Each call gets
    the C selectors' state first and returns it with the target's flags and the events it
    scheduled (through Simulation._push), so both sides stay one state."""

    def __init__(self, sim, pgpaths, infos):
        self.sim, self.mp = sim, sim.mp
        self.c_pg = sim.mp.priority_groups[0]   # the group whose valid list the core holds
        self.pgpaths, self.infos = pgpaths, infos
        # the groups whose selector runs in C (their state is copied across on every call)
        self.c_groups = {p.pg for p, i in zip(pgpaths, infos) if i is not None}
        self.index = {p: i for i, p in enumerate(pgpaths)}
        self.queued = {}                 # cid -> _CoreIO the target holds (queued bios)
        self.messages = []               # texts of the core's EV_MESSAGE events
        self.errors = list(b.JOB_ERRORS)    # job errors by code (0: none; the core's ERR_*)
        self._events = []
        sim._push = self._capture        # the target's kicks, timers and messages go to the core

    def _capture(self, t, kind, obj):
        if kind == EV_MESSAGE:
            obj = self.message_index(obj)
        elif kind == EV_ACTIVATED:
            obj = self.index[obj]
        elif kind not in _TARGET_EVENTS:
            raise RuntimeError("event %d is not in the compiled core" % kind)
        self._events.append(CoreEvent(t=t, kind=kind, obj=obj or 0))

    def message_index(self, text):
        self.messages.append(text)
        return len(self.messages) - 1

    def state(self):
        """The C selectors' state as _fastcore.c's sel_state_out gives it: (SelPathState of each path,
        the valid order of the group the core selects in)."""
        if not self.c_groups:
            return None
        return ([SelPathState(
                    qlen=getattr(i, "qlen", 0), in_flight_size=getattr(i, "in_flight_size", 0),
                    hst=getattr(i, "hst", 0), outstanding=getattr(i, "outstanding", 0),
                    stale_after=getattr(i, "stale_after", 0), last_finish=getattr(i, "last_finish", 0),
                    valid_count=getattr(p.pg.ps, "valid_count", 0)) for p, i in zip(self.pgpaths, self.infos)],
                [self.infos.index(i) for i in self.c_pg.ps.valid_paths] if self.c_pg in self.c_groups else [])

    def _enter(self, state):
        if state is not None:
            paths, order = state
            for info, st in zip(self.infos, paths):
                if info is not None:
                    _set_info(info, SelPathState._make(st))
            # valid_count only changes in the Python selector (fail_path, reinstate_path)
            if self.c_pg in self.c_groups:
                self.c_pg.ps.valid_paths[:] = [self.infos[i] for i in order]
        self.sim._state_changes = 0

    def flags(self):
        mp = self.mp
        # map is the current group's select_path + start_io: the core may do it (in that group)
        simple = bool(mp.nr_valid_paths and not mp.queue_io and not mp.pg_init_required
                      and mp.current_pg is not None and any(p.is_active for p in mp.current_pg.pgpaths))
        # no path and no queueing: map kills every I/O and changes nothing (choose_pgpath already
        # cleared the current group); the core may fail them itself
        idle = not (mp.nr_valid_paths or mp.queue_io or mp.current_pg is not None or mp.current_pgpath is not None)
        queueing = mp.queue_if_no_path_flag or mp.noflush_suspending()
        kill = idle and not queueing
        # likewise request-based with queueing: every map is DM_MAPIO_DELAY_REQUEUE
        requeue = idle and queueing and mp.queue_mode != "bio"
        # request-based end_io with an error on a path already failed: only the selector's end_io runs,
        # and the I/O is requeued (a path or queueing is left) or fails with the error (bits 3 and 4)
        rq = mp.queue_mode != "bio"
        end_requeue = rq and bool(mp.nr_valid_paths or queueing)
        end_fail = rq and not end_requeue
        bits = ((b.TARGET_SIMPLE if simple else 0) | (b.TARGET_KILL if kill else 0)
                | (b.TARGET_REQUEUE if requeue else 0) | (b.TARGET_END_REQUEUE if end_requeue else 0)
                | (b.TARGET_END_FAIL if end_fail else 0))
        # state_changes: what the target's call changed (_enter zeroes the count)
        return TargetFlags(nr_valid_paths=mp.nr_valid_paths, bits=bits,
                           queue_if_no_path=int(mp.queue_if_no_path_flag), kick_pending=int(self.sim._kick_pending),
                           current_pg=mp.priority_groups.index(self.c_pg),
                           active=[p.is_active for p in self.pgpaths], state_changes=self.sim._state_changes)

    def _leave(self, result):
        if self.mp.current_pg is not None:
            self.c_pg = self.mp.current_pg
        events, self._events = self._events, []
        return result, self.state(), self.flags(), events

    def _io(self, cid, nr_bytes, dm_start_jiffies, mapped, start_ns, path=-1):
        io = _CoreIO(nr_bytes, None if dm_start_jiffies < 0 else dm_start_jiffies)
        io.cid, io.mapped_once, io.start_time_ns = cid, bool(mapped), start_ns
        io.pgpath = self.pgpaths[path] if path >= 0 else None
        return io

    def map(self, state, cid, nr_bytes, dm_start_jiffies, mapped, start_ns, cpu, free):
        self._enter(state)
        io = self.queued.pop(cid, None) or self._io(cid, nr_bytes, dm_start_jiffies, mapped, start_ns)
        self.sim._cur_cpu = cpu
        if free is not None:    # the core holds the tags: it says which path has a clone tag free
            self.mp.alloc_clone = lambda pgpath, io: free[self.index[pgpath]]
        r = self.mp.map(io)
        if r == MAP_SUBMITTED:
            self.queued[cid] = io
        return self._leave((_MAP[r], self.index[io.pgpath] if io.pgpath is not None else -1, io.start_time_ns))

    def end_io(self, state, cid, nr_bytes, path, start_ns, dm_start_jiffies, mapped):
        self._enter(state)
        io = self._io(cid, nr_bytes, dm_start_jiffies, mapped, start_ns, path)
        r = self.mp.end_io(io, "transport")
        if r == END_INCOMPLETE:
            self.queued[cid] = io
        return self._leave((_END[r], self._error_code(io.error)))

    def _error_code(self, error):
        if error is None:
            return 0
        if error not in self.errors:
            self.errors.append(error)
        return self.errors.index(error)

    def kick(self, state):
        self._enter(state)
        self.sim._kick_pending = False
        ids = [io.cid for io in self.mp.take_queued()]  # type: ignore[attr-defined]
        for cid in ids:
            self.queued.pop(cid, None)
        return self._leave(ids)

    def message(self, state, index):
        self._enter(state)
        self.sim._message(self.messages[index])
        return self._leave(None)

    def activated(self, state, index):
        """The hardware handler's activation of a path ended (Simulation: EV_ACTIVATED)."""
        self._enter(state)
        self.mp.pg_init_done(self.pgpaths[index], DH_OK)
        return self._leave(None)

    def nopath_timeout(self, state, gen):
        self._enter(state)
        self.sim._nopath_timeout(gen)
        return self._leave(None)


def _set_info(info, st: SelPathState) -> None:
    """The C selector's per-path state into the Python selector's path info."""
    if hasattr(info, "qlen"):
        info.qlen = st.qlen
    if hasattr(info, "in_flight_size"):
        info.in_flight_size = st.in_flight_size
    if hasattr(info, "hst"):
        info.hst, info.outstanding = st.hst, st.outstanding
        info.stale_after, info.last_finish = st.stale_after, st.last_finish


def _needs_target(sim) -> bool:
    """The run has rare events for the Python target: dm messages, faults that fail or reinstate,
    group switches and hardware-handler activation."""
    mp = sim.mp
    return len(mp.priority_groups) > 1 or bool(mp.hw_handler_name) or any(
        kind == EV_MESSAGE or (kind == EV_FAULT and obj[1].action != "slow")
        for _, _, kind, obj in sim._heap)


# What the compiled core runs, as an allow-list: a run whose every part is listed here runs in C;
# any other part (another stack or device type, a new fault, a fio option or a model field added to
# the Python engine later) makes the run fall back, and eligible() names it.
_CORE_DISTS = (ServiceTime, Exponential, LogNormal, Empirical)
# PathModel fields the core models (any value); another field must keep its default
_CORE_PATH_FIELDS = frozenset({"name", "devt", "service", "parallelism", "delay_ns", "ns_per_kib", "faults",
                               "fail_latency_ns", "hw_queue_depth", "nr_hw_queues", "scheduler", "nr_requests",
                               "per_kib_given"})   # per_kib_given: the topology said per_kib (used before the run)
# HostModel fields the core models (cpu_nodes and node_distance only place CPUs for the selectors)
_CORE_HOST_FIELDS = frozenset({"cpus", "submit_ns", "complete_ns", "wake_ns", "steal", "steal_period_ns",
                               "work_latency_ns", "cpu_nodes", "node_distance", "timer_away_ns", "timer_period_ns"})
# JobSpec fields (fio options) whose every value the core runs, or the run plan and the report use
# before and after it (sizes, loops, runtime, reporting); conditions on some values follow in _job_refusal
_CORE_JOB_FIELDS = frozenset({
    "name", "rw", "ddir_mode", "read_fraction", "random", "bs_rwt", "bsrange_rwt", "bssplit_rwt", "bs_unaligned",
    "iodepth", "iodepth_option", "iodepth_given", "iodepth_low", "size", "size_percent", "filesize", "nrfiles", "io_size",
    "fill_device", "loops", "number_ios", "numjobs", "runtime_ns", "time_based", "startdelay_ns", "zonesize",
    "rate_bps", "rate_iops", "rate_process", "thinktime_ns", "thinktime_spin_ns", "thinktime_blocks",
    "thinktime_blocks_type", "percentile_list", "lat_percentiles", "clat_percentiles", "group_reporting",
    "kb_base", "stonewall", "new_group", "continue_on_error", "cpus_allowed", "ioengine",
    # decided by value below (IoGen's fallback, the run's waits, the job's log) or only used with those
    "verify", "do_verify", "verify_backlog", "flow", "flow_id", "flow_sleep_ns", "latency_target_ns",
    "latency_window_ns", "latency_percentile", "latency_run", "wait_for", "exitall", "exit_what",
    "exitall_on_error", "cpuload", "cpu_cycle_us", "cpumode", "exit_on_io_done", "lat_log", "bw_log", "iops_log",
    "log_avg_msec", "log_offset", "log_prio", "per_job_logs",
    "_zones", "_rwmix_set", "notes", "options"})


def _unlisted(obj, reference, allowed) -> Optional[str]:
    """The first field of OBJ outside ALLOWED whose value differs from REFERENCE's (built with defaults)."""
    ref = vars(reference)
    for name, value in vars(obj).items():
        if name not in allowed and (name not in ref or ref[name] != value):
            return name
    return None


def _device_refusal(sim) -> str:
    for d in sim.devices:
        m = d.model
        if type(d) is not PathDevice or type(m) is not PathModel:
            return "%s devices are not in the compiled core" % type(m).__name__
        field = _unlisted(m, PathModel(m.name, m.devt, m.service), _CORE_PATH_FIELDS)
        if field:
            return "the path setting %s is not in the compiled core" % field
        if type(m.service) not in _CORE_DISTS:
            return "custom service-time distribution"
        for f in m.faults:
            if type(f) is not Fault or f.action not in b.FAULT_ACTIONS:
                return "the fault %r is not in the compiled core" % getattr(f, "action", f)
    if sim.host is not None:
        field = _unlisted(sim.host.model, HostModel(), _CORE_HOST_FIELDS)
        if field:
            return "the host setting %s is not in the compiled core" % field
    return ""


def _job_refusal(sim, j) -> str:
    spec = j.spec
    if type(spec) is not JobSpec:
        return "%s jobs are not in the compiled core" % type(spec).__name__
    field = _unlisted(spec, JobSpec(spec.name), _CORE_JOB_FIELDS)
    if field:
        return "the fio option %s is not in the compiled core" % field
    if j.gen is not None:
        # sim/arrival.py's IoGen: mixed sizes, trims and open-loop arrivals are in the core, the rest is not
        if type(j.gen) is not IoGen:
            return "%s workloads are not in the compiled core" % type(j.gen).__name__
        why = fast_gen.fallback(j)
        if why:
            return why
    if spec.bs > 0x7FFFFFFF:
        return "block sizes of 2 GiB and more need the Python engine"
    if j.log is not None:
        return "fio logs (write_*_log) need the Python engine"
    return ""


def eligible(sim) -> str:
    """'' when the compiled core can run this simulation, else the reason (the first part of the run
    that is not on the allow-list above)."""
    if _fastcore is None:
        return "compiled core not built"
    if os.environ.get("MPATHLAB_ENGINE", "").lower() == "python":
        return "MPATHLAB_ENGINE=python"
    if getattr(sim, "daemons", None):
        return "a user-space daemon (multipathd) needs the Python engine"
    if len(getattr(sim, "targets", ())) > 1:
        return "several hosts (mpathlab.multihost) need the Python engine"
    # engine.Simulation itself, not a subclass with its own hooks (named: engine imports this module)
    if (type(sim).__module__, type(sim).__qualname__) != (__package__ + ".engine", "Simulation"):
        return "the simulation %s is not in the compiled core" % type(sim).__name__
    mp = sim.mp
    if type(mp) is not Multipath:
        return "the %s stack is not in the compiled core" % getattr(mp, "stack", type(mp).__name__)
    pgs = mp.priority_groups
    pgpaths = mp.pgpaths
    if mp.nr_valid_paths != len(pgpaths) or len(pgpaths) != len(sim.devices):
        return "every device must be one active path of the table"
    if len({sim.dev_of_pgpath[p] for p in pgpaths}) != len(pgpaths):
        return "a device appears twice in the table"
    if len(pgs) > 1:
        # the core keeps one set of HST arguments and one start-time clock for bio-based I/O
        if len({(tuple(pg.ps.weights), pg.ps.threshold_multiplier) for pg in pgs
                if type(pg.ps) is HistoricalServiceTime}) > 1:
            return "several historical-service-time groups with different arguments need the Python engine"
        if mp.queue_mode == "bio" and len({pg.ps.uses_hr_timer() for pg in pgs}) > 1:
            return ("bio-based groups whose selectors stamp start times differently (ktime or jiffies) "
                    "need the Python engine")
    kinds = {e[2] for e in sim._heap}
    if kinds - {EV_FAULT, EV_MESSAGE}:
        return "simulation already started"
    if any(d.model.is_scsi for d in sim.devices):
        return "SCSI path devices (queue_depth, a host's can_queue) run in the Python engine"
    why = _device_refusal(sim)
    if why:
        return why
    if len(sim._groups) > 1:
        return "stonewall groups need the Python engine"
    for j in sim.jobs:
        why = _job_refusal(sim, j)
        if why:
            return why
    if sim._waits:
        return "wait_for and exitall need the Python engine"
    if mp.queued_bios or any(j.submitted for j in sim.jobs):
        return "simulation already started"
    return ""


_noted: set = set()     # the fallback reasons already said in this process


def note_fallback(sim, stream=None) -> str:
    """Say on stderr, once per reason and process, that SIM runs on the Python engine and why; the
    reason ('' when the core runs it).  Not said when the user asked for the Python engine."""
    why = eligible(sim)
    if why and why != "MPATHLAB_ENGINE=python" and why not in _noted:
        _noted.add(why)
        print("mpathlab: note: this run uses the Python engine (slower): %s" % why, file=stream or sys.stderr)
    return why


def try_run_fast(sim) -> bool:
    """Run ``sim`` in the compiled core if possible; True if it did."""
    if eligible(sim):
        return False
    mp = sim.mp
    pg = mp.priority_groups[0]
    ps = pg.ps
    py_sel = _py_selector(ps)
    # io-affinity in C while every path stays valid; with faults or messages it runs as Python code
    ioa = type(ps) is IOAffinity and not _needs_target(sim)
    devices = sim.devices
    index = {d: i for i, d in enumerate(devices)}
    info_of_dev = {}
    paths_cfg: list = [None] * len(devices)
    for pgpath in mp.pgpaths:
        d = sim.dev_of_pgpath[pgpath]
        # a Python selector keeps its own state: the core only needs the pgpath
        info = None if ioa or _py_selector(pgpath.pg.ps) else pgpath.pg.ps.path_info(pgpath)
        info_of_dev[index[d]] = (pgpath, info)
    for i, d in enumerate(devices):
        pgpath, info = info_of_dev[i]
        kind, mean, mu, sigma, samples = _dist(d.model.service)
        paths_cfg[i] = {
            "parallelism": d.model.parallelism, "delay_ns": d.model.delay_ns, "ns_per_kib": d.model.ns_per_kib,
            "slow_factor": float(d.slow_factor), "fail_latency_ns": d.model.fail_latency_ns,
            "dist": kind, "mean": float(mean), "mu": float(mu), "sigma": float(sigma), "samples": samples,
            "seed": d.seed, "rt": getattr(info, "relative_throughput", 1),
            "hst": getattr(info, "hst", 0), "outstanding": getattr(info, "outstanding", 0),
            "stale_after": getattr(info, "stale_after", 0), "last_finish": getattr(info, "last_finish", 0),
            "valid_count": getattr(pgpath.pg.ps, "valid_count", 0), "pg": mp.priority_groups.index(pgpath.pg),
            "nr_hw_queues": d.model.nr_hw_queues if sim.blk is not None else 1,
            "hctx_tags": d.model.hctx_tags if sim.blk is not None else 0,
            "hctx_sched_tags": d.model.hctx_sched_tags if sim.blk is not None else 0,
        }
    order = (list(range(len(devices))) if py_sel or ioa
             else [index[sim.dev_of_pgpath[pi.path]] for pi in ps.valid_paths])
    hst = [pg.ps for pg in mp.priority_groups if type(pg.ps) is HistoricalServiceTime]
    jobs_cfg = [{"bs": j.spec.bs, "iodepth": j.spec.iodepth,
                 "remaining": -1 if j.remaining is None else j.remaining,
                 "stop_ns": -1 if j.stop_ns is None else j.stop_ns, "startdelay_ns": j.spec.startdelay_ns,
                 "read_fraction": float(j.spec.read_fraction), "seed": j.seed,
                 "cpu": j.cpu, "continue_on_error": int(j.spec.continue_on_error),
                 "gen": fast_gen.config(j)} for j in sim.jobs]
    expected, horizon, hard_stop, tl_step, tl_count = sim.run_plan()
    bio = mp.queue_mode == "bio"
    cfg = {
        "selector": SEL_IOA if ioa else core_kind(ps),
        "paths": paths_cfg, "jobs": jobs_cfg, "order": order,
        "base_ns": sim._base, "bio": int(bio), "rq_stats": int(mp.rq_stats),
        "use_hr": int(bio and ps.uses_hr_timer() and not mp.force_jiffies_start),
        "hz": sim.timebase.hz, "initial_jiffies": initial_jiffies(sim.timebase.hz),
        "pg_selectors": [SEL_IOA if ioa else core_kind(pg.ps) for pg in mp.priority_groups],
        "weights": list(hst[0].weights) if hst else [0] * 64,
        "threshold": hst[0].threshold_multiplier if hst else 0,
        "has_select_offset": int(sim.sched_clock_offset_ns is not None),
        "select_offset": sim.sched_clock_offset_ns or 0,
        "timeline_step": tl_step, "timeline_count": tl_count,
        "expected": expected, "horizon": horizon,
        "hard_stop": -1 if hard_stop is None else hard_stop,
        "progress": sim.progress,
        "window_ns": sim.window_ns, "py_sim": sim,
        "state_changes": sim._state_changes,
        "blk": int(sim.blk is not None),
        "host": int(sim.host is not None),
        "ncpus": sim.host.model.cpus if sim.host is not None else 1,
        "submit_cost": sim.host.model.submit_ns if sim.host is not None else 0,
        "complete_cost": sim.host.model.complete_ns if sim.host is not None else 0,
        "wake_cost": sim.host.model.wake_ns if sim.host is not None else 0,
        "steal_ns": sim.host.model.steal_ns if sim.host is not None else 0,
        "steal_period": sim.host.model.steal_period_ns if sim.host is not None else 1,
        "work_latency": sim.host.model.work_latency_ns if sim.host is not None else 0,
        "timer_away": sim.host.model.timer_away_ns if sim.host is not None else 0,
        "timer_period": sim.host.model.timer_period_ns if sim.host is not None else 1,
        "timer_seed": sim.seed,
    }
    if ioa:
        pgpath_index = {info_of_dev[i][0]: i for i in range(len(devices))}
        cfg.update({"ioa_map": [-1 if pi is None else pgpath_index[pi.path] for pi in ps.path_map],
                    "ioa_node": list(ps.topology.node_of), "map_misses": ps.map_misses})
    elif any(_py_selector(pg.ps) for pg in mp.priority_groups):
        # per group: a Python selector's bound hooks (None for a group whose selector runs in C)
        pgpaths = [info_of_dev[i][0] for i in range(len(devices))]
        pys = [pg.ps if _py_selector(pg.ps) else None for pg in mp.priority_groups]
        cfg.update({"py_select": [ps and ps.select_path for ps in pys],
                    "py_start": [ps.start_io if ps and ps.has_io_hooks else None for ps in pys],
                    "py_end": [ps.end_io if ps and ps.has_io_hooks else None for ps in pys],
                    "py_pgpaths": pgpaths, "py_index": {p: i for i, p in enumerate(pgpaths)}})
    # the faults and messages Simulation.__init__ scheduled now run in the core, in their order
    target = None
    if _needs_target(sim):
        pgpaths = [info_of_dev[i][0] for i in range(len(devices))]
        target = _Target(sim, pgpaths, [info_of_dev[i][1] for i in range(len(devices))])
    faults, initial = [], []
    for t, _, kind, obj in sorted(sim._heap, key=lambda e: e[1]):
        if kind == EV_FAULT:
            d, f = obj
            msg = target.message_index("reinstate_path %s" % d.model.devname) if target is not None else 0
            faults.append(CoreFault(path=index[d], action=b.FAULT_ACTIONS[f.action], factor=float(f.factor),
                                    reinstate_after_ns=f.reinstate_after_ns, message=msg))
            initial.append(CoreEvent(t=t, kind=EV_FAULT, obj=len(faults) - 1))
        else:
            initial.append(CoreEvent(t=t, kind=EV_MESSAGE,
                                     obj=target.message_index(obj)))  # type: ignore[union-attr]
    cfg.update({"faults": faults, "initial": initial, "target": target,
                "target_flags": target.flags() if target is not None else None})
    sim._heap.clear()
    sim._state_changes = 0
    alloc_clone = mp.alloc_clone
    try:
        out = _fastcore.simulate(cfg)
    finally:
        if target is not None:
            del sim._push           # the Simulation's own _push again
            mp.alloc_clone = alloc_clone
    out["target"] = target
    if ioa:
        ps.map_misses = out["map_misses"]
    _write_back(sim, out, info_of_dev)
    return True


def _set_lat(stats, out) -> None:
    """A LatState from the core into a sim.stats LatencyStats."""
    r = LatState(*out)
    stats.n, stats.min, stats.max, stats.mean, stats._m2, stats.hist = r.n, r.min, r.max, r.mean, r.m2, r.hist


def _write_back(sim, out, info_of_dev) -> None:
    mp = sim.mp
    pg = mp.priority_groups[0]
    ps = pg.ps
    names = [d.model.name for d in sim.devices]
    for i, (d, p) in enumerate(zip(sim.devices, out["paths"])):
        d.dispatched, d.completed = p["dispatched"], p["completed"]
        d.in_flight, d.peak_in_flight = p["in_flight"], p["peak_in_flight"]
        _set_lat(d.lat, p["lat"])
        d.slow_factor, d.errors, d.offline = p["slow_factor"], p["errors"], bool(p["offline"])
        _, info = info_of_dev[i]
        if info is not None:
            _set_info(info, SelPathState._make(p.get(f, 0) for f in SelPathState._fields))
    target = out["target"]
    # the C selector's valid list: of the group it last selected in
    c_ps = target.c_pg.ps if target is not None else ps
    if not (_py_selector(c_ps) or type(c_ps) is IOAffinity):
        c_ps.valid_paths[:] = [info_of_dev[i][1] for i in out["order"]]
    sim.now = out["now"]
    sim._windows = {k: v for k, v in out["windows"].items()}
    if out["first_choice"] >= 0 and target is None:   # with a target its state is already the run's
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
        j.errored, j.stopped, j.last_error_ns = o["errored"], bool(o["stopped"]), o["last_error_ns"]
        j.first_error = target.errors[o["first_error"]] if target is not None else None
        j.bytes_read, j.bytes_written = o["bytes_read"], o["bytes_written"]
        if j.gen is not None:
            j.bytes_trimmed, j.wake_ns = o["bytes_trimmed"], o["wake_ns"]
            _set_lat(j.trim_lat, o["trim_lat"])
            fast_gen.set_state(j.gen, o["gen"])
        j.rate_windows.windows = [list(w) for w in o["windows"]]
        j.depth_map = list(o["depth_map"])
        j.lat_ranges = list(o["lat_ranges"])
        _set_lat(j.read_lat, o["read_lat"])
        _set_lat(j.write_lat, o["write_lat"])
    res = sim.result
    res.submitted, res.completed, res.events = out["submitted"], out["completed"], out["events"]
    res.pending, res.stalled = out["pending"] + len(mp.queued_bios), bool(out["stalled"])
    res.errored = out["errored"]
    res.timeline = [(t, dict(zip(names, counts))) for t, counts in out["timeline"]]
    if sim.blk is not None:
        sim.blk.resource_stalls = out["resource_stalls"]
    if sim.host is not None:
        for c, busy in zip(sim.host.cpus, out["cpu_busy_ns"]):
            c.busy_ns = busy
    res.engine = "compiled"
