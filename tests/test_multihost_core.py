"""Many hosts in the compiled core: every multi-host run it takes gives the Python engine's results, run for run
(each host's target, selector state and dispatches included), and the runs it does not take say why."""
import os

import pytest

from mpathlab.multihost import MultiHostSimulation, load_multihost, run_multihost
from mpathlab.scenarios import HERE
from mpathlab.sim import fast
from mpathlab.sim.devices import Fault
from mpathlab.sim.host import HostModel
from mpathlab.workload.fio import load_fio, parse_fio

if not fast.available():
    pytest.skip("compiled core not built (python setup.py build_ext --inplace)", allow_module_level=True)

from test_fastcore import PER_PATH, _py_table, _tagged, assert_same_run, make  # noqa: E402

JOB = "[j]\nrw=randrw\nbs=4k\nioengine=libaio\niodepth=%d\nnumber_ios=%d\n"


def run_both(table, paths, job, hosts=3, window_ns=10 ** 6, **kw):
    """Both engines on one multi-host run: the run's results, and each host's target and dispatches."""
    jobs = parse_fio(job).jobs
    sims = [MultiHostSimulation(table, paths, jobs, hosts=hosts, engine=e, window_ns=window_ns, **kw)
            for e in ("python", "compiled")]
    a, b = (s.run() for s in sims)
    assert_same_run(a, b)
    sa, sb = sims
    assert [j.host for j in a.jobs] == [j.host for j in b.jobs]
    assert sa.host_port == sb.host_port
    for ta, tb in zip(sa.targets, sb.targets):
        assert ta.status("info") == tb.status("info") and ta.status("table") == tb.status("table")
        assert ta.current_pgpath.dev.name == tb.current_pgpath.dev.name
        pa, pb = ta.priority_groups[0].ps, tb.priority_groups[0].ps
        if hasattr(pa, "valid_paths") and not fast._py_selector(pa):
            assert [i.path.dev.name for i in pa.valid_paths] == [i.path.dev.name for i in pb.valid_paths]
    return sa, a


@pytest.mark.parametrize("selector", sorted(PER_PATH))
@pytest.mark.parametrize("mode", ["rq", "bio"])
def test_hosts_in_the_core_give_the_python_engines_run(selector, mode):
    table, paths = make(selector, mode, k=3)
    sim, a = run_both(table, paths, JOB % (8, 700), hosts=5)
    assert a.completed == 5 * 700
    # every host dispatched its own I/O, spread by its own selector (no faults: one dispatch per I/O)
    assert all(sum(row) == 700 for row in sim.host_port)


@pytest.mark.parametrize("mode", ["rq", "bio"])
@pytest.mark.parametrize("selector", ["p2c 1 delay", "prequal 0", "hst-latency 0"])
def test_python_policies_per_host_in_the_core(selector, mode):
    table = _py_table(selector, lambda i: "1", mode=mode)
    _, paths = make("queue-length", k=4)
    sim, a = run_both(table, paths, JOB % (8, 400), hosts=4)
    # each host's policy object made its own choices (its own in-flight view, own random stream)
    assert len({id(t.priority_groups[0].ps) for t in sim.targets}) == 4


@pytest.mark.parametrize("selector", sorted(PER_PATH))
@pytest.mark.parametrize("mode", ["rq", "bio"])
def test_hosts_with_tags_cpu_costs_and_slow_faults_in_the_core(selector, mode):
    table, paths = make(selector, mode, k=4)
    _tagged(paths, [2, 0, 3, 0], ["none", "none", "mq-deadline", "none"])
    paths[1].faults = [Fault(1_000_000, "slow", factor=6.0), Fault(4_000_000, "slow", factor=1.0)]
    run_both(table, paths, "[a]\nrw=randwrite\nbs=4k\nioengine=libaio\niodepth=6\nnumjobs=2\nnumber_ios=300\n",
             hosts=3, host=HostModel(2, 20_000, 30_000))


