"""Emulation of the C-level semantics the dm code relies on.

Python integers are unbounded; the kernel's are not.  Everything that must
behave like a ``u64``/``s64``/``u32``/``int`` goes through the helpers here so
that overflow and sign quirks are reproduced exactly and in one place.
"""
from __future__ import annotations

import errno as _errno
from typing import List, Optional, Sequence

U32 = (1 << 32) - 1
U64 = (1 << 64) - 1

EINVAL = _errno.EINVAL
ENOMEM = _errno.ENOMEM
EEXIST = _errno.EEXIST
EBUSY = _errno.EBUSY
EIO = _errno.EIO
ENODEV = _errno.ENODEV
EOVERFLOW = _errno.EOVERFLOW
ENXIO = _errno.ENXIO


def s64(x: int) -> int:
    """Reinterpret the low 64 bits of ``x`` as a signed 64-bit integer."""
    x &= U64
    return x - (1 << 64) if x >> 63 else x


def s32(x: int) -> int:
    """Reinterpret the low 32 bits of ``x`` as a signed 32-bit integer."""
    x &= U32
    return x - (1 << 32) if x >> 31 else x


def time_after64(a: int, b: int) -> bool:
    """Kernel ``time_after64(a, b)``: wrap-safe "a is later than b"."""
    return s64(b - a) < 0


def time_before64(a: int, b: int) -> bool:
    """Kernel ``time_before64(a, b)``: wrap-safe "a is earlier than b"."""
    return s64(a - b) < 0


_DIGITS = frozenset("0123456789")
# Kernel ctype isspace(): the C locale set plus NBSP (0xA0, Latin-1 table).
KERNEL_SPACE = frozenset(" \t\n\v\f\r\xa0")


def parse_u32(token: Optional[str]) -> Optional[int]:
    """Kernel ``sscanf(tok, "%u%c")`` that must return exactly one conversion.

    Leading whitespace is skipped, no sign and no base prefix are accepted,
    digits accumulate with wrap-around and the value is stored as a u32.  Any
    trailing character makes the token invalid.  Returns None when invalid.
    """
    if token is None:
        return None
    i = 0
    n = len(token)
    while i < n and token[i] in KERNEL_SPACE:
        i += 1
    if i == n:
        return None
    digits = token[i:]
    if not all(c in _DIGITS for c in digits):
        return None
    return _wrapped_u64(digits) & U32


def _wrapped_u64(digits: str) -> int:
    """The kernel's simple_strtoull of ASCII ``digits``: accumulated modulo 2^64.  In chunks, so a
    5,000-digit token neither hits Python's int-string limit nor costs quadratic time."""
    v = 0
    for i in range(0, len(digits), 1000):
        chunk = digits[i:i + 1000]
        v = (v * 10 ** len(chunk) + int(chunk)) & U64
    return v


def split_args(params: str) -> List[str]:
    """dm core ``dm_split_args``: whitespace-separated tokens, backslash escapes.

    A backslash makes the next character literal (the backslash is dropped);
    a trailing lone backslash stays as it is.  There is no other quoting.
    """
    tokens: List[str] = []
    cur: List[str] = []
    in_token = False
    i = 0
    n = len(params)
    while i < n:
        c = params[i]
        if c == "\\" and i + 1 < n:
            cur.append(params[i + 1])
            in_token = True
            i += 2
            continue
        if c in KERNEL_SPACE:
            if in_token:
                tokens.append("".join(cur))
                cur = []
                in_token = False
        else:
            cur.append(c)
            in_token = True
        i += 1
    if in_token:
        tokens.append("".join(cur))
    return tokens


MINORBITS = 20
MAJOR_MAX = (1 << (32 - MINORBITS)) - 1
MINOR_MAX = (1 << MINORBITS) - 1


def parse_devt(token: str) -> Optional[tuple]:
    """``sscanf(path, "%u:%u%c") == 2`` plus the MKDEV overflow check.

    Returns (major, minor) or None when the token is not a valid major:minor.
    """
    if ":" not in token:
        return None
    maj_s, _, min_s = token.partition(":")
    major = parse_u32(maj_s)
    # %u after ':' skips leading whitespace too; parse_u32 handles that.
    minor = parse_u32(min_s)
    if major is None or minor is None:
        return None
    if major > MAJOR_MAX or minor > MINOR_MAX:
        return None
    return major, minor


class BitmapParseError(ValueError):
    def __init__(self, err: int, why: str):
        super().__init__(why)
        self.errno = err


_HEX = frozenset("0123456789abcdefABCDEF")


def bitmap_parse(text: str, nbits: int) -> int:
    """Kernel ``bitmap_parse``: 32-bit hex chunks, most significant first.

    The kernel scans from the end of the string: runs of commas and
    whitespace separate chunks (so they collapse), each chunk is at most
    eight hex digits, and a newline ends the string.  Errors, in the order
    the reverse scan meets them: a non-hex character is EINVAL; a ninth digit,
    more chunks than ``nbits`` needs, or a set bit at or above ``nbits`` is
    EOVERFLOW.  The character just before a full eight-digit group is skipped
    unread (lib/bitmap.c bitmap_get_x32_reverse), so "x00000001" is CPU 0.
    Returns the mask as an int.
    """
    nl = text.find("\n")
    if nl >= 0:
        text = text[:nl]
    max_chunks = (nbits + 31) // 32
    end = len(text) - 1
    value = 0
    chunk = 0
    while True:
        while end >= 0 and (text[end] in KERNEL_SPACE or text[end] == ","):
            end -= 1
        if end < 0:
            break
        if chunk >= max_chunks:
            raise BitmapParseError(EOVERFLOW, "more cpumask chunks than CPUs")
        word = 0
        for shift in range(0, 32, 4):
            c = text[end]
            end -= 1
            if c not in _HEX:
                raise BitmapParseError(EINVAL, "invalid character %r in cpumask" % c)
            word |= int(c, 16) << shift
            if end < 0 or text[end] in KERNEL_SPACE or text[end] == ",":
                break
        else:
            # After a full group of eight digits the kernel reads one more
            # character and steps past it whatever it is: a hex digit means
            # the group was too wide, anything else (even "x" in
            # "x00000001") is skipped without complaint.
            if end >= 0:
                c = text[end]
                end -= 1
                if c in _HEX:
                    raise BitmapParseError(EOVERFLOW, "cpumask chunk wider than 32 bits")
        value |= word << (32 * chunk)
        chunk += 1
    if chunk * 32 >= nbits and value >> nbits:
        raise BitmapParseError(EOVERFLOW, "cpumask has bits beyond nr_cpu_ids")
    return value & ((1 << nbits) - 1)


def bitmap_string(mask: int, nbits: int) -> str:
    """Kernel ``%*pb``: lowercase hex in 32-bit chunks, most significant first."""
    if nbits <= 0:
        return ""
    chunks = []
    nchunks = (nbits + 31) // 32
    for idx in range(nchunks - 1, -1, -1):
        word = (mask >> (32 * idx)) & U32
        if idx == nchunks - 1:
            bits = nbits % 32 or 32
            width = (bits + 3) // 4
            word &= (1 << bits) - 1
        else:
            width = 8
        chunks.append("%0*x" % (width, word))
    return ",".join(chunks)


def emit_join(tokens: Sequence[object]) -> str:
    """DMEMIT-style: every token followed by one space."""
    return "".join("%s " % (t,) for t in tokens)
