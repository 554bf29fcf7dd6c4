"""Readable tables for the terminal."""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence

from ..klog import WIDTH, wrap  # noqa: F401  (the report's terminal text fits WIDTH too)
from ..units import format_ns
from .page import us


def share_table(columns: Dict[str, Dict[str, float]], rows: Sequence[str],
                reference: Optional[Dict[str, Dict[str, float]]] = None, digits: int = 3) -> str:
    """A path x column table of shares; with ``reference``, each cell shows 'ours (seed)'."""
    heads = list(columns)
    fmt = "%%.%df" % digits
    cells: List[List[str]] = []
    for r in rows:
        line = [r]
        for h in heads:
            v = columns[h].get(r)
            s = "-" if v is None else fmt % v
            if reference and h in reference and r in reference[h]:
                s += " (%s)" % (fmt % reference[h][r])
            line.append(s)
        cells.append(line)
    widths = [max(len(x) for x in col) for col in zip(*([["path"] + heads] + cells))]
    out = []
    header = ["path"] + heads
    out.append("| " + " | ".join(h.ljust(w) for h, w in zip(header, widths)) + " |")
    out.append("|-" + "-|-".join("-" * w for w in widths) + "-|")
    for line in cells:
        out.append("| " + " | ".join(c.ljust(w) for c, w in zip(line, widths)) + " |")
    return "\n".join(out)


def columns(head: Sequence[str], rows: Sequence, keep: int = 1, width: Optional[int] = WIDTH,
            gap: str = "  ") -> List[str]:
    """A plain-text table, each column as wide as its widest cell.  Columns that do not fit ``width``
    go into a following table that repeats the first ``keep`` columns (None: one table however wide).
    A row that is a string is a heading line, printed as it is in each table."""
    grid = [list(head)] + [list(r) for r in rows if not isinstance(r, str)]
    widths = [max(len(r[i]) for r in grid) for i in range(len(head))]
    parts: List[List[int]] = [[]]
    for i in range(keep, len(head)):
        cols = list(range(keep)) + parts[-1] + [i]
        if parts[-1] and width and sum(widths[j] + len(gap) for j in cols) - len(gap) > width:
            parts.append([])
        parts[-1].append(i)
    out: List[str] = []
    for part in parts:
        cols = list(range(keep)) + part
        for r in [head] + list(rows):
            out.append(r if isinstance(r, str) else gap.join(r[i].ljust(widths[i]) for i in cols).rstrip())
    return out


def _pg_init_note(result) -> List[str]:
    """Why the first I/O (and the I/O after a group switch) waited: the hardware handler's pg_init."""
    from ..target.status_parse import StatusParseError, parse_status_info
    try:
        feats = parse_status_info(result.status_info)["features"]
    except (StatusParseError, ValueError, KeyError, IndexError):
        return []
    count = int(feats[1]) if len(feats) == 2 and feats[1].isdigit() else 0
    if not count:
        return []
    return wrap("note: pg_init ran %d time%s: with a hardware handler (%s) dm-mpath holds I/O while it "
                "initialises a path group (at the first I/O and at each group switch), so those I/Os wait for "
                "it (the topology's `activation` time) and the max latency shows it"
                % (count, "" if count == 1 else "s", _hw_handler(result.status_table) or "in the table"))


def _hw_handler(table: str) -> str:
    toks = table.split()
    try:
        nf = int(toks[0])
        nh = int(toks[1 + nf])
        return "'%s'" % " ".join(toks[1 + nf:2 + nf + nh])
    except (ValueError, IndexError):
        return ""


def _short(name: str, width: int = 20) -> str:
    """A path's name for the table: whole, or its end (files of one folder differ at the end)."""
    return name if len(name) <= width else "..." + name[-(width - 3):]


