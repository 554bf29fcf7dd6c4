"""SPDK bdev_nvme, policy ``active_active`` with selector ``round_robin`` (for comparison).

Per SPDK thread (here: per submitting CPU): the cached path is reused until
``rr_min_io`` I/Os (default 1) have gone to it — the counter is bumped before
the comparison, so the path actually takes ``rr_min_io`` I/Os in a row — then
the counter restarts and the walk starts at the path after the cached one:
first optimized path met, else the first non-optimized one, which is cached.
Source: spdk module/bdev/nvme/bdev_nvme.c (bdev_nvme_find_io_path).
"""
from __future__ import annotations

from .policy import PolicyError
from .registry import register
from .spdk_active_passive import SpdkPolicy, spdk_walk


@register
class SpdkRoundRobin(SpdkPolicy):
    name = "spdk-round-robin"
    origin = "SPDK module/bdev/nvme/bdev_nvme.c: active_active, selector round_robin (rr_min_io)"

    def __init__(self, head, params=None):
        super().__init__(head, params)
        self.rr_min_io = int(self.params.get("rr_min_io", 1))
        if self.rr_min_io < 1:
            raise PolicyError("rr_min_io must be at least 1")
        self.rr_counter = {}

    def find_path(self, nshead, cpu, node, io):
        key = (nshead, cpu)
        cur = self.current.get(key)
        if cur is not None:
            c = self.rr_counter.get(key, 0) + 1
            if c < self.rr_min_io:
                self.rr_counter[key] = c
                return cur
            self.rr_counter[key] = 0
        found = spdk_walk(self.ordered(nshead), cur)
        if found is not None:
            self.current[key] = found
        else:
            self.current.pop(key, None)
        return found

    def clear_channel(self, key):
        # SPDK zeroes rr_counter with the cached path (on failover, ANA change and reset alike)
        super().clear_channel(key)
        self.rr_counter[key] = 0
