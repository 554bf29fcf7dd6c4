"""Parsers of what a capture reads: /sys/block/*/stat, /proc/diskstats, inflight, queue/scheduler,
/proc/devices, CPU lists, kernel releases and the multipath target's table line.

Each raises ``ValueError`` with a message that says what was expected; the collector turns it into a
note ("could not be read: ...") in the topology file.
"""
from __future__ import annotations

import re
from typing import Dict, List, Optional, Tuple

from ..kernel import split_args
from ..target.errors import TargetError
from ..target.table import ArgSet

# Documentation/block/stat.rst: 11 fields up to 4.18, 15 with discards (4.18), 17 with flushes (5.5)
STAT_FIELDS = (11, 15, 17)
# the per-direction (I/Os, ticks in ms, sectors) field indices of /sys/block/*/stat (flushes move no sectors)
STAT_DIRECTIONS = {"read": (0, 3, 2), "write": (4, 7, 6), "discard": (11, 14, 13), "flush": (15, 16, None)}
STAT_IN_FLIGHT = 8
_UINT = re.compile(r"[0-9]{1,20}")


def parse_stat(text: str) -> List[int]:
    """The numbers of a /sys/block/DEV/stat line (11, 15 or 17 fields)."""
    parts = text.split()
    if len(parts) not in STAT_FIELDS or not all(_UINT.fullmatch(p) for p in parts):
        raise ValueError("a stat line has 11, 15 or 17 unsigned numbers, got %r" % text.strip()[:80])
    return [int(p) for p in parts]


def stat_delta(before: List[int], after: List[int]) -> Dict[str, Tuple[int, int, int]]:
    """{direction: (I/Os completed, ticks in ms, sectors)} between two stat lines of the same device.
    The kernel's counters are unsigned long: a smaller value after is a wrap (or a re-created device),
    which is refused rather than read as a huge count."""
    if len(before) != len(after):
        raise ValueError("the two stat lines have %d and %d fields" % (len(before), len(after)))
    out = {}
    for d, (ios, ticks, sectors) in STAT_DIRECTIONS.items():
        if ticks >= len(after):
            continue
        dio, dt = after[ios] - before[ios], after[ticks] - before[ticks]
        dsec = 0 if sectors is None else after[sectors] - before[sectors]
        if dio < 0 or dt < 0 or dsec < 0:
            raise ValueError("the %s counters went backwards (device re-created or counter wrapped)" % d)
        out[d] = (dio, dt, dsec)
    return out


def parse_diskstats(text: str) -> Dict[str, Tuple[int, int, List[int]]]:
    """/proc/diskstats: {name: (major, minor, the stat fields)} (the fields after the name)."""
    out = {}
    for no, line in enumerate(text.splitlines(), 1):
        parts = line.split()
        if not parts:
            continue
        if len(parts) < 3 + STAT_FIELDS[0] or not (_UINT.fullmatch(parts[0]) and _UINT.fullmatch(parts[1])):
            raise ValueError("diskstats line %d: expected 'major minor name' and 11+ numbers" % no)
        out[parts[2]] = (int(parts[0]), int(parts[1]), parse_stat(" ".join(parts[3:])))
    return out


def parse_inflight(text: str) -> Tuple[int, int]:
    """/sys/block/DEV/inflight: requests in flight (reads, writes)."""
    parts = text.split()
    if len(parts) != 2 or not all(_UINT.fullmatch(p) for p in parts):
        raise ValueError("inflight has two unsigned numbers, got %r" % text.strip()[:80])
    return int(parts[0]), int(parts[1])


def parse_scheduler(text: str) -> Tuple[str, List[str]]:
    """queue/scheduler: (the current one, every one listed); "[mq-deadline] none" -> mq-deadline;
    a queue without elevator support prints "none" alone."""
    names = [n.strip("[]") for n in text.split()]
    current = [n.strip("[]") for n in text.split() if n.startswith("[") and n.endswith("]")]
    if not names or len(current) > 1:
        raise ValueError("queue/scheduler lists the schedulers with the current one in brackets, got %r"
                         % text.strip()[:80])
    if not current:
        if names != ["none"]:
            raise ValueError("queue/scheduler names no current scheduler: %r" % text.strip()[:80])
        current = ["none"]
    return current[0], names


