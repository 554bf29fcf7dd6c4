"""The NVMe head as each kernel release has it: hand-made traces whose expected choices are read off the
kernel sources (Debian's linux-source-6.1 = 6.1.192 and linux-source-6.12 = 6.12.118, drivers/nvme/host;
file:line cited at each step) and SPDK master's module/bdev/nvme/bdev_nvme.c."""
import pytest

from mpathlab.cli import main
from mpathlab.nvme import Controller, NvmeHead, PolicyError
from mpathlab.nvme.head import HeadTimers
from mpathlab.nvme.run import lab_figures, run_nvme
from mpathlab.profiles import get_profile
from mpathlab.sim.host import HostModel
from mpathlab.target import END_DONE, END_REQUEUE, MAP_KILL, MAP_REMAPPED, MAP_SUBMITTED, MessageError, MpathIO
from mpathlab.topology import TopologyError, topology_from_dict
from mpathlab.workload.fio import parse_fio

S = 10 ** 9


class IO(MpathIO):
    def __init__(self, nsid=1):
        MpathIO.__init__(self, 4096)
        self.nsid = nsid
        self.is_read = True


class Env:
    """A head whose timers are collected (``due``) and fired by hand."""

    def __init__(self, n=3, policy="round-robin", kernel="6.12", namespaces=1, groups=None, ana=None,
                 ctrl_loss_tmo_ns=-1, timers=None, params=None):
        self.c = [Controller("c%d" % i, i, (259, i)) for i in range(n)]
        self.due = []
        self.head = NvmeHead(self.c, iopolicy=policy, namespaces=namespaces, ana_group_of_ns=groups or {},
                             ana=ana or {}, host=HostModel(1), schedule=lambda d, m: self.due.append((d, m)),
                             ctrl_loss_tmo_ns=ctrl_loss_tmo_ns, profile=kernel, timers=timers or HeadTimers(),
                             policy_params=params)

    def pick(self, nsid=1):
        io = IO(nsid)
        r = self.head.map(io)
        if r == MAP_REMAPPED:
            assert self.head.driver_start(io)
            return io
        return r

    def names(self, k, nsid=1):
        out = []
        for _ in range(k):
            io = self.pick(nsid)
            out.append(io.pgpath.name)
            assert self.head.end_io(io) == END_DONE
        return out

    def fire(self, prefix):
        """Deliver the pending timer messages that start with ``prefix`` (in the order they were armed)."""
        hits = [m for m in self.due if m[1].startswith(prefix)]
        assert hits, (prefix, self.due)
        for m in hits:
            self.due.remove(m)
            self.head.message(*m[1].split())
        return [d for d, _ in hits]


# -- the per-node current path -----------------------------------------------------------------------
@pytest.mark.parametrize("kernel", ["6.1", "6.12", "current"])
def test_losing_an_idle_controller_keeps_the_current_path(kernel):
    # current_path is cleared only by nvme_failover_req (6.1 multipath.c:90, 6.12 :93), nvme_ns_remove
    # (6.1 core.c:4468, 6.12 core.c:4037), nvme_mpath_revalidate_paths (6.1 multipath.c:172-189) and
    # nvme_mpath_clear_ctrl_paths (6.1 :160-170: namespace removal; 6.12 also nvme_subsys_iopolicy_update
    # :908-929): a controller leaving LIVE with nothing in flight clears nothing.
    e = Env(3, kernel=kernel)
    assert e.names(2) == ["c0", "c1"]          # __nvme_find_path (6.12 :260-297) -> c0; the walk -> c1
    e.head.message("fail_path", "c1")
    # round-robin walks on from the (disabled) current path c1 (6.12 :311-355, nvme_next_ns): c2, c0;
    # clearing c1 would have restarted at the first optimized path, c0
    assert e.names(2) == ["c2", "c0"]


