"""Parse ``dmsetup status`` (INFO) output of a multipath target.

The INFO format is self-describing: every variable-length part is preceded
by its count, so a status line can be read without knowing the selectors.

    2 <queue_io> <pg_init_count> <#hw status> <hw status>*
    <#groups> <current group>
    ( <A|D|E> <#ps status> <ps status>* <#paths> <#ps per-path fields>
      ( <dev> <A|F> <fail_count> <field>* )* )*
"""
from __future__ import annotations

import re
from typing import Any, List, Optional, Tuple

_INT = re.compile(r"-?[0-9]+")


class StatusParseError(ValueError):
    pass


U32_MAX = 2 ** 32 - 1
U64_MAX = 2 ** 64 - 1


def _show(token: str, limit: int = 40) -> str:
    """A token quoted for a message, long ones shortened (a 5,000-digit number is not echoed whole)."""
    if len(token) <= limit:
        return repr(token)
    return "%r... (%d characters)" % (token[:limit], len(token))


class _Tokens:
    def __init__(self, text: str):
        self.t = text.split()
        self.i = 0

    def next(self, what: str) -> str:
        if self.i >= len(self.t):
            raise StatusParseError("status ends early: expected %s" % what)
        v = self.t[self.i]
        self.i += 1
        return v

    def num(self, what: str) -> int:
        v = self.next(what)
        if not _INT.fullmatch(v):
            raise StatusParseError("expected a number for %s, got %s" % (what, _show(v)))
        if len(v.lstrip("-")) > 10 or int(v) > U32_MAX:
            # every count and number of the INFO status is printed with %u (dm-mpath.c multipath_status)
            raise StatusParseError("%s %s is not an unsigned 32-bit number (the kernel prints it with %%u)"
                                   % (what, _show(v)))
        return int(v)

    def count(self, what: str) -> int:
        n = self.num(what)
        if n < 0:
            raise StatusParseError("%s must not be negative, got %d" % (what, n))
        return n

    def take(self, n: int, what: str) -> List[str]:
        return [self.next(what) for _ in range(n)]


def parse_status_info(text: str) -> dict:
    """Return {"features": [...], "hw": [...], "nr_groups", "current_group", "groups": [...]}."""
    tk = _Tokens(text)
    nfeat = tk.count("feature count")
    features = tk.take(nfeat, "feature")
    nhw = tk.count("hardware handler status count")
    hw = tk.take(nhw, "hardware handler status")
    ngroups = tk.count("group count")
    current = tk.count("current group")
    # next_pg, else current_pg, else 1 (0 without groups): dm-mpath.c multipath_status
    if (ngroups and not 1 <= current <= ngroups) or (not ngroups and current):
        raise StatusParseError("current group %d is not a group of the %d listed (it is 1..%d, 0 without groups)"
                               % (current, ngroups, ngroups))
    groups = []
    for g in range(ngroups):
        state = tk.next("group state")
        if state not in ("A", "D", "E"):
            raise StatusParseError("group %d: state must be A, D or E, got %s" % (g + 1, _show(state)))
        nps = tk.count("selector status count")
        ps_status = tk.take(nps, "selector status")
        npaths = tk.count("path count")
        nfields = tk.count("per-path selector field count")
        paths = []
        for _ in range(npaths):
            dev = tk.next("path device")
            act = tk.next("path state")
            if act not in ("A", "F"):
                raise StatusParseError("path %s: state must be A or F, got %s" % (_show(dev), _show(act)))
            fail_count = tk.count("fail count")
            paths.append({"dev": dev, "active": act == "A", "fail_count": fail_count,
                          "selector": tk.take(nfields, "selector field")})
        groups.append({"state": state, "selector_status": ps_status, "paths": paths, "nr_fields": nfields})
    if tk.i != len(tk.t):
        rest = tk.t[tk.i:]
        raise StatusParseError("%d trailing token(s) after the last group: %s" % (
            len(rest), " ".join(_show(t) for t in rest[:5]) + (" ..." if len(rest) > 5 else "")))
    return {"features": features, "hw": hw, "nr_groups": ngroups, "current_group": current,
            "groups": groups}


# ---------------------------------------------------------------------------
# Whole `dmsetup status` / `dmsetup table` outputs

# Other device-mapper target types a `dmsetup` listing may hold: their lines
# are skipped.  (A bare multipath parameter string can have a word in third
# place, e.g. "0 1 alua ...", so only known target names count as targets.)
DM_TARGET_TYPES = frozenset((
    "linear", "striped", "mirror", "snapshot", "snapshot-origin", "snapshot-merge", "error", "zero", "crypt",
    "delay", "flakey", "thin", "thin-pool", "cache", "era", "raid", "verity", "integrity", "writecache",
    "vdo", "dust", "clone", "unstriped", "switch", "log-writes", "ebs", "zoned", "multipath",
))