def parse_proc_devices(text: str) -> Dict[int, str]:
    """The block majors of /proc/devices: {major: driver name}."""
    out: Dict[int, str] = {}
    block = False
    for line in text.splitlines():
        s = line.strip()
        if s.endswith("devices:"):
            block = s.lower().startswith("block")
            continue
        parts = s.split(None, 1)
        if block and len(parts) == 2 and _UINT.fullmatch(parts[0]):
            out[int(parts[0])] = parts[1]
    return out


def parse_cpu_list(text: str) -> int:
    """How many CPUs a list such as "0-3,6,8-9" names (/sys/devices/system/cpu/online)."""
    n = 0
    s = text.strip()
    if not s:
        raise ValueError("an empty CPU list")
    for part in s.split(","):
        lo, sep, hi = part.partition("-")
        if not _UINT.fullmatch(lo) or (sep and not _UINT.fullmatch(hi)):
            raise ValueError("a CPU list is ranges such as 0-3,6, got %r" % s[:80])
        a, b = int(lo), int(hi) if sep else int(lo)
        if b < a or b >= 65536:
            raise ValueError("a CPU range %r is backwards or beyond 65535" % part)
        n += b - a + 1
    return n


def parse_devt(text: str) -> Tuple[int, int]:
    """/sys/block/DEV/dev: "major:minor"."""
    a, sep, b = text.strip().partition(":")
    if not sep or not _UINT.fullmatch(a) or not _UINT.fullmatch(b) or int(a) >= 4096 or int(b) >= 1 << 20:
        raise ValueError("dev is major:minor (12 and 20 bits), got %r" % text.strip()[:40])
    return int(a), int(b)


def kernel_series(release: str) -> Optional[str]:
    """The "X.Y" of a release string (6.1.0-57-amd64 -> 6.1, 6.12.118+deb12-amd64 -> 6.12)."""
    m = re.match(r"\s*(\d{1,3})\.(\d{1,3})(?!\d)", release)
    return "%d.%d" % (int(m.group(1)), int(m.group(2))) if m else None


def parse_hz(config_text: str) -> Optional[int]:
    """CONFIG_HZ from a kernel config (/boot/config-*, /proc/config.gz)."""
    m = re.search(r"^CONFIG_HZ=(\d{2,5})\s*$", config_text, re.M)
    return int(m.group(1)) if m else None


class MultipathTable:
    """The parts of a multipath target's table parameters a capture reports
    (dm-mpath.c multipath_ctr: features, hardware handler, priority groups with their selector and paths)."""

    def __init__(self, features: List[str], hw_handler: List[str], initial_group: int,
                 groups: List[dict]):
        self.features = features
        self.hw_handler = hw_handler
        self.initial_group = initial_group
        self.groups = groups          # [{"selector", "selector_args", "paths": [(dev, [args])]}]

    def devices(self) -> List[str]:
        return [dev for g in self.groups for dev, _ in g["paths"]]


def parse_multipath_params(params: str) -> MultipathTable:
    """``<#features> <features>* <#hw> <hw>* <#groups> <initial group> (<selector> <#sel args> <args>*
    <#paths> <#path args> (<dev> <args>*)*)*``; every variable part is counted, so this needs no
    knowledge of the selectors. Tokens and counts are read as the target's constructor reads them
    (target/table.py: dm_split_args, multipath_ctr's bounds and error strings)."""
    a = ArgSet(split_args(params))
    try:
        features = a.take(a.count("features"))
        hw = a.take(a.count("hw_handler"))
        ngroups = a.count("groups")
        initial = a.count("initial_group")
        groups = []
        for _ in range(ngroups):
            sel = a.shift()
            if sel is None:
                raise TargetError("not enough priority group arguments")
            sargs = a.take(a.count("selector_args"))
            npaths, nargs = a.count("paths"), a.count("path_args")
            paths = []
            for _ in range(npaths):
                if a.argc < 1 + nargs:
                    raise TargetError("not enough path parameters")
                dev, *args = a.take(1 + nargs)
                paths.append((dev, args))
            groups.append({"selector": sel, "selector_args": sargs, "paths": paths})
    except TargetError as e:
        raise ValueError(str(e)) from None
    if a.argc:
        raise ValueError("%d token(s) after the last group" % a.argc)
    return MultipathTable(features, hw, initial, groups)
