"""Models of the devices behind each path.

A path device is a FIFO queue in front of ``parallelism`` servers (the
device's internal concurrency).  Each I/O occupies a server for a service
time drawn from a distribution, plus a per-byte transfer cost.  An optional
fixed ``delay`` (a transport's round trip) is added once the I/O has its tag,
before it reaches the queue; it costs latency but no device capacity.

A path can also be a dm-delay device stacked over its device
(``dm_delay_ns``, drivers/md/dm-delay.c): its delay comes before the
device's queue, so a delayed I/O holds none of the device's tags.

Faults change a device at given times: ``fail`` (the path errors every I/O,
as a pulled cable does), ``reinstate`` (the device works again and
multipathd reinstates the path), ``slow`` (service times multiplied),
``suspend`` and ``resume`` (the path's dm device suspended and resumed,
with a new table's delay: ``dmsetup suspend``, ``reload``, ``resume``).
"""
from __future__ import annotations

import math
import os
import random
from typing import Callable, Optional, Sequence

from ..units import UnitError, parse_duration_ns
from .stats import LatencyStats


class ServiceTime:
    """A service-time distribution in ns.  ``mean_ns`` is its expected value."""

    kind = "constant"

    def __init__(self, mean_ns: float):
        if mean_ns < 0:
            raise UnitError("service time mean must not be negative")
        self.mean_ns = float(mean_ns)

    def sampler(self, rng: random.Random) -> Callable[[], float]:
        m = self.mean_ns
        return lambda: m

    def describe(self) -> str:
        return "%s(mean=%gus)" % (self.kind, self.mean_ns / 1e3)


class Exponential(ServiceTime):
    kind = "exponential"

    def sampler(self, rng):
        if self.mean_ns == 0:
            return lambda: 0.0
        lam = 1.0 / self.mean_ns
        ex = rng.expovariate
        return lambda: ex(lam)


class LogNormal(ServiceTime):
    kind = "lognormal"

    def __init__(self, mean_ns: float, sigma: float):
        super().__init__(mean_ns)
        if sigma < 0:
            raise UnitError("lognormal sigma must not be negative")
        self.sigma = float(sigma)

    def sampler(self, rng):
        if self.mean_ns == 0:
            return lambda: 0.0
        mu = math.log(self.mean_ns) - self.sigma ** 2 / 2
        lv = rng.lognormvariate
        s = self.sigma
        return lambda: lv(mu, s)

    def describe(self):
        return "lognormal(mean=%gus, sigma=%g)" % (self.mean_ns / 1e3, self.sigma)


class Empirical(ServiceTime):
    """Samples drawn uniformly from measured latencies (a file, one per line)."""

    kind = "empirical"

    def __init__(self, samples_ns: Sequence[float], source: str = ""):
        if not samples_ns:
            raise UnitError("empirical distribution %s has no samples" % (source or ""))
        self.samples = sorted(float(x) for x in samples_ns)
        self.source = source
        super().__init__(sum(self.samples) / len(self.samples))

    @classmethod
    def from_file(cls, path: str, unit: str = "us") -> "Empirical":
        if not os.path.exists(path):
            raise UnitError("latency file %r does not exist" % path)
        from ..inputs import InputFileError, read_text
        try:
            text = read_text(path, "latency file")
        except InputFileError as e:
            raise UnitError(str(e)) from None
        vals = []
        for lineno, line in enumerate(text.splitlines(), 1):
            line = line.split("#", 1)[0].replace(",", " ").strip()
            if line:
                # first column: a bare number (in `unit`) or a duration with units
                vals.append(parse_duration_ns(line.split()[0], "%s:%d" % (path, lineno), default_unit=unit))
        if not vals:
            raise UnitError("%s: no latencies in the file (one per line, e.g. 120us)" % path)
        return cls(vals, path)

    def sampler(self, rng):
        s = self.samples
        n = len(s)
        rnd = rng.random
        return lambda: s[int(rnd() * n)]

    def describe(self):
        return "empirical(%d samples from %s, mean=%gus)" % (len(self.samples), self.source or "list",
                                                               self.mean_ns / 1e3)


