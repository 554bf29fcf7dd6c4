"""The kernel lab's fault cells against the model (mpathlab.validate_faults), on two 6.1 cells summarised by
the lab's own collector (grid.py collect_faults) from runs stored with the lab: a deleted LUN under
service-time, and all paths lost with no_path_retry played by messages under round-robin."""
import json
import os

import pytest

from mpathlab import validate_faults as vf

DATA = os.path.join(os.path.dirname(__file__), "data", "kernel-lab-faults-6.1-stored.json")


@pytest.fixture(scope="module")
def rows():
    cells = json.load(open(DATA))
    return {r["cell"]: r for r in vf.compare(cells)}


def test_a_deleted_lun_fails_its_path_and_fio_sees_no_error(rows):
    r = rows["6.1 delete st mq"]
    m, k = r["model"], r["kernel"]
    # the cancelled LUN refuses the next clone (BLK_STS_OFFLINE), dm-mpath fails it and moves the I/O to
    # p1: everything after the step goes to p1, no error reaches fio (as in the kernel)
    assert m["fio_errors"] == k["fio_errors"] == 0 and m["refused"] == 1
    assert m["shares_after"]["p0"] == 0 and k["shares_after"] == {"p0": 0.0, "p1": 1.0} and r["checks"]["shares"]
    # fio at 600 IOPS over 2 ms LUNs: the next completion comes within one inter-arrival time (1.7 ms) in
    # the model; the kernel took 6 ms (the guest busy with the disk's teardown, not modelled)
    assert m["stall_ms"] <= 1000 / 600 and r["checks"]["stall"] is False


def test_no_path_retry_by_messages_fails_the_queued_io_then_recovers(rows):
    r = rows["6.1 npr rr mq"]
    m, k = r["model"], r["kernel"]
    c = next(c for c in json.load(open(DATA)) if c["fault"] == "npr")
    t = vf.step_times_ns(c)
    # the messages act when dmsetup returns (its ioctl comes after ~100 ms of start-up in the guest):
    # from fail_if_no_path (step 3) to the first reinstate_path (step 6) every I/O fails, at least the
    # rate times that window plus the 16 held when queueing stopped; fio then catches up its rate
    window_s = (t[5] - t[2]) / 1e9
    assert m["fio_errors"] >= 600 * window_s + 16
    # within 5% of the kernel's 994 (taking the messages at their start, the model said 931)
    assert abs(m["fio_errors"] - k["fio_errors"]) <= 0.05 * k["fio_errors"] and r["checks"]["errors"]
    # both paths back: round-robin splits the rest evenly, in the model and in the kernel
    assert all(abs(m["shares_after"][p] - k["shares_after"][p]) <= 0.03 for p in ("p0", "p1"))
    assert r["checks"]["shares"] and r["checks"]["recovery"] and r["within"]


def test_a_sysfs_step_acts_at_its_start_a_message_at_its_end():
    c = next(c for c in json.load(open(DATA)) if c["fault"] == "npr")
    spans, eff = vf.step_spans_ns(c), vf.step_times_ns(c)
    kinds = [st["action"] for st in c["steps"]]
    assert [e == (a if k in vf.DEVICE_STEPS else b) for (a, b), e, k in zip(spans, eff, kinds)] == [True] * len(kinds)
    # the guest's dmsetup messages took ~100 ms each
    assert all(b - a > 50_000_000 for (a, b), k in zip(spans, kinds) if k in vf.MESSAGE_STEPS)


def test_the_table_fits_100_columns(rows):
    assert all(len(line) <= 100 for line in vf.markdown(list(rows.values())).splitlines())


def test_cells_with_unmodelled_steps_are_said(rows):
    cells = json.load(open(DATA))
    odd = dict(cells[0], steps=[dict(cells[0]["steps"][0], action="delay")])
    (row,) = vf.compare([odd])
    assert row["not_modelled"] == "the step delay" and "not modelled" in vf.markdown([row])


def test_bad_results_file_is_one_line_exit_3(tmp_path, capsys):
    p = tmp_path / "r.json"
    p.write_text("{not json")
    assert vf.main([str(p)]) == 3
    assert capsys.readouterr().err == "mpathlab: error: %s:1: not JSON: Expecting property name enclosed in double quotes\n" % p


