"""Path grouping policies: one file each, registered by name (pgpolicies.c).

A policy is a function ``group(paths) -> [[path, ...], ...]`` returning the path groups
in the order it builds them; :func:`mpathlab.mtools.maps.sort_groups` then orders them
by priority as sort_pathgroups does.
"""
from __future__ import annotations

from typing import Callable, Dict, List

_REGISTRY: Dict[str, Callable] = {}


def register(name: str):
    def deco(fn):
        _REGISTRY[name] = fn
        return fn
    return deco


def lookup(name: str) -> Callable:
    return _REGISTRY[name]


def names() -> List[str]:
    return sorted(_REGISTRY)


def group_by_match(paths, same) -> List[list]:
    """One group per distinct value: walk the paths in order; each path not yet placed
    opens a group and pulls in every later unplaced path that matches it
    (group_by_match)."""
    placed = [False] * len(paths)
    groups = []
    for i, p in enumerate(paths):
        if placed[i]:
            continue
        g = [p]
        placed[i] = True
        for j in range(i + 1, len(paths)):
            if not placed[j] and same(p, paths[j]):
                g.append(paths[j])
                placed[j] = True
        groups.append(g)
    return groups


# The built-ins register themselves when imported and take register() from this module, so they
# are imported last, once, as the selectors package does with its BUILTIN tuple.
from . import (failover, group_by_node_name, group_by_prio, group_by_serial,  # noqa: E402,F401
               group_by_tpg, multibus)
