"""The discrete-event simulation: fio jobs -> multipath target -> path devices.

Time is an integer number of ns since the start of the run; the kernel's
ktime is that plus the simulated uptime at the start (``uptime_ns``), and
jiffies are derived from ktime as the kernel does (see :mod:`mpathlab.timing`).

Each fio job clone keeps ``iodepth`` I/Os in flight (closed loop) until its
I/O count or runtime is used up; jobs with mixed sizes, trims, open-loop
arrivals, verify, flow or latency_target ask :mod:`.arrival` for each I/O.  An I/O is mapped through the real
:class:`~mpathlab.target.Multipath` (and so the real selector), travels the
path's fixed delay, waits for a free server of the path's device, is
served, and completes through the target's end_io, which may fail the path
and requeue the I/O exactly as dm-mpath would.

Path tags and the dm queue's blk-mq rules (:mod:`.blockqueue`) and the
host's CPUs (:mod:`.host`) plug into the loop through ``call_at``; with
unlimited tags and free CPUs they are not created at all.

Accounting invariant, checked at the end of every run:
submitted = completed + errored + pending (still queued in the target when
no progress was possible any more).
"""
from __future__ import annotations

import heapq
import itertools
import random
from typing import Callable, Dict, List, Optional, Sequence, Tuple, cast

from ..selectors import CpuTopology
from ..target import (END_DELAY_REQUEUE, END_DONE, END_REQUEUE, MAP_DELAY_REQUEUE, MAP_KILL, MAP_REMAPPED,
                      MAP_REQUEUE, MessageError, MpathIO, Multipath, construct, mapping_resolver,
                      split_table_line)
from ..target.multipath import DH_OK, REQUEUE_DELAY_MS
from ..timing import TimeBase
from ..workload.fio import JobSpec
from ..workload.fio_logs import JobLog, wants_log
from .arrival import FlowGroup, IoGen, mean_size, needs_gen, with_default_size_cost
from .blockqueue import BlockLayer
from .devices import PathDevice, PathModel, best_distribution
from .host import Host, HostModel
from .stats import LatencyStats, RateWindows, depth_index, lat_range_index, mean_abs_deviation

(EV_DONE, EV_ARRIVE, EV_SUBMIT, EV_RETRY, EV_KICK, EV_FAULT, EV_MESSAGE, EV_ERRDONE, EV_ACTIVATED,
 EV_NOPATH_TIMEOUT) = range(10)
EV_CALL = 10        # obj = (fn, arg): a part plugged into the loop (blockqueue, host, a daemon's timer) asked to be called

DEFAULT_UPTIME_NS = 3600 * 10 ** 9
REQUEUE_DELAY_NS = REQUEUE_DELAY_MS * 1_000_000
# A job with continue_on_error resubmits after an immediately failed I/O no
# sooner than this: the syscall round trip of a failed I/O.  It also keeps
# simulated time moving when every I/O fails at once.
RESUBMIT_AFTER_ERROR_NS = 10_000


class SimIO(MpathIO):
    __slots__ = ("job", "submit_ns", "is_read", "dev", "ddir")

    def __init__(self, nr_bytes, job, submit_ns, is_read, ddir=None):
        MpathIO.__init__(self, nr_bytes)
        self.job = job
        self.submit_ns = submit_ns
        self.is_read = is_read
        self.dev = None
        self.ddir = (0 if is_read else 1) if ddir is None else ddir   # 0 read, 1 write, 2 trim


