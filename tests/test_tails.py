"""Tail latency with confidence intervals over seeds (mpathlab.report.tails): hand-computed statistics."""
import math
import os

import pytest

from mpathlab.report.tails import (REGIME_SPREAD, comparisons, difference, share_ranges, share_text, t_interval,
                                   t_quantile, tail_html, tail_summary, tail_text, welch_interval)


@pytest.mark.parametrize("df,q", [(1, 12.7062), (2, 4.3027), (4, 2.7764), (9, 2.2622), (29, 2.0452),
                                  (120, 1.9799)])
def test_t_quantile_matches_the_printed_tables(df, q):
    assert t_quantile(0.975, df) == pytest.approx(q, abs=1e-4)
    assert t_quantile(0.025, df) == pytest.approx(-q, abs=1e-4)


def test_t_interval_by_hand():
    # 10, 12, 14: mean 12, s = 2, se = 2 / sqrt(3), t(0.975, 2) = 4.3027 -> 12 -+ 4.9683
    iv = t_interval([10, 12, 14])
    assert iv.mean == 12 and iv.sd == pytest.approx(2.0)
    assert iv.lo == pytest.approx(12 - 4.3027 * 2 / math.sqrt(3), abs=1e-3)
    assert iv.hi == pytest.approx(16.9683, abs=1e-3)
    one = t_interval([5.0])
    assert one.lo is None and one.mean == 5.0 and not one.excludes_zero()


def test_paired_difference_significance_by_hand():
    a = {1: 10.0, 2: 12.0, 3: 14.0}
    # differences 1, 1, 2: mean 4/3, s = 0.5774, se = 1/3, half = 4.3027/3 = 1.4342 -> [-0.101, 2.768]: not significant
    iv, method = difference(a, {1: 11.0, 2: 13.0, 3: 16.0})
    assert method == "paired" and iv.mean == pytest.approx(4 / 3)
    assert iv.lo == pytest.approx(-0.1009, abs=1e-3) and iv.hi == pytest.approx(2.7676, abs=1e-3)
    assert not iv.excludes_zero()
    # differences 2, 2, 3: mean 7/3, same spread -> [0.899, 3.768]: significant
    iv, _ = difference(a, {1: 12.0, 2: 14.0, 3: 17.0})
    assert iv.lo == pytest.approx(7 / 3 - 1.4342, abs=1e-3) and iv.excludes_zero()


def test_welch_when_seeds_differ():
    # a = 1,2,3 (var 1), b = 4,6,8 (var 4): d = 4, se = sqrt(1/3 + 4/3), df = (5/3)^2 / ((1/3)^2/2 + (4/3)^2/2) = 50/17
    iv = welch_interval([1, 2, 3], [4, 6, 8])
    half = t_quantile(0.975, 50 / 17) * math.sqrt(5 / 3)
    assert 3.18 < t_quantile(0.975, 50 / 17) < 4.31          # between df 3 and df 2
    assert iv.mean == 4 and iv.lo == pytest.approx(4 - half) and iv.hi == pytest.approx(4 + half)
    _, method = difference({1: 1, 2: 2, 3: 3}, {4: 4, 5: 6, 6: 8})
    assert method == "welch"


def _rows():
    rows = []
    for seed, (x, y) in enumerate([(100e3, 110e3), (120e3, 130e3), (140e3, 151e3)], 1):
        for sel, p99 in (("A", x), ("B", y)):
            rows.append({"selector": sel, "iodepth": 8, "seed": seed, "lat_p50_ns": 50e3, "lat_p99_ns": p99,
                         "lat_p999_ns": p99 * 2, "lat_p9999_ns": p99 * 3, "mean_deviation": 0.1})
    return rows


def test_tail_summary_and_text():
    summary = tail_summary(_rows())
    assert [(s["selector"], s["seeds"], s["point"]) for s in summary] == [("A", 3, {"iodepth": 8}),
                                                                          ("B", 3, {"iodepth": 8})]
    a99 = summary[0]["tails"][99.0]
    assert a99.mean == 120e3 and a99.hi == pytest.approx(120e3 + 4.3027 * 20e3 / math.sqrt(3), rel=1e-4)
    cmp = {(c["percentile"]): c for c in comparisons(summary)}
    # p50 identical in every seed: difference 0 with zero spread -> [0, 0], not significant
    assert not cmp[50.0]["significant"]
    # p99 differences 10, 10, 11 us: significant; p99.9 doubles them (20, 20, 22): significant too
    assert cmp[99.0]["significant"] and cmp[99.9]["significant"]
    text = tail_text(_rows())
    assert "mean over 3 seeds" in text and "120.0 [70.3, 169.7]" in text
    assert "iodepth=8 p50: A vs B, difference 0.0 us [0.0, 0.0]" in text
    assert "p99:" not in text.split("NOT significant")[1]


