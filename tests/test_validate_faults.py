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
    r = rows["6.1 delete service-time mq d16"]
    m, k = r["model"], r["kernel"]
    # the clone allocation on the dying queue fails the path through pg_init_done: everything after the
    # step goes to p1, no error reaches fio (as in the kernel)
    assert m["fio_errors"] == k["fio_errors"] == 0
    # (the one command p0 had at the step still completes, just after it: the kernel's phase counters,
    # read once the step has run, count it before)
    assert 0 < m["shares_after"]["p0"] < 0.001
    assert k["shares_after"] == {"p0": 0.0, "p1": 1.0} and r["checks"]["shares"]
    # fio at 600 IOPS over 2 ms LUNs: the next completion comes within one inter-arrival time (1.7 ms)
    # plus a service time in the model; the kernel took 6 ms (the disk's teardown, not modelled)
    assert m["stall_ms"] <= 1000 / 600 + 2 and r["checks"]["stall"] is False


def test_no_path_retry_by_messages_fails_the_queued_io_then_recovers(rows):
    r = rows["6.1 npr round-robin mq d16"]
    m, k = r["model"], r["kernel"]
    c = next(c for c in json.load(open(DATA)) if c["fault"] == "npr")
    t = vf.step_times_ns(c)
    # from fail_if_no_path (step 3) to the first reinstate_path (step 6) every I/O fails: at least the rate
    # times that window, plus the 16 held when queueing stopped; fio then catches up its rate, as in the kernel
    window_s = (t[5] - t[2]) / 1e9
    assert m["fio_errors"] >= 600 * window_s + 16
    assert abs(m["fio_errors"] - k["fio_errors"]) <= 0.1 * k["fio_errors"]
    # both paths back: round-robin splits the rest evenly, in the model and in the kernel
    assert all(abs(m["shares_after"][p] - k["shares_after"][p]) <= 0.03 for p in ("p0", "p1"))
    assert r["checks"]["shares"] and r["checks"]["recovery"]


def test_cells_with_unmodelled_steps_are_said(rows):
    cells = json.load(open(DATA))
    odd = dict(cells[0], steps=[dict(cells[0]["steps"][0], action="delay")])
    (row,) = vf.compare([odd])
    assert row["not_modelled"] == "the step delay" and "not modelled" in vf.markdown([row])


def test_bad_results_file_is_one_line_exit_3(tmp_path, capsys):
    p = tmp_path / "r.json"
    p.write_text("{not json")
    assert vf.main([str(p)]) == 3
    assert capsys.readouterr().err.startswith(str(p))
