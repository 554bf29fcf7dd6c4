"""SPDK bdev_nvme multipath, policy ``active_passive`` (for comparison; not Linux).

SPDK keeps one channel per SPDK thread (here: per submitting CPU), each with
its own path list and cached current path.  Active-passive keeps using the
cached path for every I/O.  Without one (at the start, or after a failure or
an ANA change cleared it) the search starts at the path after the cached one
(the first path when nothing is cached), walks the list once in a circle,
takes the first optimized path it meets, else the first non-optimized one,
and caches it.  An ANA change or a controller reset clears every cache.  Paths whose qpair is not connected or whose namespace is not
accessible are skipped.  Source: spdk module/bdev/nvme/bdev_nvme.c
(bdev_nvme_find_io_path, _bdev_nvme_find_io_path).
"""
from __future__ import annotations

from .policy import NON_OPTIMIZED, OPTIMIZED, IOPolicy, path_is_disabled
from .registry import register


def spdk_walk(paths, start_after):
    """_bdev_nvme_find_io_path: first optimized from the path after ``start_after``, else first non-optimized."""
    n = len(paths)
    if not n:
        return None
    if start_after is not None and start_after not in paths:
        start_after = None
    i0 = (paths.index(start_after) + 1) % n if start_after is not None else 0
    non_opt = None
    for k in range(n):
        ns = paths[(i0 + k) % n]
        if path_is_disabled(ns):
            continue
        if ns.ana_state == OPTIMIZED:
            return ns
        if ns.ana_state == NON_OPTIMIZED and non_opt is None:
            non_opt = ns
    return non_opt


class SpdkBase(IOPolicy):
    """What every SPDK mode shares: the channel's path order (bdev_nvme_set_preferred_path moves a
    controller's path to the head of every channel's io_path_list) and the head's SPDK retry rules
    (``spdk``: no path is -ENXIO, retried 1 s later; see NvmeHead)."""

    spdk = True

    def __init__(self, head, params=None):
        super().__init__(head, params)
        self.front = []       # controllers moved to the head of the list, the latest first
        preferred = self.params.get("preferred")
        if preferred:
            self.front.append(head.by_name[preferred])

    def ordered(self, nshead):
        """The channel's io_path_list: preferred controllers first (latest first), then attach order."""
        if not self.front:
            return nshead.paths
        first = [ns for c in self.front for ns in nshead.paths if ns.ctrl is c]
        return first + [ns for ns in nshead.paths if ns not in first]

    def set_preferred(self, ctrl) -> None:
        """_bdev_nvme_set_preferred_path: to the head of the list; every channel's cached path is
        cleared, even when the path was already first."""
        if ctrl in self.front:
            self.front.remove(ctrl)
        self.front.insert(0, ctrl)
        for h in self.head.nsheads:
            self.paths_changed(h)

    def paths_changed_channel(self, nshead, cpu) -> None:
        """bdev_nvme_clear_current_io_path of one channel (an I/O of that thread failed or found no path)."""


class SpdkPolicy(SpdkBase):
    """Per-thread cached path shared by the SPDK modes."""

    def __init__(self, head, params=None):
        super().__init__(head, params)
        self.current = {}     # (nshead, cpu) -> ns  (nbdev_ch->current_io_path)

    def paths_changed_channel(self, nshead, cpu) -> None:
        self.clear_channel((nshead, cpu))

    def clear_channel(self, key) -> None:
        """bdev_nvme_clear_current_io_path for one channel: the one place a cached path is dropped
        (a mode with more per-channel state resets it here too)."""
        self.current.pop(key, None)

    def clear_current_path(self, ns):
        for key in [k for k, v in self.current.items() if v is ns]:
            self.clear_channel(key)

    def paths_changed(self, nshead):
        # SPDK clears every channel's cached path on an ANA change and after a reset
        for key in [k for k in self.current if k[0] is nshead]:
            self.clear_channel(key)


@register
class SpdkActivePassive(SpdkPolicy):
    name = "spdk-active-passive"
    origin = "SPDK module/bdev/nvme/bdev_nvme.c: multipath policy active_passive"

    def find_path(self, nshead, cpu, node, io):
        key = (nshead, cpu)
        cur = self.current.get(key)
        if cur is not None:
            return cur
        found = spdk_walk(self.ordered(nshead), None)
        if found is not None:
            self.current[key] = found
        return found