def run_summary(result) -> str:
    """Per-path table plus latency and accounting lines for one run, at most 100 columns wide.

    With several priority groups, Best is defined per group (see
    :data:`mpathlab.report.model.BEST_GROUPS_NOTE`) and a note says so.
    """
    from .model import best_shares, mean_deviation, priority_groups
    from ..stall import describe
    lines: List[str] = []
    st = describe(result)
    ended = ""
    if st and st["at_ns"] is not None and st["at_ns"] != result.runtime_ns:
        ended = " (stalled at %s)" % format_ns(st["at_ns"])     # runtime counts the jobs' I/O time only
    elif st:
        ended = " (stalled)"
    lines += wrap("selector: %s   %s: %s%s   engine: %s"
                   % (result.selector, "elapsed" if result.engine == "live" else "simulated time",
                      format_ns(result.runtime_ns), ended, result.engine))
    lines.append("I/O: %d completed, %d errored, %d pending" % (result.completed, result.errored, result.pending))
    best, note = best_shares(result)
    groups = priority_groups(result)
    group_of = {n: i + 1 for i, g in enumerate(groups) for n in g}
    path_lat = getattr(result, "path_latency", {}) or {}
    # latency in one unit (us) for the whole table
    hdr = ("path", "dev", "pg", "share", "best", "IOs", "errors", "peak in-flight", "p50 us", "p99 us",
           "p99.9 us")
    rows = []
    for p in result.paths:
        st = path_lat.get(p["name"])
        pct = st.percentiles((50.0, 99.0, 99.9)) if st is not None and st.n else None
        lat = [us(pct[k]) for k in ("50.000000", "99.000000", "99.900000")] if pct else ["-"] * 3
        rows.append((_short(p["name"]), p["dev"], str(group_of.get(p["name"], "-")), "%.3f" % p["share"],
                     "%.3f" % best.get(p["name"], 0.0), str(p["completed"]), str(p["errors"]),
                     str(p["peak_in_flight"])) + tuple(lat))
    if len(groups) <= 1:   # one group: the column says nothing
        hdr = hdr[:2] + hdr[3:]
        rows = [r[:2] + r[3:] for r in rows]
    widths = [max(len(r[i]) for r in [hdr] + rows) for i in range(len(hdr))]
    num = set(range(3 if len(groups) > 1 else 2, len(hdr)))
    fmt = lambda r: "  ".join(c.rjust(w) if i in num else c.ljust(w)  # noqa: E731
                              for i, (c, w) in enumerate(zip(r, widths))).rstrip()
    lines.append(fmt(hdr))
    for r in rows:
        lines.append(fmt(r))
    if not sum(p["completed"] for p in result.paths):
        lines.append("mean deviation from Best: - (no I/O completed on any path)")
    elif note:
        lines.append("mean deviation from Best: %.4f (Best per priority group, weighted by the I/O each "
                     "group carried)" % mean_deviation(result.shares, best))
    else:
        lines.append("mean deviation from Best: %.4f" % result.mean_deviation)
    for j in _latency_lines(result):
        lines += wrap(j)
    for t, msg, outcome in result.messages:
        lines += wrap("at %s: %s (%s)" % (format_ns(t), msg, outcome))
    lines += _pg_init_note(result)
    from ..stall import stall_line
    stalled = stall_line(result)
    if stalled:
        lines += wrap(stalled)
    if note:
        lines += wrap("note: several priority groups, so Best is per group (each path's share of its "
                       "group's capacity), weighted by the I/O each group carried; a path that was failed "
                       "for part of the run falls short of it.", "      ")
    lines += wrap("%s: %s" % ("nvme subsystem" if result.selector.startswith("nvme:") else "dmsetup status",
                               result.status_info.strip()))
    return "\n".join(lines)


def _latency_lines(result):
    from ..sim.stats import merged_latency
    from .fio_json import usr_cpu
    for name in ("read", "write"):
        st = merged_latency(result.jobs, (name,))
        if not st.n:
            continue
        io_jobs = result.io_jobs
        secs = (max(j.end_ns for j in io_jobs) - min(j.start_ns for j in io_jobs)) / 1e9
        pct = st.percentiles((50.0, 99.0, 99.9))
        yield ("%s: IOPS=%.0f  lat mean=%s  p50=%s  p99=%s  p99.9=%s  max=%s"
               % (name, st.n / secs if secs else 0.0, format_ns(st.mean), format_ns(pct["50.000000"]),
                  format_ns(pct["99.000000"]), format_ns(pct["99.900000"]), format_ns(st.max)))
    for j in result.jobs:
        if getattr(j, "burner", False):
            yield ("%s (cpuio, clone %d): %d burns of %s, usr=%.1f%% (cpuload=%d)"
                   % (j.name, j.clone, j.completed, format_ns(j.spec.cpu_cycle_us * 1000), usr_cpu([j]),
                      j.spec.cpuload))
