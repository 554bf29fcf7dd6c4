"""Parsing of sizes and durations the way fio and the topology files write them."""
from __future__ import annotations

import re
from typing import Optional, Union

_SIZE_RE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([a-zA-Z]*)\s*$")
# fio's default kb_base=1024: k, K, KB and KiB all mean 1024.
_SIZE_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mb": 1 << 20,
               "mib": 1 << 20, "g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30, "t": 1 << 40, "tb": 1 << 40,
               "tib": 1 << 40, "p": 1 << 50, "pb": 1 << 50, "pib": 1 << 50}

_TIME_UNITS_NS = {"ns": 1, "us": 1_000, "usec": 1_000, "ms": 1_000_000, "msec": 1_000_000,
                  "s": 1_000_000_000, "sec": 1_000_000_000, "m": 60_000_000_000, "min": 60_000_000_000,
                  "h": 3_600_000_000_000, "d": 86_400_000_000_000}


class UnitError(ValueError):
    pass


def parse_size(text: Union[str, int], what: str = "size") -> int:
    """'4k' -> 4096, '500m' -> 524288000, 512 -> 512."""
    if isinstance(text, bool):
        raise UnitError("%s: expected a byte count, got %r" % (what, text))
    if isinstance(text, int):
        if text < 0:
            raise UnitError("%s: must not be negative, got %d" % (what, text))
        return text
    m = _SIZE_RE.match(str(text))
    if not m or m.group(2).lower() not in _SIZE_UNITS:
        raise UnitError("%s: cannot read %r as a size (use e.g. 4k, 1m, 500MiB)" % (what, text))
    value = float(m.group(1)) * _SIZE_UNITS[m.group(2).lower()]
    return int(round(value))


# Durations are ns in a signed 64-bit integer, as ktime_t (about 292 years).
MAX_DURATION_NS = (1 << 63) - 1


def _bounded_ns(value: float, what: str, text) -> int:
    if value != value or not -1 < value <= MAX_DURATION_NS:
        raise UnitError("%s: %r is not a duration below 2^63 ns (292 years)" % (what, text))
    return int(round(value))


def parse_duration_ns(text: Union[str, int, float], what: str = "duration",
                      default_unit: Optional[str] = None) -> int:
    """'100us' -> 100000; a bare number is in ``default_unit``.

    Without a default unit a bare number other than 0 is refused: '400'
    could mean 400 us as easily as 400 ns, and a wrong guess silently
    changes a model by a factor of 1000."""
    if isinstance(text, bool):
        raise UnitError("%s: expected a duration, got %r" % (what, text))
    if isinstance(text, (int, float)):
        if text < 0:
            raise UnitError("%s: must not be negative, got %r" % (what, text))
        return _bounded_ns(text * _unit_ns(default_unit, what, text), what, text)
    m = _SIZE_RE.match(str(text))
    unit = m.group(2).lower() if m else None
    if not m or (unit and unit not in _TIME_UNITS_NS):
        raise UnitError("%s: cannot read %r as a duration (use e.g. 100us, 2ms, 10s)" % (what, text))
    return _bounded_ns(float(m.group(1)) * (_TIME_UNITS_NS[unit] if unit else _unit_ns(default_unit, what, text)),
                       what, text)


def _unit_ns(default_unit: Optional[str], what: str, text) -> int:
    if default_unit is not None:
        return _TIME_UNITS_NS[default_unit]
    _bounded_ns(float(text), what, text)          # inf, nan or beyond 2^63 in any unit: say that first
    try:
        zero = float(text) == 0
    except (TypeError, ValueError):
        zero = False
    if zero:
        return 1
    raise UnitError("%s: %r has no unit (write e.g. %sus, %sms or %sns)" % (what, text, text, text, text))


def format_ns(ns: float) -> str:
    """Human-readable duration for tables."""
    if ns >= 1e9:
        return "%.2fs" % (ns / 1e9)
    if ns >= 1e6:
        return "%.2fms" % (ns / 1e6)
    if ns >= 1e3:
        return "%.1fus" % (ns / 1e3)
    return "%dns" % ns