def test_report_with_seeds_has_a_tail_table(tmp_path):
    from mpathlab.cli import main
    from mpathlab.scenarios import HERE
    job = tmp_path / "j.fio"
    job.write_text("[j]\nrw=randwrite\nbs=4k\nioengine=libaio\niodepth=8\nnumber_ios=3000\n")
    out = tmp_path / "r.html"
    assert main(["report", os.path.join(HERE, "hst-2020.toml"), str(job), "--selectors",
                 "round-robin,service-time", "--seeds", "1,2,3", "-o", str(out), "--no-progress"]) == 0
    page = out.read_text()
    assert "Tail latency, 95% confidence" in page and "mean over 3 seeds" in page
    tails = page.split("<h2>Path shares over seeds</h2>")[0]       # the tail table; the shares follow it
    assert tails.count("iodepth=8  round-robin") == 1 and "p99.99" in tails


def test_selectors_that_ran_identically_are_not_listed_as_comparisons():
    # C's runs are A's, seed for seed (as queue-length and service-time on equal-sized I/O)
    rows = _rows() + [dict(r, selector="C") for r in _rows() if r["selector"] == "A"]
    text = tail_text(rows)
    assert "ran identically at every seed" in text and "  iodepth=8 A = C" in text
    not_sig = text.split("NOT significant")[1]
    assert "A vs C" not in not_sig and "C vs A" not in not_sig
    assert "A vs B, difference 0.0 us" in not_sig          # equal at p50 only: still a comparison
    assert "identically" not in tail_text(_rows())


def _share_rows(shares_b):
    """Selectors A (the same shares at every seed) and B (sdb's share per seed from SHARES_B) at depth 8."""
    rows = []
    for seed, b in enumerate(shares_b, 1):
        rows.append({"selector": "A", "iodepth": 8, "seed": seed, "share_sdb": 0.5, "share_sdc": 0.5})
        rows.append({"selector": "B", "iodepth": 8, "seed": seed, "share_sdb": b, "share_sdc": round(1 - b, 3)})
    return rows


def test_share_ranges_flag_a_policy_that_settles_differently_by_seed():
    ranges = share_ranges(_share_rows([0.06, 0.14, 0.07]))
    got = {(r["selector"], r["path"]): (r["seeds"], r["low"], r["high"], r["regimes"]) for r in ranges}
    assert got[("A", "sdb")] == (3, 0.5, 0.5, False)
    assert got[("B", "sdb")] == (3, 0.06, 0.14, False)            # 0.08 apart: under REGIME_SPREAD
    wide = {(r["selector"], r["path"]): r["regimes"] for r in share_ranges(_share_rows([0.05, 0.16]))}
    assert REGIME_SPREAD == 0.1 and wide == {("A", "sdb"): False, ("A", "sdc"): False,
                                             ("B", "sdb"): True, ("B", "sdc"): True}
    text = share_text(_share_rows([0.05, 0.16]), width=None)
    assert "iodepth=8  B         sdb   0.050-0.160 *" in text
    assert "the range is (iodepth=8 B: sdb 0.050-0.160, sdc 0.840-0.950)" in text
    assert "*" not in share_text(_share_rows([0.06, 0.14, 0.07]))
    assert share_text(_share_rows([0.05])) == ""                   # one seed: no range to show
    assert "Path shares over seeds" in tail_html(_rows() and _share_rows([0.05, 0.16]))
    assert "Path shares over seeds" not in tail_html(_rows())    # rows without shares (multi-host tails)


def test_report_and_sweep_show_the_shares_over_seeds(tmp_path, capsys):
    from mpathlab.cli import main
    from mpathlab.scenarios import HERE
    job = tmp_path / "j.fio"
    job.write_text("[j]\nrw=randwrite\nbs=4k\nioengine=libaio\niodepth=8\nnumber_ios=3000\n")
    out = tmp_path / "r.html"
    assert main(["report", os.path.join(HERE, "hst-2020.toml"), str(job), "--selectors", "round-robin",
                 "--seeds", "1,2", "-o", str(out), "--no-progress"]) == 0
    page = out.read_text()
    assert "Path shares over seeds" in page and "round-robin" in page.split("Path shares over seeds")[1]
    assert main(["sweep", os.path.join(HERE, "hst-2020.toml"), str(job), "--selectors", "round-robin",
                 "--iodepths", "8", "--seeds", "1,2", "--out", str(tmp_path / "s.csv"), "--no-progress"]) == 0
    assert "Share of completed I/O per path, lowest-highest over the seeds:" in capsys.readouterr().out