class DmsetupLine:
    """One line of ``dmsetup status``/``dmsetup table`` output.

    ``name`` is the device name when dmsetup printed ``name: `` before it,
    ``start``/``length`` are None for a bare parameter string."""

    def __init__(self, lineno: int, name, start, length, target_type: str, params: str):
        self.lineno = lineno
        self.name = name
        self.start = start
        self.length = length
        self.target_type = target_type
        self.params = params

    def label(self) -> str:
        return self.name or "line %d" % self.lineno


def split_dmsetup_output(text: str, source: str = "input") -> List[DmsetupLine]:
    """Every multipath line of a dmsetup listing; other targets are skipped.

    Accepts ``name: 0 2097152 multipath <params>`` (several devices),
    ``0 2097152 multipath <params>`` (one device) and a bare ``<params>``."""
    out: List[DmsetupLine] = []
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line == "No devices found":
            continue
        toks = line.split()
        name = None
        if toks[0].endswith(":") and len(toks[0]) > 1 and not _is_devt(toks[0][:-1]):
            name = toks[0][:-1]
            toks = toks[1:]
            if not toks:
                raise StatusParseError("%s:%d: %s: nothing after the device name" % (source, lineno, name))
        if len(toks) >= 3 and _uint(toks[0]) and _uint(toks[1]) and toks[2] in DM_TARGET_TYPES:
            if toks[2] != "multipath":
                continue            # another target type (linear, striped, ...)
            _check_sectors(toks[0], toks[1], "%s:%d" % (source, lineno))
            out.append(DmsetupLine(lineno, name, int(toks[0]), int(toks[1]), "multipath", " ".join(toks[3:])))
        elif name is not None and len(toks) >= 3 and _uint(toks[0]) and _uint(toks[1]):
            continue                # a named line of a target type we do not know: not multipath
        else:
            out.append(DmsetupLine(lineno, name, None, None, "multipath", " ".join(toks)))
    return out


def _check_sectors(start: str, length: str, where: str) -> None:
    """A target's start and length are sector_t (u64) and the device ends within it (dm-table.c)."""
    for what, v in (("start", start), ("length", length)):
        if len(v) > 20 or int(v) > U64_MAX:
            raise StatusParseError("%s: %s %s sectors does not fit sector_t (at most 2^64-1)" % (where, what, _show(v)))
    if int(start) + int(length) > U64_MAX:
        raise StatusParseError("%s: start %s + length %s sectors ends beyond sector_t (2^64-1)" % (where, start, length))


def _uint(text: str) -> bool:
    return bool(_INT.fullmatch(text)) and not text.startswith("-")


def _is_devt(text: str) -> bool:
    a, _, b = text.partition(":")
    return _uint(a) and _uint(b)


def parse_dmsetup_status(text: str, source: str = "input") -> List[dict]:
    """Parse a whole ``dmsetup status`` output: one dict per multipath line,
    ``parse_status_info``'s keys plus ``name``, ``start``, ``length``, ``lineno``."""
    out = []
    for dl in split_dmsetup_output(text, source):
        try:
            out.append(_status_entry(dl))
        except StatusParseError as e:
            raise StatusParseError("%s:%d: %s" % (source, dl.lineno, e)) from None
    return out


def _status_entry(dl: DmsetupLine) -> dict:
    """parse_status_info of one listing line, with where the line came from."""
    info = parse_status_info(dl.params)
    info.update(name=dl.name, start=dl.start, length=dl.length, lineno=dl.lineno)
    return info


def parse_dmsetup_table(text: str, source: str = "input", resolve_device=None, nr_cpu_ids=None) -> List[tuple]:
    """Parse a whole ``dmsetup table`` output: ``(DmsetupLine, Multipath)``
    per multipath line, each built by the kernel's constructor checks.

    Device names that are not ``major:minor`` (a hand-written table) get a
    number of their own (259:N) unless ``resolve_device`` says otherwise.
    ``nr_cpu_ids`` (default: this machine's CPU count) sizes io-affinity's
    CPU masks, as the kernel that printed the table did."""
    import os

    from ..selectors import CpuTopology
    from ..kernel import parse_devt
    from .errors import TargetError
    from .table import construct

    names: dict = {}

    def resolve(token: str):
        if resolve_device is not None:
            found = resolve_device(token)
            if found is not None:
                return found
        devt = parse_devt(token)
        if devt is not None:
            return devt
        return names.setdefault(token, (259, len(names)))

    out = []
    for dl in split_dmsetup_output(text, source):
        try:
            m = construct(dl.params, resolve_device=resolve,
                          selector_env={"topology": CpuTopology(nr_cpu_ids or os.cpu_count() or 1)})
        except TargetError as e:
            raise StatusParseError("%s:%d: table rejected: %s" % (source, dl.lineno, e)) from None
        if dl.name:
            m.device_name = dl.name
        m.table_start = dl.start or 0
        m.table_length = dl.length or 0
        out.append((dl, m))
    return out


