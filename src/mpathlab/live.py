"""Live mode: real I/O to files or block devices through the same target and selectors.

Each path is a file or block device.  ``iodepth x numjobs`` worker threads
each loop: map an I/O through the :class:`~mpathlab.target.Multipath` (and so
the real selector), optionally sleep the path's added delay, do one
``os.pwrite``/``os.pread`` of ``bs`` bytes at a random aligned offset, and
complete it through the target's end_io.  The selector and target are
guarded by one lock, as the kernel guards them with spinlocks.

Clocks are the kernel's: ktime is CLOCK_MONOTONIC, jiffies are derived from
CLOCK_MONOTONIC_COARSE at the chosen HZ.  Files are opened with O_DIRECT
when the filesystem allows it (tmpfs does not), with a page-aligned buffer.

Results come back as a :class:`~mpathlab.sim.engine.SimResult`, so the same
tables and fio-style JSON are printed as for a simulation.  "Best" for a live
run is estimated from each path's measured mean latency (1/latency shares).
"""
from __future__ import annotations

import mmap
import os
import random
import stat
import threading
import time
from typing import Callable, Dict, List, Optional, Sequence

from .selectors import CpuTopology, lookup
from .sim.engine import JobState, SimResult
from .sim.stats import depth_index, lat_range_index
from .sim.stats import LatencyStats, mean_abs_deviation
from .target import MAP_DELAY_REQUEUE, MAP_REMAPPED, MpathIO, construct, mapping_resolver
from .target.multipath import END_DONE, REQUEUE_DELAY_MS
from .timing import TimeBase
from .units import UnitError, parse_duration_ns
from .workload.fio import JobSpec

_COARSE = getattr(time, "CLOCK_MONOTONIC_COARSE", time.CLOCK_MONOTONIC)


class LiveError(ValueError):
    pass


class LivePath:
    def __init__(self, path: str, index: int, delay_ns: int = 0):
        self.path = path
        self.delay_ns = delay_ns
        self.fd = -1
        self.direct = False
        self.size = 0
        self.is_block = False
        self.devt = (7, index)          # a loop-device-like name for files
        self.completed = 0
        self.errors = 0
        self.dispatched = 0
        self.busy_ns = 0        # time inside pread/pwrite
        self.lat_ns = 0         # dispatch to completion, added delay included
        self.lat = LatencyStats()   # latency of the I/O this path completed (the table's per-path percentiles)
        self.in_flight = 0
        self.peak_in_flight = 0
        self.name = path
        self.created = False    # the run made this file (mpathlab live removes it unless --keep-files)


def _open(lp: LivePath, size: int, writes: bool, allow_device_writes: bool) -> None:
    try:
        st = os.stat(lp.path)
        exists = True
    except FileNotFoundError:
        exists = False
        st = None
    if exists and stat.S_ISBLK(st.st_mode):
        lp.is_block = True
        lp.devt = (os.major(st.st_rdev), os.minor(st.st_rdev))
        if writes and not allow_device_writes:
            raise LiveError("%s is a block device: writing to it destroys its data; pass "
                            "--allow-device-writes if that is what you want" % lp.path)
    elif exists and not stat.S_ISREG(st.st_mode):
        raise LiveError("%s is neither a regular file nor a block device" % lp.path)
    if size is None and not lp.is_block and (not exists or st.st_size == 0):
        # fio: without size= a job uses the file's size, and refuses a file it would have to create
        raise LiveError("%s: the job has no size= and %s; fio refuses such a job too: give size="
                        % (lp.path, "the file is empty" if exists else "the file does not exist"))
    flags = os.O_RDWR if writes else os.O_RDONLY
    if not exists:
        if os.path.abspath(lp.path).startswith("/dev/"):
            raise LiveError("%s: no such device" % lp.path)
        if not writes:
            raise LiveError("%s does not exist (a read-only job cannot create it)" % lp.path)
        flags |= os.O_CREAT
        lp.created = True
    direct = getattr(os, "O_DIRECT", 0)
    fd = -1
    if direct:
        try:
            fd = os.open(lp.path, flags | direct, 0o644)
            lp.direct = True
        except OSError:
            fd = -1
    if fd < 0:
        try:
            fd = os.open(lp.path, flags, 0o644)
        except OSError as e:
            raise LiveError("cannot open %s: %s" % (lp.path, e.strerror)) from None
    lp.fd = fd
    if lp.is_block:
        lp.size = os.lseek(fd, 0, os.SEEK_END)
    else:
        cur = os.fstat(fd).st_size
        if size is None:
            size = cur          # checked above: an existing, non-empty file
        if cur < size:
            if not writes:
                raise LiveError("%s has %d bytes, the job reads %d" % (lp.path, cur, size))
            os.ftruncate(fd, size)
        lp.size = max(cur, size)


