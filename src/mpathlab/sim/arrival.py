"""What a job submits next, and when, for jobs beyond fio's plain closed loop.

The engine's own loop handles the common job (one block size, reads and/or
writes, ``iodepth`` kept in flight) and is mirrored by the compiled core.
A job with mixed sizes (``bssplit``, ``bsrange``, different read/write/trim
sizes), trims, or open-loop arrivals (``rate``, ``rate_iops``,
``thinktime``) gets an :class:`IoGen`, which the engine asks for each I/O:

- sizes are drawn as fio's get_next_buflen draws them: ``bsrange`` takes
  ``lo + hi * u`` aligned down to ``lo`` (unless ``bs_unaligned``) and capped
  at ``hi``; ``bssplit`` picks by percentage;
- ``rate``/``rate_iops`` (per direction) schedule submissions as fio's
  usec_for_io does: linear = issued bytes / rate; poisson = exponential gaps
  of mean 1/IOPS (IOPS = rate / smallest block size).  ``iodepth`` stays a
  cap: when it is reached, the next I/O goes out at the first completion;
- ``thinktime`` idles the job for that long after every
  ``thinktime_blocks`` I/Os: once they completed (``complete``, fio's
  default) or once they were issued (``issue``);
- a cpuio job (``ioengine=cpuio``) is a thinktime job whose "I/O" is a
  burn of its CPU (the engine's ``_burn``): it has no size, only a runtime,
  ``number_ios`` or ``exit_on_io_done`` to end it.

A generator draws from its own random stream (seeded from the job's), so the
read/write choice stream of the engine is unchanged.
"""
from __future__ import annotations

import math
import random
from collections import deque
from typing import List, Optional, Sequence, Tuple

from ..workload.fio import READ, TRIM, WRITE, JobSpec

# Service time per KiB added to a device model that names none, when a job
# mixes I/O sizes: about 1 GiB/s per path (8G FC, 10GbE iSCSI, one SATA/SAS
# SSD), so that a 1 MiB I/O costs its device ~1 ms more than a 4 KiB one.
# Without it every size would cost the same and service-time's byte
# weighting would have nothing to react to.
DEFAULT_NS_PER_KIB = 1000.0


def needs_gen(spec: JobSpec) -> bool:
    return bool(spec.mixed_sizes or spec.open_loop or TRIM in spec.ddirs or spec.verify or spec.flow
                or spec.burns_cpu or spec.latency_target_ns or 0 < spec.iodepth_low < spec.iodepth)


def with_default_size_cost(paths: Sequence, jobs: Sequence[JobSpec]) -> List:
    """Copies of the path models with DEFAULT_NS_PER_KIB where the user gave
    no per-KiB cost, when some job mixes I/O sizes; else the models as they are."""
    if not any(j.mixed_sizes for j in jobs):
        return list(paths)
    import copy
    out = []
    for pm in paths:
        if not pm.ns_per_kib and not getattr(pm, "per_kib_given", False):
            pm = copy.copy(pm)
            pm.ns_per_kib = DEFAULT_NS_PER_KIB
        out.append(pm)
    return out


def mean_size(spec: JobSpec) -> float:
    """Expected bytes per I/O (for Best and reports)."""
    tot = 0.0
    for d in spec.ddirs:
        ch = spec.sizes_of(d)
        if spec.bsrange_rwt is not None and spec.bssplit_rwt is None:
            lo, hi = spec.bsrange_rwt[d]
            m = (lo + hi) / 2.0
        else:
            w = sum(x for _, x in ch) or 1.0
            m = sum(s * x for s, x in ch) / w
        frac = 1.0 / len(spec.ddirs)
        if spec.ddir_mode == "mix":
            frac = spec.read_fraction if d == READ else 1 - spec.read_fraction
        tot += frac * m
    return tot


class FlowGroup:
    """fio's flow control (flow.c): the jobs sharing a flow_id, their weights
    and a shared I/O counter."""

    def __init__(self):
        self.total_weight = 0
        self.counter = 0
        self.waiters: List = []

    def held(self, gen) -> bool:
        """fio's flow_threshold_exceeded: this job's share of the group's I/Os is
        above its share of the weights (it then waits and tries again)."""
        if self.counter and gen.flow_counter / self.counter > gen.spec.flow / self.total_weight:
            return True
        gen.flow_counter += 1
        self.counter += 1
        return False

    def take_waiters(self, job) -> List:
        out = [w for w in self.waiters if w is not job]
        self.waiters = [w for w in self.waiters if w is job]
        return out


