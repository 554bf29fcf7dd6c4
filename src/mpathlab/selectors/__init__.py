"""Path selectors, bit-faithful models of drivers/md/dm-ps-*.c.

>>> from mpathlab import selectors
>>> ps = selectors.create("queue-length", [], clock=lambda: 0)
>>> ps.add_path("8:16", ["1"]); ps.add_path("8:32", [])
>>> ps.select_path(4096)
'8:16'
"""
from __future__ import annotations

from typing import Sequence

from . import base
from .base import (DM_PS_USE_HR_TIMER, STATUS_IMA, STATUS_INFO, STATUS_TABLE, PathSelector,
                   SelectorError)
from .historical_service_time import HistoricalServiceTime
from .io_affinity import CpuTopology, IOAffinity
from .queue_length import QueueLength
from .registry import ENTRY_POINT_GROUP, RegistryError, get_exact, is_registered, lookup, names, register, unregister
from .round_robin import RoundRobin
from .service_time import ServiceTime

BUILTIN = (RoundRobin, QueueLength, ServiceTime, HistoricalServiceTime, IOAffinity)
for _cls in BUILTIN:
    if not is_registered(_cls.name):  # a re-import must not trip EEXIST
        register(_cls)


class UnknownSelectorError(LookupError):
    pass


def create(name: str, args: Sequence[str] = (), *, accelerated: bool = False, kernel=None,
           **env) -> PathSelector:
    """Create a selector instance by NAME, dm-NAME or dm-ps-NAME.

    ``env`` may hold ``clock`` (callable -> ns, the selector's ktime), and for
    io-affinity ``cpu`` (callable -> current CPU id) and ``topology``.
    ``kernel`` names a profile (mpathlab.profiles, default "current"): a
    selector that release does not have is refused, and HST reads the
    profile's select_path clock.
    ``accelerated=True`` gives the compiled historical-service-time when it
    is built (same behaviour, checked against this reference by the tests).
    Raises UnknownSelectorError or SelectorError.
    """
    cls = lookup(name)
    if cls is None:
        raise UnknownSelectorError("unknown path selector type %r (known: %s)" % (name, ", ".join(names())))
    from ..profiles import DEFAULT_SCHED_CLOCK_LEAD_NS, get_profile
    profile = get_profile(kernel)
    if not profile.has_selector(cls.name):
        raise UnknownSelectorError("unknown path selector type %r (kernel %s does not have it)"
                                   % (name, profile.name))
    if profile.hst_select_clock == "sched_clock" and "select_clock" not in env:
        # HST before the 2022 fix: select_path read sched_clock(), ahead of ktime.
        clock = env.get("clock") or base.default_clock
        env["select_clock"] = lambda: clock() + DEFAULT_SCHED_CLOCK_LEAD_NS
    if accelerated and cls is HistoricalServiceTime:
        from .accelerated import AcceleratedHistoricalServiceTime, available
        if available():
            return AcceleratedHistoricalServiceTime(list(args), **env)
    return cls(list(args), **env)


__all__ = [
    "BUILTIN", "CpuTopology", "DM_PS_USE_HR_TIMER", "ENTRY_POINT_GROUP", "HistoricalServiceTime",
    "IOAffinity", "PathSelector", "QueueLength", "RegistryError", "RoundRobin", "STATUS_IMA",
    "STATUS_INFO", "STATUS_TABLE", "SelectorError", "ServiceTime", "UnknownSelectorError", "create",
    "get_exact", "lookup", "names", "register", "unregister",
]
