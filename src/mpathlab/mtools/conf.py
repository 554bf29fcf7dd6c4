"""multipath.conf read as multipath-tools reads it.

Written from a reading of multipath-tools (libmpathutil/parser.c, libmultipath/dict.c,
config.c and multipath.conf(5)) and from the output of the real binaries (the profiles in
``data/``); not translated from their code.

- A line is split into tokens; ``#`` and ``!`` start a comment outside quotes; ``{`` and
  ``}`` are tokens; a double-quoted value is one token (``""`` inside quotes is a quote).
- Each section accepts the keywords of the chosen multipath-tools version (the profile's
  keyword set, probed from that binary).  An unknown keyword is warned about and skipped
  (``FILE line N, invalid keyword: K`` at the top level, ``... invalid keyword in the S
  section: K`` inside S); a section keyword that is unknown where it stands does not open
  a section, so its lines are read in the enclosing one, as multipath does.
- A bad value is warned about in multipath's words and the keyword keeps its previous
  value; a deprecated keyword is warned about and ignored.  A regular expression regcomp
  refuses is what makes multipath give up on the file ("parsing failed", then "error
  parsing config file", exit 1): :attr:`Config.failed` is set and the caller refuses.
- After the file: device entries without vendor or product and multipaths entries
  without wwid are dropped, duplicate device entries (same vendor, product and revision
  strings) are merged into the later one (built-in entries too, silently), duplicate
  multipaths entries likewise, with multipath's messages (:attr:`Config.messages`, in the
  order it prints them).

Typed values (``Entry.get``) are what the map assembly uses; every setting also keeps the
text multipath prints for it (``Setting.printed``), which ``multipath -t`` shows.
"""
from __future__ import annotations

import re
from typing import Dict, List, Optional, Tuple

from .profile import Profile, get_profile
from .regex import RegexError, compile_posix


class ConfError(ValueError):
    """A multipath.conf multipath refuses (or mpathlab cannot read): one line naming the file and line."""


# -- tokenizer ---------------------------------------------------------------
QUOTE = object()  # the quote marker token (multipath keeps quotes as tokens too)


def tokenize(line: str) -> List[object]:
    """Split one line as multipath's alloc_strvec does: quotes become QUOTE tokens,
    the text between them one token; braces are tokens; # and ! start a comment."""
    toks: List[object] = []
    i, n = 0, len(line)
    in_string = False
    while i < n:
        c = line[i]
        if not in_string and (c.isspace() or not c.isascii()):
            i += 1
            continue
        if not in_string and c in "#!":
            break
        if c == '"' and not (in_string and line[i + 1:i + 2] == '"'):
            toks.append(QUOTE)
            in_string = not in_string
            i += 1
            continue
        if not in_string and c in "{}":
            toks.append(c)
            i += 1
            continue
        j = i
        buf = []
        while j < n:
            cj = line[j]
            if in_string:
                if cj == '"':
                    if line[j + 1:j + 2] == '"':   # "" inside quotes: a literal quote
                        buf.append('"')
                        j += 2
                        continue
                    break
            elif cj.isspace() or not cj.isascii() or cj in '!#{}"':
                break
            buf.append(cj)
            j += 1
        toks.append("".join(buf))
        i = j
    return toks


DEFAULT_CHECKINT = 5       # seconds between path checks when polling_interval is not set


class Setting:
    __slots__ = ("value", "raw", "line", "printed", "quoted")

    def __init__(self, value, raw: str, line: int, printed: Optional[str] = None, quoted: bool = True):
        self.value = value
        self.raw = raw
        self.line = line
        self.printed = raw if printed is None else printed
        self.quoted = quoted

    def __repr__(self):
        return "Setting(%r, line %d)" % (self.value, self.line)


