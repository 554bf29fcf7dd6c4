"""NVMe runs in the compiled core (nvme/core.py) are the Python engine's runs, I/O for I/O: the policies'
path choice in C, every rare event (ANA changes and log reads, controller loss, cancellation and
reconnects, deletion, error statuses and retries, iopolicy writes, marginal flags) in the one Python head."""
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mpathlab.nvme.run import lab_figures, run_nvme
from mpathlab.scenarios.nvme import NVME_STUDIES
from mpathlab.sim import fast
from mpathlab.topology import topology_from_dict
from mpathlab.workload.fio import parse_fio

from test_fastcore import assert_same_run as assert_same   # (skips the module if the core is not built)

POLICIES = ("numa", "round-robin", "queue-depth")


def _topo(nctrl=3, namespaces=2, host=None, nvme=None, paths=None, events=()):
    pdoc = {"c%d" % i: {"devt": "259:%d" % i, "parallelism": 2 + i % 3, "delay": "%dus" % (20 * (i % 2)),
                        "service": {"dist": "exponential", "mean": "%dus" % (60 + 50 * i)}} for i in range(nctrl)}
    for name, extra in (paths or {}).items():
        pdoc[name].update(extra)
    ndoc = {"iopolicy": "numa", "namespaces": namespaces, "cross_node_cost": "7us",
            "controllers": {"c%d" % i: {"path": "c%d" % i, "numa_node": i % 2 if i < 2 else -1}
                            for i in range(nctrl)}}
    ndoc.update(nvme or {})
    doc = {"paths": pdoc, "nvme": ndoc,
           "host": host or {"cpus": 4, "cpu_nodes": [0, 0, 1, 1]}}
    topo = topology_from_dict(doc, "nvme-identity")
    topo.nvme.events.extend(events)      # messages the [nvme] table has no key for (fail_path, ...)
    return topo


JOB = "[j]\nrw=randrw\nbs=4k\nioengine=libaio\niodepth=16\nnumjobs=3\nruntime=%s\ntime_based\n"


def compare(topo, job=JOB % "40ms", policy=None, **kw):
    jobs = parse_fio(job)
    a = run_nvme(topo, jobs, policy=policy, engine="python", window_ns=10 ** 6, **kw)
    b = run_nvme(topo, jobs, policy=policy, engine="compiled", window_ns=10 ** 6, **kw)
    assert_same(a, b)
    return a


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("namespaces", [1, 3])
def test_policies_alike(policy, namespaces):
    compare(_topo(namespaces=namespaces), policy=policy)


@pytest.mark.parametrize("policy", POLICIES)
def test_policies_with_cpu_costs_and_number_ios(policy):
    topo = _topo(host={"cpus": 2, "cpu_nodes": [0, 1], "submit_cost": "2us", "complete_cost": "3us"})
    compare(topo, "[a]\nrw=randread\nbs=8k\nioengine=libaio\niodepth=8\nnumjobs=3\nnumber_ios=1500\n", policy)


ANA = [(10 ** 7, "ana 1 c0 change"), (15 * 10 ** 6, "ana 1 c1 non-optimized"), (2 * 10 ** 7, "ana 1 c0 inaccessible"),
       (3 * 10 ** 7, "ana 1 c0 optimized"), (3 * 10 ** 7, "ana 1 c1 optimized")]
EVENTS = {
    "ana": ANA,
    "marginal": [(10 ** 7, "marginal c1 1"), (25 * 10 ** 6, "marginal c0 1"), (3 * 10 ** 7, "marginal c1 0")],
    "iopolicy": [(10 ** 7, "iopolicy round-robin"), (2 * 10 ** 7, "iopolicy queue-depth"), (3 * 10 ** 7, "iopolicy numa")],
    "errors": [(5 * 10 ** 6, "error c0 internal 40 0"), (10 ** 7, "error c1 medium 3 1"),
               (15 * 10 ** 6, "error c2 host-path 20 0"), (2 * 10 ** 7, "error c0 internal 500 0")],
    "loss": [(8 * 10 ** 6, "fail_path c0"), (12 * 10 ** 6, "fail_path c2"), (2 * 10 ** 7, "reinstate_path c0"),
             (3 * 10 ** 7, "reinstate_path c2")],
    "everything_down": [(5 * 10 ** 6, "fail_path c0"), (5 * 10 ** 6, "fail_path c1"), (5 * 10 ** 6, "fail_path c2"),
                        (25 * 10 ** 6, "reinstate_path c1")],
}


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("events", sorted(EVENTS))
def test_rare_events_in_the_python_head(policy, events):
    kernel = "6.1" if policy != "queue-depth" and events != "iopolicy" else "6.12"
    nvme = {"reconnect_delay": "4ms", "ana_log_delay": "1ms", "anatt": "3ms", "kernel": kernel}
    a = compare(_topo(nvme=nvme, events=EVENTS[events]), policy=policy)
    assert a.messages and all(r == "ok" for _, _, r in a.messages), a.messages