class Fault:
    __slots__ = ("at_ns", "action", "factor", "reinstate_after_ns", "error", "every_nth", "delay_ns")

    # offline / delete / online: the SCSI device state (sysfs state, delete, rescan; sim/scsi.py);
    # poweroff: the disk deleted with its queue dying at once (a null_blk device powered off);
    # error: an error class on every every_nth command (scsi_debug's every_nth);
    # suspend / resume: the bio-based dm device over the path's device (dm-delay) suspended, then
    # resumed with a new table whose delay is delay_ns (None: the delay it had)
    ACTIONS = ("fail", "reinstate", "slow", "offline", "delete", "poweroff", "online", "error",
               "suspend", "resume")

    def __init__(self, at_ns: int, action: str, factor: float = 1.0, reinstate_after_ns: int = 0,
                 error: str = "", every_nth: int = 1, delay_ns: Optional[int] = None):
        if action not in self.ACTIONS:
            raise UnitError("fault action must be one of %s, not %r" % ("/".join(self.ACTIONS), action))
        if action == "slow" and factor <= 0:
            raise UnitError("a 'slow' fault needs a positive factor")
        if delay_ns is not None and (action != "resume" or delay_ns < 0):
            raise UnitError("a fault's delay belongs to a 'resume' fault and must not be negative")
        self.at_ns = at_ns
        self.action = action
        self.factor = factor
        self.reinstate_after_ns = reinstate_after_ns
        self.error = error          # "error": a class of sim.scsi.ERRORS ("" clears an earlier one)
        self.every_nth = every_nth
        self.delay_ns = delay_ns


# I/O schedulers a path queue can have; any of them takes scheduler tags.
SCHEDULERS = ("none", "mq-deadline", "kyber", "bfq")
BLKDEV_DEFAULT_RQ = 128


class PathModel:
    """Configuration of one path's device."""

    def __init__(self, name: str, devt, service: ServiceTime, parallelism: int = 1, delay_ns: int = 0,
                 ns_per_kib: float = 0.0, faults: Sequence[Fault] = (), fail_latency_ns: int = 0,
                 hw_queue_depth: int = 0, nr_hw_queues: int = 1, scheduler: str = "none", nr_requests: int = 0,
                 queue_depth: int = 0, scsi_host=None, dm_delay_ns: int = 0):
        if parallelism < 1:
            raise UnitError("path %s: parallelism must be at least 1" % name)
        if hw_queue_depth < 0 or nr_hw_queues < 1 or nr_requests < 0:
            raise UnitError("path %s: hw_queue_depth, nr_hw_queues and nr_requests must be positive" % name)
        if dm_delay_ns < 0:
            raise UnitError("path %s: the dm-delay device's delay must not be negative" % name)
        if scheduler not in SCHEDULERS:
            raise UnitError("path %s: scheduler must be one of %s" % (name, ", ".join(SCHEDULERS)))
        self.name = name
        self.devt = tuple(devt)
        self.service = service
        self.parallelism = int(parallelism)
        self.delay_ns = int(delay_ns)      # after the tags: the request holds one while it travels
        # a dm-delay device over the device (drivers/md/dm-delay.c delay_map): each I/O waits this long
        # on its list before dm-delay submits it to the device, holding none of the device's tags
        self.dm_delay_ns = int(dm_delay_ns)
        self.ns_per_kib = float(ns_per_kib)
        self.faults = sorted(faults, key=lambda f: f.at_ns)
        self.fail_latency_ns = int(fail_latency_ns)
        # The path's request_queue (see sim/blockqueue.py).  0 = unlimited,
        # the default, under which nothing ever waits for a tag.
        self.hw_queue_depth = int(hw_queue_depth)
        self.nr_hw_queues = int(nr_hw_queues)
        self.scheduler = scheduler
        self.nr_requests = int(nr_requests)
        # A SCSI path (sim/scsi.py): sdev->queue_depth budget tokens (0 = unlimited) and the host
        # (ScsiHostModel) whose can_queue driver tags it shares; None = a null_blk-like device.
        self.queue_depth = int(queue_depth)
        self.scsi_host = scsi_host

    @property
    def is_scsi(self) -> bool:
        return self.scsi_host is not None

    @property
    def hctx_tags(self) -> int:
        """Driver tags of each hardware queue (hw_queue_depth); 0 = unlimited."""
        return self.hw_queue_depth

    @property
    def hctx_sched_tags(self) -> int:
        """Scheduler tags of each hardware queue when an I/O scheduler is attached (0 = none).
        blk_mq_init_sched sets nr_requests to 2 * min(queue_depth, BLKDEV_DEFAULT_RQ=128)."""
        if self.scheduler == "none":
            return 0
        return self.nr_requests or 2 * min(self.hw_queue_depth or BLKDEV_DEFAULT_RQ, BLKDEV_DEFAULT_RQ)

    @property
    def nr_tags(self) -> int:
        """Driver tags of the whole device; 0 = unlimited."""
        return self.hctx_tags * self.nr_hw_queues

    @property
    def nr_sched_tags(self) -> int:
        """Scheduler tags of the whole device; 0 = no scheduler."""
        return self.hctx_sched_tags * self.nr_hw_queues

    @property
    def devname(self) -> str:
        return "%u:%u" % self.devt

    def mean_service_ns(self, nr_bytes: int) -> float:
        return self.service.mean_ns + self.ns_per_kib * nr_bytes / 1024.0

    def capacity_iops(self, nr_bytes: int) -> float:
        """I/Os per second the device completes when saturated (delay costs nothing).
        With fewer driver tags than servers only that many I/Os can be served at once."""
        m = self.mean_service_ns(nr_bytes)
        servers = min(self.parallelism, self.nr_tags) if self.nr_tags else self.parallelism
        if self.queue_depth:
            servers = min(servers, self.queue_depth)
        return float("inf") if m <= 0 else servers * 1e9 / m


