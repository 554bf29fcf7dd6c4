"""iopolicy ``queue-depth`` (merged in 6.11; absent from 6.1).

Every I/O goes to the usable path whose *controller* has the fewest I/Os in
flight (``ctrl->nr_active``), optimized paths before non-optimized ones; the
scan stops early at an optimized path with nothing in flight; ties go to the
first path in the head's list.  The count is per controller, so I/O to every
namespace reached through that controller counts, and it is kept only for
requests started while this policy is active (a request is marked when it is
counted, and only marked requests are uncounted at completion, never below
zero).  No cached state: the choice is made afresh for every I/O.

With the proposed marginal handling (the same v8 series, 2025-07, a patch
Hannes Reinecke questioned on the list), paths on marginal controllers are
left out of the scan; when that leaves nothing, the full search
(``find_nearest``, at local distance) picks a path, marginal or not.
"""
from __future__ import annotations

from .policy import NON_OPTIMIZED, OPTIMIZED, IOPolicy, find_nearest, path_is_disabled
from .registry import register


@register
class QueueDepth(IOPolicy):
    name = "queue-depth"
    origin = "linux drivers/nvme/host/multipath.c (mainline, since 6.11): nvme_queue_depth_path"
    counts_active = True

    def find_path(self, nshead, cpu, node, io):
        best_opt = best_nonopt = None
        min_opt = min_nonopt = 2 ** 32 - 1
        marginal = self.head.marginal_aware
        for ns in nshead.paths:
            if path_is_disabled(ns) or (marginal and ns.ctrl.marginal):
                continue
            depth = ns.ctrl.nr_active
            if ns.ana_state == OPTIMIZED:
                if depth < min_opt:
                    min_opt, best_opt = depth, ns
            elif ns.ana_state == NON_OPTIMIZED:
                if depth < min_nonopt:
                    min_nonopt, best_nonopt = depth, ns
            if min_opt == 0:
                return best_opt
        found = best_opt if best_opt is not None else best_nonopt
        if found is None and marginal:
            return find_nearest(nshead, node, False, True)
        return found
