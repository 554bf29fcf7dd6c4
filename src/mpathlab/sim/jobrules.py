"""fio's job rules in a run: submission (iodepth, rate, think time), completion and errors
(continue_on_error), stonewall groups, wait_for and exitall, as fio's backend applies them."""
from __future__ import annotations

import random
from typing import Dict, List, Optional

from ..workload.fio import JobSpec
from ..workload.fio_logs import JobLog, wants_log
from .arrival import FlowGroup, mean_size
from .boundary import RESUBMIT_AFTER_ERROR_NS
from .iopath import IoPath, SimIO
from .jobstate import JobState
from .loop import EV_SUBMIT
from .stats import depth_index, lat_range_index


class JobRules(IoPath):
    """The jobs' side of the loop: when a job submits, what a completion does to it, when it ends."""

    _groups: List[List[JobState]]     # stonewall groups, set up by Simulation.__init__

    def _init_jobs(self, specs: List[JobSpec], nr_cpus: int, master: random.Random,
                   device_bytes: Optional[int]) -> None:
        """The jobs' clones (seeded from MASTER), their CPUs, stonewall groups, reporting groups, flows."""
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
        if res.done_at is not None:
            res.done_at.append(now)
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

    def workload_done(self) -> bool:
        """True when no job will submit or complete any more I/O."""
        for j in self.jobs:
            if j.inflight:
                return False
            if j.stopped or j.remaining == 0 or (j.stop_ns is not None and self.now >= j.stop_ns):
                continue
            return False
        return True

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

    def _fraction(self, expected: int, horizon: int) -> float:
        if expected:
            return min(1.0, self.result.completed / expected)
        if horizon:
            return min(1.0, self.now / horizon)
        return 0.0


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
