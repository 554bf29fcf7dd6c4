"""Many hosts, one array (mpathlab.multihost)."""
import os

import pytest

from mpathlab.scenarios import HERE
from mpathlab.sim import fast
from mpathlab.sim.devices import ServiceTime, PathModel
from mpathlab.sim.engine import Simulation
from mpathlab.multihost import MultiHostSimulation, load_multihost, run_multihost, tail_rows
from mpathlab.workload.fio import parse_fio
from mpathlab.topology import TopologyError

TOPO = os.path.join(HERE, "hosts-8x4.toml")
JOB = os.path.join(HERE, "hosts-8x4.fio")


def test_one_host_is_the_single_host_run():
    topo, cfg = load_multihost(TOPO)
    jobs = parse_fio("[j]\nrw=randread\nbs=4k\nioengine=libaio\niodepth=8\nnumber_ios=2000\n").jobs
    kw = topo.sim_kwargs()
    kw.pop("messages")
    for sel in ("historical-service-time", "p2c"):
        t = topo.with_selector(sel)
        a = MultiHostSimulation(t.table, t.paths, jobs, hosts=1, window_ns=10 ** 6, engine="python", **kw).run()
        b = Simulation(t.table, t.paths, jobs, window_ns=10 ** 6, engine="python", **kw).run()
        assert a.shares == b.shares and a.status_info == b.status_info
        assert a.jobs[0].read_lat.hist == b.jobs[0].read_lat.hist


@pytest.mark.parametrize("engine", ["python", "compiled"])
def test_hosts_share_a_port_queue(engine):
    """Two hosts, one single-server port at a constant 100 us, depth 1 each: the port serves them in turn,
    so every I/O but the very first waits for the other host's (200 us) and 20 I/Os take 2 ms; the same
    in the compiled core."""
    if engine == "compiled" and not fast.available():
        pytest.skip("compiled core not built")
    port = PathModel("pA", (8, 0), ServiceTime(100_000), parallelism=1)
    jobs = parse_fio("[j]\nrw=randread\nbs=4k\nioengine=libaio\niodepth=1\nnumber_ios=10\n").jobs
    sim = MultiHostSimulation("0 100 multipath 0 0 1 1 queue-length 0 1 1 pA 1", [port], jobs, hosts=2,
                              engine=engine, window_ns=10 ** 6)
    res = sim.run()
    res.check_accounting()
    assert res.engine == engine
    assert res.completed == 20 and res.runtime_ns == 2_000_000
    h0, h1 = res.jobs
    assert (h0.host, h1.host) == (0, 1)
    assert h0.read_lat.min == 100_000 and h0.read_lat.max == 200_000 and h1.read_lat.min == 200_000
    assert sum(h0.read_lat.hist.values()) == 10
    # each host has its own target and selector instance; the port sees both
    assert sim.targets[0] is not sim.targets[1]
    assert sim.targets[0].priority_groups[0].ps is not sim.targets[1].priority_groups[0].ps
    assert sim.host_port == [[10], [10]]


@pytest.mark.parametrize("engine", ["python", "compiled"])
def test_hosts_share_a_ports_clone_tags(engine):
    """The engine with tags on a shared port (`mpathlab hosts` refuses hw_queue_depth with several hosts: a
    real host has its own path device and tags): no host's clones pass them by.  Request-based, one port
    with 2 servers but one driver tag: every host's clone needs that tag (multipath_clone_and_map allocates
    it on the path's queue), so the two hosts' I/Os take turns: 20 I/Os of 100 us take 2 ms, and each host
    dispatched its 10."""
    if engine == "compiled" and not fast.available():
        pytest.skip("compiled core not built")
    port = PathModel("pA", (8, 0), ServiceTime(100_000), parallelism=2, hw_queue_depth=1)
    jobs = parse_fio("[j]\nrw=randread\nbs=4k\nioengine=libaio\niodepth=1\nnumber_ios=10\n").jobs
    sim = MultiHostSimulation("0 100 multipath 0 0 1 1 queue-length 0 1 1 pA 1", [port], jobs, hosts=2,
                              engine=engine, window_ns=10 ** 6)
    res = sim.run()
    assert res.engine == engine and res.completed == 20 and res.runtime_ns == 2_000_000
    assert res.paths[0]["peak_in_flight"] == 1
    assert sim.host_port == [[10], [10]]


def test_multihost_input_errors(tmp_path):
    base = open(TOPO).read()
    cases = {
        "no-hosts.toml": base.replace("[hosts]\ncount = 8\n", "[hostz]\ncount = 8\n"),
        "count.toml": base.replace("count = 8", "count = 0"),
        "key.toml": base.replace("count = 8", "count = 8\nracks = 2"),
        "fail.toml": base.replace('action = "slow", factor = 8', 'action = "fail"'),
    }
    msgs = {"no-hosts.toml": "needs a [hosts] section", "count.toml": "count must be", "key.toml": "unknown key(s) racks",
            "fail.toml": "only \"slow\" faults"}
    for name, text in cases.items():
        p = tmp_path / name
        p.write_text(text)
        with pytest.raises(TopologyError) as e:
            load_multihost(str(p))
        assert msgs[name] in str(e.value), (name, str(e.value))
    from mpathlab.cli import main
    assert main(["hosts", str(tmp_path / "count.toml"), JOB]) == 3
    assert main(["hosts", TOPO, JOB, "--seeds", "x"]) == 3


