"""Readable tables for the terminal."""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence

from ..units import format_ns


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


def run_summary(result) -> str:
    """Per-path table plus latency and accounting lines for one run."""
    lines = []
    lines.append("selector: %s   %s: %s   IOs: %d completed, %d errored, %d pending"
                 % (result.selector, "elapsed" if result.engine == "live" else "simulated time",
                    format_ns(result.runtime_ns), result.completed, result.errored, result.pending))
    hdr = ("path", "dev", "share", "best", "IOs", "errors", "peak in-flight")
    rows = [(p["name"], p["dev"], "%.3f" % p["share"], "%.3f" % p["best"], str(p["completed"]),
             str(p["errors"]), str(p["peak_in_flight"])) for p in result.paths]
    widths = [max(len(r[i]) for r in [hdr] + rows) for i in range(len(hdr))]
    lines.append("  ".join(h.ljust(w) for h, w in zip(hdr, widths)))
    for r in rows:
        lines.append("  ".join(c.ljust(w) for c, w in zip(r, widths)))
    lines.append("mean deviation from Best: %.4f" % result.mean_deviation)
    for j in _latency_lines(result):
        lines.append(j)
    for t, msg, outcome in result.messages:
        lines.append("at %s: %s (%s)" % (format_ns(t), msg, outcome))
    if result.stalled:
        lines.append("note: the run stopped with I/O still queued (no usable path and nothing left to "
                     "reinstate one)")
    lines.append("%s: %s" % ("nvme subsystem" if result.selector.startswith("nvme:") else "dmsetup status",
                             result.status_info))
    return "\n".join(lines)


def _latency_lines(result):
    from ..sim.stats import merged_latency
    for name in ("read", "write"):
        st = merged_latency(result.jobs, (name,))
        if not st.n:
            continue
        secs = result.runtime_ns / 1e9 if result.runtime_ns else 0
        pct = st.percentiles((50.0, 99.0, 99.9))
        yield ("%s: IOPS=%.0f  lat mean=%s  p50=%s  p99=%s  p99.9=%s  max=%s"
               % (name, st.n / secs if secs else 0.0, format_ns(st.mean), format_ns(pct["50.000000"]),
                  format_ns(pct["99.000000"]), format_ns(pct["99.900000"]), format_ns(st.max)))
