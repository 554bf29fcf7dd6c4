"""Tail latency with confidence intervals over seeds.

A sweep runs every point once per seed.  For each selector (and each other
point of the sweep: iodepth, --set values, kernel), every tail percentile
(p50, p99, p99.9, p99.99 of the completion latency, read from fio's
histogram in each run) gives one value per seed.  The interval is Student's t
over those per-seed values:

    mean +- t(0.975, n-1) * s / sqrt(n)

(n seeds, s their sample standard deviation).  Runs with different seeds
are independent, so this is a 95% interval for the expected percentile of a
run of that length.  It says nothing with one seed.

Two selectors at the same point are compared seed by seed (the same seed
gives both the same device and job random streams): the paired differences
get the same t-interval, and the difference is *significant* when that
interval excludes 0.  Where the seeds do not match, Welch's interval
(Welch-Satterthwaite degrees of freedom) is used instead.
"""
from __future__ import annotations

import math
from typing import Dict, List, Optional, Sequence, Tuple

from .text import columns

TAIL_PERCENTILES = (50.0, 99.0, 99.9, 99.99)
TAIL_COLUMNS = {50.0: "lat_p50_ns", 99.0: "lat_p99_ns", 99.9: "lat_p999_ns", 99.99: "lat_p9999_ns"}
CONFIDENCE = 0.95


