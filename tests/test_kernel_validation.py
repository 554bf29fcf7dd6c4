"""The simulator against the kernel lab (Debian 6.1 dm-multipath over null_blk in qemu).

validation/kernel-lab/results.json comes from validation/kernel-lab/grid.py;
docs/validation.md explains the prediction, the guest model and every cell.
Each cell's equivalent paths are compared by rank (validate._groups).
"""
import json
import os

import pytest
from conftest import require
from mpathlab import validate

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, validate.DEFAULT_RESULTS)

# Cells the prediction misses (beyond 0.03 and beyond two standard errors of the kernel's
# mean), each explained in docs/validation.md "Known misses".  A cell leaves this list when it
# is predicted; a new miss fails the test.
KNOWN_MISSES = {
    # historical-service-time where the paths differ in depth or completion time, first set (3+
    # kernel repeats): bio-based, the model gives the fast or deep path less whatever the seed (H4,
    # D1-4-16 on 6.1; H2, H4, D4-16 on 6.12, see docs/validation.md); H3 bio is bimodal in the model
    # and the kernel (6.1: seed 1 in the other mode); request-based, the fast or deep path 0.03-0.04
    # short (H4, D1-4-16)
    ("6.1", "D1-4-16 historical-service-time bio d32"),
    ("6.1", "H3 historical-service-time bio d16"),
    ("6.1", "H4 historical-service-time bio d32"),
    ("6.12", "D4-16 historical-service-time bio d64"),
    ("6.12", "H2 historical-service-time bio d48"),
    ("6.12", "H4 historical-service-time bio d32"),
    # SCSI paths (scsi_debug LUNs with queue_depth 2 and 8), request-based HST on 6.1: the kernel's 5 repeats
    # give the 2-deep LUN 0.11-0.45 (mean 0.29), the model 0.51 (docs/scsi-paths.md); on 6.12 its 5 repeats
    # spread as widely (0.37-0.65) and the model is within two standard errors of their mean
    ("6.1", "S1 historical-service-time mq d16"),
    # request-based HST on T4q (4-tag paths, three at 4 ms and one at 16 ms): the kernel starves the 16 ms
    # path on 6.12 in all three repeats (0.011; a slow and a quiet session), the model gives it 0.056
    # the second held-out set (H7-H12: defined and committed with the model frozen, then run per
    # kernel, read after): historical-service-time on 6.12, and queue-length mq on H11 (1 ms and 4 ms,
    # unlimited tags: the 1 ms path 0.72 in the kernel, 0.68 predicted). Three or four repeats per kernel
    # from sessions of different host load (timers 0.1-3.3 ms late); where they spread, two standard errors
    ("6.12", "H10 historical-service-time mq d48"),
    ("6.12", "H11 queue-length mq d16"),
    ("6.12", "H12 historical-service-time bio d40"),
    ("6.12", "H12 historical-service-time mq d40"),
    # the third held-out set (H13-H22: committed with the model frozen at that commit, then run three times
    # per kernel in one boot each, read after both): queue-length and service-time 20 of 20 on each kernel;
    # historical-service-time 11 of 20, the misses steady over seeds, and all but 6.12 H16 and H17 bio the
    # kernel's best (fastest or deepest) path more loaded than predicted
    ("6.1", "H13 historical-service-time bio d24"),
    ("6.1", "H16 historical-service-time bio d24"),
    ("6.1", "H16 historical-service-time mq d24"),
    ("6.1", "H17 historical-service-time mq d48"),
    ("6.1", "H19 historical-service-time bio d16"),
    ("6.1", "H19 historical-service-time mq d16"),
    ("6.1", "H20 historical-service-time bio d32"),
    ("6.1", "H20 historical-service-time mq d32"),
    ("6.1", "H22 historical-service-time bio d16"),
    ("6.12", "H13 historical-service-time bio d24"),
    ("6.12", "H16 historical-service-time bio d24"),
    ("6.12", "H16 historical-service-time mq d24"),
    ("6.12", "H17 historical-service-time bio d48"),
    ("6.12", "H19 historical-service-time bio d16"),
    ("6.12", "H20 historical-service-time bio d32"),
    ("6.12", "H21 historical-service-time bio d24"),
    # the fourth held-out set (H23-H30: committed with the model frozen at that commit, then run three times per
    # kernel in one boot each, read after both): queue-length and service-time 16 of 16 on each kernel;
    # historical-service-time 6.1 11 and 6.12 14 of 16; in 6 of the 7 misses the model gives the faster or
    # deeper path less than the kernel (6.1 H25 bio, the fast path 0.980 against 0.949, the other way)
    ("6.1", "H23 historical-service-time mq d32"),
    ("6.1", "H25 historical-service-time bio d8"),
    ("6.1", "H27 historical-service-time bio d48"),
    ("6.1", "H30 historical-service-time bio d16"),
    ("6.1", "H30 historical-service-time mq d16"),
    ("6.12", "H27 historical-service-time bio d48"),
    ("6.12", "H30 historical-service-time mq d16"),
    # request-based historical-service-time in sessions where the emulator made a request-based I/O cost far
    # more than a bio-based one on c0 (the dm queue's dispatch time, fitted from that difference, is 18-570 us
    # per request in this lab against 2.5-2.8 us in the deterministic one): the dispatch time took six such
    # cells off this list (D1-4-16 on both kernels, H4 on both, H17 and T4q on 6.12) and put these five on it
    ("6.1", "D1-2-4-8 historical-service-time mq d64"),
    ("6.1", "H10 historical-service-time mq d48"),
    ("6.1", "H3 historical-service-time mq d16"),
    ("6.1", "H9 historical-service-time mq d16"),
    ("6.12", "H3 historical-service-time mq d16"),
    # by rank among equivalent paths (since 12-07; validate._groups): how unevenly identical paths share.
    # The kernel shares them more evenly than the model (6.1 H24 bio: the lesser of two identical paths 0.45
    # against 0.30; 6.1 H10 bio, H8 mq; 6.12 H8 bio, H22 bio), except on T4q's three 4 ms paths (the least
    # 0.29 in the kernel, 0.33 in the model).  6.12 H10 bio left the list (within two standard errors)
    ("6.1", "H10 historical-service-time bio d48"),
    ("6.1", "H24 historical-service-time bio d16"),
    ("6.1", "H8 historical-service-time mq d24"),
    ("6.1", "T4q historical-service-time bio d64"),
    ("6.12", "H22 historical-service-time bio d16"),
    ("6.12", "H8 historical-service-time bio d24"),
}