@pytest.mark.parametrize("policy", POLICIES)
def test_controller_loss_with_constant_service_ties_and_deletion(policy):
    # constant service: many requests share a submission time, so the cancellation's order is the heap's
    paths = {"c%d" % i: {"service": {"dist": "constant", "mean": "50us"}, "delay": "10us"} for i in range(3)}
    nvme = {"reconnect_delay": "3ms", "ctrl_loss_tmo": "7ms", "fast_io_fail_tmo": "2ms", "kernel": "6.12"}
    topo = _topo(paths=paths, nvme=nvme, events=[(6 * 10 ** 6, "fail_path c1"), (9 * 10 ** 6, "fail_path c0"),
                                                 (2 * 10 ** 7, "reinstate_path c0")])
    a = compare(topo, JOB % "35ms", policy)
    assert any(p["errors"] for p in a.paths)


@pytest.mark.parametrize("policy", POLICIES)
def test_device_faults_and_reconnects(policy):
    paths = {"c0": {"faults": [{"at": "8ms", "action": "fail"},
                               {"at": "20ms", "action": "reinstate", "reinstate_after": "1ms"}]},
             "c1": {"faults": [{"at": "12ms", "action": "slow", "factor": 4}]}}
    topo = _topo(paths=paths, nvme={"reconnect_delay": "5ms"})
    a = compare(topo, policy=policy)
    assert a.paths[0]["errors"] > 0


@pytest.mark.parametrize("study", sorted(NVME_STUDIES))
@pytest.mark.parametrize("policy", POLICIES)
def test_studies_alike(study, policy, monkeypatch):
    st = NVME_STUDIES[study]
    b = st.run(policy)
    monkeypatch.setenv("MPATHLAB_ENGINE", "python")
    a = st.run(policy)
    assert_same(a, b)
    assert st.summarize(st, policy, a) == st.summarize(st, policy, b)


def test_other_policies_fall_back_and_say_why():
    topo = _topo()
    jobs = parse_fio(JOB % "5ms")
    res = run_nvme(topo, jobs, policy="spdk-round-robin")
    assert res.engine == "python"
    cfg = topo.nvme
    from mpathlab.sim.engine import Simulation
    sim = Simulation("", cfg.paths, jobs.jobs, target=lambda env: cfg.target(env, "adaptive"))
    assert fast.eligible(sim) == "the NVMe I/O policy adaptive runs in the Python engine"
    topo = _topo(events=[(10 ** 6, "iopolicy spdk-queue-depth")])
    sim = Simulation("", cfg.paths, jobs.jobs, messages=topo.nvme.events,
                     target=lambda env: topo.nvme.target(env, "numa"))
    assert "spdk-queue-depth" in fast.eligible(sim)
    assert run_nvme(_topo(), jobs, policy="numa").engine == "compiled"


@pytest.mark.parametrize("kernel", ["6.1", "6.12", "current"])
def test_the_per_release_run_alike(kernel):
    # tests/test_nvme_releases.py's run per release (a controller fails at 20 ms), in both engines
    doc = {"paths": {"a": {"service": "100us", "faults": [{"at": "20ms", "action": "fail"}]},
                     "b": {"service": "100us"}},
           "nvme": {"iopolicy": "round-robin", "ctrl_loss_tmo": "2s", "reconnect_delay": "1s"}}
    topo = topology_from_dict(doc, "t.toml")
    job = parse_fio("[j]\nrw=randread\nbs=4k\nioengine=libaio\niodepth=4\nruntime=60ms\ntime_based\n")
    a = run_nvme(topo, job, kernel=kernel, window_ns=10 ** 6, engine="python")
    b = run_nvme(topo, job, kernel=kernel, window_ns=10 ** 6, engine="compiled")
    assert_same(a, b)
    assert lab_figures(a, since_ns=20 * 10 ** 6) == lab_figures(b, since_ns=20 * 10 ** 6)


