"""NVMe runs on the block-layer host model: the [host] CPUs (costs, NUMA nodes), the controllers' queues
(hw_queue_depth per I/O queue, a full one holds the submitting task), and failover of I/O in flight when a
controller is lost or its path leaves the ANA live states.  Every expectation is worked out by hand in the
comments from the kernel's rules (drivers/nvme/host/multipath.c, core.c, block/blk-mq.c of 6.1)."""
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpathlab.cli import main
from mpathlab.nvme.run import attach
from mpathlab.runner import run_simulation
from mpathlab.sim.engine import Simulation
from mpathlab.workload.fio import parse_fio
from mpathlab.topology import TopologyError, load_topology, topology_from_dict

MS = 1_000_000
US = 1_000


def doc(nvme=None, host=None, **paths):
    d = {"paths": paths or {"a": {"service": "1ms", "parallelism": 8}, "b": {"service": "1ms", "parallelism": 8}},
         "nvme": nvme or {"iopolicy": "round-robin"}}
    if host is not None:
        d["host"] = host
    return d


def jobs(text):
    return parse_fio("[j]\nioengine=libaio\nrw=randread\nbs=4k\n" + text)


# ------------------------------------------------------------------ task 1: one host model
def test_full_controller_queue_holds_the_submitter():
    # c0 (path a) has one tag in its one I/O queue ([host] cpus = 1 -> one queue); c1 is unlimited; both 1 ms.
    # round-robin alternates c0, c1.  One job, iodepth 4, 6 I/Os:
    # t=0  io1 -> c0 (tag), io2 -> c1, io3 -> c0: no tag, the task sleeps in tag allocation; io4 is not
    #      submitted although c1 is idle (the sleeping task holds every later I/O, whatever its path)
    # t=1  io1 done: its tag goes to io3 (started now); io2 done; the task wakes: io4 -> c1, io5 -> c0: no
    #      tag, sleeps
    # t=2  io3 done, tag to io5; io4 done; task wakes: io6 -> c1
    # t=3  io5 and io6 done.  Latencies: 1, 1, 2, 1, 2, 1 ms; the run ends at 3 ms.
    t = doc(host={"cpus": 1}, a={"service": "1ms", "parallelism": 8, "hw_queue_depth": 1},
            b={"service": "1ms", "parallelism": 8})
    res = run_simulation(topology_from_dict(t, "t.toml"), jobs("iodepth=4\nnumber_ios=6\n"))
    assert res.completed == 6 and res.runtime_ns == 3 * MS
    lat = res.jobs[0].read_lat
    assert (lat.min, lat.max, lat.mean) == (1 * MS, 2 * MS, pytest.approx(8 / 6 * MS))
    by = {p["name"]: p for p in res.paths}
    assert by["a"]["completed"] == 3 and by["b"]["completed"] == 3
    assert by["b"]["peak_in_flight"] == 1          # c1 never had two: the task slept on c0's tag
    # without the tag limit: io1-4 at t=0, io5-6 at t=1, done at 2 ms
    t["paths"]["a"].pop("hw_queue_depth")
    free = run_simulation(topology_from_dict(t, "t.toml"), jobs("iodepth=4\nnumber_ios=6\n"))
    assert free.runtime_ns == 2 * MS


def test_queue_depth_counts_requests_the_driver_started():
    # nr_active is counted in nvme_start_request (queue_rq), not when the path is chosen: a request
    # waiting for a tag is not in flight on the controller.  Same topology as above, queue-depth policy:
    # t=0  io1 -> c0 (both at 0, first wins; nr_active c0=1), io2 -> c1 (c1=0 < 1), io3: c0=1, c1=1 ->
    #      c0 (first), no tag: sleeps, not counted.  If it were counted, c0 would read 2 here.
    t = doc(nvme={"iopolicy": "queue-depth"}, host={"cpus": 1},
            a={"service": "1ms", "parallelism": 8, "hw_queue_depth": 1}, b={"service": "1ms", "parallelism": 8})
    topo = topology_from_dict(t, "t.toml")
    sim = Simulation("", topo.nvme.paths, jobs("iodepth=3\nnumber_ios=3\n").jobs,
                     target=lambda env: topo.nvme.target(env), host=topo.host, engine="python")
    attach(sim)
    seen = []
    orig = sim.mp.map

    def spy(io):
        seen.append(tuple(c.nr_active for c in sim.mp.controllers))
        return orig(io)
    sim.mp.map = spy
    res = sim.run()
    res.check_accounting()
    assert seen == [(0, 0), (1, 0), (1, 1)]
    assert [p["completed"] for p in res.paths] == [2, 1]
    assert all(c.nr_active == 0 for c in sim.mp.controllers)


