"""The discrete-event simulation: fio jobs -> multipath target -> path devices.

Time is an integer number of ns since the start of the run; the kernel's
ktime is that plus the simulated uptime at the start (``uptime_ns``), and
jiffies are derived from ktime as the kernel does (see :mod:`mpathlab.timing`).

Each fio job clone keeps ``iodepth`` I/Os in flight (closed loop) until its
I/O count or runtime is used up.  An I/O is mapped through the real
:class:`~mpathlab.target.Multipath` (and so the real selector), travels the
path's fixed delay, waits for a free server of the path's device, is
served, and completes through the target's end_io, which may fail the path
and requeue the I/O exactly as dm-mpath would.

Accounting invariant, checked at the end of every run:
submitted = completed + errored + pending (still queued in the target when
no progress was possible any more).
"""
from __future__ import annotations

import heapq
import itertools
import random
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from ..selectors import CpuTopology
from ..target import (END_DELAY_REQUEUE, END_DONE, END_REQUEUE, MAP_DELAY_REQUEUE, MAP_KILL, MAP_REMAPPED,
                      MAP_REQUEUE, MessageError, MpathIO, Multipath, construct, mapping_resolver,
                      split_table_line)
from ..target.multipath import DH_OK, REQUEUE_DELAY_MS
from ..timing import TimeBase
from ..workload.fio import JobSpec
from .devices import PathDevice, PathModel, best_distribution
from .stats import LatencyStats, mean_abs_deviation

(EV_DONE, EV_ARRIVE, EV_SUBMIT, EV_RETRY, EV_KICK, EV_FAULT, EV_MESSAGE, EV_ERRDONE, EV_ACTIVATED,
 EV_NOPATH_TIMEOUT) = range(10)

DEFAULT_UPTIME_NS = 3600 * 10 ** 9
REQUEUE_DELAY_NS = REQUEUE_DELAY_MS * 1_000_000
# A job with continue_on_error resubmits after an immediately failed I/O no
# sooner than this: the syscall round trip of a failed I/O.  It also keeps
# simulated time moving when every I/O fails at once.
RESUBMIT_AFTER_ERROR_NS = 10_000


class SimIO(MpathIO):
    __slots__ = ("job", "submit_ns", "is_read", "dev")

    def __init__(self, nr_bytes, job, submit_ns, is_read):
        MpathIO.__init__(self, nr_bytes)
        self.job = job
        self.submit_ns = submit_ns
        self.is_read = is_read
        self.dev = None


