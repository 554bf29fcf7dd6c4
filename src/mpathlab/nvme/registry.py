"""NVMe I/O policies by name (the sysfs ``iopolicy`` names, plus SPDK's modes)."""
from __future__ import annotations

from typing import Dict, List, Optional, Type

from .policy import IOPolicy, PolicyError

_POLICIES: Dict[str, Type[IOPolicy]] = {}


def register(cls: Type[IOPolicy]) -> Type[IOPolicy]:
    if not cls.name:
        raise PolicyError("an NVMe I/O policy needs a name")
    if cls.name in _POLICIES and _POLICIES[cls.name] is not cls:
        raise PolicyError("NVMe I/O policy %r is already registered" % cls.name)
    _POLICIES[cls.name] = cls
    return cls


def lookup(name: str) -> Optional[Type[IOPolicy]]:
    return _POLICIES.get(name)


def names() -> List[str]:
    return list(_POLICIES)


def create(name: str, head, params: Optional[dict] = None) -> IOPolicy:
    cls = lookup(name)
    if cls is None:
        raise PolicyError("unknown NVMe I/O policy %r; known: %s" % (name, ", ".join(names())))
    return cls(head, params)


# The built-ins register themselves when imported and take register() from this module, so they
# are imported last, once, as the selectors package does with its BUILTIN tuple.
from . import (adaptive, numa, queue_depth, round_robin, spdk_active_passive,  # noqa: E402,F401
               spdk_queue_depth, spdk_round_robin)
