"""`multipath -ll` output (libmultipath/print.c's topology format), described in our words.

    NAME (WWID) dm-N VENDOR,PRODUCT          (the "(WWID)" only when the name is not the wwid)
    size=SIZE features='F' hwhandler='H' wp=rw
    |-+- policy='SELECTOR' prio=P status=active|enabled|disabled
    | |- H:C:T:L DEV MAJ:MIN DM_STATE CHECKER_STATE ONLINE_STATE
    | `- ...
    `-+- policy=... (last group)
      `- ...

Features, hardware handler, selector, group status and each path's dm state are the
kernel's (read back from the target, as multipath reads the table and status); group
priorities and checker states are multipathd's.  Each path field is padded to the
widest value of that field in the map (get_path_layout).  The size is printed as
snprint_size does: KiB halved down by 1024 in single precision, one decimal below 10.
"""
from __future__ import annotations

import struct


def _f32(x: float) -> float:
    return struct.unpack("f", struct.pack("f", x))[0]


def format_size(sectors: int) -> str:
    s = _f32(float(sectors >> 1))
    units = "KMGTP"
    u = 0
    while s >= 1024 and u < len(units) - 1:
        s = _f32(s / 1024)
        u += 1
    return "%.*f%s" % (1 if s < 10 else 0, s, units[u])


_PG_STATE_NAMES = {"A": "active", "D": "disabled", "E": "enabled"}


def _pg_status(target, idx: int) -> str:
    """Group idx (1-based) as print.c names the state letter of the dm status (the target's
    multipath_status decides the letter: a bypassed group is D even when it is current_pg)."""
    return _PG_STATE_NAMES[target.pg_state(target.priority_groups[idx - 1])]


def format_ll(mp, target) -> str:
    """The -ll view of map ``mp`` (a mtools.maps.Multipath) loaded as ``target``
    (a mpathlab.target.Multipath built from mp's table)."""
    head = mp.alias if mp.alias == mp.wwid else "%s (%s)" % (mp.alias, mp.wwid)
    lines = ["%s dm-%d %s" % (head, mp.dm_minor, mp.vendor_product())]
    hw = "%d %s" % (1, target.hw_handler_name) if target.hw_handler_name else "0"
    feats = target.features_table().strip()
    lines.append("size=%s features='%s' hwhandler='%s' wp=rw" % (format_size(mp.size_sectors), feats, hw))
    dm_state = {}
    for pgpath in target.pgpaths:
        dm_state[pgpath.dev.devt] = "active" if pgpath.is_active else "failed"
    rows = []
    for g in mp.groups:
        g.update_prio()
        for pp in g.paths:
            rows.append((pp.path.hcil, pp.path.name, pp.path.dev_t, dm_state.get(pp.path.devt, "undef"),
                         pp.state, "running"))
    widths = [max((len(r[i]) for r in rows), default=0) for i in range(6)]
    k = 0
    for gi, g in enumerate(mp.groups, 1):
        last_group = gi == len(mp.groups)
        lines.append("%s-+- policy='%s' prio=%d status=%s" % ("`" if last_group else "|", mp.selector, g.priority,
                                                               _pg_status(target, gi)))
        for pi, pp in enumerate(g.paths):
            r = rows[k]
            k += 1
            fields = " ".join(v.ljust(w) for v, w in zip(r, widths))
            lines.append("%s %s- %s" % (" " if last_group else "|", "`" if pi == len(g.paths) - 1 else "|", fields))
    return "\n".join(lines)
