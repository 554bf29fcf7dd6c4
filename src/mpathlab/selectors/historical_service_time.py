"""historical-service-time (dm-historical-service-time, HST_VERSION 0.1.1).

Each path keeps a time-weighted exponential moving average of its measured
service time in 10-bit fixed point.  The weight given to history depends on
the size of the new sample (64 buckets of 2^24 ns): big samples replace the
average faster.  A path's estimate for the next I/O is (1 + outstanding) *
average.  A path that has not completed anything for valid_count * average
is *stale*: if idle it is probed with one I/O, if busy and winning it is
limited to equal usage.

The selector asks the multipath core for high-resolution (ktime) start times
on bio-based devices (DM_PS_USE_HR_TIMER).  Its own notion of "now" comes
from the injected clock, which stands for ktime_get_ns().

All arithmetic is emulated at C width: u64 wrap, the signed/unsigned mix in
the compare, st * 1024 computed before the clamp, the shift-by-10 guard at
1024 in-flight I/Os.
"""
from __future__ import annotations

from ..kernel import U64, parse_u32
from .base import (DM_PS_USE_HR_TIMER, STATUS_INFO, STATUS_TABLE, ListSelector, SelectorError,
                   check_status_kind, parse_repeat_count)

HST_FIXED_SHIFT = 10
HST_FIXED_1 = 1 << HST_FIXED_SHIFT
HST_FIXED_MAX = U64 >> HST_FIXED_SHIFT
HST_FIXED_95 = 972
HST_MAX_INFLIGHT = HST_FIXED_1
HST_BUCKET_SHIFT = 24
HST_WEIGHT_COUNT = 64

_S64_SIGN = 1 << 63
_TWO64 = 1 << 64


def fixed_power(x: int, frac_bits: int, n: int) -> int:
    """x**n in fixed point, squaring with round-half-up at every step (u64)."""
    result = 1 << frac_bits
    half = 1 << (frac_bits - 1)
    if n:
        while True:
            if n & 1:
                result = (((result * x) & U64) + half & U64) >> frac_bits
            n >>= 1
            if not n:
                break
            x = (((x * x) & U64) + half & U64) >> frac_bits
    return result


def fixed_ema(last: int, nxt: int, weight: int) -> int:
    """(last*w + next*(1-w)) in 10-bit fixed point, rounded, with u64 wrap."""
    acc = (last * weight) & U64
    acc = (acc + nxt * (HST_FIXED_1 - weight)) & U64
    acc = (acc + (1 << (HST_FIXED_SHIFT - 1))) & U64
    return acc >> HST_FIXED_SHIFT


def weights_table(base: int):
    """weights[i] = base^(i+1) for i < 63 (stored as unsigned int), weights[63] = 0."""
    w = [fixed_power(base, HST_FIXED_SHIFT, i + 1) & 0xFFFFFFFF for i in range(HST_WEIGHT_COUNT - 1)]
    w.append(0)
    return w


def parse_create_args(args):
    """create(): ``[<base_weight> [<threshold_multiplier>]]`` -> (base, threshold).

    The kernel returns a bare -EINVAL on any problem; the core's message is
    "path selector constructor failed".  The detail is ours.
    """
    args = list(args)
    base_weight = HST_FIXED_95
    threshold = 0
    if len(args) > 2:
        raise SelectorError(None, detail="historical-service-time takes at most 2 arguments, got %d" % len(args))
    if args:
        v = parse_u32(args[0])
        if v is None or v >= HST_FIXED_1:
            raise SelectorError(None, detail="base_weight must be an integer in [0, 1024), got %r" % args[0])
        base_weight = v
    if len(args) > 1:
        v = parse_u32(args[1])
        if v is None:
            raise SelectorError(None, detail="threshold_multiplier must be an unsigned integer, got %r" % args[1])
        threshold = v
    return base_weight, threshold


class _HSTPath:
    __slots__ = ("path", "repeat_count", "hst", "outstanding", "stale_after", "last_finish")

    def __init__(self, path, repeat_count):
        self.path = path
        self.repeat_count = repeat_count
        self.hst = HST_FIXED_1          # fixed point: 1 ns
        self.outstanding = 0            # u64
        self.stale_after = 0            # u64, ktime ns
        self.last_finish = 0            # u64, ktime ns


def _sgn64(x: int) -> int:
    """Sign of a value reinterpreted as s64: -1, 0 or 1."""
    x &= U64
    if x == 0:
        return 0
    return -1 if x & _S64_SIGN else 1


