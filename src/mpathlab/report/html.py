"""HTML reports with matplotlib plots, for runs of several selectors or a sweep.

Plots: per-path utilisation bars against Best, latency CDFs per selector,
in-flight I/O per path over time; for a sweep, the mean deviation from Best
and the p99 latency against iodepth, one line per selector.  Images are
embedded as base64 PNG, so the report is one self-contained file.
"""
from __future__ import annotations

import base64
import html
import io
from typing import Dict, List, Sequence

from ..sim.stats import _bucket_value, merged_latency
from ..units import format_ns


class ReportError(ValueError):
    pass


def _plt():
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        from ..inputs import MissingDependency
        raise MissingDependency("matplotlib", "a report",
                                "pip install matplotlib (or pip install -e .[report])") from None
    return plt


def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    _plt().close(fig)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def utilisation_plot(results: Dict[str, object]) -> str:
    plt = _plt()
    labels = list(results)
    paths = [p["name"] for p in next(iter(results.values())).paths]
    fig, ax = plt.subplots(figsize=(max(6, 1.2 * len(paths) + 2), 4))
    width = 0.8 / max(1, len(labels))
    for i, lab in enumerate(labels):
        shares = [results[lab].shares.get(p, 0.0) for p in paths]
        ax.bar([k + i * width for k in range(len(paths))], shares, width, label=lab)
    best = next(iter(results.values())).best
    for k, p in enumerate(paths):
        ax.hlines(best.get(p, 0.0), k - width / 2, k + width * (len(labels) - 0.5), colors="black",
                  linestyles="dashed", label="Best" if k == 0 else None)
    ax.set_xticks([k + width * (len(labels) - 1) / 2 for k in range(len(paths))])
    ax.set_xticklabels(paths)
    ax.set_ylabel("share of I/O")
    ax.set_title("Per-path utilisation against Best")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    return _png(fig)


def latency_cdf_plot(results: Dict[str, object]) -> str:
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7, 4))
    for lab, res in results.items():
        st = merged_latency(res.jobs)
        if not st.n:
            continue
        xs, ys, cum = [], [], 0
        for idx, c in sorted(st.hist.items()):
            cum += c
            xs.append(_bucket_value(idx) / 1e3)
            ys.append(cum / st.n)
        ax.step(xs, ys, where="post", label=lab)
    ax.set_xscale("log")
    ax.set_xlabel("completion latency (us)")
    ax.set_ylabel("fraction of I/O")
    ax.set_title("Latency CDF per selector")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    return _png(fig)


def inflight_plot(results: Dict[str, object]) -> str:
    plt = _plt()
    n = len(results)
    fig, axes = plt.subplots(n, 1, figsize=(7, 2.4 * n), sharex=True, squeeze=False)
    for ax, (lab, res) in zip(axes[:, 0], results.items()):
        if res.timeline:
            ts = [t / 1e6 for t, _ in res.timeline]
            for p in res.timeline[0][1]:
                ax.plot(ts, [d[p] for _, d in res.timeline], label=p)
        ax.set_title("In-flight I/O per path: %s" % lab, fontsize=10)
        ax.set_ylabel("in flight")
        if res.timeline:
            ax.legend(fontsize=7, ncol=4)
    axes[-1, 0].set_xlabel("time (ms)")
    return _png(fig)


def _figure(alt: str, b64: str, caption: str) -> str:
    return ('<figure><img alt="%s" src="data:image/png;base64,%s"><figcaption>%s</figcaption></figure>'
            % (html.escape(alt), b64, html.escape(caption)))


def _page(title: str, body: List[str]) -> str:
    return ("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>%s</title><style>"
            "body{font-family:sans-serif;max-width:1000px;margin:2em auto}table{border-collapse:collapse}"
            "td,th{border:1px solid #ccc;padding:2px 8px;text-align:right}figure{margin:1.5em 0}"
            "code{background:#f4f4f4}</style></head><body>\n<h1>%s</h1>\n%s\n</body></html>\n"
            % (html.escape(title), html.escape(title), "\n".join(body)))


