"""fio-compatible JSON (``--output-format=json`` / ``json+``) for a simulated run.

The document has the shape fio 3.33 writes (checked against a real capture,
tests/data/fio-3.33-jsonplus.json), so fio's own tools read it:
``fio_jsonplus_clat2csv``, fio-plot, fiologparser-style scripts.

- Units as fio: ``bw`` KiB/s, ``bw_bytes`` B/s, ``runtime`` ms, ``*_ns`` ns,
  ``bw_bytes = 1000 * io_bytes // runtime_ms``, ``iops = 1000.0 * ios / runtime_ms``.
- Where fio omits a key, so do we: a latency object with no samples has no
  ``percentile`` and no ``bins``; ``lat_ns`` has them only under
  ``lat_percentiles=1``; ``bins`` only in json+.
- ``bw_*``/``iops_*`` min/max/mean/dev/samples come from one sample per full
  500 ms period since the job started (fio's ``bw_avg_time``/``iops_avg_time``
  default), skipping periods without I/O in that direction, as fio does; a
  run shorter than 500 ms has no samples (all zero, as in fio).  Under
  ``group_reporting`` fio adds the clones' sample statistics up (min+min,
  mean+mean, ...); so do we.
- ``iodepth_level`` is the job's queue depth just after each submission
  (fio's io_u_map); the simulator submits and reaps one I/O per call, so
  ``iodepth_submit``/``iodepth_complete`` are 100 % in fio's "1-4" slot ("4").
- ``latency_ns/us/ms`` are the share of I/Os per fio latency range, counted
  per I/O as fio's io_u_mark_latency does (``sim.stats.lat_range_index``).
- ``time`` is ``ctime()`` without the newline, as fio prints it.

Everything fio has no notion of (per-path shares, Best, the simulated
``dmsetup status``) lives under the namespaced key ``"mpath"``.
"""
from __future__ import annotations

import math
import time
from typing import Dict, List, Optional, Sequence

from .. import __version__
from ..sim.stats import FIO_AVG_TIME_NS, FIO_DEFAULT_PERCENTILES, LatencyStats, merged_latency

_LAT_RANGES = ("2", "4", "10", "20", "50", "100", "250", "500", "750", "1000")
_LAT_M_RANGES = _LAT_RANGES + ("2000", ">=2000")
_DEPTH_KEYS = ("1", "2", "4", "8", "16", "32", ">=64")
_SUBMIT_KEYS = ("0", "4", "8", "16", "32", "64", ">=64")


class _SampleStat:
    """fio's io_stat over bw or iops samples: min, max, mean, S (Welford)."""

    def __init__(self):
        self.n = 0
        self.min = 0
        self.max = 0
        self.mean = 0.0
        self.s = 0.0

    def add(self, v: int) -> None:
        self.n += 1
        if self.n == 1:
            self.min = self.max = v
        else:
            self.min = min(self.min, v)
            self.max = max(self.max, v)
        d = v - self.mean
        self.mean += d / self.n
        self.s += d * (v - self.mean)

    def pure_sum(self, other: "_SampleStat") -> None:
        """fio's sum_stat(..., pure_sum=true) for group_reporting: add up."""
        if not other.n:
            return
        if not self.n:
            self.n, self.min, self.max, self.mean, self.s = other.n, other.min, other.max, other.mean, other.s
            return
        self.n += other.n
        self.min += other.min
        self.max += other.max
        self.mean += other.mean
        self.s += other.s

    @property
    def dev(self) -> float:
        return math.sqrt(self.s / (self.n - 1)) if self.n > 1 else 0.0


