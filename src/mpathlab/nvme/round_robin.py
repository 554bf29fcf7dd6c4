"""iopolicy ``round-robin``.

Rotation is per NUMA node: each node keeps its own current path.  Without
one, the full search picks the first optimized path in the head's list (all
distances count as local under this policy).  Otherwise the paths after the
current one are walked in list order, wrapping around and stopping before
the current path:

- the first optimized path met ends the walk and becomes current;
- every non-optimized path met is remembered, a later one replacing an
  earlier one, so when no optimized path is found the *last* non-optimized
  path of the walk wins (with three non-optimized paths A, B, C the order is
  A, C, B, A, ... rather than A, B, C);
- if the walk found no other optimized path and the current path is still
  optimized (and usable), the current path is kept; likewise a usable
  non-optimized current path is kept when the walk found nothing usable.

With one path in the head the current path is used while it is usable.
Same code in 6.1 and mainline.  With the proposed marginal handling, an
optimized path on a marginal controller is remembered like a non-optimized
one instead of ending the walk.
"""
from __future__ import annotations

from .policy import NON_OPTIMIZED, OPTIMIZED, IOPolicy, find_nearest, path_is_disabled
from .registry import register


@register
class RoundRobin(IOPolicy):
    name = "round-robin"
    origin = "linux drivers/nvme/host/multipath.c (6.1 and mainline): nvme_round_robin_path"

    def find_path(self, nshead, cpu, node, io):
        marginal = self.head.marginal_aware
        old = nshead.current_path.get(node)
        if old is None:
            return find_nearest(nshead, node, False, marginal)
        paths = nshead.paths
        if len(paths) == 1:
            return None if path_is_disabled(old) else old
        found = None
        i = paths.index(old)
        n = len(paths)
        for k in range(1, n):
            ns = paths[(i + k) % n]
            if path_is_disabled(ns):
                continue
            if ns.ana_state == OPTIMIZED:
                found = ns
                if not (marginal and ns.ctrl.marginal):
                    nshead.current_path[node] = found
                    return found
            elif ns.ana_state == NON_OPTIMIZED:
                found = ns
        # the patch leaves this fallback alone: a marginal current path that is
        # optimized is kept when the walk met no healthy optimized path
        if not path_is_disabled(old) and (
                old.ana_state == OPTIMIZED or (found is None and old.ana_state == NON_OPTIMIZED)):
            return old
        if found is None:
            return None
        nshead.current_path[node] = found
        return found
