"""historical-service-time with its state and decisions in the compiled core.

Same arguments, errors, decisions and status strings as
:class:`~mpathlab.selectors.HistoricalServiceTime` (the pure-Python reference,
which the tests compare it with operation by operation), for users who call a
selector on every I/O from Python.  Get one with
``selectors.create("historical-service-time", args, accelerated=True)``; it
falls back to the reference when the core is not built.
"""
from __future__ import annotations

from ..kernel import U64
from .base import DM_PS_USE_HR_TIMER, STATUS_INFO, STATUS_TABLE, PathSelector, check_status_kind, \
    parse_repeat_count
from .historical_service_time import HistoricalServiceTime, parse_create_args, weights_table

try:
    from .._fastcore import HSTCore
except ImportError:  # pragma: no cover - depends on the build
    HSTCore = None


def available() -> bool:
    return HSTCore is not None


class AcceleratedHistoricalServiceTime(PathSelector):
    name = HistoricalServiceTime.name
    version = HistoricalServiceTime.version
    table_args = HistoricalServiceTime.table_args
    info_args = HistoricalServiceTime.info_args
    features = DM_PS_USE_HR_TIMER
    has_io_hooks = True

    def __init__(self, args=(), *, select_clock=None, **env):
        if HSTCore is None:
            raise RuntimeError("mpathlab._fastcore is not built")
        super().__init__(args, **env)
        self.select_clock = select_clock or self.clock
        base, self.threshold_multiplier = parse_create_args(args)
        self.weights = weights_table(base)
        self._core = HSTCore(list(self.weights), self.threshold_multiplier)
        self._index = {}
        self._paths = []

    @property
    def valid_count(self) -> int:
        return self._core.valid_count

    def add_path(self, path, args=()):
        # validated as the kernel does; like the reference, never used
        parse_repeat_count("historical-service-time ps", args, 1, clamp=False)
        if path in self._index:
            raise ValueError("path %r is already in this %s selector" % (path, self.name))
        self._index[path] = self._core.add()
        self._paths.append(path)

    def _i(self, path) -> int:
        try:
            return self._index[path]
        except KeyError:
            raise KeyError("path %r was never added to this %s selector" % (path, self.name)) from None

    def fail_path(self, path):
        self._core.fail(self._i(path))

    def reinstate_path(self, path):
        self._core.reinstate(self._i(path))
        return 0

    def select_path(self, nr_bytes=0):
        i = self._core.select(self.select_clock() & U64)
        return None if i is None else self._paths[i]

    def start_io(self, path, nr_bytes):
        self._core.start(self._index[path])

    def end_io(self, path, nr_bytes, start_time_ns):
        self._core.end(self._index[path], self.clock() & U64, start_time_ns & U64)

    def status(self, path, kind="info"):
        kind = check_status_kind(kind)
        if path is None:
            return "2 %u %u " % (self.weights[0], self.threshold_multiplier)
        hst, out, stale, _ = self._core.state(self._i(path))
        if kind == STATUS_INFO:
            return "%d %d %d " % (hst, out, stale)
        if kind == STATUS_TABLE:
            return "0 "
        return ""

    def path_state(self, path):
        return self._core.state(self._i(path))

    def paths(self):
        return list(self._paths)

    def valid_order(self):
        return [self._paths[i] for i in self._core.order()]
