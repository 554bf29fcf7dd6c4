"""fio's per-job log files (write_lat_log, write_bw_log, write_iops_log).

Each line is ``time, value, direction, block size, offset-or-priority``
exactly as fio 3.33's flush_samples() prints it: time in ms since the job
started, direction 0/1/2 (read/write/trim); without ``log_offset`` the fifth
column is the priority (0 here), with it the offset (0: offsets are not
modelled) and then the priority (``0x0000`` with ``log_prio``).  Files are named as fio names them:
``PREFIX_TYPE.N.log`` (N = the clone's number among all jobs, from 1), or
``PREFIX_TYPE.log`` with ``per_job_logs=0``; the prefix defaults to the job
name.

- lat/clat/slat logs: one line per I/O with its latency in ns and size; the
  simulated submission latency is 0, so clat equals lat and slat is 0.  The
  slat log stays empty for a synchronous engine (psync, the default), as fio
  times submissions only of I/O an engine queues (fio_options.is_async_engine).
- bw log: per I/O, its size over its latency (fio's per-unit bw sample,
  ``bytes * 10^6 / ns``); iops log: per I/O, the value 1.
- With ``log_avg_msec=M``: one line per direction and M-ms window that saw
  I/O, at the window's end: the mean latency (rounded), bandwidth in KiB/s,
  or I/Os per second over the window; the size column is 0, as in fio's
  averaged entries.  A last, partial window: its latency line is stamped
  with the job's end, and it has no bw/iops line (fio 3.33 writes neither a
  rate for less than a full window).
"""
from __future__ import annotations

import os
from typing import Dict, List, Tuple

from . import fio_options as fo
from .fio import JobSpec


class JobLog:
    """Samples of one job clone, kept until the run ends."""

    def __init__(self, spec: JobSpec, number: int):
        self.spec = spec
        self.number = number          # fio's thread_number: 1-based over every clone of every job
        self.samples: List[Tuple[int, int, int, int]] = []   # (ns since job start, latency ns, ddir, bytes)

    def add(self, t_ns: int, lat_ns: int, ddir: int, nbytes: int) -> None:
        self.samples.append((t_ns, lat_ns, ddir, nbytes))

    # -- output --------------------------------------------------------------
    def _tail(self) -> str:
        # the priority is 0 here; fio prints it as 0/1 (real-time class or not), or in full as 0x%04x
        # with log_prio
        prio = ", 0x0000" if self.spec.log_prio else ", 0"
        return (", 0" if self.spec.log_offset else "") + prio

    def _lines_per_io(self, kind: str) -> List[str]:
        tail = self._tail()
        out: List[str] = []
        for t, lat, d, n in self.samples:
            if kind in ("lat", "clat"):
                v = lat
            elif kind == "slat":
                v = 0
            elif kind == "bw":
                v = n * 1_000_000 // lat if lat else 0
            else:
                v = 1
            out.append("%d, %d, %d, %d%s" % (t // 1_000_000, v, d, n, tail))
        return out

    def _lines_avg(self, kind: str, span_ns: int) -> List[str]:
        avg = self.spec.log_avg_msec
        span_ms = span_ns // 1_000_000
        bs = 0            # fio's averaged entries carry no block size
        windows: Dict[Tuple[int, int], List[int]] = {}
        for t, lat, d, n in self.samples:
            # fio counts in whole ms since the job started; the sample that reaches a window's end
            # closes it, so a window holds (k x M, (k + 1) x M] (the first one from 0)
            w = windows.setdefault((max(0, t // 1_000_000 - 1) // avg, d), [0, 0, 0])
            w[0] += 1
            w[1] += lat
            w[2] += n
        tail = self._tail()
        out = []
        for (k, d), (count, lat_sum, nbytes) in sorted(windows.items()):
            end_ms = (k + 1) * avg
            if end_ms > span_ms:                     # the job ended inside this window
                if kind in ("bw", "iops"):
                    continue
                end_ms = span_ms
            if kind in ("lat", "clat"):
                v = int(lat_sum / count + 0.5)
            elif kind == "slat":
                v = 0
            elif kind == "bw":
                v = nbytes * 1000 // avg // 1024
            else:
                v = count * 1000 // avg
            out.append("%d, %d, %d, %d%s" % (end_ms, v, d, bs, tail))
        return out

    def files(self, span_ns: int) -> Dict[str, List[str]]:
        """{file name: lines} this clone writes; ``span_ns``: how long it ran."""
        spec = self.spec
        out: Dict[str, List[str]] = {}
        kinds = []
        if spec.lat_log is not None:
            kinds += [("lat", spec.lat_log), ("clat", spec.lat_log), ("slat", spec.lat_log)]
        if spec.bw_log is not None:
            kinds.append(("bw", spec.bw_log))
        if spec.iops_log is not None:
            kinds.append(("iops", spec.iops_log))
        for kind, prefix in kinds:
            prefix = prefix or spec.name
            name = ("%s_%s.%d.log" % (prefix, kind, self.number) if spec.per_job_logs
                    else "%s_%s.log" % (prefix, kind))
            if kind == "slat" and not fo.is_async_engine(spec.ioengine, spec.iodepth):
                lines: List[str] = []
            else:
                lines = self._lines_avg(kind, span_ns) if spec.log_avg_msec else self._lines_per_io(kind)
            out.setdefault(name, []).extend(lines)
        return out


def wants_log(spec: JobSpec) -> bool:
    return spec.lat_log is not None or spec.bw_log is not None or spec.iops_log is not None


def write_logs(result, directory: str = ".") -> List[str]:
    """Write the logs of every clone that asked for them; the paths written."""
    merged: Dict[str, List[str]] = {}
    for job in result.jobs:
        if job.log is not None:
            for name, lines in job.log.files(job.end_ns - job.start_ns).items():
                merged.setdefault(name, []).extend(lines)
    written = []
    for name, lines in merged.items():
        path = os.path.join(directory, name)
        with open(path, "w") as f:
            f.write("".join(line + "\n" for line in lines))
        written.append(path)
    return written
