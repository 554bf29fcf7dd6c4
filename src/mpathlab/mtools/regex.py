"""Regular expressions as multipath-tools matches them.

multipath compiles every vendor/product/revision of a device entry and every blacklist
pattern with POSIX regcomp(REG_EXTENDED | REG_NOSUB) and tests them with regexec: an
unanchored search for any match.  Here the POSIX extended syntax is translated into RE2
syntax (google-re2: linear time, so a pattern from a user file cannot make mpathlab run
away) and searched with RE2.  Only whether a match exists is used, so POSIX's
leftmost-longest rule and RE2's leftmost-first rule give the same answer.

Where glibc's ERE and RE2 differ, the translation follows glibc:
- inside a bracket expression a backslash is an ordinary character, a leading ``]`` is a
  member, ``[:class:]`` names a class, and ``[`` is an ordinary member (``[[0-9]``);
- outside brackets ``\\X`` is the character X, except glibc's GNU operators ``\\w \\W
  \\s \\S \\b \\B \\< \\>`` (word start and end need lookaround, which RE2 lacks: the rare
  pattern with them is matched with Python's re); a back-reference is refused (RE2 has
  none; no built-in or corpus pattern uses one);
- ``*``, ``+``, ``?`` or an interval with nothing to repeat (at the start, after ``(``,
  ``|``, ``^`` or ``$``) and a ``{`` that does not start a valid interval are errors, as
  in glibc; ``{,n}`` is ``{0,n}``; ``\\``` and ``\\'`` are the text's start and end.

The property test in tests/ compares this with glibc's own regcomp/regexec (ctypes).
"""
from __future__ import annotations

from functools import lru_cache
from typing import Optional

try:
    import re2 as _re2
except ImportError:            # pragma: no cover - google-re2 is a dependency
    _re2 = None
import re as _re


class RegexError(ValueError):
    pass


_WORD_START = "\\b(?=\\w)"
_WORD_END = "\\b(?<=\\w)"


# POSIX classes spelled out as ranges (the C locale multipath runs in), so both RE2 and Python's re read them
_CLASSES = {"alpha": "a-zA-Z", "digit": "0-9", "alnum": "a-zA-Z0-9", "upper": "A-Z", "lower": "a-z",
            "space": "\\x09-\\x0d\\x20", "blank": "\\x09\\x20", "punct": "\\x21-\\x2f\\x3a-\\x40\\x5b-\\x60\\x7b-\\x7e",
            "print": "\\x20-\\x7e", "graph": "\\x21-\\x7e", "cntrl": "\\x00-\\x1f\\x7f",
            "xdigit": "0-9A-Fa-f"}
_META = set("\\.+*?()|[]{}^$")


def _lit(c: str) -> str:
    if c.isalnum() or c == "_":
        return c
    return "\\x%02x" % ord(c) if ord(c) < 128 else c


def _bracket(p: str, i: int):
    """Translate the bracket expression starting after '[' at p[i]; return (re2 text, next index)."""
    neg = False
    if i < len(p) and p[i] == "^":
        neg = True
        i += 1
    items = []
    first = True
    while True:
        if i >= len(p):
            raise RegexError("brackets ([ ]) not balanced")
        c = p[i]
        if c == "]" and not first:
            i += 1
            break
        first = False
        if c == "[" and i + 1 < len(p) and p[i + 1] in ":.=":
            kind = p[i + 1]
            end = p.find(kind + "]", i + 2)
            if end < 0:
                raise RegexError("brackets ([ ]) not balanced")
            name = p[i + 2:end]
            if kind == ":":
                if name not in _CLASSES:
                    raise RegexError("invalid character class")
                if p[end + 2:end + 3] == "-" and p[end + 3:end + 4] not in ("]", ""):
                    raise RegexError("invalid range end")      # a class cannot start a range
                items.append(_CLASSES[name])
            else:
                if len(name) != 1:
                    raise RegexError("invalid collation character")
                items.append(_lit(name))
            i = end + 2
            continue
        # a range a-z (the '-' last or first is literal)
        if i + 2 < len(p) and p[i + 1] == "-" and p[i + 2] != "]":
            hi = p[i + 2]
            if hi == "[" and i + 3 < len(p) and p[i + 3] in ".=:":
                raise RegexError("invalid range end")
            if ord(hi) < ord(c):
                raise RegexError("invalid range end")
            items.append("%s-%s" % (_lit(c), _lit(hi)))
            i += 3
            continue
        items.append(_lit(c))
        i += 1
    return "[%s%s]" % ("^" if neg else "", "".join(items)), i