@pytest.fixture(scope="module")
def table_rows():
    """The table's rows, predicted once for the tests of this module: the lab's variants (path
    schedulers, fio options, "T4q/...") are reported by `mpathlab validate` but not asserted
    (docs/validation.md)."""
    path = require(RESULTS, "the kernel lab's results (validation/kernel-lab/results.json)")
    with open(path) as f:
        cells = json.load(f)
    return [r for r in validate.compare(cells) if not r["variant"]]


def test_every_kernel_cell_predicted_within_tolerance(table_rows):
    rows = table_rows
    assert not any(r["cell"].split()[0] in validate.CALIB_TOPOLOGIES for r in rows)
    exact = [r for r in rows if r["within"] == "yes"]
    kinds = {(r["cell"].split()[2], r["cell"].split()[3]) for r in exact}
    assert {("bio", "d1"), ("bio", "d64"), ("mq", "d1"), ("mq", "d64")} <= kinds
    assert {r["cell"].split()[1] for r in exact} == {"round-robin", "queue-length", "service-time",
                                                     "historical-service-time"}
    missed = {(r["kernel_series"], r["cell"]) for r in rows if r["within"] == "no"}
    new = ["%s %s: kernel %.3f predicted %.3f" % (r["kernel_series"], r["cell"], r["kernel"][r["worst_path"]],
                                                  r["sim"][r["worst_path"]])
           for r in rows if (r["kernel_series"], r["cell"]) in missed - KNOWN_MISSES]
    assert not new, new
    # a known miss that is now predicted must leave the list
    fixed = sorted(KNOWN_MISSES & {(r["kernel_series"], r["cell"]) for r in rows} - missed)
    assert not fixed, fixed
    # every cell has 2+ kernel repeats
    second = ("H7", "H8", "H9", "H10", "H11", "H12")
    assert all(r["n"] >= 2 or r["topology"] in second for r in rows), [(r["cell"], r["n"]) for r in rows if r["n"] < 2]
    # the third held-out set: ten topologies, 40 cells per kernel, three repeats each
    third = [r for r in rows if r["topology"] in ["H%d" % i for i in range(13, 23)]]
    assert len(third) == 80 and all(r["n"] >= 3 for r in third)
    assert {r["kernel_series"] for r in third} == {"6.1", "6.12"}
    # the fourth: eight topologies, 32 cells per kernel, three repeats each
    fourth = [r for r in rows if r["topology"] in ["H%d" % i for i in range(23, 31)]]
    assert len(fourth) == 64 and all(r["n"] >= 3 for r in fourth)


