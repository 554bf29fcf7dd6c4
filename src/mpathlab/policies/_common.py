"""Pieces the policies share: per-path accounting and argument parsing."""
from __future__ import annotations

import random

from ..kernel import parse_u32
from ..selectors.base import (DM_PS_USE_HR_TIMER, STATUS_INFO, STATUS_TABLE, ListSelector, SelectorError,
                              check_status_kind, parse_repeat_count)

__all__ = ["PolicyPath", "PolicySelector", "SelectorError", "parse_u32_arg", "DM_PS_USE_HR_TIMER"]


class PolicyPath:
    """Per-path state every policy keeps (what dm's start_io/end_io can see)."""

    __slots__ = ("path", "repeat_count", "outstanding", "in_flight_size", "est", "est_at", "samples", "lat",
                 "last_finish")

    def __init__(self, path, repeat_count):
        self.path = path
        self.repeat_count = repeat_count
        self.outstanding = 0        # I/Os mapped and not yet ended
        self.in_flight_size = 0     # their bytes
        self.est = 0.0              # the policy's estimate (latency ns, or rate), 0 = none yet
        self.est_at = 0             # ktime of the last estimate update
        self.samples = 0            # completions seen
        self.lat = 0.0              # EWMA (weight 1/8) of per-I/O latency, ns
        self.last_finish = 0        # ktime of the last completion


def parse_u32_arg(name: str, what: str, text: str, lo: int = 0, hi: int = 0xFFFFFFFF) -> int:
    v = parse_u32(text)
    if v is None or not lo <= v <= hi:
        raise SelectorError("%s ps: invalid %s" % (name, what),
                            detail="%s must be an integer in [%d, %d], got %r" % (what, lo, hi, text))
    return v


class PolicySelector(ListSelector):
    """Valid/failed lists, outstanding and in-flight bytes, the kernel's tail rotation.

    Subclasses set ``name``, parse their own table arguments in
    ``__init__`` (kept in ``self.args`` for the TABLE status), implement
    ``select_path`` and may extend ``end_io``.
    """

    table_args = 1            # per-path: [repeat_count], parsed and ignored as QL does
    info_args = 2             # per-path INFO: outstanding and the policy's estimate
    has_io_hooks = True
    features = DM_PS_USE_HR_TIMER   # latency samples need ktime start stamps on bio-based devices
    max_args = 0

    def __init__(self, args=(), *, rng=None, **env):
        super().__init__(args, **env)
        self.args = [str(a) for a in args]
        if len(self.args) > self.max_args:
            raise SelectorError("%s ps: incorrect number of arguments" % self.name,
                                detail="takes at most %d, got %d" % (self.max_args, len(self.args)))
        # The simulator hands every selector one seeded stream; elsewhere
        # (live mode, the API) a fixed seed keeps runs repeatable.
        self.rng = rng if rng is not None else random.Random(0)

    def add_path(self, path, args=()):
        rc = parse_repeat_count("%s ps" % self.name, args, 1, clamp=True, warn=self.dm_warn)
        self._track(path, PolicyPath(path, rc))

    def _choose(self, best):
        """Rotate the winner to the tail (ties spread as in QL/ST/HST) and return it."""
        self._valid.remove(best)
        self._valid.append(best)
        return best.path

    def start_io(self, path, nr_bytes):
        pi = self._info[path]
        pi.outstanding += 1
        pi.in_flight_size += nr_bytes

    def end_io(self, path, nr_bytes, start_time_ns):
        pi = self._info[path]
        pi.outstanding -= 1
        pi.in_flight_size -= nr_bytes
        pi.samples += 1
        now = self.clock()
        lat = max(0, now - start_time_ns)
        pi.lat = lat if pi.samples == 1 else pi.lat + (lat - pi.lat) / 8.0
        pi.last_finish = now

    def is_stale(self, pi, now: int) -> bool:
        """HST's probing rule: an idle path that has completed nothing for
        (number of valid paths) x its mean latency is due for a probe, so an
        estimate that turned pessimistic is measured again, not kept forever."""
        return pi.samples > 0 and not pi.outstanding and now > pi.last_finish + len(self._valid) * pi.lat

    def status(self, path, kind="info"):
        kind = check_status_kind(kind)
        if path is None:
            return "%d %s" % (len(self.args), "".join(a + " " for a in self.args))
        pi = self.path_info(path)
        if kind == STATUS_INFO:
            return "%d %d " % (pi.outstanding, int(pi.est))
        if kind == STATUS_TABLE:
            return "%u " % pi.repeat_count
        return ""