class LatencyTarget:
    """fio's latency_target depth search (io_u.c lat_target_*), step for step:
    the depth starts at 1 and doubles after each window whose I/Os met the
    target (at latency_percentile); a window that fails (or, at 100%, any I/O
    over the target) bisects it down and drains the I/O in flight; when a
    success leaves the depth unchanged, one more window runs at that depth
    with fresh statistics, and the job ends (unless latency_run)."""

    def __init__(self, spec: JobSpec, now: int):
        self.spec = spec
        self.qd, self.qd_high, self.qd_low = 1, spec.iodepth, 1
        self.stable = 0
        self.end_run = False
        self.quiesce = False
        self.failed_fatal = False
        self.new_cycle(now, 0)

    def new_cycle(self, now: int, ios: int) -> None:
        self.cycle_start, self.cycle_ios, self.failed = now, ios, 0

    def _failed(self, now: int, ios: int) -> bool:
        if self.qd == 1:
            return True
        self.qd_high = self.qd
        if self.qd == self.qd_low:
            self.qd_low -= 1
        self.qd = (self.qd + self.qd_low) // 2
        self.stable = 0
        self.quiesce = True
        self.new_cycle(now, ios)
        return False

    def _success(self, job, now: int, ios: int) -> bool:
        """True when the search is over and the job ends."""
        qd = self.qd
        self.qd_low = self.qd
        if self.qd + 1 == self.qd_high:
            self.stable += 1
            if self.stable >= 3:
                self.qd_high += 1
                self.stable = 0
        if self.qd_high != self.spec.iodepth:
            self.qd = (self.qd + self.qd_high) // 2
        else:
            self.qd *= 2
        self.qd = min(self.qd, self.spec.iodepth)
        if not self.spec.latency_run and self.qd == qd:
            if self.end_run:
                return True
            self.quiesce = True
            self.end_run = True
            job.reset_stats(now)          # fio: reset_all_stats before the final window
        self.new_cycle(now, ios)
        return False

    def completed(self, job, now: int, lat_ns: int) -> bool:
        """Account one completion; True when the job should end."""
        ios = job.completed
        if lat_ns > self.spec.latency_target_ns:
            if self.spec.latency_percentile == 100.0:
                if self._failed(now, ios):
                    self.failed_fatal = True      # fio: "max latency exceeded" at depth 1
                    return True
            else:
                self.failed += 1
        if now - self.cycle_start < self.spec.latency_window_ns:
            return False
        n = ios - self.cycle_ios
        if n <= 0:
            return False
        if (n - self.failed) * 100.0 / n >= self.spec.latency_percentile:
            return self._success(job, now, ios)
        if self._failed(now, ios):
            self.failed_fatal = True
            return True
        return False