def test_a_failed_over_request_clears_its_path():
    # nvme_failover_req -> nvme_mpath_clear_current_path (6.12 multipath.c:93): the next I/O runs the full
    # search (6.12 :316-317) and takes the first optimized path, c0
    e = Env(3)
    assert e.names(1) == ["c0"]
    io = e.pick()
    assert io.pgpath.name == "c1"
    assert e.head.end_io(io, "transport") == END_REQUEUE and e.c[1].state == "connecting"
    assert e.names(2) == ["c0", "c2"]


def test_reconnect_revalidates_and_clears_every_current_path():
    # nvme_start_ctrl (6.12 core.c:4780-4810) applies the ANA log (nvme_mpath_update) and queues the scan,
    # whose nvme_update_ns_info runs nvme_mpath_revalidate_paths (6.12 core.c:2364; multipath.c:223-240):
    # every node's current path is cleared, so round-robin starts again at the first optimized path
    e = Env(3, timers=HeadTimers(reconnect_delay_ns=2 * S))
    assert e.names(3) == ["c0", "c1", "c2"]
    e.head.message("fail_path", "c0")
    assert e.names(1) == ["c1"]                 # the walk from c2 skips the disabled c0
    e.head.message("reinstate_path", "c0")      # the port answers again: nothing until the next attempt
    assert e.c[0].state == "connecting"
    assert e.fire("reconnect c0") == [2 * S]    # queued reconnect_delay after the loss (tcp.c:2574-2592)
    assert e.c[0].state == "live"
    assert e.names(2) == ["c0", "c1"]          # current path cleared: the full search picks c0 first


# -- a deleted controller leaves the head ----------------------------------------------------------------
def test_deleted_controller_leaves_the_list_and_the_single_path_shortcut():
    # ctrl_loss_tmo 0: max_reconnects = DIV_ROUND_UP(0, 10) = 0 (6.12 fabrics.c:1075-1079), so
    # nvmf_should_reconnect (6.12 :589-602) is false at once and the controller is deleted:
    # nvme_remove_namespaces -> nvme_ns_remove -> list_del_rcu(&ns->siblings) (6.12 core.c:4019-4062)
    e = Env(2, ctrl_loss_tmo_ns=0, ana={1: {"c0": "optimized", "c1": "optimized"}})
    assert e.names(1) == ["c0"]
    e.head.message("fail_path", "c1")
    assert e.c[1].state == "dead" and [ns.ctrl.name for ns in e.head.nsheads[0].paths] == ["c0"]
    # the array makes c0 inaccessible; the log re-read sets ns->ana_state but clears no current path
    # (nvme_update_ns_ana_state, 6.12 multipath.c:761-779)
    e.head.message("ana", "1", "c0", "inaccessible")
    e.fire("ana_log c0")
    assert e.head.nsheads[0].paths[0].ana_state == "inaccessible"
    # list_is_singular (6.12 :321-325): the current path is used while not disabled, whatever its ANA state
    io = e.pick()
    assert io.pgpath.name == "c0"
    # it returns the ANA status: failover, NVME_NS_ANA_PENDING and an ANA log re-read (6.12 :93-103)
    assert e.head.end_io(io) == END_REQUEUE and e.head.nsheads[0].paths[0].ana_pending
    assert e.pick() == MAP_SUBMITTED            # no current path, nothing usable, c0 live: requeued


def test_with_two_paths_the_inaccessible_one_is_not_chosen():
    # the same state with c1 only reconnecting: the walk from c0 finds nothing usable and c0 is neither
    # optimized nor non-optimized (6.12 multipath.c:327-351): no path, the bio waits
    e = Env(2, ctrl_loss_tmo_ns=-1)
    assert e.names(1) == ["c0"]
    e.head.message("fail_path", "c1")
    e.head.message("ana", "1", "c0", "inaccessible")
    e.fire("ana_log c0")
    assert e.pick() == MAP_SUBMITTED