class Entry:
    """One settings block: defaults, one device, overrides, one protocol or one multipath."""

    def __init__(self, kind: str, line: int = 0):
        self.kind = kind           # "D", "H", "O", "P", "M", "B" (blacklist device) or "builtin"
        self.line = line
        self.values: Dict[str, Setting] = {}

    def get(self, key: str, default=None):
        s = self.values.get(key)
        return default if s is None else s.value

    def has(self, key: str) -> bool:
        return key in self.values and self.values[key].value is not None

    def set(self, key: str, value, raw: str = "", line: int = 0, printed: Optional[str] = None,
            quoted: bool = True) -> "Entry":
        self.values[key] = Setting(value, raw or str(value), line, printed, quoted)
        return self

    def copy(self) -> "Entry":
        c = Entry(self.kind, self.line)
        c.values = dict(self.values)
        return c

    def __repr__(self):
        return "Entry(%s, %r)" % (self.kind, {k: s.value for k, s in self.values.items()})


class Blacklist:
    """One of blacklist / blacklist_exceptions: patterns in file order, per kind."""

    def __init__(self):
        self.devnode: List[str] = []
        self.wwid: List[str] = []
        self.property: List[str] = []
        self.protocol: List[str] = []
        self.device: List[Tuple[Optional[str], Optional[str]]] = []


class Config:
    def __init__(self, source: str = "multipath.conf", profile: Optional[Profile] = None):
        self.source = source
        self.profile = profile or get_profile()
        self.defaults = Entry("D")
        self.overrides: Optional[Entry] = None
        self.protocols: List[Entry] = []
        self.devices: List[Entry] = []
        self.multipaths: List[Entry] = []
        self.blacklist = Blacklist()
        self.exceptions = Blacklist()
        self.messages: List[str] = []      # what multipath prints while loading the file, in its words
        self.notes: List[str] = []         # mpathlab's own remarks (what the simulation does not model)
        self.failed = False                 # multipath would refuse the file ("error parsing config file")
        self.hwtable: List[Entry] = []      # built-in + user device entries after factorizing
        self.builtin_count = 0

    @property
    def warnings(self) -> List[str]:
        return self.messages

    # polling intervals as multipath fills them (seconds; DEFAULT_CHECKINT without either)
    def checkint(self) -> int:
        ci = self.defaults.get("polling_interval")
        mx = self.defaults.get("max_polling_interval")
        if not mx:
            return ci if ci else DEFAULT_CHECKINT
        if not ci:
            return mx // 4 if mx >= 4 else 1
        return min(ci, mx)

    def max_checkint(self) -> int:
        mx = self.defaults.get("max_polling_interval")
        if not mx:
            return self.checkint() * 4
        return mx


# -- values --------------------------------------------------------------------------------
class Bad(Exception):
    """A value multipath warns about (the message) and does not take."""


class Fatal(Exception):
    """A value that makes multipath's handler fail ("parsing failed")."""


def _strtol(v: str) -> Optional[int]:
    m = re.fullmatch(r"\s*([+-]?\d+)", v)
    return int(m.group(1)) if m else None


def _invalid(key, v):
    return Bad('invalid value for %s: "%s"' % (key, v))


YESNO = {"yes": True, "1": True, "no": False, "0": False}


def val_yesno(key, v, prof):
    if v not in YESNO:
        raise _invalid(key, v)
    b = YESNO[v]
    return b, "yes" if b else "no", True


def val_uint(key, v, prof, lo=0):
    n = _strtol(v)
    if n is None or n < lo:
        raise _invalid(key, v)
    return n, str(n), False


def val_capped(lo, hi=None, lo_to=None):
    def f(key, v, prof):
        n = _strtol(v)
        if n is None:
            raise _invalid(key, v)
        if n < lo:
            raise _Capped("value for %s too small, capping at %d" % (key, lo if lo_to is None else lo_to),
                          lo if lo_to is None else lo_to)
        if hi is not None and n > hi:
            raise _Capped("value for %s too large, capping at %d" % (key, hi), hi)
        return n, str(n), False
    return f


class _Capped(Exception):
    """Warned about, then taken at the cap."""

    def __init__(self, msg, value):
        super().__init__(msg)
        self.value = value


def val_no_path_retry(key, v, prof):
    if v in ("fail", "0"):
        return "fail", "fail", True
    if v == "queue":
        return "queue", "queue", True
    n = _strtol(v)
    if n is None:
        raise _invalid(key, v)
    if n < 1:
        raise _Capped("value for %s too small, capping at 1" % key, 1)
    return n, str(n), False


