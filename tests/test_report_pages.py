"""The reports (run, failover run, sweep) and the terminal view: content, numbers, and rendering
in headless Chromium at 1400 px (plots loaded, nothing overflowing the window)."""
import math
import os
import re

import pytest

from conftest import require
from mpathlab.report import model
from mpathlab.report.html import run_report
from mpathlab.report.sweep_page import Point, identical_selectors, sweep_report, sweep_title, t95
from mpathlab.report.text import run_summary
from mpathlab.runner import run_simulation
from mpathlab.scenarios import HERE
from mpathlab.sweep import run_point
from mpathlab.workload.fio import parse_fio
from mpathlab.topology import load_topology

EX = os.path.join(os.path.dirname(__file__), "..", "examples")
TOPO = os.path.join(HERE, "hst-2020.toml")
JOB = "[j]\nrw=randwrite\nbs=4k\nioengine=libaio\niodepth=16\nnumber_ios=4000\n"
SELECTORS = ("round-robin", "queue-length", "service-time", "historical-service-time")


@pytest.fixture(scope="module")
def plain():
    topo = load_topology(TOPO)
    jobs = parse_fio(JOB)
    runs = [(s, run_simulation(topo, jobs, selector=s)) for s in SELECTORS]
    return topo, jobs, runs


@pytest.fixture(scope="module")
def failover():
    topo = load_topology(os.path.join(EX, "failover.toml"))
    jobs = parse_fio(open(os.path.join(EX, "randwrite.fio")).read())
    runs = [(s, run_simulation(topo, jobs, selector=s)) for s in ("round-robin", "historical-service-time")]
    return topo, jobs, runs


@pytest.fixture(scope="module")
def sweep_rows():
    import tomllib
    with open(TOPO, "rb") as f:
        doc = tomllib.load(f)
    job = "[j]\nioengine=libaio\nrw=randwrite\nbs=4k\nnumber_ios=1500\n"
    rows = []
    for mean in ("100us", "400us"):
        for sel in ("round-robin", "service-time", "queue-length"):
            for depth in (1, 8):
                for seed in (1, 2, 3):
                    rows.append(run_point(doc, "hst-2020.toml", HERE, job, {
                        "selector": sel, "iodepth": depth, "seed": seed, "set": {"paths.sdd.service.mean": mean}}))
    return rows


@pytest.fixture(scope="module")
def pages(tmp_path_factory, plain, failover, sweep_rows):
    d = tmp_path_factory.mktemp("pages")
    out = {}
    for name, (topo, jobs, runs) in (("run", plain), ("failover", failover)):
        out[name] = d / (name + ".html")
        out[name].write_text(run_report(runs, "t", topology=topo, jobs=jobs.jobs, seed=topo.seed))
    out["sweep"] = d / "sweep.html"
    out["sweep"].write_text(sweep_report(sweep_rows, source="t.csv"))
    return out


def _cells(page, first):
    """The cells of the table row whose first cell is ``first``."""
    m = re.search(r'<tr><td class="l">%s</td>(.*?)</tr>' % re.escape(first), page)
    assert m, first
    return [re.sub("<[^>]+>", "", c) for c in re.findall(r"<td[^>]*>(.*?)</td>", m.group(1))]


# -- run report -------------------------------------------------------------

def test_run_report_setup_devices_and_latency(pages, plain):
    from mpathlab import __version__
    topo, jobs, runs = plain
    page = pages["run"].read_text()
    for text in ("mpathlab</dt><dd>%s" % __version__, "seed</dt><dd>2020", "kernel profile", "compiled core",
                 "Krisman/Kumykov 2020 HST cover letter", "exponential(mean=400us)", "p99.9 (us)",
                 "No device faults and no dm messages", "HST clock"):
        assert text in page, text
    assert "max-width:1000px" not in page
    # the device table explains Best: sdd has 12 servers at 400 us = 30,000 IOPS, a quarter of a fast path
    assert _cells(page, "sdd")[:9] == ["8:48", "1", "exponential(mean=400us)", "12", "100.0", "0.0", "30,000",
                                       "0.077", "-"]
    # per-path latency rows: I/O counts are the per-path completions, p99 in us from the path's own stats
    res = dict(runs)["round-robin"]
    st = res.path_latency["sdd"]
    assert st.n == next(p["completed"] for p in res.paths if p["name"] == "sdd")
    row = re.search(r'<tr><td class="l"></td><td class="l">sdd</td>(.*?)</tr>',
                    page.split("round-robin</td><td class=\"l\">all paths")[1]).group(1)
    vals = [re.sub("<[^>]+>", "", c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row)]
    assert vals[0] == "{:,}".format(st.n)
    assert vals[4] == "{:,.1f}".format(st.percentiles((99.0,))["99.000000"] / 1e3)


