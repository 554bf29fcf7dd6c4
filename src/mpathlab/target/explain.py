"""`dmsetup status` and `dmsetup table` of a multipath device in words.

What ``multipath -ll`` does for humans, from the strings alone: the priority
groups and which one is in use, each path's state and fail count, and every
selector field by its name in the selector's source.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple

# Field names per selector, as the dm-ps-*.c status functions print them:
# (group-level status, per-path INFO fields, per-path TABLE fields, what the
# per-path INFO fields mean).  A third-party selector may declare
# ``status_field_names = (group, info, table)`` on its class instead.
SELECTOR_FIELDS: Dict[str, Tuple[Tuple[str, ...], Tuple[str, ...], Tuple[str, ...]]] = {
    "round-robin": ((), (), ("repeat_count",)),
    "queue-length": ((), ("qlen",), ("repeat_count",)),
    "service-time": ((), ("in_flight_size", "relative_throughput"), ("repeat_count", "relative_throughput")),
    "historical-service-time": (("base_weight", "threshold_multiplier"), ("hst", "outstanding", "stale_after"),
                                ("zero",)),
    "io-affinity": ((), ("map_misses",), ("cpumask",)),
}

FIELD_MEANING = {
    "qlen": "I/Os in flight on the path",
    "in_flight_size": "bytes in flight on the path",
    "relative_throughput": "the path's weight (0-100) from the table",
    "repeat_count": "I/Os before switching path (only 1 is honoured)",
    "hst": "historical service time, fixed point: ns x 1024 (HST_FIXED_SHIFT 10)",
    "outstanding": "I/Os in flight on the path",
    "stale_after": "ktime (ns) after which the estimate is stale",
    "map_misses": "I/Os submitted from a CPU with no path in its mask",
    "base_weight": "weight of the old estimate in the running average, fixed point (1024 = 1; 972 = 0.95)",
    "threshold_multiplier": "how much slower a path may look before it is skipped (0 = off)",
    "cpumask": "CPUs whose I/O goes to this path",
    "zero": "always 0 (HST has no per-path table arguments it prints)",
}

GROUP_STATE = {"A": "active: the group in use", "E": "enabled: usable, not in use",
               "D": "disabled: bypassed until re-enabled or every other group fails"}


def selector_fields(name: str) -> Tuple[Tuple[str, ...], Tuple[str, ...], Tuple[str, ...]]:
    if name in SELECTOR_FIELDS:
        return SELECTOR_FIELDS[name]
    from ..selectors import lookup
    cls = lookup(name)
    declared = getattr(cls, "status_field_names", None) if cls is not None else None
    if declared:
        return tuple(declared[0]), tuple(declared[1]), tuple(declared[2])
    return (), (), ()


def guess_selector(nr_group_fields: int, nr_path_fields: int) -> List[str]:
    """Built-in selectors whose INFO status has this shape (INFO does not name the selector)."""
    return [n for n, (g, i, _) in SELECTOR_FIELDS.items() if len(g) == nr_group_fields and len(i) == nr_path_fields]


def _named(values: Sequence[str], names: Sequence[str]) -> str:
    out = []
    for i, v in enumerate(values):
        out.append("%s=%s" % (names[i] if i < len(names) else "field%d" % (i + 1), v))
    return " ".join(out)


def explain_status(info: dict, selectors: Optional[Sequence[str]] = None) -> List[str]:
    """Lines describing a parsed INFO status (``parse_status_info`` output).

    ``selectors`` names each group's selector (from the table); without it the
    selector is guessed from the number of fields."""
    lines: List[str] = []
    head = info.get("name") or "multipath device"
    if info.get("length") is not None:
        head += " (%d sectors, %s)" % (info["length"], _size(info["length"] * 512))
    lines.append("%s: multipath status" % head)
    feats = info["features"]
    if len(feats) == 2:
        qio, pgi = feats
        lines.append("  queue_io=%s: %s" % (qio, "I/O is held until a path group is chosen and initialised"
                                            if qio == "1" else "I/O is mapped to paths"))
        lines.append("  pg_init_count=%s: path group initialisations (hardware handler) so far" % pgi)
    else:
        lines.append("  features: %s" % (" ".join(feats) or "none"))
    lines.append("  hardware handler status: %s" % (" ".join(info["hw"]) or "none"))
    ng, cur = info["nr_groups"], info["current_group"]
    # the kernel prints next_pg if one is set, else the current group, else 1
    lines.append("  %d priority group%s; group %d is %s"
                 % (ng, "" if ng == 1 else "s", cur,
                    "in use" if any(g["state"] == "A" for i, g in enumerate(info["groups"], 1) if i == cur)
                    else "the next to be used (no I/O has chosen a group yet, or a switch is pending)"))
    for gi, g in enumerate(info["groups"], 1):
        nfields = g.get("nr_fields", len(g["paths"][0]["selector"]) if g["paths"] else 0)
        if selectors and gi <= len(selectors):
            sel = selectors[gi - 1]
            sel_note = "selector %s" % sel
        else:
            cands = guess_selector(len(g["selector_status"]), nfields)
            sel = cands[0] if len(cands) == 1 else ""
            sel_note = ("selector %s (from the shape of its fields; give the table to be sure)" % sel if sel else
                        "selector one of %s (give the table to name it)" % ", ".join(cands) if cands else
                        "selector unknown (%d per-path fields)" % nfields)
        gnames, inames, _ = selector_fields(sel) if sel else ((), (), ())
        marker = (" <- in use" if g["state"] == "A" else " <- next to be used") if gi == cur else ""
        lines.append("  group %d: %s (%s), %s%s" % (gi, g["state"], GROUP_STATE.get(g["state"], "?"), sel_note,
                                                   marker))
        if g["selector_status"]:
            lines.append("    selector status: %s" % _named(g["selector_status"], gnames))
        active = sum(1 for p in g["paths"] if p["active"])
        lines.append("    %d path%s, %d active" % (len(g["paths"]), "" if len(g["paths"]) == 1 else "s", active))
        for p in g["paths"]:
            fields = _named(p["selector"], inames)
            lines.append("    %-10s %s  fail_count=%d%s" % (p["dev"], "active" if p["active"] else "FAILED",
                                                          p["fail_count"], ("  " + fields) if fields else ""))
    used = set()
    for g in info["groups"]:
        nfields = g.get("nr_fields", len(g["paths"][0]["selector"]) if g["paths"] else 0)
        for n in (selectors or guess_selector(len(g["selector_status"]), nfields)):
            for f in selector_fields(n)[0] + selector_fields(n)[1]:
                used.add(f)
    for f in sorted(used):
        if f in FIELD_MEANING:
            lines.append("  %s: %s" % (f, FIELD_MEANING[f]))
    return lines


def explain_table(m, name: Optional[str] = None) -> List[str]:
    """Lines describing a constructed table (a :class:`Multipath`)."""
    lines: List[str] = []
    head = name or "multipath device"
    if m.table_length:
        head += " (%d sectors, %s)" % (m.table_length, _size(m.table_length * 512))
    lines.append("%s: multipath table" % head)
    feats = m.table().split()
    nfeat = int(feats[0])
    lines.append("  features: %s" % (" ".join(feats[1:1 + nfeat]) or "none"))
    lines.append("  hardware handler: %s" % (m.hw_handler_name or "none"))
    first = m.next_pg.pg_num if m.next_pg is not None else 1
    lines.append("  %d priority group%s; I/O starts in group %d"
                 % (len(m.priority_groups), "" if len(m.priority_groups) == 1 else "s", first))
    for pg in m.priority_groups:
        sel = pg.ps.name
        _, _, tnames = selector_fields(sel)
        args = pg.ps.status(None, "table").split()
        lines.append("  group %d: selector %s%s" % (pg.pg_num, sel,
                                                    (" (args %s)" % " ".join(args[1:])) if len(args) > 1 else ""))
        for pgpath in pg.pgpaths:
            fields = _named(pg.ps.status(pgpath, "table").split(), tnames)
            lines.append("    %-10s %s" % ("%d:%d" % pgpath.dev.devt, fields))
    return lines


def _size(nbytes: int) -> str:
    v = float(nbytes)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if v < 1024 or unit == "PiB":
            return "%g %s" % (round(v, 1), unit)
        v /= 1024
    return ""