def test_every_stored_fault_cell_of_both_kernels():
    # the lab's own results (validation/kernel-lab/results-faults.json): every cell is predicted or said
    # to be not modelled; fio's error counts agree wherever the kernel saw errors, and at least 8 cells
    # are within every check
    path = os.path.join(os.path.dirname(DATA), "..", "..", "validation", "kernel-lab", "results-faults.json")
    cells = json.load(open(path))
    rows = vf.compare(cells)
    assert {c["kernel"] for c in cells} == {"6.1", "6.12"} and len(rows) == len(cells)
    modelled = [r for r in rows if "not_modelled" in r or r["checks"]]
    assert len(modelled) == len(rows)
    with_errors = [r for r in rows if "kernel" in r and r["kernel"]["fio_errors"]]
    assert len(with_errors) >= 12 and all(r["checks"]["errors"] for r in with_errors)
    assert sum(1 for r in rows if r.get("within")) >= 8
    assert all(len(line) <= 100 for line in vf.markdown(rows).splitlines())


@pytest.mark.parametrize("text, says", [('{"a": 1}', "not a list of cells"), ('[{"kernel": "6.1"}]', "cell 1: no fault"),
                                        ('[1]', "cell 1: not an object")])
def test_results_of_the_wrong_shape_are_one_line_exit_3(tmp_path, capsys, text, says):
    p = tmp_path / "r.json"
    p.write_text(text)
    assert vf.main([str(p)]) == 3
    err = capsys.readouterr().err
    assert err.startswith("mpathlab: error: %s: %s" % (p, says)) and err.count("\n") == 1


def _cell_with(key, values):
    n = len(values)
    mean = sum(values) / n
    sd = (sum((v - mean) ** 2 for v in values) / (n - 1)) ** 0.5
    return {"repeats": [{key: v} for v in values], "stddev_" + key: sd}, mean


def test_a_time_is_judged_against_the_kernels_own_spread_only_with_three_repeats():
    # one repeat of four where the guest held fio for 180 ms: mean 47.25 ms, sd 88.5, two standard
    # errors 88.5: the model's 3.4 ms is 43.9 ms off (outside 10% or 5 ms) but within the kernel's noise
    c, mean = _cell_with("stall_new_io_ms", [3.0, 3.0, 3.0, 180.0])
    assert vf._time_ok(3.4, mean, c, "stall_new_io_ms") == "noise"
    assert vf._time_ok(mean + 4.9, mean, c, "stall_new_io_ms") == "yes"
    assert vf._time_ok(mean + 2 * 88.5 / 2 + 1, mean, c, "stall_new_io_ms") == "no"
    # two repeats are too few to know the spread
    c2, mean2 = _cell_with("stall_new_io_ms", [3.0, 180.0])
    assert vf._time_ok(3.4, mean2, c2, "stall_new_io_ms") == "no"
    # a repeat without the measure does not count towards the three
    c3, mean3 = _cell_with("recovery_ms", [3.0, 3.0, 180.0])
    c3["repeats"][0] = {"recovery_ms": None}
    assert vf._time_ok(3.4, mean3, c3, "recovery_ms") == "no"
    assert vf._time_ok(None, None) is None and vf._time_ok(1.0, None) == "no"


def test_the_fault_is_the_steps_of_its_first_instant():
    c = next(c for c in json.load(open(DATA)) if c["fault"] == "npr")
    # both paths offline at 1000 ms, then fail_if_no_path at 1500: the fault is the first two
    assert [st["at_ms"] for st in c["steps"]][:3] == [1000, 1000, 1500] and vf.fault_steps(c) == 2
    d = next(c for c in json.load(open(DATA)) if c["fault"] == "delete")
    assert vf.fault_steps(d) == 1


def test_shares_after_are_compared_over_repeats_that_completed_enough():
    # repeat 1 completed 600 I/Os after the last step (p0 0.5), repeat 2 only 5 (its counters read after
    # fio ended: p0 0.8); the kernel's share is repeat 1's alone, the model's that of its run for repeat 1
    reps = [{"step_times_ms": [0.0], "completions": {"after": {"p0": 300, "p1": 300}},
             "shares_after": {"p0": 0.5, "p1": 0.5}},
            {"step_times_ms": [0.0], "completions": {"after": {"p0": 4, "p1": 1}},
             "shares_after": {"p0": 0.8, "p1": 0.2}}]
    model = {"shares_after": {"p0": 0.6, "p1": 0.4},
             "per_repeat": [{"shares_after": {"p0": 0.51, "p1": 0.49}}, {"shares_after": {"p0": 0.69, "p1": 0.31}}]}
    k, m, enough = vf._shares_compared({"repeats": reps}, model)
    assert enough and k == {"p0": 0.5, "p1": 0.5} and m == {"p0": 0.51, "p1": 0.49}
    # no repeat with enough: not compared
    k, m, enough = vf._shares_compared({"repeats": reps[1:]}, dict(model, per_repeat=model["per_repeat"][1:]))
    assert not enough


