"""NVMe native multipath: each policy's choice on hand-built states (expectations worked out by hand from
drivers/nvme/host/multipath.c, the adaptive RFC and SPDK bdev_nvme.c), the head in the simulator, the
RFC scenario against its published table, failover studies, the dm-vs-NVMe report, and the [nvme] parser."""
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mpathlab import nvme
from mpathlab.cli import main
from mpathlab.nvme.head import Controller, NvmeHead
from mpathlab.scenarios.nvme import NVME_SCENARIOS, NVME_STUDIES
from mpathlab.nvme.topology import NvmeTopologyError, parse_nvme
from mpathlab.runner import run_simulation
from mpathlab.sim import fast
from mpathlab.sim.devices import PathModel, ServiceTime
from mpathlab.sim.engine import Simulation
from mpathlab.sim.host import HostModel
from mpathlab.target import END_DONE, END_REQUEUE, MAP_KILL, MAP_REMAPPED, MAP_SUBMITTED, MpathIO
from mpathlab.workload.fio import parse_fio
from mpathlab.topology import TopologyError, load_topology, topology_from_dict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class IO(MpathIO):
    def __init__(self, nsid=1, is_read=True):
        MpathIO.__init__(self, 4096)
        self.nsid = nsid
        self.is_read = is_read


class Env:
    """A head with a settable clock and submitting CPU."""

    def __init__(self, n=3, policy="numa", numa_nodes=None, cpu_nodes=(0, 0, 1, 1), namespaces=1, ana=None,
                 params=None, marginal_aware=True):
        self.t = 10 ** 12
        self.cpu = 0
        ctrls = [Controller("c%d" % i, i, (259, i), (numa_nodes or [-1] * n)[i]) for i in range(n)]
        self.head = NvmeHead(ctrls, iopolicy=policy, namespaces=namespaces, ana=ana or {},
                             host=HostModel(len(cpu_nodes), cpu_nodes=cpu_nodes), clock=lambda: self.t, cpu=lambda: self.cpu,
                             policy_params=params, marginal_aware=marginal_aware)
        self.c = ctrls

    def pick(self, nsid=1, cpu=None, is_read=True):
        if cpu is not None:
            self.cpu = cpu
        io = IO(nsid, is_read)
        r = self.head.map(io)
        if r == MAP_REMAPPED:
            assert self.head.driver_start(io)     # the driver starts it at once (a free tag)
            return io
        return r

    def names(self, k, **kw):
        out = []
        for _ in range(k):
            io = self.pick(**kw)
            out.append(io.pgpath.name)
            self.head.end_io(io)
        return out


# ------------------------------------------------------------------ numa
def test_numa_prefers_optimized_over_nearer_non_optimized():
    e = Env(3, numa_nodes=[1, 0, 1], ana={1: {"c0": "optimized", "c1": "non-optimized", "c2": "optimized"}})
    # CPU 0 is on node 0: c1 is local but non-optimized; c0 and c2 are optimized at distance 20, the first wins
    assert e.names(3, cpu=0) == ["c0", "c0", "c0"]
    # CPU 2 is on node 1: c0 is optimized and local
    assert e.names(1, cpu=2) == ["c0"]


def test_numa_picks_nearest_optimized_per_node_and_caches_it():
    e = Env(2, numa_nodes=[0, 1])
    assert e.names(2, cpu=0) == ["c0", "c0"]
    assert e.names(2, cpu=3) == ["c1", "c1"]          # node 1's own current path
    h = e.head.nsheads[0]
    assert h.current_path[0].ctrl.name == "c0" and h.current_path[1].ctrl.name == "c1"
    # load never moves numa: with 50 I/Os in flight on c0, node 0 still uses c0
    ios = [e.pick(cpu=0) for _ in range(50)]
    assert {io.pgpath.name for io in ios} == {"c0"}
    # the cached path is searched again once it stops being optimized
    e.head.message("ana", "1", "c0", "non-optimized")
    assert e.names(1, cpu=0) == ["c1"]
    assert h.current_path[0].ctrl.name == "c1"


