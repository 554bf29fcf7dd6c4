"""The compiled core must reproduce the pure-Python engine (the reference) exactly."""
import os

import pytest

from mpathlab.sim import Empirical, Exponential, LogNormal, PathModel, ServiceTime
from mpathlab.sim import fast, fast_gen
from mpathlab.sim.engine import Simulation
from mpathlab.workload.fio import parse_fio

if not fast.available():
    if os.environ.get("CI"):
        pytest.fail("the compiled core did not build on CI", pytrace=False)
    pytest.skip("compiled core not built (python setup.py build_ext --inplace)", allow_module_level=True)

PER_PATH = {"round-robin": "1 %s 1", "queue-length": "1 %s 1", "service-time": "2 %s 1 %d",
            "historical-service-time": "1 %s 0"}


def make(selector, mode="rq", ps_args="0", n=4, dist="exp", delay=0, per_kib=0.0, k=2):
    names = ["p%d" % i for i in range(n)]
    per = PER_PATH[selector]
    head = per.split(" %s")[0]
    body = " ".join((per.split(" ", 1)[1] % ((nm, i % 3 + 1) if "%d" in per else nm)) for i, nm in enumerate(names))
    feats = {"rq": "0", "bio": "2 queue_mode bio"}[mode]
    table = "0 2097152 multipath %s 0 1 1 %s %s %d %s %s" % (feats, selector, ps_args, n, head, body)
    svc = {"exp": lambda m: Exponential(m), "const": lambda m: ServiceTime(m),
           "lognormal": lambda m: LogNormal(m, 0.8), "empirical": lambda m: Empirical([m / 2, m, 3 * m])}[dist]
    paths = [PathModel(nm, (8, 16 * i), svc(50_000 * (1 + 2 * i)), parallelism=k, delay_ns=delay * (i % 2),
                       ns_per_kib=per_kib) for i, nm in enumerate(names)]
    return table, paths


def compare(table, paths, job, **kw):
    jobs = parse_fio(job).jobs if isinstance(job, str) else job     # a job file's text, or its JobSpecs
    a = Simulation(table, paths, jobs, engine="python", **kw).run()
    b = Simulation(table, paths, jobs, engine="compiled", **kw).run()
    return assert_same_run(a, b)


def assert_same_run(a, b):
    """Everything a run reports is the same from the Python engine (A) and the compiled core (B)."""
    assert a.engine == "python" and b.engine == "compiled"
    a.check_accounting()
    b.check_accounting()
    assert a.paths == b.paths
    assert a.shares == b.shares
    assert (a.submitted, a.completed, a.events, a.runtime_ns) == (b.submitted, b.completed, b.events, b.runtime_ns)
    assert a.status_info == b.status_info and a.status_table == b.status_table
    assert a.timeline == b.timeline
    assert (a.pending, a.stalled) == (b.pending, b.stalled)
    assert (a.errored, a.messages) == (b.errored, b.messages)
    assert (a.window_ns, a.windows) == (b.window_ns, b.windows)   # dispatch windows (fault studies)
    # completion times (Simulation(record_completions=True)) and the path errors dm-mpath took back
    assert (a.done_at, a.requeued_errors) == (b.done_at, b.requeued_errors)
    for ja, jb in zip(a.jobs, b.jobs):
        for la, lb in ((ja.read_lat, jb.read_lat), (ja.write_lat, jb.write_lat)):
            assert (la.n, la.min, la.max, la.mean, la._m2, la.hist) == (lb.n, lb.min, lb.max, lb.mean, lb._m2, lb.hist)
        assert (ja.bytes_read, ja.bytes_written, ja.end_ns) == (jb.bytes_read, jb.bytes_written, jb.end_ns)
        assert (ja.errored, ja.stopped, ja.first_error) == (jb.errored, jb.stopped, jb.first_error)
        # fio's bw/iops sample windows and iodepth_level map
        assert ja.rate_windows.windows == jb.rate_windows.windows
        assert ja.depth_map == jb.depth_map
        assert ja.lat_ranges == jb.lat_ranges
        # trims, open-loop wake-ups and the generator's final state (sim/arrival.py IoGen; tests/test_fastcore_gen.py)
        la, lb = ja.trim_lat, jb.trim_lat
        assert (la.n, la.min, la.max, la.mean, la._m2, la.hist) == (lb.n, lb.min, lb.max, lb.mean, lb._m2, lb.hist)
        assert (ja.bytes_trimmed, ja.wake_ns, ja.remaining) == (jb.bytes_trimmed, jb.wake_ns, jb.remaining)
        if ja.gen is not None:
            assert fast_gen.state(ja.gen) == fast_gen.state(jb.gen)
            assert ja.gen.rng.getstate() == jb.gen.rng.getstate()
    # per-path latency (the reports' per-path view): same numbers from both engines
    assert list(a.path_latency) == list(b.path_latency) == [p["name"] for p in a.paths]
    for name, la in a.path_latency.items():
        lb = b.path_latency[name]
        assert (la.n, la.min, la.max, la.mean, la._m2, la.hist) == (lb.n, lb.min, lb.max, lb.mean, lb._m2, lb.hist)
    return a


