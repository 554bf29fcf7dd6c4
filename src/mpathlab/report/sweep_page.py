"""HTML sweep report: every metric against every swept parameter, with confidence intervals over seeds.

A sweep table (``mpathlab sweep``) has one row per run: the selector, the
parameters (``iodepth`` and every ``--set`` key, which is a dotted key into
the topology such as ``paths.sdd.service.mean``), the seed, and metrics.
Other columns are tolerated and shown in the runs table.

For each swept parameter there is one figure: a column of panels per value
of the other swept parameters (nothing is averaged away unless there are
too many combinations, and then the page says so), a row per metric, a
line per selector.  Points are means over seeds with a 95 % confidence
interval (Student's t over the seeds, or the table's own
``<metric>_ci_low``/``<metric>_ci_high`` columns when it has them) and a
light band for the spread (min to max over seeds).
"""
from __future__ import annotations

import math
import os
import re
from typing import Dict, List, Optional, Sequence, Tuple

from .page import (FIG_WIDTH_IN, ReportError, count, deviation, esc, figure, note, page, plt, png, share, table,
                   us)

# two-sided 95 % Student t quantiles for 1..30 degrees of freedom
_T95 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145,
        2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048,
        2.045, 2.042]
MAX_FACETS = 4   # columns of panels per figure before the other parameters are averaged


def t95(df: int) -> float:
    return _T95[df - 1] if 1 <= df <= len(_T95) else 1.96


def _is_ci(col: str) -> bool:
    return col.endswith("_ci_low") or col.endswith("_ci_high")


def is_param(col: str) -> bool:
    """iodepth and the --set keys (dotted topology keys) are parameters; the rest are results."""
    return col == "iodepth" or ("." in col and not _is_ci(col))


def is_latency(col: str) -> bool:
    base = col[:-len("_ci_low")] if col.endswith("_ci_low") else col[:-len("_ci_high")] if \
        col.endswith("_ci_high") else col
    return base.startswith("lat_") and base.endswith("_ns")


def _metric_label(col: str) -> str:
    if col == "mean_deviation":
        return "mean |share - Best|"
    if col == "iops":
        return "IOPS"
    if is_latency(col):
        name = col[len("lat_"):-len("_ns")]
        name = {"mean": "mean", "max": "max"}.get(name, name.replace("p99_9", "p99.9").replace("p999", "p99.9"))
        return "%s latency (us)" % name
    return col


def plotted_metrics(cols: Sequence[str]) -> List[str]:
    """The metrics a sweep report plots, in a fixed order, among the table's columns."""
    lat = [c for c in cols if is_latency(c) and not _is_ci(c) and c != "lat_mean_ns"]

    def pct_key(c):
        n = c[len("lat_p"):-len("_ns")].replace("_", ".")
        n = "99.9" if n == "999" else n
        try:
            return float(n)
        except ValueError:
            return 1e9
    lat.sort(key=pct_key)
    return [c for c in ("mean_deviation", "iops") if c in cols] + lat


def fmt_cell(col: str, v) -> str:
    """One format per kind of column, units in the header (see header())."""
    if v is None or v == "":
        return "-"
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return str(v)
    if is_latency(col):
        return us(v)
    if col == "mean_deviation" or col.startswith("mean_deviation_"):
        return deviation(v)
    if col.startswith("share_") or col.startswith("best_"):
        return share(v)
    if isinstance(v, int) or col in ("iops", "completed", "errored") or col.startswith("iops_"):
        return count(v)
    if float(v).is_integer() and abs(v) >= 1000:
        return count(v)
    return "{:,.3f}".format(v) if abs(v) < 1000 else count(v)


def header(col: str) -> str:
    """A runs-table header: spaces where the column name has underscores (so it can wrap), units."""
    if is_latency(col):
        return col.replace("lat_", "").replace("_ns", "").replace("_", " ") + " (us)"
    if col == "mean_deviation":
        return "mean |share - Best|"
    if col.startswith("best_"):
        return "Best " + col[len("best_"):]
    return col.replace("_", " ") if "." not in col else col


