"""Fault handling in the simulator: nothing lost, nothing counted twice."""
import pytest

from mpathlab.sim import Exponential, Fault, PathModel, simulate
from mpathlab.sim.faults import MS, SELECTORS, STUDIES, summarize
from mpathlab.target import parse_status_info
from mpathlab.workload.fio import parse_fio


def dispatches(res, path, t0, t1):
    return sum(c.get(path, 0) for t, c in res.windows if t0 <= t < t1)


@pytest.mark.parametrize("sel", SELECTORS)
def test_path_fails_under_load_and_is_reinstated(sel):
    res = STUDIES["path-fail-reinstate"].run(sel)      # runs check_accounting()
    assert res.errored == 0 and res.pending == 0 and res.completed == res.submitted
    sdb = next(p for p in res.paths if p["name"] == "sdb")
    assert sdb["errors"] > 0                            # its in-flight I/O failed...
    assert sdb["dispatched"] == sdb["completed"] + sdb["errors"]   # ...and was requeued elsewhere
    assert dispatches(res, "sdb", 21 * MS, 60 * MS) == 0
    assert dispatches(res, "sdb", 61 * MS, 100 * MS) > 0
    st = parse_status_info(res.status_info)
    p = [x for x in st["groups"][0]["paths"] if x["dev"] == "8:16"][0]
    assert p["active"] and p["fail_count"] == 1


@pytest.mark.parametrize("study", ["all-fail-queue", "all-fail-queue-bio"])
@pytest.mark.parametrize("sel", SELECTORS)
def test_all_paths_fail_with_queue_if_no_path(study, sel):
    res = STUDIES[study].run(sel)
    assert res.errored == 0 and res.pending == 0
    assert res.completed == res.submitted
    # nothing reached a device while no path was up
    assert dispatches(res, "sda", 21 * MS, 50 * MS) + dispatches(res, "sdb", 21 * MS, 50 * MS) == 0
    # queued I/O completed after the paths came back
    assert dispatches(res, "sda", 50 * MS, 200 * MS) > 0
    lat = res.jobs[0].write_lat
    assert lat.max >= 30 * MS          # some I/O waited out the outage


@pytest.mark.parametrize("sel", SELECTORS)
def test_all_paths_fail_without_queue_if_no_path(sel):
    res = STUDIES["all-fail-error"].run(sel)
    assert res.errored > 0 and res.pending == 0
    assert res.submitted == res.completed + res.errored
    assert res.jobs[0].first_error in ("transport", "ioerr")


def test_fio_stops_a_job_at_its_first_error_by_default():
    paths = [PathModel("sda", (8, 0), Exponential(100_000), parallelism=4, faults=[Fault(5 * MS, "fail")])]
    res = simulate("0 10 multipath 0 0 1 1 queue-length 0 1 0 sda", paths,
                   parse_fio("[j]\nbs=4k\nioengine=libaio\niodepth=16\nruntime=50ms\ntime_based\n").jobs)
    res.check_accounting()
    assert res.jobs[0].stopped
    assert res.errored == 16          # exactly the I/O in flight at the failure
    assert res.submitted == res.completed + 16


def test_all_paths_fail_forever_with_queueing_leaves_io_pending():
    paths = [PathModel("sda", (8, 0), Exponential(100_000), parallelism=4, faults=[Fault(5 * MS, "fail")])]
    for mode in ("1 queue_if_no_path", "3 queue_if_no_path queue_mode bio"):
        res = simulate("0 10 multipath %s 0 1 1 queue-length 0 1 0 sda" % mode, paths,
                       parse_fio("[j]\nbs=4k\nioengine=libaio\niodepth=16\nruntime=20ms\ntime_based\n").jobs)
        res.check_accounting()
        assert res.stalled or res.pending
        assert res.pending == 16 and res.errored == 0