def test_with_the_guest_a_catch_up_burst_is_spread_as_in_the_kernel(monkeypatch):
    # 6.1, both paths offline under queue_if_no_path, then back: fio, 1.1 s behind its rate, catches up
    # at depth 16. Without the guest's CPU time and late timers the burst's I/Os reach p0 (reinstated
    # first) at one instant and complete at one instant; HST's path_service_time reads "now - last
    # completion" = 0 for all but the first, so p0 looks far faster and takes most of the burst. With the
    # guest's CPU time and late timers the shares after the last step are the kernel's; the dm queue's
    # dispatch time that guest also has (90 us per request, fitted in a loaded session of the emulated lab)
    # moves p0 past them again, less far than the bare model (docs/faults.md)
    path = os.path.join(os.path.dirname(DATA), "..", "..", "validation", "kernel-lab", "results-faults.json")
    c = next(c for c in json.load(open(path)) if (c["kernel"], c["fault"], c["selector"])
             == ("6.1", "allq", "historical-service-time"))
    rep = next(r for r in vf._timed_repeats(c) if (vf._completed_after(r) or 0) >= vf.MIN_AFTER)
    kernel = rep["shares_after"]["p0"]
    bare = vf.repeat_metrics(c, 1, rep)["shares_after"]["p0"]
    guest = vf.repeat_metrics(c, 1, rep, with_guest=True)["shares_after"]["p0"]
    host = vf.guest_host(c, rep)
    assert host.submit_ns > 0 and 50_000 < host.dispatch_ns < 150_000
    assert bare > kernel + 0.08 and 0.03 < guest - kernel < bare - kernel
    host.dispatch_ns = 0
    monkeypatch.setattr(vf, "guest_host", lambda *a, **k: host)
    assert abs(vf.repeat_metrics(c, 1, rep, with_guest=True)["shares_after"]["p0"] - kernel) <= 0.03


def _lab_cells():
    path = os.path.join(os.path.dirname(DATA), "..", "..", "validation", "kernel-lab", "results-faults.json")
    return json.load(open(path))


def test_a_delay_path_is_null_blk_under_dm_delay_and_its_step_a_suspension():
    c = next(c for c in _lab_cells() if c["fault"] == "slow" and c["kernel"] == "6.1"
             and c["selector"] == "round-robin")
    paths = vf.cell_paths(c)
    # the null_blk device's 2 ms and 8 tags (a budget of 8), its dm-delay's 0 ms at the start
    assert [(p.service.mean_ns, p.queue_depth, p.dm_delay_ns) for p in paths] == [(2_000_000, 8, 0)] * 2
    rep = vf._timed_repeats(c)[0]
    sim, _, _ = vf.cell_run(c, rep=rep)
    (a0, b0), (a1, b1) = vf.step_spans_ns(c, rep)
    # 1000/delay/p0/20, 2500/delay/p0/0: p0's dm device suspended over each step's dmsetup commands,
    # resumed at its end with the new table's delay; p1 untouched
    assert [(f.at_ns, f.action, f.delay_ns) for f in sim.paths[0].faults] == [
        (a0, "suspend", None), (b0, "resume", 20_000_000), (a1, "suspend", None), (b1, "resume", 0)]
    assert sim.paths[1].faults == []


def test_fio_waits_out_each_suspension_of_a_delay_path():
    # fio at 600 IOPS reaps every I/O in flight before it sleeps: the I/O held by the suspended p0 holds
    # the job from its last other completion (within one 1.7 ms inter-arrival and a 2 ms completion of
    # the suspend, before or after it) to the held I/O's end (the resume, then the new delay and 2 ms)
    c = next(c for c in _lab_cells() if c["fault"] == "slow" and c["kernel"] == "6.1"
             and c["selector"] == "round-robin")
    for rep in vf._timed_repeats(c):
        m = vf.repeat_metrics(c, rep=rep)
        spans = [(b - a) / 1e6 for a, b in vf.step_spans_ns(c, rep)]
        longest = max(s + d + 2.0 for s, d in zip(spans, (20.0, 0.0)))
        slack = 1000 / 600 + 2.0
        assert longest - 2 * slack <= m["max_gap_ms"] <= longest + slack
        assert m["fio_errors"] == 0 and m["refused"] == 0
