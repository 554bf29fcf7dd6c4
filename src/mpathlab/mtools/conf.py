"""multipath.conf: the tokenizer, the keyword table and the section parser.

Written from a reading of multipath-tools (libmpathutil/parser.c, libmultipath/dict.c
and multipath.conf(5)), not translated from it.

How the file is read, as multipath-tools reads it:

- A line is split into tokens; ``#`` and ``!`` start a comment outside quotes; ``{`` and
  ``}`` are tokens of their own; a double-quoted value is one token (``""`` inside quotes
  is a literal quote).
- The top-level sections are ``defaults``, ``blacklist``, ``blacklist_exceptions``,
  ``devices`` (holding ``device`` blocks), ``overrides`` and ``multipaths`` (holding
  ``multipath`` blocks).
- A keyword the section does not know is warned about in multipath's words
  ("FILE line N, invalid keyword in the SECTION section: KEY") and skipped.

Where mpathlab is stricter than multipath (the project's rule: nothing silently ignored):
multipath logs a bad *value* and keeps the previous one; here a bad value is a
:class:`ConfError` naming file, line and option (the CLI exits with 3).  Keywords
multipath knows but that have no effect in a simulation (``fast_io_fail_tmo``,
``user_friendly_names`` aside, ...) are accepted and listed in :attr:`Config.notes`.
"""
from __future__ import annotations

import re
from typing import Callable, Dict, List, Optional, Tuple


class ConfError(ValueError):
    """A multipath.conf problem: one line naming the file, line and option."""


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


# -- values --------------------------------------------------------------------
DEFAULT_CHECKINT = 5       # seconds between path checks when polling_interval is not set (defaults.h)
CHECKERS = ("tur", "directio", "readsector0", "none")


def _int(v: str, key: str, lo: int, hi: int = 2 ** 31 - 1) -> int:
    try:
        x = int(v.strip(), 10)
    except ValueError:
        raise ValueError('invalid value for %s: "%s" (a whole number)' % (key, v)) from None
    if not lo <= x <= hi:
        raise ValueError('value for %s out of range: "%s" (%d..%d)' % (key, v, lo, hi))
    return x


def v_str(v, key):
    return v


def v_yesno(v, key):
    if v in ("yes", "1"):
        return True
    if v in ("no", "0"):
        return False
    raise ValueError('invalid value for %s: "%s" (yes or no)' % (key, v))


def v_pgpolicy(v, key):
    from .pgpolicies import names
    if v not in names():
        raise ValueError('invalid value for path_grouping_policy: "%s" (one of %s)' % (v, ", ".join(names())))
    return v


def v_selector(v, key):
    from .. import selectors
    words = v.split()
    if not words or selectors.lookup(words[0]) is None:
        raise ValueError('invalid value for path_selector: "%s" (a path selector and its arguments, '
                         'e.g. "service-time 0"; known: %s)' % (v, ", ".join(selectors.names())))
    # the table carries "<name> <#args> <args>", so the count must agree
    if len(words) > 1:
        n = _int(words[1], "path_selector argument count", 0)
        if n != len(words) - 2:
            raise ValueError('invalid value for path_selector: "%s" (says %d arguments, has %d)'
                             % (v, n, len(words) - 2))
    try:
        selectors.create(words[0], words[2:])
    except selectors.SelectorError as e:
        raise ValueError('invalid value for path_selector: "%s" (the kernel says: %s)'
                         % (v, e.message or e)) from None
    return v


def _kernel_check(key: str, v: str, params: str) -> None:
    """Let the target's constructor judge features / hardware_handler, as the kernel will."""
    from ..target import TargetError, construct
    try:
        construct(params)
    except TargetError as e:
        raise ValueError('invalid value for %s: "%s" (the kernel says: %s)' % (key, v, e)) from None


def v_prio(v, key):
    from .prioritizers import names
    if v not in names():
        raise ValueError('invalid value for prio: "%s" (one of %s)' % (v, ", ".join(names())))
    return v


def v_rr_weight(v, key):
    if v not in ("priorities", "uniform"):
        raise ValueError('invalid value for rr_weight: "%s" (priorities or uniform)' % v)
    return v


def v_positive(v, key):
    return _int(v, key, 1)


def v_no_path_retry(v, key):
    # "0" means fail, as in multipath's no_path_retry_helper
    if v in ("fail", "0"):
        return "fail"
    if v == "queue":
        return "queue"
    try:
        return _int(v, key, 1)
    except ValueError:
        raise ValueError('invalid value for no_path_retry: "%s" (fail, queue or a number of checks >= 1)'
                         % v) from None


