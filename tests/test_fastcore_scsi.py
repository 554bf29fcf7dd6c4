"""SCSI paths (sim/scsi.py) in the compiled core: run for run the same as the Python engine, for every
fault study, the hand-computed SCSI runs of tests/test_scsi_paths.py and random SCSI topologies."""
from __future__ import annotations

import random

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python < 3.11
    import tomli as tomllib  # type: ignore

from mpathlab.sim import fast
from mpathlab.sim.engine import Simulation
from mpathlab.sim.faults import SELECTORS, STUDIES
from mpathlab.sim.host import HostModel
from mpathlab.sim.scsi import ERRORS
from mpathlab.topology import topology_from_dict
from mpathlab.workload.fio import parse_fio

if not fast.available():
    pytest.skip("compiled core not built (python setup.py build_ext --inplace)", allow_module_level=True)

from test_fastcore import compare  # noqa: E402  (the identity check every mode of the core uses)
from test_scsi_paths import job, path, table  # noqa: E402  (the SCSI topologies checked by hand there)


@pytest.mark.parametrize("study", sorted(STUDIES))
@pytest.mark.parametrize("selector", SELECTORS)
def test_every_fault_study_is_the_same_run_in_the_core(study, selector):
    st = STUDIES[study]
    table_line, paths, text, kw = st.build(selector)
    assert any(p.is_scsi for p in paths)
    a = compare(table_line, paths, text, record_completions=True, **kw)
    assert a.done_at and a.done_at == sorted(a.done_at)
    # the study's own figures (stall, gaps, recovery, retried I/O, shares) from either engine
    py, core = st.run(selector, engine="python"), st.run(selector, engine="compiled")
    assert (py.engine, core.engine) == ("python", "compiled")
    assert py.fault == core.fault
    if study in ("path-fail-reinstate", "path-offline", "all-fail-queue", "all-fail-queue-bio"):
        assert core.fault["retried"] > 0        # the failed path's I/O came back through end_io


def _compare_topology(text: str, job_text: str, **kw):
    t = topology_from_dict(tomllib.loads(text), "t.toml")
    return compare(t.table, t.paths, job_text, record_completions=True, **{**t.sim_kwargs(), **kw})


OFFLINE = '{ at = "10500us", action = "offline" }, { at = "30ms", action = "reinstate" }'
HAND_RUNS = {
    # budget refusals: dm requeues (request-based), the request waits in the path queue (bio-based)
    "queue-depth-rq": (table(["sda"]) + path("sda", 0, qd=2), job(4, 8)),
    "queue-depth-bio": (table(["sda"], features="2 queue_mode bio") + path("sda", 0, qd=2), job(4, 8)),
    # a host's can_queue shared by two LUNs with blk-mq's fair share, in both modes
    "shared-host-rq": (table(["sda", "sdb"]) + path("sda", 0, host="h0", par=16) + path("sdb", 16, host="h0", par=16)
                       + "[scsi_hosts.h0]\ncan_queue = 8\n", job(16, 32)),
    "shared-host-bio": (table(["sda", "sdb"], features="2 queue_mode bio") + path("sda", 0, host="h0", par=16)
                        + path("sdb", 16, host="h0", par=16) + "[scsi_hosts.h0]\ncan_queue = 6\n", job(16, 64)),
    "offline-bio": (table(["sda", "sdb"], features="2 queue_mode bio")
                    + path("sda", 0, qd=1, faults='{ at = "500us", action = "offline" }') + path("sdb", 16), job(4, 8)),
    "offline-rq": (table(["sda", "sdb"]) + path("sda", 0, faults='{ at = "2500us", action = "offline" }')
                   + path("sdb", 16), job(2, 20)),
    "delete-rq": (table(["sda", "sdb"]) + path("sda", 0, faults='{ at = "2500us", action = "delete" }')
                  + path("sdb", 16), job(2, 20)),
    "queue-if-no-path-bio": (table(["sda", "sdb"], features="3 queue_if_no_path queue_mode bio")
                             + path("sda", 0, faults=OFFLINE) + path("sdb", 16, faults=OFFLINE), job(2, 30)),
    "no-queueing-bio": (table(["sda", "sdb"], features="2 queue_mode bio") + path("sda", 0, faults=OFFLINE)
                        + path("sdb", 16, faults=OFFLINE), job(2, extra="continue_on_error=io\n")),
}


@pytest.mark.parametrize("name", sorted(HAND_RUNS))
def test_the_hand_computed_scsi_runs_are_the_same_run_in_the_core(name):
    text, job_text = HAND_RUNS[name]
    a = _compare_topology(text, job_text)
    assert a.completed > 0