@pytest.mark.parametrize("selector", sorted(PER_PATH))
@pytest.mark.parametrize("mode", ["rq", "bio"])
@pytest.mark.parametrize("depth", [1, 16])
def test_same_results_as_python(selector, mode, depth):
    table, paths = make(selector, mode)
    compare(table, paths, "[j]\nrw=randwrite\nbs=4k\nioengine=libaio\niodepth=%d\nnumber_ios=3000\n" % depth)


@pytest.mark.parametrize("kw", [
    {"force_jiffies_start": True}, {"rq_stats": False}, {"sched_clock_offset_ns": 2 * 10 ** 9},
    {"hz": 300}, {"hz": 1000, "force_jiffies_start": True}, {"uptime_ns": 100 * 10 ** 9},
])
@pytest.mark.parametrize("mode", ["rq", "bio"])
def test_hst_timing_variants(kw, mode):
    table, paths = make("historical-service-time", mode)
    compare(table, paths, "[j]\nrw=randwrite\nbs=4k\nioengine=libaio\niodepth=32\nnumber_ios=4000\n", **kw)


@pytest.mark.parametrize("dist", ["const", "lognormal", "empirical"])
def test_distributions_delay_size_cost(dist):
    table, paths = make("service-time", dist=dist, delay=30_000, per_kib=500.0)
    compare(table, paths, "[j]\nrw=randrw\nrwmixread=30\nbs=16k\nioengine=libaio\niodepth=8\nnumber_ios=2000\n")


def test_hst_arguments_jobs_runtime_and_startdelay():
    table, paths = make("historical-service-time", ps_args="2 900 2", n=6, k=1)
    compare(table, paths, "[a]\nrw=randread\nbs=4k\nioengine=libaio\niodepth=4\nnumjobs=3\nruntime=20ms\ntime_based\n"
                          "[b]\nrw=write\nbs=8k\nioengine=libaio\niodepth=2\nstartdelay=5ms\nnumber_ios=500\n")


def _tagged(paths, depths, scheds):
    for p, qd, sc in zip(paths, depths, scheds):
        p.hw_queue_depth, p.scheduler = qd, sc
    return paths


@pytest.mark.parametrize("selector", sorted(PER_PATH))
@pytest.mark.parametrize("mode", ["rq", "bio"])
@pytest.mark.parametrize("sched", ["none", "mq-deadline", "mixed"])
def test_same_results_with_tags(selector, mode, sched):
    # finite tags on every path (mixed depths), with and without scheduler tags
    table, paths = make(selector, mode, k=8)
    scheds = {"none": ["none"] * 4, "mq-deadline": ["mq-deadline"] * 4,
              "mixed": ["mq-deadline", "none", "none", "mq-deadline"]}[sched]
    _tagged(paths, [1, 4, 2, 8], scheds)
    a = compare(table, paths, "[j]\nrw=randwrite\nbs=4k\nioengine=libaio\niodepth=32\nnumber_ios=3000\n")
    assert a.completed == 3000


@pytest.mark.parametrize("selector", sorted(PER_PATH))
@pytest.mark.parametrize("mode", ["rq", "bio"])
@pytest.mark.parametrize("costs", [(20_000, 30_000), (0, 40_000), (25_000, 0), (20_000, 30_000, 400_000)])
def test_same_results_with_cpu_costs_and_tags(selector, mode, costs):
    from mpathlab.sim.host import HostModel
    table, paths = make(selector, mode, k=4)
    _tagged(paths, [2, 0, 3, 0], ["none", "none", "mq-deadline", "none"])
    compare(table, paths, "[a]\nrw=randwrite\nbs=4k\nioengine=libaio\niodepth=16\nnumjobs=3\nnumber_ios=800\n",
            host=HostModel(2, *costs))


@pytest.mark.parametrize("mode", ["rq", "bio"])
def test_same_results_with_hardware_queues_per_cpu(mode):
    from mpathlab.sim.host import HostModel
    table, paths = make("queue-length", mode, k=4)
    _tagged(paths, [1, 2, 1, 3], ["none", "mq-deadline", "none", "none"])
    for p, n in zip(paths, (2, 3, 1, 2)):
        p.nr_hw_queues = n
    compare(table, paths, "[a]\nrw=randwrite\nbs=4k\nioengine=libaio\niodepth=8\nnumjobs=3\nnumber_ios=600\n",
            host=HostModel(3, 10_000, 10_000))