def test_numa_without_numa_node_takes_first_usable_path_and_falls_back_to_non_optimized():
    e = Env(3, ana={1: {"c0": "inaccessible", "c1": "non-optimized", "c2": "non-optimized"}})
    assert e.names(2) == ["c1", "c1"]
    e.head.message("fail_path", "c1")          # controller reconnecting: path disabled
    assert e.names(1) == ["c2"]


# ------------------------------------------------------------------ round-robin
def test_round_robin_rotates_optimized_paths_in_list_order():
    e = Env(3, policy="round-robin")
    # no current path: the full search picks c0; then the walk starts after the current path
    assert e.names(7) == ["c0", "c1", "c2", "c0", "c1", "c2", "c0"]


def test_round_robin_skips_non_optimized_while_an_optimized_path_exists():
    e = Env(3, policy="round-robin", ana={1: {"c1": "non-optimized"}})
    assert e.names(5) == ["c0", "c2", "c0", "c2", "c0"]
    # one optimized path among non-optimized ones: it is kept
    e.head.message("ana", "1", "c2", "non-optimized")
    assert e.names(3) == ["c0", "c0", "c0"]


def test_round_robin_among_non_optimized_paths_takes_the_last_one_met():
    e = Env(3, policy="round-robin", ana={1: {"c0": "non-optimized", "c1": "non-optimized",
                                              "c2": "non-optimized"}})
    # walk from c0 meets c1 then c2: the later one wins, so the order runs backwards
    assert e.names(7) == ["c0", "c2", "c1", "c0", "c2", "c1", "c0"]


def test_round_robin_is_per_node():
    e = Env(2, policy="round-robin")
    assert e.names(1, cpu=0) == ["c0"]
    assert e.names(1, cpu=2) == ["c0"]     # node 1 has its own rotation
    assert e.names(1, cpu=0) == ["c1"]
    assert e.names(1, cpu=2) == ["c1"]


# ------------------------------------------------------------------ queue-depth
def test_queue_depth_counts_per_controller_across_namespaces():
    e = Env(2, policy="queue-depth", namespaces=2)
    a = e.pick(nsid=1)          # both idle: first path
    assert a.pgpath.name == "c0" and e.c[0].nr_active == 1
    # namespace 2 sees controller c0 busy because of namespace 1's I/O
    b = e.pick(nsid=2)
    assert b.pgpath.name == "c1"
    c = e.pick(nsid=2)          # 1:1 tie -> first path in the list
    assert c.pgpath.name == "c0" and e.c[0].nr_active == 2
    e.head.end_io(a)
    e.head.end_io(c)
    assert e.c[0].nr_active == 0 and e.c[1].nr_active == 1
    assert e.pick(nsid=1).pgpath.name == "c0"


def test_queue_depth_prefers_optimized_however_deep():
    e = Env(2, policy="queue-depth", ana={1: {"c0": "non-optimized"}})
    ios = [e.pick() for _ in range(10)]
    assert {io.pgpath.name for io in ios} == {"c1"} and e.c[1].nr_active == 10


def test_queue_depth_counts_only_while_active():
    e = Env(2, policy="numa")
    old = [e.pick() for _ in range(3)]              # numa: not counted
    assert e.c[0].nr_active == 0
    e.head.message("iopolicy", "queue-depth")
    new = e.pick()
    assert new.pgpath.name == "c0" and e.c[0].nr_active == 1    # old numa I/O is invisible to it
    for io in old:
        e.head.end_io(io)
    assert e.c[0].nr_active == 1                     # unmarked requests are not uncounted
    e.head.message("iopolicy", "numa")
    e.head.end_io(new)                               # marked under queue-depth: uncounted later
    assert e.c[0].nr_active == 0


# ------------------------------------------------------------------ marginal (proposed FPIN handling)
def test_marginal_controller_is_only_a_fallback():
    e = Env(2, policy="numa")
    e.head.message("marginal", "c0", "1")
    assert e.names(2) == ["c1", "c1"]
    e.head.message("ana", "1", "c1", "inaccessible")
    assert e.names(1) == ["c0"]                      # marginal optimized still beats nothing
    e2 = Env(3, policy="round-robin")
    e2.head.message("marginal", "c1", "1")
    assert e2.names(4) == ["c0", "c2", "c0", "c2"]
    e4 = Env(2, policy="queue-depth")
    e4.head.message("marginal", "c0", "1")
    assert [e4.pick().pgpath.name for _ in range(3)] == ["c1"] * 3     # skipped however idle c0 is
    e4.head.message("marginal", "c1", "1")
    assert e4.pick().pgpath.name == "c0"          # all marginal: the full search picks the first
    e3 = Env(2, policy="numa", marginal_aware=False)
    e3.head.message("marginal", "c0", "1")
    assert e3.names(1) == ["c0"]