class HistoricalServiceTime(ListSelector):
    name = "historical-service-time"
    core_selector = name        # runs in the compiled core (sim/boundary.py)
    version = "0.1.1"
    table_args = 1
    info_args = 3
    features = DM_PS_USE_HR_TIMER
    has_io_hooks = True

    def __init__(self, args=(), *, select_clock=None, **env):
        super().__init__(args, **env)
        # Kernels 5.8 to 5.17 read "now" in select_path from sched_clock()
        # while end_io used ktime_get_ns() (fixed by ce40426fdc3c, 2022).
        # Passing a different select_clock models those kernels.
        self.select_clock = select_clock or self.clock
        base_weight, threshold = parse_create_args(args)
        self.weights = weights_table(base_weight)
        self.threshold_multiplier = threshold
        self.valid_count = 0  # C int, selector-wide

    # -- paths -----------------------------------------------------------
    def add_path(self, path, args=()):
        # repeat_count is parsed but neither clamped nor used nor printed.
        rc = parse_repeat_count("historical-service-time ps", args, 1, clamp=False)
        self._track(path, _HSTPath(path, rc))
        self.valid_count += 1

    def fail_path(self, path):
        super().fail_path(path)
        self.valid_count -= 1

    def reinstate_path(self, path):
        super().reinstate_path(path)
        self.valid_count += 1
        return 0

    # -- selection -------------------------------------------------------
    def compare(self, pi1, pi2, now: int) -> int:
        """Sign of hst_compare(pi1=candidate, pi2=best): < 0 means pi1 is better."""
        hst1 = pi1.hst
        hst2 = pi2.hst
        out1 = pi1.outstanding
        out2 = pi2.outstanding
        stale1 = pi1.stale_after
        stale2 = pi2.stale_after
        thr = self.threshold_multiplier
        # 1. Too similar to tell apart: compare outstanding only.
        if hst1 > hst2:
            over = hst1 > ((thr * hst2) & U64)
        else:
            over = hst2 > ((thr * hst1) & U64)
        if not over:
            return _sgn64(out1 - out2)
        # 2. An idle stale path is probed; of two idle paths the staler wins.
        #    (stale vs now is an unsigned compare in C.)
        if (not out1 and stale1 < now) or (not out2 and stale2 < now) or (not out1 and not out2):
            return _sgn64((stale1 if not out2 else 0) - (stale2 if not out1 else 0))
        # 3. Estimated service time (1 + outstanding) * hst.
        if out1 == out2:
            pi2_better = hst1 > hst2
        else:
            if out1 >= HST_MAX_INFLIGHT or out2 >= HST_MAX_INFLIGHT:
                hst1 >>= HST_FIXED_SHIFT
                hst2 >>= HST_FIXED_SHIFT
            pi2_better = (((1 + out1) * hst1) & U64) > (((1 + out2) * hst2) & U64)
        # 4. A stale winner is limited to equal usage.
        if pi2_better:
            if stale2 < now:
                return _sgn64(out1 - out2)
            return 1
        if stale1 < now:
            return _sgn64(out1 - out2)
        return -1

    def select_path(self, nr_bytes=0):
        valid = self._valid
        if not valid:
            return None
        now = self.select_clock() & U64
        best = valid[0]
        best_i = 0
        compare = self.compare
        for i in range(1, len(valid)):
            if compare(valid[i], best, now) < 0:
                best = valid[i]
                best_i = i
        # Move the last used path to the end (least preferred on ties).
        del valid[best_i]
        valid.append(best)
        return best.path

    # -- accounting -------------------------------------------------------
    def start_io(self, path, nr_bytes):
        pi = self._info[path]
        pi.outstanding = (pi.outstanding + 1) & U64

    def end_io(self, path, nr_bytes, start_time_ns):
        pi = self._info[path]
        now = self.clock() & U64
        start = start_time_ns & U64
        last = pi.last_finish
        # A previous I/O finished after this one started: pretend the
        # submission happened serially (time_after64(last_finish, start)).
        if (start - last) & U64 & _S64_SIGN:
            start = last
        pi.last_finish = now
        d = (now - start) & U64
        st = 0 if d & _S64_SIGN else d
        pi.outstanding = (pi.outstanding - 1) & U64
        sample = (st << HST_FIXED_SHIFT) & U64
        if sample > HST_FIXED_MAX:
            sample = HST_FIXED_MAX
        bucket = st >> HST_BUCKET_SHIFT
        weight = self.weights[bucket if bucket < HST_WEIGHT_COUNT else HST_WEIGHT_COUNT - 1]
        hst = (((pi.hst * weight) & U64) + sample * (HST_FIXED_1 - weight)) & U64
        hst = ((hst + 512) & U64) >> HST_FIXED_SHIFT
        pi.hst = hst
        pi.stale_after = (now + (self.valid_count & U64) * (hst >> HST_FIXED_SHIFT)) & U64

    # -- status -----------------------------------------------------------
    def status(self, path, kind="info"):
        kind = check_status_kind(kind)
        if path is None:
            # The PG-level line ignores the status type.
            return "2 %u %u " % (self.weights[0], self.threshold_multiplier)
        pi = self.path_info(path)
        if kind == STATUS_INFO:
            return "%d %d %d " % (pi.hst, pi.outstanding, pi.stale_after)
        if kind == STATUS_TABLE:
            return "0 "
        return ""

    def path_state(self, path):
        """(hst, outstanding, stale_after, last_finish) of one path, raw."""
        pi = self.path_info(path)
        return pi.hst, pi.outstanding, pi.stale_after, pi.last_finish
