"""queue-length (dm-queue-length, QL_VERSION 0.2.0).

Choose the valid path with the fewest in-flight I/Os; the first idle path in
list order wins at once (early exit).  The winner rotates to the tail, so
ties spread evenly.
"""
from __future__ import annotations


from ..kernel import s32
from .base import STATUS_INFO, STATUS_TABLE, ListSelector, check_status_kind, parse_repeat_count


class _QLPath:
    __slots__ = ("path", "repeat_count", "qlen")

    def __init__(self, path, repeat_count):
        self.path = path
        self.repeat_count = repeat_count
        self.qlen = 0  # atomic_t: a 32-bit signed counter


class QueueLength(ListSelector):
    name = "queue-length"
    core_selector = name        # runs in the compiled core (sim/boundary.py)
    version = "0.2.0"
    table_args = 1
    info_args = 1
    has_io_hooks = True

    def add_path(self, path, args=()):
        rc = parse_repeat_count("queue-length ps", args, 1, clamp=True, warn=self.dm_warn)
        self._track(path, _QLPath(path, rc))

    def select_path(self, nr_bytes=0):
        valid = self._valid
        if not valid:
            return None
        best = None
        best_i = 0
        for i, pi in enumerate(valid):
            if best is None or pi.qlen < best.qlen:
                best = pi
                best_i = i
            if best.qlen == 0:
                break
        del valid[best_i]
        valid.append(best)
        return best.path

    def start_io(self, path, nr_bytes):
        pi = self._info[path]
        pi.qlen = s32(pi.qlen + 1)

    def end_io(self, path, nr_bytes, start_time_ns):
        pi = self._info[path]
        pi.qlen = s32(pi.qlen - 1)

    def status(self, path, kind="info"):
        kind = check_status_kind(kind)
        if path is None:
            return "0 "
        pi = self.path_info(path)
        if kind == STATUS_INFO:
            return "%d " % pi.qlen
        if kind == STATUS_TABLE:
            return "%u " % pi.repeat_count
        return ""

    def in_flight(self, path) -> int:
        return self.path_info(path).qlen