# ------------------------------------------------------------------ adaptive (proposed, not merged)
def test_adaptive_bootstrap_weights_credits_and_ewma():
    e = Env(2, policy="adaptive", cpu_nodes=(0,))
    pol = e.head.policy
    # no weights yet: the first path takes every I/O until one completes
    ios = [e.pick() for _ in range(3)]
    assert [io.pgpath.name for io in ios] == ["c0"] * 3
    e.t += 30_000_000
    e.head.end_io(ios[0])                            # 30 ms: c0 scores 33, c1 none yet -> weights 64 and 1
    assert pol.weights(e.head.nsheads[0]) == {"c0": 64, "c1": 1}
    # credits: c0's are empty, refilled to 64, move on; c1 refilled to 1, move on; c0 spends one
    assert e.pick().pgpath.name == "c0"
    io1 = None
    seq = []
    for _ in range(64):
        io = e.pick()
        seq.append(io.pgpath.name)
        if io.pgpath.name == "c1":
            io1 = io
    assert seq.count("c1") == 1 and seq.index("c1") == 63
    e.t += 3_000_000
    e.head.end_io(io1)                               # c1: 3 ms -> scores 33 and 333
    assert pol.weights(e.head.nsheads[0]) == {"c0": 33 * 64 // 366, "c1": 333 * 64 // 366} == {"c0": 5, "c1": 58}
    st = pol.stat(e.head.nsheads[0].paths[0], 0, "read")
    assert st.slat_ns == 30_000_000
    e.t += 1_000_000
    e.head.end_io(ios[1])                            # within 15 s: batched only
    assert st.slat_ns == 30_000_000 and st.batch_count == 1
    e.t += 15 * 10 ** 9
    e.head.end_io(ios[2])                            # 15 s later, but this sample is over 1 s
    lat2, lat3 = 34_000_000, 15 * 10 ** 9 + 34_000_000   # 30 + 3 + 1 ms; then + 15 s
    assert lat3 > 10 ** 9 and st.nr_ignored == 1    # >1 s sample dropped
    assert st.slat_ns == 30_000_000 and st.batch == lat2


def test_adaptive_ewma_update_by_hand():
    e = Env(2, policy="adaptive", cpu_nodes=(0,), params={"weight_timeout_ns": 1000, "ewma_shift": 3})
    a = e.pick()
    e.t += 8_000_000
    e.head.end_io(a)
    st = e.head.policy.stat(e.head.nsheads[0].paths[0], 0, "read")
    assert st.slat_ns == 8_000_000
    # weights now c0 64, c1 1: the next I/O goes to c0 (credits refilled on the way)
    b = e.pick()
    assert b.pgpath.name == "c0"
    e.t += 16_000_000
    e.head.end_io(b)
    # the timeout (1 us) has passed: the batch mean, 16 ms, enters the EWMA with 7/8 on the old value
    assert st.slat_ns == (8_000_000 * 7 + 16_000_000) >> 3 == 9_000_000


# ------------------------------------------------------------------ SPDK
def test_spdk_round_robin_rr_min_io_and_active_passive():
    e = Env(3, policy="spdk-round-robin", params={"rr_min_io": 2})
    assert e.names(7) == ["c0", "c0", "c1", "c1", "c2", "c2", "c0"]
    e = Env(3, policy="spdk-active-passive", ana={1: {"c0": "non-optimized"}})
    assert e.names(3) == ["c1", "c1", "c1"]
    e.head.message("ana", "1", "c0", "optimized")    # an ANA change clears the cache: c0 is first again
    assert e.names(1) == ["c0"]


def test_spdk_round_robin_ana_change_restarts_the_count():
    # bdev_nvme_clear_current_io_path drops the cached path *and* zeroes rr_counter; an ANA change
    # clears every channel's cache that way, so the path found next takes a full rr_min_io I/Os again
    e = Env(3, policy="spdk-round-robin", params={"rr_min_io": 3})
    assert e.names(2) == ["c0", "c0"]
    e.head.message("ana", "1", "c0", "optimized")
    assert e.names(4) == ["c0", "c0", "c0", "c1"]


def test_spdk_queue_depth_counts_per_thread_qpair():
    e = Env(2, policy="spdk-queue-depth")
    held = [e.pick(cpu=0) for _ in range(3)]
    assert [io.pgpath.name for io in held] == ["c0", "c1", "c0"]
    assert e.pick(cpu=1).pgpath.name == "c0"        # CPU 1's qpairs are empty: CPU 0's load is invisible
    k = Env(2, policy="queue-depth")
    held = [k.pick(cpu=0) for _ in range(3)]
    assert k.pick(cpu=1).pgpath.name == "c1"        # the kernel counts per controller


# ------------------------------------------------------------------ head: requeue, failover, errors
def test_head_failover_requeue_and_no_path():
    e = Env(2, policy="numa")
    io = e.pick()
    assert e.head.end_io(io, "transport") == END_REQUEUE and e.c[0].state == "connecting"
    assert e.pick().pgpath.name == "c1"
    e.head.message("fail_path", "c1")
    assert e.pick() == MAP_SUBMITTED and len(e.head.queued_bios) == 1   # controllers reconnecting: wait
    e.head.message("reinstate_path", "259:1")
    assert e.head.take_queued() and e.pick().pgpath.name == "c1"
    e.c[0].state = e.c[1].state = "deleting"
    e.head.nsheads[0].paths[0].ready = e.head.nsheads[0].paths[1].ready = False
    assert e.pick() == MAP_KILL
    # a non-path error is retried on the same path, nvme_max_retries (5) times, then completes with it
    # (6.1 core.c:347-368 nvme_decide_disposition: retries >= nvme_max_retries -> COMPLETE; else RETRY)
    e2 = Env(2)
    io = e2.pick()
    for _ in range(5):
        assert e2.head.end_io(io, "medium") == END_REQUEUE
        assert e2.head.map(io) == MAP_REMAPPED and io.pgpath.name == "c0" and e2.head.driver_start(io)
    assert e2.head.end_io(io, "medium") == END_DONE and io.error == "medium"


def _topo():
    return load_topology(os.path.join(ROOT, "examples", "nvme-vs-dm.toml"))


def test_engine_runs_the_head_and_so_does_the_compiled_core():
    topo = _topo()
    jobs = parse_fio("[j]\nrw=randread\nbs=4k\nioengine=libaio\niodepth=16\nnumjobs=2\nnumber_ios=3000\n")
    res = run_simulation(topo, jobs, selector="nvme:queue-depth")
    assert res.engine == ("compiled" if fast.available() else "python")
    assert res.completed == 6000 and res.selector == "nvme:queue-depth"
    cfg = topo.nvme
    sim = Simulation("", cfg.paths, jobs.jobs, target=lambda env: cfg.target(env, "numa"))
    assert fast.eligible(sim) == "" or not fast.available()     # tests/test_fastcore_nvme.py: the same runs
    # cross-node cost: CPU 0 (node 0) -> nvme1 (node 1) pays 5 us extra
    head = sim.mp
    head._cpu = lambda: 0
    head.policy = nvme.create("round-robin", head)
    ios = [IO() for _ in range(2)]
    for x in ios:
        head.map(x)
    assert sorted(head.extra_delay_ns(x) for x in ios) == [0, 5000]


def test_dm_and_nvme_in_one_report(tmp_path):
    pytest.importorskip("matplotlib")
    out = tmp_path / "r.html"
    assert main(["report", os.path.join(ROOT, "examples", "nvme-vs-dm.toml"),
                 os.path.join(ROOT, "examples", "randwrite.fio"), "--selectors",
                 "round-robin,service-time,nvme:numa,nvme:queue-depth", "-o", str(out), "--no-progress"]) == 0
    page = out.read_text()
    import re
    for label in ("round-robin", "service-time", "nvme:numa", "nvme:queue-depth"):
        # each policy has its row in the shares table (a cell holding just its name)
        assert re.search(r"<td[^>]*>%s</td>" % re.escape(label), page), label
    assert "dmsetup status" in page and "NVMe subsystem state" in page
    assert main(["report", os.path.join(ROOT, "examples", "nvme-vs-dm.toml"),
                 os.path.join(ROOT, "examples", "randwrite.fio"), "--selectors", "nvme:bogus",
                 "-o", str(out)]) == 3


# ------------------------------------------------------------------ scenario and studies
@pytest.mark.parametrize("name,seed", [("nvme-latency-rfc", 1), ("nvme-latency-rfc", 2),
                                       ("nvme-latency-rfc-write", 1)])
def test_rfc_scenario_order_and_ratios_within_tolerance(name, seed):
    o = NVME_SCENARIOS[name].run(seed=seed)
    assert o.in_order(), o.mib
    assert o.max_deviation() <= o.scenario.tolerance, o.deviations()
    assert o.within()
    numa = o.scenario.published["numa"]
    assert abs(o.mib["numa"] / numa - 1) < 0.05      # the absolute scale of the published column


def test_ana_failover_study():
    st = NVME_STUDIES["nvme-ana-failover"]
    for pol in ("numa", "round-robin", "queue-depth", "spdk-active-passive"):
        d = st.summarize(st, pol, st.run(pol))
        assert d["errored"] == 0 and d["pending"] == 0
        assert d["shares"]["before"] == {"c0": 1.0, "c1": 0.0}, pol
        assert d["shares"]["after"] == {"c0": 0.0, "c1": 1.0}, pol


def test_marginal_and_controller_loss_studies():
    st = NVME_STUDIES["nvme-marginal-path"]
    d = st.summarize(st, "round-robin", st.run("round-robin"))
    assert d["shares"]["after"]["c1"] == 0.0 and d["shares"]["before"]["c1"] > 0.3
    d = st.summarize(st, "queue-depth", st.run("queue-depth"))
    assert d["shares"]["after"]["c1"] == 0.0
    d = st.summarize(st, "spdk-queue-depth", st.run("spdk-queue-depth"))
    assert d["shares"]["after"]["c1"] > 0.3          # SPDK does not know the flag
    st = NVME_STUDIES["nvme-controller-loss"]
    d = st.summarize(st, "round-robin", st.run("round-robin"))
    assert d["errored"] == 0 and d["pending"] == 0 and d["path_errors"]["c0"] > 0
    assert d["shares"]["lost"]["c0"] == 0.0 and d["shares"]["after"]["c0"] > 0.3


def test_cli_reproduce_and_faults(capsys):
    assert main(["faults", "nvme-marginal-path", "--selector", "numa"]) == 0
    assert "nvme-marginal-path" in capsys.readouterr().out
    assert main(["reproduce", "--list"]) == 0
    assert "nvme-latency-rfc" in capsys.readouterr().out


# ------------------------------------------------------------------ [nvme] parser
def test_nvme_section_errors_are_one_line(tmp_path):
    base = {"paths": {"a": {"service": "100us"}, "b": {"service": "100us"}}}
    for nv, msg in [({"iopolicy": "fastest"}, "iopolicy"),
                    ({"controllers": {"x": {"path": "zz"}}}, "names no [paths.*]"),
                    ({"ana_groups": [{"id": 1, "state": {"q": "optimized"}}]}, "not a controller"),
                    ({"ana_groups": [{"id": 1, "state": {"a": "sleepy"}}]}, "not an ANA state"),
                    ({"events": [{"at": "1s", "ana": {"group": 1}}]}, "events[0].ana"),
                    ({"bogus": 1}, "unknown key")]:
        with pytest.raises(TopologyError, match=msg.replace("[", r"\[").replace("*", r"\*")):
            topology_from_dict(dict(base, nvme=nv), "t.toml")
    p = tmp_path / "t.toml"
    p.write_text('[paths.a]\nservice = "100us"\n[nvme]\niopolicy = "fastest"\n')
    job = tmp_path / "j.fio"
    job.write_text("[j]\nnumber_ios=10\n")
    assert main(["run", str(p), str(job)]) == 3


_values = st.recursive(st.one_of(st.integers(-3, 70), st.text(max_size=8), st.booleans(),
                                 st.sampled_from(["optimized", "c0", "numa", "1ms", "change"])),
                       lambda c: st.one_of(st.lists(c, max_size=3), st.dictionaries(
                           st.sampled_from(["id", "at", "state", "path", "ana", "group", "controller", "c0",
                                            "namespaces", "value", "marginal", "numa_node"]), c, max_size=3)),
                       max_leaves=8)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.sampled_from(sorted(["iopolicy", "namespaces", "cpu_nodes", "node_distance",
                                               "cross_node_cost", "controllers", "ana_groups", "events",
                                               "marginal_aware", "x"])), _values, max_size=4))