@pytest.mark.parametrize("kernel", ["6.1", "6.12", "current"])
@pytest.mark.parametrize("policy", ["numa", "round-robin"])
def test_release_differences_alike(kernel, policy):
    # what the releases do differently: iopolicy writes clearing paths (6.11+), available_path needing a live
    # head disk (6.12+), delayed removal (current) -- with a controller deleted and the last one lost
    nvme = {"reconnect_delay": "3ms", "ctrl_loss_tmo": "6ms", "kernel": kernel, "anatt": "4ms",
            "ana_log_delay": "500us"}
    if kernel == "current":
        nvme["delayed_removal"] = "5ms"
    events = [(5 * 10 ** 6, "iopolicy %s" % ("round-robin" if policy == "numa" else "numa")),
              (7 * 10 ** 6, "ana 1 c1 change"), (9 * 10 ** 6, "fail_path c0"), (11 * 10 ** 6, "fail_path c2"),
              (12 * 10 ** 6, "fail_path c1"), (25 * 10 ** 6, "reinstate_path c1")]
    a = compare(_topo(nvme=nvme, events=events), JOB % "40ms", policy)
    assert a.errored or a.pending or any(p["errors"] for p in a.paths)


@pytest.mark.parametrize("policy", POLICIES)
def test_the_rfc_scenario_alike(policy):
    from mpathlab.scenarios.nvme import NVME_SCENARIOS
    from mpathlab.topology import load_topology
    from mpathlab.workload.fio import load_fio
    sc = NVME_SCENARIOS["nvme-latency-rfc"]
    topo, jobs = load_topology(sc.topology), load_fio(sc.job)
    assert_same(run_nvme(topo, jobs, policy=policy, engine="python"), run_nvme(topo, jobs, policy=policy))


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("kernel", ["6.1", "6.12"])
def test_an_error_recovery_time_alike(policy, kernel):
    # with [nvme] recovery, a lost controller holds its started requests until its error recovery cancels
    # them (nvme/run.py attach): by a device that fails (the controller learns of the loss first) and by
    # fail_path; constant service, so many held requests share a submission time
    if policy == "queue-depth" and kernel == "6.1":
        pytest.skip("queue-depth is not in 6.1")
    paths = {"c0": {"service": {"dist": "constant", "mean": "50us"},
                    "faults": [{"at": "6ms", "action": "fail"},
                               {"at": "20ms", "action": "reinstate", "reinstate_after": "1ms"}]},
             "c1": {"service": {"dist": "constant", "mean": "50us"}}}
    nvme = {"recovery": "3ms", "reconnect_delay": "4ms", "kernel": kernel}
    topo = _topo(paths=paths, nvme=nvme, events=[(10 * 10 ** 6, "fail_path c2"), (25 * 10 ** 6, "reinstate_path c2")])
    a = compare(topo, JOB % "35ms", policy)
    assert a.paths[0]["errors"] > 0 and a.failed_over["c0"] > 0 and a.failed_over["c2"] > 0


# random subsystems and event sequences: the core and the Python engine run them alike
_MESSAGES = st.sampled_from(["ana 1 c{c} inaccessible", "ana 1 c{c} optimized", "ana 1 c{c} non-optimized",
                             "ana 1 c{c} change", "marginal c{c} 1", "marginal c{c} 0", "fail_path c{c}",
                             "reinstate_path c{c}", "error c{c} internal 5 0", "error c{c} host-path 5 0",
                             "error c{c} medium 2 1", "iopolicy numa", "iopolicy round-robin",
                             "iopolicy queue-depth"])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(nctrl=st.integers(1, 4), namespaces=st.integers(1, 3), policy=st.sampled_from(POLICIES),
       const=st.booleans(), depth=st.integers(1, 24), recovery=st.sampled_from(["0us", "2ms"]),
       events=st.lists(st.tuples(st.integers(1, 30), _MESSAGES, st.integers(0, 3)), max_size=8))
def test_random_subsystems_alike(nctrl, namespaces, policy, const, depth, recovery, events):
    paths = ({"c%d" % i: {"service": {"dist": "constant", "mean": "40us"}} for i in range(nctrl)}
             if const else None)
    msgs = [(ms * 10 ** 6, text.format(c=c % nctrl)) for ms, text, c in events]
    nvme = {"kernel": "6.12", "reconnect_delay": "3ms", "ana_log_delay": "500us", "anatt": "4ms",
            "ctrl_loss_tmo": "9ms", "recovery": recovery}
    job = "[j]\nrw=randrw\nbs=4k\nioengine=libaio\niodepth=%d\nnumjobs=2\nruntime=35ms\ntime_based\n" % depth
    compare(_topo(nctrl=nctrl, namespaces=namespaces, paths=paths, nvme=nvme, events=msgs), job, policy)
