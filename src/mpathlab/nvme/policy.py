"""The I/O policy interface of the NVMe stack and the path rules every policy shares.

Every policy lives in its own module, subclasses :class:`IOPolicy` and is
registered by name (:mod:`mpathlab.nvme.registry`).  The head
(:mod:`mpathlab.nvme.head`) knows a policy only through this interface:

- ``find_path(nshead, cpu, node, io)``: the path (an :class:`~mpathlab.nvme.head.NsPath`,
  the kernel's ``struct nvme_ns``) for this I/O, or None;
- ``start_request(ns, io, cpu)`` / ``end_request(ns, io, latency_ns, cpu)``:
  accounting when the I/O is issued on the path and when it completes
  (``cpu`` is the submitting CPU);
- ``clear_current_path(ns)``: forget any cached choice of ``ns`` (failover,
  lost controller);
- ``paths_changed(nshead)``: an ANA change or controller state change happened;
- ``counts_active``: the head counts per-controller in-flight I/O
  (``ctrl->nr_active``) only while a policy that sets this is active.

Shared rules (drivers/nvme/host/multipath.c, 6.1 and current mainline; see
docs/nvme.md for the sources):

- a path is *disabled* when its controller is not live (resetting or
  connecting; a deleting controller still completes I/O), its namespace is
  not ready, or it returned an ANA error and the controller's ANA log has not
  been re-read yet (NVME_NS_ANA_PENDING, 6.1 and 6.12 nvme_path_is_disabled);
- only optimized and non-optimized ANA states carry I/O; inaccessible,
  persistent-loss and change do not;
- ``find_nearest`` is the kernel's full search: the optimized path with the
  smallest NUMA distance from the submitting node (ties: the first in the
  head's list), else the nearest non-optimized one; the winner becomes the
  node's current path.  Distances count only under the numa policy and only
  for controllers with a NUMA node; otherwise every path is at local distance.
- with the proposed FPIN "marginal" handling (PATCH v8 3/8, 2025-07, not
  merged in the trees modelled), an optimized path whose controller is
  marginal competes only as a non-optimized one.
"""
from __future__ import annotations

from typing import Optional

OPTIMIZED = "optimized"
NON_OPTIMIZED = "non-optimized"
INACCESSIBLE = "inaccessible"
PERSISTENT_LOSS = "persistent-loss"
CHANGE = "change"
ANA_STATES = (OPTIMIZED, NON_OPTIMIZED, INACCESSIBLE, PERSISTENT_LOSS, CHANGE)

CTRL_LIVE = "live"
CTRL_RESETTING = "resetting"
CTRL_CONNECTING = "connecting"
CTRL_DELETING = "deleting"
CTRL_DEAD = "dead"

LOCAL_DISTANCE = 10
INT_MAX = 2 ** 31 - 1


class PolicyError(ValueError):
    pass


def path_is_disabled(ns) -> bool:
    state = ns.ctrl.state
    if state != CTRL_LIVE and state != CTRL_DELETING:
        return True
    return ns.ana_pending or not ns.ready


def state_is_live(ana_state: str) -> bool:
    return ana_state == OPTIMIZED or ana_state == NON_OPTIMIZED


def path_is_optimized(ns, marginal_aware: bool) -> bool:
    return (ns.ctrl.state == CTRL_LIVE and ns.ana_state == OPTIMIZED
            and not (marginal_aware and ns.ctrl.marginal))


def find_nearest(nshead, node: int, use_distance: bool, marginal_aware: bool):
    """The kernel's __nvme_find_path: nearest optimized, else nearest non-optimized."""
    found = fallback = None
    found_d = fallback_d = INT_MAX
    host = nshead.host
    for ns in nshead.paths:
        if path_is_disabled(ns):
            continue
        if use_distance and ns.ctrl.numa_node >= 0:
            d = host.distance(node, ns.ctrl.numa_node)
        else:
            d = LOCAL_DISTANCE
        st = ns.ana_state
        if st == OPTIMIZED and not (marginal_aware and ns.ctrl.marginal):
            if d < found_d:
                found_d, found = d, ns
        elif st == OPTIMIZED or st == NON_OPTIMIZED:
            if d < fallback_d:
                fallback_d, fallback = d, ns
    if found is None:
        found = fallback
    if found is not None:
        nshead.current_path[node] = found
    return found


class IOPolicy:
    """One I/O policy.  Subclasses set ``name`` and implement ``find_path``."""

    name = ""
    #: where the policy comes from, shown by `mpathlab nvme-policies`
    origin = ""
    counts_active = False

    def __init__(self, head, params: Optional[dict] = None):
        self.head = head
        self.params = dict(params or {})

    def find_path(self, nshead, cpu: int, node: int, io):
        raise NotImplementedError

    def start_request(self, ns, io, cpu: int) -> None:
        pass

    def end_request(self, ns, io, latency_ns: int, cpu: int) -> None:
        pass

    def clear_current_path(self, ns) -> None:
        pass

    def paths_changed(self, nshead) -> None:
        """An ANA change or a controller state change touched ``nshead`` (the kernel's
        policies need nothing here: nvme_mpath_set_live and the per-I/O checks cover it)."""

    def status(self) -> str:
        return ""