def test_nvme_parser_only_raises_its_error(doc):
    paths = [PathModel("c0", (259, 0), ServiceTime(1000)), PathModel("c1", (259, 1), ServiceTime(1000))]
    try:
        parse_nvme(doc, paths, "t.toml")
    except NvmeTopologyError as e:
        assert str(e).startswith("t.toml: [nvme] ") and "\n" not in str(e)


def _loss_doc(**nv):
    faults = [{"at": "10ms", "action": "fail"}]
    return {"paths": {"a": {"service": "100us", "faults": faults},
                      "b": {"service": "100us", "faults": [{"at": "20ms", "action": "fail"},
                                                          {"at": "30ms", "action": "reinstate",
                                                           "reinstate_after": "1ms"}]}},
            "nvme": dict({"iopolicy": "round-robin"}, **nv)}


def test_ctrl_loss_tmo_counts_reconnect_attempts_and_fast_io_fail_tmo():
    # ctrl_loss_tmo is a number of reconnect attempts, max_reconnects = DIV_ROUND_UP(ctrl_loss_tmo,
    # reconnect_delay) (6.12 fabrics.c:1075-1079; 6.1 fabrics.c:940-944); each attempt comes reconnect_delay
    # after the previous failure (6.12 tcp.c:2574-2592 nvme_tcp_reconnect_or_remove, 2668-2692
    # nvme_tcp_reconnect_ctrl_work: ++nr_reconnects, then another attempt while nr_reconnects < max_reconnects,
    # else nvme_delete_ctrl).  a's link fails at 10 ms for good, b's at 20 ms until 31 ms.
    job = parse_fio("[j]\nrw=randread\nbs=4k\nioengine=libaio\niodepth=8\nruntime=60ms\ntime_based\ncontinue_on_error=io\n")
    # ctrl_loss_tmo 600 s: a keeps trying; b connects at its first attempt after 31 ms: 32 ms; no error
    r = run_simulation(topology_from_dict(_loss_doc(reconnect_delay="2ms"), "t"), job)
    assert r.errored == 0 and r.pending == 0
    assert r.status_info.split()[1:3] == ["a:connecting:optimized:nr_active=0", "b:live:optimized:nr_active=0"]
    # ctrl_loss_tmo 5 ms, reconnect_delay 2 ms: 3 attempts; a fails them at 12, 14, 16 ms and is deleted at
    # 16 ms, b at 22, 24, 26 ms, before its link returns; the waiting I/O then fails
    r = run_simulation(topology_from_dict(_loss_doc(ctrl_loss_tmo="5ms", reconnect_delay="2ms"), "t"), job)
    assert r.errored > 0 and r.pending == 0
    assert [m[:2] for m in r.messages] == [(t * 1_000_000, "reconnect %s 1" % c) for c, t in
                                           [("a", 12), ("a", 14), ("a", 16), ("b", 22), ("b", 24), ("b", 26)]] + [
        (31_000_000, "reinstate_path 259:1")]
    assert r.messages[-1][2].startswith("error")      # b was deleted; NVMe-only topologies number paths 259:N
    # one exact 5 ms timer would have deleted a at 15 ms; with reconnect_delay 10 s (the default) the one
    # attempt DIV_ROUND_UP(5 ms, 10 s) = 1 allows comes only 10 s after the loss
    # ctrl_loss_tmo 15 ms: 8 attempts: a is deleted at 26 ms, b is back at its attempt at 32 ms
    r = run_simulation(topology_from_dict(_loss_doc(ctrl_loss_tmo="15ms", reconnect_delay="2ms"), "t"), job)
    assert r.status_info.split()[1:3] == ["a:dead:optimized:nr_active=0", "b:live:optimized:nr_active=0"]
    assert [m[0] for m in r.messages if m[1] == "reconnect a 1"][-1] == 26_000_000
    # fast_io_fail_tmo 2 ms: from 22 ms no controller is worth waiting for: I/O fails until b returns
    r = run_simulation(topology_from_dict(_loss_doc(fast_io_fail_tmo="2ms", ctrl_loss_tmo=-1, reconnect_delay="2ms"),
                                          "t"), job)
    assert r.errored > 0 and r.status_info.split()[2] == "b:live:optimized:nr_active=0"
    assert r.windows == [] and r.completed > 300