# -- ANA: the whole log -----------------------------------------------------------------------------------
def test_an_ana_change_rereads_every_group_and_resets_other_heads():
    # nvme_read_ana_log (6.12 multipath.c:818-854) parses the whole log: nvme_update_ana_state runs for
    # every group descriptor (:781-816), nvme_update_ns_ana_state (:761-779) calls nvme_mpath_set_live for
    # each live namespace, and set_live (:672-703) re-runs __nvme_find_path for every node when the path is
    # optimized: namespace 2 (group 2) restarts its rotation at c0 although only group 1 changed
    e = Env(3, namespaces=2, groups={1: 1, 2: 2})
    assert e.names(2, nsid=2) == ["c0", "c1"]
    e.head.message("ana", "1", "c0", "non-optimized")
    e.fire("ana_log c0")
    assert e.head.nsheads[1].current_path[0].ctrl.name == "c0"
    assert e.names(1, nsid=2) == ["c1"]        # one group updated alone would have gone on to c2


def test_ana_pending_window_until_the_log_is_read():
    # an ANA status fails the request over, sets NVME_NS_ANA_PENDING and queues ana_work (6.12
    # multipath.c:97-103); nvme_path_is_disabled (6.12 :243-257, 6.1 :191-205) skips the path until the
    # log is read (nvme_update_ns_ana_state clears the bit, 6.12 :766), although ns->ana_state still says
    # optimized
    e = Env(2, policy="numa", timers=HeadTimers(ana_log_delay_ns=5 * 10 ** 6))
    io = e.pick()
    assert io.pgpath.name == "c0"
    e.head.message("ana", "1", "c0", "change")          # the notice's log read is 5 ms away
    ns0 = e.head.nsheads[0].paths[0]
    assert ns0.ana_state == "optimized" and e.head.end_io(io) == END_REQUEUE and ns0.ana_pending
    assert e.names(1) == ["c1"]
    e.fire("ana_log c0")
    assert not ns0.ana_pending and ns0.ana_state == "change"
    e.head.message("ana", "1", "c0", "optimized")
    e.fire("ana_log c0")
    assert e.names(1) == ["c0"]                 # set_live made c0 the node's current path again


def test_anatt_resets_a_controller_whose_group_stays_in_change():
    # a log with groups in change arms anatt_timer for 2 x ANATT (6.12 multipath.c:846-850); expiry resets
    # the controller (nvme_anatt_timeout, :878-884); a log without change groups deletes the timer
    e = Env(2, timers=HeadTimers(anatt_ns=10 * S))
    io = e.pick()
    cancelled = []
    e.head.cancel_in_flight = cancelled.append
    e.head.message("ana", "1", "c0", "change")
    e.fire("ana_log c0")
    [(delay, msg)] = [m for m in e.due if m[1].startswith("anatt_timeout")]
    assert delay == 20 * S
    e.fire("anatt_timeout c0")
    assert cancelled == [e.c[0]] and e.c[0].state == "live"   # reset: teardown, then connected again
    # still in change after the reconnect's log read: armed again; the group leaves change: cancelled
    assert [m for m in e.due if m[1].startswith("anatt_timeout c0")]
    e.head.message("ana", "1", "c0", "optimized")
    e.fire("ana_log c0")
    e.fire("anatt_timeout c0")                  # the stale timer does nothing
    assert cancelled == [e.c[0]]
    e.head.end_io(io)


# -- iopolicy writes --------------------------------------------------------------------------------------
@pytest.mark.parametrize("kernel,after_switch", [("6.1", ["c1", "c2"]), ("6.12", ["c0", "c1"]),
                                                 ("current", ["c0", "c1"])])
def test_iopolicy_write_clears_cached_paths_since_6_11(kernel, after_switch):
    # 6.1 nvme_subsys_iopolicy_store (multipath.c:799-813) only stores the value: numa's cached c0 stays and
    # round-robin walks on from it; 6.12 nvme_subsys_iopolicy_update (:908-929) clears every controller's
    # paths, so round-robin starts with the full search
    e = Env(3, policy="numa", kernel=kernel)
    assert e.names(2) == ["c0", "c0"]
    e.head.message("iopolicy", "round-robin")
    assert e.names(2) == after_switch


