"""The selector registry (dm-path-selector.c).

Types are kept by exact, case-sensitive name; registering a name twice is
refused with EEXIST as the kernel does.  A miss triggers the "autoload" step,
the kernel's ``request_module("dm-<name>")``: here, the package's own policies
(``BUILTIN``) and then the entry points of group ``mpathlab.path_selectors``
(third-party selectors) are loaded and registered, then the lookup is repeated.

For the Python API, :func:`lookup` also accepts the module names ``dm-NAME``
and ``dm-ps-NAME`` (the .ko name and the source-file name).  The table parser
uses :func:`get_exact`, which is what the kernel's table loader does.
"""
from __future__ import annotations

import importlib
import logging
import threading
from typing import Callable, Dict, List, Optional, Type

from ..kernel import EEXIST, EINVAL
from .base import PathSelector

ENTRY_POINT_GROUP = "mpathlab.path_selectors"

# mpathlab.policies: selectors beyond the kernel's, loaded like a module on the first miss.  Built in, not
# entry points, so a checkout run without installing (./mpathlab) or an older install still finds them.
BUILTIN = {
    "p2c": "mpathlab.policies.p2c:PowerOfTwoChoices",
    "sed": "mpathlab.policies.sed:ShortestExpectedDelay",
    "peak-ewma": "mpathlab.policies.peak_ewma:PeakEwma",
    "prequal": "mpathlab.policies.prequal:Prequal",
    "hst-latency": "mpathlab.policies.hst_latency:HstLatency",
}

log = logging.getLogger("mpathlab.selectors")


class RegistryError(Exception):
    def __init__(self, message: str, errno: int):
        super().__init__(message)
        self.errno = errno


_lock = threading.RLock()
_types: Dict[str, Type[PathSelector]] = {}
_entry_points_loaded = False

# Families named by a prefix ('c:PATH') are built on demand by a module above this one. As the kernel's
# request_module() names a module without linking to it, the registry holds only the module's name; the
# module, once imported, hands its builder to register_resolver().
_PREFIX_MODULES = {"c:": "mpathlab.kernelc"}
_resolvers: Dict[str, Callable[[str], Optional[Type[PathSelector]]]] = {}


def register_resolver(prefix: str, resolve: Callable[[str], Optional[Type[PathSelector]]]) -> None:
    """Let names starting with PREFIX be built by RESOLVE on a miss."""
    _resolvers[prefix] = resolve


def register(cls: Type[PathSelector]) -> None:
    """dm_register_path_selector(): -EEXIST if the name is taken."""
    if not (isinstance(cls, type) and issubclass(cls, PathSelector)):
        raise RegistryError("a selector type must subclass mpathlab.selectors.PathSelector", EINVAL)
    if not cls.name:
        raise RegistryError("a selector type needs a non-empty name", EINVAL)
    with _lock:
        if cls.name in _types:
            raise RegistryError("register failed %d: selector %r already registered"
                                % (-EEXIST, cls.name), EEXIST)
        _types[cls.name] = cls
    if cls.version:
        log.info("version %s loaded", cls.version)


def register_once(name: str, make: Callable[[], Type[PathSelector]]) -> Type[PathSelector]:
    """The type registered as ``name``; on a miss ``make()`` builds it and it is
    registered, all under the registry's lock (two threads asking for one
    kernel-C selector build it once)."""
    with _lock:
        cls = _types.get(name)
        if cls is None:
            cls = make()
            register(cls)
        return cls


def unregister(name: str) -> None:
    """dm_unregister_path_selector(): the newest kernel only warns if missing."""
    with _lock:
        if _types.pop(name, None) is None:
            log.warning("unregister of unknown path selector %r", name)


def _autoload(module_name: str) -> None:
    """request_module(): load third-party selectors from entry points once."""
    global _entry_points_loaded
    with _lock:
        if _entry_points_loaded:
            return
        _entry_points_loaded = True
    import importlib
    for spec in BUILTIN.values():
        mod, _, attr = spec.partition(":")
        cls = getattr(importlib.import_module(mod), attr)
        with _lock:
            if cls.name not in _types:
                register(cls)
    try:
        from importlib.metadata import entry_points
        eps = entry_points(group=ENTRY_POINT_GROUP)
    except Exception as e:  # a broken environment must not break lookups
        log.warning("cannot read entry points for %s: %s", ENTRY_POINT_GROUP, e)
        return
    for ep in eps:
        try:
            cls = ep.load()
            if cls.name not in _types:
                register(cls)
        except Exception as e:
            log.warning("path selector entry point %r failed to load: %s", ep.name, e)


def reload_entry_points() -> None:
    """Forget that entry points were loaded, so the next miss loads them again."""
    global _entry_points_loaded
    with _lock:
        _entry_points_loaded = False


def get_exact(name: Optional[str]) -> Optional[Type[PathSelector]]:
    """dm_get_path_selector(): exact name, autoloading ``dm-<name>`` on a miss."""
    if name is None:
        return None
    cls = _types.get(name)
    if cls is None:
        for prefix, module in _PREFIX_MODULES.items():
            if name.startswith(prefix):
                if prefix not in _resolvers:
                    importlib.import_module(module)
                return _resolvers[prefix](name)
    if cls is None:
        _autoload("dm-" + name)
        cls = _types.get(name)
    return cls


def lookup(name: str) -> Optional[Type[PathSelector]]:
    """Find a type by NAME, dm-NAME or dm-ps-NAME."""
    cls = get_exact(name)
    if cls is not None:
        return cls
    for prefix in ("dm-ps-", "dm-"):
        if name.startswith(prefix):
            cls = get_exact(name[len(prefix):])
            if cls is not None:
                return cls
    return None


def is_registered(name: str) -> bool:
    return name in _types


def names() -> List[str]:
    _autoload("")
    return sorted(_types)