def translate(p: str) -> str:
    """POSIX ERE (glibc) -> RE2 syntax; RegexError where glibc's regcomp fails."""
    out = []
    i = 0
    n = len(p)
    depth = 0
    can_repeat = False          # is there an operand for * + ? {
    atom = 0                    # where in out the operand of the next repetition starts
    groups = []                 # out positions of open groups
    stacked = False             # the operand already carries a repetition

    def wrap_if_stacked():
        # glibc allows stacked repetition (a**, a+{2}); RE2 refuses it or reads +? as lazy:
        # group the repeated operand first (same set of matches)
        if stacked:
            out.insert(atom, "(?:")
            out.append(")")
    while i < n:
        c = p[i]
        if c == "\\":
            if i + 1 >= n:
                raise RegexError("trailing backslash (\\)")
            d = p[i + 1]
            i += 2
            atom, stacked = len(out), False
            if d in "wWsSbB":
                out.append("\\" + d)
                can_repeat = d in "wWsS"
            elif d in "<>":
                # word start / end: a word boundary with a word character after / before it; RE2 has no
                # lookaround, so such a pattern is matched with Python's re (see PosixRegex)
                out.append(_WORD_START if d == "<" else _WORD_END)
                can_repeat = False
            elif d == "`":
                out.append("\\A")
                can_repeat = False
            elif d == "'":
                out.append("\\z")
                can_repeat = False
            elif d.isdigit() and d != "0":
                raise RegexError("back-references are not supported")
            else:
                out.append(_lit(d))
                can_repeat = True
            continue
        if c == "[":
            text, i = _bracket(p, i + 1)
            atom, stacked = len(out), False
            out.append(text)
            can_repeat = True
            continue
        if c in "*+?":
            if not can_repeat:
                raise RegexError("invalid preceding regular expression")
            else:
                wrap_if_stacked()
                out.append(c)
                stacked = True
            i += 1
            continue
        if c == "{":
            j = p.find("}", i)
            body = p[i + 1:j] if j > 0 else None
            ok = body is not None and _re.fullmatch(r"\d*(,\d*)?", body) is not None and body not in ("",)
            if not can_repeat:
                if ok or j < 0:
                    raise RegexError("invalid preceding regular expression")
                raise RegexError("invalid content of \\{\\}")
            if not ok:
                raise RegexError("invalid content of \\{\\}" if j > 0 else "unmatched \\{")
            lo, comma, hi = body.partition(",")
            lo = lo or "0"
            if hi and int(hi) < int(lo) or int(lo) > 32767 or (hi and int(hi) > 32767):
                raise RegexError("invalid content of \\{\\}")
            body = lo + comma + hi
            wrap_if_stacked()
            out.append("{%s}" % body)
            stacked = True
            i = j + 1
            continue
        if c == "(":
            depth += 1
            groups.append(len(out))
            out.append("(?:")
            can_repeat = False
            i += 1
            continue
        if c == ")":
            if depth == 0:
                atom, stacked = len(out), False
                out.append(_lit(c))       # an unmatched ')' is an ordinary character in glibc's ERE
                can_repeat = True
            else:
                depth -= 1
                atom, stacked = groups.pop(), False
                out.append(")")
                can_repeat = True
            i += 1
            continue
        if c in "|^$":        # alternation and anchors mean the same in RE2; nothing after them repeats
            out.append(c)
            can_repeat = False
            i += 1
            continue
        if c == ".":
            atom, stacked = len(out), False
            out.append("(?s:.)")
            can_repeat = True
            i += 1
            continue
        atom, stacked = len(out), False
        out.append(_lit(c))
        can_repeat = True
        i += 1
    if depth:
        raise RegexError("unmatched ( or \\(")
    return "".join(out)


class PosixRegex:
    def __init__(self, pattern: str):
        self.pattern = pattern
        self.re2_pattern = translate(pattern)
        try:
            if _WORD_START in self.re2_pattern or _WORD_END in self.re2_pattern:
                # only \\< and \\> need lookaround; no built-in or corpus pattern has them
                self._rx = _re.compile(self.re2_pattern.replace("\\z", "\\Z"))
            elif _re2 is not None:
                opts = _re2.Options()
                opts.log_errors = False
                self._rx = _re2.compile(self.re2_pattern, opts)
            else:           # pragma: no cover
                self._rx = _re.compile(self.re2_pattern)
        except Exception as e:        # RE2 refuses what glibc accepted: report, do not crash
            raise RegexError(str(e)) from None

    def search(self, s: str) -> bool:
        return self._rx.search(s) is not None


@lru_cache(maxsize=4096)
def compile_posix(pattern: str) -> PosixRegex:
    return PosixRegex(pattern)


def posix_search(pattern: Optional[str], s: Optional[str]) -> bool:
    """regexec(regcomp(pattern, REG_EXTENDED|REG_NOSUB), s) == 0."""
    return compile_posix(pattern).search(s or "")


def valid(pattern: str) -> bool:
    try:
        compile_posix(pattern)
        return True
    except RegexError:
        return False