@pytest.mark.parametrize("kernel", ["6.1", "6.12"])
def test_writing_the_policy_in_force_changes_nothing(kernel):
    # 6.12 :915-916 returns when old == new; 6.1 stores the same value again
    e = Env(3, kernel=kernel)
    assert e.names(2) == ["c0", "c1"]
    e.head.message("iopolicy", "round-robin")
    assert e.names(1) == ["c2"]


def test_queue_depth_is_refused_before_6_11():
    # 6.1 nvme_iopolicy_names (multipath.c:17-20) has numa and round-robin only; the sysfs write is -EINVAL
    with pytest.raises(PolicyError, match="kernel 6.1 has no iopolicy queue-depth"):
        Env(2, policy="queue-depth", kernel="6.1")
    e = Env(2, kernel="6.1")
    with pytest.raises(MessageError):
        e.head.message("iopolicy", "queue-depth")
    assert e.head.policy.name == "round-robin"
    assert Env(2, policy="queue-depth", kernel="6.12").head.policy.name == "queue-depth"


# -- retries ---------------------------------------------------------------------------------------------
def test_non_path_errors_retry_on_the_same_path_unless_dnr():
    # nvme_decide_disposition (6.1 core.c:347-368, 6.12 core.c:391-413): DNR or retries >= nvme_max_retries
    # (5, core.c:58) completes; a path error fails over; anything else is RETRY on the same queue
    e = Env(2)
    e.head.message("error", "c0", "internal", "2", "0")
    io = e.pick()
    for _ in range(2):
        assert e.head.end_io(io) == END_REQUEUE
        assert e.head.map(io) == MAP_REMAPPED and io.pgpath.name == "c0" and e.head.driver_start(io)
    assert e.head.end_io(io) == END_DONE and io.error is None
    e.head.message("error", "c1", "internal", "1", "1")
    io = e.pick()
    assert io.pgpath.name == "c1" and e.head.end_io(io) == END_DONE and io.error == "internal"


def test_a_returned_host_path_error_fails_over_without_a_reset():
    e = Env(2)
    e.head.message("error", "c0", "host-path", "1", "0")
    io = e.pick()
    # the failover clears c0 as current path (6.12 multipath.c:93) but sets no ANA_PENDING (not an ANA
    # status, :97-101) and resets nothing: the full search (:260-297) takes the first optimized path, c0 again
    assert e.head.end_io(io) == END_REQUEUE and e.c[0].state == "live"
    assert not e.head.nsheads[0].current_path
    assert e.head.map(io) == MAP_REMAPPED and io.pgpath.name == "c0"


# -- reconnect attempts ----------------------------------------------------------------------------------
@pytest.mark.parametrize("tmo,delay,attempts", [(600, 10, 60), (5, 10, 1), (0, 10, 0), (15, 2, 8), (-1, 10, -1)])
def test_max_reconnects_is_div_round_up(tmo, delay, attempts):
    # 6.1 fabrics.c:940-944, 6.12 fabrics.c:1075-1079
    e = Env(2, ctrl_loss_tmo_ns=tmo * S if tmo >= 0 else -1, timers=HeadTimers(reconnect_delay_ns=delay * S))
    assert e.head.max_reconnects() == attempts


def test_a_controller_is_deleted_after_its_last_failed_attempt():
    e = Env(2, ctrl_loss_tmo_ns=15 * S, timers=HeadTimers(reconnect_delay_ns=10 * S))
    e.head.message("fail_path", "c1")
    assert e.fire("reconnect c1") == [10 * S] and e.c[1].state == "connecting"    # attempt 1 of 2
    assert e.fire("reconnect c1") == [10 * S] and e.c[1].state == "dead"          # attempt 2: deleted at 20 s