@pytest.mark.parametrize("mode", ["0", "2 queue_mode bio"])
@pytest.mark.parametrize("name", sorted(ERRORS))
def test_error_classes_and_midlayer_retries_are_the_same_run_in_the_core(name, mode):
    # every command of sda fails with the class from 0 on (a retried class goes round the device with
    # device_blocked, 21 ms, before dm sees it); sda is reinstated at 25 ms and from 30 ms every 3rd
    # command fails: the core asks the Python ScsiDevice for each command's end while a class is set
    f = ('{ at = "0", action = "error", error = "%s" }, { at = "25ms", action = "reinstate" }, '
         '{ at = "30ms", action = "error", error = "%s", every_nth = 3 }' % (name, name))
    a = _compare_topology(table(["sda", "sdb"], features=mode) + path("sda", 0, faults=f) + path("sdb", 16),
                          job(2, extra="continue_on_error=io\n"))
    assert sum(p["errors"] for p in a.paths) > 0


@pytest.mark.parametrize("seed", range(16))
def test_random_scsi_topologies_are_the_same_run_in_the_core(seed):
    # random LUNs on random hosts (can_queue 0 = unlimited), both dm modes, queueing or not, faults of
    # every kind a SCSI path has, several jobs on several CPUs
    rng = random.Random(1000 + seed)
    n = rng.randint(2, 4)
    names = ["sd%s" % "abcd"[i] for i in range(n)]
    hosts = {"h%d" % i: rng.choice([0, 2, 5, 8, 32]) for i in range(rng.randint(1, 3))}
    text = table(names, features=rng.choice(["0", "2 queue_mode bio", "1 queue_if_no_path",
                                             "3 queue_if_no_path queue_mode bio"]),
                 selector=rng.choice(["round-robin", "queue-length", "service-time", "historical-service-time"]))
    for i, nm in enumerate(names):
        faults = []
        for _ in range(rng.randint(0, 3)):
            action = rng.choice(["offline", "delete", "online", "fail", "slow", "error", "reinstate"])
            extra = {"slow": ", factor = 3.0", "error": ', error = "%s", every_nth = %d' % (
                rng.choice(sorted(ERRORS)), rng.randint(1, 4))}.get(action, "")
            faults.append('{ at = "%dus", action = "%s"%s }' % (rng.randint(100, 25000), action, extra))
        if faults:
            faults.append('{ at = "26ms", action = "reinstate" }')
        text += path(nm, 16 * i, qd=rng.choice([None, 1, 2, 4, 8]), host=rng.choice(sorted(hosts)),
                     service="%dus" % rng.randint(50, 900), par=rng.randint(1, 8), faults=", ".join(faults))
    for h, cq in hosts.items():
        if 'scsi_host = "%s"' % h in text:
            text += "[scsi_hosts.%s]\n" % h + ("can_queue = %d\n" % cq if cq else "")
    jobs = "".join("[j%d]\nrw=randrw\nbs=4k\nioengine=libaio\niodepth=%d\nruntime=30ms\ntime_based\n"
                   "continue_on_error=io\n" % (k, rng.choice([1, 4, 16])) for k in range(rng.randint(1, 3)))
    kw = {}
    if rng.random() < 0.5:      # the host's CPUs: completions and queue runs wait for them (sim/host.py)
        kw["host"] = HostModel(cpus=rng.randint(1, 3), submit_ns=rng.choice([0, 2000]), complete_ns=3000,
                               wake_ns=rng.choice([0, 1000]), work_latency_ns=rng.choice([0, 5000]))
    _compare_topology(text, jobs, drain_ns=200_000_000, **kw)


def test_scsi_runs_are_eligible_and_a_scsi_host_subclass_is_not():
    t = topology_from_dict(tomllib.loads(HAND_RUNS["shared-host-rq"][0]), "t.toml")
    assert fast.eligible(Simulation(t.table, t.paths, parse_fio(job(4, 8)).jobs, **t.sim_kwargs())) == ""
    host = t.paths[0].scsi_host
    host.__class__ = type("MyHost", (type(host),), {})
    assert "MyHost" in fast.eligible(Simulation(t.table, t.paths, parse_fio(job(4, 8)).jobs, **t.sim_kwargs()))