class IoGen:
    """The next (direction, bytes) of one job clone, or when to ask again."""

    def __init__(self, spec: JobSpec, seed: int, io_bytes: Optional[int]):
        self.spec = spec
        self.rng = random.Random(seed ^ 0x5EED)
        self.bytes_left = None if spec.time_based or spec.burns_cpu else io_bytes
        self.ios_left = spec.number_ios or None
        self.issued_bytes = [0, 0, 0]
        self.next_ns = [0.0, 0.0, 0.0]      # rate schedule, ns since the job started
        self.last_poisson = [0.0, 0.0, 0.0]
        # fio's rate_ddir when ahead of the rate: the sleep it took the measure of (ns) while it reaps
        # the I/O in flight, then when that sleep ends
        self.rate_sleep: Optional[int] = None
        self.rate_wake: Optional[int] = None
        self.pending: Optional[Tuple[int, int]] = None
        self.batch = 0
        self.think_until: Optional[int] = None
        self.trim_next_write: Optional[int] = None
        self.writing_done = False
        self.done = False
        # verify: sizes written (and trimmed) and not yet read back
        self.verify = spec.verify and spec.do_verify and (WRITE in spec.ddirs or TRIM in spec.ddirs)
        self.to_verify: deque = deque()
        self.backlog = 0                   # verify_backlog: blocks written since the last read-back
        self.verifying = False
        self.flow: Optional[FlowGroup] = None
        self.lat_target: Optional[LatencyTarget] = None    # created when the job starts
        self.draining = False        # iodepth_low: the queue filled up, reap down to the low-water mark
        self.flow_counter = 0
        bps = []
        for d in range(3):
            minbs = min(s for s, _ in spec.sizes_of(d))
            b = spec.rate_bps[d] or spec.rate_iops[d] * minbs
            bps.append(b)
        self.bps = bps
        self.minbs = [min(s for s, _ in spec.sizes_of(d)) for d in range(3)]

    def completed(self, job, now: int, lat_ns: int) -> None:
        """A completion (before the engine asks for more)."""
        lt = self.lat_target
        if lt is not None and not self.done and lt.completed(job, now, lat_ns):
            self.done = True
            job.remaining = 0
            if lt.failed_fatal:
                job.stopped = True
                if job.first_error is None:
                    job.first_error = "ETIMEDOUT (latency_target not met at depth 1)"

    def join_flow(self, group: FlowGroup) -> None:
        self.flow = group
        group.total_weight += self.spec.flow

    # -- choices -----------------------------------------------------------
    def _ddir(self, job) -> int:
        s = self.spec
        if s.ddir_mode == "mix":
            rf = s.read_fraction
            return READ if rf >= 1.0 or (rf > 0.0 and job.rng.random() < rf) else WRITE
        if s.ddir_mode == "trimwrite":
            # each block is trimmed, then written with the trim's size
            return WRITE if self.trim_next_write is not None else TRIM
        return s.ddirs[0]

    def _size(self, d: int) -> int:
        s = self.spec
        if d == WRITE and self.trim_next_write is not None:
            n, self.trim_next_write = self.trim_next_write, None
            return n
        if s.bssplit_rwt is not None:
            ch = s.bssplit_rwt[d]
            if len(ch) == 1:
                n = ch[0][0]
            else:
                r = self.rng.random() * sum(w for _, w in ch)
                n = ch[-1][0]
                for size, w in ch:
                    if r < w:
                        n = size
                        break
                    r -= w
            minbs, maxbs = min(x for x, _ in ch), max(x for x, _ in ch)
        elif s.bsrange_rwt is not None:
            minbs, maxbs = s.bsrange_rwt[d]
            if minbs == maxbs:
                return minbs
            n = minbs + int(maxbs * self.rng.random())
        else:
            return s.bs_rwt[d]
        if not s.bs_unaligned:
            n -= n % minbs
        return min(n, maxbs)

    def _draw(self, job, now: int) -> Optional[Tuple[int, int]]:
        """The next I/O of the job's own pattern, None when that is done."""
        if self.writing_done:
            return None
        if (self.ios_left is not None and self.ios_left <= 0) or (job.stop_ns is not None and now >= job.stop_ns):
            self.writing_done = True
            return None
        d = self._ddir(job)
        n = self._size(d)
        if self.bytes_left is not None and not (self.spec.ddir_mode == "trimwrite" and d == WRITE):
            if self.bytes_left < self.minbs[d]:
                self.writing_done = True
                return None
            if n > self.bytes_left:
                n = self.bytes_left - self.bytes_left % self.minbs[d]
            self.bytes_left -= n
        if self.ios_left is not None:
            self.ios_left -= 1
        if self.spec.ddir_mode == "trimwrite" and d == TRIM:
            self.trim_next_write = n
        return d, n

    def _advance_rate(self, d: int, n: int) -> None:
        bps = self.bps[d]
        if not bps:
            return
        self.issued_bytes[d] += n
        if self.spec.rate_process == "poisson":
            iops = bps / self.minbs[d]
            self.last_poisson[d] += -math.log(1.0 - self.rng.random()) * 1e9 / iops
            self.next_ns[d] = self.last_poisson[d]
        else:
            self.next_ns[d] = self.issued_bytes[d] * 1e9 / bps

    def over(self, job, now: int) -> bool:
        """Nothing more will be issued (for the engine's stop and stonewall checks)."""
        if self.done:
            return True
        past_stop = job.stop_ns is not None and now >= job.stop_ns
        return past_stop and not (self.verify and (self.to_verify or self.verifying))

    def _verify_io(self, job) -> Optional[Tuple[int, int]]:
        """A read-back of a written block: after every verify_backlog blocks, or
        once the writes are done and completed (fio's do_verify phase)."""
        if not self.verify or not self.to_verify:
            return None
        if self.spec.verify_backlog:
            if self.verifying or self.backlog >= self.spec.verify_backlog or self.writing_done:
                self.verifying = True
                self.backlog = max(0, self.backlog - 1)
                if self.backlog == 0 and not self.writing_done:
                    self.verifying = False
                return READ, self.to_verify.popleft()
            return None
        if not self.writing_done:
            return None
        if not self.verifying:
            if job.inflight:
                return None          # the write phase ends when its I/O has completed
            self.verifying = True
        return READ, self.to_verify.popleft()

    # -- the engine's question ---------------------------------------------
    def next_io(self, job, now: int):
        """(direction, bytes) to submit now; an int: ask again at that time;
        None: nothing now (done, or waiting for completions)."""
        s = self.spec
        if self.done:
            return None
        stop = job.stop_ns
        if self.draining:
            if job.inflight > s.iodepth_low:     # (draining only when 0 < iodepth_low < iodepth)
                return None
            self.draining = False
        lt = self.lat_target
        if s.latency_target_ns:
            if lt is None:
                lt = self.lat_target = LatencyTarget(s, now)
            if lt.quiesce:
                if job.inflight:
                    return None
                lt.quiesce = False
            if job.inflight >= lt.qd:
                return None
        v = self._verify_io(job)
        if v is not None:
            return v
        if s.thinktime_ns and self.batch >= s.thinktime_blocks and not self.writing_done:
            if s.thinktime_blocks_type == "complete" and job.inflight:
                return None                      # _complete asks again
            if self.think_until is None:
                self.think_until = now + s.thinktime_ns
            if now < self.think_until:
                return self.think_until if stop is None else min(self.think_until, stop)
            self.batch = 0
            self.think_until = None
        if self.pending is None:
            self.pending = self._draw(job, now)
            if self.pending is None:
                v = self._verify_io(job)
                if v is not None:
                    return v
                if self.verify and (self.to_verify or job.inflight):
                    return None                  # read-backs follow the last completions
                self.done = True
                job.remaining = 0
                if self.flow is not None:
                    self.flow.total_weight -= s.flow     # fio: a finished job leaves its flow group
                return None
        d, n = self.pending
        if self.bps[d]:
            due = job.start_ns + int(self.next_ns[d])
            # fio's rate_ddir: ahead of the rate, fio measures the sleep it needs, but an inline
            # submitter (io_submit_mode=inline, the default; offload is not modelled) first reaps every
            # I/O in flight (io_u_quiesce) and only then sleeps that long, so one slow I/O holds the
            # job's next submissions
            if self.rate_sleep is None and self.rate_wake is None and due > now:
                self.rate_sleep = due - now
            if self.rate_sleep is not None:
                if job.inflight:
                    return None                 # asked again at each completion
                self.rate_wake = now + self.rate_sleep
                self.rate_sleep = None
            if self.rate_wake is not None:
                if now < self.rate_wake:
                    return self.rate_wake if stop is None or self.rate_wake < stop else stop
                self.rate_wake = None           # the sleep is over: the I/O goes out
        if self.flow is not None and self.flow.held(self):
            if s.flow_sleep_ns:
                return now + s.flow_sleep_ns
            self.flow.waiters.append(job)        # woken when another job of the group issues
            return stop if stop is not None and stop > now else None
        self.pending = None
        self._advance_rate(d, n)
        self.batch += 1
        # fio's fixup: an iodepth_low of 0 or above iodepth means iodepth (always refill)
        if 0 < s.iodepth_low < s.iodepth and job.inflight + 1 >= s.iodepth:
            self.draining = True         # fio's wait_for_completions reaps down to iodepth_low
        if s.thinktime_ns and s.thinktime_blocks_type == "issue" and self.batch >= s.thinktime_blocks:
            self.think_until = now + s.thinktime_ns     # fio thinks right after issuing the batch
        if self.verify and d != READ:
            self.to_verify.append(n)
            self.backlog += 1
        return d, n