def test_identical_runs_are_said_and_drawn_once(plain):
    topo, jobs, runs = plain
    res = dict(runs)
    same = model.same_behaviour(res["queue-length"], res["service-time"])
    # QL and ST pick the same path on equal-sized I/O: in-flight count and in-flight bytes order paths alike
    assert same
    assert not model.same_behaviour(res["round-robin"], res["service-time"])
    sets = model.identical_sets(runs)
    assert ["queue-length", "service-time"] == [s for s in sets if len(s) > 1][0][:2]
    page = run_report(runs, "t", topology=topo)
    assert "queue-length" in page and "identical on this workload" in page
    assert page.count('alt="in-flight"') == 1


def test_failover_best_is_per_group(pages, failover):
    topo, jobs, runs = failover
    res = dict(runs)["historical-service-time"]
    assert model.priority_groups(res) == [["sdb", "sdc"], ["sdd", "sde"]]
    best, note = model.best_shares(res)
    assert note == model.BEST_GROUPS_NOTE
    done = {p["name"]: p["completed"] for p in res.paths}
    total = sum(done.values())
    # equal devices within each group: half of what the group carried, each
    g1 = (done["sdb"] + done["sdc"]) / total
    assert best["sdb"] == pytest.approx(g1 / 2) and best["sdc"] == pytest.approx(g1 / 2)
    assert best["sdd"] == pytest.approx((1 - g1) / 2) and best["sde"] == pytest.approx((1 - g1) / 2)
    assert sum(best.values()) == pytest.approx(1.0)
    page = pages["failover"].read_text()
    assert "Best over all paths is meaningless" in page
    assert _cells(page, "Best")[:4] == ["%.3f" % best[p] for p in ("sdb", "sdc", "sdd", "sde")]