def v_failback(v, key):
    if v in ("manual", "immediate", "followover"):
        return v
    try:
        n = _int(v, key, 0)
    except ValueError:
        raise ValueError('invalid value for failback: "%s" (manual, immediate, followover or seconds)'
                         % v) from None
    return n or None      # 0 is FAILBACK_UNDEF in multipath: the next layer decides


def _counted(v, key):
    words = v.split()
    if not words:
        raise ValueError('invalid value for %s: "%s" (a count and that many words)' % (key, v))
    n = _int(words[0], key + " count", 0)
    if n != len(words) - 1:
        raise ValueError('invalid value for %s: "%s" (says %d words, has %d)' % (key, v, n, len(words) - 1))
    return " ".join(words)


def v_features(v, key):
    s = _counted(v, key)
    _kernel_check(key, v, s + " 0 0 0")
    return s


def v_hwhandler(v, key):
    s = _counted(v, key)
    words = s.split()
    if len(words) > 1 and words[1] not in ("alua", "emc", "rdac", "hp_sw"):
        raise ValueError('invalid value for hardware_handler: "%s"' % v)
    _kernel_check(key, v, "0 " + s + " 0 0")
    return s


def v_checker(v, key):
    if v not in CHECKERS:
        raise ValueError('invalid value for %s: "%s" (modelled checkers: %s)' % (key, v, ", ".join(CHECKERS)))
    return v


def v_off_int(v, key):
    """marginal_path_* / san_path_err_*: "no" (or 0) turns the check off, else a number >= 1."""
    if v in ("no", "0"):
        return None
    try:
        return _int(v, key, 1)
    except ValueError:
        raise ValueError('invalid value for %s: "%s" (no or a number >= 1)' % (key, v)) from None


def v_regex(v, key):
    try:
        re.compile(v[1:] if v.startswith("!") else v)
    except re.error as e:
        raise ValueError('invalid regular expression for %s: "%s" (%s)' % (key, v, e)) from None
    return v


# -- the keyword table -----------------------------------------------------------
# One row per keyword: sections it is valid in (from dict.c's init_keywords), parser,
# help with the built-in default.  D=defaults, H=device, O=overrides, M=multipath.
KEYWORDS: Dict[str, Tuple[str, Callable, str]] = {
    "path_selector": ("DHOM", v_selector, 'selector and args for every group (default "service-time 0")'),
    "path_grouping_policy": ("DHOM", v_pgpolicy, "how paths are grouped (default failover; group_by_prio "
                                                 "when every path has an ALUA prio and detect_pgpolicy is on)"),
    "prio": ("DHOM", v_prio, "prioritizer (default const; alua/sysfs when detect_prio finds ALUA)"),
    "prio_args": ("DHOM", v_str, 'prioritizer arguments (default "")'),
    "rr_weight": ("DHOM", v_rr_weight, "priorities: repeat count x path priority (default uniform)"),
    "rr_min_io_rq": ("DHOM", v_positive, "per-path repeat count for request-based maps (default 1)"),
    "rr_min_io": ("DHOM", v_positive, "repeat count for dm-multipath before 1.1.0 (default 1000; noted, unused)"),
    "no_path_retry": ("DHOM", v_no_path_retry, "fail, queue or N checks of queueing (default: unset)"),
    "features": ("DHOM", v_features, 'dm features (default "0"); queue_if_no_path here is read as '
                                     "no_path_retry queue"),
    "hardware_handler": ("H", v_hwhandler, 'hardware handler (default "0"; "1 alua" when all paths support '
                                            "ALUA)"),
    "failback": ("DHOM", v_failback, "manual, immediate, followover or N seconds (default manual)"),
    "polling_interval": ("D", v_positive, "seconds between path checks (default 5)"),
    "max_polling_interval": ("D", v_positive, "longest interval for healthy paths (default 4 x "
                                              "polling_interval)"),
    "path_checker": ("DHO", v_checker, "path checker (default tur)"),
    "checker": ("DHO", v_checker, "old name of path_checker"),
    "detect_prio": ("DHO", v_yesno, "use the ALUA prioritizer for ALUA paths (default yes)"),
    "detect_checker": ("DHO", v_yesno, "use tur for ALUA paths (default yes)"),
    "detect_pgpolicy": ("DHO", v_yesno, "group_by_prio when all paths use ALUA prio (default yes)"),
    "detect_pgpolicy_use_tpg": ("DHO", v_yesno, "group_by_tpg instead when detect_pgpolicy applies (default no)"),
    "user_friendly_names": ("DHOM", v_yesno, "name maps mpatha, mpathb, ... instead of by WWID (default no)"),
    "alias_prefix": ("DHO", v_str, 'prefix of user friendly names (default "mpath")'),
    "san_path_err_threshold": ("DHOM", v_off_int, "path failures that make a path marginal (default no)"),
    "san_path_err_forget_rate": ("DHOM", v_off_int, "checks after which one failure is forgotten (default no)"),
    "san_path_err_recovery_time": ("DHOM", v_off_int, "seconds a marginal path stays out (default no)"),
    "marginal_path_err_sample_time": ("DHOM", v_off_int, "accepted, not modelled (needs io_err_stat)"),
    "marginal_path_err_rate_threshold": ("DHOM", v_off_int, "accepted, not modelled (needs io_err_stat)"),
    "marginal_path_err_recheck_gap_time": ("DHOM", v_off_int, "accepted, not modelled (needs io_err_stat)"),
    "marginal_path_double_failed_time": ("DHOM", v_off_int, "accepted, not modelled (needs io_err_stat)"),
    # section identity
    "vendor": ("H", v_regex, "vendor regex of a device entry"),
    "product": ("H", v_regex, "product regex of a device entry"),
    "revision": ("H", v_regex, "revision regex of a device entry"),
    "product_blacklist": ("H", v_regex, "product regex blacklisted for this vendor"),
    "wwid": ("M", v_str, "WWID of the map this multipath entry configures"),
    "alias": ("M", v_str, "name of the map"),
}

