"""``multipathd show paths format FMT`` and ``show maps format FMT`` over mpathlab's maps.

The format string is copied as it is, except for multipath's wildcards (``%X``), each
replaced by one field; a header line names the fields.  As multipathd lays the table out,
every wildcard's column is as wide as its widest entry (header included) and text between
wildcards is kept.  Field names and wildcard letters are multipath-tools' (multipathd's
``show wildcards`` lists them); only the fields the simulation knows are offered, an
unknown wildcard prints ``%X`` unchanged.  Not compared with a real multipathd: it needs
real devices.
"""
from __future__ import annotations

import re
from typing import Callable, Dict, List, Tuple

from .printer import format_size


def _vpr(p) -> str:
    return "%s,%s,%s" % (p.vendor or "##", p.product or "##", p.revision or "##")


def _path_fields(mp_by_path) -> Dict[str, Tuple[str, Callable]]:
    return {
        "w": ("uuid", lambda pp: pp.path.wwid),
        "i": ("hcil", lambda pp: pp.path.hcil),
        "d": ("dev", lambda pp: pp.path.name),
        "D": ("dev_t", lambda pp: pp.path.dev_t),
        "t": ("dm_st", lambda pp: "active" if pp.state in ("ready", "ghost") else "failed"),
        "o": ("dev_st", lambda pp: "offline" if pp.path.link_down else "running"),
        "T": ("chk_st", lambda pp: pp.state),
        "s": ("vend/prod/rev", lambda pp: _vpr(pp.path)),
        "c": ("checker", lambda pp: pp.checker),
        "p": ("pri", lambda pp: str(pp.priority)),
        "S": ("size", lambda pp: format_size(mp_by_path[id(pp)].size_sectors)),
        "z": ("serial", lambda pp: pp.path.serial),
        "m": ("multipath", lambda pp: mp_by_path[id(pp)].alias),
        "P": ("protocol", lambda pp: pp.path.protocol),
        "0": ("failures", lambda pp: str(pp.path_failures)),
    }


def _map_fields() -> Dict[str, Tuple[str, Callable]]:
    def failback(mp):
        f = mp.failback
        return {"manual": "-", "immediate": "immediate", "followover": "followover"}.get(f, str(f))

    def queueing(mp):
        n = mp.no_path_retry
        if n == "queue":
            return "on"
        if n in (None, "fail"):
            return "off"
        return "%d chk" % n

    return {
        "n": ("name", lambda mp: mp.alias),
        "w": ("uuid", lambda mp: mp.wwid),
        "d": ("sysfs", lambda mp: "dm-%d" % mp.dm_minor),
        "F": ("failback", failback),
        "Q": ("queueing", queueing),
        "N": ("paths", lambda mp: str(len(mp.paths))),
        "t": ("dm-st", lambda mp: "active"),
        "S": ("size", lambda mp: format_size(mp.size_sectors)),
        "f": ("features", lambda mp: mp.features()),
        "h": ("hwhandler", lambda mp: mp.settings["hardware_handler"]),
        "s": ("vend/prod/rev", lambda mp: _vpr(mp.paths[0].path) if mp.paths else "##,##,##"),
        "v": ("vend", lambda mp: mp.paths[0].path.vendor if mp.paths else "##"),
        "p": ("prod", lambda mp: mp.paths[0].path.product if mp.paths else "##"),
        "e": ("rev", lambda mp: mp.paths[0].path.revision if mp.paths else "##"),
    }


_TOKEN = re.compile(r"%(.)")


def _render(fmt: str, fields: Dict[str, Tuple[str, Callable]], items: List) -> str:
    parts = []          # literal strings and wildcard letters
    pos = 0
    for m in _TOKEN.finditer(fmt):
        parts.append(("lit", fmt[pos:m.start()]))
        c = m.group(1)
        parts.append(("wc", c) if c in fields else ("lit", m.group(0)))
        pos = m.end()
    parts.append(("lit", fmt[pos:]))
    rows = [[fields[v][0] if k == "wc" else v for k, v in parts]]
    for it in items:
        rows.append([fields[v][1](it) if k == "wc" else v for k, v in parts])
    widths = [max(len(r[i]) for r in rows) if parts[i][0] == "wc" else 0 for i in range(len(parts))]
    lines = []
    for r in rows:
        lines.append("".join(cell.ljust(w) if parts[i][0] == "wc" else cell
                             for i, (cell, w) in enumerate(zip(r, widths))).rstrip())
    return "\n".join(lines)


def show_paths(maps, fmt: str) -> str:
    owner = {}
    items = []
    for mp in maps:
        for pp in mp.paths:
            owner[id(pp)] = mp
            items.append(pp)
    return _render(fmt, _path_fields(owner), items)


def show_maps(maps, fmt: str) -> str:
    return _render(fmt, _map_fields(), list(maps))
