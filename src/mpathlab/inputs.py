"""Reading user files so that every problem is one line naming the file,
the line and the option (the CLI exits 3 on :class:`InputFileError`), and a
missing optional package is told apart (:class:`MissingDependency`, exit 5).
"""
from __future__ import annotations

import re
from typing import List, Optional, Tuple

try:
    import tomllib
except ModuleNotFoundError:  # Python < 3.11
    import tomli as tomllib  # type: ignore


class InputFileError(ValueError):
    """A user file cannot be used: the message is one line, ``FILE:LINE: problem``."""


class TopologyError(ValueError):
    """A topology file (or table line) the reader refuses."""

    def __init__(self, msg: str, key: Optional[Tuple[str, str]] = None):
        super().__init__(msg)
        self.key = key        # (section, key): load_topology adds the line it is on


class InputError(Exception):
    """Bad user input that has no more specific exception type."""


class MissingDependency(RuntimeError):
    """An optional package a feature needs is not installed (the CLI exits 5)."""

    def __init__(self, package: str, feature: str, install: str):
        self.package = package
        super().__init__("%s needs %s, which is not installed: %s" % (feature, package, install))


def require_module(module: str, package: str, feature: str, install: str):
    """Import ``module`` or raise :class:`MissingDependency`."""
    import importlib
    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingDependency(package, feature, install) from None


