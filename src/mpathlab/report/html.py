"""HTML run report: runs of one topology and job under several policies, on one page.

The page, top to bottom: the setup (mpathlab version, engine, seed, kernel
profile, the topology's description, table and jobs); the path device
models that explain Best; shares of I/O per path against Best; overall and
per-path latency (mean, p50, p99, p99.9, max); latency CDFs; I/O in flight
per path over time as small multiples with the faults and dm messages
marked; the list of those events and what each run made of them; the final
``dmsetup status``.  Runs that behaved identically are said so and drawn
once.  The sweep report is :mod:`mpathlab.report.sweep_page`.
"""
from __future__ import annotations

import math
from typing import Dict, List, Optional, Sequence

from ..sim.stats import bucket_value, merged_latency
from . import model
from .page import (DPI, FIG_WIDTH_IN, ReportError, count, deviation, dl, esc, figure, note, page, plt, png,
                   share, table, us)
from .sweep_page import sweep_report

__all__ = ["ReportError", "run_report", "sweep_report"]

EVENT_COLOURS = {"fault": "#c62828", "message": "#6a1b9a"}


def _colours(n: int) -> List[str]:
    base = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
            "#bcbd22", "#17becf"]
    return [base[i % len(base)] for i in range(n)]


def _set_label(labels: Sequence[str]) -> str:
    return " = ".join(labels)


def utilisation_plot(runs, best: Dict[str, float]) -> str:
    pl = plt()
    labels = [lab for lab, _ in runs]
    paths = [p["name"] for p in runs[0][1].paths]
    fig, ax = pl.subplots(figsize=(FIG_WIDTH_IN, 4.6))
    width = 0.8 / max(1, len(labels))
    for i, ((lab, res), col) in enumerate(zip(runs, _colours(len(labels)))):
        shares = [res.shares.get(p, 0.0) for p in paths]
        ax.bar([k - 0.4 + (i + 0.5) * width for k in range(len(paths))], shares, width * 0.95, label=lab,
               color=col)
    for k, p in enumerate(paths):
        ax.hlines(best.get(p, 0.0), k - 0.45, k + 0.45, colors="black", linestyles="dashed", linewidth=2,
                  label="Best" if k == 0 else None)
    ax.set_xticks(range(len(paths)))
    ax.set_xticklabels(paths)
    ax.set_xlabel("path")
    ax.set_ylabel("share of completed I/O")
    ax.set_ylim(0, max([best.get(p, 0) for p in paths] + [r.shares.get(p, 0) for _, r in runs for p in paths])
                * 1.12 or 1)
    ax.grid(True, axis="y", alpha=0.3)
    ax.set_title("Share of I/O per path against Best")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return png(fig)


def _cdf_points(st):
    xs, ys, cum = [], [], 0
    for idx, c in sorted(st.hist.items()):
        cum += c
        xs.append(bucket_value(idx) / 1e3)
        ys.append(cum / st.n)
    return xs, ys


def _cdf_axes(ax, left_us: float):
    ax.set_xscale("log")
    # logit: the tail (p99, p99.9) gets as much room as the median
    ax.set_yscale("logit")
    ax.set_ylim(0.01, 0.9995)
    ax.set_yticks([0.01, 0.1, 0.5, 0.9, 0.99, 0.999])
    ax.set_yticklabels(["1%", "10%", "50%", "90%", "99%", "99.9%"])
    ax.minorticks_off()
    ax.set_xlim(left=left_us)
    ax.set_xlabel("completion latency (us)")
    ax.set_ylabel("I/O at or below")
    ax.grid(True, which="major", alpha=0.3)


def _title(text: str, width: int = 30) -> str:
    import textwrap
    return "\n".join(textwrap.wrap(text, width, break_on_hyphens=False))


