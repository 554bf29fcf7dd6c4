"""``multipath -t``: the merged configuration in multipath's own format.

The layout (tab indentation, sections in the order defaults, blacklist,
blacklist_exceptions, devices, overrides, multipaths; each keyword in the order the
version's keyword table prints them; strings quoted, numbers bare) is the one the real
binaries print, checked line by line against their output for the corpus in
tests/data/mtools-corpus/.
"""
from __future__ import annotations

from typing import List, Optional

from .conf import Config, Entry, Setting


def _line(indent: int, key: str, printed: str, quoted: bool) -> str:
    return "%s%s %s" % ("\t" * indent, key, '"%s"' % printed if quoted else printed)


def _entry_lines(e: Entry, order: List[str], indent: int) -> List[str]:
    order = list(dict.fromkeys(order))
    keys = [k for k in order if k in e.values] + [k for k in e.values if k not in order]
    out = []
    for k in keys:
        s: Setting = e.values[k]
        if s.value is None and s.printed == "":
            continue
        out.append(_line(indent, k, s.printed, s.quoted))
    return out


def _defaults_lines(conf: Config) -> List[str]:
    prof = conf.profile
    d = conf.defaults
    rows = [[k, v, q] for k, v, q in prof.defaults]
    present = {r[0] for r in rows}
    order = prof.order("defaults")
    for k in d.values:
        if k not in present:
            # a keyword printed only when set: insert it where the version's order puts it
            pos = order.index(k) if k in order else len(order)
            at = len(rows)
            for i, r in enumerate(rows):
                if r[0] in order and order.index(r[0]) > pos:
                    at = i
                    break
            rows.insert(at, [k, None, True])
            present.add(k)
    ci, mx = conf.checkint(), conf.max_checkint()
    out = []
    for k, v, q in rows:
        if k in d.values:
            s = d.values[k]
            v, q = s.printed, s.quoted
        if k == "polling_interval" and (d.has("polling_interval") or d.has("max_polling_interval")):
            v, q = str(ci), False
        if k == "max_polling_interval" and (d.has("polling_interval") or d.has("max_polling_interval")):
            v, q = str(mx), False
        out.append(_line(1, k, v, q))
    return out


def _blacklist_lines(conf: Config, name: str) -> List[str]:
    prof = conf.profile
    user = conf.blacklist if name == "blacklist" else conf.exceptions
    builtin = prof.blacklist if name == "blacklist" else prof.exceptions
    out = [name + " {"]
    for kind in ("devnode", "wwid", "property", "protocol"):
        seen = set()
        for pat in list(getattr(user, kind)) + [v for k, v in builtin if k == kind]:
            if pat in seen:
                continue
            seen.add(pat)
            out.append(_line(1, kind, pat, True))
    devices = list(user.device)
    if name == "blacklist":
        # the built-in device blacklist is made from the merged hardware table's product_blacklist
        # entries (a user entry with one adds to it), each vendor/product pair once
        seen_dev = set(devices)
        for e in conf.hwtable:
            if e.has("product_blacklist"):
                pair = (e.get("vendor"), e.get("product_blacklist"))
                if pair not in seen_dev:
                    seen_dev.add(pair)
                    devices.append(pair)
    else:
        devices += [v for k, v in builtin if k == "device"]
    uniq = []
    for d in devices:
        if d not in uniq:
            uniq.append(d)
    for vendor, product in uniq:
        out.append("\tdevice {")
        if vendor is not None:
            out.append(_line(2, "vendor", vendor, True))
        if product is not None:
            out.append(_line(2, "product", product, True))
            out.append("\t}")
        # without a product line the real binaries (0.9.4 and 0.14.3 alike) print no closing brace
    out.append("}")
    return out


def show_config(conf: Config) -> str:
    prof = conf.profile
    out = ["defaults {"] + _defaults_lines(conf) + ["}"]
    out += _blacklist_lines(conf, "blacklist")
    out += _blacklist_lines(conf, "blacklist_exceptions")
    out.append("devices {")
    for e in conf.hwtable:
        out.append("\tdevice {")
        out += _entry_lines(e, prof.order("device"), 2)
        out.append("\t}")
    out.append("}")
    out.append("overrides {")
    if conf.overrides is not None:
        out += _entry_lines(conf.overrides, prof.order("overrides"), 1)
    for p in conf.protocols:
        out.append("\tprotocol {")
        out += _entry_lines(p, ["type"] + prof.order("protocol"), 2)
        out.append("\t}")
    out.append("}")
    if conf.multipaths:
        out.append("multipaths {")
        for m in conf.multipaths:
            out.append("\tmultipath {")
            out += _entry_lines(m, prof.order("multipath"), 2)
            out.append("\t}")
        out.append("}")
    return "\n".join(out) + "\n"


def show_messages(conf: Config) -> str:
    return "".join(m + "\n" for m in conf.messages)