def test_failover_events_listed_with_results(pages, failover):
    topo, jobs, runs = failover
    evs = model.events(runs, topo)
    assert [(e.at_ns // 10 ** 6, e.kind) for e in evs] == [(100, "fault"), (200, "message"), (300, "fault"),
                                                          (305, "message")]
    assert evs[1].what == "dm message: switch_group 2" and set(evs[1].outcome.values()) == {"ok"}
    for label, res in runs:
        errors = next(p["errors"] for p in res.paths if p["name"] == "sdb")
        assert errors > 0 and evs[0].outcome[label] == "%d I/O errors on sdb over the run" % errors
    page = pages["failover"].read_text()
    events = page.split("<h2>Events</h2>")[1].split("<h2>")[0]
    assert events.count("<tr>") == 5
    assert "reinstate_path 8:16" in events and "device sdb (8:16) fails" in events


# -- sweep report -----------------------------------------------------------

def test_sweep_confidence_interval_over_seeds():
    p = Point()
    p.rows = [{"lat_p99_ns": v} for v in (1000, 1200, 1400)]
    m, lo, hi, mn, mx, n = p.stats("lat_p99_ns")
    sd = 200.0            # sample standard deviation of 1000, 1200, 1400
    assert (m, mn, mx, n) == (1200, 1000, 1400, 3)
    assert hi - m == pytest.approx(4.303 * sd / math.sqrt(3)) and m - lo == pytest.approx(hi - m)
    assert t95(2) == 4.303 and t95(100) == 1.96
    # the sweep's own CI columns win when present
    p.rows = [{"lat_p99_ns": v, "lat_p99_ns_ci_low": 900, "lat_p99_ns_ci_high": 1500} for v in (1000, 1400)]
    assert p.stats("lat_p99_ns")[1:3] == (900, 1500)


def test_sweep_report_plots_every_swept_parameter(pages, sweep_rows):
    page = pages["sweep"].read_text()
    assert re.findall(r'<img alt="([^"]+)"', page) == ["against iodepth", "against paths.sdd.service.mean"]
    assert sweep_title(sweep_rows, "t.csv") == "Sweep of 3 selectors x iodepth x paths.sdd.service.mean, 3 seeds (t.csv)"
    assert "<title>Sweep of 3 selectors" in page
    assert identical_selectors(sweep_rows, ["round-robin", "service-time", "queue-length"],
                               ["mean_deviation", "iops", "lat_p50_ns", "lat_p99_ns"]) == [
        ["service-time", "queue-length"]]
    assert "service-time and queue-length identical on this sweep" in page
    runs = page.split("<h2>Runs</h2>")[1]
    assert not re.search(r"\d[eE][+-]\d", runs)          # no scientific notation
    assert "p99 (us)" in runs and "lat_p99_ns" not in runs
    # the summary gives a CI over the 3 seeds for each point
    summary = page.split("<h2>Summary over seeds</h2>")[1].split("<h2>")[0]
    assert summary.count("<tr>") == 1 + 3 * 2 * 2
    r = _cells(summary, "round-robin")
    assert r[:3] == ["1", "100us", "3"]


def test_sweep_report_tolerates_extra_columns(sweep_rows):
    rows = [dict(r, lat_p99_9_ns=r["lat_p99_ns"] * 2, note="x", lat_p99_ns_ci_low=r["lat_p99_ns"] - 1000,
                 lat_p99_ns_ci_high=r["lat_p99_ns"] + 1000) for r in sweep_rows]
    page = sweep_report(rows, source="t.csv")
    assert "p99.9 latency (us)" in page and "p99 9 (us)" in page


# -- terminal view ------------------------------------------------------------

@pytest.mark.parametrize("topo_file", [os.path.join(EX, "failover.toml"), os.path.join(EX, "asymmetric.toml"),
                                       os.path.join(HERE, "hst-ktime-bio-10disk.toml")])
def test_terminal_view_fits_100_columns(topo_file):
    topo = load_topology(topo_file)
    res = run_simulation(topo, parse_fio("[j]\nrw=randwrite\nbs=4k\nioengine=libaio\niodepth=32\nnumber_ios=3000\n"))
    out = run_summary(res)
    assert max(len(line) for line in out.splitlines()) <= 100
    assert "p99.9 us" in out
    if "failover" in topo_file:
        assert "Best is per group" in out
        best, _ = model.best_shares(res)
        line = next(l for l in out.splitlines() if l.startswith("sdd "))
        assert line.split()[2:5] == ["2", "%.3f" % res.shares["sdd"], "%.3f" % best["sdd"]]


# -- in a real browser --------------------------------------------------------

@pytest.mark.parametrize("kind,plots", [("run", 3), ("failover", 3), ("sweep", 2)])
def test_report_renders_in_chromium_at_1400px(pages, kind, plots):
    require("chromium", "renders the HTML reports to check their plots and width")
    from mpathlab.report.browser import measure
    m = measure(str(pages[kind]), width=1400)
    assert m["innerWidth"] == 1400
    assert m["scrollWidth"] <= m["innerWidth"] and m["bodyScrollWidth"] <= m["innerWidth"], m
    assert m["overflowing"] == [], m["overflowing"]
    assert len(m["images"]) == plots
    for img in m["images"]:
        assert img["complete"] and img["naturalWidth"] > 600 and img["naturalHeight"] > 200, img
        assert img["right"] <= 1400


def test_sweep_over_kernels_is_categorical_and_aggregated_tables_need_no_seeds(sweep_rows):
    from mpathlab.report.sweep_page import _order_key
    assert sorted(["6.1", "5.15", "5.8", "100us", "1ms"], key=_order_key) == ["100us", "1ms", "5.8", "5.15", "6.1"]
    rows = [dict(r, **{"multipath.kernel": k}) for r in sweep_rows[:6] for k in ("5.15", "6.1")]
    page = sweep_report(rows, source="k.csv")
    assert "against multipath.kernel" in page
    # one row per point with the sweep's own CI columns (no seed column): no "one seed" warning
    agg = [{"selector": "round-robin", "iodepth": d, "lat_p99_ns": 1000.0 * d, "lat_p99_ns_ci_low": 900.0 * d,
            "lat_p99_ns_ci_high": 1100.0 * d} for d in (1, 8)]
    page = sweep_report(agg, source="a.csv")
    assert "One seed per point" not in page and "1.0 [0.9, 1.1]" in page and "8.0 [7.2, 8.8]" in page