def test_the_kernel_lab_scsi_cells_are_the_same_run_in_the_core():
    # the validation's SCSI cells (scsi_debug LUNs on shared hosts, the guest's CPUs), 200 ms each
    import json
    import os
    from mpathlab.validate import cell_host, path_models, table_line
    results = os.path.join(os.path.dirname(__file__), "..", "validation", "kernel-lab", "results.json")
    with open(results, encoding="utf-8") as f:
        cells = [c for c in json.load(f) if any(p.get("kind") == "scsi" for p in c["paths"])]
    assert cells
    seen = set()
    for c in cells:
        key = (table_line(c), c["iodepth"], str(c["paths"]))
        if key in seen:
            continue
        seen.add(key)
        text = "[j]\nioengine=libaio\nrw=randwrite\nbs=4k\niodepth=%d\nruntime=200ms\ntime_based\n" % int(c["iodepth"])
        a = compare(table_line(c), path_models(c), text, host=cell_host(c)[0])
        assert a.completed > 0


def test_the_core_hands_the_scsi_devices_state_back():
    # after a run the ScsiDevice and ScsiHost objects hold the core's counters, as the Python engine's do
    text, job_text = HAND_RUNS["shared-host-rq"]
    t = topology_from_dict(tomllib.loads(text), "t.toml")
    sims = [Simulation(t.table, t.paths, parse_fio(job_text).jobs, engine=e, **t.sim_kwargs())
            for e in ("python", "compiled")]
    for s in sims:
        s.run()
    (py_h,), (c_h,) = (s.blk.scsi.hosts for s in sims)
    assert (py_h.tags_used, len(py_h.active)) == (c_h.tags_used, len(c_h.active)) == (0, 2)
    for a, b in zip(*(s.devices for s in sims)):
        fields = ("state", "device_busy", "tags_held", "restarts", "device_blocked", "nr_cmds", "iodone_cnt",
                  "ioerr_cnt", "rejected", "run_pending")
        assert [getattr(a.scsi, f) for f in fields] == [getattr(b.scsi, f) for f in fields]
        assert a.scsi.nr_cmds == a.completed > 0


@pytest.mark.parametrize("mode", ["0", "2 queue_mode bio"])
def test_device_state_faults_on_plain_devices_are_the_same_run_in_the_core(mode):
    # offline and delete on a null_blk-like device: it fails; online: it works again (no SCSI device)
    from mpathlab.sim.devices import Exponential, Fault, PathModel
    faults = [[Fault(2_000_000, "offline"), Fault(6_000_000, "online"), Fault(7_000_000, "reinstate")],
              [Fault(3_000_000, "delete"), Fault(8_000_000, "reinstate")], [Fault(4_000_000, "error", error="medium")]]
    paths = [PathModel("sd%s" % c, (8, 16 * i), Exponential(200_000), parallelism=2, faults=faults[i])
             for i, c in enumerate("abc")]
    tb = "0 1048576 multipath %s 0 1 1 round-robin 0 3 1 sda 1 sdb 1 sdc 1" % mode
    a = compare(tb, paths, job(8, extra="continue_on_error=io\n"), window_ns=1_000_000)
    assert not any(p.is_scsi for p in paths) and sum(p["errors"] for p in a.paths) > 0


def test_refused_ios_scheduled_when_the_run_stalls_count_as_pending_in_both_engines():
    # One SCSI path whose every command fails DID_ERROR (the midlayer retries it on the device) goes offline
    # at 3.9 ms; request-based, queue_if_no_path.  At 6.9 ms the run stops on the requeue list (no path can
    # come back) in the same instant as a queue run hands 4 retried commands to scsi_queue_rq, which refuses
    # them by the device state: their completions are still scheduled, so they are pending, as are the
    # other 4 I/Os, in both engines (compare() checks each engine's accounting).
    from mpathlab.sim.loop import EV_CALL
    text = table(["sda"], features="1 queue_if_no_path") + path(
        "sda", 0, qd=4, service="900us", par=4,
        faults='{ at = "3900us", action = "offline" }, { at = "0", action = "error", error = "did_error" }')
    t = topology_from_dict(tomllib.loads(text), "t.toml")
    a = compare(t.table, t.paths, job(8, 8), **t.sim_kwargs())
    assert a.stalled and a.submitted == a.pending == 8 and a.completed == a.errored == 0
    refused = []

    class Watch(Simulation):
        def _drain_pending(self, heap):
            refused.extend(t for t, _, kind, obj in heap if kind == EV_CALL and obj[0] == self._scsi_rejected)
            return super()._drain_pending(heap)

    Watch(t.table, t.paths, parse_fio(job(8, 8)).jobs, engine="python", **t.sim_kwargs()).run()
    assert refused == [6_900_000] * 4     # the case this test is about: refusals scheduled at the stop