class JobState:
    """One fio job clone at run time."""

    def __init__(self, spec: JobSpec, clone: int, cpu: int, seed: int):
        self.spec = spec
        self.clone = clone
        self.cpu = cpu
        self.seed = seed              # the compiled core seeds its own stream from it
        self.rng = random.Random(seed)
        # None: bounded by runtime only (fio's time_based loops over the size)
        self.remaining = None if spec.time_based else spec.total_ios
        self.stop_ns = (spec.startdelay_ns + spec.runtime_ns) if spec.runtime_ns else None
        self.inflight = 0
        self.submitted = 0
        self.completed = 0
        self.errored = 0
        self.bytes_read = 0
        self.bytes_written = 0
        self.read_lat = LatencyStats()
        self.write_lat = LatencyStats()
        self.start_ns = spec.startdelay_ns
        self.end_ns = spec.startdelay_ns
        self.finished = False
        self.stopped = False      # fio ended the job at an I/O error
        self.first_error: Optional[str] = None
        self.last_error_ns = -1

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

    def check_accounting(self) -> None:
        """Raise AssertionError if any I/O was lost or counted twice."""
        assert self.submitted == self.completed + self.errored + self.pending, (
            "accounting: submitted %d != completed %d + errored %d + pending %d"
            % (self.submitted, self.completed, self.errored, self.pending))
        per_path = sum(p["completed"] for p in self.paths)
        assert per_path == self.completed, "per-path completions %d != total %d" % (per_path, self.completed)
        assert sum(j.completed for j in self.jobs) == self.completed
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
                 kernel=None, host=None):
        if engine not in ("auto", "python", "compiled"):
            raise ValueError("engine must be auto, python or compiled, not %r" % engine)
        self.engine = engine
        # kernel: a profile name (mpathlab.profiles); host: the facts the
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
        self.paths = list(paths)
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
        wanted = max([8, sum(j.numjobs for j in specs)]
                     + [max(j.cpus_allowed) + 1 for j in specs if j.cpus_allowed])
        nr_cpus = nr_cpus or wanted
        if nr_cpus < wanted:
            raise ValueError("nr_cpus=%d is fewer than the jobs' CPUs need (%d)" % (nr_cpus, wanted))
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
        tl = split_table_line(table_line)
        env = {"clock": self._ktime, "cpu": lambda: self._cur_cpu, "topology": self.topology}
        if sched_clock_offset_ns is not None:
            # HST before the 2022 fix: select_path reads sched_clock(), which
            # runs ahead of ktime by the time from TSC start to timekeeping.
            env["select_clock"] = lambda: self._base + self.now + sched_clock_offset_ns
        self.mp: Multipath = construct(
            tl.params, resolve_device=mapping_resolver(by_name), selector_env=env,
            timebase=self.timebase, rq_stats=rq_stats, force_jiffies_start=force_jiffies_start,
            activate=self._activate, on_kick=self._on_kick,
            queue_if_no_path_timeout_secs=queue_if_no_path_timeout_secs, set_timer=self._set_timer,
            kernel=self.kernel, host=host)
        self.mp.table_start, self.mp.table_length = tl.start, tl.length
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
            d = devs_by_devt.get(pgpath.dev.devt)
            if d is None:
                raise ValueError("table path %s has no device model in the topology" % pgpath.dev.name)
            self.dev_of_pgpath[pgpath] = d
        self.jobs: List[JobState] = []
        cpu = 0
        for spec in specs:
            for clone in range(spec.numjobs):
                on = spec.cpus_allowed[clone % len(spec.cpus_allowed)] if spec.cpus_allowed else cpu % nr_cpus
                self.jobs.append(JobState(spec, clone, on, master.getrandbits(64)))
                if not self._groups or (spec.stonewall and clone == 0):
                    self._groups.append([])
                self._groups[-1].append(self.jobs[-1])
                cpu += 1
        self._group_index = 0
        self.result = SimResult()
        for pm, d in zip(self.paths, self.devices):
            for f in pm.faults:
                self._push(f.at_ns, EV_FAULT, (d, f))
                self._state_changes += 1
        for at, msg in messages:
            self._push(at, EV_MESSAGE, msg)
            self._state_changes += 1

    # -- plumbing ---------------------------------------------------------
    def _ktime(self) -> int:
        return self._base + self.now

    def _push(self, t: int, kind: int, obj) -> None:
        heapq.heappush(self._heap, (t, next(self._seq), kind, obj))

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

    def _activate(self, mp, pgpath, delay_ms: int) -> None:
        self._push(self.now + delay_ms * 1_000_000 + self.activation_ns, EV_ACTIVATED, pgpath)

    # -- I/O flow -----------------------------------------------------------
    def _submit_more(self, job: JobState) -> None:
        spec = job.spec
        now = self.now
        if job.stopped or (job.stop_ns is not None and now >= job.stop_ns):
            return
        while job.inflight < spec.iodepth:
            if job.last_error_ns == now:
                return  # resubmitted by the EV_SUBMIT queued at the error
            if job.remaining is not None:
                if job.remaining <= 0:
                    return
                job.remaining -= 1
            rf = spec.read_fraction
            is_read = rf >= 1.0 or (rf > 0.0 and job.rng.random() < rf)
            io = SimIO(spec.bs, job, now, is_read)
            job.inflight += 1
            job.submitted += 1
            self.result.submitted += 1
            if self.mp.queue_mode == "bio":
                io.dm_start_jiffies = self.timebase.jiffies()
            self._dispatch(io)

    def _dispatch(self, io: SimIO) -> None:
        self._cur_cpu = io.job.cpu
        r = self.mp.map(io)
        if r == MAP_REMAPPED:
            dev = self.dev_of_pgpath[io.pgpath]
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
            if dev.offline:
                self._push(self.now + dev.model.fail_latency_ns, EV_ERRDONE, io)
            elif dev.model.delay_ns:
                self._push(self.now + dev.model.delay_ns, EV_ARRIVE, io)
            else:
                self._arrive(io)
        elif r == MAP_DELAY_REQUEUE:
            self._push(self.now + REQUEUE_DELAY_NS, EV_RETRY, io)
        elif r == MAP_REQUEUE:
            # back to dm core at once; 1 us keeps a persistent requeue (noflush
            # suspend) from spinning at one instant
            self._push(self.now + 1000, EV_RETRY, io)
        elif r == MAP_KILL:
            self._complete(io, "ioerr")
        # MAP_SUBMITTED: queued inside the target until a kick

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
        r = self.mp.end_io(io, error)
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
                if job.inflight == 0 and len(self._groups) > 1:
                    self._check_finished(job)
            else:
                self._push(now + RESUBMIT_AFTER_ERROR_NS, EV_SUBMIT, job)
            return
        job.completed += 1
        res.completed += 1
        lat = now - io.submit_ns
        if io.is_read:
            job.read_lat.add(lat)
            job.bytes_read += io.nr_bytes
        else:
            job.write_lat.add(lat)
            job.bytes_written += io.nr_bytes
        job.end_ns = now
        self._submit_more(job)
        if job.inflight == 0 and len(self._groups) > 1:
            self._check_finished(job)

    def _start_job(self, job: JobState) -> None:
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
        if not (job.stopped or job.remaining == 0 or (job.stop_ns is not None and self.now >= job.stop_ns)):
            return
        job.finished = True
        group = self._groups[self._group_index]
        if job in group and all(j.finished for j in group) and self._group_index + 1 < len(self._groups):
            self._group_index += 1
            for j in self._groups[self._group_index]:
                self._start_job(j)

    # -- faults -------------------------------------------------------------
    def _fault(self, dev: PathDevice, fault) -> None:
        self._state_changes -= 1
        if fault.action == "fail":
            dev.offline = True
            # waiting I/O fails at once; I/O being served fails when it ends
            while dev.queue:
                self._push(self.now + dev.model.fail_latency_ns, EV_ERRDONE, dev.queue.popleft())
        elif fault.action == "reinstate":
            dev.offline = False
            # multipathd's path checker notices and reinstates the path
            self._push(self.now + fault.reinstate_after_ns, EV_MESSAGE, "reinstate_path %s" % dev.model.devname)
            self._state_changes += 1
        elif fault.action == "slow":
            dev.slow_factor = fault.factor

    def _message(self, text: str) -> None:
        self._state_changes -= 1
        try:
            self.mp.message(*text.split())
            self.result.messages.append((self.now, text, "ok"))
        except MessageError as e:
            self.result.messages.append((self.now, text, "error: %s" % (e.warning or e)))

    # -- main loop ----------------------------------------------------------
    def run(self) -> SimResult:
        if self.engine != "python":
            from . import fast
            if fast.try_run_fast(self):
                return self._finish()
            if self.engine == "compiled":
                raise ValueError("the compiled core cannot run this simulation: %s" % fast.eligible(self))
        self.result.engine = "python"
        for job in self._groups[0] if self._groups else []:
            if job.spec.startdelay_ns:
                self._push(job.spec.startdelay_ns, EV_SUBMIT, job)
            else:
                self._submit_more(job)
        expected, horizon, hard_stop, tl_step, tl_count = self.run_plan()
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
                self._path_done(obj, "transport" if dev.offline else None)
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
                    self._dispatch(io)
            elif kind == EV_SUBMIT:
                self._submit_more(obj)
            elif kind == EV_FAULT:
                self._fault(*obj)
            elif kind == EV_MESSAGE:
                self._message(obj)
            elif kind == EV_ACTIVATED:
                mp.pg_init_done(obj, DH_OK)
            elif kind == EV_NOPATH_TIMEOUT:
                if obj == self._timer_gen and self._timer_pending:
                    self._timer_pending = False
                    self._state_changes -= 1
                    mp.nopath_timeout()
        res.events = events
        res.pending += len(mp.queued_bios)
        if res.stalled:
            res.pending += self._drain_pending(heap)
        return self._finish()

    def run_plan(self):
        """(expected I/Os, horizon, hard stop, timeline step in ns, timeline step in
        I/Os): one definition for the Python engine and the compiled core."""
        expected = sum((j.remaining or 0) + j.submitted for j in self.jobs)
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
        bs = self.jobs[0].spec.bs if self.jobs else 4096
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


def simulate(table_line: str, paths: Sequence[PathModel], jobs: Sequence[JobSpec], **kw) -> SimResult:
    return Simulation(table_line, paths, jobs, **kw).run()