def decode_text(data: bytes, path: str, what: str) -> str:
    """UTF-8 text of a file, or an error naming the line of the first bad byte."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise InputFileError("%s:%d: not UTF-8 text (byte 0x%02x at offset %d); a %s must be a text file"
                             % (path, line, data[e.start], e.start, what)) from None


# Compressed files people hand over instead of the text (multipath.conf.gz, a job file from a bug report).
_COMPRESSED = ((b"\x1f\x8b", "gzip"), (b"\xfd7zXZ\x00", "xz"), (b"BZh", "bzip2"), (b"\x28\xb5\x2f\xfd", "zstd"))
# C0 controls other than tab, LF, CR (and form feed, which config files use as a page break), DEL and the
# C1 controls: none belongs in a text input, and echoing them (ESC sequences) would drive the terminal.
_CONTROL = re.compile("[\x00-\x08\x0b\x0e-\x1f\x7f-\x9f]")


def binary_problem(data: bytes, what: str) -> Optional[Tuple[int, str]]:
    """(line, problem) when ``data`` is compressed or binary rather than text, else None."""
    for magic, name in _COMPRESSED:
        if data.startswith(magic) and (name != "bzip2" or data[3:4].isdigit()):
            return 1, "%s-compressed data: a %s must be plain text (decompress it first)" % (name, what)
    if b"\0" in data:
        return data.count(b"\n", 0, data.index(b"\0")) + 1, \
            "a NUL byte: a %s must be a text file, this looks binary" % what
    return None


def control_character(text: str) -> Optional[Tuple[int, int, int]]:
    """(line, code point, column) of the first control character in ``text``, else None."""
    m = _CONTROL.search(text)
    if not m:
        return None
    line = text.count("\n", 0, m.start()) + 1
    col = m.start() - (text.rfind("\n", 0, m.start()) + 1) + 1
    return line, ord(m.group()), col


def check_text(text: str, source: str, what: str, err=None) -> str:
    """``text`` unchanged, or an error at the first control character (never echoed raw)."""
    ctl = control_character(text)
    if ctl:
        raise (err or InputFileError)("%s:%d: a control character U+%04X (column %d): a %s must be plain text"
                                      % ((source,) + ctl + (what,)))
    return text


def decode_checked(data: bytes, source: str, what: str, err=None) -> str:
    """Bytes of a text input as text: compressed, binary, non-UTF-8 or control characters are refused."""
    bad = binary_problem(data, what)
    if bad:
        raise (err or InputFileError)("%s:%d: %s" % (source, bad[0], bad[1]))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise (err or InputFileError)("%s:%d: not UTF-8 text (byte 0x%02x at offset %d); a %s must be a text file"
                                      % (source, line, data[e.start], e.start, what)) from None
    return check_text(text, source, what, err)


def read_text(path: str, what: str) -> str:
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise InputFileError("cannot read %s %s: %s" % (what, path, e.strerror or e)) from None
    return decode_checked(data, path, what)


def load_lab_cells(path: str, what: str, problem) -> list:
    """The cells of a kernel-lab results file (a JSON list of objects, as validation/kernel-lab/grid.py
    collect writes them).  PROBLEM(cell) says what makes one cell unusable ("" when nothing); anything
    else is an InputFileError naming the file and the line or the cell (counted from 1)."""
    import json
    try:
        cells = json.loads(read_text(path, what))
    except json.JSONDecodeError as e:
        raise InputFileError("%s:%d: not JSON: %s" % (path, e.lineno, e.msg)) from None
    except RecursionError:
        raise InputFileError("%s: nested too deep to be %s" % (path, what)) from None
    if not isinstance(cells, list):
        raise InputFileError("%s: not a list of cells (%s as grid.py collect writes them)" % (path, what))
    for n, c in enumerate(cells, 1):
        why = problem(c) if isinstance(c, dict) else "not an object"
        if why:
            raise InputFileError("%s: cell %d: %s" % (path, n, why))
    return cells


def field_problem(obj: dict, fields, limits=None) -> str:
    """The first of FIELDS ((name, type or types, required)) that OBJ lacks or holds with another type
    (a bool is not a number), or whose number is outside LIMITS[name] = (low, high); "" when none."""
    for name, kind, required in fields:
        v = obj.get(name)
        if v is None and not required:
            continue
        kinds = kind if isinstance(kind, tuple) else (kind,)
        if not isinstance(v, kinds) or isinstance(v, bool):
            return "%s is %s" % (name, "missing" if v is None else "not %s" % " or ".join(_KIND[k] for k in kinds))
        lo, hi = (limits or {}).get(name, (None, None))
        if lo is not None and not lo <= v <= hi:
            return "%s is %s, not from %s to %s" % (name, v, lo, hi)
    return ""


_KIND = {str: "text", int: "an integer", float: "a number", list: "a list", dict: "an object"}


_LONG_NUMBER = re.compile(r"[0-9_]{4000,}")
_TOML_AT = re.compile(r"\s*\(at line (\d+), column (\d+)\)\s*$")


def loads_toml(text: str, path: str, what: str = "topology") -> dict:
    """tomllib.loads with errors as ``FILE:LINE: invalid TOML: ... (column N)``."""
    try:
        return tomllib.loads(text)
    except ValueError as e:
        if not isinstance(e, tomllib.TOMLDecodeError):
            # tomllib's int() of a number longer than Python's int-string limit (4300 digits)
            m = _LONG_NUMBER.search(text)
            line = text.count("\n", 0, m.start()) + 1 if m else None
            raise InputFileError("%s: a number of %s digits in the %s file; no value here needs more than 20"
                                 % ("%s:%d" % (path, line) if line else path,
                                    len(m.group()) if m else "thousands of", what)) from None
        return _toml_error(e, text, path, what)


def _toml_error(e, text: str, path: str, what: str):
    msg = str(e)
    m = _TOML_AT.search(msg)
    line = getattr(e, "lineno", None)
    col = getattr(e, "colno", None)
    if m:
        line, col = int(m.group(1)), int(m.group(2))
        msg = msg[:m.start()]
    elif " (at end of document)" in msg:
        msg = msg.replace(" (at end of document)", "")
        line = text.count("\n") + 1
    where = "%s:%s" % (path, line) if line else path
    raise InputFileError("%s: invalid TOML in the %s file: %s%s"
                         % (where, what, msg, " (column %d)" % col if col else "")) from None


def load_toml(path: str, what: str = "topology") -> Tuple[dict, str]:
    text = read_text(path, what)
    return loads_toml(text, path, what), text


_HEADER = re.compile(r"^\s*(\[\[?)\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")
_KEY = re.compile(r"^\s*([A-Za-z0-9_\-\"'.]+)\s*=")


def toml_key_line(text: str, section: str, key: Optional[str] = None, index: int = 0) -> Optional[int]:
    """The line of ``key`` inside ``[section]`` (``index``-th for ``[[section]]``),
    else of the section header; None when neither is found.  Best effort: it
    reads headers and ``key =`` lines, not every TOML form."""
    current = None
    count = {}
    header_line = None
    for no, line in enumerate(text.splitlines(), 1):
        h = _HEADER.match(line)
        if h:
            name = h.group(2).replace('"', "").replace("'", "")
            n = count.get(name, -1) + 1
            count[name] = n
            current = (name, n)
            if name == section and n == index:
                header_line = no
            continue
        k = _KEY.match(line)
        if not k:
            continue
        kname = k.group(1).replace('"', "").replace("'", "")
        if current == (section, index) and key is not None and kname == key:
            return no
        if current is None:
            # dotted keys at top level: paths.sdb.service = ...
            full = kname
            if full == "%s.%s" % (section, key) or (key is None and full.startswith(section + ".")):
                return no
    return header_line


_PATH_KEY = re.compile(r"\bpaths\.([^\s.:,'\"]+)(?:\.([A-Za-z_]+))?")
_MP_KEY = re.compile(r"\[multipath\] ([A-Za-z_]+)")
_MSG_KEY = re.compile(r"\bmessages\[(\d+)\](?:\.([A-Za-z_]+))?")
_BARE = ("table", "hz", "uptime", "seed", "activation", "sched_clock_offset", "hst_select_clock",
         "queue_if_no_path_timeout_secs", "nr_cpus", "rq_stats", "force_jiffies_start")


def locate_topology_error(text: str, message: str) -> Optional[int]:
    """The line a topology error message is about, found from the option it names."""
    if "[nvme] " in message:
        return _locate_nvme(text, message)
    m = re.search(r"\[map\] (?:has unknown key\(s\) )?([A-Za-z_]+)", message)     # --conf path topologies
    if m:
        return toml_key_line(text, "map", m.group(1))
    m = _PATH_KEY.search(message)
    unknown = re.search(r"unknown key\(s\) ([A-Za-z0-9_\-]+)", message)
    if m:
        return toml_key_line(text, "paths." + m.group(1), m.group(2) or (unknown.group(1) if unknown else None))
    m = _MSG_KEY.search(message)
    if m:
        return toml_key_line(text, "messages", m.group(2) or "at", int(m.group(1)))
    if unknown and "[multipath]" in message:
        return toml_key_line(text, "multipath", unknown.group(1))
    m = _MP_KEY.search(message)
    if m:
        return toml_key_line(text, "multipath", m.group(1))
    for key in _BARE:
        if re.search(r"(^|[\s:(])%s\b" % key, message):
            line = toml_key_line(text, "multipath", key)
            if line:
                return line
    return None


_NVME_TABLE = re.compile(r"\[nvme\] (controllers)\.([^\s.:,'\"]+)(?:\.([A-Za-z_]+))?|"
                         r"\[nvme\] (ana_groups|events)\[(\d+)\](?:\.([A-Za-z_]+))?|\[nvme\] ([A-Za-z_]+)")


def _locate_nvme(text: str, message: str) -> Optional[int]:
    """[nvme] errors (mpathlab.nvme.topology): "[nvme] KEY ...", "[nvme] controllers.NAME[.KEY]",
    "[nvme] ana_groups[N][.KEY]", "[nvme] events[N][.KEY]", "... unknown key(s) KEY"."""
    m = _NVME_TABLE.search(message)
    if not m:
        return None
    unknown = re.search(r"unknown key\(s\) ([A-Za-z0-9_\-]+)", message)
    extra = unknown.group(1) if unknown else None
    if m.group(1):
        return toml_key_line(text, "nvme.controllers." + m.group(2), m.group(3) or extra)
    if m.group(4):
        return toml_key_line(text, "nvme." + m.group(4), m.group(6) or extra, int(m.group(5)))
    key = m.group(7)
    return toml_key_line(text, "nvme", extra if key == "has" else key)


def with_line(message: str, path: str, line: Optional[int]) -> str:
    """``name: problem`` -> ``name:LINE: problem`` (the name being ``path`` or its basename)."""
    import os
    if not line:
        return message
    for name in (path, os.path.basename(path)):
        if message.startswith(name + ": "):
            return "%s:%d: %s" % (path, line, message[len(name) + 2:])
    return "%s:%d: %s" % (path, line, message)


def arg_int(lo: int, hi: int):
    """An argparse ``type`` for a whole number in ``lo..hi`` written with ASCII digits (``int()`` would
    also take "1_0", "+5" or Arabic-Indic digits); argparse reports a refusal as a usage error."""
    import argparse

    def parse(text: str) -> int:
        t = text.strip()
        if not re.fullmatch(r"-?[0-9]{1,20}", t):
            raise argparse.ArgumentTypeError("%r is not a whole number (decimal digits)" % text[:40])
        v = int(t)
        if not lo <= v <= hi:
            raise argparse.ArgumentTypeError("%d is outside %d..%d" % (v, lo, hi))
        return v
    parse.__name__ = "whole number"
    return parse


SEED_MAX = 2 ** 64 - 1      # the compiled core seeds its generators from 64 bits


def csv_list(text: str, what: str, conv=str) -> list:
    """A non-empty comma-separated option value, each item converted by ``conv``."""
    try:
        vals = [conv(v.strip()) for v in text.split(",") if v.strip()]
    except ValueError:
        raise InputError("%s: cannot read %r as a comma-separated list" % (what, text)) from None
    if not vals:
        raise InputError("%s: empty list" % what)
    return vals


def seed_list(text: str, option: str = "--seeds") -> List[int]:
    """A comma-separated list of seeds, each a whole number in 0..SEED_MAX (the range --seed takes)."""
    seeds = csv_list(text, option, int)
    for v in seeds:
        if not 0 <= v <= SEED_MAX:
            raise InputError("%s: %d is outside 0..%d" % (option, v, SEED_MAX))
    return seeds


def c_atoi(s: str) -> int:
    """glibc's ``atoi``: ``(int) strtol(s, NULL, 10)``.  Leading C whitespace, an optional sign, ASCII
    digits only; strtol saturates at LONG_MIN/LONG_MAX (64-bit), and the cast to int keeps the low 32
    bits, so "18446744073709551616" gives (int) LONG_MAX = -1, never a 2^64 repeat count."""
    m = re.match(r"[ \t\n\v\f\r]*([+-]?)([0-9]+)", s)
    if not m:
        return 0
    digits = m.group(2).lstrip("0") or "0"
    cap = 2 ** 63 if m.group(1) == "-" else 2 ** 63 - 1      # |LONG_MIN|, LONG_MAX
    v = cap if len(digits) > 19 else min(int(digits), cap)
    if m.group(1) == "-":
        v = -v
    v &= 0xFFFFFFFF
    return v - 2 ** 32 if v >= 2 ** 31 else v