# Keywords multipath knows but which have no effect on a simulated map (accepted, noted).
_NO_EFFECT = {
    "D": "verbosity reassign_maps multipath_dir uid_attrs uid_attribute getuid_callout max_fds "
         "queue_without_daemon checker_timeout allow_usb_devices pg_timeout flush_on_last_del mode uid gid "
         "fast_io_fail_tmo dev_loss_tmo eh_deadline max_retries bindings_file wwids_file prkeys_file "
         "log_checker_err reservation_key all_tg_pt retain_attached_hw_handler force_sync strict_timing "
         "deferred_remove partition_delimiter config_dir delay_watch_checks delay_wait_checks find_multipaths "
         "uxsock_timeout retrigger_tries retrigger_delay missing_uev_wait_timeout skip_kpartx "
         "purge_disconnected disable_changed_wwids remove_retries max_sectors_kb ghost_delay auto_resize "
         "find_multipaths_timeout enable_foreign marginal_pathgroups recheck_wwid",
    "H": "uid_attribute getuid_callout pg_timeout flush_on_last_del fast_io_fail_tmo dev_loss_tmo eh_deadline "
         "retain_attached_hw_handler deferred_remove delay_watch_checks delay_wait_checks skip_kpartx "
         "purge_disconnected max_sectors_kb ghost_delay all_tg_pt vpd_vendor recheck_wwid",
    "O": "uid_attribute getuid_callout flush_on_last_del fast_io_fail_tmo dev_loss_tmo eh_deadline "
         "retain_attached_hw_handler deferred_remove delay_watch_checks delay_wait_checks skip_kpartx "
         "purge_disconnected max_sectors_kb ghost_delay all_tg_pt recheck_wwid",
    "M": "pg_timeout flush_on_last_del mode uid gid reservation_key deferred_remove delay_watch_checks "
         "delay_wait_checks skip_kpartx purge_disconnected max_sectors_kb ghost_delay",
}
NO_EFFECT = {k: set(v.split()) for k, v in _NO_EFFECT.items()}



class Setting:
    __slots__ = ("value", "raw", "line")

    def __init__(self, value, raw: str, line: int):
        self.value = value
        self.raw = raw
        self.line = line

    def __repr__(self):
        return "Setting(%r, line %d)" % (self.value, self.line)


class Entry:
    """One settings block: defaults, one device, overrides or one multipath."""

    def __init__(self, kind: str, line: int = 0):
        self.kind = kind           # "D", "H", "O", "M" or "builtin"
        self.line = line
        self.values: Dict[str, Setting] = {}

    def get(self, key: str, default=None):
        s = self.values.get(key)
        return default if s is None else s.value

    def has(self, key: str) -> bool:
        return key in self.values and self.values[key].value is not None

    def set(self, key: str, value, raw: str = "", line: int = 0) -> "Entry":
        self.values[key] = Setting(value, raw or str(value), line)
        return self

    def __repr__(self):
        return "Entry(%s, %r)" % (self.kind, {k: s.value for k, s in self.values.items()})