def explain_dmsetup(text: str, source: str = "input", kind: str = "auto", table=None,
                    as_json: bool = False):
    """What ``mpathlab status`` prints: explanation lines (or, with
    ``as_json``, a list of parsed entries) for every multipath line of a
    ``dmsetup status`` / ``dmsetup table`` listing.

    A table line (in the input or ``table``) names the selectors of the
    status lines of the same device (or of every unnamed one)."""
    from .explain import explain_status, explain_table

    selectors_of: dict = {}
    tables_of: dict = {}
    if table:
        for dl, m in parse_dmsetup_table(table, "--table"):
            selectors_of[dl.name] = [pg.ps.name for pg in m.priority_groups]
            tables_of[dl.name] = m
    entries: List[Tuple[str, DmsetupLine, Any]] = []
    for dl in split_dmsetup_output(text, source):
        entry: Optional[Tuple[str, DmsetupLine, Any]] = None
        status_err = None
        if kind in ("auto", "status"):
            try:
                entry = ("status", dl, _status_entry(dl))
            except StatusParseError as e:
                status_err = e
        if entry is None and kind in ("auto", "table"):
            try:
                ((tdl, m),) = parse_dmsetup_table(_rebuild(dl), source)
                tdl.lineno = dl.lineno
                entry = ("table", dl, m)
                selectors_of[dl.name] = [pg.ps.name for pg in m.priority_groups]
                tables_of[dl.name] = m
            except StatusParseError as e:
                if status_err is not None:
                    raise StatusParseError("%s:%d: neither a multipath status (%s) nor a table (%s)"
                                           % (source, dl.lineno, status_err,
                                              str(e).split(": ", 2)[-1])) from None
                raise
        if entry is None:
            raise StatusParseError("%s:%d: %s" % (source, dl.lineno, status_err))
        entries.append(entry)
    if not entries:
        raise StatusParseError("%s: no multipath lines (a `dmsetup status` or `dmsetup table` line, e.g. "
                               "'mpatha: 0 2097152 multipath 2 0 0 0 1 1 A 0 2 0 8:16 A 0 8:32 A 0')" % source)
    for what, dl, obj in entries:
        if what == "status":
            m = tables_of.get(dl.name, tables_of.get(None))
            if m is not None:
                _check_against_table(obj, m, "%s:%d" % (source, dl.lineno))
    if as_json:
        out = []
        for what, dl, obj in entries:
            if what == "status":
                out.append(dict(obj, kind="status", selectors=selectors_of.get(dl.name)))
            else:
                out.append({"kind": "table", "name": dl.name, "start": dl.start, "length": dl.length,
                            "lineno": dl.lineno, "table": obj.table(),
                            "selectors": [pg.ps.name for pg in obj.priority_groups]})
        return out
    lines: List[str] = []
    for what, dl, obj in entries:
        if lines:
            lines.append("")
        if what == "status":
            lines.extend(explain_status(obj, selectors_of.get(dl.name, selectors_of.get(None))))
        else:
            lines.extend(explain_table(obj, dl.name))
    return lines


def _rebuild(dl: DmsetupLine) -> str:
    head = "%s: " % dl.name if dl.name else ""
    if dl.start is not None:
        return "%s%d %d multipath %s" % (head, dl.start, dl.length, dl.params)
    return head + dl.params


def _check_against_table(info: dict, m, where: str) -> None:
    """A status read with another device's table would get its fields named wrongly: refuse a status
    whose groups, paths or selector fields do not have the table's shape."""
    from .explain import SELECTOR_FIELDS
    groups = info["groups"]
    if len(groups) != len(m.priority_groups):
        raise StatusParseError("%s: the status has %d priority group(s), the table given for it %d: not this "
                               "device's table" % (where, len(groups), len(m.priority_groups)))
    for gi, (g, pg) in enumerate(zip(groups, m.priority_groups), 1):
        if len(g["paths"]) != len(pg.pgpaths):
            raise StatusParseError("%s: group %d has %d path(s) in the status, %d in the table given for it: "
                                   "not this device's table" % (where, gi, len(g["paths"]), len(pg.pgpaths)))
        fields = SELECTOR_FIELDS.get(pg.ps.name)
        nfields = g.get("nr_fields", len(g["paths"][0]["selector"]) if g["paths"] else 0)
        if fields and (nfields != len(fields[1]) or len(g["selector_status"]) != len(fields[0])):
            raise StatusParseError("%s: group %d: %s prints %d group and %d per-path status field(s), the status "
                                   "has %d and %d: not this device's table"
                                   % (where, gi, pg.ps.name, len(fields[0]), len(fields[1]),
                                      len(g["selector_status"]), nfields))
