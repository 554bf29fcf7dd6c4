"""A third-party path selector for mpathlab: "shortest-queue-tail".

Like queue-length, but ties go to the path that was idle the longest.  Register
it through an entry point (see the README) or call register(ShortestQueueTail).
"""
from mpathlab.selectors import register
from mpathlab.selectors.base import STATUS_INFO, ListSelector, check_status_kind, parse_repeat_count


class _Path:
    __slots__ = ("path", "inflight", "idle_since")

    def __init__(self, path):
        self.path, self.inflight, self.idle_since = path, 0, 0


class ShortestQueueTail(ListSelector):
    name = "shortest-queue-tail"
    version = "0.1.0"
    table_args = 1          # per-path args printed in TABLE status
    info_args = 1           # per-path fields printed in INFO status
    has_io_hooks = True     # the core calls start_io/end_io

    def add_path(self, path, args=()):
        parse_repeat_count("shortest-queue-tail ps", args, 1, clamp=True)
        self._track(path, _Path(path))

    def select_path(self, nr_bytes=0):
        if not self._valid:
            return None
        best = min(self._valid, key=lambda p: (p.inflight, p.idle_since))
        return best.path

    def start_io(self, path, nr_bytes):
        self._info[path].inflight += 1

    def end_io(self, path, nr_bytes, start_time_ns):
        p = self._info[path]
        p.inflight -= 1
        if not p.inflight:
            p.idle_since = self.clock()

    def status(self, path, kind="info"):
        kind = check_status_kind(kind)
        if path is None:
            return "0 "
        p = self.path_info(path)
        return ("%d " % p.inflight) if kind == STATUS_INFO else ("1 " if kind == "table" else "")


if __name__ == "__main__":
    register(ShortestQueueTail)