class Blacklist:
    def __init__(self):
        self.devnode: List[str] = []
        self.wwid: List[str] = []
        self.property: List[str] = []
        self.device: List[Tuple[Optional[str], Optional[str]]] = []


class Config:
    def __init__(self, source: str = "multipath.conf"):
        self.source = source
        self.defaults = Entry("D")
        self.overrides: Optional[Entry] = None
        self.devices: List[Entry] = []
        self.multipaths: List[Entry] = []
        self.blacklist = Blacklist()
        self.exceptions = Blacklist()
        self.warnings: List[str] = []
        self.notes: List[str] = []

    # polling intervals as init_config fills them (seconds; DEFAULT_CHECKINT without either)
    def checkint(self) -> int:
        ci = self.defaults.get("polling_interval")
        mx = self.defaults.get("max_polling_interval")
        if mx is None:
            return ci if ci is not None else DEFAULT_CHECKINT
        if ci is None:
            return mx // 4 if mx >= 4 else 1
        return min(ci, mx)

    def max_checkint(self) -> int:
        mx = self.defaults.get("max_polling_interval")
        if mx is None:
            return self.checkint() * 4
        return mx


def _where(src: str, line: int) -> str:
    return "%s line %d" % (src, line)


def _value(toks: List[object], src: str, line: int, key: str) -> str:
    """The value of ``key VALUE`` or ``key "VALUE WITH SPACES"``."""
    rest = toks[1:]
    if not rest:
        raise ConfError("%s: missing value for option '%s'" % (_where(src, line), key))
    if rest[0] is QUOTE:
        if len(rest) == 1:
            raise ConfError("%s: missing closing quotes for option '%s'" % (_where(src, line), key))
        if rest[1] is QUOTE:
            val = ""
            extra = rest[2:]
        else:
            if len(rest) < 3 or rest[2] is not QUOTE:
                raise ConfError("%s: missing closing quotes for option '%s'" % (_where(src, line), key))
            val = rest[1]
            extra = rest[3:]
    else:
        val = rest[0]
        extra = rest[1:]
    if extra:
        raise ConfError("%s: extra data after the value of option '%s'" % (_where(src, line), key))
    if not isinstance(val, str) or val in ("{", "}"):
        raise ConfError("%s: cannot parse the value of option '%s'" % (_where(src, line), key))
    return val