def _num(v) -> Optional[float]:
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, (int, float)):
        return float(v)
    return None


def _order_key(v):
    """Order parameter values: numbers by value, durations/sizes by their value, else as given."""
    if isinstance(v, str) and re.fullmatch(r"\d+(\.\d+)+", v):     # a release: 5.15 after 5.8
        return (2, 0.0, ".".join("%06d" % int(x) for x in v.split(".")))
    n = _num(v)
    if n is not None:
        return (0, n, "")
    from ..units import UnitError, parse_duration_ns, parse_size
    for parse in (parse_duration_ns, parse_size):
        try:
            return (0, float(parse(str(v))), str(v))
        except (UnitError, ValueError, TypeError):
            pass
    return (1, 0.0, str(v))


class Point:
    """One (selector, parameter values) point: a metric over its seeds."""

    def __init__(self):
        self.rows: List[dict] = []

    def stats(self, metric: str) -> Tuple[float, float, float, float, float, int]:
        """(mean, ci_low, ci_high, min, max, n) over the seeds; NaN when there is no value."""
        vals = [float(r[metric]) for r in self.rows if _num(r.get(metric)) is not None]
        nan = float("nan")
        if not vals:
            return nan, nan, nan, nan, nan, 0
        n = len(vals)
        m = sum(vals) / n
        lows = [_num(r.get(metric + "_ci_low")) for r in self.rows]
        highs = [_num(r.get(metric + "_ci_high")) for r in self.rows]
        if all(x is not None for x in lows + highs) and lows:
            lo, hi = min(lows), max(highs)      # the table's own interval (i14's sweep columns)
        elif n >= 2:
            sd = math.sqrt(sum((x - m) ** 2 for x in vals) / (n - 1))
            half = t95(n - 1) * sd / math.sqrt(n)
            lo, hi = m - half, m + half
            if min(vals) >= 0 and lo < 0:
                lo = 0.0        # every metric here is >= 0 (shares, IOPS, latency)
        else:
            lo = hi = m
        return m, lo, hi, min(vals), max(vals), n


def _points(rows: List[dict], keys: Sequence[str]) -> Dict[tuple, Point]:
    pts: Dict[tuple, Point] = {}
    for r in rows:
        pts.setdefault(tuple(r.get(k) for k in keys), Point()).rows.append(r)
    return pts


def _values(rows, col) -> list:
    vals = []
    for r in rows:
        if r.get(col) not in vals:
            vals.append(r.get(col))
    return sorted(vals, key=_order_key)


class _Thousands:
    """Tick labels with thousands separators, never scientific notation."""

    def __call__(self, v, pos=None):
        if abs(v) >= 1000:
            return "{:,.0f}".format(v)
        return ("%.4f" % v).rstrip("0").rstrip(".") if v else "0"


def _formatter():
    from matplotlib.ticker import FuncFormatter
    return FuncFormatter(_Thousands())