@pytest.mark.parametrize("mode", ["rq", "bio"])
@pytest.mark.parametrize("selector", ["round-robin", "historical-service-time"])
def test_same_results_with_steal(mode, selector):
    from mpathlab.sim.host import HostModel
    table, paths = make(selector, mode, k=4)
    _tagged(paths, [2, 0, 3, 0], ["none", "none", "mq-deadline", "none"])
    compare(table, paths, "[a]\nrw=randwrite\nbs=4k\nioengine=libaio\niodepth=16\nnumjobs=2\nnumber_ios=1500\n",
            host=HostModel(2, 20_000, 30_000, wake_ns=5_000, steal=0.3, steal_period_ns=700_000,
                           work_latency_ns=150_000))
    compare(table, paths, "[a]\nrw=randwrite\nbs=4k\nioengine=libaio\niodepth=16\nruntime=30ms\ntime_based\n",
            host=HostModel(1, 20_000, 30_000, steal=0.4, steal_period_ns=1_000_000))


@pytest.mark.parametrize("mode", ["rq", "bio"])
@pytest.mark.parametrize("selector", ["round-robin", "queue-length", "historical-service-time"])
@pytest.mark.parametrize("seed", [1, 2, 2 ** 64 - 1])     # the top of --seed's range reaches the core too
def test_same_results_with_timers_firing_late_together(mode, selector, seed):
    """HostModel.timer_fires (completions due while the timers' vCPU is away fire when it is back),
    with tags, schedulers, CPU costs and steal: the same run from both engines, seed by seed."""
    from mpathlab.sim.host import HostModel
    table, paths = make(selector, mode, k=4, dist="const")
    _tagged(paths, [2, 0, 3, 0], ["none", "none", "mq-deadline", "none"])
    compare(table, paths, "[a]\nrw=randwrite\nbs=4k\nioengine=libaio\niodepth=16\nnumber_ios=2000\n",
            host=HostModel(2, 20_000, 30_000, timer_away_ns=180_000, timer_period_ns=400_000), seed=seed)
    compare(table, paths, "[a]\nrw=randwrite\nbs=4k\nioengine=libaio\niodepth=8\nruntime=20ms\ntime_based\n",
            host=HostModel(1, 20_000, 30_000, steal=0.2, steal_period_ns=700_000, timer_away_ns=250_000,
                           timer_period_ns=600_000), seed=seed)


@pytest.mark.parametrize("mode", ["rq", "bio"])
def test_same_results_cut_short_with_io_held_in_queues(mode):
    from mpathlab.sim.host import HostModel
    table, paths = make("service-time", mode, k=1)
    _tagged(paths, [1, 1, 2, 1], ["none", "mq-deadline", "none", "none"])
    a = compare(table, paths, "[j]\nrw=randwrite\nbs=4k\nioengine=libaio\niodepth=64\nruntime=5ms\ntime_based\n",
                host=HostModel(1, 5_000, 5_000), drain_ns=1)
    assert a.stalled and a.pending > 0


def test_ineligible_configurations_fall_back_or_refuse():
    from mpathlab.sim.devices import Fault
    from mpathlab.sim.host import HostModel
    table, paths = make("queue-length")
    paths[1].faults = [Fault(10_000, "fail")]
    job = parse_fio("[j]\nrw=write\nnumber_ios=10\nrate_iops=1000\nverify=crc32c\n").jobs
    sim = Simulation(table, paths, job)
    assert "verify" in fast.eligible(sim)
    assert sim.run().engine == "python"
    with pytest.raises(ValueError, match="compiled core cannot run"):
        Simulation(table, paths, job, engine="compiled").run()
    hst_args = ("0 2097152 multipath 0 0 2 1 historical-service-time 0 2 1 p0 0 p1 0 "
                "historical-service-time 2 900 0 2 1 p2 0 p3 0")
    sim = Simulation(hst_args, paths, parse_fio("[j]\nnumber_ios=10\n").jobs)
    assert "different arguments" in fast.eligible(sim)
    stamps = ("0 2097152 multipath 2 queue_mode bio 0 2 1 queue-length 0 2 1 p0 1 p1 1 "
              "historical-service-time 0 2 1 p2 0 p3 0")
    sim = Simulation(stamps, paths, parse_fio("[j]\nnumber_ios=10\n").jobs)
    assert "stamp start times differently" in fast.eligible(sim)


# ------------------------------------------------ step 1: slow faults and dispatch windows
@pytest.mark.parametrize("selector", sorted(PER_PATH))
@pytest.mark.parametrize("mode", ["rq", "bio"])
def test_same_results_with_slow_faults_and_windows(selector, mode):
    from mpathlab.sim.devices import Fault
    table, paths = make(selector, mode)
    # two slow faults on one path (the second one wins) and one on another, before and during the run
    paths[1].faults = [Fault(0, "slow", factor=3.0), Fault(8_000_000, "slow", factor=20.0)]
    paths[2].faults = [Fault(4_000_000, "slow", factor=0.5)]
    a = compare(table, paths, "[j]\nrw=randwrite\nbs=4k\nioengine=libaio\niodepth=16\nruntime=20ms\ntime_based\n",
                window_ns=100_000)
    # the slowed path gets less after 8 ms than before it (every load-aware selector notices)
    if selector != "round-robin":
        assert a.share_in_window("p1", 10_000_000, 20_000_000) < a.share_in_window("p1", 0, 8_000_000)
    assert sum(sum(c.values()) for _, c in a.windows) == sum(p["dispatched"] for p in a.paths)