def parse_conf(text: str, source: str = "multipath.conf") -> Config:
    """Parse multipath.conf text; raise ConfError for a structural error or a bad value."""
    conf = Config(source)
    lines = text.splitlines()
    # a stack of (section name, entry or None); entries get the settings
    stack: List[Tuple[str, Optional[Entry], int]] = []
    for lineno, raw in enumerate(lines, 1):
        toks = tokenize(raw)
        if not toks:
            continue
        first = toks[0]
        where = _where(source, lineno)
        if first is QUOTE or first == "{":
            raise ConfError("%s: invalid keyword '%s'" % (where, '"' if first is QUOTE else first))
        if first == "}":
            if len(toks) > 1:
                raise ConfError("%s: extra data after '}'" % where)
            if not stack:
                raise ConfError("%s: unmatched '}'" % where)
            name, entry, start = stack.pop()
            if name == "device" and entry is not None and not (entry.has("vendor") and entry.has("product")):
                raise ConfError("%s: device entry from line %d needs vendor and product" % (where, start))
            if name == "multipath" and entry is not None and not entry.has("wwid"):
                raise ConfError("%s: multipath entry from line %d needs a wwid" % (where, start))
            if name == "device" and entry is not None:
                target = conf.blacklist if stack and stack[-1][0] == "blacklist" else (
                    conf.exceptions if stack and stack[-1][0] == "blacklist_exceptions" else None)
                if target is not None:
                    target.device.append((entry.get("vendor"), entry.get("product")))
            continue
        key = first
        parent = stack[-1][0] if stack else None
        opens = len(toks) >= 2 and toks[1] == "{"
        if opens:
            if len(toks) > 2:
                raise ConfError("%s: extra data after '%s {'" % (where, key))
            allowed = {None: ("defaults", "blacklist", "blacklist_exceptions", "devices", "overrides",
                              "multipaths"),
                       "devices": ("device",), "multipaths": ("multipath",),
                       "blacklist": ("device",), "blacklist_exceptions": ("device",),
                       "overrides": ("protocol",)}.get(parent, ())
            if key not in allowed:
                raise ConfError("%s: section '%s' is not valid %s" % (
                    where, key, "at the top level" if parent is None else "inside '%s'" % parent))
            entry = None
            if key == "defaults":
                entry = conf.defaults
            elif key == "overrides":
                if conf.overrides is None:
                    conf.overrides = Entry("O", lineno)
                entry = conf.overrides
            elif key == "device" and parent == "devices":
                entry = Entry("H", lineno)
                conf.devices.append(entry)
            elif key == "device":
                entry = Entry("B", lineno)     # a blacklist device: vendor/product only
            elif key == "multipath":
                entry = Entry("M", lineno)
                conf.multipaths.append(entry)
            elif key == "protocol":
                conf.notes.append("%s: overrides protocol subsection accepted, no effect in the simulation"
                                  % where)
            stack.append((key, entry, lineno))
            continue
        if key in ("defaults", "blacklist", "blacklist_exceptions", "devices", "overrides", "multipaths",
                   "device", "multipath"):
            raise ConfError("%s: missing '{' after '%s'" % (where, key))
        if parent is None:
            conf.warnings.append("%s, invalid keyword: %s" % (where, key))
            continue
        name, entry, _ = stack[-1]
        if name in ("blacklist", "blacklist_exceptions"):
            bl = conf.blacklist if name == "blacklist" else conf.exceptions
            if key in ("devnode", "wwid", "property"):
                val = _value(toks, source, lineno, key)
                try:
                    getattr(bl, key).append(v_regex(val, key))
                except ValueError as e:
                    raise ConfError("%s: %s" % (where, e)) from None
                if key == "property":
                    conf.notes.append("%s: %s property accepted, no effect in the simulation (paths have no "
                                      "udev properties)" % (where, name))
            else:
                conf.warnings.append("%s, invalid keyword in the %s section: %s" % (where, name, key))
            continue
        if name == "protocol":
            if key not in ("type", "fast_io_fail_tmo", "dev_loss_tmo", "eh_deadline"):
                conf.warnings.append("%s, invalid keyword in the protocol section: %s" % (where, key))
            continue
        if entry is None:          # inside "devices" or "multipaths" but outside an entry
            conf.warnings.append("%s, invalid keyword in the %s section: %s" % (where, name, key))
            continue
        kind = entry.kind
        if kind == "B":
            if key not in ("vendor", "product"):
                conf.warnings.append("%s, invalid keyword in the device section: %s" % (where, key))
                continue
            kind_ok = True
        else:
            row = KEYWORDS.get(key)
            kind_ok = row is not None and kind in row[0]
        section = {"D": "defaults", "H": "device", "O": "overrides", "M": "multipath", "B": "device"}[kind]
        if not kind_ok:
            if key in NO_EFFECT.get(kind, ()):
                _value(toks, source, lineno, key)
                conf.notes.append("%s: %s accepted, no effect in the simulation" % (where, key))
            else:
                conf.warnings.append("%s, invalid keyword in the %s section: %s" % (where, section, key))
            continue
        val = _value(toks, source, lineno, key)
        if key in entry.values:
            conf.warnings.append("%s, duplicate keyword: %s" % (where, key))
        parser = v_regex if kind == "B" else KEYWORDS[key][1]
        try:
            parsed = parser(val, key)
        except ValueError as e:
            raise ConfError("%s: %s" % (where, e)) from None
        if key == "checker":
            key = "path_checker"
        entry.set(key, parsed, val, lineno)
        if key == "rr_min_io":
            conf.notes.append("%s: rr_min_io is for dm-multipath targets before 1.1.0; this one (1.15) uses "
                              "rr_min_io_rq (select_minio)" % where)
        if key.startswith("marginal_path_") and parsed is not None:
            conf.notes.append("%s: %s accepted; marginal path detection (io_err_stat) is not modelled"
                              % (where, key))
    if stack:
        name, _, start = stack[-1]
        raise ConfError("%s: missing '}' for '%s' opened on line %d" % (_where(source, len(lines)), name, start))
    return conf


def load_conf(path: str) -> Config:
    import os
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError as e:
        raise ConfError("cannot read %s: %s" % (path, e.strerror or e)) from None
    return parse_conf(text, os.path.basename(path))