@pytest.mark.parametrize("mode", ["rq", "bio"])
def test_io_affinity_per_host_in_the_core(mode):
    table = _py_table("io-affinity 0", lambda i: ("5", "2", "8", "10")[i], mode=mode)
    _, paths = make("queue-length", k=2)
    sim, a = run_both(table, paths, "[a]\nrw=randread\nbs=4k\nioengine=libaio\niodepth=4\nnumjobs=4\nnumber_ios=200\n",
                      hosts=3)
    # the hosts' jobs run on CPUs 0-3, 4-7 and 8-11; the masks (hex) map CPUs 0-3 and 4 (p3's 0x10): host 1
    # misses on 3 CPUs x 200 I/Os, host 2 on all 4
    assert [t.priority_groups[0].ps.map_misses for t in sim.targets] == [0, 600, 800]


def test_the_shipped_scenario_in_the_core_is_the_python_run():
    topo, cfg = load_multihost(os.path.join(HERE, "hosts-8x4.toml"))
    jobs = load_fio(os.path.join(HERE, "hosts-8x4.fio"))
    for sel in ("historical-service-time", "service-time", "prequal"):
        t = topo.with_selector(sel)
        kw = t.sim_kwargs()
        kw.pop("messages")
        run_both(t.table, t.paths, open(os.path.join(HERE, "hosts-8x4.fio")).read(), hosts=cfg.count,
                 window_ns=cfg.window_ns, **kw)
        r = run_multihost(topo, cfg, jobs, selector=sel, seed=1)
        assert r.result.engine == "compiled"


@pytest.mark.parametrize("mode,selectors", [
    (m, pair) for m in ("rq", "bio") for pair in (("round-robin", "round-robin"), ("service-time", "queue-length"),
                                                  ("historical-service-time", "historical-service-time"))
] + [("rq", ("queue-length", "p2c")), ("rq", ("sed", "service-time")), ("bio", ("p2c", "sed"))])
def test_priority_groups_per_host_in_the_core(selectors, mode):
    """Two groups (ALUA's optimized and non-optimized ports): each host's first map goes through its own
    Python target (choose_pgpath), then its selector runs in C in the group its target chose."""
    feats = {"rq": "0", "bio": "2 queue_mode bio"}[mode]
    per = {"service-time": "2 %s 1 %d"}
    groups = []
    for sel, names in zip(selectors, (("p0", "p1"), ("p2", "p3"))):
        fmt = per.get(sel, "1 %s 1")
        nargs, body = fmt.split(" ", 1)
        groups.append("%s 0 2 %s %s" % (sel, nargs, " ".join(
            body % ((nm, i + 1) if "%d" in body else nm) for i, nm in enumerate(names))))
    table = "0 2097152 multipath %s 0 2 1 %s" % (feats, " ".join(groups))
    _, paths = make("queue-length", k=3)
    sim, a = run_both(table, paths, JOB % (6, 300), hosts=4)
    assert all(t.current_pg is t.priority_groups[0] for t in sim.targets)
    assert all(row[2] == row[3] == 0 for row in sim.host_port)     # the second group stays idle


def test_multihost_runs_the_core_cannot_take_say_why(capsys):
    # a fail fault: reinstate_path is a message to one target (sim/hosts.py refuses it when it builds the
    # hosts from a topology file; here the engine is asked directly)
    from mpathlab.sim import Fault as F    # noqa: N817
    _, paths = make("round-robin")
    paths[1].faults = [F(1_000_000, "fail")]
    table, _ = make("round-robin")
    sim = MultiHostSimulation(table, paths, parse_fio(JOB % (2, 50)).jobs, hosts=2, window_ns=10 ** 6)
    assert fast.eligible(sim) == "failing faults, dm messages or hardware handlers with several hosts need the Python engine"


