"""Prioritizers: one file each, registered by name, one interface.

A prioritizer is a class with ``name`` and ``getprio(path, args, env) -> int``, as
multipath-tools' ``prio_getprio``: ``path`` is a :class:`~mpathlab.mtools.paths.Path`
(its ALUA state, name, H:C:T:L, serial, its device model), ``args`` the ``prio_args``
string and ``env`` a :class:`PrioEnv` (the random stream and latency sampler of the
simulation).  A negative return is an error (the caller keeps the old priority or marks
it undefined, as get_prio does).
"""
from __future__ import annotations

import random
from typing import Callable, Dict, List, Optional

PRIO_UNDEF = -1

_REGISTRY: Dict[str, type] = {}


class Prioritizer:
    name = ""

    def getprio(self, path, args: str, env: "PrioEnv") -> int:
        raise NotImplementedError


class PrioEnv:
    """What a prioritizer may use besides the path: a seeded random stream and, for
    path_latency, a sampler of one read's latency on a path (ns)."""

    def __init__(self, seed: int = 1, read_latency_ns: Optional[Callable] = None):
        self.rng = random.Random(seed)
        self.read_latency_ns = read_latency_ns


def register(cls: type) -> type:
    _REGISTRY[cls.name] = cls
    return cls


def lookup(name: str) -> Optional[type]:
    return _REGISTRY.get(name)


def names() -> List[str]:
    return sorted(_REGISTRY)


class Unknown(Prioritizer):
    """A prioritizer multipath cannot load: every priority is undefined."""
    name = "(unknown)"

    def getprio(self, path, args, env):
        return PRIO_UNDEF


def create(name: str) -> Prioritizer:
    cls = lookup(name)
    if cls is None:
        return Unknown()
    return cls()


def exclusive_pref_arg(args: str) -> bool:
    """"exclusive_pref_bit" as a whole word of the args (alua and sysfs prioritizers)."""
    return "exclusive_pref_bit" in (args or "").replace("\t", " ").split(" ")


# The built-ins register themselves when imported and take register() from this module, so they
# are imported last, once, as the selectors package does with its BUILTIN tuple.
from . import alua, array, const, path_latency, random_prio, sysfs, weightedpath  # noqa: E402,F401