def test_nr_hw_queues_defaults_to_one_io_queue_per_cpu():
    t = doc(host={"cpus": 4}, a={"service": "1ms", "parallelism": 8, "hw_queue_depth": 2},
            b={"service": "1ms", "parallelism": 8, "hw_queue_depth": 2, "nr_hw_queues": 1})
    cfg = topology_from_dict(t, "t.toml").nvme
    assert [p.nr_hw_queues for p in cfg.paths] == [4, 1]
    assert [p.nr_tags for p in cfg.paths] == [8, 2]
    # 4 jobs on CPUs 0-3, iodepth 2 each, only on c0 (numa, TCP: first path): each CPU's queue holds 2, so
    # nobody sleeps: 8 at once, all done at 1 ms
    t["nvme"] = {"iopolicy": "numa"}
    res = run_simulation(topology_from_dict(t, "t.toml"), jobs("iodepth=2\nnumjobs=4\nnumber_ios=2\n"))
    assert res.runtime_ns == 1 * MS and res.paths[0]["peak_in_flight"] == 8


def test_cpu_cost_is_a_server_for_nvme_too():
    # The dm test's trace through the NVMe head (tests/test_blockqueue.py): one CPU, submit 100 us,
    # complete 200 us; one controller, 1 ms; iodepth 2, 2 I/Os.
    # t=0 io1 on the CPU to 0.1, then to c0 (done 1.1); io2 on the CPU 0.1-0.2 (done 1.2);
    # io1's completion 1.1-1.3, io2's waits for it: 1.3-1.5.  Latencies 1.3 and 1.4 ms, end 1.5 ms.
    t = doc(nvme={"iopolicy": "numa"}, host={"cpus": 1, "submit_cost": "100us", "complete_cost": "200us"},
            a={"service": "1ms", "parallelism": 8})
    res = run_simulation(topology_from_dict(t, "t.toml"), jobs("iodepth=2\nnumber_ios=2\n"))
    lat = res.jobs[0].read_lat
    assert (lat.min, lat.max) == (1_300 * US, 1_400 * US)
    assert res.jobs[0].end_ns == 1_500 * US
    # CPU-bound: 1 CPU at 0.5 ms per I/O caps 2000 I/Os at 1 s whatever the controller does
    t = doc(nvme={"iopolicy": "queue-depth"}, host={"cpus": 1, "submit_cost": "200us", "complete_cost": "300us"},
            a={"service": "1ns", "parallelism": 64}, b={"service": "1ns", "parallelism": 64})
    res = run_simulation(topology_from_dict(t, "t.toml"), jobs("iodepth=8\nnumber_ios=2000\n"))
    assert res.runtime_ns == pytest.approx(2000 * 500 * US, rel=0.01)


def test_numa_uses_the_node_of_the_submitting_cpu_from_the_host_model():
    # [host] 2 CPUs on nodes 0 and 1; c0 on node 0, c1 on node 1.  3 clones run on CPUs 0, 1, 2; CPU 2 is
    # CPU 0 of this host (2 mod 2), node 0.  numa: each node's nearest optimized path: 200 I/Os on c0, 100 on c1.
    def run(cpu_nodes):
        t = doc(nvme={"iopolicy": "numa", "controllers": {"c0": {"path": "a", "numa_node": 0},
                                                          "c1": {"path": "b", "numa_node": 1}}},
                host={"cpus": 2, "cpu_nodes": cpu_nodes})
        res = run_simulation(topology_from_dict(t, "t.toml"), jobs("iodepth=4\nnumjobs=3\nnumber_ios=100\n"))
        return [p["completed"] for p in res.paths]
    assert run([0, 1]) == [200, 100]
    assert run([1, 0]) == [100, 200]


def test_host_and_nvme_node_errors(tmp_path):
    with pytest.raises(TopologyError, match=r"cpu_nodes belongs in \[host\]"):
        topology_from_dict(doc(nvme={"cpu_nodes": [0]}), "t.toml")
    with pytest.raises(TopologyError, match=r"\[host\] cpu_nodes must list one node number .* 2 CPU"):
        topology_from_dict(doc(host={"cpus": 2, "cpu_nodes": [0]}), "t.toml")
    with pytest.raises(TopologyError, match=r"node_distance must be a square table"):
        topology_from_dict(doc(host={"cpus": 2, "cpu_nodes": [0, 1], "node_distance": [[10]]}), "t.toml")
    with pytest.raises(TopologyError, match=r"c1.numa_node 1: the host has node\(s\) 0 to 0"):
        topology_from_dict(doc(nvme={"controllers": {"c0": {"path": "a"}, "c1": {"path": "b", "numa_node": 1}}}),
                           "t.toml")
    p = tmp_path / "t.toml"
    p.write_text('[host]\ncpus = 2\ncpu_nodes = [0]\n[paths.a]\nservice = "100us"\n[nvme]\n')
    job = tmp_path / "j.fio"
    job.write_text("[j]\nnumber_ios=10\n")
    assert main(["run", str(p), str(job)]) == 3