def test_per_host_accounting_and_port_load():
    topo, cfg = load_multihost(TOPO)
    jobs = parse_fio("[j]\nrw=randread\nbs=4k\nioengine=libaio\niodepth=4\nnumber_ios=500\n")
    r = run_multihost(topo, cfg, jobs, selector="service-time", seed=3)
    assert r.completed == 8 * 500 and len(r.host_latency) == 8
    assert all(sum(hp.values()) == 500 for hp in r.host_port)      # no faults: one dispatch per I/O
    assert all(st.n == 500 for st in r.host_latency)
    assert r.result.timeline and r.windows
    # ST balances each host's own outstanding I/O: 4 per host over 4 ports -> 8 in flight on each port
    assert all(abs(v - 8) < 0.5 for v in r.mean_in_flight().values())
    rows = tail_rows("service-time", 3, r)
    assert rows[1]["lat_p99_ns"] >= rows[0]["lat_p99_ns"]          # the worst host is no better than all


def test_scenario_herding_and_a_policy_beating_hst_and_st():
    """The README's result on hosts-8x4, over 5 seeds: HST herds (pA empties while it is slow, then gets more
    than its 16 servers), and prequal's p99 interval lies below both HST's and ST's."""
    from mpathlab.report.tails import beats
    from mpathlab.workload.fio import load_fio
    topo, cfg = load_multihost(TOPO)
    jobs = load_fio(JOB)
    rows = []
    for sel in ("historical-service-time", "service-time", "prequal"):
        for seed in range(1, 6):
            r = run_multihost(topo, cfg, jobs, selector=sel, seed=seed)
            rows.extend(tail_rows(sel, seed, r))
            if sel == "historical-service-time" and seed == 1:
                tl = r.result.timeline          # (ns, in flight per port)
                # pA slow from 100 to 200 ms: HST hosts leave it, and stay away well after it recovered
                during = [c for t, c in tl if 160e6 <= t < 320e6]
                # then they all come back, past pA's 16 servers, while pB-pD sit nearly idle
                after = [c for t, c in tl if 420e6 <= t < 600e6]
                assert sum(c["pA"] for c in during) / len(during) < 2
                assert sum(c["pA"] for c in after) / len(after) > 16
    assert beats(rows, ["historical-service-time", "service-time"], 99.0, measure="all hosts") == ["prequal"]


from hypothesis import given, settings, strategies as st  # noqa: E402

_TEXT = st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126, blacklist_characters='"\\'), max_size=6)
_VAL = st.one_of(st.integers(-3, 2000), _TEXT, st.booleans(), st.floats(allow_nan=False, allow_infinity=False),
                 st.sampled_from(["1ms", "0ms", "-1ms", "2s", "10"]))


@settings(max_examples=150, deadline=None)
@given(hosts=st.dictionaries(st.sampled_from(["count", "window", "racks"]), _VAL, max_size=3))
def test_hosts_section_loads_or_is_refused_cleanly(tmp_path_factory, hosts):
    def toml_value(v):
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, str):
            return '"%s"' % v          # the alphabet has no quote or backslash
        return repr(v)
    text = open(TOPO).read().split("[multipath]", 1)[1]
    head = "[hosts]\n" + "".join("%s = %s\n" % (k, toml_value(v)) for k, v in hosts.items())
    p = tmp_path_factory.mktemp("h") / "t.toml"
    p.write_text(head + "\n[multipath]" + text)
    try:
        topo, cfg = load_multihost(str(p))
    except TopologyError:
        return
    assert isinstance(cfg.count, int) and 1 <= cfg.count <= 1024 and cfg.window_ns > 0


@pytest.mark.parametrize("mode", ["0", "2 queue_mode bio"])
@pytest.mark.parametrize("limit", ["queue_depth", "can_queue"])
def test_each_host_has_its_own_scsi_device_on_a_shared_port(mode, limit):
    """Each real host has its own scsi_device for the LUN behind a port (its own queue_depth budget) behind
    its own Scsi_Host (its own can_queue tags); the hosts share the port's service.  Two hosts, one port with
    2 servers at a constant 100 us, queue_depth 1 (or can_queue 1) each, depth 1 each, 10 I/Os each: both
    hosts' commands are in service at once (one shared budget would allow one), so 20 I/Os take 1 ms, not
    2 ms, in either dm mode.  The core leaves such runs to the Python engine."""
    from mpathlab.sim.scsi import ScsiHostModel
    hba = ScsiHostModel("hba0", can_queue=1 if limit == "can_queue" else 0)
    port = PathModel("pA", (8, 0), ServiceTime(100_000), parallelism=2,
                     queue_depth=1 if limit == "queue_depth" else 0, scsi_host=hba)
    jobs = parse_fio("[j]\nrw=randread\nbs=4k\nioengine=libaio\niodepth=1\nnumber_ios=10\n").jobs
    table = "0 100 multipath %s 0 1 1 queue-length 0 1 1 pA 1" % mode
    sim = MultiHostSimulation(table, [port], jobs, hosts=2, window_ns=10 ** 6)
    assert fast.eligible(sim) == "SCSI path devices with several hosts need the Python engine"
    res = sim.run()
    res.check_accounting()
    assert res.completed == 20 and res.runtime_ns == 1_000_000
    assert res.paths[0]["peak_in_flight"] == 2
    assert sim.host_port == [[10], [10]]
    sds = sim.devices[0].scsi_of_host
    assert len(sds) == 2 and sds[0].host is not sds[1].host and all(sd.iodone_cnt == 10 for sd in sds)
    # one host alone: its budget (or its host's single tag) lets one command in at a time: 10 x 100 us
    one = MultiHostSimulation(table, [port], jobs * 2, hosts=1, window_ns=10 ** 6).run()
    assert one.completed == 20 and one.runtime_ns == 2_000_000
