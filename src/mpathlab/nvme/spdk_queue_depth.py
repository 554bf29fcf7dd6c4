"""SPDK bdev_nvme, policy ``active_active`` with selector ``queue_depth`` (for comparison).

Every I/O goes to the path whose qpair *of the submitting SPDK thread* has the
fewest outstanding requests, optimized paths before non-optimized ones, ties
to the first in the list; the result is not cached.  Unlike the kernel's
queue-depth, the count is per thread and per controller qpair, so I/O from
other threads (CPUs) is invisible to the choice.
Source: spdk module/bdev/nvme/bdev_nvme.c (_bdev_nvme_find_io_path_min_qd).
"""
from __future__ import annotations

from .policy import NON_OPTIMIZED, OPTIMIZED, path_is_disabled
from .registry import register
from .spdk_active_passive import SpdkBase


@register
class SpdkQueueDepth(SpdkBase):
    name = "spdk-queue-depth"
    origin = "SPDK module/bdev/nvme/bdev_nvme.c: active_active, selector queue_depth"

    def __init__(self, head, params=None):
        super().__init__(head, params)
        self.outstanding = {}   # (cpu, ctrl) -> requests outstanding on that thread's qpair

    def find_path(self, nshead, cpu, node, io):
        opt = non_opt = None
        opt_min = non_min = 2 ** 32 - 1
        for ns in self.ordered(nshead):
            if path_is_disabled(ns):
                continue
            q = self.outstanding.get((cpu, ns.ctrl), 0)
            if ns.ana_state == OPTIMIZED:
                if q < opt_min:
                    opt_min, opt = q, ns
            elif ns.ana_state == NON_OPTIMIZED:
                if q < non_min:
                    non_min, non_opt = q, ns
        return opt if opt is not None else non_opt

    def start_request(self, ns, io, cpu):
        key = (cpu, ns.ctrl)
        self.outstanding[key] = self.outstanding.get(key, 0) + 1

    def end_request(self, ns, io, latency_ns, cpu):
        key = (cpu, ns.ctrl)
        self.outstanding[key] -= 1