def val_failback(key, v, prof):
    if v in ("manual", "immediate", "followover"):
        return v, v, True
    n = _strtol(v)
    if n is None:
        raise _invalid(key, v)
    if n < 0:
        raise _Capped("value for %s too small, capping at 0" % key, "manual")
    if n == 0:
        return "manual", "manual", True
    return n, str(n), False


def val_rr_min_io(key, v, prof):
    n = _strtol(v)
    if n is None:
        raise _invalid(key, v)
    if n < 0:
        raise _Capped("value for %s too small, capping at 0" % key, None)
    if n == 0:
        return None, "", False        # 0 is unset: the next layer decides
    return n, str(n), False


def val_choice(*choices, aliases=None):
    aliases = aliases or {}

    def f(key, v, prof):
        v2 = aliases.get(v, v)
        if v2 not in choices:
            raise _invalid(key, v)
        return v2, v2, True
    return f


def val_pgpolicy(key, v, prof):
    names = ["failover", "multibus", "group_by_serial", "group_by_prio", "group_by_node_name"]
    if prof.accepts("defaults", "detect_pgpolicy_use_tpg"):
        names.append("group_by_tpg")
    if v not in names:
        raise _invalid(key, v)
    return v, v, True


def val_find_multipaths(key, v, prof):
    m = {"yes": "on", "no": "off", "on": "on", "off": "off", "strict": "strict", "greedy": "greedy",
         "smart": "smart"}
    if v not in m:
        raise _invalid(key, v)
    return m[v], m[v], True


def val_features(key, v, prof):
    words = v.split()
    n = _strtol(words[0]) if words else None
    if n is None:
        raise Bad("missing argument count for %s" % key)
    if n != len(words) - 1:
        raise Bad("invalid argument count for %s:, got '%d' expected '%d'" % (key, n, len(words) - 1))
    return v, v, True


def val_off_int(key, v, prof):
    """san_path_err_* / marginal_path_* / ghost_delay: "no" or 0 is off, else a number."""
    if v in ("no", "0"):
        return None, "no", True
    n = _strtol(v)
    if n is None or n < 0:
        raise _invalid(key, v)
    return n, str(n), False


def val_tmo(key, v, prof):
    if key == "fast_io_fail_tmo" and v == "off":
        return "off", "off", False
    if key == "dev_loss_tmo" and v == "infinity":
        return "infinity", "infinity", True
    n = _strtol(v)
    if n is None:
        raise _invalid(key, v)
    if n < 0 and key == "fast_io_fail_tmo":
        raise _Capped("value for %s too small, capping at 1" % key, 1)
    return n, str(n), False


def val_max_fds(key, v, prof):
    if v == "max":
        return "max", "max", True
    n = _strtol(v)
    if n is None or n < 0:
        raise _invalid(key, v)
    return n, str(n), False


def val_mode(key, v, prof):
    try:
        n = int(v, 8)
    except ValueError:
        raise _invalid(key, v) from None
    return n, "0%o" % n, False


def val_ugid(key, v, prof):
    n = _strtol(v)
    if n is None or n < 0:
        raise _invalid(key, v)
    return n, "0%o" % n, False


class Note(Exception):
    """Taken, with a message (a deprecated spelling of a value)."""

    def __init__(self, msg, result):
        super().__init__(msg)
        self.result = result


def val_flush_on_last_del(key, v, prof):
    # 0.10+: always / unused / never; yes and no are the old spellings
    if v in ("always", "unused", "never"):
        return v, v, True
    old = {"yes": "always", "1": "always", "no": "unused", "0": "unused"}.get(v)
    if old is None:
        raise _invalid(key, v)
    raise Note('"%s" is a deprecated value for %s and is treated as "%s"' % (v, key, old), (old, old, True))


def val_str(key, v, prof):
    return v, v, True


def val_regex(key, v, prof):
    try:
        compile_posix(v[1:] if v.startswith("!") else v)
    except RegexError:
        raise Fatal(v) from None
    return v, v, True