# ------------------------------------------------------------------ task 2: I/O in flight
def _sim(t, fio, messages, policy="round-robin"):
    topo = topology_from_dict(t, "t.toml")
    sim = Simulation("", topo.nvme.paths, jobs(fio).jobs, target=lambda env: topo.nvme.target(env, policy),
                     host=topo.host, messages=messages, engine="python")
    attach(sim)
    res = sim.run()
    res.check_accounting()
    return sim, res


@pytest.mark.parametrize("at_us", [200, 700])
def test_lost_controller_fails_over_its_started_io_at_once(at_us):
    # c0: 0.5 ms transport delay, 1 server, 10 ms; c1: 8 servers, 10 ms.  round-robin, iodepth 4:
    # io1 -> c0, io2 -> c1, io3 -> c0, io4 -> c1 at t=0.  At 0.5 ms io1 and io3 reach c0: io1 is served
    # (to 10.5), io3 waits.  c0's link is lost at `at`: error recovery cancels io1 and io3 (at 0.2 ms both
    # still travel, at 0.7 ms one is served and one queued); each fails over (requeue list, resubmitted)
    # to c1, the only live path: done at at + 10 ms.  io2, io4 done at 10 ms.  Nothing errors.
    t = doc(a={"service": "10ms", "parallelism": 1, "delay": "500us"}, b={"service": "10ms", "parallelism": 8})
    at = at_us * US
    sim, res = _sim(t, "iodepth=4\nnumber_ios=4\n", [(at, "fail_path a")])
    assert res.errored == 0 and res.completed == 4
    assert [p["completed"] for p in res.paths] == [0, 4] and res.paths[0]["errors"] == 2
    lat = res.jobs[0].read_lat
    assert (lat.min, lat.max) == (10 * MS, at + 10 * MS)
    assert sim.devices[0].busy == 0 and not sim.devices[0].queue     # c0's server was freed at 10.5 ms
    # before this change the cancelled I/O completed on the lost controller: c0 would show 2 completions


def test_ana_inaccessible_in_flight_io_fails_over_without_a_reset():
    # ANA group 1: c0 optimized, c1 non-optimized; numa sends io1, io2 to c0 (10 ms).  At 1 ms c0 becomes
    # inaccessible and c1 optimized.  io1, io2 complete at 10 ms with the ANA status (the controller answers
    # with its state at completion): failover, resubmitted on c1, done at 20 ms.  c0 stays live (an ANA
    # error resets nothing); new I/O goes to c1.
    t = doc(nvme={"iopolicy": "numa", "ana_groups": [{"id": 1, "state": {"a": "optimized", "b": "non-optimized"}}]},
            a={"service": "10ms", "parallelism": 8}, b={"service": "10ms", "parallelism": 8})
    sim, res = _sim(t, "iodepth=2\nnumber_ios=2\n", [(1 * MS, "ana 1 a inaccessible"),
                                                     (1 * MS, "ana 1 b optimized")], policy="numa")
    assert res.errored == 0 and [p["completed"] for p in res.paths] == [0, 2]
    lat = res.jobs[0].read_lat
    assert (lat.min, lat.max) == (20 * MS, 20 * MS)
    assert sim.mp.by_name["a"].state == "live" and sim.mp.by_name["a"].nr_active == 0
    # a path that only goes through "change" and back before the I/O completes keeps it
    sim, res = _sim(t, "iodepth=2\nnumber_ios=2\n", [(1 * MS, "ana 1 a change"), (2 * MS, "ana 1 a optimized")],
                    policy="numa")
    assert [p["completed"] for p in res.paths] == [2, 0] and res.jobs[0].read_lat.max == 10 * MS


def test_cancelled_io_waits_for_a_tag_then_fails_at_queue_rq():
    # c0 has one tag; iodepth 2, numa (both I/Os to c0): io1 starts, io2 sleeps for the tag.  At 1 ms c0 is
    # lost: io1 is cancelled (fails over to c1, done at 11 ms); its tag goes to io2, whose queue_rq finds
    # the controller not live and fails it over at once too (nvme_fail_nonready_command): done at 11 ms.
    t = doc(nvme={"iopolicy": "numa"}, host={"cpus": 1},
            a={"service": "10ms", "parallelism": 8, "hw_queue_depth": 1}, b={"service": "10ms", "parallelism": 8})
    sim, res = _sim(t, "iodepth=2\nnumber_ios=2\n", [(1 * MS, "fail_path a")], policy="numa")
    assert res.errored == 0 and [p["completed"] for p in res.paths] == [0, 2]
    assert res.jobs[0].read_lat.max == 11 * MS and res.paths[0]["errors"] == 2