def latency_cdf_plot(runs, sets: List[List[str]]) -> str:
    """Left: overall CDF per run (identical runs drawn once); right: per path, one panel per run."""
    pl = plt()
    by_label = dict(runs)
    n = len(sets)
    ncols = min(4, n + 1)
    nrows = math.ceil((n + 1) / ncols)
    fig, axes = pl.subplots(nrows, ncols, figsize=(FIG_WIDTH_IN, 4.6 * nrows), squeeze=False,
                            layout="constrained")
    flat = list(axes.flat)
    paths = [p["name"] for p in runs[0][1].paths]
    # the x axis starts just below the lowest p1 of any curve drawn (the CDF starts at 1 %)
    lows = []
    for s in sets:
        res = by_label[s[0]]
        for st in [merged_latency(res.jobs)] + [getattr(res, "path_latency", {}).get(p) for p in paths]:
            if st is not None and st.n:
                lows.append(st.percentiles((1.0,))["1.000000"] / 1e3)
    left = min(lows) * 0.7 if lows else None
    ax = flat[0]
    for s, col in zip(sets, _colours(n)):
        st = merged_latency(by_label[s[0]].jobs)
        if st.n:
            ax.step(*_cdf_points(st), where="post", label=_title(_set_label(s), 34), color=col, linewidth=1.8)
    _cdf_axes(ax, left)
    ax.set_title("all paths, per policy")
    ax.legend(loc="upper left", bbox_to_anchor=(0.0, -0.2), frameon=False, fontsize=10)
    pcols = _colours(len(paths))
    for ax, s in zip(flat[1:], sets):
        res = by_label[s[0]]
        for p, col in zip(paths, pcols):
            st = getattr(res, "path_latency", {}).get(p)
            if st is not None and st.n:
                ax.step(*_cdf_points(st), where="post", label="path %s" % p, color=col, linewidth=1.6)
        _cdf_axes(ax, left)
        ax.set_title(_title("per path: %s" % _set_label(s)), fontsize=12)
        ax.legend(loc="upper left", bbox_to_anchor=(0.0, -0.2), frameon=False, fontsize=10,
                  ncol=2 if len(paths) > 3 else 1)
    for ax in flat[n + 1:]:
        ax.set_visible(False)
    return png(fig)