VALIDATORS = {
    "no_path_retry": val_no_path_retry,
    "failback": val_failback,
    "path_grouping_policy": val_pgpolicy,
    "rr_weight": val_choice("priorities", "uniform"),
    "find_multipaths": val_find_multipaths,
    "features": val_features,
    "verbosity": val_capped(0, 4),
    "polling_interval": val_uint,
    "max_polling_interval": val_uint,
    "rr_min_io": val_rr_min_io,
    "rr_min_io_rq": val_rr_min_io,
    "checker_timeout": val_uint,
    "uxsock_timeout": val_uint,
    "fast_io_fail_tmo": val_tmo,
    "dev_loss_tmo": val_tmo,
    "eh_deadline": val_tmo,
    "max_fds": val_max_fds,
    "ghost_delay": val_off_int,
    "marginal_pathgroups": val_choice("off", "on", aliases={"no": "off", "yes": "on", "0": "off", "1": "on"}),
    "log_checker_err": val_choice("always", "once"),
    "mode": val_mode,
    "uid": val_ugid,
    "gid": val_ugid,
}
for _k in ("san_path_err_threshold", "san_path_err_forget_rate", "san_path_err_recovery_time",
           "marginal_path_err_sample_time", "marginal_path_err_rate_threshold",
           "marginal_path_err_recheck_gap_time", "marginal_path_double_failed_time",
           "delay_watch_checks", "delay_wait_checks"):
    VALIDATORS[_k] = val_off_int
for _k in ("user_friendly_names", "detect_prio", "detect_checker", "detect_pgpolicy", "detect_pgpolicy_use_tpg",
           "queue_without_daemon", "retain_attached_hw_handler", "deferred_remove", "reassign_maps",
           "allow_usb_devices", "force_sync", "strict_timing", "skip_kpartx", "all_tg_pt", "recheck_wwid"):
    VALIDATORS[_k] = val_yesno


def _validator(prof: Profile, key: str):
    if key == "flush_on_last_del":
        if prof.at_least(0, 10):
            return val_flush_on_last_del
        return val_yesno
    f = VALIDATORS.get(key)
    if f is not None:
        return f
    return None


# -- the parser -------------------------------------------------------------------------------
SUBLEVEL = ("defaults", "blacklist", "blacklist_exceptions", "devices", "device", "multipaths", "multipath",
            "overrides")
_TOP = ("defaults", "blacklist", "blacklist_exceptions", "devices", "overrides", "multipaths")


