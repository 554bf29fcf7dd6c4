"""The multipath table grammar and constructor (multipath_ctr).

Arguments are read in the kernel's order with the kernel's checks, so the
first problem found, and its message, are those ``dmsetup load`` would report.

    <#features> <feature>*
    <#hw_handler_args> [<hw_handler_name> <hw_handler_arg>*]
    <#priority_groups> <initial_pg_number>
    ( <selector> <#selector_args> <selector_arg>*
      <#paths> <#per_path_selector_args>
      ( <device> <per_path_selector_arg>* )* )*
"""
from __future__ import annotations

import re

import logging
import os
import stat
from typing import Callable, Dict, List, Optional, Sequence, Tuple, Union

from ..kernel import parse_devt, parse_u32, split_args
from ..selectors import SelectorError, get_exact
from ..profiles.environment import attach_hw_handler_errno, get_device_errno
from .errors import TargetError
from .multipath import QUEUE_MODE_BIO, QUEUE_MODE_RQ, Device, Multipath, PGPath, PriorityGroup

DeviceResolver = Callable[[str], Optional[Tuple[int, int]]]


# multipath_ctr's counted arguments (its struct dm_arg tables): bounds, whether the count's tokens must
# follow (dm_read_arg_group) and the error string; one definition for the constructor and the capture
# (capture/parsers.py), which reads a table's shape with the same counts
COUNTS = {
    "features": (0, 8, "invalid number of feature args", True),
    "hw_handler": (0, 1024, "invalid number of hardware handler args", True),
    "groups": (0, 1024, "invalid number of priority groups", False),
    "initial_group": (0, 1024, "invalid initial priority group number", False),
    "selector_args": (0, 1024, "invalid number of path selector args", True),
    "paths": (1, 1024, "invalid number of paths", False),
    "path_args": (0, 1024, "invalid number of selector args", False),
}


class ArgSet:
    """struct dm_arg_set: the remaining tokens."""

    def __init__(self, tokens: Sequence[str]):
        self.argv: List[str] = list(tokens)
        self.pos = 0

    @property
    def argc(self) -> int:
        return len(self.argv) - self.pos

    def shift(self) -> Optional[str]:
        if self.pos >= len(self.argv):
            return None
        tok = self.argv[self.pos]
        self.pos += 1
        return tok

    def peek(self, n: int) -> List[str]:
        return self.argv[self.pos:self.pos + n]

    def consume(self, n: int) -> None:
        assert n <= self.argc, "dm_consume_args past the end"
        self.pos += n

    def take(self, n: int) -> List[str]:
        """The next n tokens, consumed (n <= argc)."""
        toks = self.peek(n)
        self.consume(n)
        return toks

    def count(self, what: str) -> int:
        """One of multipath_ctr's counted arguments (COUNTS)."""
        lo, hi, error, grouped = COUNTS[what]
        return self.read(lo, hi, error, grouped)

    def read(self, lo: int, hi: int, error: str, grouped: bool = False) -> int:
        """dm_read_arg / dm_read_arg_group."""
        tok = self.shift()
        v = parse_u32(tok)
        if v is None or v < lo or v > hi or (grouped and self.argc < v):
            raise TargetError(error, detail="got %r" % (tok,) if tok is not None else "argument missing")
        return v


def default_device_resolver(token: str) -> Optional[Tuple[int, int]]:
    """dm_get_device(): "major:minor", else the block device at that path."""
    devt = parse_devt(token)
    if devt is not None:
        return devt
    try:
        st = os.stat(token)
    except (OSError, ValueError):      # ValueError: a NUL in the name (no such path either)
        return None
    if not stat.S_ISBLK(st.st_mode):
        return None
    return os.major(st.st_rdev), os.minor(st.st_rdev)


def mapping_resolver(names: Dict[str, Tuple[int, int]]) -> DeviceResolver:
    """A resolver for simulations: known names first, then "major:minor"."""
    def resolve(token: str):
        if token in names:
            return names[token]
        if token.startswith("/dev/") and token[5:] in names:
            return names[token[5:]]
        return parse_devt(token)
    return resolve


def _parse_features(m: Multipath, a: ArgSet) -> None:
    argc = a.count("features")
    while argc:
        name = a.shift() or ""      # the grouped read made sure the tokens are there
        argc -= 1
        low = name.lower()
        if low == "queue_if_no_path":
            m.set_queue_if_no_path(True, False)
            continue
        if low == "retain_attached_hw_handler":
            m.retain_attached_hw_handler = True
            continue
        if low == "pg_init_retries" and argc >= 1:
            m.pg_init_retries = a.read(1, 50, "pg_init_retries must be between 1 and 50")
            argc -= 1
            continue
        if low == "pg_init_delay_msecs" and argc >= 1:
            m.pg_init_delay_msecs = a.read(0, 60000, "pg_init_delay_msecs must be between 0 and 60000")
            argc -= 1
            continue
        if low == "queue_mode" and argc >= 1:
            mode = a.shift() or ""
            argc -= 1
            if mode.lower() == "bio":
                m.queue_mode = QUEUE_MODE_BIO
            elif mode.lower() in ("rq", "mq"):
                m.queue_mode = QUEUE_MODE_RQ
            else:
                raise TargetError("Unknown 'queue_mode' requested", detail="got %r" % mode)
            continue
        raise TargetError("Unrecognised multipath feature request", detail="got %r" % name)


