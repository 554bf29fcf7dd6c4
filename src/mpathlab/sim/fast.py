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
host CPUs; dispatch windows; SCSI paths (sim/scsi.py: queue_depth budgets, a host's can_queue with
blk-mq's fair share, device states, midlayer retries); faults (fail, reinstate, slow, and a SCSI
device's offline, delete, online and error); dm messages;
several priority groups (each with its own selector, C or Python) with
switching and hardware-handler pg_init;
queue_if_no_path with its timeout; bio-based queueing; jobs with an IoGen
(sim/arrival.py: mixed sizes, trims, open-loop arrivals; :mod:`.fast_gen`
hands it over and names what of it stays in Python); several hosts (sim/hosts.py), each
with its own selector state over the shared devices and its own _Target for a group switch
(slow faults only: :func:`_hosts_refusal`); a user-space daemon that declares ``in_compiled_core``
(multipathd: its timers call back into it, :meth:`_Target.daemon`); another stack's target whose bridge
is registered (:func:`register_target`: the NVMe head, nvme/core.py).

The split, and why: every per-I/O step (submit, map through the selector,
tags, device, completion through end_io, fio's statistics) is in C, because
that is where the time goes.  The dm-mpath target's logic for the rare
events -- a message, a fault's reinstate_path, an I/O that failed on a dead
path, a map while no path is valid or a group switch or pg_init is pending,
the kick of queued bios, the no-path timeout -- stays in the Python target
(:class:`_Target` calls it), so it exists in one place and a change to the
target needs no C mirror.  Likewise a SCSI command's end while an error class
is set or a retry is counted goes to sim/scsi.py's ScsiDevice.command_result
(:class:`_ScsiBridge`).  Each such call copies the C selectors' state to
the Python selector and back (O(paths), rare), and the events the target
schedules (kicks, timers, activations, messages) land in the core's heap in
the order the Python engine would push them.  Moving map/end_io into C for
both engines would make failover runs faster still, at the price of a
second target implementation; the measured cost of the calls back
(bench/bench.py) did not justify that.
"""
from __future__ import annotations

import functools
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
from .boundary import (EV_ACTIVATED, EV_CALL, EV_DAEMON, EV_DEV_FAIL, EV_DEV_RESTORE, EV_FAULT, EV_KICK,
                       EV_MESSAGE, EV_NOPATH_TIMEOUT, EV_REQUEUE, CoreEvent, CoreFault, CoreGroups, RunState,
                       DevRunState, JobRunState, LatState, ScsiCmd, SelPathState, TargetFlags)
from .arrival import IoGen
from .blockqueue import tag_wake_batch
from .devices import Empirical, Exponential, Fault, LogNormal, PathDevice, PathModel, ServiceTime
from .host import HostModel
from .scsi import FAULT_STATES, SDEV_DEL, SDEV_RUNNING, ScsiDevice, ScsiHost, ScsiHostModel
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
# (EV_REQUEUE: the target kicked the requeue list; the core re-arms its own requeue work)
_TARGET_EVENTS = (EV_KICK, EV_MESSAGE, EV_NOPATH_TIMEOUT, EV_ACTIVATED, EV_REQUEUE)


class _CoreIO(MpathIO):
    """The target's view of one of the core's I/Os while the Python target handles it."""
    __slots__ = ("cid",)


class CoreTarget:
    """What every bridge of a Python target to the core shares (dm's :class:`_Target`; another stack's
    registers with :func:`register_target`): the events the target schedules go to the core's heap
    (handed over by Simulation.redirect_events while the core runs), messages by index, job errors by
    code, and the Simulation state each call reads (now, the CPU) and changes (kicks, pending state
    changes)."""

    def __init__(self, sim, errors=None):
        """errors: the run's one list of job errors, shared by every host's target (None: a new one)."""
        self.sim = sim
        self.messages = []               # texts of the core's EV_MESSAGE events
        self.errors = list(b.JOB_ERRORS) if errors is None else errors   # job errors by code (0: none; ERR_*)
        self._events = []
        sim.redirect_events(self._capture)  # the target's kicks, timers and messages go to the core

    def core_event(self, kind: int, obj):
        """(kind, obj) of an event the target scheduled, as the core runs it; a kind the core does not
        run is an error (eligible() should have refused the run)."""
        if kind not in _TARGET_EVENTS:
            raise RuntimeError("event %d is not in the compiled core" % kind)
        return kind, obj

    def _capture(self, t, kind, obj):
        if kind == EV_MESSAGE:
            obj = self.message_index(obj)
        else:
            kind, obj = self.core_event(kind, obj)
        self._events.append(CoreEvent(t=t, kind=kind, obj=obj or 0))

    def message_index(self, text):
        self.messages.append(text)
        return len(self.messages) - 1

    def error_code(self, error):
        if error is None:
            return 0
        if error not in self.errors:
            self.errors.append(error)
        return self.errors.index(error)

    def take_events(self) -> list:
        events, self._events = self._events, []
        return events

    def begin_call(self, cpu: Optional[int] = None) -> None:
        """A call from the core starts: count the state changes it makes; the CPU it runs on."""
        self.sim._state_changes = 0
        if cpu is not None:
            self.sim._cur_cpu = cpu

    def sim_flags(self):
        """(kick pending, pending state changes made by the call) for TargetFlags."""
        return int(self.sim._kick_pending), self.sim._state_changes

    def kicked(self) -> None:
        self.sim._kick_pending = False

    def take_run_state(self, run) -> int:
        """The core's RunState into the Simulation (what a daemon's timer or a target's own reads: the
        result's counts, each job's and device's state); returns the pending state changes it gave."""
        sim = self.sim
        run = RunState._make(run)
        sim.result.completed, sim.result.errored = run.completed, run.errored
        for j, js in zip(sim.jobs, map(JobRunState._make, run.jobs)):
            j.inflight, j.stopped = js.inflight, bool(js.stopped)
            j.remaining = None if js.remaining < 0 else js.remaining
        for d, ds in zip(sim.devices, map(DevRunState._make, run.devices)):
            d.in_flight, d.offline = ds.in_flight, bool(ds.offline)
        return run.state_changes

    def send_message(self, index: int, run) -> None:
        """An EV_MESSAGE of the core, with the run's state (Simulation._message reads it)."""
        self.take_run_state(run)
        self.sim._message(self.messages[index])

    def close(self) -> None:
        self.sim.redirect_events(None)


class _Target(CoreTarget):
    """The Python target (and selector), called by the core for the rare events: a fault's
    reinstate_path message, dm messages, end_io with an error, map while no path is valid or
    queueing is pending, the kick of queued bios, the queue_if_no_path timeout, a daemon's timers.
    Each call gets the C selectors' state first and returns it with the target's flags and the events
    it scheduled (handed over by Simulation.redirect_events), so both sides stay one state."""

    def __init__(self, sim, pgpaths, infos, mp=None, errors=None):
        """mp: the target (another host's, sim/hosts.py; default the run's); errors: the list of job
        errors, one for all hosts (a job's error code indexes it)."""
        CoreTarget.__init__(self, sim, errors)
        self.mp = mp or sim.mp
        self.c_pg = self.mp.priority_groups[0]   # the group whose valid list the core holds
        self.pgpaths, self.infos = pgpaths, infos
        # the groups whose selector runs in C (their state is copied across on every call)
        self.c_groups = {p.pg for p, i in zip(pgpaths, infos) if i is not None}
        self.index = {p: i for i, p in enumerate(pgpaths)}
        self.queued = {}                 # cid -> _CoreIO the target holds (queued bios)
        self.tried = -1                  # the path the target's alloc_clone was last asked for
        # a daemon's timers (EV_DAEMON indexes these) and what it does to devices during them
        self.calls: list = []
        self.dev_index = {d: i for i, d in enumerate(sim.devices)}
        if sim.daemons:
            sim.fail_device = lambda dev: self._device_op(dev, True)
            sim.restore_device = lambda dev: self._device_op(dev, False)

    def core_event(self, kind, obj):
        if kind == EV_ACTIVATED:
            return kind, self.index[obj]
        if _daemon_call(self.sim, kind, obj):
            self.calls.append(obj[1])
            return EV_DAEMON, len(self.calls) - 1
        return CoreTarget.core_event(self, kind, obj)

    def _device_op(self, dev, fail: bool) -> None:
        """IoPath.fail_device / restore_device by a daemon: the core applies it at this point of the call."""
        dev.offline = fail
        self._events.append(CoreEvent(t=self.sim.now, kind=EV_DEV_FAIL if fail else EV_DEV_RESTORE,
                                      obj=self.dev_index[dev]))

    def close(self) -> None:
        CoreTarget.close(self)
        if self.sim.daemons:
            del self.sim.fail_device, self.sim.restore_device

    def daemon(self, state, index, run):
        """A daemon's timer (EV_DAEMON): the run's counters it reads first, then the call."""
        self._enter(state)
        sim = self.sim
        pending = self.take_run_state(run)
        sim._state_changes = pending        # the daemon reads the total (pending_state_changes)
        sim._daemon_call(self.calls[index])
        sim._state_changes -= pending       # the call's own change, as every call reports it
        return self._leave(self._regroup())

    def _regroup(self):
        """After a daemon reloaded the table (the target took a fresh table's state): the new groups'
        paths and selectors, as CoreGroups for the core; None when the table is the same."""
        mp, sim = self.mp, self.sim
        if len(self.pgpaths) == len(mp.pgpaths) and all(p in self.index for p in mp.pgpaths):
            return None
        pgpaths: list = [None] * len(self.pgpaths)
        for p in mp.pgpaths:
            pgpaths[self.dev_index[sim.dev_of_pgpath[p]]] = p
        self.pgpaths = pgpaths
        self.infos = [p.pg.ps.path_info(p) for p in pgpaths]
        self.c_groups = {p.pg for p in pgpaths}
        self.index = {p: i for i, p in enumerate(pgpaths)}
        self.c_pg = mp.priority_groups[0]
        hst = [pg.ps for pg in mp.priority_groups if type(pg.ps) is HistoricalServiceTime]
        return CoreGroups(pg_selectors=[core_kind(pg.ps) for pg in mp.priority_groups],
                          pg=[mp.priority_groups.index(p.pg) for p in pgpaths],
                          rt=[getattr(i, "relative_throughput", 1) for i in self.infos],
                          weights=list(hst[0].weights) if hst else [0] * b.HST_WEIGHTS,
                          threshold=hst[0].threshold_multiplier if hst else 0)

    def state(self):
        """The C selectors' state as _fastcore.c's sel_state_out gives it: (SelPathState of each path,
        the valid order of the group the core selects in)."""
        if not self.c_groups:
            return None
        return ([_sel_state(i, p.pg.ps) for p, i in zip(self.pgpaths, self.infos)],
                [self.infos.index(i) for i in self.c_pg.ps.valid_paths] if self.c_pg in self.c_groups else [])

    def _enter(self, state):
        self.sim._push = self._capture      # (several hosts: the calling host's target)
        if state is not None:
            paths, order = state
            for info, st in zip(self.infos, paths):
                if info is not None:
                    _set_info(info, SelPathState._make(st))
            # valid_count only changes in the Python selector (fail_path, reinstate_path)
            if self.c_pg in self.c_groups:
                self.c_pg.ps.valid_paths[:] = [self.infos[i] for i in order]
        self.begin_call()

    def flags(self):
        mp = self.mp
        # map is the current group's select_path + start_io: the core may do it (in that group)
        # (a map of the instance's own -- a daemon holds I/O while it reloads the table -- takes every map)
        held = "map" in vars(mp)
        simple = bool(mp.nr_valid_paths and not mp.queue_io and not mp.pg_init_required
                      and mp.current_pg is not None and any(p.is_active for p in mp.current_pg.pgpaths)
                      and not held)
        # no path and no queueing: map kills every I/O and changes nothing (choose_pgpath already
        # cleared the current group); the core may fail them itself
        idle = not (held or mp.nr_valid_paths or mp.queue_io or mp.current_pg is not None
                    or mp.current_pgpath is not None)
        queueing = mp.queue_if_no_path_flag or mp.noflush_suspending()
        kill = idle and not queueing
        # likewise request-based with queueing: every map is DM_MAPIO_DELAY_REQUEUE; bio-based with
        # queue_if_no_path every map holds the bio (the core keeps them until the target's next call)
        requeue = idle and queueing and mp.queue_mode != "bio"
        queue_bio = idle and mp.queue_if_no_path_flag and mp.queue_mode == "bio"
        # request-based end_io with an error on a path already failed: only the selector's end_io runs,
        # and the I/O is requeued (a path or queueing is left) or fails with the error (bits 3 and 4)
        rq = mp.queue_mode != "bio"
        end_requeue = rq and bool(mp.nr_valid_paths or queueing)
        end_fail = rq and not end_requeue
        bits = ((b.TARGET_SIMPLE if simple else 0) | (b.TARGET_KILL if kill else 0)
                | (b.TARGET_REQUEUE if requeue else 0) | (b.TARGET_END_REQUEUE if end_requeue else 0)
                | (b.TARGET_END_FAIL if end_fail else 0) | (b.TARGET_QUEUE_BIO if queue_bio else 0))
        # state_changes: what the target's call changed (_enter zeroes the count)
        kick_pending, state_changes = self.sim_flags()
        return TargetFlags(nr_valid_paths=mp.nr_valid_paths, bits=bits,
                           queue_if_no_path=int(mp.queue_if_no_path_flag), kick_pending=kick_pending,
                           current_pg=mp.priority_groups.index(self.c_pg),
                           active=[p.is_active for p in self.pgpaths], state_changes=state_changes)

    def _leave(self, result):
        if self.mp.current_pg is not None:
            self.c_pg = self.mp.current_pg
        return result, self.state(), self.flags(), self.take_events()

    def _io(self, cid, nr_bytes, dm_start_jiffies, mapped, start_ns, path=-1):
        io = _CoreIO(nr_bytes, None if dm_start_jiffies < 0 else dm_start_jiffies)
        io.cid, io.mapped_once, io.start_time_ns = cid, bool(mapped), start_ns
        io.pgpath = self.pgpaths[path] if path >= 0 else None
        return io

    def queue_bios(self, bios):
        """The bios the core mapped while the target held every bio (TARGET_QUEUE_BIO), in their order:
        (cid, nr_bytes, dm_start_jiffies, mapped, start_ns) each; handed over before any other call."""
        for cid, nr_bytes, dm_start_jiffies, mapped, start_ns in bios:
            io = self.queued.pop(cid, None) or self._io(cid, nr_bytes, dm_start_jiffies, mapped, start_ns)
            io.mapped_once, io.start_time_ns, io.pgpath = True, start_ns, None
            self.mp.queue_bio(io)
            self.queued[cid] = io

    def map(self, state, cid, nr_bytes, dm_start_jiffies, mapped, start_ns, cpu, free):
        self._enter(state)
        io = self.queued.pop(cid, None) or self._io(cid, nr_bytes, dm_start_jiffies, mapped, start_ns)
        self.begin_call(cpu)
        self.tried = -1
        if free is not None:    # the core holds the tags: it says which path has a clone tag free
            self.mp.alloc_clone = lambda pgpath, io: self._alloc_clone(free, pgpath)
        r = self.mp.map(io)
        if r == MAP_SUBMITTED:
            self.queued[cid] = io
        # the path: where it was mapped, or the one whose clone allocation failed (SCSI marks its queue active)
        return self._leave((_MAP[r], self.index[io.pgpath] if io.pgpath is not None else self.tried,
                            io.start_time_ns))

    def _alloc_clone(self, free, pgpath):
        self.tried = self.index[pgpath]
        return free[self.tried]

    def end_io(self, state, cid, nr_bytes, path, start_ns, dm_start_jiffies, mapped, error):
        """error: the block status, by its index in errors (the core's ERR_*)."""
        self._enter(state)
        io = self._io(cid, nr_bytes, dm_start_jiffies, mapped, start_ns, path)
        r = self.mp.end_io(io, self.errors[error])
        if r == END_INCOMPLETE:
            self.queued[cid] = io
        return self._leave((_END[r], self.error_code(io.error)))

    def kick(self, state):
        self._enter(state)
        self.kicked()
        ids = [io.cid for io in self.mp.take_queued()]  # type: ignore[attr-defined]
        for cid in ids:
            self.queued.pop(cid, None)
        return self._leave(ids)

    def message(self, state, index, run):
        self._enter(state)
        self.send_message(index, run)
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


class _ScsiBridge:
    """sim/scsi.py's rare decisions for the core's SCSI paths, made by the run's own ScsiDevice objects:
    an error class set by an 'error' fault, and each command's end while one is set or a retry is
    counted (ScsiDevice.command_result; the core keeps the device's counters and passes them across)."""

    def __init__(self, sim, target, faults):
        self.sim, self.target = sim, target
        self.devs = [d.scsi for d in sim.devices]
        self.faults = faults            # (device, Fault) by the core's fault index

    @staticmethod
    def _python(sd) -> int:
        return int(bool((sd.error is not None and sd.every_nth) or sd.retries))

    def error_fault(self, index):
        dev, f = self.faults[index]
        self.sim.scsi_fault(dev, f)
        return self._python(dev.scsi)

    def command_result(self, path, key, cmd):
        """key: the I/O's number in the run (the core's I/O ids are reused)."""
        sd = self.devs[path]
        c = ScsiCmd._make(cmd)
        sd.nr_cmds, sd.iodone_cnt, sd.device_blocked = c.nr_cmds, c.iodone_cnt, c.device_blocked
        r = sd.command_result(key)
        code = 0 if r is None else b.SCSI_RESULT_RETRY if r == "retry" else self.target.error_code(r)
        return ScsiCmd(result=code, nr_cmds=sd.nr_cmds, iodone_cnt=sd.iodone_cnt, device_blocked=sd.device_blocked,
                       python=self._python(sd))


def _sel_state(info, ps) -> SelPathState:
    """A path's selector state as the core holds it, from the Python selector PS's path info (0 for what
    that selector does not keep)."""
    return SelPathState(qlen=getattr(info, "qlen", 0), in_flight_size=getattr(info, "in_flight_size", 0),
                        hst=getattr(info, "hst", 0), outstanding=getattr(info, "outstanding", 0),
                        stale_after=getattr(info, "stale_after", 0), last_finish=getattr(info, "last_finish", 0),
                        valid_count=getattr(ps, "valid_count", 0))


def _py_hooks(selectors, pgpaths) -> dict:
    """The core's view of Python selectors: per group its bound select_path, start_io and end_io (None for a
    group whose selector runs in C, and for hooks a selector has not), the pgpath of each device and back."""
    return {"py_select": [ps and ps.select_path for ps in selectors],
            "py_start": [ps.start_io if ps and ps.has_io_hooks else None for ps in selectors],
            "py_end": [ps.end_io if ps and ps.has_io_hooks else None for ps in selectors],
            "py_pgpaths": pgpaths, "py_index": {p: i for i, p in enumerate(pgpaths)}}


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
    return len(sim.mp.priority_groups) > 1 or bool(sim.daemons) or _events_for_one_target(sim)


def _events_for_one_target(sim) -> bool:
    """The run has events the engine gives the run's own target (Simulation.mp) only: dm messages, faults
    that fail or reinstate (reinstate_path), hardware-handler activation."""
    return bool(sim.mp.hw_handler_name) or any(
        kind == EV_MESSAGE or (kind == EV_FAULT and obj[1].action != "slow") for _, _, kind, obj in sim._heap)


def _daemon_call(sim, kind, obj) -> bool:
    """The event is a daemon's timer (sim/loop.py daemon_timer)."""
    return kind == EV_CALL and obj[0] == sim._daemon_call


def _daemon_refusal(sim) -> str:
    """A daemon runs with the core when it declares it acts on the run only through the hooks the core
    mirrors (``in_compiled_core``: daemon_timer, send_message, fail_device and restore_device, reading
    the run's counters, a table reload) and every group's selector is one of the core's own."""
    for d in sim.daemons:
        if not getattr(type(d), "in_compiled_core", False):
            return "the daemon %s needs the Python engine" % type(d).__name__
    for pg in sim.mp.priority_groups:
        if core_kind(pg.ps) in (SEL_PY, SEL_IOA):
            return "multipathd with the selector %s (a table reload rebuilds it) needs the Python engine" % pg.ps.name
    return ""


# What the compiled core runs, as an allow-list: a run whose every part is listed here runs in C;
# any other part (another stack or device type, a new fault, a fio option or a model field added to
# the Python engine later) makes the run fall back, and eligible() names it.
_CORE_DISTS = (ServiceTime, Exponential, LogNormal, Empirical)
# PathModel fields the core models (any value); another field must keep its default
_CORE_PATH_FIELDS = frozenset({"name", "devt", "service", "parallelism", "delay_ns", "ns_per_kib", "faults",
                               "fail_latency_ns", "hw_queue_depth", "nr_hw_queues", "scheduler", "nr_requests",
                               # per_kib_given: the topology said per_kib (used before the run)
                               "per_kib_given", "queue_depth", "scsi_host"})
# HostModel fields the core models (cpu_nodes and node_distance only place CPUs for the selectors)
_CORE_HOST_FIELDS = frozenset({"cpus", "submit_ns", "complete_ns", "wake_ns", "steal", "steal_period_ns",
                               "work_latency_ns", "dispatch_ns", "cpu_nodes", "node_distance", "timer_away_ns", "timer_period_ns",
                               "completion_irq", "woken_issue_ns", "woken_late_share", "woken_late_ns"})
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
        if m.scsi_host is not None and (type(m.scsi_host) is not ScsiHostModel or set(vars(m.scsi_host))
                                        - {"name", "can_queue"}):
            return "the SCSI host %s is not in the compiled core" % type(m.scsi_host).__name__
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


_CORE_SIMULATIONS = {(__package__ + ".engine", "Simulation"), (__package__ + ".hosts", "MultiHostSimulation")}


def _ioa_map(ps, pgpath_index) -> list:
    """io-affinity's CPU -> path map as device indices (-1: no path for that CPU)."""
    return [-1 if pi is None else pgpath_index[pi.path] for pi in ps.path_map]


def _pgpath_of_device(sim, mp) -> list:
    """MP's pgpath on each of the run's devices, in device order."""
    index = {d: i for i, d in enumerate(sim.devices)}
    out: list = [None] * len(sim.devices)
    for p in mp.pgpaths:
        out[index[sim.dev_of_pgpath[p]]] = p
    return out


def _kinds(mp) -> list:
    return [(core_kind(pg.ps), type(pg.ps)) for pg in mp.priority_groups]


def _hosts_refusal(sim) -> str:
    """Several hosts (sim/hosts.py) run in the core with each host's own target for its rare events (a
    group switch), but not with events the engine gives only the run's own target (sim/hosts.py refuses
    those too); every host's table is the same table, so its selectors' kinds and arguments are host 0's."""
    mp0 = sim.mp
    if _events_for_one_target(sim):
        return "failing faults, dm messages or hardware handlers with several hosts need the Python engine"
    if sim.nr_hosts > 1 and any(d.scsi is not None for d in sim.devices):
        # the core keeps one scsi_device per port; each host has its own (budget and tags)
        return "SCSI path devices with several hosts need the Python engine"
    kinds0 = _kinds(mp0)
    ioa0 = None
    for mp in sim.targets:
        if type(mp) is not Multipath or len(mp.priority_groups) != len(mp0.priority_groups) or mp.hw_handler_name:
            return "several hosts with different tables need the Python engine"
        ps = mp.priority_groups[0].ps
        if _kinds(mp) != kinds0:
            return "several hosts with different selectors need the Python engine"
        if mp.nr_valid_paths != len(mp.pgpaths) or len(mp.pgpaths) != len(sim.devices):
            return "every device must be one active path of each host's table"
        if type(ps) is IOAffinity:
            pgpaths = _pgpath_of_device(sim, mp)
            m = _ioa_map(ps, {p: i for i, p in enumerate(pgpaths)})
            if ioa0 is not None and m != ioa0:
                return "io-affinity maps that differ between hosts need the Python engine"
            ioa0 = m
    return ""


# Other stacks' targets the core runs (the NVMe head: nvme/core.py), by their class: an object with
# refusal(sim) -> '' or the reason, and run(sim) -> True once the core ran the simulation.
_BRIDGES: dict = {}


def register_target(cls, bridge) -> None:
    """Let the core run simulations whose target is a CLS, through BRIDGE (see _BRIDGES)."""
    _BRIDGES[cls] = bridge


def eligible(sim) -> str:
    """'' when the compiled core can run this simulation, else the reason (the first part of the run
    that is not on the allow-list above)."""
    if _fastcore is None:
        return "compiled core not built"
    if os.environ.get("MPATHLAB_ENGINE", "").lower() == "python":
        return "MPATHLAB_ENGINE=python"
    if getattr(sim, "daemons", None):
        why = _daemon_refusal(sim)
        if why:
            return why
    # engine.Simulation itself or sim/hosts.py's, not a subclass with its own hooks (named: engine imports
    # this module)
    if (type(sim).__module__, type(sim).__qualname__) not in _CORE_SIMULATIONS:
        return "the simulation %s is not in the compiled core" % type(sim).__name__
    if len(getattr(sim, "targets", ())) > 1:
        why = _hosts_refusal(sim)
        if why:
            return why
    mp = sim.mp
    bridge = _BRIDGES.get(type(mp))
    if bridge is not None:      # another stack's target, with its own part of the allow-list
        why = bridge.refusal(sim)
        if why:
            return why
    elif type(mp) is not Multipath:
        return "the %s stack is not in the compiled core" % getattr(mp, "stack", type(mp).__name__)
    pgs = mp.priority_groups
    pgpaths = mp.pgpaths
    # (a daemon may have failed paths it found unusable before the run: the target's state says which)
    if (mp.nr_valid_paths != len(pgpaths) and not sim.daemons) or len(pgpaths) != len(sim.devices):
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
    kinds = {e[2] for e in sim._heap if not _daemon_call(sim, e[2], e[3])}
    if kinds - {EV_FAULT, EV_MESSAGE}:
        return "simulation already started"
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
        from ..klog import wrap
        print("\n".join(wrap("mpathlab: note: this run uses the Python engine (slower): %s" % why)),
              file=stream or sys.stderr)
    return why


def try_run_fast(sim) -> bool:
    """Run ``sim`` in the compiled core if possible; True if it did."""
    if eligible(sim):
        return False
    mp = sim.mp
    bridge = _BRIDGES.get(type(mp))
    if bridge is not None:
        return bridge.run(sim)
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
        paths_cfg[i] = dict(device_config(sim, d), **{
            "rt": getattr(info, "relative_throughput", 1),
            "hst": getattr(info, "hst", 0), "outstanding": getattr(info, "outstanding", 0),
            "stale_after": getattr(info, "stale_after", 0), "last_finish": getattr(info, "last_finish", 0),
            "valid_count": getattr(pgpath.pg.ps, "valid_count", 0), "pg": mp.priority_groups.index(pgpath.pg)})
    order = (list(range(len(devices))) if py_sel or ioa
             else [index[sim.dev_of_pgpath[pi.path]] for pi in ps.valid_paths])
    hst = [pg.ps for pg in mp.priority_groups if type(pg.ps) is HistoricalServiceTime]
    bio = mp.queue_mode == "bio"
    cfg = run_config(sim)
    cfg.update({
        "selector": SEL_IOA if ioa else core_kind(ps),
        "paths": paths_cfg, "order": order, "bio": int(bio), "rq_stats": int(mp.rq_stats),
        "use_hr": int(bio and ps.uses_hr_timer() and not mp.force_jiffies_start),
        "pg_selectors": [SEL_IOA if ioa else core_kind(pg.ps) for pg in mp.priority_groups],
        "weights": list(hst[0].weights) if hst else [0] * 64,
        "threshold": hst[0].threshold_multiplier if hst else 0,
    })
    if ioa:
        pgpath_index = {info_of_dev[i][0]: i for i in range(len(devices))}
        cfg.update({"ioa_map": _ioa_map(ps, pgpath_index),
                    "ioa_node": list(ps.topology.node_of), "map_misses": ps.map_misses})
    elif any(_py_selector(pg.ps) for pg in mp.priority_groups):
        cfg.update(_py_hooks([pg.ps if _py_selector(pg.ps) else None for pg in mp.priority_groups],
                             [info_of_dev[i][0] for i in range(len(devices))]))
    # the faults and messages Simulation.__init__ scheduled now run in the core, in their order
    target = None
    if _needs_target(sim):
        pgpaths = [info_of_dev[i][0] for i in range(len(devices))]
        target = _Target(sim, pgpaths, [info_of_dev[i][1] for i in range(len(devices))])
    fault_objs = [obj for _, _, kind, obj in sorted(sim._heap, key=lambda e: e[1]) if kind == EV_FAULT]
    cfg.update(initial_events(sim, target))
    cfg.update({"target": target, "target_flags": target.flags() if target is not None else None,
                "scsi": _ScsiBridge(sim, target, fault_objs) if cfg["scsi_can_queue"] else None})
    multihost = hasattr(sim, "targets")     # sim/hosts.py, one host or more
    hosts = sim.targets[1:] if multihost else []
    host_targets = [None if target is None else _host_target(sim, h, ioa, target.errors) for h in hosts]
    if multihost:
        cfg["hosts"] = [_host_cfg(sim, h, t, ioa) for h, t in zip(hosts, host_targets)]
    alloc_clone = mp.alloc_clone
    try:
        out = _fastcore.simulate(cfg)
    finally:
        if target is not None:
            target.close()
            mp.alloc_clone = alloc_clone
    out["target"] = target
    if ioa:
        ps.map_misses = out["map_misses"]
    if target is not None:      # (a daemon's reload gives the target new paths and selectors)
        info_of_dev = dict(enumerate(zip(target.pgpaths, target.infos)))
    write_back(sim, out, info_of_dev)
    if multihost:
        _write_back_hosts(sim, out["hosts"], host_targets, ioa)
    return True


def simulate(cfg: dict) -> dict:
    """One run of the compiled core (_fastcore.simulate) from its configuration."""
    return _fastcore.simulate(cfg)


def scheduled_messages(sim) -> list:
    """The texts of the messages Simulation.__init__ scheduled (a bridge's refusal reads them)."""
    return [obj for _, _, kind, obj in sim._heap if kind == EV_MESSAGE]


def _scsi_hosts(sim) -> list:
    return sim.blk.scsi.hosts if sim.blk is not None and sim.blk.scsi is not None else []


def device_config(sim, d) -> dict:
    """The core's configuration of path device D: its model and state (PathDevice), its tags, its SCSI host."""
    kind, mean, mu, sigma, samples = _dist(d.model.service)
    return {
        "parallelism": d.model.parallelism, "delay_ns": d.model.delay_ns, "ns_per_kib": d.model.ns_per_kib,
        "slow_factor": float(d.slow_factor), "fail_latency_ns": d.model.fail_latency_ns, "offline": int(d.offline),
        "dist": kind, "mean": float(mean), "mu": float(mu), "sigma": float(sigma), "samples": samples,
        "seed": d.seed,
        "nr_hw_queues": d.model.nr_hw_queues if sim.blk is not None else 1,
        "hctx_tags": d.model.hctx_tags if sim.blk is not None else 0,
        "hctx_sched_tags": d.model.hctx_sched_tags if sim.blk is not None else 0,
        "hctx_wake_batch": tag_wake_batch(d.model),
        "scsi_host": _scsi_hosts(sim).index(d.scsi.host) if d.scsi is not None else -1,
        "queue_depth": d.model.queue_depth,
    }


def run_config(sim) -> dict:
    """The core's configuration of what every run has, whatever its target: the jobs, the run plan,
    the timebase, the block layer, the host's CPUs and the SCSI hosts (the target's part follows from
    the caller)."""
    jobs_cfg = [{"bs": j.spec.bs, "iodepth": j.spec.iodepth,
                 "remaining": -1 if j.remaining is None else j.remaining,
                 "stop_ns": -1 if j.stop_ns is None else j.stop_ns, "startdelay_ns": j.spec.startdelay_ns,
                 "read_fraction": float(j.spec.read_fraction), "seed": j.seed,
                 "cpu": j.cpu, "continue_on_error": int(j.spec.continue_on_error), "host": j.host,
                 "gen": fast_gen.config(j)} for j in sim.jobs]
    expected, horizon, hard_stop, tl_step, tl_count = sim.run_plan()
    host = sim.host.model if sim.host is not None else None
    return {
        "jobs": jobs_cfg, "base_ns": sim._base,
        "hz": sim.timebase.hz, "initial_jiffies": initial_jiffies(sim.timebase.hz),
        "has_select_offset": int(sim.sched_clock_offset_ns is not None),
        "select_offset": sim.sched_clock_offset_ns or 0,
        "timeline_step": tl_step, "timeline_count": tl_count,
        "expected": expected, "horizon": horizon,
        "hard_stop": -1 if hard_stop is None else hard_stop,
        "progress": sim.progress,
        "window_ns": sim.window_ns, "py_sim": sim,
        "state_changes": sim._state_changes,
        "blk": int(sim.blk is not None),
        "host": int(host is not None),
        "ncpus": host.cpus if host is not None else 1,
        "submit_cost": host.submit_ns if host is not None else 0,
        "complete_cost": host.complete_ns if host is not None else 0,
        "wake_cost": host.wake_ns if host is not None else 0,
        "steal_ns": host.steal_ns if host is not None else 0,
        "steal_period": host.steal_period_ns if host is not None else 1,
        "work_latency": host.work_latency_ns if host is not None else 0,
        "dispatch_cost": host.dispatch_ns if host is not None else 0,
        "completion_irq": int(host.completion_irq) if host is not None else 0,
        "woken_issue": host.woken_issue_ns if host is not None else 0,
        "woken_late": host.woken_late_ns if host is not None else 0,
        "woken_late_below": host.woken_late_below if host is not None else 0,
        "timer_away": host.timer_away_ns if host is not None else 0,
        "timer_period": host.timer_period_ns if host is not None else 1,
        "timer_seed": sim.seed & 0xFFFF_FFFF_FFFF_FFFF,    # HostModel.timer_fires uses the seed's low 64 bits
        "record_done": int(sim.result.done_at is not None),
        "scsi_can_queue": [h.model.can_queue for h in _scsi_hosts(sim)],
    }


def initial_events(sim, target: Optional[CoreTarget]) -> dict:
    """The faults, messages and daemon timers Simulation.__init__ and add_daemon scheduled, as the core runs
    them in their order (the "faults" and "initial" of its configuration); they leave the Simulation's heap."""
    index = {d: i for i, d in enumerate(sim.devices)}
    faults, initial = [], []
    for t, _, kind, obj in sorted(sim._heap, key=lambda e: e[1]):
        if kind == EV_FAULT:
            d, f = obj
            msg = target.message_index("reinstate_path %s" % d.model.devname) if target is not None else 0
            state = SCSI_STATES.index(FAULT_STATES[f.action]) if f.action in FAULT_STATES else -1
            faults.append(CoreFault(path=index[d], action=b.FAULT_ACTIONS[f.action], factor=float(f.factor),
                                    reinstate_after_ns=f.reinstate_after_ns, message=msg, state=state))
            initial.append(CoreEvent(t=t, kind=EV_FAULT, obj=len(faults) - 1))
        elif kind == EV_MESSAGE:
            initial.append(CoreEvent(t=t, kind=EV_MESSAGE,
                                     obj=target.message_index(obj)))  # type: ignore[union-attr]
        else:           # another event the target's bridge runs (a daemon's timer)
            kind, obj = target.core_event(kind, obj)  # type: ignore[union-attr]
            initial.append(CoreEvent(t=t, kind=kind, obj=obj))
    sim._heap.clear()
    sim._state_changes = 0
    # with the device states the faults set, as scsi_queue_rq answers in each
    return dict(_scsi_states(target), faults=faults, initial=initial)


# The device states a run can reach, as the core numbers them (running first)
SCSI_STATES = [SDEV_RUNNING] + sorted(set(FAULT_STATES.values()) - {SDEV_RUNNING})


@functools.lru_cache(maxsize=None)
def _state_checks() -> tuple:
    """What scsi_queue_rq does in each state, asked of ScsiDevice.state_check itself: (the status it
    gives, None: the LLD takes the command; the refusals it counts) per state of SCSI_STATES."""
    out = []
    for state in SCSI_STATES:
        probe = ScsiDevice(ScsiHost(ScsiHostModel("probe")), 0)
        probe.state = state
        out.append((probe.state_check(), probe.rejected))
    return tuple(out)


def _scsi_states(target) -> dict:
    """The state table of the core: each state's status as the target's error index (0: none), the
    refusals it counts, and which state has the queue dying (ScsiQueues.alloc_clone)."""
    checks = _state_checks()
    return {"scsi_state_status": [0 if st is None or target is None else target.error_code(st) for st, _ in checks],
            "scsi_state_counts": [n for _, n in checks],
            "scsi_dying_state": SCSI_STATES.index(SDEV_DEL) if SDEV_DEL in SCSI_STATES else -1}


def _set_scsi(sd, st: dict) -> None:
    """The core's state of a SCSI path into its ScsiDevice (the error class, ioerr_cnt and the retry
    counts were kept there)."""
    sd.state = SCSI_STATES[st["state"]]
    sd.run_pending = bool(st["run_pending"])
    for f in ("device_busy", "tags_held", "restarts", "device_blocked", "nr_cmds", "iodone_cnt", "rejected"):
        setattr(sd, f, st[f])


def _host_infos(sim, mp, ioa):
    """A host's (pgpath, selector path info or None) on each device, as try_run_fast's info_of_dev."""
    return [(p, None if ioa or _py_selector(p.pg.ps) else p.pg.ps.path_info(p)) for p in _pgpath_of_device(sim, mp)]


def _host_target(sim, mp, ioa, errors) -> "_Target":
    """Another host's _Target (its own Multipath MP), with the run's one list of job errors."""
    infos = _host_infos(sim, mp, ioa)
    return _Target(sim, [p for p, _ in infos], [i for _, i in infos], mp=mp, errors=errors)


def _host_cfg(sim, mp, target, ioa) -> dict:
    """Another host's target for the core (_fastcore.c mh_load): its selectors' state on each device, its
    first group's valid order, for Python selectors their hooks, and the _Target that calls it for its rare
    events (None: map is its selector's, as with one group)."""
    ps = mp.priority_groups[0].ps
    infos = _host_infos(sim, mp, ioa)
    index = {info: i for i, (_, info) in enumerate(infos)}
    cfg = {"sel": [_sel_state(i, p.pg.ps) for p, i in infos],
           "order": list(range(len(infos))) if _py_selector(ps) or ioa else [index[pi] for pi in ps.valid_paths],
           "target": target, "target_flags": target.flags() if target is not None else None}
    if not ioa and any(_py_selector(pg.ps) for pg in mp.priority_groups):
        cfg.update(_py_hooks([pg.ps if _py_selector(pg.ps) else None for pg in mp.priority_groups],
                             [p for p, _ in infos]))
    return cfg


def _write_back_hosts(sim, hosts, targets, ioa) -> None:
    """Each host's final target state (host 0's is the run's own, _write_back) and the per-host dispatch
    counts (MultiHostSimulation.host_port)."""
    sim.host_port = [list(h["host_port"]) for h in hosts]
    for mp, h, target in zip(sim.targets[1:], hosts[1:], targets):
        infos = _host_infos(sim, mp, ioa)
        for (_, info), st in zip(infos, h["sel"]):
            if info is not None:
                _set_info(info, SelPathState._make(st))
        # the C selector's valid list: of the group it last selected in (with a target, the target's state
        # is already the run's)
        ps = target.c_pg.ps if target is not None else mp.priority_groups[0].ps
        if not (_py_selector(ps) or ioa):
            ps.valid_paths[:] = [infos[i][1] for i in h["order"]]
        if ioa:
            ps.map_misses = h["map_misses"]
        if h["first_choice"] >= 0 and target is None:
            _choose(mp, infos[h["first_choice"]][0])


def _choose(mp, pgpath) -> None:
    """The target's state after its first map chose PGPATH in its only group (what the core's run did)."""
    mp.current_pgpath = pgpath
    mp.current_pg = pgpath.pg
    mp.next_pg = None
    mp.queue_io = False
    mp.pg_init_required = False
    mp.pg_init_count = 0


def _set_lat(stats, out) -> None:
    """A LatState from the core into a sim.stats LatencyStats."""
    r = LatState(*out)
    stats.n, stats.min, stats.max, stats.mean, stats._m2, stats.hist = r.n, r.min, r.max, r.mean, r.m2, r.hist


def write_back(sim, out, info_of_dev) -> None:
    """The core's final state (OUT) into the Simulation's objects, so its result is collected as the
    Python engine's is (info_of_dev: device index -> (pgpath, the C selector's path info or None))."""
    mp = sim.mp
    pg = mp.priority_groups[0]
    ps = pg.ps
    names = [d.model.name for d in sim.devices]
    for i, (d, p) in enumerate(zip(sim.devices, out["paths"])):
        d.dispatched, d.completed = p["dispatched"], p["completed"]
        d.in_flight, d.peak_in_flight = p["in_flight"], p["peak_in_flight"]
        _set_lat(d.lat, p["lat"])
        d.slow_factor, d.errors, d.offline = p["slow_factor"], p["errors"], bool(p["offline"])
        if d.scsi is not None:
            _set_scsi(d.scsi, p["scsi"])
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
        _choose(mp, info_of_dev[out["first_choice"]][0])
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
        j.rate_windows.windows = {k: list(w) for k, w in enumerate(o["windows"]) if any(w)}
        j.depth_map = list(o["depth_map"])
        j.lat_ranges = list(o["lat_ranges"])
        _set_lat(j.read_lat, o["read_lat"])
        _set_lat(j.write_lat, o["write_lat"])
    res = sim.result
    res.submitted, res.completed, res.events = out["submitted"], out["completed"], out["events"]
    res.pending, res.stalled = out["pending"] + len(mp.queued_bios), bool(out["stalled"])
    res.pending_reap = out["pending_reap"]
    res.errored = out["errored"]
    res.requeued_errors = out["requeued_errors"]
    if res.done_at is not None:
        res.done_at[:] = out["done_at"]
    if sim.blk is not None and sim.blk.scsi is not None:
        active = {d.scsi for d, p in zip(sim.devices, out["paths"]) if d.scsi is not None and p["scsi"]["active"]}
        for h, used in zip(sim.blk.scsi.hosts, out["scsi_tags_used"]):
            h.tags_used = used
            h.active = {sd for sd in active if sd.host is h}
    res.timeline = [(t, dict(zip(names, counts))) for t, counts in out["timeline"]]
    if sim.blk is not None:
        sim.blk.resource_stalls = out["resource_stalls"]
    if sim.host is not None:
        for c, busy in zip(sim.host.cpus, out["cpu_busy_ns"]):
            c.busy_ns = busy
    res.engine = "compiled"