class _Parser:
    def __init__(self, text: str, source: str, prof: Profile):
        self.lines = text.splitlines()
        self.i = 0
        self.src = source
        self.prof = prof
        self.conf = Config(source, prof)
        self.level = 0

    def say(self, msg: str) -> None:
        self.conf.messages.append(msg)

    # the keywords of a section: {name: sub-section or None}
    def keywords(self, section: Optional[str]) -> Dict[str, Optional[str]]:
        p = self.prof
        if section is None:
            return {k: k for k in _TOP}
        if section in ("defaults", "overrides", "multipath", "protocol"):
            kws = {k: None for k in p.keywords[section]["accepted"]}
            if section == "overrides":
                kws["protocol"] = "protocol"
            return kws
        if section in ("blacklist", "blacklist_exceptions"):
            kws = {k: None for k in p.keywords[section]["accepted"]}
            kws["device"] = "bl_device"
            return kws
        if section == "bl_device":
            return {k: None for k in p.keywords["blacklist_device"]["accepted"]}
        if section == "devices":
            return {"device": "device"}
        if section == "multipaths":
            return {"multipath": "multipath"}
        if section == "device":
            return {k: None for k in p.keywords["device"]["accepted"]}
        return {}

    def check_line(self, toks, n) -> bool:
        """multipath's per-line checks: warnings; False when the line is skipped."""
        where = "on line %d of %s" % (n, self.src)
        if not toks:
            return False
        first = toks[0]
        if first is QUOTE:
            self.say("can't parse option %s" % where)    # a line starting with a quote
            return False
        if first == "}":
            if len(toks) > 1:
                self.say("ignoring extra data starting with '%s' %s" % (_tok(toks[1]), where))
            return True
        if first == "{":
            self.say("invalid keyword '{' %s" % where)
            return False
        if first in SUBLEVEL:
            if len(toks) < 2:
                self.say("missing '{' %s" % where)
            elif toks[1] != "{":
                self.say("expecting '{' %s. found '%s'" % (where, _tok(toks[1])))
            elif len(toks) > 2:
                self.say("ignoring extra data starting with '%s' %s" % (_tok(toks[2]), where))
            return True
        if len(toks) < 2:
            self.say("missing value for option '%s' %s" % (first, where))
            return False
        if toks[1] is not QUOTE:
            if len(toks) > 2:
                self.say("ignoring extra data starting with '%s' %s" % (_tok(toks[2]), where))
            return True
        if len(toks) == 2:
            self.say("missing closing quotes %s" % where)
            return True
        if toks[2] is QUOTE:
            if len(toks) > 3:
                self.say("ignoring extra data starting with '%s' %s" % (_tok(toks[3]), where))
            return True
        if len(toks) == 3:
            self.say("missing closing quotes %s" % where)
            return True
        if toks[3] is not QUOTE:
            self.say("parsing error starting with '%s' %s" % (_tok(toks[3]), where))
            return False
        if len(toks) > 4:
            self.say("ignoring extra data starting with '%s' %s" % (_tok(toks[4]), where))
        return True

    def run(self) -> Config:
        self.process(None, None)
        return self.conf

    def process(self, section: Optional[str], entry) -> None:
        kws = self.keywords(section)
        seen = set()
        unique = section not in (None, "blacklist", "blacklist_exceptions", "devices", "multipaths")
        while self.i < len(self.lines):
            raw = self.lines[self.i]
            self.i += 1
            n = self.i
            toks = tokenize(raw)
            if not toks or not self.check_line(toks, n):
                continue
            key = toks[0]
            if key == "}":
                if self.level > 0:
                    return
                self.say("unmatched '}' at line %d of %s" % (n, self.src))
            if key in kws:
                if unique and kws[key] is None:
                    if key in seen:
                        self.say("%s line %d, duplicate keyword: %s" % (self.src, n, key))
                    seen.add(key)
                sub = kws[key]
                if sub is None:
                    self.value(section, entry, key, toks, raw, n)
                else:
                    child = self.open(sub, section, n)
                    self.level += 1
                    self.process(sub, child)
                    self.level -= 1
                    self.close(sub, section, child)
                continue
            name = {"bl_device": "device"}.get(section, section)
            if section is None:
                self.say("%s line %d, invalid keyword: %s" % (self.src, n, key))
            else:
                self.say("%s line %d, invalid keyword in the %s section: %s" % (self.src, n, name, key))
        if self.level == 1:
            self.say("missing '}' at end of %s" % self.src)

    def open(self, sub: str, parent: Optional[str], n: int):
        c = self.conf
        if sub == "defaults":
            return c.defaults
        if sub == "overrides":
            if c.overrides is None:
                c.overrides = Entry("O", n)
            return c.overrides
        if sub == "device":
            e = Entry("H", n)
            c.devices.append(e)
            return e
        if sub == "bl_device":
            return Entry("B", n)
        if sub == "multipath":
            e = Entry("M", n)
            c.multipaths.append(e)
            return e
        if sub == "protocol":
            e = Entry("P", n)
            c.protocols.append(e)
            return e
        return None

    def close(self, sub: str, parent: Optional[str], entry) -> None:
        if sub == "bl_device":
            target = self.conf.blacklist if parent == "blacklist" else self.conf.exceptions
            target.device.append((entry.get("vendor"), entry.get("product")))

    def value(self, section, entry, key, toks, raw, n) -> None:
        val = _value_of(toks)
        prof = self.prof
        if key in prof.deprecated:
            # warned about in the defaults section, silently ignored elsewhere
            if section == "defaults":
                self.say("%s line %d: ignoring deprecated option \"%s\"%s" % (
                    self.src, n, key, self.deprecated_suffix(key)))
            return
        if key in prof.fixed_value:
            return          # accepted, the value is ignored and the built-in one printed
        if key in prof.file_options and section == "defaults":
            self.say("%s line %d, \"%s\" is deprecated and will be disabled in a future release"
                     % (self.src, n, key))
        if section in ("blacklist", "blacklist_exceptions"):
            try:
                val_regex(key, val, prof)
            except Fatal:
                self.fatal(n, raw)
                return
            bl = self.conf.blacklist if section == "blacklist" else self.conf.exceptions
            lst = getattr(bl, key, None)
            if lst is not None:
                lst.append(val)
            return
        if section == "bl_device":
            try:
                val_regex(key, val, prof)
            except Fatal:
                self.fatal(n, raw)
                return
            entry.set(key, val, val, n)
            return
        if key == "checker":
            key = "path_checker"
        f = _validator(prof, key)
        if f is None:
            sec = _sec_for_print(section)
            number = prof.is_number_keyword(sec, key) and _strtol(val) is not None
            entry.set(key, val, val, n, printed=val, quoted=not number and not prof.is_bare_keyword(sec, key))
            return
        try:
            parsed, printed, quoted = f(key, val, prof)
        except Bad as e:
            self.say("%s line %d, %s" % (self.src, n, e))
            return
        except _Capped as e:
            self.say("%s line %d, %s" % (self.src, n, e))
            parsed, printed, quoted = f(key, str(e.value), prof) if isinstance(e.value, int) else (
                e.value, e.value or "", True)
        except Note as e:
            self.say("%s line %d, %s" % (self.src, n, e))
            parsed, printed, quoted = e.result
        except Fatal:
            self.fatal(n, raw)
            return
        if parsed is None and f in (val_rr_min_io,):
            entry.values.pop(key, None)
            return
        entry.set(key, parsed, val, n, printed=printed, quoted=quoted)

    def deprecated_suffix(self, key: str) -> str:
        dv = self.prof.deprecated.get(key)
        return ", using built-in value: \"%s\"" % dv if dv is not None else ""

    def fatal(self, n: int, raw: str) -> None:
        self.say("%s line %d, parsing failed: %s" % (self.src, n, raw.rstrip("\n")))
        self.conf.failed = True