def _parse_hw_handler(m: Multipath, a: ArgSet) -> None:
    hw_argc = a.count("hw_handler")
    if not hw_argc:
        return
    if m.queue_mode == QUEUE_MODE_BIO:
        a.consume(hw_argc)
        m.dmesg.append("device-mapper: multipath: bio-based multipath doesn't allow hardware handler args")
        # logged as a table-load warning (the CLI shows these by default, see mpathlab.klog)
        logging.getLogger("mpathlab.target.load").info("bio-based multipath doesn't allow hardware handler args")
        return
    m.hw_handler_name = a.shift()
    if hw_argc > 1:
        # Kept only for scsi_dh_set_params(); never re-emitted in status.
        m.hw_handler_params = "%d\0%s" % (hw_argc - 1, "\0".join(a.take(hw_argc - 1)))


def _parse_priority_group(m: Multipath, a: ArgSet, resolve: DeviceResolver, env: dict,
                          devices: Dict[Tuple[int, int], Device]) -> PriorityGroup:
    if a.argc < 2:
        raise TargetError("not enough priority group arguments")
    name = a.shift()
    cls = get_exact(name)
    if cls is None or not m.profile.has_selector(cls.name):
        detail = "got %r" % name if cls is None else "%s is not in kernel %s" % (name, m.profile.name)
        raise TargetError("unknown path selector type", detail=detail)
    ps_argc = a.count("selector_args")
    try:
        ps = cls(a.peek(ps_argc), **env)
    except SelectorError as e:
        raise TargetError("path selector constructor failed", e.errno, e.detail) from None
    a.consume(ps_argc)
    pg = PriorityGroup(ps)

    nr_pgpaths = a.count("paths")
    nr_selector_args = a.count("path_args")
    nr_params = 1 + nr_selector_args
    for _ in range(nr_pgpaths):
        if a.argc < nr_params:
            raise TargetError("not enough path parameters")
        path_args = ArgSet(a.peek(nr_params))
        dev_name = path_args.shift()
        if dev_name is None:
            raise TargetError("no device given")
        devt = resolve(dev_name)
        err = get_device_errno(dev_name, devt, m.host, m.profile.missing_path_errno)
        if err:
            raise TargetError("error getting device", err, detail="cannot open %r" % dev_name)
        if devt is None:
            devt = m.host.lookup_name(dev_name)
        if m.hw_handler_name and m.host is not None:
            # scsi_dh_attach(): only a SCSI device takes a hardware handler.
            err = attach_hw_handler_errno(m.host, devt, m.hw_handler_name)
            if err:
                raise TargetError("error attaching hardware handler", err,
                                  detail="%s is a %s device" % (dev_name, m.host.kind(devt)))
        dev = devices.get(devt)
        if dev is None:
            dev = devices[devt] = Device(devt[0], devt[1], dev_name)
        pgpath = PGPath(dev, pg)
        try:
            ps.add_path(pgpath, path_args.peek(path_args.argc))
        except SelectorError as e:
            raise TargetError(e.message or "path selector constructor failed", e.errno, e.detail) from None
        pg.pgpaths.append(pgpath)
        a.consume(nr_params)
    return pg


_SECTORS = re.compile(r"[0-9]{1,20}")
U64_MAX = 2 ** 64 - 1


def construct(params: Union[str, Sequence[str]], *, resolve_device: Optional[DeviceResolver] = None,
              selector_env: Optional[dict] = None, **multipath_kwargs) -> Multipath:
    """multipath_ctr(): build a Multipath from the target's parameter string.

    ``params`` is what follows ``<start> <len> multipath`` in a table line
    (a string, split as dm core splits it, or a token list).
    ``selector_env`` is passed to every selector (``clock``, ``cpu``,
    ``topology``); ``multipath_kwargs`` to :class:`Multipath`.
    Raises TargetError with the kernel's ti->error string.
    """
    tokens = split_args(params) if isinstance(params, str) else list(params)
    # marks a table load for the CLI's log (mpathlab.klog): what the kernel prints per load
    logging.getLogger("mpathlab.target.load").debug("table load: %s", " ".join(tokens))
    resolve = resolve_device or default_device_resolver
    m = Multipath(**multipath_kwargs)
    env = dict(selector_env or {})
    env.setdefault("clock", m.timebase.ktime_ns)
    env.setdefault("dmwarn", m.dmesg.append)
    if m.host is not None and m.host.nr_cpu_ids and "topology" not in env:
        from ..selectors import CpuTopology
        env["topology"] = CpuTopology(m.host.nr_cpu_ids)
    if m.profile.hst_select_clock == "sched_clock" and "select_clock" not in env:
        # HST before the 2022 fix read sched_clock() in select_path, which
        # runs ahead of ktime (see DEFAULT_SCHED_CLOCK_LEAD_NS).
        from ..profiles import DEFAULT_SCHED_CLOCK_LEAD_NS
        clock = env["clock"]
        env["select_clock"] = lambda: clock() + DEFAULT_SCHED_CLOCK_LEAD_NS
    try:
        _construct(m, ArgSet(tokens), resolve, env)
    except TargetError as e:
        # What the constructor logged before it gave up (selector warnings).
        e.dmesg_lines = list(m.dmesg)
        raise
    return m


