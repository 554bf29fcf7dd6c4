"""The kernel's own path-selector C code, run inside mpathlab.

    >>> from mpathlab import kernelc
    >>> cls = kernelc.load("/usr/src/linux/drivers/md/dm-ps-service-time.c")   # doctest: +SKIP
    >>> ps = cls([], clock=lambda: 0)                                            # doctest: +SKIP

A C selector is named ``c:PATH`` (optionally ``c:PATH@features=N`` and/or
``@fault=NAME``); that name works wherever a selector name does: table lines,
``--selector``, sweeps, reports.  The file is compiled on first use (cached,
see :mod:`.build`) against mpathlab's shim, never copied into mpathlab.
"""
from __future__ import annotations

import os
from typing import Optional, Sequence, Tuple

from ..selectors import registry
from .build import SHIM_FAULTS, Built, BuildError, build, cache_dir

PREFIX = "c:"


def parse_name(name: str) -> Tuple[str, Optional[int], Tuple[str, ...]]:
    """'c:PATH[@features=N][@fault=NAME]' -> (absolute path, features, faults)."""
    if not name.startswith(PREFIX):
        raise BuildError("a C selector name starts with %r, not %r" % (PREFIX, name))
    path, *opts = name[len(PREFIX):].split("@")
    if not path:
        raise BuildError("C selector %r names no file" % name)
    features = None
    faults = []
    for opt in opts:
        key, sep, val = opt.partition("=")
        if key == "features" and sep:
            try:
                features = int(val, 0)
            except ValueError:
                raise BuildError("C selector %r: features must be a number, not %r" % (name, val)) from None
        elif key == "fault" and sep:
            faults.append(val)
        else:
            raise BuildError("C selector %r: unknown option %r (features=N, fault=NAME)" % (name, opt))
    return os.path.abspath(os.path.expanduser(path)), features, tuple(faults)


def canonical_name(path: str, features: Optional[int] = None, shim_faults: Sequence[str] = ()) -> str:
    name = PREFIX + os.path.abspath(path)
    if any(c.isspace() for c in name):
        raise BuildError("%s: a C selector's path cannot contain white space (it goes into table lines)" % path)
    if features is not None:
        name += "@features=%d" % features
    for f in shim_faults:
        name += "@fault=%s" % f
    return name


def load(path: str, *, features: Optional[int] = None, shim_faults: Sequence[str] = ()):
    """Build (or reuse) and register the C selector in ``path``; returns its type."""
    from .selector import selector_class

    name = canonical_name(path, features, shim_faults)
    return registry.register_once(name, lambda: selector_class(build(path, features=features, shim_faults=shim_faults),
                                                      name))


def resolve(name: str):
    """The registry's hook for a 'c:...' name."""
    path, features, faults = parse_name(name)
    return load(path, features=features, shim_faults=faults)


registry.register_resolver(PREFIX, resolve)

__all__ = ["PREFIX", "SHIM_FAULTS", "Built", "BuildError", "build", "cache_dir", "canonical_name", "load",
           "parse_name", "resolve"]
