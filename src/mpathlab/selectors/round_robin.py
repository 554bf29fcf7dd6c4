"""round-robin (dm-round-robin, RR_VERSION 1.2.0).

Take the head of the valid list, rotate it to the tail.  repeat_count is
parsed and clamped to 1 but never used: the core consults the selector for
every I/O.  A reinstated path goes to the *head* of the valid list, so it is
chosen next (queue-length/service-time/HST put it at the tail instead).
"""
from __future__ import annotations


from .base import STATUS_TABLE, ListSelector, check_status_kind, parse_repeat_count


class _RRPath:
    __slots__ = ("path", "repeat_count")

    def __init__(self, path, repeat_count):
        self.path = path
        self.repeat_count = repeat_count


class RoundRobin(ListSelector):
    name = "round-robin"
    core_selector = name        # runs in the compiled core (sim/boundary.py)
    version = "1.2.0"
    table_args = 1
    info_args = 0

    # create() accepts and ignores any arguments; _failed is the kernel's invalid_paths.

    def add_path(self, path, args=()):
        rc = parse_repeat_count("round-robin ps", args, 1, clamp=True, warn=self.dm_warn)
        self._track(path, _RRPath(path, rc))

    def reinstate_path(self, path):
        # list_move: the head of the valid list, unlike QL/ST/HST.
        self._move(self.path_info(path), self._valid, to_head=True)
        return 0

    def select_path(self, nr_bytes=0):
        valid = self._valid
        if not valid:
            return None
        pi = valid.pop(0)
        valid.append(pi)
        return pi.path

    def status(self, path, kind="info"):
        kind = check_status_kind(kind)
        if path is None:
            return "0 "
        pi = self.path_info(path)
        if kind == STATUS_TABLE:
            return "%u " % pi.repeat_count
        return ""