def inflight_plot(runs, sets: List[List[str]], evs: List[model.Event]) -> str:
    """Small multiples: one row per policy (identical policies share a row), one panel per path.

    In-flight counts are integers sampled over the run; each sample is held
    until the next one (a step), the y axis has integer ticks and the same
    scale in every panel.  Faults and dm messages are vertical lines,
    numbered as in the events table.
    """
    pl = plt()
    from matplotlib.ticker import MaxNLocator
    by_label = dict(runs)
    paths = [p["name"] for p in runs[0][1].paths]
    ncols = min(4, len(paths))
    rows_per_set = math.ceil(len(paths) / ncols)
    top = 1
    end_ms = 0.0
    for res in by_label.values():
        for _, counts in res.timeline:
            top = max(top, max(counts.values(), default=0))
        end_ms = max([end_ms, res.runtime_ns / 1e6] + [t / 1e6 for t, _ in res.timeline[-1:]])
    # time in ms, or in s for long runs (tick labels stay short)
    unit, div = ("s", 1e3) if end_ms >= 10000 else ("ms", 1.0)
    fig = pl.figure(figsize=(FIG_WIDTH_IN, (2.6 * rows_per_set + 0.45) * len(sets)), layout="constrained")
    subfigs = fig.subfigures(len(sets), 1, squeeze=False)[:, 0]
    pcols = _colours(len(paths))
    for s, sf in zip(sets, subfigs):
        res = by_label[s[0]]
        sf.suptitle(_set_label(s), x=0.005, ha="left", fontsize=13, fontweight="bold")
        axes = sf.subplots(rows_per_set, ncols, squeeze=False)
        ts = [t / 1e6 / div for t, _ in res.timeline]
        for k, p in enumerate(paths):
            ax = axes[k // ncols, k % ncols]
            if res.timeline:
                ys = [d.get(p, 0) for _, d in res.timeline]
                ax.step(ts, ys, where="post", color=pcols[k], linewidth=1.3)
                ax.fill_between(ts, ys, step="post", color=pcols[k], alpha=0.15, linewidth=0)
            last_x, level = None, 0
            for i, ev in enumerate(evs, 1):
                x = ev.at_ns / 1e6 / div
                if x <= end_ms / div:
                    c = EVENT_COLOURS.get(ev.kind, "grey")
                    ax.axvline(x, color=c, linestyle="--", linewidth=1.2)
                    # numbers of events close together go one below the other
                    level = level + 1 if last_x is not None and x - last_x < 0.06 * (end_ms / div or 1) else 0
                    last_x = x
                    ax.text(x, 0.98 - 0.13 * (level % 4), " %d" % i, transform=ax.get_xaxis_transform(),
                            va="top", ha="left", fontsize=10, color=c, fontweight="bold")
            ax.set_xlim(0, end_ms / div or 1)
            ax.set_ylim(0, top * 1.12 + 0.5)
            ax.yaxis.set_major_locator(MaxNLocator(integer=True, nbins=5))
            ax.set_title(p, fontsize=12)
            ax.set_xlabel("time (%s)" % unit, fontsize=11)
            if k % ncols == 0:
                ax.set_ylabel("I/O in flight")
            ax.grid(True, alpha=0.25)
        for k in range(len(paths), rows_per_set * ncols):
            axes[k // ncols, k % ncols].set_visible(False)
    return png(fig)


def _setup(runs, topology, jobs, seed, context) -> List[str]:
    from .. import __version__
    items = [("mpathlab", __version__)]
    engines = {}
    for lab, res in runs:
        engines.setdefault({"compiled": "compiled core", "python": "Python engine"}.get(res.engine, res.engine),
                           []).append(lab)
    items.append(("engine", "; ".join("%s (%s)" % (e, ", ".join(l)) if len(engines) > 1 else e
                                      for e, l in engines.items())))
    if seed is not None:
        items.append(("seed", str(seed)))
    if topology is not None:
        from ..profiles import get_profile
        prof = get_profile(topology.kernel)
        items.append(("kernel profile", "%s%s%s" % (prof.name, " (%s)" % prof.description if prof.description
                                                    else "", "" if topology.kernel else
                                                    ", the default: the topology names none")))
        if getattr(topology, "sched_clock_offset_ns", None) is not None:
            items.append(("HST clock", "select_path reads sched_clock, %s ahead of ktime (as in 5.8 to 5.17)"
                          % model._dur(topology.sched_clock_offset_ns)))
        if topology.source:
            items.append(("topology", topology.source))
        if topology.table:
            items.append(("table", topology.table))
    if jobs is not None:
        for j in jobs:
            items.append(("job", j.describe()))
    for c in context:
        k, sep, v = c.partition(": ")
        items.append((k, v) if sep and len(k) < 20 else ("", c))
    out = ["<h2>Setup</h2>", dl(items)]
    if topology is not None and getattr(topology, "description", ""):
        out.append("<p><b>Topology:</b> %s</p>" % esc(" ".join(topology.description.split())))
    return out


def _devices(runs, topology, groups, best) -> str:
    res = runs[0][1]
    models = {pm.name: pm for pm in topology.paths} if topology is not None else {}
    group_of = {n: i + 1 for i, g in enumerate(groups) for n in g}
    head = ["path", "device", "priority group", "service time", "servers", "added delay (us)",
            "per KiB (us)", "capacity (IOPS)", "Best", "faults"]
    rows = []
    for p in res.paths:
        pm = models.get(p["name"])
        faults = ", ".join("%s at %.0f ms" % (f.action, f.at_ns / 1e6) for f in pm.faults) if pm else ""
        cap = model._capacity(p)
        rows.append([p["name"], p["dev"], str(group_of.get(p["name"], "-")), model.describe_service(p, pm),
                     str(p.get("parallelism", "-")), us(p.get("delay_ns", 0)),
                     us(pm.ns_per_kib) if pm else "-", "unbounded" if math.isinf(cap) else count(cap),
                     share(best.get(p["name"])), faults or "-"])
    return table(head, rows, left={0, 1, 2, 3, 9})


def _shares(runs, best, paths) -> str:
    head = ["policy"] + paths + ["mean |share - Best|", "IOPS", "errored I/O"]
    rows = []
    for lab, res in runs:
        secs = res.runtime_ns / 1e9 if res.runtime_ns else 0
        rows.append([lab] + [share(res.shares.get(p, 0.0)) for p in paths]
                    + [deviation(model.mean_deviation(res.shares, best)),
                       count(res.completed / secs if secs else 0), count(res.errored)])
    rows.append(["Best"] + [share(best.get(p, 0.0)) for p in paths] + ["", "", ""])
    return table(head, rows)


def _latency(runs, paths) -> str:
    head = ["policy", "path", "I/Os", "share", "mean (us)", "p50 (us)", "p99 (us)", "p99.9 (us)", "max (us)"]
    cells = []
    for lab, res in runs:
        lines = [("all paths", merged_latency(res.jobs), None, True)]
        for p in paths:
            st = getattr(res, "path_latency", {}).get(p)
            lines.append((p, st, res.shares.get(p, 0.0), False))
        for i, (name, st, sh, is_sum) in enumerate(lines):
            if st is None:
                vals = ["-"] * 6
            else:
                pct = st.percentiles((50.0, 99.0, 99.9))
                vals = [count(st.n)] + ([us(st.mean), us(pct["50.000000"]), us(pct["99.000000"]),
                                         us(pct["99.900000"]), us(st.max)] if st.n else ["-"] * 5)
            row = [esc(lab) if i == 0 else "", esc(name), vals[0], share(sh) if sh is not None else ""] + vals[1:]
            cells.append((is_sum, row))
    th = "".join('<th%s>%s</th>' % (' class="l"' if i < 2 else "", esc(h)) for i, h in enumerate(head))
    trs = "".join('<tr%s>%s</tr>' % (' class="sum"' if s else "", "".join(
        '<td%s>%s</td>' % (' class="l"' if i < 2 else "", c) for i, c in enumerate(r))) for s, r in cells)
    return '<div class="scroll"><table><thead><tr>%s</tr></thead><tbody>%s</tbody></table></div>' % (th, trs)


def _events(runs, evs) -> str:
    labels = [lab for lab, _ in runs]
    same = all(len(set(ev.outcome.get(l, "-") for l in labels)) == 1 for ev in evs)
    head = ["#", "time (ms)", "event"] + (["result (every policy)"] if same else ["result: %s" % l for l in labels])
    rows = []
    for i, ev in enumerate(evs, 1):
        res = [ev.outcome.get(labels[0], "-")] if same else [ev.outcome.get(l, "-") for l in labels]
        rows.append([str(i), "{:,.3f}".format(ev.at_ns / 1e6), ev.what] + res)
    return table(head, rows, left=set(range(2, len(head))))


def run_report(results, title: str, context: Sequence[str] = (), *, topology=None, jobs=None,
               seed: Optional[int] = None, tail_rows=()) -> str:
    """A report comparing runs of one topology and job.

    ``results``: label -> SimResult, or a sequence of (label, SimResult)
    pairs; the label is the policy's name.  ``topology`` (the Topology the
    runs used) adds the device models, faults and description; ``jobs`` the
    fio jobs; ``seed`` the seed the runs used; ``tail_rows`` per-seed tail
    latencies (report.tails.tail_row) for the table with confidence intervals.
    """
    try:
        runs = model.as_runs(results)
    except ValueError as e:
        raise ReportError(str(e)) from None
    first = runs[0][1]
    paths = [p["name"] for p in first.paths]
    groups = model.priority_groups(first)
    best, best_note = model.best_shares(first)
    sets = model.identical_sets(runs)
    evs = model.events(runs, topology)
    body = _setup(runs, topology, jobs, seed, context)
    for n in model.identical_note(runs):
        body.append(note(n + "; drawn once below."))
    body.append("<h2>Path devices</h2>")
    body.append("<p>What each path's device can do: Best gives every path its share of the total capacity "
                "(servers / mean service time per I/O); an added delay costs latency, not capacity.</p>")
    if best_note:
        body.append(note(best_note))
    body.append(_devices(runs, topology, groups, best))
    body.append("<h2>Shares of I/O</h2>")
    body.append(_shares(runs, best, paths))
    body.append(figure("utilisation", utilisation_plot(runs, best),
                       "Share of completed I/O per path for each policy; dashed: Best%s."
                       % (" (per priority group, weighted by the I/O each group carried)" if best_note else "")))
    body.append("<h2>Latency</h2>")
    body.append("<p>Completion latency from submission to completion as the job sees it (requeues and "
                "failovers included), overall and per path (the path that completed the I/O).</p>")
    body.append(_latency(runs, paths))
    body.append(figure("latency CDF", latency_cdf_plot(runs, sets),
                       "Latency CDFs: overall per policy, and per path for each policy (logit scale: the "
                       "tail from p90 to p99.9 is as wide as the middle)."))
    if tail_rows:
        from .tails import tail_html
        body.append(tail_html(list(tail_rows)))
    body.append("<h2>I/O in flight over time</h2>")
    body.append(figure("in-flight", inflight_plot(runs, sets, evs),
                       "I/O in flight on each path (an integer count, sampled %d times over the run; each "
                       "sample is held until the next). Same y scale in every panel.%s"
                       % (len(first.timeline), " Dashed lines: the numbered events below (red: device "
                                                   "faults, purple: dm messages)." if evs else "")))
    body.append("<h2>Events</h2>")
    if evs:
        body.append(_events(runs, evs))
    else:
        body.append("<p>No device faults and no dm messages in this run.</p>")
    body.append("<h2>Final state</h2>")
    for lab, res in runs:
        extra = " (stalled: I/O still queued with no usable path)" if res.stalled else ""
        what = "NVMe subsystem state" if res.selector.startswith("nvme:") else "<code>dmsetup status</code>"
        body.append("<p><b>%s</b>: %s completed, %s errored, %s pending%s; %s:</p>"
                    "<pre>%s</pre>" % (esc(lab), count(res.completed), count(res.errored), count(res.pending),
                                       extra, what, esc(res.status_info)))
    return page(title, body, "%d policies on the same topology and job%s." % (
        len(runs), ", seed %s" % seed if seed is not None else ""))
