"""service-time (dm-service-time, ST_VERSION 0.3.0).

Estimate each path's service time as (bytes in flight + this I/O) divided by
its static relative throughput, and choose the smallest.  Despite its name it
measures nothing: the estimate comes from in-flight bytes only.

Bit-faithful details kept here: in_flight_size is a 32-bit signed atomic, the
compare is done in 64-bit unsigned arithmetic and its result is truncated to a
C ``int`` (so the sign of huge differences can flip), and both sizes are
shifted right by 7 when either reaches ST_MAX_INFLIGHT_SIZE.
"""
from __future__ import annotations


from ..kernel import U32, U64, parse_u32, s32
from .base import (STATUS_INFO, STATUS_TABLE, ListSelector, SelectorError, check_status_kind,
                   parse_repeat_count)


ST_MAX_RELATIVE_THROUGHPUT = 100
ST_MAX_RELATIVE_THROUGHPUT_SHIFT = 7
ST_MAX_INFLIGHT_SIZE = U64 >> ST_MAX_RELATIVE_THROUGHPUT_SHIFT  # SIZE_MAX >> 7 on 64-bit


class _STPath:
    __slots__ = ("path", "repeat_count", "relative_throughput", "in_flight_size")

    def __init__(self, path, repeat_count, relative_throughput):
        self.path = path
        self.repeat_count = repeat_count
        self.relative_throughput = relative_throughput
        self.in_flight_size = 0  # atomic_t (signed 32-bit), bytes


def st_compare_load(pi1, pi2, incoming: int) -> int:
    """Negative when pi1 (the candidate) is better than pi2 (the best so far)."""
    # atomic_read() gives an int; assigning it to size_t sign-extends.
    sz1 = pi1.in_flight_size & U64
    sz2 = pi2.in_flight_size & U64
    rt1 = pi1.relative_throughput
    rt2 = pi2.relative_throughput
    if rt1 == rt2:
        return s32((sz1 - sz2) & U64)
    if sz1 == sz2 or rt1 == 0 or rt2 == 0:
        return s32((rt2 - rt1) & U32)
    sz1 = (sz1 + incoming) & U64
    sz2 = (sz2 + incoming) & U64
    if sz1 >= ST_MAX_INFLIGHT_SIZE or sz2 >= ST_MAX_INFLIGHT_SIZE:
        sz1 >>= ST_MAX_RELATIVE_THROUGHPUT_SHIFT
        sz2 >>= ST_MAX_RELATIVE_THROUGHPUT_SHIFT
    st1 = (sz1 * rt2) & U64
    st2 = (sz2 * rt1) & U64
    if st1 != st2:
        return s32((st1 - st2) & U64)
    return s32((rt2 - rt1) & U32)


class ServiceTime(ListSelector):
    name = "service-time"
    core_selector = name        # runs in the compiled core (sim/boundary.py)
    version = "0.3.0"
    table_args = 2
    info_args = 2
    has_io_hooks = True

    def add_path(self, path, args=()):
        args = list(args)
        rc = parse_repeat_count("service-time ps", args, 2, clamp=True, warn=self.dm_warn)
        rt = 1
        if len(args) == 2:
            v = parse_u32(args[1])
            if v is None or v > ST_MAX_RELATIVE_THROUGHPUT:
                raise SelectorError("service-time ps: invalid relative_throughput value")
            rt = v
        self._track(path, _STPath(path, rc, rt))

    def select_path(self, nr_bytes=0):
        valid = self._valid
        if not valid:
            return None
        best = valid[0]
        best_i = 0
        # No early exit: every path is compared; ties keep the earlier one.
        for i in range(1, len(valid)):
            pi = valid[i]
            if st_compare_load(pi, best, nr_bytes) < 0:
                best = pi
                best_i = i
        del valid[best_i]
        valid.append(best)
        return best.path

    def start_io(self, path, nr_bytes):
        pi = self._info[path]
        pi.in_flight_size = s32(pi.in_flight_size + nr_bytes)

    def end_io(self, path, nr_bytes, start_time_ns):
        pi = self._info[path]
        pi.in_flight_size = s32(pi.in_flight_size - nr_bytes)

    def status(self, path, kind="info"):
        kind = check_status_kind(kind)
        if path is None:
            return "0 "
        pi = self.path_info(path)
        if kind == STATUS_INFO:
            return "%d %u " % (pi.in_flight_size, pi.relative_throughput)
        if kind == STATUS_TABLE:
            return "%u %u " % (pi.repeat_count, pi.relative_throughput)
        return ""

    def in_flight(self, path) -> int:
        return self.path_info(path).in_flight_size
