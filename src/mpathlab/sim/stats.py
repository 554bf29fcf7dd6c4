"""Streaming statistics: constant memory whatever the number of I/Os.

:class:`LatencyStats` keeps count/min/max/mean/variance (Welford) and a
log-linear histogram with the same resolution as fio's (64 buckets per
power of two), from which fio's percentiles are read.
"""
from __future__ import annotations

import math
from typing import Dict, List, Sequence

PLAT_BITS = 6
PLAT_VAL = 1 << PLAT_BITS  # buckets per group

FIO_DEFAULT_PERCENTILES = (1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0,
                           99.5, 99.9, 99.95, 99.99)


def _bucket(v: int) -> int:
    """fio's plat_val_to_idx: exact below 64, then 64 buckets per power of 2."""
    if v < PLAT_VAL:
        return v
    msb = v.bit_length() - 1
    error_bits = msb - PLAT_BITS
    base = (error_bits + 1) << PLAT_BITS
    return base + ((v >> error_bits) & (PLAT_VAL - 1))


def bucket_value(idx: int) -> float:
    """Midpoint of a bucket (fio's plat_idx_to_val)."""
    if idx < 2 * PLAT_VAL:
        return idx
    error_bits = (idx >> PLAT_BITS) - 1
    base = 1 << (error_bits + PLAT_BITS)
    k = idx % PLAT_VAL
    return base + ((k + 0.5) * (1 << error_bits))


class LatencyStats:
    __slots__ = ("n", "min", "max", "mean", "_m2", "hist")

    def __init__(self):
        self.n = 0
        self.min = 0
        self.max = 0
        self.mean = 0.0
        self._m2 = 0.0
        self.hist: Dict[int, int] = {}

    def add(self, v: int) -> None:
        n = self.n + 1
        self.n = n
        if n == 1:
            self.min = self.max = v
        elif v < self.min:
            self.min = v
        elif v > self.max:
            self.max = v
        d = v - self.mean
        self.mean += d / n
        self._m2 += d * (v - self.mean)
        b = _bucket(v) if v >= PLAT_VAL else v
        h = self.hist
        h[b] = h.get(b, 0) + 1

    def merge(self, other: "LatencyStats") -> None:
        if not other.n:
            return
        if not self.n:
            self.n, self.min, self.max, self.mean, self._m2 = other.n, other.min, other.max, other.mean, other._m2
            self.hist = dict(other.hist)
            return
        n = self.n + other.n
        d = other.mean - self.mean
        self._m2 += other._m2 + d * d * self.n * other.n / n
        self.mean += d * other.n / n
        self.n = n
        self.min = min(self.min, other.min)
        self.max = max(self.max, other.max)
        for k, c in other.hist.items():
            self.hist[k] = self.hist.get(k, 0) + c

    @property
    def stddev(self) -> float:
        return math.sqrt(self._m2 / (self.n - 1)) if self.n > 1 else 0.0

    def percentiles(self, plist: Sequence[float] = FIO_DEFAULT_PERCENTILES) -> Dict[str, int]:
        """fio's percentile map: {"99.000000": ns, ...} from the histogram."""
        out: Dict[str, int] = {}
        if not self.n:
            return {"%f" % p: 0 for p in plist}
        items = sorted(self.hist.items())
        targets = sorted(plist)
        res = {}
        cum = 0
        ti = 0
        for idx, c in items:
            cum += c
            while ti < len(targets) and cum >= math.ceil(targets[ti] / 100.0 * self.n - 1e-9):
                res[targets[ti]] = int(bucket_value(idx))
                ti += 1
            if ti == len(targets):
                break
        last = int(bucket_value(items[-1][0]))
        for p in plist:
            out["%f" % p] = res.get(p, last)
        return out

    def bins(self) -> Dict[str, int]:
        """fio json+ style bins: {bucket midpoint ns: count}."""
        return {str(int(bucket_value(k))): c for k, c in sorted(self.hist.items())}


# fio's default bw/iops sampling period (bw_avg_time / iops_avg_time, 500 ms).
FIO_AVG_TIME_NS = 500_000_000


def depth_index(depth: int) -> int:
    """fio's io_u_map slot for the job's queue depth just after a submission:
    1, 2-3, 4-7, 8-15, 16-31, 32-63, >=64."""
    return 6 if depth >= 64 else max(0, depth.bit_length() - 1)


_LAT_EDGES = (2, 4, 10, 20, 50, 100, 250, 500, 750, 1000)


def lat_range_index(ns: int) -> int:
    """fio's io_u_mark_latency slot for one I/O's latency, 0..31: ten ns
    ranges below 1 us, ten us ranges below 1 ms, twelve ms ranges (the last
    is >= 2000 ms).  What fio's latency_ns/latency_us/latency_ms report."""
    if ns < 1000:
        v, base = ns, 0
    elif ns < 1_000_000:
        v, base = ns // 1000, 10
    else:
        v = ns // 1_000_000
        if v >= 2000:
            return 31
        if v >= 1000:
            return 30
        base = 20
    for i, e in enumerate(_LAT_EDGES):
        if v < e:
            return base + i
    return base + 9


class RateWindows:
    """Bytes and I/Os completed per fio sampling period (FIO_AVG_TIME_NS)
    since the job started, per direction (0 read, 1 write, 2 trim): what
    fio's bw/iops samples are computed from.  One small list per period
    with I/O in it, so memory grows with neither the number of I/Os nor the
    simulated time (a replayed trace may wait for years between two I/Os)."""

    __slots__ = ("windows",)

    def __init__(self):
        # windows[k] = [read, write, trim bytes, read, write, trim I/Os] of period k
        self.windows: Dict[int, List[int]] = {}

    def add(self, t_rel_ns: int, ddir: int, nbytes: int) -> None:
        k = t_rel_ns // FIO_AVG_TIME_NS
        w = self.windows.get(k)
        if w is None:
            w = self.windows[k] = [0, 0, 0, 0, 0, 0]
        w[ddir] += nbytes
        w[3 + ddir] += 1


def merged_latency(jobs, directions=("read", "write"), burners: bool = False) -> LatencyStats:
    """One LatencyStats over the given directions of several job clones: the
    I/O latency of a run.  A cpuio burner's cycles are not I/O and count only
    with ``burners`` (fio's own report of such a job)."""
    st = LatencyStats()
    for j in jobs:
        if getattr(j, "burner", False) and not burners:
            continue
        for d in directions:
            st.merge(getattr(j, d + "_lat"))
    return st


def mean_abs_deviation(shares: Dict[str, float], best: Dict[str, float]) -> float:
    """Mean over paths of |share - best| (the cover letter's "mean deviation")."""
    keys: List[str] = list(best)
    if not keys:
        return 0.0
    return sum(abs(shares.get(k, 0.0) - best[k]) for k in keys) / len(keys)
