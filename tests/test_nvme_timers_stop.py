"""The NVMe head's own timers that re-arm for as long as a state lasts end with the run.

In the kernel an ANA group left in change resets its controller every 2 x ANATT (nvme_anatt_timeout ->
nvme_reset_ctrl; the reset reads the log again and nvme_update_ana_state re-arms the timer), and with
ctrl_loss_tmo = -1 a lost controller reconnects every reconnect_delay for ever (nvmf_should_reconnect).
The simulation runs those timers while the workload runs, drops them once it is done, and stops them
when no I/O has ended for TARGET_TIMER_STOP_NS (the run then ends stalled and says why): both engines.
"""
import pytest

from mpathlab.nvme.run import run_nvme
from mpathlab.stall import TARGET_TIMER_STOP_NS, stall_line
from mpathlab.topology import topology_from_dict
from mpathlab.workload.fio import parse_fio

MS = 10 ** 6
ENGINES = ["python", "compiled"]


def _topo(nvme, faults=None):
    paths = {"a": {"devt": "259:0", "service": "100us"}, "b": {"devt": "259:1", "service": "100us"}}
    for name, f in (faults or {}).items():
        paths[name]["faults"] = f
    doc = {"paths": paths, "nvme": dict(nvme, controllers={"nvme0": {"path": "a"}, "nvme1": {"path": "b"}})}
    return topology_from_dict(doc, "timers")


def _run(topo, job, engine):
    if engine == "compiled":
        pytest.importorskip("mpathlab._fastcore")
    return run_nvme(topo, parse_fio(job), engine=engine)


TIME_BASED = "[j]\nrw=randread\nbs=4k\nioengine=libaio\niodepth=4\nruntime=%s\ntime_based\n"
NUMBER_IOS = "[j]\nrw=randread\nbs=4k\nioengine=libaio\niodepth=4\nnumber_ios=40\n"
STUCK_IN_CHANGE = {"anatt": "5ms", "events": [{"at": "1ms", "ana": {"group": 1, "controller": "nvme0",
                                                                    "state": "change"}}]}


@pytest.mark.parametrize("engine", ENGINES)
def test_a_group_left_in_change_resets_every_two_anatt_until_the_workload_ends(engine):
    r = _run(_topo(STUCK_IN_CHANGE), TIME_BASED % "50ms", engine)
    assert (r.completed, r.pending, r.stalled) == (502, 0, False)
    # the ANA errors of the I/O nvme0 had started each queue a log read; the last read arms the live timer
    last_read = max(t for t, text, _ in r.messages if text == "ana_log nvme0")
    gens = [(t, int(text.split()[2])) for t, text, _ in r.messages if text.startswith("anatt_timeout")]
    live = gens[-1][1] - 3      # the first timer the last read armed: every later one is its reset's re-arm
    assert [t for t, g in gens if g >= live] == [last_read + 10 * MS * k for k in range(1, 5)]
    # the fifth reset would come after the workload ended (50 ms): not run, and the run ends
    assert all(t < 50 * MS for t, _ in gens)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_group_left_in_change_no_longer_keeps_a_finished_run_going(engine):
    r = _run(_topo(STUCK_IN_CHANGE), NUMBER_IOS, engine)
    assert (r.completed, r.pending, r.stalled, r.timers_stopped_ns) == (40, 0, False, None)
    assert not [m for m in r.messages if m[1].startswith("anatt_timeout")]    # the workload ended within 11 ms


@pytest.mark.parametrize("engine", ENGINES)
def test_reconnecting_forever_with_io_queued_stops_after_the_limit_and_says_why(engine):
    topo = _topo({"ctrl_loss_tmo": -1, "reconnect_delay": "10ms"},
                 faults={"a": [{"at": "1ms", "action": "fail"}], "b": [{"at": "1ms", "action": "fail"}]})
    r = _run(topo, NUMBER_IOS, engine)
    assert r.pending == 4 and r.stalled         # iodepth=4 queued in the head, no controller ever returns
    # progress is read at the timers: first at the reconnects 10 ms after the loss (1 ms), which go on every
    # 10 ms; the first of them at or past the limit finds no I/O ended since
    assert r.timers_stopped_ns == 11 * MS + TARGET_TIMER_STOP_NS
    reconnects = [t for t, text, _ in r.messages if text.startswith("reconnect nvme0")]
    assert reconnects[:2] == [11 * MS, 21 * MS] and reconnects[-1] == 11 * MS + TARGET_TIMER_STOP_NS - 10 * MS
    line = stall_line(r)
    assert "no I/O ended for 600.00s" in line and "ctrl_loss_tmo = -1" in line, line


@pytest.mark.parametrize("engine", ENGINES)
def test_a_controller_that_never_returns_does_not_outlive_the_workload(engine):
    topo = _topo({"ctrl_loss_tmo": -1, "reconnect_delay": "10ms"}, faults={"a": [{"at": "5ms", "action": "fail"}]})
    r = _run(topo, TIME_BASED % "30ms", engine)
    assert (r.pending, r.stalled, r.timers_stopped_ns) == (0, False, None)
    reconnects = [t for t, text, _ in r.messages if text.startswith("reconnect nvme0")]
    assert reconnects == [15 * MS, 25 * MS]     # every 10 ms after the loss, none once the job's 30 ms are over