@pytest.mark.parametrize("extra,word", [("cpus = 2\ncpu_nodes = [0, 1, 1]\n", "cpu_nodes"),
                                        ("cpu_nodes = [true]\n", "cpu_nodes"),
                                        ("cpus = 2\ncpu_nodes = [0, 1]\nnode_distance = [[10, 20]]\n",
                                         "node_distance")])
def test_host_node_keys_rejected_with_their_line(tmp_path, extra, word):
    p = tmp_path / "t.toml"
    p.write_text('[paths.a]\nservice = "1ms"\n\n[host]\n' + extra + '[nvme]\n')
    with pytest.raises(TopologyError) as e:
        load_topology(str(p))
    msg = str(e.value)
    line = 5 + next(i for i, l in enumerate(extra.splitlines()) if l.startswith(word))
    assert msg.split(": ", 1)[0].endswith("t.toml:%d" % line) and word in msg and "\n" not in msg


_node_values = st.one_of(st.integers(-2, 3), st.booleans(), st.text(max_size=3),
                         st.lists(st.one_of(st.integers(-1, 3), st.booleans(),
                                            st.lists(st.integers(0, 300), max_size=3)), max_size=4))


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 4), st.one_of(st.none(), _node_values), st.one_of(st.none(), _node_values))
def test_host_node_keys_construct_or_are_refused(cpus, nodes, dist):
    host = {"cpus": cpus}
    if nodes is not None:
        host["cpu_nodes"] = nodes
    if dist is not None:
        host["node_distance"] = dist
    try:
        topo = topology_from_dict(doc(host=host), "t.toml")
    except TopologyError as e:
        assert str(e).startswith("t.toml: [host] ") and "\n" not in str(e)
        return
    h = topo.host
    assert len(h.cpu_nodes) == cpus and all(0 <= h.node_of_cpu(c) < h.nr_nodes for c in range(2 * cpus))
    assert all(h.distance(a, b) >= 1 for a in range(h.nr_nodes) for b in range(h.nr_nodes))


@pytest.mark.parametrize("text,line,word", [
    ('[paths.a]\nservice = "1ms"\n[nvme]\ncpu_nodes = [0]\n', 4, "cpu_nodes belongs in [host]"),
    ('[paths.a]\nservice = "1ms"\n[nvme.controllers.a]\nmarginal = false\nnuma_node = 1\n', 5, "numa_node 1"),
])
def test_nvme_node_errors_name_their_line(tmp_path, text, line, word):
    p = tmp_path / "t.toml"
    p.write_text(text)
    with pytest.raises(TopologyError) as e:
        load_topology(str(p))
    msg = str(e.value)
    assert msg.split(": ", 1)[0].endswith("t.toml:%d" % line) and word in msg and "\n" not in msg


def test_failed_over_io_sleeps_in_the_requeue_work_not_in_the_task():
    # c0 (lost at 0.5 ms), c1 (one tag, 10 ms), c2 (1 ms); round-robin c0, c1, c2; iodepth 3, 4 I/Os; 1 ms windows.
    # t=0    io1 -> c0, io2 -> c1 (its tag), io3 -> c2
    # t=0.5  c0 lost: io1 cancelled and failed over; the requeue work resubmits it: the walk after c2 skips
    #        c0 and picks c1, which has no tag: the kworker sleeps, the fio task does not
    # t=1    io3 done: the task submits io4 -> c2 (after c1, c2), dispatched in the [1, 2) ms window; done at 2
    #        (were the task asleep with io1, io4 would wait until io1 gets c1's tag at 10 ms)
    # t=10   io2 done: its tag goes to io1, done at 20
    t = doc(host={"cpus": 1}, a={"service": "1ms", "parallelism": 8},
            b={"service": "10ms", "parallelism": 8, "hw_queue_depth": 1}, c={"service": "1ms", "parallelism": 8})
    topo = topology_from_dict(t, "t.toml")
    sim = Simulation("", topo.nvme.paths, jobs("iodepth=3\nnumber_ios=4\n").jobs,
                     target=lambda env: topo.nvme.target(env, "round-robin"), host=topo.host,
                     messages=[(500 * US, "fail_path a")], window_ns=1 * MS, engine="python")
    attach(sim)
    res = sim.run()
    res.check_accounting()
    assert res.errored == 0 and [p["completed"] for p in res.paths] == [0, 2, 2]
    assert dict(res.windows).get(1 * MS, {}).get("c", 0) == 1
    assert res.runtime_ns == 20 * MS and res.jobs[0].read_lat.max == 20 * MS
    assert not sim.mp._requeued and not sim.blk._worker_sleepers