class JobState:
    """One fio job clone at run time."""

    def __init__(self, spec: JobSpec, clone: int, cpu: int, seed: int, device_bytes: Optional[int] = None):
        self.spec = spec
        self.clone = clone
        self.cpu = cpu
        self.seed = seed              # the compiled core seeds its own stream from it
        self.rng = random.Random(seed)
        # mixed sizes, trims and open-loop arrivals: sim/arrival.py decides each I/O
        self.gen = IoGen(spec, seed, spec.io_bytes(device_bytes)) if needs_gen(spec) else None
        # None: bounded by runtime only (fio's time_based loops over the size)
        if self.gen is not None:
            self.remaining = None             # the generator counts bytes and I/Os
        elif spec.time_based:
            # loops over the size until the runtime ends (a spec built in code may still bound it with
            # number_ios; fio 3.33 ignores number_ios under time_based and so does the job-file reader)
            self.remaining = spec.number_ios or None
        else:
            self.remaining = spec.ios_for(device_bytes)
        self.wake_ns = -1             # a pending EV_SUBMIT for an open-loop job
        self.trim_lat = LatencyStats()
        self.bytes_trimmed = 0
        self.log: Optional[JobLog] = None   # fio-format logs (workload/fio_logs.py)
        self.stop_ns = (spec.startdelay_ns + spec.runtime_ns) if spec.runtime_ns else None
        self.inflight = 0
        self.submitted = 0
        self.completed = 0
        self.errored = 0
        self.bytes_read = 0
        self.bytes_written = 0
        self.read_lat = LatencyStats()
        self.write_lat = LatencyStats()
        self.rate_windows = RateWindows()   # fio's bw/iops samples
        self.depth_map = [0] * 7            # fio's io_u_map (iodepth_level)
        self.lat_ranges = [0] * 32          # fio's io_u_lat_n/u/m (latency_ns/us/ms)
        self.start_ns = spec.startdelay_ns
        self.end_ns = spec.startdelay_ns
        self.finished = False
        self.started = False
        self.groupid = 0          # fio's reporting group (stonewall, new_group)
        self.host = 0             # which host runs it (mpathlab.multihost)
        self.stopped = False      # fio ended the job at an I/O error
        self.first_error: Optional[str] = None
        self.last_error_ns = -1
        self.blocked = False      # the submitting task sleeps in tag allocation or works on its CPU
        self.burner = spec.burns_cpu    # ioengine=cpuio: its "I/Os" burn its CPU and never reach the target
        self.usr_ns = 0           # a burner's CPU time (fio's usr_cpu)
        self.spin_mark = 0.0

    def reset_stats(self, now: int) -> None:
        """fio's reset_all_stats (latency_target's final window): the report
        covers what completes from now on."""
        self.read_lat, self.write_lat, self.trim_lat = LatencyStats(), LatencyStats(), LatencyStats()
        self.bytes_read = self.bytes_written = self.bytes_trimmed = 0
        self.rate_windows = RateWindows()
        self.depth_map = [0] * 7
        self.lat_ranges = [0] * 32
        self.start_ns = now

    @property
    def name(self) -> str:
        return self.spec.name


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


