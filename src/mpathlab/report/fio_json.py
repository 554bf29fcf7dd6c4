"""fio-compatible JSON (``--output-format=json``) for a simulated run.

Keys and units follow fio 3.x: ``bw`` in KiB/s, ``runtime`` in ms, ``*_ns``
latency objects with a ``percentile`` map keyed "%f".  Everything fio has no
notion of (per-path shares, Best, the simulated ``dmsetup status``) lives
under the namespaced key ``"mpath"`` so fio parsers keep working.
"""
from __future__ import annotations

import time
from typing import Dict, List

from .. import __version__
from ..sim.stats import FIO_DEFAULT_PERCENTILES, LatencyStats, merged_latency

_EMPTY_DIR = ("trim", "sync")


def _direction(lat: LatencyStats, nbytes: int, runtime_ns: int, plist, lat_percentiles: bool,
               clat_percentiles: bool, plus: bool = False) -> dict:
    runtime_ms = int(round(runtime_ns / 1e6))
    secs = runtime_ns / 1e9 if runtime_ns else 0.0
    bw_bytes = int(nbytes / secs) if secs else 0
    iops = lat.n / secs if secs else 0.0
    zero = {"min": 0, "max": 0, "mean": 0.0, "stddev": 0.0, "N": 0}
    clat = lat.as_fio(plist, with_percentiles=clat_percentiles)
    if plus:
        clat["bins"] = lat.bins()     # json+: {bucket value in ns: count}
    return {
        "io_bytes": nbytes, "io_kbytes": nbytes // 1024, "bw_bytes": bw_bytes, "bw": bw_bytes // 1024,
        "iops": iops, "runtime": runtime_ms if lat.n else 0, "total_ios": lat.n, "short_ios": 0,
        "drop_ios": 0,
        "slat_ns": dict(zero),
        "clat_ns": clat,
        "lat_ns": lat.as_fio(plist, with_percentiles=lat_percentiles),
        "bw_min": bw_bytes // 1024, "bw_max": bw_bytes // 1024, "bw_agg": 100.0 if lat.n else 0.0,
        "bw_mean": float(bw_bytes // 1024), "bw_dev": 0.0, "bw_samples": 1 if lat.n else 0,
        "iops_min": int(iops), "iops_max": int(iops), "iops_mean": iops, "iops_stddev": 0.0,
        "iops_samples": 1 if lat.n else 0,
    }


def _job_entry(name: str, jobs, plist, plus: bool = False) -> dict:
    spec = jobs[0].spec
    read, write = merged_latency(jobs, ("read",)), merged_latency(jobs, ("write",))
    rb = sum(j.bytes_read for j in jobs)
    wb = sum(j.bytes_written for j in jobs)
    errors = sum(j.errored for j in jobs)
    runtime = max(j.end_ns for j in jobs) - min(j.start_ns for j in jobs)
    entry = {
        "jobname": name, "groupid": 0, "error": 5 if errors else 0, "eta": 0,
        "elapsed": max(1, int(round(runtime / 1e9))), "job options": dict(spec.options),
        "read": _direction(read, rb, runtime, plist, spec.lat_percentiles, spec.clat_percentiles, plus),
        "write": _direction(write, wb, runtime, plist, spec.lat_percentiles, spec.clat_percentiles, plus),
        "trim": _direction(merged_latency(jobs, ("trim",)), sum(getattr(j, "bytes_trimmed", 0) for j in jobs),
                           runtime, plist, spec.lat_percentiles, spec.clat_percentiles, plus),
        "sync": {"total_ios": 0, "lat_ns": {"min": 0, "max": 0, "mean": 0.0, "stddev": 0.0, "N": 0}},
        "job_runtime": int(round(runtime / 1e6)), "usr_cpu": 0.0, "sys_cpu": 0.0, "ctx": 0, "majf": 0,
        "minf": 0, "iodepth_level": {}, "latency_ns": {}, "latency_us": {}, "latency_ms": {},
        "latency_depth": spec.iodepth, "latency_target": 0, "latency_percentile": 100.0,
        "latency_window": 0,
    }
    return entry


def fio_json(result, global_options: Dict[str, str] = None, timestamp: float = None, plus: bool = False) -> dict:
    """Build fio's JSON document from a :class:`~mpathlab.sim.SimResult` (``plus``: json+ bins)."""
    ts = time.time() if timestamp is None else timestamp
    groups: Dict[str, List] = {}
    order: List[str] = []
    for j in result.jobs:
        key = j.spec.name if j.spec.group_reporting else "%s#%d" % (j.spec.name, j.clone)
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].append(j)
    jobs_out = []
    for key in order:
        js = groups[key]
        plist = js[0].spec.percentile_list or FIO_DEFAULT_PERCENTILES
        jobs_out.append(_job_entry(js[0].spec.name, js, plist, plus))
    doc = {
        "fio version": "mpathlab-%s" % __version__,
        "timestamp": int(ts), "timestamp_ms": int(ts * 1000),
        "time": time.strftime("%a %b %d %H:%M:%S %Y", time.localtime(ts)),
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
        "pending": result.pending, "stalled": result.stalled,
        "dmsetup_status": result.status_info, "dmsetup_table": result.status_table,
        "messages": [{"at_ns": t, "message": m, "result": r} for t, m, r in result.messages],
        "in_flight_timeline": [{"t_ns": t, "in_flight": d} for t, d in result.timeline],
        "simulated_ns": result.runtime_ns,
    }
    return doc