# -- nvme_available_path ---------------------------------------------------------------------------------
@pytest.mark.parametrize("kernel,result", [("6.1", MAP_SUBMITTED), ("6.12", MAP_KILL)])
def test_available_path_needs_the_head_disk_live_since_6_12(kernel, result):
    # 6.12 multipath.c:431-432 returns false while NVME_NSHEAD_DISK_LIVE is clear (set only by
    # nvme_mpath_set_live for a path in a live ANA state, :684); 6.1 :322-340 looks at the controllers only
    e = Env(2, kernel=kernel, ana={1: {"c0": "inaccessible", "c1": "inaccessible"}})
    assert e.pick() == result


@pytest.mark.parametrize("kernel,delay,queued", [("current", 30 * S, True), ("current", 0, False),
                                                 ("6.12", 0, False)])
def test_delayed_removal_queues_until_the_head_goes(kernel, delay, queued):
    # current multipath.c: nvme_mpath_remove_disk schedules remove_work delayed_removal_secs later when the
    # last path goes, and nvme_available_path returns nvme_mpath_queue_if_no_path(head) when no controller
    # is left ("nvme-multipath: introduce delayed removal of the multipath head node", 6.16)
    e = Env(1, kernel=kernel, ctrl_loss_tmo_ns=0, timers=HeadTimers(delayed_removal_ns=delay))
    e.head.message("fail_path", "c0")
    assert e.c[0].state == "dead" and not e.head.nsheads[0].paths
    assert e.pick() == (MAP_SUBMITTED if queued else MAP_KILL)
    if queued:
        assert e.fire("remove_head 1") == [30 * S]
        assert e.pick() == MAP_KILL


# -- SPDK ------------------------------------------------------------------------------------------------
def test_spdk_no_path_is_retried_after_one_second():
    # bdev_nvme.c _bdev_nvme_submit_request: no io_path -> bdev_nvme_io_complete(-ENXIO); there, while
    # retry_count < bdev_retry_count (default 3, g_opts) and any_io_path_may_become_available, the I/O is
    # queued for 1000 ms (bdev_nvme_queue_retry_io(nbdev_ch, bio, 1000ULL))
    e = Env(2, policy="spdk-active-passive")
    e.head.message("fail_path", "c0")
    e.head.message("fail_path", "c1")
    io = IO()
    assert e.head.map(io) == MAP_SUBMITTED and not e.head.queued_bios
    assert e.fire("spdk_retry") == [S] and list(e.head.queued_bios) == [io]
    # bdev_retry_count 0: -ENXIO fails at once
    e = Env(2, policy="spdk-active-passive", timers=HeadTimers(spdk_retry_count=0))
    e.head.message("fail_path", "c0")
    e.head.message("fail_path", "c1")
    assert e.pick() == MAP_KILL


def test_spdk_counts_non_path_retries_and_takes_the_preferred_path_first():
    # bdev_nvme_io_complete_nvme_status: retry_count >= bdev_retry_count completes; bdev_nvme_check_retry_io
    # raises retry_count for a non-path error and retries the same io_path
    e = Env(3, policy="spdk-active-passive", params={"preferred": "c2"})
    assert e.names(1) == ["c2"]                # bdev_nvme_set_preferred_path: the head of io_path_list
    e.head.message("error", "c2", "medium", "4", "0")
    io = e.pick()
    for _ in range(3):
        assert e.head.end_io(io) == END_REQUEUE and e.head.map(io) == MAP_REMAPPED and io.pgpath.name == "c2"
        e.head.driver_start(io)
    assert e.head.end_io(io) == END_DONE and io.error == "medium"
    e.head.message("spdk_preferred", "c1")      # every channel's cached path cleared, c1 first
    assert e.names(1) == ["c1"]