def _sec_for_print(section):
    return section if section in ("defaults", "overrides", "multipath", "protocol", "device") else "defaults"


def _tok(t) -> str:
    return '"' if t is QUOTE else str(t)


def _value_of(toks) -> str:
    if toks[1] is QUOTE:
        if len(toks) > 2 and toks[2] is not QUOTE:
            return str(toks[2])
        return ""
    return str(toks[1])


# -- after the file ---------------------------------------------------------------------------------
def _builtin_entries(prof: Profile) -> List[Entry]:
    out = []
    for body in prof.hwtable:
        e = Entry("builtin")
        for k, v, q in body:
            f = _validator(prof, k)
            parsed = v
            if f is not None:
                try:
                    parsed = f(k, v, prof)[0]
                except Note as e:
                    parsed = e.result[0]
                except (Bad, _Capped, Fatal):
                    parsed = v
            e.set(k, parsed, v, 0, printed=v, quoted=q)
        out.append(e)
    return out


def _reconcile(conf: Config, ident: str, e: Entry) -> None:
    """The features string after a merge: queue_if_no_path becomes no_path_retry queue (when
    unset) and is removed; retain_attached_hw_handler likewise (multipath's words)."""
    feats = e.get("features")
    if not feats:
        return
    words = feats.split()
    if "queue_if_no_path" in words[1:]:
        conf.messages.append("%s: option 'features \"1 queue_if_no_path\"' is deprecated, please use "
                             "'no_path_retry queue' instead" % ident)
        if not e.has("no_path_retry"):
            e.set("no_path_retry", "queue", "queue", 0, printed="queue", quoted=True)
        elif e.get("no_path_retry") != "queue":
            conf.messages.append("%s: ignoring feature 'queue_if_no_path' because no_path_retry is set to '%s'"
                                 % (ident, e.values["no_path_retry"].printed))
        feats = _remove_feature(feats, "queue_if_no_path")
    if "retain_attached_hw_handler" in feats.split()[1:]:
        conf.messages.append("%s: option 'features \"1 retain_attached_hw_handler\"' is deprecated" % ident)
        if not e.has("retain_attached_hw_handler"):
            e.set("retain_attached_hw_handler", True, "yes", 0, printed="yes")
        feats = _remove_feature(feats, "retain_attached_hw_handler")
    s = e.values["features"]
    e.values["features"] = Setting(feats, feats, s.line, feats, True)


def _remove_feature(features: str, feat: str) -> str:
    words = features.split()
    if feat in words[1:]:
        words.remove(feat)
        words[0] = str(int(words[0]) - 1)
    return " ".join(words)


