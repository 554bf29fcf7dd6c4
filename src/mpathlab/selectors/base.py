"""The path-selector interface (the Python face of dm-path-selector.h).

A selector *type* is a subclass of :class:`PathSelector`; its class attributes
play the role of ``struct path_selector_type`` (name, table_args, info_args,
features).  An *instance* is one selector inside one priority group.

Paths are opaque hashable objects chosen by the caller (the multipath target
passes its pgpath objects; a standalone user may pass strings).
"""
from __future__ import annotations

import logging
import time
from typing import Callable, Hashable, Optional, Sequence

from ..kernel import EINVAL

# The only selector feature flag the kernel defines: ask the multipath core
# to timestamp bio-based I/O with the high-resolution clock (ktime) at map
# time instead of handing end_io the jiffies-derived dm core start time.
DM_PS_USE_HR_TIMER = 0x00000001

STATUS_INFO = "info"
STATUS_TABLE = "table"
STATUS_IMA = "ima"
STATUS_KINDS = (STATUS_INFO, STATUS_TABLE, STATUS_IMA)

Clock = Callable[[], int]


class SelectorError(Exception):
    """A selector refused its arguments.

    ``message`` is the kernel's ``*error`` string (None where the kernel sets
    none, as for every ``create`` failure); ``errno`` the positive errno;
    ``detail`` a human explanation that the kernel does not give.
    """

    def __init__(self, message: Optional[str], errno: int = EINVAL, detail: str = ""):
        self.message = message
        self.errno = errno
        self.detail = detail
        text = message or "path selector constructor failed"
        if detail:
            text = "%s (%s)" % (text, detail)
        super().__init__(text)


def default_clock() -> int:
    """ktime_get_ns() stand-in for real use: CLOCK_MONOTONIC in ns."""
    return time.monotonic_ns()


def check_status_kind(kind: str) -> str:
    k = str(kind).lower()
    if k not in STATUS_KINDS:
        raise ValueError("status kind must be one of %s, not %r" % ("/".join(STATUS_KINDS), kind))
    return k


class PathSelector:
    """Base of every selector type.  Subclasses override what they implement."""

    name: str = ""
    version: Optional[str] = None
    table_args: int = 0
    info_args: int = 0
    features: int = 0
    # Whether the type has start_io/end_io hooks (io-affinity and round-robin
    # have none; the core then skips the calls entirely).
    has_io_hooks: bool = False
    # The compiled core's implementation of exactly this class, by its name in sim/boundary.py
    # SELECTOR_KINDS; None: the core calls the Python methods.  Read from the class itself, so a
    # subclass that changes a method runs as Python unless it declares one too.
    core_selector: Optional[str] = None

    def __init__(self, args: Sequence[str] = (), *, clock: Optional[Clock] = None,
                 cpu: Optional[Callable[[], int]] = None, topology=None,
                 dmwarn: Optional[Callable[[str], None]] = None, **_ignored):
        self.clock: Clock = clock or default_clock
        # Where the module's DMWARN lines go (the target's dmesg); they are
        # logged at INFO in any case.
        self._dmwarn = dmwarn

    def dm_warn(self, text: str) -> None:
        """DMWARN() with the module's prefix, "device-mapper: multipath <name>: <text>"."""
        logging.getLogger("mpathlab.selectors." + self.name).info(text)
        if self._dmwarn is not None:
            self._dmwarn("device-mapper: multipath %s: %s" % (self.name, text))

    # -- per-path lifecycle -------------------------------------------------
    def add_path(self, path: Hashable, args: Sequence[str] = ()) -> None:
        raise NotImplementedError

    def fail_path(self, path: Hashable) -> None:
        raise NotImplementedError

    def reinstate_path(self, path: Hashable) -> int:
        raise NotImplementedError

    # -- I/O ---------------------------------------------------------------
    def select_path(self, nr_bytes: int = 0):
        raise NotImplementedError

    def start_io(self, path: Hashable, nr_bytes: int) -> None:
        return None

    def end_io(self, path: Hashable, nr_bytes: int, start_time_ns: int) -> None:
        return None

    # -- status ------------------------------------------------------------
    def status(self, path: Optional[Hashable], kind: str = STATUS_INFO) -> str:
        raise NotImplementedError

    @classmethod
    def uses_hr_timer(cls) -> bool:
        """dm_ps_use_hr_timer(): does this type ask for ktime start stamps?"""
        return bool(cls.features & DM_PS_USE_HR_TIMER)

    def paths(self):
        """All paths known to this selector (valid and failed), any order."""
        return list(self._info)  # type: ignore[attr-defined]

    # The kernel keeps each path on exactly one of two ordered lists.  These
    # helpers implement list_move (to the head) and list_move_tail.
    def _track(self, path: Hashable, pi) -> None:
        if path in self._info:  # type: ignore[attr-defined]
            raise ValueError("path %r is already in this %s selector" % (path, self.name))
        self._info[path] = pi  # type: ignore[attr-defined]
        self._valid.append(pi)  # type: ignore[attr-defined]

    def _move(self, pi, dst: list, to_head: bool) -> None:
        for lst in (self._valid, self._failed):  # type: ignore[attr-defined]
            if pi in lst:
                lst.remove(pi)
                break
        if to_head:
            dst.insert(0, pi)
        else:
            dst.append(pi)

    def valid_order(self):
        """The selector's private valid-list order (for tests and debugging)."""
        return [pi.path for pi in self._valid]  # type: ignore[attr-defined]

    def path_info(self, path: Hashable):
        """The selector's per-path state (struct path_info) of PATH."""
        try:
            return self._info[path]  # type: ignore[attr-defined]
        except KeyError:
            raise KeyError("path %r was never added to this %s selector" % (path, self.name)) from None


class ListSelector(PathSelector):
    """A selector that keeps its paths on a valid list and a failed list.

    Failing moves a path to the head of the failed list; reinstating moves
    it to the tail of the valid list (queue-length, service-time, HST;
    round-robin overrides this: its reinstated path goes to the head).
    """

    def __init__(self, args=(), **env):
        super().__init__(args, **env)
        self._valid = []
        self._failed = []
        self._info = {}

    @property
    def valid_paths(self) -> list:
        """The valid list (struct selector's valid_paths), head first: the list itself, so the compiled
        core can write its order back."""
        return self._valid

    def fail_path(self, path):
        self._move(self.path_info(path), self._failed, to_head=True)

    def reinstate_path(self, path):
        self._move(self.path_info(path), self._valid, to_head=False)
        return 0


def parse_repeat_count(prefix: str, args: Sequence[str], max_args: int, clamp: bool, warn=None) -> int:
    """The repeat_count argument shared by RR, QL, ST and HST.

    ``prefix`` is the selector's error prefix, e.g. "round-robin ps".
    Selectors other than HST clamp values above 1 to 1 with a deprecation
    warning; 0 is kept as given.
    """
    from ..kernel import parse_u32

    if len(args) > max_args:
        raise SelectorError("%s: incorrect number of arguments" % prefix)
    repeat_count = 1
    if args:
        v = parse_u32(args[0])
        if v is None:
            raise SelectorError("%s: invalid repeat count" % prefix)
        repeat_count = v
        if clamp and repeat_count > 1:
            if warn is not None:
                warn("repeat_count > 1 is deprecated, using 1 instead")
            repeat_count = 1
    return repeat_count