def test_readme_states_the_emulated_labs_totals(table_rows):
    """The README's row of the emulated lab is this table's count."""
    import re
    readme = open(os.path.join(ROOT, "README.md")).read()
    line = re.search(r"^\| emulated [^|]*\| (\d+) \| (\d+) \| (\d+) \|$", readme, re.M)
    assert line
    n, k61, k612 = map(int, line.groups())
    for kernel, stated in (("6.1", k61), ("6.12", k612)):
        mine = [r for r in table_rows if r["kernel_series"] == kernel]
        assert (len(mine), sum(r["within"] != "no" for r in mine)) == (n, stated), kernel


def test_guest_fitted_on_calibration_cells_only():
    path = require(RESULTS, "the kernel lab's results (validation/kernel-lab/results.json)")
    with open(path) as f:
        cells = json.load(f)
    g = validate.fit_guest(cells, "6.1", "20261203")
    assert g.session == "20261203"
    assert g.fitted_on and {r.split()[0] for r in g.fitted_on} <= {"c0", "c1", "c4"}
    # the fit is the median of the calibration runs' own numbers: in that session c0 at depth 64
    # ran 6.8k-16.4k IOPS (61-147 us per I/O), the 1 and 4 ms paths' device latency was 0.09-3.1 ms late
    assert 61_000 <= g.submit_ns + g.complete_ns <= 147_000
    assert 90_000 <= g.late_ns <= 3_137_000
    # the table does not change when the calibration cells' shares do (only their timings count)
    other = [dict(c, mean_share={k: 0.0 for k in c["mean_share"]}) if validate.is_calib(c) else c for c in cells]
    assert validate.fit_guest(other, "6.1", "20261203").describe() == g.describe()


def test_guest_fitted_per_queue_mode():
    path = require(RESULTS, "the kernel lab's results (validation/kernel-lab/results.json)")
    with open(path) as f:
        cells = json.load(f)
    session = "20261205T072047"     # one c0 depth-64 run per mode; the mq one ran while the host was loaded
    cost = {}
    for mode in ("bio", "mq"):
        g = validate.fit_guest(cells, "6.1", session, mode)
        assert g.queue_mode == mode and g.fitted_on and all(r.split()[1] == mode for r in g.fitted_on)
        c0 = [r for c in cells if str(c.get("kernel")) == "6.1" and c["topology"] == "c0" and c["queue_mode"] == mode
              and c["iodepth"] == 64 for r in c["repeats"] if validate.boot_of(r).startswith(session)]
        assert len(c0) == 1
        cost[mode] = g.submit_ns + g.complete_ns
        assert abs(cost[mode] - 1e9 / c0[0]["fio_iops"]) <= 1      # the median of one run is that run
    # pooled, both runs' mean (the median of two) was what each mode got before
    both = validate.fit_guest(cells, "6.1", session)
    assert both.queue_mode == "" and min(cost.values()) < both.submit_ns + both.complete_ns < max(cost.values())
    # a session that ran no c0 at depth 64 of its own takes both modes' runs (and every session's, as before)
    assert validate.fit_guest(cells, "6.1", "20261203T074955", "bio").queue_mode == ""


def test_measured_column_is_diagnostic(capsys):
    path = require(RESULTS, "the kernel lab's results (validation/kernel-lab/results.json)")
    assert validate.main([path, "--filter", "T4q round-robin mq d64", "--runtime", "2", "--measured",
                          "--markdown"]) == 0
    out = capsys.readouterr().out
    assert "from measured (diagnostic)" in out.splitlines()[0]
    assert "guest model kernel 6.1" in out