_ops = st.lists(st.one_of(
    st.tuples(st.just("map"), st.integers(1, 2), st.integers(0, 3), st.booleans()),
    st.tuples(st.just("end"), st.integers(0, 40), st.sampled_from([None, None, None, "transport", "medium"])),
    st.tuples(st.just("ana"), st.integers(0, 2), st.sampled_from(["optimized", "non-optimized", "inaccessible",
                                                                   "change"])),
    st.tuples(st.just("ctrl"), st.integers(0, 2), st.sampled_from(["fail_path", "reinstate_path"])),
    st.tuples(st.just("marginal"), st.integers(0, 2), st.sampled_from(["0", "1"])),
    st.tuples(st.just("policy"), st.sampled_from(sorted(nvme.names()))),
    st.tuples(st.just("tick"), st.integers(1, 20_000_000))), max_size=60)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(sorted(nvme.names())), _ops)
def test_head_invariants_under_random_events(policy, ops):
    e = Env(3, policy=policy, numa_nodes=[0, 1, -1], namespaces=2,
            params={"weight_timeout_ns": 1_000_000, "rr_min_io": 2})
    head = e.head
    inflight = []
    for op in ops:
        if op[0] == "map":
            e.cpu = op[2]
            io = IO(op[1], op[3])
            r = head.map(io)
            if r == MAP_REMAPPED:
                ns = io.tag.ns
                # only a usable path in a live ANA state is ever chosen
                assert ns.ctrl.state == "live" and ns.ana_state in ("optimized", "non-optimized")
                assert ns.nshead.nsid == op[1]
                assert head.driver_start(io)      # the controller it was chosen on is live
                inflight.append(io)
            else:
                assert r in (MAP_SUBMITTED, MAP_KILL)
                if r == MAP_SUBMITTED:
                    assert head.available_path(head.nsheads[op[1] - 1])
                    head.take_queued()
        elif op[0] == "end" and inflight:
            io = inflight.pop(op[1] % len(inflight))
            # a request completing without error while the array's state of its group on that controller is
            # not live gets the ANA status; a non-path error ("medium") is retried on the same path
            ns = io.tag.ns
            ana_error = op[2] is None and head.target_ana(ns.nshead.anagrpid, ns.ctrl) not in ("optimized",
                                                                                                "non-optimized")
            r = head.end_io(io, op[2])
            assert r == (END_REQUEUE if op[2] in ("transport", "medium") or ana_error else END_DONE)
        elif op[0] == "ana":
            head.message("ana", "1", "c%d" % op[1], op[2])
        elif op[0] == "ctrl":
            head.message(op[2], "c%d" % op[1])
        elif op[0] == "marginal":
            head.message("marginal", "c%d" % op[1], op[2])
        elif op[0] == "policy":
            head.message("iopolicy", op[1])
        else:
            e.t += op[1]
        for c in head.controllers:
            assert c.nr_active >= 0
            assert c.nr_active <= sum(1 for io in inflight if io.tag.ns.ctrl is c)
    for io in inflight:
        head.end_io(io)
    assert all(c.nr_active == 0 for c in head.controllers)


def test_policy_switch_with_requests_in_flight():
    # found by the property test: a request started under one policy ends under another
    e = Env(2, policy="numa")
    old = e.pick()
    e.head.message("iopolicy", "spdk-queue-depth")
    new = e.pick()
    e.head.end_io(old)                      # numa's request: SPDK's per-qpair counts are untouched
    assert e.head.policy.outstanding[(0, new.pgpath)] == 1
    e.head.end_io(new)
    assert e.head.policy.outstanding[(0, new.pgpath)] == 0
