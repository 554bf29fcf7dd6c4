"""The HTML page and figure plumbing shared by the run and sweep reports.

One self-contained file: plots are PNGs embedded as base64.  The page uses
the whole window width; wide tables scroll inside their own box, so nothing
overflows the page horizontally.  Figures are drawn at about 1300 px wide
with 12-13 pt text, so they read at a glance at 1400 px and shrink with the
window (max-width: 100%).
"""
from __future__ import annotations

import base64
import html
import io
from typing import List, Optional, Sequence

FIG_WIDTH_IN = 13.0      # at DPI 100: 1300 px, the width of the page's content at 1400 px
DPI = 100
FONT = {"font.size": 12, "axes.titlesize": 13, "axes.labelsize": 12, "legend.fontsize": 11,
        "xtick.labelsize": 11, "ytick.labelsize": 11, "figure.titlesize": 14}


class ReportError(ValueError):
    pass


def plt():
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as pyplot
    except ImportError:
        from ..inputs import MissingDependency      # the CLI's own exit code for a missing optional package
        raise MissingDependency("matplotlib", "a report",
                                "pip install matplotlib (or pip install -e .[report])") from None
    pyplot.rcParams.update(FONT)
    return pyplot


def png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, bbox_inches="tight")
    plt().close(fig)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def esc(text) -> str:
    return html.escape(str(text))


def figure(alt: str, b64: str, caption: str) -> str:
    return ('<figure><img alt="%s" src="data:image/png;base64,%s"><figcaption>%s</figcaption></figure>'
            % (esc(alt), b64, esc(caption)))


def table(head: Sequence[str], rows: Sequence[Sequence[str]], cls: str = "", raw: bool = False,
          left=1) -> str:
    """An HTML table in a box that scrolls horizontally when it is wider than the page.

    ``left``: how many leading columns are text (left-aligned), or the set of their indexes; the
    rest are numbers (right-aligned).
    With ``raw`` the cells are HTML already.
    """
    f = (lambda x: x) if raw else esc
    is_left = (lambda i: i in left) if isinstance(left, (set, frozenset)) else (lambda i: i < left)
    th = "".join('<th%s>%s</th>' % (' class="l"' if is_left(i) else "", esc(h)) for i, h in enumerate(head))
    trs = "".join("<tr>%s</tr>" % "".join('<td%s>%s</td>' % (' class="l"' if is_left(i) else "", f(c))
                                          for i, c in enumerate(r)) for r in rows)
    return '<div class="scroll %s"><table><thead><tr>%s</tr></thead><tbody>%s</tbody></table></div>' % (
        cls, th, trs)


def dl(items: Sequence[tuple]) -> str:
    """A definition list of (term, value) pairs (values escaped)."""
    return '<dl class="meta">%s</dl>' % "".join("<dt>%s</dt><dd>%s</dd>" % (esc(k), esc(v)) for k, v in items)


CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;font-size:15px;line-height:1.45;
 margin:0 auto;padding:1em 2em;color:#222;max-width:none}
h1{font-size:1.6em;margin:.2em 0 .4em}h2{font-size:1.25em;margin:1.6em 0 .5em;border-bottom:1px solid #ddd}
.scroll{overflow-x:auto;max-width:100%}
.scroll.runs{max-height:34em;overflow:auto;border:1px solid #ddd}
table{border-collapse:collapse;font-variant-numeric:tabular-nums}
th,td{border:1px solid #ccc;padding:3px 9px;text-align:right;white-space:nowrap}
th{background:#f3f3f3;position:sticky;top:0;white-space:normal;vertical-align:bottom}
.scroll:not(.runs) td.l{white-space:normal}
.scroll td.l:first-child,.scroll:not(.runs) td.l:first-child{white-space:nowrap}
.runs table{font-size:.86em}.runs th,.runs td{padding:2px 4px}
td.l,th.l{text-align:left}
tr.sum td{font-weight:600;background:#fafafa}
figure{margin:1.2em 0}figure img{max-width:100%;height:auto;display:block}
figcaption{color:#555;font-size:.93em;margin-top:.3em}
code,pre{background:#f4f4f4;font-size:.9em}pre{padding:.5em;white-space:pre-wrap;overflow-wrap:anywhere}
dl.meta{display:grid;grid-template-columns:max-content 1fr;gap:.15em 1em;margin:.5em 0}
dl.meta dt{font-weight:600}dl.meta dd{margin:0;overflow-wrap:anywhere}
.note{background:#fff8e1;border-left:4px solid #f0b400;padding:.4em .8em;margin:.6em 0}
"""


def page(title: str, body: List[str], subtitle: Optional[str] = None) -> str:
    return ('<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            "<title>%s</title><style>%s</style></head><body>\n<h1>%s</h1>\n%s%s\n</body></html>\n"
            % (esc(title), CSS, esc(title), "<p>%s</p>\n" % esc(subtitle) if subtitle else "", "\n".join(body)))


def note(text: str) -> str:
    return '<p class="note">%s</p>' % esc(text)


# -- numbers with their units, one format per kind ---------------------------

def us(ns) -> str:
    """Latency in microseconds, the one latency unit of every table and plot."""
    if ns is None or ns != ns:
        return "-"
    return "{:,.1f}".format(float(ns) / 1e3)


def count(v) -> str:
    if v is None or v != v:
        return "-"
    return "{:,.0f}".format(float(v))


def share(v) -> str:
    return "-" if v is None or v != v else "%.3f" % v


def deviation(v) -> str:
    return "-" if v is None or v != v else "%.4f" % v
