"""iopolicy ``numa`` (the kernel's default).

Each NUMA node of the host caches a current path per namespace head.  An I/O
submitted on a node reuses that node's current path as long as it is still
optimized and its controller live; otherwise the full search runs
(``find_nearest``): the optimized path whose controller is closest to the node
by NUMA distance, else the closest non-optimized one, and its result becomes
the node's new current path.  Nothing about load enters the choice, so every
I/O from one node goes down one path until that path stops being optimized.
Controllers without a NUMA node (NUMA_NO_NODE, typical of TCP) are all at
local distance, so the first usable path in the head's list wins everywhere.
Same behaviour in 6.1 and current mainline.
"""
from __future__ import annotations

from .policy import IOPolicy, find_nearest, path_is_optimized
from .registry import register


@register
class Numa(IOPolicy):
    name = "numa"
    origin = "linux drivers/nvme/host/multipath.c (6.1 and mainline): nvme_numa_path"

    def find_path(self, nshead, cpu, node, io):
        ns = nshead.current_path.get(node)
        marginal = self.head.marginal_aware
        if ns is None or not path_is_optimized(ns, marginal):
            return find_nearest(nshead, node, True, marginal)
        return ns