@pytest.mark.parametrize("selector", ["queue-length", "historical-service-time"])
def test_scsi_ports_with_one_host_in_the_core_and_several_in_python(selector):
    """SCSI path devices (a device queue_depth, a shared Scsi_Host, sim/scsi.py) as the ports: one host is the
    same run in both engines; with several hosts each host has its own scsi_device and Scsi_Host per port,
    which only the Python engine models, so the core hands such runs to it."""
    from mpathlab.sim.devices import Exponential, PathModel
    from mpathlab.sim.scsi import ScsiHostModel
    names = ["p0", "p1", "p2", "p3"]
    hba = ScsiHostModel("hba0", can_queue=16)
    paths = [PathModel(n, (8, 16 * i), Exponential(100_000 * (1 + i % 2)), parallelism=4, queue_depth=3,
                       scsi_host=hba) for i, n in enumerate(names)]
    assert all(p.is_scsi for p in paths)
    table = "0 2097152 multipath 0 0 1 1 %s 0 4 1 %s" % (selector, " ".join("%s 1" % n for n in names))
    sim, a = run_both(table, paths, JOB % (8, 300), hosts=1)
    assert a.completed == 300 and sum(sim.host_port[0]) == 300
    sim = MultiHostSimulation(table, paths, parse_fio(JOB % (8, 300)).jobs, hosts=3,
                              window_ns=10 ** 6)
    assert fast.eligible(sim) == "SCSI path devices with several hosts need the Python engine"
    res = sim.run()
    assert res.engine == "python" and res.completed == 900 and all(sum(row) == 300 for row in sim.host_port)
    res.check_accounting()


from hypothesis import event, given, settings, strategies as st  # noqa: E402

_SELECTORS = ["round-robin", "queue-length", "service-time", "historical-service-time", "p2c", "sed"]


@settings(max_examples=30, deadline=None)
@given(sels=st.lists(st.sampled_from(_SELECTORS), min_size=1, max_size=2), mode=st.sampled_from(["rq", "bio"]),
       hosts=st.integers(1, 5), depth=st.integers(1, 12), ios=st.integers(5, 120), slow=st.booleans(),
       cpus=st.booleans(), tags=st.booleans(), seed=st.integers(1, 50))
def test_any_multihost_run_the_core_takes_is_the_python_run(sels, mode, hosts, depth, ios, slow, cpus, tags, seed):
    """Random multi-host runs (one or two groups, either mode, slow faults, CPU costs, path tags): whenever the
    core takes the run, its results are the Python engine's."""
    feats = {"rq": "0", "bio": "2 queue_mode bio"}[mode]
    names = [["p0", "p1"], ["p2", "p3"]] if len(sels) == 2 else [["p0", "p1", "p2", "p3"]]
    groups = []
    for sel, grp in zip(sels, names):
        if sel == "service-time":
            groups.append("%s 0 %d 2 %s" % (sel, len(grp), " ".join("%s 1 %d" % (n, i + 1) for i, n in enumerate(grp))))
        else:
            groups.append("%s 0 %d 1 %s" % (sel, len(grp), " ".join("%s 1" % n for n in grp)))
    table = "0 2097152 multipath %s 0 %d 1 %s" % (feats, len(groups), " ".join(groups))
    _, paths = make("queue-length", k=2)
    if tags:
        _tagged(paths, [2, 0, 3, 1], ["none", "none", "mq-deadline", "none"])
    if slow:
        paths[0].faults = [Fault(200_000, "slow", factor=5.0), Fault(900_000, "slow", factor=1.0)]
    kw = {"host": HostModel(2, 15_000, 20_000)} if cpus else {}
    sim = MultiHostSimulation(table, paths, parse_fio(JOB % (depth, ios)).jobs, hosts=hosts, seed=seed,
                              window_ns=10 ** 6, **kw)
    why = fast.eligible(sim)
    event("falls back: %s" % why if why else "in the core")
    if why:     # (bio groups that stamp start times differently, for one)
        return
    run_both(table, paths, JOB % (depth, ios), hosts=hosts, seed=seed, **kw)