def param_figure(rows, sels, param, others, metrics) -> Tuple[str, str]:
    """Metrics against one swept parameter: rows of panels per metric, columns per other-parameter value."""
    pl = plt()
    xs_vals = _values(rows, param)
    # a kernel profile ("5.15", "6.1") is a name, not a number on an axis
    numeric = all(_num(v) is not None for v in xs_vals) and not param.endswith(".kernel")
    log2 = numeric and all(_num(v) > 0 for v in xs_vals) and max(xs_vals) / min(xs_vals) >= 8
    combos = [()]
    averaged = []
    if others:
        combos = sorted({tuple(r.get(o) for o in others) for r in rows},
                        key=lambda c: tuple(_order_key(v) for v in c))
        if len(combos) > MAX_FACETS:
            averaged, combos = list(others), [()]
    facet_keys = [] if averaged else list(others)
    ncols = len(combos)
    fig, axes = pl.subplots(len(metrics), ncols, figsize=(FIG_WIDTH_IN, 2.9 * len(metrics) + 0.6),
                            squeeze=False, sharex=True)
    colours = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"]
    pts = _points(rows, ["selector", param] + facet_keys)
    handles = {}
    for ci, combo in enumerate(combos):
        for mi, metric in enumerate(metrics):
            ax = axes[mi, ci]
            scale = 1e3 if is_latency(metric) else 1.0
            for si, sel in enumerate(sels):
                col = colours[si % len(colours)]
                xs, ms, los, his, mins, maxs = [], [], [], [], [], []
                for k, v in enumerate(xs_vals):
                    p = pts.get((sel, v) + tuple(combo))
                    if p is None:
                        continue
                    m, lo, hi, mn, mx, n = p.stats(metric)
                    if m != m:
                        continue
                    xs.append(_num(v) if numeric else k)
                    ms.append(m / scale)
                    los.append((m - lo) / scale)
                    his.append((hi - m) / scale)
                    mins.append(mn / scale)
                    maxs.append(mx / scale)
                if not xs:
                    continue
                h = ax.errorbar(xs, ms, yerr=[los, his], marker="o", color=col, capsize=4, linewidth=1.6,
                                markersize=5)
                ax.fill_between(xs, mins, maxs, color=col, alpha=0.12, linewidth=0)
                handles[sel] = h
            if log2:
                ax.set_xscale("log", base=2)
            if numeric:
                ax.set_xticks([_num(v) for v in xs_vals])
                ax.set_xticklabels([str(v) for v in xs_vals])
                ax.minorticks_off()
            else:
                ax.set_xticks(range(len(xs_vals)))
                ax.set_xticklabels([str(v) for v in xs_vals])
            ax.yaxis.set_major_formatter(_formatter())
            ax.set_xlabel(param, fontsize=11)
            ax.tick_params(axis="x", labelbottom=True)
            if ci == 0:
                ax.set_ylabel(_metric_label(metric), fontsize=11)
            ax.grid(True, alpha=0.3)
            if mi == 0 and combo:
                ax.set_title(", ".join("%s=%s" % kv for kv in zip(facet_keys, combo)), fontsize=11)
    fig.legend([handles[s] for s in sels if s in handles], [s for s in sels if s in handles],
               loc="upper center", ncol=min(4, len(sels)), frameon=False, bbox_to_anchor=(0.5, 1.0))
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.45 / (2.9 * len(metrics) + 0.6)))
    cap = ("Against %s: mean over seeds, error bars the 95%% confidence interval over seeds, shaded the "
           "spread (min to max over seeds)." % param)
    if averaged:
        cap += " Averaged over %s (%d combinations, too many for one panel each)." % (
            ", ".join(averaged), len({tuple(r.get(o) for o in others) for r in rows}))
    elif facet_keys:
        cap += " One column per value of %s." % ", ".join(facet_keys)
    return png(fig), cap


def _summary(rows, sels, swept, metrics) -> str:
    keys = ["selector"] + swept
    pts = _points(rows, keys)
    order = sorted(pts, key=lambda k: (sels.index(k[0]),) + tuple(_order_key(v) for v in k[1:]))
    head = keys + ["seeds"] + ["%s: mean [95%% CI]" % _metric_label(m) for m in metrics]
    out = []
    for k in order:
        p = pts[k]
        line = [str(v) for v in k]
        n = 0
        cells = []
        for m in metrics:
            mean, lo, hi, mn, mx, n_m = p.stats(m)
            n = max(n, n_m)
            if mean != mean:
                cells.append("-")
                continue
            f = lambda x: fmt_cell(m, x)  # noqa: E731
            cells.append("%s [%s, %s]" % (f(mean), f(lo), f(hi)) if hi > lo else f(mean))
        out.append(line + [str(n)] + cells)
    return table(head, out, left=len(keys))


def identical_selectors(rows, sels, metrics) -> List[List[str]]:
    """Selectors whose metrics are equal at every (parameters, seed) point, grouped."""
    keyed: Dict[str, Dict[tuple, tuple]] = {}
    for r in rows:
        k = tuple((c, str(v)) for c, v in r.items() if is_param(c) or c == "seed")
        keyed.setdefault(r["selector"], {})[k] = tuple(r.get(m) for m in metrics)
    groups: List[List[str]] = []
    for sel in sels:
        for g in groups:
            if keyed[g[0]] == keyed[sel]:
                g.append(sel)
                break
        else:
            groups.append([sel])
    return [g for g in groups if len(g) > 1]