# -- Student's t, from the regularised incomplete beta function ---------------
def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction for I_x(a, b) (modified Lentz)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c if abs(1.0 + aa / c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c if abs(1.0 + aa / c) > tiny else tiny
        de = d * c
        h *= de
        if abs(de - 1.0) < 1e-14:
            break
    return h


def _betainc(a: float, b: float, x: float) -> float:
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    lbeta = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
    front = math.exp(lbeta + a * math.log(x) + b * math.log(1.0 - x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    x = df / (df + t * t)
    tail = 0.5 * _betainc(df / 2.0, 0.5, x)
    return 1.0 - tail if t >= 0 else tail


def t_quantile(p: float, df: float) -> float:
    """The p quantile of Student's t with df (> 0, any real) degrees of freedom."""
    if not 0.0 < p < 1.0 or df <= 0:
        raise ValueError("t_quantile needs 0 < p < 1 and df > 0")
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < p:
        hi *= 2.0
    for _ in range(200):
        mid = (lo + hi) / 2.0
        if t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2.0


# -- intervals ---------------------------------------------------------------
class Interval:
    """mean and the 95% t-interval of per-seed values (lo = hi = None for one seed)."""

    __slots__ = ("n", "mean", "sd", "lo", "hi")

    def __init__(self, n, mean, sd, lo, hi):
        self.n, self.mean, self.sd, self.lo, self.hi = n, mean, sd, lo, hi

    @property
    def half_width(self) -> Optional[float]:
        return None if self.lo is None else (self.hi - self.lo) / 2.0

    def excludes_zero(self) -> bool:
        return self.lo is not None and (self.lo > 0 or self.hi < 0)

    def __repr__(self):
        return "Interval(n=%d, mean=%g, lo=%s, hi=%s)" % (self.n, self.mean, self.lo, self.hi)


def t_interval(values: Sequence[float], confidence: float = CONFIDENCE) -> Interval:
    xs = [float(v) for v in values]
    n = len(xs)
    if not n:
        raise ValueError("no values")
    mean = sum(xs) / n
    if n < 2:
        return Interval(n, mean, 0.0, None, None)
    sd = math.sqrt(sum((x - mean) ** 2 for x in xs) / (n - 1))
    half = t_quantile(0.5 + confidence / 2.0, n - 1) * sd / math.sqrt(n)
    return Interval(n, mean, sd, mean - half, mean + half)


def welch_interval(a: Sequence[float], b: Sequence[float], confidence: float = CONFIDENCE) -> Interval:
    """Interval of mean(b) - mean(a) for independent samples."""
    ia, ib = t_interval(a), t_interval(b)
    d = ib.mean - ia.mean
    if ia.n < 2 or ib.n < 2:
        return Interval(min(ia.n, ib.n), d, 0.0, None, None)
    va, vb = ia.sd ** 2 / ia.n, ib.sd ** 2 / ib.n
    se = math.sqrt(va + vb)
    if se == 0:
        return Interval(min(ia.n, ib.n), d, 0.0, d, d)
    df = (va + vb) ** 2 / (va ** 2 / (ia.n - 1) + vb ** 2 / (ib.n - 1))
    half = t_quantile(0.5 + confidence / 2.0, df) * se
    return Interval(min(ia.n, ib.n), d, se, d - half, d + half)


def difference(a: Dict[int, float], b: Dict[int, float]) -> Tuple[Interval, str]:
    """b - a, per seed: paired t when the seeds match, else Welch. Returns (interval, method)."""
    if set(a) == set(b) and len(a) >= 2:
        return t_interval([b[s] - a[s] for s in sorted(a)]), "paired"
    return welch_interval(list(a.values()), list(b.values())), "welch"


# -- sweep rows -> tail table ------------------------------------------------
_NOT_POINT = ("seed", "selector")


def _point_keys(rows: List[dict]) -> List[str]:
    """The columns that identify a sweep point besides selector and seed (iodepth, --set keys)."""
    keys = ["iodepth"]
    for r in rows:
        for k in r:
            if (k not in keys and k not in _NOT_POINT and k[0] != "_" and not k.startswith(("share_", "best_", "lat_"))
                    and k not in ("mean_deviation", "completed", "errored", "iops", "engine")):
                keys.append(k)
    return [k for k in keys if any(k in r for r in rows)]


def tail_summary(rows: List[dict]) -> List[dict]:
    """Group sweep rows by point and selector; per percentile the per-seed values and their interval."""
    keys = _point_keys(rows)
    groups: Dict[tuple, Dict[str, Dict[float, Dict[int, float]]]] = {}
    order: List[tuple] = []
    for r in rows:
        point = tuple((k, r.get(k)) for k in keys)
        if point not in groups:
            groups[point] = {}
            order.append(point)
        sel = groups[point].setdefault(r["selector"], {p: {} for p in TAIL_PERCENTILES})
        for p, col in TAIL_COLUMNS.items():
            if r.get(col) is not None:
                sel[p][int(r["seed"])] = float(r[col])
    out = []
    for point in order:
        sels = groups[point]
        for name, per in sels.items():
            out.append({"point": dict(point), "selector": name,
                        "seeds": len(next(iter(per.values()))),
                        "tails": {p: (t_interval(list(v.values())) if v else None) for p, v in per.items()},
                        "per_seed": per})
    return out


# A path's share this far apart between two seeds: the policy settled in more than one spread of the I/O.
# Historical-service-time has self-consistent regimes on some topologies (a shallow path fed in pairs or
# singly, a one-tag path that keeps the submitter asleep or not), and the run's start picks one;
# docs/validation.md shows them in the kernel and in the model.
REGIME_SPREAD = 0.1


def share_ranges(rows: List[dict]) -> List[dict]:
    """Group rows by point and selector; per path (its ``share_<path>`` column) the lowest and highest
    share over the seeds, and whether they lie REGIME_SPREAD or more apart."""
    keys = _point_keys(rows)
    groups: Dict[tuple, Dict[str, Dict[str, List[float]]]] = {}
    for r in rows:
        point = tuple((k, r.get(k)) for k in keys)
        per = groups.setdefault(point, {}).setdefault(r["selector"], {})
        for k, v in r.items():
            if k.startswith("share_") and v is not None:
                per.setdefault(k[len("share_"):], []).append(float(v))
    out = []
    for point, sels in groups.items():
        for name, per in sels.items():
            for path, vals in per.items():
                out.append({"point": dict(point), "selector": name, "path": path, "seeds": len(vals),
                            "low": min(vals), "high": max(vals),
                            "regimes": max(vals) - min(vals) >= REGIME_SPREAD})
    return out


def share_text(rows: List[dict], width: Optional[int] = 100) -> str:
    """Each selector's share per path over the seeds (lowest-highest), and a line per selector whose
    shares lie REGIME_SPREAD or more apart between seeds ("" for one seed per point)."""
    ranges = share_ranges(rows)
    if not ranges or max(r["seeds"] for r in ranges) < 2:
        return ""
    lines = ["Share of completed I/O per path, lowest-highest over the seeds:"]
    table = [[" ".join("%s=%s" % kv for kv in r["point"].items()), r["selector"], r["path"],
              "%.3f-%.3f" % (r["low"], r["high"]) + (" *" if r["regimes"] else "")] for r in ranges]
    lines += columns(["point", "selector", "path", "share"], table, keep=3, width=width)
    wide = {}
    for r in ranges:
        if r["regimes"]:
            wide.setdefault((tuple(r["point"].items()), r["selector"]), []).append(r)
    if wide:
        lines.append("* %.1f or more apart between seeds: the policy settles in different spreads of the I/O "
                     "depending on how the run begins, so one run is not the answer; the range is (%s)" % (
                         REGIME_SPREAD, "; ".join("%s%s: %s" % (" ".join("%s=%s " % kv for kv in point), sel,
                                                                ", ".join("%s %.3f-%.3f" % (r["path"], r["low"],
                                                                                            r["high"]) for r in rs))
                                                  for (point, sel), rs in wide.items())))
    import textwrap
    return "\n".join(w for line in lines for w in (
        [line] if not width or len(line) <= width
        else textwrap.wrap(line, width, subsequent_indent="      ", break_long_words=False,
                           break_on_hyphens=False)))


def comparisons(summary: List[dict]) -> List[dict]:
    """Every pair of selectors at the same point, per percentile: the difference and whether it is significant."""
    out = []
    by_point: Dict[tuple, List[dict]] = {}
    for s in summary:
        by_point.setdefault(tuple(sorted(s["point"].items(), key=str)), []).append(s)
    for point, ss in by_point.items():
        for i in range(len(ss)):
            for j in range(i + 1, len(ss)):
                a, b = ss[i], ss[j]
                for p in TAIL_PERCENTILES:
                    if not a["per_seed"][p] or not b["per_seed"][p]:
                        continue
                    iv, method = difference(a["per_seed"][p], b["per_seed"][p])
                    out.append({"point": dict(point), "a": a["selector"], "b": b["selector"], "percentile": p,
                                "diff": iv, "method": method, "significant": iv.excludes_zero(),
                                "identical": a["per_seed"][p] == b["per_seed"][p]})
    return out


def identical_pairs(comps: List[dict]) -> List[tuple]:
    """(point, a, b) of the pairs equal at every seed and percentile: the same runs (queue-length and
    service-time on equal-sized I/O, say), which are no comparison at all."""
    keys: Dict[tuple, bool] = {}
    for c in comps:
        k = (tuple(c["point"].items()), c["a"], c["b"])
        keys[k] = keys.get(k, True) and c["identical"]
    return [k for k, same in keys.items() if same]


def _us(v: Optional[float]) -> str:
    return "-" if v is None else "%.1f" % (v / 1e3)


def format_cell(iv: Optional[Interval]) -> str:
    if iv is None:
        return "-"
    if iv.lo is None:
        return "%s us" % _us(iv.mean)
    return "%s [%s, %s]" % (_us(iv.mean), _us(iv.lo), _us(iv.hi))


def _pname(p: float) -> str:
    return "p%g" % p


def tail_text(rows: List[dict], baselines: Sequence[str] = (), width: Optional[int] = 100) -> str:
    """The text table `mpathlab sweep` prints and the report shows.  With ``baselines``, only pairs
    that include one of them are listed among the differences that are not significant.  The terminal's
    text fits ``width`` columns (None: one table, for the HTML page)."""
    summary = tail_summary(rows)
    if not summary:
        return "no runs"
    n = max(s["seeds"] for s in summary)
    lines = ["Tail latency in us: mean over %d seed%s [95%% t-interval over the per-seed percentiles]"
             % (n, "" if n == 1 else "s")]
    if n < 2:
        lines.append("(one seed per point: no intervals; give --seeds 1,2,...,10)")
    head = ["point", "selector"] + [_pname(p) for p in TAIL_PERCENTILES]
    table = []
    for s in summary:
        table.append([" ".join("%s=%s" % kv for kv in s["point"].items()), s["selector"]]
                     + [format_cell(s["tails"][p]) for p in TAIL_PERCENTILES])
    # as many percentile columns as fit ``width`` per table; the rest in the next table
    lines += columns(head, table, keep=2, width=width)
    if n >= 2:
        comps = comparisons(summary)
        same = identical_pairs(comps)
        if same:
            lines.append("Selectors that ran identically at every seed (the same runs, so not compared):")
        for point, a, b in same:
            lines.append("  %s%s = %s" % (" ".join("%s=%s " % kv for kv in point), a, b))
        ns = [c for c in comps if not c["significant"] and (tuple(c["point"].items()), c["a"], c["b"]) not in same
              and (not baselines or c["a"] in baselines or c["b"] in baselines)]
        lines.append("Differences between selectors%s that are NOT significant (95%%, %s over seeds):%s"
                     % (" and %s" % ", ".join(baselines) if baselines else "",
                        "paired t" if all(c["method"] == "paired" for c in ns) else "paired t / Welch",
                        " none" if not ns else ""))
        for c in ns:
            lines.append("  %s %s: %s vs %s, difference %s us [%s, %s]" % (
                " ".join("%s=%s" % kv for kv in c["point"].items()), _pname(c["percentile"]), c["a"], c["b"],
                _us(c["diff"].mean), _us(c["diff"].lo), _us(c["diff"].hi)))
    import textwrap     # within 100 columns; the tables above are cut into column groups that fit
    return "\n".join(w for line in lines for w in (
        [line] if not width or len(line) <= width
        else textwrap.wrap(line, width, subsequent_indent="      ", break_long_words=False)))


def tail_row(selector: str, seed: int, result) -> dict:
    """The latency columns of one run, as a sweep row has them."""
    from ..sim.stats import merged_latency
    pct = merged_latency(result.jobs).percentiles(TAIL_PERCENTILES)
    row = {"selector": selector, "iodepth": max((j.spec.iodepth for j in result.jobs), default=0), "seed": seed}
    for p, col in TAIL_COLUMNS.items():
        row[col] = pct["%f" % p]
    for path, share in result.shares.items():      # the sweep's columns (sweep.py)
        row["share_" + path] = share
    return row


def tail_html(rows: List[dict]) -> str:
    """The tail table for an HTML report; cells whose difference from another selector is not significant
    are listed below it."""
    import html
    shares = share_text(rows, width=None)
    return ("<h2>Tail latency, 95%% confidence</h2><p>%s</p><pre>%s</pre>"
            % (html.escape("Student t-interval over the per-seed percentiles of each selector; differences "
                           "compared seed by seed (paired t), significant when their interval excludes 0."),
               html.escape(tail_text(rows, width=None)))
            + ("<h2>Path shares over seeds</h2><pre>%s</pre>" % html.escape(shares) if shares else ""))


def beats(rows: List[dict], baselines: Sequence[str], percentile: float = 99.0, **point) -> List[str]:
    """Selectors whose interval for ``percentile`` lies wholly below every baseline's interval (at the
    point matching ``point``, e.g. measure="all hosts"): the strict, non-overlapping reading."""
    summary = [s for s in tail_summary(rows) if all(s["point"].get(k) == v for k, v in point.items())]
    ivs = {s["selector"]: s["tails"][percentile] for s in summary}
    base = [ivs[b] for b in baselines if b in ivs]
    if not base or any(iv is None or iv.lo is None for iv in base):
        return []
    return [name for name, iv in ivs.items() if name not in baselines and iv is not None and iv.hi is not None
            and all(iv.hi < b.lo for b in base)]
