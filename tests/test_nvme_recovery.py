"""A lost NVMe/TCP connection as the kernel's error recovery takes it, step by step (6.1.192 and 6.12.118
drivers/nvme/host/tcp.c; the same steps in both): the controller leaves LIVE at once, its started
requests wait for the error recovery work's cancel, and only then does it reconnect."""
import pytest

from mpathlab.nvme import Controller, NvmeHead
from mpathlab.nvme.head import HeadTimers
from mpathlab.nvme.run import lab_figures, run_nvme
from mpathlab.sim.host import HostModel
from mpathlab.target import END_DONE, END_REQUEUE, MAP_REMAPPED
from mpathlab.topology import topology_from_dict
from mpathlab.workload.fio import parse_fio

from test_nvme_releases import IO

MS = 10 ** 6
S = 10 ** 9


def _head(policy, recovery_ns):
    due = []
    c = [Controller("c%d" % i, i, (259, i)) for i in range(2)]
    h = NvmeHead(c, iopolicy=policy, host=HostModel(1), schedule=lambda d, m: due.append((d, m)),
                 profile="6.12", timers=HeadTimers(recovery_ns=recovery_ns))
    held = []
    h.hold_in_flight = held.append
    return h, c, due, held


def _start(h):
    io = IO()
    assert h.map(io) == MAP_REMAPPED and h.driver_start(io)
    return io


@pytest.mark.parametrize("policy", ["numa", "round-robin"])
def test_a_lost_connection_is_resetting_until_the_cancel(policy):
    h, c, due, held = _head(policy, 20 * MS)
    first = _start(h)
    assert first.pgpath is c[0]
    # nvme_tcp_state_change (6.12 tcp.c:1167-1191, 6.1 :1047) -> nvme_tcp_error_recovery (6.12 :639-646,
    # 6.1 :537-544): RESETTING at once and err_work queued on nvme_reset_wq; the started request is held (the
    # socket delivers nothing more)
    h.transport_lost(c[0])
    assert c[0].state == "resetting" and held == [c[0]]
    assert due == [(20 * MS, "recovery_done c0 1")]
    # nvme_path_is_disabled: a controller not LIVE (nor DELETING) is skipped (6.12 multipath.c:243-258): new
    # I/O goes to c1
    assert _start(h).pgpath is c[1]
    # a request that chose c0 before the loss and reaches queue_rq now is refused (nvme_check_ready ->
    # nvme_fail_nonready_command -> host path error for REQ_NVME_MPATH) and fails over
    late = IO()
    late.pgpath, late.tag = c[0], type(first.tag)(h.nsheads[0].paths[0], 0)
    assert h.driver_start(late) is False
    # the work's end (6.12 tcp.c:2694-2719, 6.1 :2278-2301): teardown cancelled the requests, CONNECTING, and
    # the reconnect is queued reconnect_delay after that, not after the loss (nvme_tcp_reconnect_or_remove,
    # 6.12 :2574-2595, 6.1 :2162)
    h.message("recovery_done", "c0", "1")
    assert c[0].state == "connecting" and not c[0].recovering
    assert due[-1] == (10 * S, "reconnect c0 1")


def test_the_port_answering_again_waits_for_the_recovery():
    # the reconnect work is only queued at the end of the error recovery work: a port back before then
    # changes nothing until the attempt
    h, c, due, held = _head("round-robin", 20 * MS)
    h.transport_lost(c[0])
    h.message("reinstate_path", "c0")
    assert c[0].state == "resetting"
    h.message("recovery_done", "c0", "1")
    h.message("reconnect", "c0", "1")
    assert c[0].state == "live"


def test_a_stale_recovery_message_does_nothing():
    h, c, due, held = _head("numa", 5 * MS)
    h.transport_lost(c[0])
    h.message("recovery_done", "c0", "7")
    assert c[0].state == "resetting"


def _stall(policy, recovery, depth=16):
    doc = {"host": {"cpus": 2},
           "paths": {"a": {"service": "400us", "faults": [{"at": "100ms", "action": "fail"}]},
                     "b": {"service": "400us"}},
           "nvme": {"iopolicy": policy, "recovery": recovery}}
    topo = topology_from_dict(doc, "t.toml")
    job = parse_fio("[j]\nrw=randread\nbs=4k\nioengine=libaio\niodepth=%d\nruntime=300ms\ntime_based\n" % depth)
    r = run_nvme(topo, job, kernel="6.12", window_ns=MS)
    return r, lab_figures(r, since_ns=100 * MS, until_ns=250 * MS)


def test_numa_waits_the_recovery_round_robin_keeps_going():
    # numa: every request is on c0 (the first controller) when it goes; fio's whole depth waits for the
    # cancel, so nothing completes for the recovery time.  Round-robin: the requests on c1 go on
    # completing and fio's resubmissions go to c1 at once (c0 is RESETTING): no stall beyond a window
    _, numa = _stall("numa", "30ms")
    assert 28 * MS <= numa["stall_ns"] <= 32 * MS
    _, rr = _stall("round-robin", "30ms")
    assert rr["stall_ns"] <= MS
    for fig in (numa, rr):
        assert fig["errors"] == 0


def test_recovery_zero_is_the_old_immediate_cancel():
    # the default (no recovery time) cancels at the first failed completion: the stall is under 2 ms
    r, fig = _stall("numa", "0us")
    assert fig["stall_ns"] < 2 * MS and fig["errors"] == 0
    assert not any(m.startswith("recovery_done") for _, m, _ in r.messages)