class LiveRun:
    def __init__(self, paths: Sequence[str], selector: str, jobs: Sequence[JobSpec], *,
                 selector_args: Sequence[str] = (), delays: Optional[Dict[str, int]] = None, hz: int = 250,
                 queue_mode: str = "rq", allow_device_writes: bool = False, seed: int = 1,
                 progress: Optional[Callable[[float], None]] = None, kernel=None):
        if not paths:
            raise LiveError("give at least one --path")
        cls = lookup(selector)
        if cls is None:
            raise LiveError("unknown path selector %r" % selector)
        if cls.name == "io-affinity":
            raise LiveError("io-affinity needs CPU masks; use it through a table in simulation")
        from .profiles import get_profile
        self.kernel = get_profile(kernel)
        if not self.kernel.has_selector(cls.name):
            raise LiveError("unknown path selector type %r in kernel %s" % (selector, self.kernel.name))
        self.jobs_spec = list(jobs)
        if any(j.bs <= 0 for j in self.jobs_spec):
            raise LiveError("bs must be positive")
        from .workload.fio import sim_only
        for j in self.jobs_spec:
            if sim_only(j):
                raise LiveError("job %r: live mode does not do %s (the simulator does)" % (j.name, sim_only(j)))
        if any(j.stonewall for j in self.jobs_spec[1:]):
            raise LiveError("stonewall is not supported in live mode: all jobs run at once")
        delays = delays or {}
        unknown = set(delays) - set(paths)
        if unknown:
            raise LiveError("--delay names %s, which is not a --path" % ", ".join(sorted(unknown)))
        seen: Dict[str, str] = {}
        for p in paths:
            real = os.path.realpath(p)
            if real in seen:
                same = "twice" if seen[real] == p else "twice (%s and %s are the same file)" % (seen[real], p)
                raise LiveError("--path %s is given %s; each path must be a different file or device" % (p, same))
            seen[real] = p
        self.paths = [LivePath(p, i, delays.get(p, 0)) for i, p in enumerate(paths)]
        self.progress = progress
        self.rng_master = random.Random(seed)
        writes = any(j.read_fraction < 1.0 for j in self.jobs_spec)
        # fio's size= (or filesize=); None: each file's own size, as fio does
        size = max((j.size or getattr(j, "filesize", None) or 0) for j in self.jobs_spec) or None
        try:
            for lp in self.paths:
                _open(lp, size, writes, allow_device_writes)
        except Exception:
            self.close()
            raise
        self.timebase = TimeBase(time.monotonic_ns, hz=hz,
                                 coarse_ns=lambda: time.clock_gettime_ns(_COARSE))
        # No per-path selector args: every selector then uses its defaults.
        feats = "2 queue_mode bio" if queue_mode == "bio" else "0"
        body = " ".join("%u:%u" % lp.devt for lp in self.paths)
        params = "%s 0 1 1 %s %d %s %d 0 %s" % (feats, cls.name, len(selector_args),
                                                " ".join(selector_args), len(self.paths), body)
        self.table = " ".join(params.split())
        self.mp = construct(self.table, resolve_device=mapping_resolver({}),
                            selector_env={"clock": self.timebase.ktime_ns, "topology": CpuTopology(8)},
                            timebase=self.timebase, kernel=self.kernel)
        self._dev = {p: lp for p, lp in zip(self.mp.pgpaths, self.paths)}
        self._lock = threading.Lock()

    def close(self) -> None:
        for lp in self.paths:
            if lp.fd >= 0:
                os.close(lp.fd)
                lp.fd = -1

    def remove_created(self) -> List[str]:
        """Delete the files this run created (not files or devices that were there before)."""
        gone = []
        for lp in self.paths:
            if lp.created and lp.fd < 0:
                try:
                    os.unlink(lp.path)
                    gone.append(lp.path)
                except OSError:
                    pass
        return gone

    def run(self) -> SimResult:
        try:
            return self._run()
        finally:
            self.close()

    def _run(self) -> SimResult:
        states: List[JobState] = []
        for spec in self.jobs_spec:
            for clone in range(spec.numjobs):
                states.append(JobState(spec, clone, 0, self.rng_master.getrandbits(64)))
        t0 = time.monotonic_ns()
        for js in states:
            js.start_ns = 0
            js.stop_ns = spec_stop(js.spec)
            if js.remaining is None and js.stop_ns is None:
                if js.spec.time_based:
                    raise LiveError("%s: time_based without runtime= would run forever; give runtime="
                                    % js.spec.name)
                # fio: without size= (or number_ios=) a job covers the file once
                js.remaining = max(1, min(lp.size for lp in self.paths) // js.spec.bs)
        total = sum(js.remaining or 0 for js in states)
        done = [0]
        errors: List[str] = []
        threads = []
        for js in states:
            js._lock = threading.Lock()
            for _ in range(js.spec.iodepth):
                th = threading.Thread(target=self._worker, args=(js, t0, done, errors), daemon=True)
                threads.append(th)
        for th in threads:
            th.start()
        horizon = max(js.stop_ns or 0 for js in states)
        while any(th.is_alive() for th in threads):
            time.sleep(0.05)
            if self.progress:
                if total:
                    self.progress(min(1.0, done[0] / total))
                elif horizon:
                    self.progress(min(1.0, (time.monotonic_ns() - t0) / horizon))
        for th in threads:
            th.join()
        if errors:
            raise LiveError("I/O failed: %s" % errors[0])
        return self._result(states)

    def _take(self, js: JobState, t0: int) -> bool:
        with js._lock:
            if js.stop_ns is not None and time.monotonic_ns() - t0 >= js.stop_ns:
                return False
            if js.remaining is not None:
                if js.remaining <= 0:
                    return False
                js.remaining -= 1
            js.submitted += 1
            return True

    def _worker(self, js: JobState, t0: int, done, errors) -> None:
        spec = js.spec
        bs = spec.bs
        buf = mmap.mmap(-1, bs)            # page aligned, as O_DIRECT needs
        buf.write(os.urandom(bs))
        rng = random.Random(js.rng.getrandbits(64))
        seq_off = 0
        try:
            while not errors and self._take(js, t0):
                is_read = spec.read_fraction >= 1.0 or (spec.read_fraction > 0 and rng.random() < spec.read_fraction)
                io = MpathIO(bs)
                submit = time.monotonic_ns()
                while True:
                    with self._lock:
                        if self.mp.queue_mode == "bio":
                            io.dm_start_jiffies = self.timebase.jiffies()
                        r = self.mp.map(io)
                    if r == MAP_REMAPPED:
                        break
                    if r == MAP_DELAY_REQUEUE:
                        time.sleep(REQUEUE_DELAY_MS / 1000.0)
                        continue
                    raise LiveError("no path to map the I/O to (%s)" % r)
                lp = self._dev[io.pgpath]
                t_disp = time.monotonic_ns()
                with self._lock:
                    lp.dispatched += 1
                    lp.in_flight += 1
                    lp.peak_in_flight = max(lp.peak_in_flight, lp.in_flight)
                    js.inflight += 1
                    js.depth_map[depth_index(js.inflight)] += 1
                if lp.delay_ns:
                    time.sleep(lp.delay_ns / 1e9)
                blocks = max(1, lp.size // bs)
                if spec.random:
                    off = rng.randrange(blocks) * bs
                else:
                    off = (seq_off % blocks) * bs
                    seq_off += 1
                t_io = time.monotonic_ns()
                err = None
                try:
                    if is_read:
                        n = os.preadv(lp.fd, [buf], off)
                    else:
                        n = os.pwrite(lp.fd, buf, off)
                    if n != bs:
                        err = "short I/O (%d of %d bytes)" % (n, bs)
                except OSError as e:
                    err = e.strerror or str(e)
                end = time.monotonic_ns()
                with self._lock:
                    lp.in_flight -= 1
                    js.inflight -= 1
                    lp.busy_ns += end - t_io
                    lp.lat_ns += end - t_disp
                    status = self.mp.end_io(io, "ioerr" if err else None)
                    if err or status != END_DONE:
                        lp.errors += 1
                        js.errored += 1
                        errors.append("%s at offset %d: %s" % (lp.path, off, err or status))
                        return
                    lp.completed += 1
                    js.completed += 1
                    lat = end - submit
                    lp.lat.add(lat)
                    if is_read:
                        js.read_lat.add(lat)
                        js.bytes_read += bs
                    else:
                        js.write_lat.add(lat)
                        js.bytes_written += bs
                    js.rate_windows.add(end - t0 - js.start_ns, 0 if is_read else 1, bs)
                    js.lat_ranges[lat_range_index(lat)] += 1
                    js.end_ns = end - t0
                    done[0] += 1
        except LiveError as e:
            errors.append(str(e))
        finally:
            buf.close()

    def _result(self, states) -> SimResult:
        res = SimResult()
        res.engine = "live"
        res.selector = self.mp.priority_groups[0].ps.name
        res.jobs = states
        res.runtime_ns = max([j.end_ns for j in states] + [0])
        res.submitted = sum(j.submitted for j in states)
        res.completed = sum(j.completed for j in states)
        res.errored = sum(j.errored for j in states)
        total = sum(lp.completed for lp in self.paths) or 1
        # Best from measured cost: each path weighted by 1 / its mean latency
        # (added delay included, since on one disk the delay is the asymmetry).
        caps = {lp.name: (lp.completed / lp.lat_ns if lp.lat_ns else 0.0) for lp in self.paths}
        ctot = sum(caps.values()) or 1.0
        res.best = {k: v / ctot for k, v in caps.items()}
        for lp in self.paths:
            share = lp.completed / total
            res.shares[lp.name] = share
            res.paths.append({"name": lp.name, "dev": "%u:%u" % lp.devt, "file": lp.path,
                              "dispatched": lp.dispatched, "completed": lp.completed, "errors": lp.errors,
                              "share": share, "best": res.best[lp.name], "in_flight": lp.in_flight,
                              "peak_in_flight": lp.peak_in_flight, "direct": lp.direct,
                              "mean_service_ns": (lp.busy_ns / lp.completed if lp.completed else 0.0),
                              "delay_ns": lp.delay_ns})
        res.mean_deviation = mean_abs_deviation(res.shares, res.best)
        res.path_latency = {lp.name: lp.lat for lp in self.paths}
        res.status_info = self.mp.status("info")
        res.status_table = self.mp.status("table")
        res.check_accounting()
        return res


def spec_stop(spec: JobSpec) -> Optional[int]:
    return spec.runtime_ns if spec.runtime_ns else None


def parse_delays(items: Sequence[str]) -> Dict[str, int]:
    """['/tmp/b=2ms', ...] -> {'/tmp/b': 2000000}."""
    out = {}
    for item in items:
        path, sep, dur = item.rpartition("=")
        if not sep or not path:
            raise LiveError("--delay takes PATH=DURATION, e.g. /tmp/b=2ms, not %r" % item)
        try:
            out[path] = parse_duration_ns(dur, "--delay")
        except UnitError as e:
            raise LiveError(str(e)) from None
    return out