def best_distribution(models: Sequence[PathModel], nr_bytes: int) -> dict:
    """The ideal share of each path: proportional to what its device can serve.

    This is the seeds' "Best ... calculated considering the real cost of
    each path": the cost of an I/O is the device time it occupies, so the
    ideal split gives each path its share of the total capacity.  A fixed
    added delay adds latency but no cost, so it does not change Best.
    """
    caps = {m.name: m.capacity_iops(nr_bytes) for m in models}
    if any(math.isinf(c) for c in caps.values()):
        infs = [k for k, c in caps.items() if math.isinf(c)]
        return {k: (1.0 / len(infs) if k in infs else 0.0) for k in caps}
    total = sum(caps.values())
    return {k: (c / total if total else 0.0) for k, c in caps.items()}


class PathDevice:
    """Runtime state of one device in a simulation."""

    __slots__ = ("model", "busy", "queue", "offline", "slow_factor", "sample", "dispatched", "completed",
                 "errors", "in_flight", "peak_in_flight", "seed", "lat", "scsi", "scsi_of_host",
                 "dm_delay_ns", "dm_delayed", "dm_suspended", "dm_held")

    def __init__(self, model: PathModel, seed: int):
        from collections import deque
        self.model = model
        self.seed = seed              # the compiled core seeds its own stream from it
        self.busy = 0
        self.queue: deque = deque()
        self.offline = False
        self.slow_factor = 1.0
        self.sample = model.service.sampler(random.Random(seed))
        self.dispatched = 0
        self.completed = 0
        self.errors = 0
        self.in_flight = 0     # dispatched to this path and not yet completed
        self.peak_in_flight = 0
        # completion latency (submit to completion, as the job sees it) of
        # the I/Os this path completed: the per-path view of the reports
        self.lat = LatencyStats()
        self.scsi = None       # sim.scsi.ScsiDevice of a SCSI path (set up with its host's tag set)
        self.scsi_of_host: list = []   # each host's ScsiDevice of it (multi-host runs); [0] is .scsi
        # the dm-delay device over it (sim/pathevents.py): its table's delay now, the I/O on its delay
        # list (I/O -> when it leaves: one flushed early and sent again has a new time, so the old
        # expiry does nothing), and while suspended the I/O dm core holds for it until resume
        self.dm_delay_ns = model.dm_delay_ns
        self.dm_delayed: dict = {}
        self.dm_suspended = False
        self.dm_held: list = []

    def service_ns(self, nr_bytes: int) -> int:
        m = self.model
        st = self.sample()
        if m.ns_per_kib:
            st += m.ns_per_kib * nr_bytes / 1024.0
        if self.slow_factor != 1.0:
            st *= self.slow_factor
        v = int(st)
        return v if v > 0 else 1