def run_report(results: Dict[str, object], title: str, context: Sequence[str] = (), tail_rows=()) -> str:
    """A report comparing runs (label -> SimResult) of one topology and job."""
    body = ["<p>%s</p>" % html.escape(c) for c in context]
    paths = [p["name"] for p in next(iter(results.values())).paths]
    rows = ["<tr><th>selector</th>%s<th>mean dev.</th><th>IOPS</th><th>p99</th></tr>"
            % "".join("<th>%s</th>" % html.escape(p) for p in paths)]
    for lab, res in results.items():
        st = merged_latency(res.jobs)
        secs = res.runtime_ns / 1e9 if res.runtime_ns else 0
        rows.append("<tr><td>%s</td>%s<td>%.4f</td><td>%.0f</td><td>%s</td></tr>" % (
            html.escape(lab), "".join("<td>%.3f</td>" % res.shares.get(p, 0.0) for p in paths),
            res.mean_deviation, st.n / secs if secs else 0.0, format_ns(st.percentiles((99.0,))["99.000000"])))
    best = next(iter(results.values())).best
    rows.append("<tr><td>Best</td>%s<td></td><td></td><td></td></tr>"
                % "".join("<td>%.3f</td>" % best.get(p, 0.0) for p in paths))
    body.append("<h2>Shares of I/O</h2><table>%s</table>" % "".join(rows))
    body.append(_figure("utilisation", utilisation_plot(results),
                        "Share of completed I/O per path for each selector; dashed: Best."))
    body.append(_figure("latency CDF", latency_cdf_plot(results), "Completion latency distribution."))
    body.append(_figure("in-flight", inflight_plot(results), "I/O in flight on each path over the run."))
    if tail_rows:
        from .tails import tail_html
        body.append(tail_html(list(tail_rows)))
    for lab, res in results.items():
        what = "NVMe subsystem state" if res.selector.startswith("nvme:") else "<code>dmsetup status</code>"
        body.append("<p><b>%s</b> final %s: <code>%s</code></p>"
                    % (html.escape(lab), what, html.escape(res.status_info)))
    return _page(title, body)


def sweep_report(rows: List[dict], title: str) -> str:
    """A report of a sweep table: deviation and p99 latency against iodepth."""
    if not rows:
        raise ReportError("the sweep table is empty")
    plt = _plt()
    body = ["<p>%d runs.</p>" % len(rows)]
    sels = []
    for r in rows:
        if r["selector"] not in sels:
            sels.append(r["selector"])
    figs = []
    for metric, ylabel, name in (("mean_deviation", "mean |share - Best|", "deviation"),
                                 ("lat_p99_ns", "p99 latency (us)", "p99 latency")):
        fig, ax = plt.subplots(figsize=(7, 4))
        for sel in sels:
            by_depth: Dict[int, List[float]] = {}
            for r in rows:
                if r["selector"] == sel:
                    v = float(r[metric]) / (1e3 if metric.endswith("_ns") else 1.0)
                    by_depth.setdefault(int(r["iodepth"]), []).append(v)
            ds = sorted(by_depth)
            ax.plot(ds, [sum(by_depth[d]) / len(by_depth[d]) for d in ds], marker="o", label=sel)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("iodepth")
        ax.set_ylabel(ylabel)
        ax.set_title("%s against iodepth (mean over seeds and parameters)" % name)
        ax.grid(True, alpha=0.3)
        ax.legend()
        figs.append(_figure(name, _png(fig), "%s per selector." % ylabel))
    body.extend(figs)
    from .tails import tail_html
    body.append(tail_html(rows))
    cols = list(rows[0])
    body.append("<h2>Runs</h2><table><tr>%s</tr>%s</table>" % (
        "".join("<th>%s</th>" % html.escape(c) for c in cols),
        "".join("<tr>%s</tr>" % "".join("<td>%s</td>" % html.escape(
            ("%.4g" % r[c]) if isinstance(r.get(c), float) else str(r.get(c))) for c in cols) for r in rows)))
    return _page(title, body)