@pytest.mark.parametrize("study", ["slow-path-20x", "slow-path-20x-depth1"])
@pytest.mark.parametrize("selector", ["round-robin", "historical-service-time"])
def test_slow_fault_studies_run_in_the_core(study, selector):
    from mpathlab.sim.faults import STUDIES
    table, paths, job, kw = STUDIES[study].build_plain(selector)   # the plain-device variant (SCSI: test_fastcore_scsi.py)
    compare(table, paths, job, **kw)


# ------------------------------------------------ step 3: selectors written in Python, in the compiled loop
def _py_table(selector_args, per_path_args, n=4, mode="rq"):
    feats = {"rq": "0", "bio": "2 queue_mode bio"}[mode]
    names = ["p%d" % i for i in range(n)]
    body = " ".join("%s %s" % (nm, per_path_args(i)) for i, nm in enumerate(names))
    nargs = len(per_path_args(0).split())
    return "0 2097152 multipath %s 0 1 1 %s %d %d %s" % (feats, selector_args, n, nargs, body)


@pytest.mark.parametrize("mode", ["rq", "bio"])
@pytest.mark.parametrize("selector", ["p2c 1 delay", "sed 0", "peak-ewma 0", "prequal 0", "hst-latency 0"])
def test_python_policies_run_in_the_core(selector, mode):
    table = _py_table(selector, lambda i: "1", mode=mode)
    _, paths = make("queue-length", k=4)
    a = compare(table, paths, "[j]\nrw=randrw\nbs=4k\nioengine=libaio\niodepth=16\nnumjobs=2\nnumber_ios=1500\n")
    assert a.completed == 3000


@pytest.mark.parametrize("mode", ["rq", "bio"])
def test_io_affinity_runs_in_the_core_with_cpus_and_tags(mode):
    from mpathlab.sim.host import HostModel
    # CPU masks: p0 serves CPUs 0 and 2, p1 CPU 1, p2 CPU 3, p3 none of the jobs' CPUs
    table = _py_table("io-affinity 0", lambda i: ("5", "2", "8", "10")[i], mode=mode)
    _, paths = make("queue-length", k=2)
    _tagged(paths, [1, 2, 0, 0], ["mq-deadline", "none", "none", "none"])
    a = compare(table, paths, "[a]\nrw=randwrite\nbs=4k\nioengine=libaio\niodepth=8\nnumjobs=4\nnumber_ios=400\n",
                host=HostModel(2, 10_000, 10_000))
    assert a.paths[3]["dispatched"] == 0 and all(p["dispatched"] for p in a.paths[:3])


