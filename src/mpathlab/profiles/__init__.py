"""Kernel profiles: which kernel release mpathlab behaves as.

A profile is every behaviour of :data:`history.HISTORY` evaluated at one
release.  ``kernel = "6.1"`` in a topology, ``--kernel 6.1`` on the command
line and ``kernel="6.1"`` in the API all name one of :data:`PROFILES`;
"current" (the newest sources read, 6.16 and later) is the default.  The
older switches (``force_jiffies_start``, ``hst_select_clock``) still work and
override what the profile says.

>>> from mpathlab.profiles import get_profile
>>> p = get_profile("6.1")
>>> p.target_version, p.dm_version, p.hst_select_clock
((1, 14, 0), '4.47.0', 'ktime')
"""
from __future__ import annotations

from typing import Dict, Optional, Union

from .environment import DeviceFact, Host, HostError
from .history import BY_KEY, HISTORY, Behaviour, Change, Version

# How far sched_clock() leads ktime when a profile's HST reads sched_clock
# and the caller does not say (see the hst-2020 scenario notes in docs/scenarios.md).
DEFAULT_SCHED_CLOCK_LEAD_NS = 2 * 10 ** 9

# The selectors whose presence depends on the release (the others are older
# than every profile); a profile without one refuses it by name, as a kernel
# without the module does.
_SELECTOR_KEYS = {"historical-service-time": "historical_service_time", "io-affinity": "io_affinity"}


class ProfileError(ValueError):
    pass


class KernelProfile:
    """The behaviours of one kernel release (read-only attributes named as in HISTORY)."""

    def __init__(self, name: str, version: Version, description: str = ""):
        self.name = name
        self.version = version
        self.description = description
        self.values: Dict[str, object] = {b.key: b.at(version) for b in HISTORY}

    def __getattr__(self, key):
        try:
            return self.__dict__["values"][key]
        except KeyError:
            raise AttributeError(key) from None

    def has_selector(self, name: str) -> bool:
        """Whether the release ships this built-in selector (third-party ones always load)."""
        key = _SELECTOR_KEYS.get(name)
        return True if key is None else bool(self.values[key])

    def where(self, key: str) -> str:
        return BY_KEY[key].where_at(self.version)

    def __repr__(self):
        return "KernelProfile(%r)" % self.name


PROFILES: Dict[str, KernelProfile] = {p.name: p for p in (
    KernelProfile("5.8", (5, 8), "HST as merged (sched_clock in select_path, jiffies bio start times)"),
    KernelProfile("5.15", (5, 15), "5.15 as released (the 2022 HST clock fix came later, in 5.15.y stable)"),
    KernelProfile("6.1", (6, 1), "Debian 12 (bookworm); checked against captures of 6.1.192"),
    KernelProfile("6.12", (6, 12), "Debian bookworm-backports / trixie; checked against captures of 6.12.111"),
    KernelProfile("current", (6, 16), "the newest sources read (6.16 and later)"),
)}
DEFAULT_PROFILE = "current"
EARLIEST = (4, 6)


def get_profile(kernel: Union[None, str, KernelProfile] = None) -> KernelProfile:
    """A profile by name ("6.1", "current", ...); None gives the default; a profile passes through."""
    if kernel is None:
        return PROFILES[DEFAULT_PROFILE]
    if isinstance(kernel, KernelProfile):
        return kernel
    name = str(kernel).strip().lower()
    for prefix in ("linux-", "v"):
        if name.startswith(prefix):
            name = name[len(prefix):]
    if name in PROFILES:
        return PROFILES[name]
    # Any other release "X.Y" gets the same history evaluated at it (the
    # named profiles are the ones checked against captures or sources).
    parts = name.split(".")
    if len(parts) >= 2 and all(p.isdigit() for p in parts[:2]):
        version = (int(parts[0]), int(parts[1]))
        # Before 4.6 the history here says nothing (repeat_count still counted).
        if EARLIEST <= version <= PROFILES[DEFAULT_PROFILE].version:
            return KernelProfile("%d.%d" % version, version, "release %d.%d" % version)
    raise ProfileError("unknown kernel profile %r (known: %s, or a release X.Y from %d.%d to %d.%d)"
                       % ((kernel, ", ".join(PROFILES)) + EARLIEST + PROFILES[DEFAULT_PROFILE].version))


def profile_table_rows():
    """(behaviour, {profile: value}, [(release, where)]) for docs/kernel-profiles.md and `mpathlab kernels`."""
    rows = []
    for b in HISTORY:
        rows.append((b, {name: p.values[b.key] for name, p in PROFILES.items()},
                     [(c.release, c.where) for c in b.changes]))
    return rows


def format_value(v) -> str:
    import errno as _errno
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, tuple):
        return ".".join(map(str, v))
    if isinstance(v, int) and v in _errno.errorcode:
        return "-" + _errno.errorcode[v]
    return str(v)


def markdown_table() -> str:
    """The table of docs/kernel-profiles.md."""
    names = list(PROFILES)
    out = ["| behaviour | %s | changed upstream |" % " | ".join(names),
           "|---|%s---|" % ("---|" * len(names))]
    for b, values, changes in profile_table_rows():
        where = "; ".join("%d.%d: %s" % (rel[0], rel[1], w) for rel, w in changes)
        out.append("| %s | %s | %s |" % (b.what, " | ".join(format_value(values[n]) for n in names), where))
    return "\n".join(out)


__all__ = ["Behaviour", "Change", "DEFAULT_PROFILE", "DEFAULT_SCHED_CLOCK_LEAD_NS", "DeviceFact", "HISTORY",
           "Host", "HostError", "KernelProfile", "PROFILES", "ProfileError", "get_profile", "markdown_table"]

