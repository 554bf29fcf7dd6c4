"""One fio job clone at run time: its I/O budget, stonewall group, counters and latency statistics
(what fio keeps per thread_data)."""
from __future__ import annotations

import random
from typing import Optional

from ..workload.fio import JobSpec
from ..workload.fio_logs import JobLog
from ..workload.trace_replay import ReplayGen
from .arrival import IoGen, needs_gen
from .stats import LatencyStats, RateWindows


class JobState:
    """One fio job clone at run time."""

    def __init__(self, spec: JobSpec, clone: int, cpu: int, seed: int, device_bytes: Optional[int] = None):
        self.spec = spec
        self.clone = clone
        self.cpu = cpu
        self.seed = seed              # the compiled core seeds its own stream from it
        self.rng = random.Random(seed)
        # mixed sizes, trims and open-loop arrivals: sim/arrival.py decides each I/O; a trace replay
        # (read_iolog) takes each from the trace (workload/trace_replay.py)
        self.gen: Optional[IoGen] = None
        if spec.read_iolog is not None:
            self.gen = ReplayGen(spec, clone)   # type: ignore[assignment]  # answers the engine as an IoGen does
        elif needs_gen(spec):
            self.gen = IoGen(spec, seed, spec.io_bytes(device_bytes))
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