def test_third_party_selector_runs_in_the_core():
    import importlib.util
    import pathlib
    from mpathlab import selectors
    spec = importlib.util.spec_from_file_location(
        "my_selector", pathlib.Path(__file__).parent.parent / "examples" / "my_selector.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    registered_here = selectors.get_exact("shortest-queue-tail") is None
    if registered_here:
        selectors.register(mod.ShortestQueueTail)
    try:
        table = _py_table("shortest-queue-tail 0", lambda i: "1")
        _, paths = make("queue-length", k=2)
        a = compare(table, paths, "[j]\nrw=randwrite\nbs=4k\nioengine=libaio\niodepth=16\nruntime=10ms\n"
                    "time_based\n", window_ns=1_000_000)
        assert a.completed > 0
    finally:       # other tests register the example themselves
        if registered_here:
            selectors.unregister("shortest-queue-tail")


def test_python_selector_that_picks_no_path_is_a_clear_error():
    from mpathlab import selectors
    from mpathlab.selectors.queue_length import QueueLength

    class Refuses(QueueLength):
        name = "refuses-always"

        def select_path(self, nr_bytes=0):
            return None
    if selectors.get_exact(Refuses.name) is None:
        selectors.register(Refuses)
    table = _py_table("refuses-always 0", lambda i: "1")
    _, paths = make("queue-length")
    with pytest.raises(RuntimeError, match="chose no path"):
        Simulation(table, paths, parse_fio("[j]\nnumber_ios=10\n").jobs, engine="compiled").run()


# ------------------------------------------------ the accelerated HST selector
def test_accelerated_hst_matches_reference_operation_by_operation():
    import random
    from mpathlab import selectors
    from mpathlab.selectors.accelerated import AcceleratedHistoricalServiceTime
    for seed in range(40):
        rnd = random.Random(seed)
        clock = [rnd.randint(0, 10 ** 12)]
        args = rnd.choice([[], ["972", "0"], ["500", "2"], ["0"], ["1023", "1"]])
        ref = selectors.create("historical-service-time", args, clock=lambda: clock[0])
        acc = selectors.create("historical-service-time", args, clock=lambda: clock[0], accelerated=True)
        assert isinstance(acc, AcceleratedHistoricalServiceTime)
        n = rnd.randint(1, 9)
        paths = ["p%d" % i for i in range(n)]
        for p in paths:
            ref.add_path(p, ["7"]); acc.add_path(p, ["7"])
        failed, inflight = set(), []
        for _ in range(400):
            op = rnd.random()
            if op < 0.45:
                a, b = ref.select_path(4096), acc.select_path(4096)
                assert a == b
                if a is not None:
                    start = clock[0] - rnd.choice([0, 0, rnd.randint(0, 10 ** 7), 300 * 10 ** 9])
                    ref.start_io(a, 4096); acc.start_io(a, 4096)
                    inflight.append((a, start))
            elif op < 0.8 and inflight:
                p, start = inflight.pop(rnd.randrange(len(inflight)))
                ref.end_io(p, 4096, start); acc.end_io(p, 4096, start)
            elif op < 0.85:
                p = rnd.choice(paths)
                if p not in failed:
                    ref.fail_path(p); acc.fail_path(p); failed.add(p)
            elif op < 0.9 and failed:
                p = rnd.choice(sorted(failed))
                ref.reinstate_path(p); acc.reinstate_path(p); failed.discard(p)
            else:
                clock[0] += rnd.choice([1, 1000, 10 ** 6, 2 ** 24, 10 ** 10])
            assert ref.valid_order() == acc.valid_order()
            assert ref.valid_count == acc.valid_count
        for p in paths:
            for kind in ("info", "table", "ima"):
                assert ref.status(p, kind) == acc.status(p, kind)
        assert ref.status(None, "table") == acc.status(None, "table")


def test_rate_windows_and_depth_map_span_several_fio_periods():
    # 1.2 s after a 300 ms startdelay: three 500 ms sampling periods counted from the job's start
    table, paths = make("service-time", dist="const")
    a = compare(table, paths, "[j]\nrw=randrw\nbs=4k\nioengine=libaio\niodepth=2\nruntime=1200ms\ntime_based\nstartdelay=300ms\n")
    (job,) = a.jobs
    assert len(job.rate_windows.windows) == 3
    assert sum(w[0] + w[1] for w in job.rate_windows.windows.values()) == job.bytes_read + job.bytes_written
    assert sum(w[3] + w[4] for w in job.rate_windows.windows.values()) == job.completed
    # depth 1 once (the first submission), depth 2 for every other
    assert job.depth_map == [1, job.submitted - 1, 0, 0, 0, 0, 0]


# ------------------------------------------------ step 1: fail/reinstate faults and dm messages
@pytest.mark.parametrize("study", ["path-fail-reinstate", "all-fail-queue", "all-fail-queue-bio", "all-fail-error"])
@pytest.mark.parametrize("selector", sorted(PER_PATH))
def test_fault_studies_run_in_the_core(study, selector):
    from mpathlab.sim.faults import STUDIES
    table, paths, job, kw = STUDIES[study].build_plain(selector)   # the plain-device variant (SCSI: test_fastcore_scsi.py)
    a = compare(table, paths, job, **kw)
    assert sum(p["errors"] for p in a.paths) > 0          # the failed paths' I/O came back through end_io
    if study == "all-fail-error":
        assert a.errored > 0 and a.jobs[0].first_error
    else:
        assert a.errored == 0


MESSAGES = [
    # fail a path, bring it back; queue with no path, then stop queueing (queued I/O fails)
    [(2_000_000, "fail_path p1"), (5_000_000, "reinstate_path p1")],
    [(1_000_000, "queue_if_no_path"), (2_000_000, "fail_path p0"), (2_000_000, "fail_path p1"),
     (2_500_000, "fail_path p2"), (2_500_000, "fail_path p3"), (4_000_000, "reinstate_path p2"),
     (6_000_000, "fail_path p2"), (7_000_000, "fail_if_no_path")],
    # a message the target refuses is recorded as an error and changes nothing
    [(1_000_000, "fail_path nosuch"), (2_000_000, "reinstate_path p0"), (3_000_000, "switch_group 1")],
]


@pytest.mark.parametrize("messages", range(len(MESSAGES)))
@pytest.mark.parametrize("selector", sorted(PER_PATH))
@pytest.mark.parametrize("mode", ["rq", "bio"])
def test_dm_messages_run_in_the_core(messages, selector, mode):
    table, paths = make(selector, mode)
    a = compare(table, paths, "[j]\nrw=randwrite\nbs=4k\nioengine=libaio\niodepth=16\nruntime=10ms\ntime_based\n"
                              "continue_on_error=io\n", messages=MESSAGES[messages], window_ns=500_000)
    assert len(a.messages) == len(MESSAGES[messages])


@pytest.mark.parametrize("mode", ["rq", "bio"])
def test_queue_if_no_path_timeout_in_the_core(mode):
    from mpathlab.sim.devices import Fault
    table, paths = make("queue-length", mode)
    table = table.replace("multipath 0 " if mode == "rq" else "multipath 2 queue_mode bio ",
                          "multipath 1 queue_if_no_path " if mode == "rq"
                          else "multipath 3 queue_if_no_path queue_mode bio ")
    for p in paths:
        p.faults = [Fault(3_000_000, "fail")]
    a = compare(table, paths, "[j]\nrw=randwrite\nbs=4k\nioengine=libaio\niodepth=8\nruntime=2500ms\ntime_based\n",
                queue_if_no_path_timeout_secs=1)
    assert a.errored > 0             # the timeout ended the queueing: queued I/O failed


@pytest.mark.parametrize("selector", ["round-robin", "historical-service-time"])
def test_the_requeue_list_in_the_core(selector):
    # request-based, queue_if_no_path: both paths' transports drop at 3 ms (in-flight I/O requeued at
    # once, then held on the requeue list with the 100 ms delay), one comes back at 20 ms: its
    # reinstate_path kicks the list, in both engines alike, and the held I/O ends within 1 ms of it
    from mpathlab.sim.devices import Fault
    table, paths = make(selector, n=2, dist="const")
    table = table.replace("multipath 0 ", "multipath 1 queue_if_no_path ")
    for p in paths:
        p.faults = [Fault(3_000_000, "fail")]
    paths[0].faults.append(Fault(20_000_000, "reinstate", reinstate_after_ns=0))
    a = compare(table, paths, "[j]\nrw=randwrite\nbs=4k\nioengine=libaio\niodepth=8\nruntime=30ms\ntime_based\n",
                window_ns=1_000_000)
    assert a.errored == 0
    per_ms = {t // 1_000_000: sum(c.values()) for t, c in a.windows}
    assert not any(per_ms.get(ms) for ms in range(4, 20))   # nothing dispatched while held
    assert per_ms[20] >= 8                                   # all of it again at the reinstatement


@pytest.mark.parametrize("mode", ["rq", "bio"])
def test_python_selector_with_faults_in_the_core(mode):
    from mpathlab.sim.devices import Fault
    table = _py_table("sed 0", lambda i: "1", mode=mode)
    _, paths = make("queue-length", k=4)
    paths[2].faults = [Fault(2_000_000, "fail"), Fault(4_000_000, "reinstate", reinstate_after_ns=1_000_000)]
    a = compare(table, paths, "[j]\nrw=randwrite\nbs=4k\nioengine=libaio\niodepth=16\nruntime=10ms\ntime_based\n",
                window_ns=1_000_000)
    assert a.paths[2]["errors"] > 0 and a.errored == 0


# ------------------------------------------------ step 2: several priority groups, pg_init
def _groups_table(selector, mode, hw="0", groups=((0, 1), (2, 3))):
    per = PER_PATH[selector]
    head = per.split(" %s")[0]
    feats = {"rq": "1 queue_if_no_path", "bio": "3 queue_if_no_path queue_mode bio"}[mode]
    body = ""
    for g in groups:
        paths = " ".join(per.split(" ", 1)[1] % (("p%d" % i, i % 3 + 1) if "%d" in per else "p%d" % i) for i in g)
        body += " %s 0 %d %s %s" % (selector, len(g), head, paths)
    return "0 2097152 multipath %s %s %d 1%s" % (feats, hw, len(groups), body)


GROUP_MESSAGES = [
    [(2_000_000, "switch_group 2"), (5_000_000, "switch_group 1")],
    [(2_000_000, "disable_group 1"), (4_000_000, "enable_group 1"), (4_000_000, "fail_path p2"),
     (4_000_000, "fail_path p3"), (6_000_000, "reinstate_path p3")],
    # the whole first group fails: I/O moves to the second, back after the first returns and a switch
    [(2_000_000, "fail_path p0"), (2_000_000, "fail_path p1"), (5_000_000, "reinstate_path p0"),
     (5_000_000, "reinstate_path p1"), (6_000_000, "switch_group 1")],
]


@pytest.mark.parametrize("hw", ["0", "1 alua"])
@pytest.mark.parametrize("messages", range(len(GROUP_MESSAGES)))
@pytest.mark.parametrize("selector", sorted(PER_PATH))
@pytest.mark.parametrize("mode", ["rq", "bio"])
def test_priority_groups_switching_and_pg_init_in_the_core(hw, messages, selector, mode):
    table = _groups_table(selector, mode, hw)
    _, paths = make(selector, mode)
    a = compare(table, paths, "[j]\nrw=randwrite\nbs=4k\nioengine=libaio\niodepth=16\nruntime=10ms\ntime_based\n",
                messages=GROUP_MESSAGES[messages], window_ns=500_000, activation_ns=50_000)
    if hw == "0":       # both groups carried I/O (with ALUA, pg_init's 100 ms requeues outlast the run)
        assert a.paths[0]["dispatched"] + a.paths[1]["dispatched"] > 0
        assert a.paths[2]["dispatched"] + a.paths[3]["dispatched"] > 0


@pytest.mark.parametrize("selector", ["queue-length", "historical-service-time"])
def test_group_failover_by_faults_in_the_core(selector):
    from mpathlab.sim.devices import Fault
    table = _groups_table(selector, "rq", groups=((0, 1, 2), (3,)))
    _, paths = make(selector)
    for p in paths[:3]:
        p.faults = [Fault(3_000_000, "fail"), Fault(6_000_000, "reinstate", reinstate_after_ns=500_000)]
    a = compare(table, paths, "[j]\nrw=randwrite\nbs=4k\nioengine=libaio\niodepth=32\nruntime=12ms\ntime_based\n",
                window_ns=1_000_000)
    assert a.paths[3]["dispatched"] > 0 and a.errored == 0


@pytest.mark.parametrize("mode", ["rq", "bio"])
def test_io_affinity_in_c_counts_map_misses_and_with_faults_runs_as_python_code(mode):
    from mpathlab.sim.devices import Fault
    # CPUs 0..5 run the clones; of those only CPUs 0, 1 and 4 are mapped (p3 has CPU 7): the others
    # miss and take CPU 0's path
    table = _py_table("io-affinity 0", lambda i: ("1", "2", "10", "80")[i], mode=mode)
    _, paths = make("queue-length", k=2)
    jobs = "[a]\nrw=randwrite\nbs=4k\nioengine=libaio\niodepth=4\nnumjobs=6\nnumber_ios=300\n"
    sim = Simulation(table, paths, parse_fio(jobs).jobs, engine="compiled")
    a = compare(table, paths, jobs)
    res = sim.run()
    ps = sim.mp.priority_groups[0].ps
    assert ps.map_misses == 3 * 300        # three unmapped CPUs, every I/O of theirs
    assert a.paths[3]["dispatched"] == 0 and a.paths[0]["dispatched"] == 4 * 300
    assert res.status_info == a.status_info
    paths[0].faults = [Fault(500_000, "fail"), Fault(1_000_000, "reinstate", reinstate_after_ns=200_000)]
    b = compare(table, paths, jobs)
    assert b.paths[0]["errors"] > 0


@pytest.mark.parametrize("mode", ["rq", "bio"])
@pytest.mark.parametrize("costs", [(20_000, 30_000), (0, 40_000), (25_000, 0)])
def test_faults_and_messages_with_host_cpus_in_the_core(mode, costs):
    from mpathlab.sim.devices import Fault
    from mpathlab.sim.host import HostModel
    table, paths = make("historical-service-time", mode, k=4)
    paths[0].faults = [Fault(1_000_000, "fail"), Fault(3_000_000, "reinstate", reinstate_after_ns=500_000)]
    a = compare(table, paths, "[a]\nrw=randwrite\nbs=4k\nioengine=libaio\niodepth=16\nnumjobs=3\nruntime=8ms\ntime_based\n",
                host=HostModel(2, *costs, steal=0.2, steal_period_ns=700_000),
                messages=[(2_000_000, "fail_path p2"), (5_000_000, "reinstate_path p2")])
    assert a.paths[0]["errors"] > 0 and a.errored == 0


@pytest.mark.parametrize("selector", sorted(PER_PATH))
@pytest.mark.parametrize("mode", ["rq", "bio"])
@pytest.mark.parametrize("sched", ["none", "mixed"])
def test_faults_messages_and_groups_with_tags_in_the_core(selector, mode, sched):
    from mpathlab.sim.devices import Fault
    table = _groups_table(selector, mode, groups=((0, 1, 2), (3,)))
    _, paths = make(selector, mode, k=8)
    _tagged(paths, [1, 4, 2, 8], {"none": ["none"] * 4, "mixed": ["mq-deadline", "none", "none", "mq-deadline"]}[sched])
    paths[1].faults = [Fault(2_000_000, "fail"), Fault(4_000_000, "reinstate", reinstate_after_ns=300_000)]
    a = compare(table, paths, "[a]\nrw=randwrite\nbs=4k\nioengine=libaio\niodepth=16\nnumjobs=2\nruntime=10ms\ntime_based\n",
                messages=[(1_000_000, "fail_path p0"), (3_000_000, "fail_path p2"), (5_000_000, "reinstate_path p0"),
                          (6_000_000, "reinstate_path p2")], window_ns=500_000)
    assert a.paths[1]["errors"] > 0 and a.paths[3]["dispatched"] > 0


@pytest.mark.parametrize("mode", ["rq", "bio"])
@pytest.mark.parametrize("selector", ["p2c 1 delay", "peak-ewma 0", "io-affinity 0"])
def test_python_selectors_in_several_groups_in_the_core(selector, mode):
    from mpathlab.sim.devices import Fault
    arg = (lambda i: ("1", "2", "1", "2")[i]) if selector.startswith("io-affinity") else (lambda i: "1")
    feats = {"rq": "1 queue_if_no_path", "bio": "3 queue_if_no_path queue_mode bio"}[mode]
    groups = " ".join("%s 2 1 p%d %s p%d %s" % (selector, a, arg(a), a + 1, arg(a + 1)) for a in (0, 2))
    table = "0 2097152 multipath %s 0 2 1 %s" % (feats, groups)
    _, paths = make("queue-length", k=4)
    paths[0].faults = [Fault(2_000_000, "fail"), Fault(5_000_000, "reinstate", reinstate_after_ns=200_000)]
    a = compare(table, paths, "[a]\nrw=randwrite\nbs=4k\nioengine=libaio\niodepth=8\nnumjobs=2\nruntime=10ms\ntime_based\n",
                messages=[(2_000_000, "fail_path p1"), (6_000_000, "reinstate_path p1"), (7_000_000, "switch_group 2"),
                          (8_000_000, "switch_group 1")], window_ns=1_000_000)
    assert a.paths[0]["errors"] > 0 and a.paths[2]["dispatched"] + a.paths[3]["dispatched"] > 0


@pytest.mark.parametrize("mode", ["rq", "bio"])
@pytest.mark.parametrize("pair", [("queue-length", "round-robin"), ("service-time", "queue-length"),
                                  ("historical-service-time", "p2c"), ("p2c", "queue-length"),
                                  ("historical-service-time", "service-time")])
def test_different_selectors_in_groups_in_the_core(pair, mode):
    from mpathlab.sim.devices import Fault
    per = {"service-time": "2 %s 1 1", "p2c": "1 %s 1"}
    groups = " ".join("%s 0 2 %s" % (sel, " ".join(
        (per.get(sel) or PER_PATH.get(sel, "1 %s 1")) % ("p%d" % i) if i == a else
        ((per.get(sel) or PER_PATH.get(sel, "1 %s 1")) % ("p%d" % i)).split(" ", 1)[1] for i in (a, a + 1)))
        for sel, a in zip(pair, (0, 2)))
    feats = {"rq": "1 queue_if_no_path", "bio": "3 queue_if_no_path queue_mode bio"}[mode]
    table = "0 2097152 multipath %s 0 2 1 %s" % (feats, groups)
    _, paths = make("queue-length", k=4)
    paths[0].faults = [Fault(2_000_000, "fail"), Fault(5_000_000, "reinstate", reinstate_after_ns=200_000)]
    jobs = parse_fio("[a]\nrw=randwrite\nbs=4k\nioengine=libaio\niodepth=8\nnumjobs=2\nruntime=10ms\ntime_based\n").jobs
    kw = dict(messages=[(2_000_000, "fail_path p1"), (6_000_000, "reinstate_path p1"), (7_000_000, "switch_group 2"),
                        (8_000_000, "switch_group 1")], window_ns=1_000_000)
    sim = Simulation(table, paths, jobs, **kw)
    why = fast.eligible(sim)
    if mode == "bio" and ("historical-service-time" in pair or "p2c" in pair) and not set(pair) <= {
            "historical-service-time", "p2c"}:
        assert "stamp start times differently" in why
        return
    assert why == ""
    a = compare(table, paths, "[a]\nrw=randwrite\nbs=4k\nioengine=libaio\niodepth=8\nnumjobs=2\nruntime=10ms\ntime_based\n", **kw)
    assert a.paths[0]["errors"] > 0 and a.paths[2]["dispatched"] + a.paths[3]["dispatched"] > 0


@pytest.mark.parametrize("selector", ["round-robin", "queue-length", "historical-service-time"])
@pytest.mark.parametrize("tags", [[0, 0, 0, 0], [2, 8, 0, 3]])
def test_same_results_with_a_dispatch_cost(selector, tags):
    """The request-based dm queue mapping one request per dispatch_cost (BlockLayer._dispatch), with and
    without tags that run out (a run stalls between two spaced requests), CPU costs and late timers."""
    from mpathlab.sim.host import HostModel
    table, paths = make(selector, "rq", k=4, dist="const")
    _tagged(paths, tags, ["none", "none", "mq-deadline", "none"])
    compare(table, paths, "[a]\nrw=randwrite\nbs=4k\nioengine=libaio\niodepth=16\nnumber_ios=2000\n",
            host=HostModel(1, 14_000, 2_000, dispatch_ns=3_000))
    compare(table, paths, "[a]\nrw=randwrite\nbs=4k\nioengine=libaio\niodepth=24\nnumjobs=2\nruntime=20ms\n"
            "time_based\n", host=HostModel(2, 10_000, 5_000, dispatch_ns=7_000, timer_away_ns=100_000,
                                            timer_period_ns=400_000))
