"""The discrete-event simulation of one run: fio jobs -> multipath target -> path devices.

Simulation composes its parts: the event loop (:mod:`.loop`), the dm I/O path (:mod:`.iopath`),
fio's job rules (:mod:`.jobrules`) and the result (:mod:`.result`); tags (:mod:`.blockqueue`) and the
host's CPUs (:mod:`.host`) plug in through ``call_at`` and exist only when configured. Time is integer
ns since the start; ktime adds the uptime (``uptime_ns``) and jiffies follow from it
(:mod:`mpathlab.timing`). Every run checks submitted = completed + errored + pending.
"""
from __future__ import annotations

import heapq
import itertools
import random
from typing import Callable, Dict, List, Optional, Sequence, Tuple, cast

from ..selectors import CpuTopology
from ..target import Multipath, construct, mapping_resolver, split_table_line
from ..target.multipath import DH_OK
from ..timing import TimeBase
from ..workload.fio import JobSpec
from .arrival import with_default_size_cost
from .blockqueue import BlockLayer, request_based
from .devices import PathModel
from .host import Host, HostModel
from .iopath import REQUEUE_DELAY_NS, SimIO  # noqa: F401  (the engine's names, as before the split)
from .jobrules import RESUBMIT_AFTER_ERROR_NS, JobRules, JobState  # noqa: F401
from .loop import (EV_ACTIVATED, EV_ARRIVE, EV_CALL, EV_DONE, EV_ERRDONE, EV_FAULT, EV_KICK,  # noqa: F401
                   EV_MESSAGE, EV_NOPATH_TIMEOUT, EV_REQUEUE, EV_RETRY, EV_SUBMIT)
from .result import SimResult, collect

DEFAULT_UPTIME_NS = 3600 * 10 ** 9


class Simulation(JobRules):
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
                 target: Optional[Callable[[dict], object]] = None, record_completions: bool = False):
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
        self._requeue_list: list = []   # request-based dm's requeue list, and its delayed work's generation
        self._requeue_gen = 0
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
            self.mp = cast(Multipath, target(dict(env, on_kick=self._on_kick, schedule=self._schedule_target_timer)))
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
        if getattr(self.mp, "queue_mode", None) == "rq" and any(
                p.dm_delay_ns or any(f.action in ("suspend", "resume") for f in p.faults) for p in paths):
            # drivers/md/dm-table.c refuses a request-based table over a bio-based device (not rq-stackable)
            raise ValueError("a dm-delay path is a bio-based dm device: request-based multipath cannot use it "
                             "(queue_mode bio)")
        # per-I/O added transport time the target may ask for (NVMe: the cross-node cost)
        self._extra_delay = getattr(self.mp, "extra_delay_ns", None)
        # the driver's queue_rq as another stack's target sees it: False fails the request at once (NVMe)
        self._driver_start = getattr(self.mp, "driver_start", None)
        master = random.Random(seed)     # devices draw their seeds first, then the jobs
        self._init_devices(master)
        # Tags and the host's CPUs exist only when configured, so a run where
        # tags never run out and CPUs cost nothing is the same run as before.
        # cpuio burners need the CPUs (without costs, as many as the jobs' CPUs)
        burners = any(s.burns_cpu for s in specs)
        if host is not None and (host.costs or burners):
            self.host: Optional[Host] = Host(self, host)
        else:
            self.host = Host(self, HostModel(cpus=nr_cpus)) if burners else None
        # (a dispatch cost needs the request-based dm queue even when no path runs out of tags)
        dm_queue_costs = self.host is not None and self.host.model.dispatch_ns and request_based(self.mp)
        self.blk = (BlockLayer(self) if dm_queue_costs or any(d.model.nr_tags or d.model.nr_sched_tags
                                                               or d.model.is_scsi for d in self.devices) else None)
        # a job without size= covers the whole device: the table's length (another stack's target may say
        # its capacity; without one such a job is bounded by its runtime only)
        device_bytes = tl.length * 512 if tl is not None else getattr(self.mp, "capacity_bytes", None)
        self._init_jobs(specs, nr_cpus, master, device_bytes)
        self.result = SimResult()
        if record_completions:      # the completion times a fault study measures its stalls by
            self.result.done_at = []
        self.daemons: list = []      # user-space daemons hooked in with add_daemon()
        for pm, d in zip(self.paths, self.devices):
            for f in pm.faults:
                self._push(f.at_ns, EV_FAULT, (d, f))
                self._state_changes += 1
        for at, msg in messages:
            self._schedule_message(at, msg)     # now is 0

    def _finish(self) -> SimResult:
        return collect(self)

    # -- main loop ----------------------------------------------------------
    def run(self) -> SimResult:
        if self.engine != "python":
            from . import fast
            if fast.try_run_fast(self):
                return self._finish()
            if self.engine == "compiled":
                raise ValueError("the compiled core cannot run this simulation: %s" % fast.eligible(self))
            fast.note_fallback(self)
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
                    push(heap, (self._fires(t + dev.service_ns(nxt.nr_bytes)), next(seq), EV_DONE, nxt))
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
            elif kind == EV_REQUEUE:
                if obj != self._requeue_gen:
                    continue                    # re-armed since: a later event of this kind runs the list
                if not mp.nr_valid_paths and not self._state_changes and not self._kick_pending \
                        and mp.queue_if_no_path_flag:
                    push(heap, (t, 0, kind, obj))   # as EV_RETRY: nothing can bring a path back
                    res.stalled = True
                    break
                self._run_requeue_list()
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
        if any(d.dm_held for d in self.devices):
            res.stalled = True      # a dm device suspended for good holds the I/O sent to it
        if res.stalled:
            res.pending += self._drain_pending(heap)
        return self._finish()


def simulate(table_line: str, paths: Sequence[PathModel], jobs: Sequence[JobSpec], **kw) -> SimResult:
    return Simulation(table_line, paths, jobs, **kw).run()