def test_validate_cli_prints_table(capsys):
    path = require(RESULTS, "the kernel lab's results (validation/kernel-lab/results.json)")
    assert validate.main([path, "--filter", "T4q round-robin mq d64", "--runtime", "2", "--markdown"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("| kernel | cell |") and "| 6.1 | T4q round-robin mq d64 |" in out


def test_iops_summary_counts_cells_by_ratio():
    """The IOPS line under the table: predicted over the kernel's mean, per kernel series; cells without
    the kernel's IOPS are left out."""
    def row(kernel, kiops, siops):
        return {"kernel_series": kernel, "kernel_iops": kiops, "sim_iops": siops}
    rows = [row("6.1", 1000, 1050), row("6.1", 1000, 850), row("6.1", 1000, 1300), row("6.1", None, 500),
            row("6.12", 2000, 2000), row("6.12", 2000, 1500)]
    assert validate.iops_ratios(rows) == {"6.1": [1.05, 0.85, 1.3], "6.12": [1.0, 0.75]}
    line = " ".join(validate._iops_summary(rows))
    # 6.1: 1.05 within 10%; 0.85 within 20%; 1.3 neither; 6.12: 1.0 within 10%, 0.75 neither
    assert "within 10% of the kernel's in 6.1 1 of 3, 6.12 1 of 2 cells" in line
    assert "within 20% in 2, 1" in line
    assert "at the median 1.05, 0.88" in line


def test_iops_predicted_within_a_fifth_in_five_cells_of_six(table_rows):
    """The prediction's IOPS (the same runs as its shares), as docs/validation.md states them: within
    20% of fio's in the kernel in more than 5 of 6 cells of the table on each kernel (209 and 216 of 229)."""
    assert set(validate.iops_ratios(table_rows)) == {"6.1", "6.12"}
    for kernel, ratios in validate.iops_ratios(table_rows).items():
        assert sum(abs(x - 1) <= 0.2 for x in ratios) > 5 / 6 * len(ratios), kernel


def test_validate_cli_bad_file(tmp_path, capsys):
    p = tmp_path / "r.json"
    p.write_text("{not json")
    assert validate.main([str(p)]) == 3
    err = capsys.readouterr().err
    assert "r.json" in err and err.count("\n") == 1


def _d14(selector, guest):
    c = {"topology": "D1-4", "selector": selector, "queue_mode": "bio", "iodepth": 16, "repeats": [],
         "paths": [{"label": "p0", "completion_ns": 5_000_000, "hw_queue_depth": 1},
                   {"label": "p1", "completion_ns": 5_000_000, "hw_queue_depth": 4}]}
    return validate.simulate_cell(c, 4.0, guest=guest).shares


def test_bio_depth_class_learnt_from_completions_ended_at_the_interrupt():
    """Two 5 ms paths with 1 and 4 tags, bio-based, one fio job at depth 16 (the kernel: 0.197 /
    0.803 on 6.1, 0.196 / 0.804 on 6.12).  The one submitter sleeps for the 1-tag path's tag; the
    device's completion ends the I/O in dm at once (the hrtimer callback's blk_mq_end_request ->
    bio_endio -> dm's clone_endio -> the selector's end_io), frees the tag and wakes the task, and
    the 4-tag path's I/O completing at the same instant has been ended too before the woken task
    maps again.  So the 4-tag path is seen completing I/O close together, its average drops, and
    HST keeps it full: 4 tags against 1 give 0.8, with constant completion times and with the
    guest's late timers alike.  (With the completion ended only after its CPU time, as the model
    did before, the task and the two paths locked into one I/O per path per cycle, 0.5.)
    Queue-length has no history to learn: 0.5 (the kernel: 0.500)."""
    steady = validate.Guest("6.1", 57_000, 30_000, 0, [])
    late = validate.Guest("6.1", 57_000, 30_000, 440_000, [])
    assert abs(_d14("historical-service-time", steady)["p0"] - 0.2) < 0.02
    assert abs(_d14("historical-service-time", late)["p0"] - 0.2) < 0.02
    assert abs(_d14("queue-length", late)["p0"] - 0.5) < 0.01


def test_guest_timers_fire_late_together():
    """The guest's lateness as the host makes it: the timers' vCPU is away for a stretch of every
    period (validate.TIMER_PERIOD_NS), so timers due in that stretch all fire when it ends; the
    stretch is set so that a timer due at a random instant is late by the fitted mean."""
    g = validate.Guest("6.1", 57_000, 30_000, 338_000, [])
    h = g.host()
    period, away = h.timer_period_ns, h.timer_away_ns
    assert period == validate.TIMER_PERIOD_NS and away == round((2 * period * 338_000) ** 0.5)
    dues = range(0, 600 * period, 997)          # a grid that walks through every phase of the period
    fired = [h.timer_fires(t, seed=1) for t in dues]
    assert all(f >= t and f - t <= away for t, f in zip(dues, fired))
    assert abs(sum(f - t for t, f in zip(dues, fired)) / len(fired) - 338_000) < 15_000
    # late timers come together: every late one fires at the end of its period's stretch
    late = {f for t, f in zip(dues, fired) if f > t}
    assert len(late) <= 600
    # each seed places the stretches differently; no lateness, no change
    assert [h.timer_fires(t, seed=2) for t in dues] != fired
    assert validate.Guest("6.1", 57_000, 30_000, 0, []).host().timer_fires(12_345) == 12_345


def test_guest_per_session():
    path = require(RESULTS, "the kernel lab's results (validation/kernel-lab/results.json)")
    with open(path) as f:
        cells = json.load(f)
    boots = validate.calibration_boots(cells, "6.1")
    # 2026-12-03 had two calibration boots (07:12 and 07:51) and 2026-12-04 at least one
    assert len(boots) >= 3 and {b[:8] for b in boots} >= {"20261203", "20261204"}
    a, b = boots[0], boots[-1]
    ga, gb = validate.fit_guest(cells, "6.1", a), validate.fit_guest(cells, "6.1", b)
    # each session's guest comes from its own calibration runs only
    assert ga.describe() != gb.describe() and ga.fitted_on and gb.fitted_on
    # a run belongs to the calibration boot nearest in time, whichever side of it
    assert validate.session_of({"host_load": {"utc_start": a}}, boots) == a
    assert validate.session_of({"host_load": {"utc_start": "20261203T072242"}}, boots) == a
    assert validate.session_of({"host_load": {"utc_start": "20261203T084010"}}, boots) == boots[1]
    assert validate.session_of({"host_load": {"utc_start": "20270101T000000"}}, boots) == b
    assert validate.session_of({}, boots) == ""


def _calib_cell(topo, mode, depth, reps, completion_ns=0):
    return {"kernel": "6.12", "topology": topo, "queue_mode": mode, "iodepth": depth, "selector": "round-robin",
            "paths": [{"label": "p0", "completion_ns": completion_ns, "hw_queue_depth": 256}], "repeats": reps}


def test_a_boot_calibrated_at_both_ends_has_two_sessions():
    """`grid.py run calib BATCH calib`: the guest is calibrated at a boot's start and again at its end; a
    run takes the calibration of its own boot nearer in time (grid.py records the guest's uptime at each
    run's start), and each session's guest comes from its own block of calibration runs."""
    boot = "20261206T050000"
    at = lambda s, **kw: dict({"host_load": {"utc_start": boot}, "guest_uptime_s": s}, **kw)   # noqa: E731
    # the host slowed down during the boot: c0 at depth 64 ran 10k IOPS at the start, 4k at the end,
    # and the 4 ms path was 0.25 ms late at the start, 0.75 ms at the end
    cells = [_calib_cell("c0", m, 64, [at(10 + i, fio_iops=10_000, slat_mean_us=50) for i in (0, 20)]
                         + [at(1600 + i, fio_iops=4_000, slat_mean_us=125) for i in (0, 20)]) for m in ("bio", "mq")]
    cells += [_calib_cell("c4", m, 1, [at(60, path_mean_write_ms={"p0": 4.25}), at(1650, path_mean_write_ms={"p0": 4.75})],
                          completion_ns=4_000_000) for m in ("bio", "mq")]
    sessions = validate.calibration_boots(cells, "6.12")
    # the second block's middle is 27.5 minutes after the boot's start
    assert sessions == [boot, boot + "+27m"]
    early, late = (validate.fit_guest(cells, "6.12", s, "bio") for s in sessions)
    assert (early.submit_ns + early.complete_ns, early.late_ns) == (100_000, 250_000)
    assert (late.submit_ns + late.complete_ns, late.late_ns) == (250_000, 750_000)
    assert early.submit_ns == 50_000 and late.submit_ns == 125_000     # slat x IOPS: half of each
    # a run belongs to the nearer calibration of its own boot
    assert validate.session_of(at(400), sessions) == boot
    assert validate.session_of(at(1200), sessions) == boot + "+27m"
    # a boot without calibration of its own takes the session nearest in time
    assert validate.session_of({"host_load": {"utc_start": "20261206T053000"}, "guest_uptime_s": 0}, sessions) \
        == boot + "+27m"
    # runs recorded before grid.py kept the uptime count as run at their boot's start
    assert validate.session_of({"host_load": {"utc_start": boot}}, sessions) == boot


def test_guest_takes_the_vcpus_its_calibration_boot_recorded():
    """grid.py records each boot's guest vCPUs (host_load.guest_cpus): the deterministic lab's guest has one,
    and the prediction's host then has one CPU; boots that recorded none ran the emulated lab's two. One
    session's calibration runs on guests of different sizes are refused: they are not one guest."""
    boot = "20261206T220000"
    load = lambda n: {"utc_start": boot, "guest_cpus": n} if n else {"utc_start": boot}   # noqa: E731

    def cells(cpus_c0, cpus_c4):
        return [_calib_cell("c0", "bio", 64, [{"host_load": load(cpus_c0), "fio_iops": 50_000, "slat_mean_us": 10}]),
                _calib_cell("c4", "bio", 1, [{"host_load": load(cpus_c4), "path_mean_write_ms": {"p0": 4.003}}],
                            completion_ns=4_000_000)]
    one = validate.fit_guest(cells(1, 1), "6.12", boot, "bio")
    assert one.cpus == 1 and one.host().cpus == 1 and ", 1 vCPU:" in one.describe()
    assert (one.submit_ns, one.complete_ns, one.late_ns) == (10_000, 10_000, 3_000)
    two = validate.fit_guest(cells(None, None), "6.12", boot, "bio")
    assert two.cpus == 2 and two.host().cpus == 2 and "vCPU" not in two.describe()
    with pytest.raises(ValueError, match="guests of 1 and 2 vCPUs"):
        validate.fit_guest(cells(1, 2), "6.12", boot, "bio")


def test_prediction_weights_sessions_by_repeats():
    """A cell whose repeats ran in two sessions is predicted once per session, with that session's
    guest of the cell's mode, and the prediction is the mean weighted by the repeats."""
    path = require(RESULTS, "the kernel lab's results (validation/kernel-lab/results.json)")
    with open(path) as f:
        cells = json.load(f)
    cell = next(c for c in cells if c["topology"] == "D1-4" and c["selector"] == "queue-length"
                and c["queue_mode"] == "mq" and c.get("kernel") == "6.1")
    boots = [b for b in validate.calibration_boots(cells, "6.1") if "+" not in b]    # a boot's first session
    early, late = boots[0], boots[-1]
    rep = dict(cell["repeats"][0], guest_uptime_s=0)
    two = dict(cell, repeats=[dict(rep, host_load={"utc_start": early}), dict(rep, host_load={"utc_start": late}),
                              dict(rep, host_load={"utc_start": late})])
    row = validate.compare([two], 2.0, all_cells=cells)[0]
    assert row["sessions"] == {early: 1, late: 2} and len(row["guests"]) == 2
    each = [validate._group_shares(validate._groups(cell), validate.simulate_cell(
        cell, 2.0, guest=validate.fit_guest(cells, "6.1", s, "mq")).shares) for s in (early, late)]
    for g in row["sim"]:
        assert abs(row["sim"][g] - (each[0][g] + 2 * each[1][g]) / 3) < 1e-9


def test_iops_per_session_diagnostic(capsys):
    """`validate --sessions`: per lab session, its runs, the kernel's mean IOPS in them and the prediction
    with that session's guest alone; the cell's predicted IOPS is their mean weighted by the runs."""
    path = require(RESULTS, "the kernel lab's results (validation/kernel-lab/results.json)")
    with open(path) as f:
        cells = json.load(f)
    chosen = [c for c in cells if validate.cell_key(c) == "S1 service-time mq d16" and c.get("kernel") == "6.12"]
    row = validate.compare(chosen, 2.0, all_cells=cells)[0]
    boots = validate.calibration_boots(cells, "6.12")
    reps = chosen[0]["repeats"]
    assert sum(n for _, n, _, _ in row["session_iops"]) == len(reps) >= 2
    for session, n, kiops, piops in row["session_iops"]:
        mine = [r["fio_iops"] for r in reps if validate.session_of(r, boots) == session]
        assert n == len(mine) and abs(kiops - sum(mine) / len(mine)) < 1e-9
        run = validate.simulate_cell(chosen[0], 2.0, guest=validate.fit_guest(cells, "6.12", session, "mq"))
        assert abs(piops - run.completed / (run.runtime_ns / 1e9)) < 1e-6
    assert abs(row["sim_iops"] - sum(n * p for _, n, _, p in row["session_iops"]) / len(reps)) < 1e-6
    # the worst path group's share the same way: the kernel's mean in the session's runs, the session's guest's
    worst = row["worst_path"]
    groups = validate._groups(chosen[0])
    for session, n, kshare, pshare in row["session_shares"]:
        mine = [validate._group_shares(groups, r["shares"])[worst] for r in reps
                if validate.session_of(r, boots) == session]
        assert n == len(mine) and abs(kshare - sum(mine) / len(mine)) < 1e-9
        run = validate.simulate_cell(chosen[0], 2.0, guest=validate.fit_guest(cells, "6.12", session, "mq"))
        assert abs(pshare - validate._group_shares(groups, run.shares)[worst]) < 1e-12
    assert abs(row["sim"][worst] - sum(n * p for _, n, _, p in row["session_shares"]) / len(reps)) < 1e-9
    assert abs(row["kernel"][worst] - sum(n * k for _, n, k, _ in row["session_shares"]) / len(reps)) < 1e-6
    assert validate.main([path, "--filter", "S1 service-time mq", "--kernel", "6.12", "--runtime", "2",
                          "--sessions"]) == 0
    out = capsys.readouterr().out
    assert "IOPS kern/pred per session: %s (%d)" % row["session_iops"][0][:2] in out
    flat = " ".join(out.split())       # the diagnostic is wrapped to the terminal's width
    assert "%s share kern/pred per session: %s (%d) %.3f/%.3f" % ((worst,) + row["session_shares"][0]) in flat


def test_seed_range_is_a_diagnostic_around_the_prediction(capsys):
    path = require(RESULTS, "the kernel lab's results (validation/kernel-lab/results.json)")
    with open(path) as f:
        cells = json.load(f)
    chosen = [c for c in cells if validate.cell_key(c) == "D2-8 historical-service-time bio d32"]
    plain = validate.compare(chosen, 2.0, all_cells=cells)
    rows = validate.compare(chosen, 2.0, all_cells=cells, seeds=3)
    for p, r in zip(plain, rows):
        # the asserted prediction is seed 1's, with or without the diagnostic
        assert r["sim"] == p["sim"] and r["within"] == p["within"]
        lo, hi = r["seed_range"]
        assert lo <= r["sim"][r["worst_path"]] <= hi
    assert validate.main([path, "--filter", "D2-8 historical-service-time bio d32", "--runtime", "2",
                          "--seeds", "2", "--markdown"]) == 0
    assert "range over seeds (diagnostic)" in capsys.readouterr().out.splitlines()[0]


def _cell(depth, tags, repeats, extra=""):
    paths = [{"label": "p%d" % i, "completion_ns": 2_000_000, "hw_queue_depth": t} for i, t in enumerate(tags)]
    return {"topology": "X", "selector": "historical-service-time", "queue_mode": "bio", "iodepth": depth,
            "fio_extra": extra, "paths": paths, "repeats": [{"shares": r} for r in repeats],
            "mean_share": {lb: sum(r[lb] for r in repeats) / len(repeats) for lb in repeats[0]}}


def test_paths_whose_tags_cannot_fill_are_equivalent():
    # 24, 32 and 64 tags at depth 16: no I/O ever waits for a tag, so all three are one kind of path
    assert validate._groups(_cell(16, [24, 32, 64], [{}]))["p0..p2 #1"] == (["p0", "p1", "p2"], 0)
    # at depth 28 the 24-tag path can fill; 32 and 64 still cannot
    g = validate._groups(_cell(28, [24, 32, 64], [{}]))
    assert sorted(g) == ["p0", "p1..p2 #1", "p1..p2 #2"]
    # two jobs of depth 16 have 32 I/Os in flight: 24 tags can fill again
    assert "p0" in validate._groups(_cell(16, [24, 32, 64], [{}], "--numjobs=2"))
    # the same tags below the depth stay equivalent; different ones that can fill do not
    assert sorted(validate._groups(_cell(16, [4, 4, 8], [{}]))) == ["p0..p1 #1", "p0..p1 #2", "p2"]


def test_equivalent_paths_compared_by_rank_per_run():
    # two runs that favour a different path: by label the mean is 0.35/0.30/0.35, by rank 0.5/0.3/0.2
    runs = [{"p0": 0.5, "p1": 0.3, "p2": 0.2}, {"p0": 0.2, "p1": 0.3, "p2": 0.5}]
    c = _cell(16, [24, 32, 64], runs)
    g = validate._groups(c)
    kern = validate._kernel_group_shares(c, g)
    assert kern == pytest.approx({"p0..p2 #1": 0.5, "p0..p2 #2": 0.3, "p0..p2 #3": 0.2})
    # the ranks' mean is the group's mean share: ranking asks more than the old group mean, never less
    assert sum(kern.values()) / 3 == pytest.approx(sum(c["mean_share"].values()) / 3)
    # a model run that splits evenly misses the kernel's unevenness (0.5 against 0.333)
    even = validate._group_shares(g, {"p0": 1 / 3, "p1": 1 / 3, "p2": 1 / 3})
    assert max(abs(even[k] - kern[k]) for k in g) == pytest.approx(0.5 - 1 / 3)
    # the repeats' spread is taken by rank too: both runs have the same largest share
    assert validate._repeat_sd(validate._kernel_runs(c, g), "p0..p2 #1") == 0.0


def test_validate_explains_ranked_paths(capsys):
    path = require(validate.DEFAULT_RESULTS.replace("results.json", "results-icount.json"),
                   "the deterministic lab's results")
    # H93: three 2 ms paths of 24, 32 and 64 tags at depth 16, none of which can fill: one equivalent group
    for fmt in ([], ["--markdown"]):
        assert validate.main([path, "--filter", "H93 historical-service-time bio", "--kernel", "6.1",
                              "--runtime", "1"] + fmt) == 0
        out = capsys.readouterr().out
        assert "p0..p2 #" in out and "p0..p2 #1: the largest share among equivalent paths" in out.replace("\n", " ")
    # a cell without equivalent paths prints no such line
    assert validate.main([path, "--filter", "H90 service-time bio", "--kernel", "6.1", "--runtime", "1"]) == 0
    assert "equivalent paths" not in capsys.readouterr().out


def test_jitter_candidate_places_the_lateness_per_completion():
    g = validate.Guest("6.1", 8000, 6000, 3000, [], timers="jitter")
    svc = g.service(4_000_000)
    # 21 evenly spaced values from 0 to twice the lateness, added to the completion time: mean the lateness
    assert svc.samples[0] == 4_000_000 and svc.samples[-1] == 4_006_000 and len(svc.samples) == 21
    assert svc.mean_ns == pytest.approx(4_003_000)
    # and no held stretches
    assert g.host().timer_away_ns == 0
    held = validate.Guest("6.1", 8000, 6000, 3000, [])
    assert held.host().timer_away_ns > 0 and held.service(4_000_000).mean_ns == 4_000_000
    with pytest.raises(ValueError):
        validate.Guest("6.1", 8000, 6000, 3000, [], timers="late")


def test_validate_takes_the_timer_mode(capsys):
    path = require(validate.DEFAULT_RESULTS.replace("results.json", "results-icount.json"),
                   "the deterministic lab's results")
    argv = [path, "--filter", "H108 queue-length bio", "--kernel", "6.1", "--runtime", "1"]
    assert validate.main(argv + ["--timers", "jitter"]) == 0
    assert "(jitter per completion)" in " ".join(capsys.readouterr().out.split())
    with pytest.raises(SystemExit) as e:
        validate.main(argv + ["--timers", "late"])
    assert e.value.code == 2 and "invalid choice" in capsys.readouterr().err


def test_guest_takes_its_labs_timer_mode(monkeypatch):
    """The calibration runs' accelerator (host_load.accel) names the lab; the guest takes that lab's timer mode."""
    boot = "20261206T220000"

    def cells(accel):
        load = {"utc_start": boot, "guest_cpus": 1, **({"accel": accel} if accel else {})}
        return [_calib_cell("c0", "bio", 64, [{"host_load": load, "fio_iops": 50_000, "slat_mean_us": 10}]),
                _calib_cell("c4", "bio", 1, [{"host_load": load, "path_mean_write_ms": {"p0": 4.003}}],
                            completion_ns=4_000_000)]
    monkeypatch.setitem(validate.TIMERS_OF_LAB, "icount", "jitter")
    assert validate.fit_guest(cells("icount"), "6.12", boot, "bio").timers == "jitter"
    # the emulated lab's runs record no accelerator; "tcg" names it too
    assert validate.fit_guest(cells(None), "6.12", boot, "bio").timers == "stretches"
    assert validate.fit_guest(cells("tcg"), "6.12", boot, "bio").timers == "stretches"



def test_prediction_of_several_runs_is_their_mean(capsys):
    """validate --runs N: each cell's prediction is the mean of its model runs with seeds 1..N (each run's
    shares ranked among equivalent paths before the mean), IOPS too."""
    path = require(RESULTS, "the kernel lab's results (validation/kernel-lab/results.json)")
    with open(path) as f:
        cells = json.load(f)
    c = next(c for c in cells if validate.cell_key(c) == "D2-8 historical-service-time bio d32")
    guest = validate.fit_guest(cells, str(c.get("kernel") or "6.1"), "", c["queue_mode"])
    groups = validate._groups(c)
    singles = [validate._predict(c, groups, {guest: 1}, 2.0, (seed,)) for seed in (1, 2)]
    assert singles[0][0] != singles[1][0]      # the seeds differ here, so the mean is a test
    both = validate._predict(c, groups, {guest: 1}, 2.0, (1, 2))
    for g in groups:
        assert both[0][g] == pytest.approx((singles[0][0][g] + singles[1][0][g]) / 2)
    assert both[1] == pytest.approx((singles[0][1] + singles[1][1]) / 2)
    # one run is the table's prediction, unchanged by the option's default
    row = validate.compare([c], 2.0, all_cells=cells)[0]
    assert row == validate.compare([c], 2.0, all_cells=cells, runs=1)[0]
    assert validate.main([path, "--filter", "D2-8 historical-service-time bio d32", "--runtime", "2",
                          "--runs", "2"]) == 0
    assert "6.1 D2-8:" in capsys.readouterr().out