@pytest.mark.parametrize("sel", SELECTORS)
def test_slow_path_at_depth64(sel):
    st = STUDIES["slow-path-20x"]
    res = st.run(sel)
    d = summarize(st, sel, res)
    assert d["sdb_share_before"] == pytest.approx(0.25, abs=0.02)
    if sel == "round-robin":
        # round-robin does not look at load, but sdb's queue_depth (32) does: once half the 64 I/Os sit on
        # the slow LUN its budget refuses the next clone, dm requeues it and round-robin has moved on
        sdb = res.paths[[p["name"] for p in res.paths].index("sdb")]
        assert sdb["peak_in_flight"] == 32 and 0.01 < d["sdb_share_after"] < 0.05
    else:
        assert d["sdb_share_after"] < 0.05 and d["reaction_ns"] is not None and d["reaction_ns"] < 5 * MS


@pytest.mark.parametrize("sel", SELECTORS)
def test_slow_path_at_depth1_only_hst_detects_it(sel):
    st = STUDIES["slow-path-20x-depth1"]
    d = summarize(st, sel, st.run(sel))
    if sel == "historical-service-time":
        assert d["sdb_share_after"] < 0.05 and d["reaction_ns"] < 30 * MS
    else:
        assert d["sdb_share_after"] == pytest.approx(0.25, abs=0.01) and d["reaction_ns"] is None


def test_message_faults_and_bad_messages_are_recorded():
    paths = [PathModel(n, (8, 16 * i), Exponential(100_000), parallelism=2) for i, n in enumerate("ab")]
    res = simulate("0 10 multipath 0 0 2 1 queue-length 0 1 0 a queue-length 0 1 0 b", paths,
                   parse_fio("[j]\nbs=4k\nioengine=libaio\niodepth=4\nruntime=30ms\ntime_based\n").jobs,
                   messages=[(10 * MS, "switch_group 2"), (20 * MS, "switch_group 9")], window_ns=MS)
    res.check_accounting()
    assert res.messages[0][2] == "ok"
    assert "invalid PG number supplied to switch_pg_num" in res.messages[1][2]
    assert dispatches(res, "a", 11 * MS, 30 * MS) == 0 and dispatches(res, "b", 11 * MS, 30 * MS) > 0


@pytest.mark.parametrize("mode", ["1 queue_if_no_path", "3 queue_if_no_path queue_mode bio"])
def test_queue_if_no_path_timeout_fails_queued_io(mode):
    paths = [PathModel("sda", (8, 0), Exponential(100_000), parallelism=4, faults=[Fault(5 * MS, "fail")])]
    res = simulate("0 10 multipath %s 0 1 1 queue-length 0 1 0 sda" % mode, paths,
                   parse_fio("[j]\nbs=4k\nioengine=libaio\niodepth=16\nruntime=3s\ntime_based\n").jobs,
                   queue_if_no_path_timeout_secs=1)
    res.check_accounting()
    assert res.pending == 0 and res.errored > 0 and not res.stalled
    # the queued I/O waited about a second before it failed
    assert 0.9e9 < res.jobs[0].end_ns - 5 * MS < 1.2e9


def test_nopath_timer_semantics():
    from mpathlab.target import construct
    armed = []
    m = construct("1 queue_if_no_path 0 1 1 round-robin 0 1 0 8:0", queue_if_no_path_timeout_secs=5,
                  set_timer=lambda mp, d: armed.append(d))
    assert armed == []                       # paths available: not armed
    m.message("fail_path", "8:0")
    assert armed == [5 * 10 ** 9] and m.nopath_timer_armed
    m.message("reinstate_path", "8:0")
    assert armed[-1] is None and not m.nopath_timer_armed
    m.message("fail_path", "8:0")
    m.nopath_timeout()
    assert not m.queue_if_no_path_flag
    assert "queue_if_no_path timeout on mpath, failing queued IO" in m.dmesg[-1]
    construct("1 queue_if_no_path 0 0 0", queue_if_no_path_timeout_secs=2, set_timer=lambda mp, d: armed.append(d))
    assert armed[-1] == 2 * 10 ** 9          # armed at the end of the constructor