def sweep_title(rows: List[dict], source: str = "") -> str:
    cols = _columns(rows)
    swept = [c for c in cols if is_param(c) and len(_values(rows, c)) > 1]
    sels = _values(rows, "selector") if "selector" in cols else []
    seeds = _values(rows, "seed") if "seed" in cols else []
    parts = (["%d selectors" % len(sels)] if len(sels) > 1 else []) + swept
    t = "Sweep of %s" % (" x ".join(parts) if parts else "one point")
    if len(seeds) > 1:
        t += ", %d seeds" % len(seeds)
    return t + (" (%s)" % source if source else "")


def _columns(rows) -> List[str]:
    cols: List[str] = []
    for r in rows:
        for k in r:
            if k not in cols:
                cols.append(k)
    return cols


def sweep_report(rows: List[dict], title: Optional[str] = None, source: str = "") -> str:
    """The sweep report page for the rows of a sweep table (``source``: its file name)."""
    if not rows:
        raise ReportError("the sweep table is empty")
    cols = _columns(rows)
    for need in ("selector",):
        if need not in cols:
            raise ReportError("%s: not a sweep table: no %r column" % (source or "sweep table", need))
    params = [c for c in cols if is_param(c)]
    swept = [c for c in params if len(_values(rows, c)) > 1]
    fixed = [c for c in params if c not in swept]
    metrics = plotted_metrics(cols)
    if not metrics:
        raise ReportError("%s: no metric columns (mean_deviation, iops, lat_*_ns)" % (source or "sweep table"))
    rows = [dict(r, selector=str(r["selector"])) for r in rows]
    sels = list(dict.fromkeys(r["selector"] for r in rows))
    seeds = _values(rows, "seed") if "seed" in cols else []
    body = []
    facts = ["%d runs" % len(rows), "selectors: %s" % ", ".join(sels)]
    if seeds:
        facts.append("seeds: %s" % ", ".join(str(s) for s in seeds))
    facts += ["%s = %s" % (c, rows[0].get(c)) for c in fixed]
    if "engine" in cols:
        facts.append("engine: %s" % ", ".join(str(e) for e in _values(rows, "engine")))
    body.append("<p>%s.</p>" % esc("; ".join(facts)))
    if len(seeds) < 2 and not any(_is_ci(c) for c in cols):
        body.append(note("One seed per point: no confidence interval or spread over seeds can be shown; "
                         "run the sweep with --seeds 1,2,3 (or more)."))
    body.append("<p>Latency in microseconds throughout; mean |share - Best| is the mean over paths of the "
                "distance from the ideal split (0 = Best).</p>")
    if not swept:
        swept_for_plot = ["iodepth"] if "iodepth" in cols else []
    else:
        swept_for_plot = swept
    for s in identical_selectors(rows, sels, metrics):
        body.append(note("%s identical on this sweep (every metric equal at every point): their lines "
                         "lie on top of each other." % " and ".join(s)))
    for param in swept_for_plot:
        body.append("<h2>Against %s</h2>" % esc(param))
        b64, cap = param_figure(rows, sels, param, [o for o in swept if o != param], metrics)
        body.append(figure("against %s" % param, b64, cap))
    body.append("<h2>Summary over seeds</h2>")
    body.append(_summary(rows, sels, swept, metrics))
    body.append("<h2>Runs</h2>")
    order = ["selector"] + swept + (["seed"] if "seed" in cols else [])
    if "seed" in cols:                  # tails with confidence intervals need the per-seed rows
        from .tails import tail_html
        body.append(tail_html(rows))
    shown = order + [c for c in cols if c not in order]
    body.append(table([header(c) for c in shown], [[fmt_cell(c, r.get(c)) for c in shown] for r in rows],
                      cls="runs", left=len(order) - (1 if "seed" in cols else 0)))
    return page(title or sweep_title(rows, source), body,
                None if title is None else sweep_title(rows, source))


def source_name(path: str) -> str:
    return os.path.basename(path)