class Simulation:
    """One run: a multipath table, its path devices, and fio jobs."""

    def __init__(self, table_line: str, paths: Sequence[PathModel], jobs: Sequence[JobSpec], *,
                 hz: int = 250, uptime_ns: int = DEFAULT_UPTIME_NS, rq_stats: bool = True,
                 force_jiffies_start: Optional[bool] = None, sched_clock_offset_ns: Optional[int] = None,
                 seed: int = 1,
                 messages: Sequence[Tuple[int, str]] = (), activation_ns: int = 0,
                 progress: Optional[Callable[[float], None]] = None, drain_ns: int = 60 * 10 ** 9,
                 timeline_points: int = 200, window_ns: int = 0, engine: str = "auto",
                 queue_if_no_path_timeout_secs: int = 0, nr_cpus: Optional[int] = None,
                 kernel=None, host_facts=None, host: Optional[HostModel] = None,
                 target: Optional[Callable[[dict], object]] = None):
        # target: a factory for another stack's target object with the same
        # map/end_io/message/status surface (the NVMe head, mpathlab.nvme);
        # table_line is then not used.
        if engine not in ("auto", "python", "compiled"):
            raise ValueError("engine must be auto, python or compiled, not %r" % engine)
        self.engine = engine
        # kernel: a profile name (mpathlab.profiles); host_facts: the facts the
        # kernel checks.  Both go to the target; a profile whose HST reads
        # sched_clock gets the default lead unless an offset is given.
        from ..profiles import DEFAULT_SCHED_CLOCK_LEAD_NS, get_profile
        self.kernel = get_profile(kernel)
        if sched_clock_offset_ns is None and self.kernel.hst_select_clock == "sched_clock":
            sched_clock_offset_ns = DEFAULT_SCHED_CLOCK_LEAD_NS
        self.sched_clock_offset_ns = sched_clock_offset_ns
        self.now = 0
        self._base = uptime_ns
        self.timebase = TimeBase(self._ktime, hz=hz)
        self.paths = with_default_size_cost(paths, jobs)
        self.seed = seed
        self.progress = progress
        self.activation_ns = activation_ns
        self.drain_ns = drain_ns
        self.timeline_points = timeline_points
        # Per-window dispatch counts (what the selector decided, when).
        self.window_ns = window_ns
        self._windows: Dict[int, List[int]] = {}
        by_name = {pm.name: pm.devt for pm in self.paths}
        self._cur_cpu = 0
        specs = list(jobs)
        # CPUs for io-affinity: clones run on their job's cpus_allowed (in
        # turn), else on CPUs 0, 1, 2, ... in job order.
        # (more clones than CPUs share them, clone n on CPU n mod nr_cpus; only a named CPU must exist)
        named = max([max(j.cpus_allowed) + 1 for j in specs if j.cpus_allowed], default=0)
        nr_cpus = nr_cpus or max(8, sum(j.numjobs for j in specs), named)
        if nr_cpus < named:
            raise ValueError("nr_cpus=%d, but a job's cpus_allowed names CPU %d" % (nr_cpus, named - 1))
        self.topology = CpuTopology(nr_cpus)
        # stonewall: a job waits for every job before it to finish; the
        # jobs from one stonewall to the next form a group.
        self._groups: List[List[JobState]] = []
        self._heap: list = []
        self._seq = itertools.count()
        self._kick_pending = False
        self._state_changes = 0      # pending events that can bring a path back
        self._timer_gen = 0          # a re-armed timer supersedes the pending one
        self._timer_pending = False
        tl = split_table_line(table_line) if target is None else None
        env = {"clock": self._ktime, "cpu": lambda: self._cur_cpu, "topology": self.topology}
        # One seeded stream for randomised selectors (mpathlab.policies), kept
        # apart from the device and job streams so adding it changes no run.
        env["rng"] = random.Random("mpathlab-selectors-%d" % seed)
        if sched_clock_offset_ns is not None:
            # HST before the 2022 fix: select_path reads sched_clock(), which
            # runs ahead of ktime by the time from TSC start to timekeeping.
            env["select_clock"] = lambda: self._base + self.now + sched_clock_offset_ns
        self.selector_env = env      # what a table loaded later (a daemon's reload) gets too
        self.mp: Multipath
        if target is not None:
            # another stack's target with the Multipath surface (duck-typed)
            self.mp = cast(Multipath, target(dict(env, on_kick=self._on_kick, schedule=self._schedule_message)))
        else:
            assert tl is not None
            self.mp = construct(
                tl.params, resolve_device=mapping_resolver(by_name), selector_env=env,
                timebase=self.timebase, rq_stats=rq_stats, force_jiffies_start=force_jiffies_start,
                activate=self._activate, on_kick=self._on_kick,
                queue_if_no_path_timeout_secs=queue_if_no_path_timeout_secs, set_timer=self._set_timer,
                kernel=self.kernel, host=host_facts)
        if tl is not None:
            self.mp.table_start, self.mp.table_length = tl.start, tl.length
        # per-I/O added transport time the target may ask for (NVMe: the cross-node cost)
        self._extra_delay = getattr(self.mp, "extra_delay_ns", None)
        # the driver's queue_rq as another stack's target sees it: False fails the request at once (NVMe)
        self._driver_start = getattr(self.mp, "driver_start", None)
        devs_by_devt = {}
        master = random.Random(seed)
        self.devices: List[PathDevice] = []
        for pm in self.paths:
            d = PathDevice(pm, master.getrandbits(64))
            devs_by_devt[pm.devt] = d
            self.devices.append(d)
        self._dev_index = {d: i for i, d in enumerate(self.devices)}
        self.dev_of_pgpath = {}
        for pgpath in self.mp.pgpaths:
            dev = devs_by_devt.get(pgpath.dev.devt)
            if dev is None:
                raise ValueError("table path %s has no device model in the topology" % pgpath.dev.name)
            self.dev_of_pgpath[pgpath] = dev
        # Tags and the host's CPUs exist only when configured, so a run where
        # tags never run out and CPUs cost nothing is the same run as before.
        # cpuio burners need the CPUs (without costs, as many as the jobs' CPUs)
        burners = any(s.burns_cpu for s in specs)
        if host is not None and (host.costs or burners):
            self.host: Optional[Host] = Host(self, host)
        else:
            self.host = Host(self, HostModel(cpus=nr_cpus)) if burners else None
        self.blk = (BlockLayer(self) if any(d.model.nr_tags or d.model.nr_sched_tags for d in self.devices)
                    else None)
        # a job without size= covers the whole device: the table's length (another stack's target may say
        # its capacity; without one such a job is bounded by its runtime only)
        device_bytes = tl.length * 512 if tl is not None else getattr(self.mp, "capacity_bytes", None)
        self.jobs: List[JobState] = []
        cpu = 0
        for spec in specs:
            for clone in range(spec.numjobs):
                on = spec.cpus_allowed[clone % len(spec.cpus_allowed)] if spec.cpus_allowed else cpu % nr_cpus
                self.jobs.append(JobState(spec, clone, on, master.getrandbits(64), device_bytes))
                if wants_log(spec):
                    self.jobs[-1].log = JobLog(spec, len(self.jobs))
                if not self._groups or (spec.stonewall and clone == 0):
                    self._groups.append([])
                self._groups[-1].append(self.jobs[-1])
                cpu += 1
        self._group_index = 0
        # fio's wait_for and exitall act when a job finishes; exitall is global (any job's
        # end stops the others of its reporting group, which stonewall and new_group start)
        self._exitall = any(j.spec.exitall for j in self.jobs)
        self._waits = self._exitall or any(j.spec.wait_for or j.spec.exitall_on_error for j in self.jobs)
        gid = 0
        for i, j in enumerate(self.jobs):
            if i and j.clone == 0 and (j.spec.stonewall or j.spec.new_group):
                gid += 1
            j.groupid = gid
        flows: Dict[int, FlowGroup] = {}
        for j in self.jobs:
            if j.gen is not None and j.spec.flow:
                j.gen.join_flow(flows.setdefault(j.spec.flow_id, FlowGroup()))
        self.result = SimResult()
        self.daemons: list = []      # user-space daemons hooked in with add_daemon()
        for pm, d in zip(self.paths, self.devices):
            for f in pm.faults:
                self._push(f.at_ns, EV_FAULT, (d, f))
                self._state_changes += 1
        for at, msg in messages:
            self._schedule_message(at, msg)     # now is 0

    # -- plumbing ---------------------------------------------------------
    def _ktime(self) -> int:
        return self._base + self.now

    def _push(self, t: int, kind: int, obj) -> None:
        heapq.heappush(self._heap, (t, next(self._seq), kind, obj))

    def _target_of(self, io) -> Multipath:
        """The multipath target an I/O goes through: the one table of this host
        (mpathlab.multihost gives every host its own)."""
        return self.mp
    def call_at(self, t: int, fn, arg) -> None:
        self._push(t, EV_CALL, (fn, arg))

    def schedule(self, t: int, kind: int, obj) -> None:
        """Add an event of KIND (EV_*) for OBJ at time T."""
        self._push(t, kind, obj)

    def edit_events(self, edit: Callable[[int, object], Optional[tuple]]) -> None:
        """Rewrite the pending events: EDIT(kind, obj) returns None to keep an event, () to drop it, or
        (kind, obj) to replace it at the same time and in the same order."""
        keep = []
        for ev in self._heap:
            t, seq, kind, obj = ev
            new = edit(kind, obj)
            if new is None:
                keep.append(ev)
            elif new:
                keep.append((t, seq) + tuple(new))
        self._heap[:] = keep
        heapq.heapify(self._heap)

    def path_done(self, io: SimIO, error: Optional[str]) -> None:
        """A path ends I/O IO (ERROR None, or a blk_status name): dm's end_io and what follows."""
        self._path_done(io, error)

    @property
    def pending_state_changes(self) -> int:
        """Scheduled events that can bring a path back (faults, messages, activations, timers)."""
        return self._state_changes

    def _on_kick(self, mp) -> None:
        if not self._kick_pending:
            self._kick_pending = True
            self._push(self.now, EV_KICK, None)

    def _set_timer(self, mp, delay_ns) -> None:
        """mod_timer / del_timer for the queue_if_no_path timeout."""
        if self._timer_pending:
            self._state_changes -= 1
            self._timer_pending = False
        self._timer_gen += 1
        if delay_ns is not None:
            self._push(self.now + delay_ns, EV_NOPATH_TIMEOUT, self._timer_gen)
            self._state_changes += 1
            self._timer_pending = True

    def _nopath_timeout(self, gen: int) -> None:
        """The queue_if_no_path timer fired (unless re-armed or deleted since)."""
        if gen == self._timer_gen and self._timer_pending:
            self._timer_pending = False
            self._state_changes -= 1
            self.mp.nopath_timeout()

    def _activate(self, mp, pgpath, delay_ms: int) -> None:
        self._push(self.now + delay_ms * 1_000_000 + self.activation_ns, EV_ACTIVATED, pgpath)

    # -- I/O flow -----------------------------------------------------------
    def _submit_more(self, job: JobState) -> None:
        spec = job.spec
        now = self.now
        if job.stopped or (job.stop_ns is not None and now >= job.stop_ns
                           and (job.gen is None or job.gen.over(job, now))):
            if not job.inflight and not job.stopped:
                if job.wake_ns == now:
                    job.end_ns = now    # it slept (think time, rate) until its runtime ended: fio counts the sleep
                elif job.end_ns == now and spec.thinktime_ns and spec.thinktime_blocks_type == "complete" \
                        and job.gen is not None and job.gen.batch >= spec.thinktime_blocks:
                    # its last I/O completed after the runtime ended: fio still thinks in full before it
                    # looks at the clock again (fio 3.34+ cuts a think short only while time is left)
                    job.end_ns = now + spec.thinktime_ns
            return
        while job.inflight < spec.iodepth:
            if job.blocked:
                return  # the task resumes this loop when it wakes
            if job.last_error_ns == now:
                return  # resubmitted by the EV_SUBMIT queued at the error
            if job.gen is not None:
                nxt = job.gen.next_io(job, now)
                if nxt is None:
                    if job.gen.done and job.gen.flow is not None:
                        for w in job.gen.flow.take_waiters(job):
                            self._push(now, EV_SUBMIT, w)
                    return
                if type(nxt) is int:              # open loop: not before this time
                    if job.wake_ns != nxt:
                        job.wake_ns = nxt
                        self._push(nxt, EV_SUBMIT, job)
                    return
                if job.burner and spec.exit_on_io_done and not self._io_jobs_left():
                    # fio's cpuio, about to burn again (after its think time): no I/O job runs or waits
                    job.gen.done = True
                    job.remaining = 0
                    if job.submitted:
                        job.end_ns = now
                    return
                if job.remaining is not None:
                    job.remaining -= 1
                io = SimIO(0 if job.burner else nxt[1], job, now, nxt[0] == 0, nxt[0])
                if job.gen.flow is not None:
                    for w in job.gen.flow.take_waiters(job):
                        self._push(now, EV_SUBMIT, w)
            else:
                if job.remaining is not None:
                    if job.remaining <= 0:
                        return
                    job.remaining -= 1
                rf = spec.read_fraction
                is_read = rf >= 1.0 or (rf > 0.0 and job.rng.random() < rf)
                io = SimIO(spec.bs, job, now, is_read)
            job.inflight += 1
            job.depth_map[depth_index(job.inflight)] += 1
            job.submitted += 1
            if job.burner:
                self._burn(io)
                continue
            self.result.submitted += 1
            if self.mp.queue_mode == "bio":
                io.dm_start_jiffies = self.timebase.jiffies()
            if self.host is not None and self.host.submit(job, io):
                continue
            self._dispatch(io)

    def _dispatch(self, io: SimIO) -> None:
        if self.blk is not None and self.blk.rq:
            self.blk.insert(io)     # dm's own blk-mq queue maps it when it runs
        else:
            self._map(io)

    def _map(self, io: SimIO) -> bool:
        """Map one I/O and issue it; False when a request-based clone found no tag (BLK_STS_RESOURCE)."""
        self._cur_cpu = io.job.cpu
        r = self._target_of(io).map(io)
        if r == MAP_REMAPPED:
            dev = self.dev_of_pgpath[io.pgpath]  # type: ignore[index]  # map() set pgpath
            blk = self.blk
            if blk is not None and blk.rq and not blk.issue_directly(io, dev):
                return False
            io.dev = dev
            dev.dispatched += 1
            if self.window_ns:
                w = self._windows.get(self.now // self.window_ns)
                if w is None:
                    w = self._windows[self.now // self.window_ns] = [0] * len(self.devices)
                w[self._dev_index[dev]] += 1
            dev.in_flight += 1
            if dev.in_flight > dev.peak_in_flight:
                dev.peak_in_flight = dev.in_flight
            if blk is None or blk.start(io, dev):   # bio-based: False while it waits for a tag
                self._start(io, dev)
        elif r == MAP_DELAY_REQUEUE:
            self._push(self.now + REQUEUE_DELAY_NS, EV_RETRY, io)
        elif r == MAP_REQUEUE:
            if self.blk is not None and self.blk.rq:
                return False    # no tag for the clone
            # back to dm core at once; 1 us keeps a persistent requeue (noflush
            # suspend) from spinning at one instant
            self._push(self.now + 1000, EV_RETRY, io)
        elif r == MAP_KILL:
            self._complete(io, "ioerr")
        # MAP_SUBMITTED: queued inside the target until a kick
        return True

    def _start(self, io: SimIO, dev: PathDevice) -> None:
        """The driver has the request: it travels the path's delay to the device."""
        if self._driver_start is not None and not self._driver_start(io):
            self._push(self.now, EV_ERRDONE, io)
            return
        delay = dev.model.delay_ns
        if self._extra_delay is not None:       # a per-I/O transport cost the target asks for (NVMe)
            delay += self._extra_delay(io)
        if dev.offline:
            self._push(self.now + dev.model.fail_latency_ns, EV_ERRDONE, io)
        elif delay:
            self._push(self.now + delay, EV_ARRIVE, io)
        else:
            self._arrive(io)

    def _arrive(self, io: SimIO) -> None:
        dev = io.dev
        if dev.offline:
            self._push(self.now + dev.model.fail_latency_ns, EV_ERRDONE, io)
            return
        if dev.busy < dev.model.parallelism:
            dev.busy += 1
            self._push(self.now + dev.service_ns(io.nr_bytes), EV_DONE, io)
        else:
            dev.queue.append(io)

    def _path_done(self, io: SimIO, error: Optional[str]) -> None:
        dev = io.dev
        dev.in_flight -= 1
        io.dev = None
        r = self._target_of(io).end_io(io, error)
        if self.blk is not None:
            self.blk.complete(io, dev)
        if error:
            dev.errors += 1
        if r == END_DONE:
            if io.error:
                self._complete(io, io.error)
            else:
                dev.completed += 1
                dev.lat.add(self.now - io.submit_ns)
                self._complete(io, None)
        elif r == END_REQUEUE:
            self._push(self.now, EV_RETRY, io)
        elif r == END_DELAY_REQUEUE:
            self._push(self.now + REQUEUE_DELAY_NS, EV_RETRY, io)
        # END_INCOMPLETE: the target queued it and will kick

    def _complete(self, io: SimIO, error: Optional[str]) -> None:
        job = io.job
        job.inflight -= 1
        now = self.now
        res = self.result
        if error:
            job.errored += 1
            res.errored += 1
            if job.first_error is None:
                job.first_error = error
            job.end_ns = now
            if job.last_error_ns == now:
                return          # a resubmission is already queued
            job.last_error_ns = now
            if not job.spec.continue_on_error:
                job.stopped = True
                if job.inflight == 0 and (len(self._groups) > 1 or self._waits):
                    self._check_finished(job)
            else:
                self._push(now + RESUBMIT_AFTER_ERROR_NS, EV_SUBMIT, job)
            return
        job.completed += 1
        if not job.burner:
            res.completed += 1
        lat = now - io.submit_ns
        if job.log is not None:
            job.log.add(now - job.start_ns, lat, io.ddir, io.nr_bytes)
        if io.is_read:
            job.read_lat.add(lat)
            job.bytes_read += io.nr_bytes
        elif io.ddir == 2:
            job.trim_lat.add(lat)
            job.bytes_trimmed += io.nr_bytes
        else:
            job.write_lat.add(lat)
            job.bytes_written += io.nr_bytes
        job.rate_windows.add(now - job.start_ns, io.ddir, io.nr_bytes)
        job.lat_ranges[lat_range_index(lat)] += 1
        job.end_ns = now
        if job.gen is not None:
            job.gen.completed(job, now, lat)
        self._submit_more(job)
        if job.inflight == 0 and (len(self._groups) > 1 or self._waits):
            self._check_finished(job)

    # -- cpuio burners ----------------------------------------------------------
    def _burn(self, io: SimIO) -> None:
        """fio's cpuio 'I/O': spin the job's CPU for one cycle (sim/host.py)."""
        self.host.spin(io.job, True)    # type: ignore[union-attr]  # a burner always has a host
        self.call_at(self.now + io.job.spec.cpu_cycle_us * 1000, self._burned, io)

    def _burned(self, io: SimIO) -> None:
        self.host.spin(io.job, False)   # type: ignore[union-attr]
        self._complete(io, None)

    def _io_jobs_left(self) -> bool:
        """Some job other than a burner is running or still to start (fio's
        fio_running_or_pending_io_threads)."""
        return any(self._job_active(j) for j in self.jobs if not j.burner)

    def _start_job(self, job: JobState) -> None:
        if job.spec.wait_for and not job.started and any(
                not x.finished for x in self.jobs if x.spec.name == job.spec.wait_for):
            return              # started by _check_finished
        job.started = True
        delay = job.spec.startdelay_ns
        job.start_ns = job.end_ns = self.now + delay
        if job.spec.runtime_ns:
            job.stop_ns = self.now + delay + job.spec.runtime_ns
        if delay:
            self._push(self.now + delay, EV_SUBMIT, job)
        else:
            self._submit_more(job)

    def _check_finished(self, job: JobState) -> None:
        """Start the next stonewall group once every job of this one is done."""
        if job.finished or job.inflight:
            return
        if job.gen is not None:
            if not (job.stopped or job.gen.over(job, self.now)):
                return
        elif not (job.stopped or job.remaining == 0 or (job.stop_ns is not None and self.now >= job.stop_ns)):
            return
        job.finished = True
        group = self._groups[self._group_index]
        if self._exitall or (job.spec.exitall_on_error and job.stopped and job.first_error):
            # fio's exitall: the others stop issuing; each ends once its I/O in flight completes
            what = job.spec.exit_what
            for j in (self.jobs if what == "all" else group if what == "stonewall"
                      else [x for x in self.jobs if x.groupid == job.groupid]):
                if not j.finished:
                    j.stopped = True
                    if not j.inflight:
                        self._check_finished(j)
        if self._waits:
            # fio's wait_for: a job starts once every clone of the job it names has finished
            for j in group:
                w = j.spec.wait_for
                if w and not j.started and all(x.finished for x in self.jobs if x.spec.name == w):
                    self._start_job(j)
        if job in group and all(j.finished for j in group) and self._group_index + 1 < len(self._groups):
            self._group_index += 1
            for j in self._groups[self._group_index]:
                self._start_job(j)

    # -- faults -------------------------------------------------------------
    def _fault(self, dev: PathDevice, fault) -> None:
        self._state_changes -= 1
        if fault.action == "fail":
            self.fail_device(dev)
        elif fault.action == "reinstate":
            dev.offline = False
            # multipathd's path checker notices and reinstates the path
            self._schedule_message(fault.reinstate_after_ns, "reinstate_path %s" % dev.model.devname)
        elif fault.action == "slow":
            dev.slow_factor = fault.factor

    def _schedule_message(self, delay_ns: int, text: str) -> None:
        """A dm message later: the topology's [[messages]], multipathd's reinstate after a fault, a target's own
        timer (NVMe ctrl_loss_tmo).  It can bring a path back, so it counts as a pending state change."""
        self._push(self.now + delay_ns, EV_MESSAGE, text)
        self._state_changes += 1

    def _message(self, text: str) -> None:
        self._state_changes -= 1
        self.send_message(text)

    # -- daemon hook: a user-space daemon (mpathlab.mtools.daemon's multipathd) --------
    # It runs on timers in simulated time, sends dm messages and takes path devices
    # down and up; it never touches the I/O flow itself.
    def add_daemon(self, daemon) -> None:
        """Hook in a daemon: ``daemon.attach(sim)`` is called now and may schedule
        timers with daemon_timer().  Simulations with a daemon run on the Python engine."""
        self.daemons.append(daemon)
        daemon.attach(self)

    def daemon_timer(self, at_ns: int, fn: Callable[[], None], keeps_alive: bool = False) -> None:
        """Run fn() at simulated time at_ns.  keeps_alive: the call may bring a path
        back or change queueing, so a run with no usable path must not be cut short
        as stalled while it is pending."""
        if keeps_alive:
            self._state_changes += 1
        self.call_at(max(at_ns, self.now), self._daemon_call, (fn, keeps_alive))

    def _daemon_call(self, call) -> None:
        fn, keeps_alive = call
        if keeps_alive:
            self._state_changes -= 1
        fn()

    def send_message(self, text: str) -> bool:
        """A dm message (``dmsetup message``) now; recorded in the result."""
        try:
            self.mp.message(*text.split())
            self.result.messages.append((self.now, text, "ok"))
            return True
        except MessageError as e:
            self.result.messages.append((self.now, text, "error: %s" % (e.warning or e)))
            return False

    def fail_device(self, dev: PathDevice) -> None:
        """The device stops answering: waiting I/O fails at once, I/O being served
        fails when it ends, new I/O fails after its fail latency."""
        dev.offline = True
        while dev.queue:
            self._push(self.now + dev.model.fail_latency_ns, EV_ERRDONE, dev.queue.popleft())

    def restore_device(self, dev: PathDevice) -> None:
        """The device answers again (nothing is reinstated in the target)."""
        dev.offline = False

    def workload_done(self) -> bool:
        """True when no job will submit or complete any more I/O."""
        for j in self.jobs:
            if j.inflight:
                return False
            if j.stopped or j.remaining == 0 or (j.stop_ns is not None and self.now >= j.stop_ns):
                continue
            return False
        return True

    # -- main loop ----------------------------------------------------------
    def run(self) -> SimResult:
        if self.engine != "python":
            from . import fast
            if fast.try_run_fast(self):
                return self._finish()
            if self.engine == "compiled":
                raise ValueError("the compiled core cannot run this simulation: %s" % fast.eligible(self))
        self.result.engine = "python"
        # planned before any job starts, as fast.py plans the core's run (a job with an IoGen has no
        # I/O count up front: counted after its first submissions, it would shift the timeline's step)
        expected, horizon, hard_stop, tl_step, tl_count = self.run_plan()
        if self.host is not None:
            self.host.start()
        for job in self._groups[0] if self._groups else []:
            if job.spec.wait_for:
                continue        # started by _check_finished
            job.started = True
            if job.spec.startdelay_ns:
                self._push(job.spec.startdelay_ns, EV_SUBMIT, job)
            else:
                self._submit_more(job)
        heap = self._heap
        pop = heapq.heappop
        push = heapq.heappush
        seq = self._seq
        res = self.result
        mp = self.mp
        progress = self.progress
        next_progress = 4096
        next_tl = 0
        next_tl_count = tl_count
        events = 0
        host = self.host
        while heap:
            t, _, kind, obj = pop(heap)
            if hard_stop is not None and t > hard_stop:
                push(heap, (t, 0, kind, obj))   # counted as pending below
                res.stalled = True
                break
            self.now = t
            events += 1
            if kind == EV_DONE:
                dev = obj.dev
                if dev.queue:
                    nxt = dev.queue.popleft()
                    push(heap, (t + dev.service_ns(nxt.nr_bytes), next(seq), EV_DONE, nxt))
                else:
                    dev.busy -= 1
                if host is None:
                    self._path_done(obj, "transport" if dev.offline else None)
                else:
                    host.complete(obj, "transport" if dev.offline else None)
                if progress is not None and res.completed >= next_progress:
                    next_progress += 4096
                    progress(self._fraction(expected, horizon))
                if tl_step and t >= next_tl:
                    next_tl = t + tl_step
                    self._snapshot_in_flight()
                elif tl_count and res.completed >= next_tl_count:
                    next_tl_count += tl_count
                    self._snapshot_in_flight()
            elif kind == EV_ARRIVE:
                self._arrive(obj)
            elif kind == EV_CALL:
                obj[0](obj[1])
            elif kind == EV_RETRY:
                if not mp.nr_valid_paths and not self._state_changes and not self._kick_pending:
                    # No path and nothing left that could bring one back: the
                    # kernel would queue (or retry) forever.  Stop here.
                    if mp.queue_if_no_path_flag:
                        push(heap, (t, 0, kind, obj))   # counted as pending below
                        res.stalled = True
                        break
                self._dispatch(obj)
            elif kind == EV_ERRDONE:
                self._path_done(obj, "transport")
            elif kind == EV_KICK:
                self._kick_pending = False
                for io in mp.take_queued():
                    self._dispatch(io)  # type: ignore[arg-type]  # the target queues the SimIOs it was given
            elif kind == EV_SUBMIT:
                self._submit_more(obj)
                if obj.inflight == 0 and (len(self._groups) > 1 or self._waits):
                    self._check_finished(obj)
            elif kind == EV_FAULT:
                self._fault(*obj)
            elif kind == EV_MESSAGE:
                self._message(obj)
            elif kind == EV_ACTIVATED:
                mp.pg_init_done(obj, DH_OK)
            elif kind == EV_NOPATH_TIMEOUT:
                self._nopath_timeout(obj)
        res.events = events
        res.pending += len(mp.queued_bios)
        if res.stalled:
            res.pending += self._drain_pending(heap)
        return self._finish()

    def _active(self) -> bool:
        """Some job still has I/O in flight or may submit more."""
        return any(self._job_active(j) for j in self.jobs)

    def _job_active(self, j: JobState) -> bool:
        return bool(j.inflight or (not j.stopped and (j.remaining is None or j.remaining > 0)
                                   and (j.stop_ns is None or self.now < j.stop_ns)))

    def run_plan(self):
        """(expected I/Os, horizon, hard stop, timeline step in ns, timeline step in
        I/Os): one definition for the Python engine and the compiled core."""
        expected = sum(_expected_ios(j) for j in self.jobs)
        horizon = max(((j.stop_ns or 0) for j in self.jobs), default=0)
        # later stonewall groups start at run time, so only a single group
        # has a known horizon to stop at
        hard_stop = (horizon + self.drain_ns) if horizon and len(self._groups) == 1 else None
        # in-flight timeline: by time when the run has a horizon, else by count
        tl_step = max(1, horizon // self.timeline_points) if horizon else 0
        tl_count = 0 if horizon else max(1, expected // self.timeline_points)
        return expected, horizon, hard_stop, tl_step, tl_count

    def _snapshot_in_flight(self) -> None:
        self.result.timeline.append((self.now, {d.model.name: d.in_flight for d in self.devices}))

    def _drain_pending(self, heap) -> int:
        """Count the I/O still under way when the run is cut short, and drop it."""
        n = 0
        for _, _, kind, obj in heap:
            if kind in (EV_DONE, EV_ARRIVE, EV_RETRY, EV_ERRDONE):
                n += 1
        heap.clear()
        if self.blk is not None:
            n += self.blk.drain()
        if self.host is not None:
            n += self.host.drain()
        for d in self.devices:
            n += len(d.queue)
            d.queue.clear()
            d.in_flight = 0
        return n

    def _fraction(self, expected: int, horizon: int) -> float:
        if expected:
            return min(1.0, self.result.completed / expected)
        if horizon:
            return min(1.0, self.now / horizon)
        return 0.0

    def _finish(self) -> SimResult:
        res = self.result
        mp = self.mp
        res.selector = ",".join(sorted({pg.ps.name for pg in mp.priority_groups}))
        res.runtime_ns = max([j.end_ns for j in self.jobs] + [0]) - min([j.start_ns for j in self.jobs] + [0])
        res.jobs = self.jobs
        total = sum(d.completed for d in self.devices)
        io_jobs = res.io_jobs
        bs = (io_jobs[0].spec.bs if not io_jobs[0].spec.mixed_sizes else int(mean_size(io_jobs[0].spec))) \
            if io_jobs else 4096
        res.best = best_distribution(self.paths, bs)
        for d in self.devices:
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
        res.path_latency = {d.model.name: d.lat for d in self.devices}
        names = [d.model.name for d in self.devices]
        res.windows = [(k * self.window_ns, dict(zip(names, v))) for k, v in sorted(self._windows.items())]
        res.window_ns = self.window_ns
        res.status_info = mp.status("info")
        res.status_table = mp.status("table")
        return res


def _expected_ios(j: JobState) -> int:
    """A job's I/O count for Simulation.run_plan.  A job with an IoGen counts its own I/Os and bytes:
    estimated from those (number_ios; its bytes at its mean I/O size, twice for trimwrite), or with
    no runtime the in-flight timeline would take a point at every completion."""
    g = j.gen
    if g is None:
        return (j.remaining or 0) + j.submitted
    n = g.ios_left
    if g.bytes_left is not None:
        by_bytes = int(g.bytes_left // max(1.0, mean_size(g.spec))) * (2 if g.spec.ddir_mode == "trimwrite" else 1)
        n = by_bytes if n is None else min(n, by_bytes)
    return (n or 0) + j.submitted


def simulate(table_line: str, paths: Sequence[PathModel], jobs: Sequence[JobSpec], **kw) -> SimResult:
    return Simulation(table_line, paths, jobs, **kw).run()