def _strings(e: Entry):
    return (e.get("vendor"), e.get("product"), e.get("revision"))


def _merge_into(dst: Entry, src: Entry) -> None:
    for k, s in src.values.items():
        if k not in dst.values:
            dst.values[k] = s


def factorize(conf: Config) -> None:
    """The merged hardware table: built-in entries, then the user's; a user entry without
    vendor or product is dropped; an entry whose vendor/product/revision strings equal a
    later user entry's is merged into that one (the later keeps its values)."""
    prof = conf.profile
    builtin = _builtin_entries(prof)
    table = builtin + [e.copy() for e in conf.devices]
    nb = len(builtin)
    restart = True
    while restart:
        restart = False
        i = 0
        while i < len(table):
            e1 = table[i]
            if i >= nb and not (e1.has("vendor") and e1.has("product")):
                conf.messages.append("device config in %s missing vendor or product parameter" % conf.source)
                del table[i]
                continue
            start = max(nb, i + 1)
            for e2 in table[start:]:
                if _strings(e1) == _strings(e2):
                    if i >= nb:
                        conf.messages.append("factorize_hwtable: duplicate device section for %s:%s:%s in %s" % (
                            _c(e1.get("vendor")), _c(e1.get("product")), _c(e1.get("revision")), conf.source))
                    del table[i]
                    _merge_into(e2, e1)
                    _reconcile(conf, "%s/%s" % (_c(e2.get("vendor")), _c(e2.get("product"))), e2)
                    if i < nb:
                        nb -= 1
                    restart = True
                    break
            if restart:
                break
            i += 1
    conf.hwtable = table
    conf.builtin_count = nb


def _c(v) -> str:
    return "(null)" if v is None else str(v)


def merge_multipaths(conf: Config) -> None:
    kept = []
    for e in conf.multipaths:
        if not e.has("wwid"):
            conf.messages.append("multipaths config section missing wwid")
            continue
        kept.append(e)
    kept.sort(key=lambda e: e.get("wwid"))
    out: List[Entry] = []
    for e in kept:
        if out and out[-1].get("wwid") == e.get("wwid"):
            conf.messages.append("merge_mptable: duplicate multipath config section for %s" % e.get("wwid"))
            _merge_into(e, out[-1])
            out[-1] = e
        else:
            out.append(e)
    conf.multipaths = out


def validate_protocols(conf: Config) -> None:
    kept = []
    for p in conf.protocols:
        if not p.has("type"):
            conf.messages.append("protocol section in %s missing type" % conf.source)
            continue
        kept.append(p)
    # two protocol sections of one type: the later keeps its values, takes the earlier's others
    out: List[Entry] = []
    for p in kept:
        prev = next((q for q in out if q.get("type") == p.get("type")), None)
        if prev is not None:
            _merge_into(p, prev)
            out.remove(prev)
        out.append(p)
    conf.protocols = out


def parse_conf(text: str, source: str = "multipath.conf", version: Optional[str] = None) -> Config:
    """Read multipath.conf text as the given multipath-tools version would (default: the
    default profile).  Messages are in :attr:`Config.messages`; :attr:`Config.failed` says
    multipath would refuse the file."""
    prof = get_profile(version)
    conf = _Parser(text, source, prof).run()
    if conf.failed:
        conf.messages.append("error parsing config file")
        return conf
    factorize(conf)
    validate_protocols(conf)
    merge_multipaths(conf)
    return conf


def refuse_if_failed(conf: Config) -> None:
    """multipath gives up on a file whose parsing failed; so does mpathlab (exit 3)."""
    if conf.failed:
        bad = next((m for m in conf.messages if ", parsing failed: " in m), "")
        m = re.match(r"(.*) line (\d+), parsing failed: (.*)", bad)
        where = "%s:%s" % (m.group(1), m.group(2)) if m else conf.source
        raise ConfError("%s: multipath refuses this file (error parsing config file): %s"
                        % (where, m.group(3).strip() if m else "parsing failed"))


def load_conf(path: str, version: Optional[str] = None) -> Config:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError as e:
        raise ConfError("cannot read %s: %s" % (path, e.strerror or e)) from None
    return parse_conf(text, path, version)