def _construct(m: Multipath, a: ArgSet, resolve: DeviceResolver, env: dict) -> None:
    _parse_features(m, a)
    # alloc_multipath_stage2
    if m.queue_mode == QUEUE_MODE_BIO:
        m.retain_attached_hw_handler = True
    m.queue_io = True
    _parse_hw_handler(m, a)

    m.nr_priority_groups = a.count("groups")
    next_pg_num = a.count("initial_group")
    if bool(m.nr_priority_groups) != bool(next_pg_num):
        raise TargetError("invalid initial priority group")

    devices: Dict[Tuple[int, int], Device] = {}
    pg_count = 0
    while a.argc:
        pg = _parse_priority_group(m, a, resolve, env, devices)
        m.nr_valid_paths += pg.nr_pgpaths
        pg_count += 1
        pg.pg_num = pg_count
        next_pg_num -= 1
        if next_pg_num == 0:
            m.next_pg = pg
        m.priority_groups.append(pg)
    if pg_count != m.nr_priority_groups:
        raise TargetError("priority group count mismatch",
                          detail="table says %d, found %d" % (m.nr_priority_groups, pg_count))
    m.enable_nopath_timeout()


class TableLine:
    """One parsed ``dmsetup table`` line: start, length, target type, params."""

    def __init__(self, start: int, length: int, target_type: str, params: str):
        self.start = start
        self.length = length
        self.target_type = target_type
        self.params = params


def strip_device_name(line: str) -> str:
    """The line without the ``NAME: `` that ``dmsetup table`` prints before each device's line."""
    first, _, rest = line.strip().partition(" ")
    if first.endswith(":") and len(first) > 1 and not all(t.isdigit() for t in first[:-1].split(":")):
        return rest.strip()
    return line.strip()


def split_table_line(line: str) -> TableLine:
    """Split ``<start> <len> <type> <params>`` with dm core's checks."""
    rows = [r for r in line.strip().splitlines() if r.strip()]
    if len(rows) > 1:
        # A dm table of several lines is several targets; read as one, the
        # second line's "0 <len> multipath" would be taken for selector args.
        raise TargetError("one multipath table line expected",
                          detail="got %d lines; a device made of several targets is not modelled" % len(rows))
    parts = strip_device_name(line).split(None, 3)
    if len(parts) < 3:
        raise TargetError("Invalid table line", detail="expected '<start> <length> multipath <params>'")
    start_s, len_s, ttype = parts[:3]
    params = parts[3] if len(parts) == 4 else ""
    # dmsetup reads both with "%" PRIu64 into sector_t: ASCII digits (int() would take "1_0" or
    # Arabic-Indic digits), at most 2^64-1, and the device must end within sector_t.
    if not (_SECTORS.fullmatch(start_s) and _SECTORS.fullmatch(len_s)):
        raise TargetError("Invalid argument list", detail="start and length must be sector counts (decimal digits)")
    start, length = int(start_s), int(len_s)
    if start + length > U64_MAX:
        raise TargetError("Invalid argument list",
                          detail="start %d + length %d sectors does not fit sector_t (at most 2^64-1)"
                          % (start, length))
    if length == 0:
        raise TargetError("zero-length target")
    if start != 0:
        raise TargetError("Gap in table")
    if ttype != "multipath":
        raise TargetError("%s: unknown target type" % ttype)
    return TableLine(start, length, ttype, params)


def parse(line: str, **kwargs) -> Multipath:
    """Build a Multipath from a full table line ``0 <len> multipath <params>``."""
    tl = split_table_line(line)
    m = construct(tl.params, **kwargs)
    m.table_start = tl.start
    m.table_length = tl.length
    return m


def table_line(m: Multipath) -> str:
    """``dmsetup table`` output for the device: the line with its canonical params."""
    return "%d %d multipath %s" % (m.table_start, m.table_length, m.table())