# -- bad input per release ---------------------------------------------------------------------------------
def _doc(**nvme):
    return {"paths": {"a": {"service": "100us"}, "b": {"service": "100us"}}, "nvme": nvme}


def test_release_errors_name_the_key():
    with pytest.raises(TopologyError, match=r"\[nvme\] iopolicy kernel 6.1 has no iopolicy queue-depth"):
        topology_from_dict(_doc(kernel="6.1", iopolicy="queue-depth"), "t.toml")
    with pytest.raises(TopologyError, match=r"\[nvme\] events kernel 6.1 has no iopolicy queue-depth"):
        topology_from_dict(_doc(kernel="6.1", events=[{"at": "1ms", "iopolicy": "queue-depth"}]), "t.toml")
    with pytest.raises(TopologyError, match=r"delayed_removal: kernel 6.12 has no delayed_removal_secs"):
        topology_from_dict(_doc(kernel="6.12", delayed_removal="10s"), "t.toml")
    with pytest.raises(TopologyError, match=r"kernel: unknown kernel profile '9.9x'"):
        topology_from_dict(_doc(kernel="9.9x"), "t.toml")
    topology_from_dict(_doc(kernel="current", iopolicy="queue-depth", delayed_removal="10s"), "t.toml")


def test_cli_refuses_a_policy_the_release_lacks(tmp_path, capsys):
    topo = tmp_path / "n.toml"
    topo.write_text('[paths.a]\nservice = "100us"\n[paths.b]\nservice = "100us"\n\n[nvme]\nkernel = "6.1"\n'
                    'iopolicy = "queue-depth"\n')
    job = tmp_path / "j.fio"
    job.write_text("[j]\nrw=read\nbs=4k\nnumber_ios=10\n")
    assert main(["run", str(topo), str(job)]) == 3
    err = capsys.readouterr().err
    assert "n.toml:8: [nvme] iopolicy kernel 6.1 has no iopolicy queue-depth" in err and err.count("\n") == 1, err
    topo.write_text('[paths.a]\nservice = "100us"\n[paths.b]\nservice = "100us"\n[nvme]\n')
    assert main(["run", str(topo), str(job), "--selector", "nvme:queue-depth", "--kernel", "6.1"]) == 3
    err = capsys.readouterr().err
    assert "nvme:queue-depth: kernel 6.1 has no iopolicy queue-depth" in err and err.count("\n") == 1, err


# -- a run per release ----------------------------------------------------------------------------------
def test_a_run_per_release_and_the_lab_figures():
    # one controller fails at 20 ms; the other takes everything; round-robin shares before the loss are even
    doc = {"paths": {"a": {"service": "100us", "faults": [{"at": "20ms", "action": "fail"}]},
                     "b": {"service": "100us"}},
           "nvme": {"iopolicy": "round-robin", "ctrl_loss_tmo": "2s", "reconnect_delay": "1s"}}
    topo = topology_from_dict(doc, "t.toml")
    job = parse_fio("[j]\nrw=randread\nbs=4k\nioengine=libaio\niodepth=4\nruntime=60ms\ntime_based\n")
    figs = {}
    for kernel in ("6.1", "6.12", "current"):
        r = run_nvme(topo, job, kernel=kernel, window_ns=10 ** 6)
        figs[kernel] = lab_figures(r, since_ns=20 * 10 ** 6)
        assert figs[kernel]["errors"] == 0 and figs[kernel]["stall_ns"] < 2 * 10 ** 6
        assert 0.1 < figs[kernel]["shares"]["a"] < 0.4
    assert figs["6.1"] == figs["6.12"] == figs["current"]     # the releases agree on this topology
    with pytest.raises(TopologyError, match="nvme:queue-depth: kernel 6.1 has no iopolicy queue-depth"):
        run_nvme(topo, job, policy="queue-depth", kernel="6.1")
    assert get_profile("6.1").nvme_queue_depth is False and get_profile("6.12").nvme_queue_depth is True