def rate_samples(job, direction: int) -> tuple:
    """(bw KiB/s, iops) sample statistics of one job clone for read (0),
    write (1) or trim (2): one sample per full 500 ms period with I/O in it."""
    bw, iops = _SampleStat(), _SampleStat()
    windows = getattr(getattr(job, "rate_windows", None), "windows", {})
    span = job.end_ns - job.start_ns
    period_ms = FIO_AVG_TIME_NS // 1_000_000
    for k, w in sorted(windows.items()):
        if (k + 1) * FIO_AVG_TIME_NS > span:
            break                     # fio takes no sample of the last, partial period
        nbytes, nios = w[direction], w[3 + direction]
        # "No entries for interval": each log skips a period without its own kind of entry (a cpuio
        # burner's 'I/Os' carry no bytes: iops samples, no bw samples)
        if nbytes:
            bw.add(nbytes * 1000 // period_ms // 1024)
        if nios:
            iops.add(nios * 1000 // period_ms)
    return bw, iops


def _lat_object(lat: LatencyStats, plist, percentiles: bool, plus: bool) -> dict:
    d = {"min": int(lat.min), "max": int(lat.max), "mean": float(lat.mean), "stddev": float(lat.stddev),
         "N": lat.n}
    if percentiles and lat.n:
        d["percentile"] = lat.percentiles(tuple(sorted(plist)))      # fio sorts the list
        if plus:
            d["bins"] = lat.bins()
    return d


def _direction(lat: LatencyStats, nbytes: int, runtime_ms: int, plist, spec, plus: bool,
               bw: _SampleStat, iops_st: _SampleStat, group_agg_bytes: int) -> dict:
    runt = runtime_ms if nbytes else 0        # fio keeps a direction's runtime only when it moved bytes
    bw_bytes = 1000 * nbytes // runt if runt else 0
    iops = 1000.0 * lat.n / runt if runt else 0.0
    zero = {"min": 0, "max": 0, "mean": 0.0, "stddev": 0.0, "N": 0}
    if bw.n:
        p_of_agg = 100.0
        if group_agg_bytes > 1024:
            p_of_agg = min(100.0, bw.mean * 100.0 / (group_agg_bytes / 1024.0))
    else:
        p_of_agg = 0.0
    return {
        "io_bytes": nbytes, "io_kbytes": nbytes >> 10, "bw_bytes": bw_bytes, "bw": bw_bytes // 1024,
        "iops": iops, "runtime": runt, "total_ios": lat.n, "short_ios": 0, "drop_ios": 0,
        "slat_ns": dict(zero),
        # the simulator has no submission latency: completion latency is the total latency
        "clat_ns": _lat_object(lat, plist, spec.clat_percentiles, plus),
        "lat_ns": _lat_object(lat, plist, spec.lat_percentiles, plus),
        "bw_min": bw.min, "bw_max": bw.max, "bw_agg": p_of_agg, "bw_mean": float(bw.mean), "bw_dev": bw.dev,
        "bw_samples": bw.n,
        "iops_min": iops_st.min, "iops_max": iops_st.max, "iops_mean": float(iops_st.mean),
        "iops_stddev": iops_st.dev, "iops_samples": iops_st.n,
    }


def _percents(counts: Sequence[int], total: int, floor: float) -> List[float]:
    """Percent of ``total`` per slot; a non-empty slot shows at least ``floor``
    so that it never reads as empty.  fio has this twice: stat_calc_dist
    (depths, floor 0.1) and stat_calc_lat (latency ranges, floor 0.01)."""
    out = []
    for c in counts:
        v = 100.0 * c / total if total else 0.0
        if c and v < floor:
            v = floor
        out.append(v)
    return out


def _dist(counts: Sequence[int], total: int) -> List[float]:
    """fio's stat_calc_dist."""
    return _percents(counts, total, 0.1)


def _lat_pct(counts: Sequence[int], total: int) -> List[float]:
    """fio's stat_calc_lat."""
    return _percents(counts, total, 0.01)


def usr_cpu(jobs) -> float:
    """Percent of the run the clones spent on a CPU in user space: a cpuio burner's spin time
    (sim/host.py); the simulator charges I/O jobs' CPU work to the kernel, not to fio (0)."""
    runtime = sum(j.end_ns - j.start_ns for j in jobs)
    usr = sum(getattr(j, "usr_ns", 0) for j in jobs)
    return 100.0 * usr / runtime if runtime > 0 else 0.0


def _job_entry(name: str, groupid: int, jobs, plist, plus: bool, group_agg: Sequence[int]) -> dict:
    spec = jobs[0].spec
    read, write = merged_latency(jobs, ("read",), burners=True), merged_latency(jobs, ("write",), burners=True)
    trim = LatencyStats()             # trims, where the engine models them (trim_lat, bytes_trimmed)
    for j in jobs:
        if getattr(j, "trim_lat", None) is not None:
            trim.merge(j.trim_lat)
    rb = sum(j.bytes_read for j in jobs)
    wb = sum(j.bytes_written for j in jobs)
    tb = sum(getattr(j, "bytes_trimmed", 0) for j in jobs)
    errors = sum(j.errored for j in jobs)
    runtime = max(j.end_ns for j in jobs) - min(j.start_ns for j in jobs)
    runtime_ms = int(round(runtime / 1e6))
    samples = []
    for d in (0, 1, 2):
        bw, io = _SampleStat(), _SampleStat()
        for j in jobs:
            b, i = rate_samples(j, d)
            bw.pure_sum(b)
            io.pure_sum(i)
        samples.append((bw, io))
    depth = [0] * 7
    for j in jobs:
        for k, c in enumerate(getattr(j, "depth_map", ())):
            depth[k] += c
    submitted = sum(depth)
    total = read.n + write.n + trim.n
    ranges = [0] * 32
    for j in jobs:
        for k, c in enumerate(getattr(j, "lat_ranges", ())):
            ranges[k] += c
    lat_n, lat_u, lat_m = ranges[:10], ranges[10:20], ranges[20:]
    one_per_call = [0, submitted, 0, 0, 0, 0, 0]
    reaped = [0, total, 0, 0, 0, 0, 0]
    entry = {
        "jobname": name, "groupid": groupid, "error": 5 if errors else 0, "eta": 0,
        "elapsed": max(1, int(round(runtime / 1e9))), "job options": dict(spec.options),
        "read": _direction(read, rb, runtime_ms, plist, spec, plus, samples[0][0], samples[0][1], group_agg[0]),
        "write": _direction(write, wb, runtime_ms, plist, spec, plus, samples[1][0], samples[1][1],
                            group_agg[1]),
        "trim": _direction(trim, tb, runtime_ms, plist, spec, plus, samples[2][0], samples[2][1], group_agg[2]),
        "sync": {"total_ios": 0, "lat_ns": {"min": 0, "max": 0, "mean": 0.0, "stddev": 0.0, "N": 0}},
        "job_runtime": runtime_ms, "usr_cpu": usr_cpu(jobs), "sys_cpu": 0.0, "ctx": 0, "majf": 0, "minf": 0,
        "iodepth_level": dict(zip(_DEPTH_KEYS, _dist(depth, submitted))),
        "iodepth_submit": dict(zip(_SUBMIT_KEYS, _dist(one_per_call, submitted))),
        "iodepth_complete": dict(zip(_SUBMIT_KEYS, _dist(reaped, total))),
        "latency_ns": dict(zip(_LAT_RANGES, _lat_pct(lat_n, total))),
        "latency_us": dict(zip(_LAT_RANGES, _lat_pct(lat_u, total))),
        "latency_ms": dict(zip(_LAT_M_RANGES, _lat_pct(lat_m, total))),
        "latency_depth": getattr(spec, "iodepth_option", spec.iodepth), "latency_target": 0, "latency_percentile": 100.0,
        "latency_window": 0,
    }
    if spec.continue_on_error:
        entry["total_err"] = errors
        entry["first_error"] = 5 if errors else 0
    return entry


def fio_time(ts: float) -> str:
    """fio's "time": ctime_r() of the local time, without the newline."""
    return time.ctime(ts)


def _groupids(result) -> Dict[int, int]:
    """fio's groupid per job clone (by id): a job with ``stonewall`` (or
    ``new_group``) starts a new reporting group."""
    out: Dict[int, int] = {}
    gid = -1
    last_spec = None
    for j in result.jobs:
        if j.spec is not last_spec:
            if gid < 0 or j.spec.stonewall or getattr(j.spec, "new_group", False):
                gid += 1
            last_spec = j.spec
        out[id(j)] = gid
    return out


def fio_json(result, global_options: Optional[Dict[str, str]] = None, timestamp: Optional[float] = None,
             plus: bool = False) -> dict:
    """Build fio's JSON document from a :class:`~mpathlab.sim.SimResult` (``plus``: json+ bins)."""
    ts = time.time() if timestamp is None else timestamp
    gids = _groupids(result)
    groups: Dict[str, List] = {}
    order: List[str] = []
    for j in result.jobs:
        key = j.spec.name if j.spec.group_reporting else "%s#%d" % (j.spec.name, j.clone)
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].append(j)
    # the reporting group's aggregate bandwidth in B/s per direction (fio's rs->agg)
    agg: Dict[int, List[int]] = {}
    for key in order:
        js = groups[key]
        runtime_ms = int(round((max(j.end_ns for j in js) - min(j.start_ns for j in js)) / 1e6))
        a = agg.setdefault(gids[id(js[0])], [0, 0, 0])
        if runtime_ms:
            a[0] += 1000 * sum(j.bytes_read for j in js) // runtime_ms
            a[1] += 1000 * sum(j.bytes_written for j in js) // runtime_ms
            a[2] += 1000 * sum(getattr(j, "bytes_trimmed", 0) for j in js) // runtime_ms
    jobs_out = []
    for key in order:
        js = groups[key]
        plist = js[0].spec.percentile_list or FIO_DEFAULT_PERCENTILES
        gid = gids[id(js[0])]
        jobs_out.append(_job_entry(js[0].spec.name, gid, js, plist, plus, agg[gid]))
    doc = {
        "fio version": "mpathlab-%s" % __version__,
        "timestamp": int(ts), "timestamp_ms": int(ts * 1000),
        "time": fio_time(ts),
    }
    if global_options:
        doc["global options"] = dict(global_options)
    doc["jobs"] = jobs_out
    doc["mpath"] = {
        "selector": result.selector,
        "paths": result.paths,
        "shares": result.shares,
        "best": result.best,
        "mean_deviation": result.mean_deviation,
        "submitted": result.submitted, "completed": result.completed, "errored": result.errored,
        "pending": result.pending, "stalled": bool(result.stalled or result.pending),
        "stall": _stall(result),
        "dmsetup_status": result.status_info, "dmsetup_table": result.status_table,
        "messages": [{"at_ns": t, "message": m, "result": r} for t, m, r in result.messages],
        "in_flight_timeline": [{"t_ns": t, "in_flight": d} for t, d in result.timeline],
        "simulated_ns": result.runtime_ns,
    }
    return doc


def _stall(result):
    """Why the run ended with I/O pending and what is pending (mpathlab.stall), else None."""
    from ..stall import describe
    return describe(result)
