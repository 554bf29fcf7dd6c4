"""The compiled core must reproduce the pure-Python engine (the reference) exactly."""
import os

import pytest

from mpathlab.sim import Empirical, Exponential, LogNormal, PathModel, ServiceTime
from mpathlab.sim import fast
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
    table = "0 1000 multipath %s 0 1 1 %s %s %d %s %s" % (feats, selector, ps_args, n, head, body)
    svc = {"exp": lambda m: Exponential(m), "const": lambda m: ServiceTime(m),
           "lognormal": lambda m: LogNormal(m, 0.8), "empirical": lambda m: Empirical([m / 2, m, 3 * m])}[dist]
    paths = [PathModel(nm, (8, 16 * i), svc(50_000 * (1 + 2 * i)), parallelism=k, delay_ns=delay * (i % 2),
                       ns_per_kib=per_kib) for i, nm in enumerate(names)]
    return table, paths


def compare(table, paths, job, **kw):
    jobs = parse_fio(job).jobs
    a = Simulation(table, paths, jobs, engine="python", **kw).run()
    b = Simulation(table, paths, jobs, engine="compiled", **kw).run()
    assert a.engine == "python" and b.engine == "compiled"
    a.check_accounting()
    b.check_accounting()
    assert a.paths == b.paths
    assert a.shares == b.shares
    assert (a.submitted, a.completed, a.events, a.runtime_ns) == (b.submitted, b.completed, b.events, b.runtime_ns)
    assert a.status_info == b.status_info and a.status_table == b.status_table
    assert a.timeline == b.timeline
    for ja, jb in zip(a.jobs, b.jobs):
        for la, lb in ((ja.read_lat, jb.read_lat), (ja.write_lat, jb.write_lat)):
            assert (la.n, la.min, la.max, la.mean, la._m2, la.hist) == (lb.n, lb.min, lb.max, lb.mean, lb._m2, lb.hist)
        assert (ja.bytes_read, ja.bytes_written, ja.end_ns) == (jb.bytes_read, jb.bytes_written, jb.end_ns)
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
    compare(table, paths, "[j]\nrw=randwrite\nbs=4k\niodepth=%d\nnumber_ios=3000\n" % depth)


@pytest.mark.parametrize("kw", [
    {"force_jiffies_start": True}, {"rq_stats": False}, {"sched_clock_offset_ns": 2 * 10 ** 9},
    {"hz": 300}, {"hz": 1000, "force_jiffies_start": True}, {"uptime_ns": 100 * 10 ** 9},
])
@pytest.mark.parametrize("mode", ["rq", "bio"])
def test_hst_timing_variants(kw, mode):
    table, paths = make("historical-service-time", mode)
    compare(table, paths, "[j]\nrw=randwrite\nbs=4k\niodepth=32\nnumber_ios=4000\n", **kw)


@pytest.mark.parametrize("dist", ["const", "lognormal", "empirical"])
def test_distributions_delay_size_cost(dist):
    table, paths = make("service-time", dist=dist, delay=30_000, per_kib=500.0)
    compare(table, paths, "[j]\nrw=randrw\nrwmixread=30\nbs=16k\niodepth=8\nnumber_ios=2000\n")


def test_hst_arguments_jobs_runtime_and_startdelay():
    table, paths = make("historical-service-time", ps_args="2 900 2", n=6, k=1)
    compare(table, paths, "[a]\nrw=randread\nbs=4k\niodepth=4\nnumjobs=3\nruntime=20ms\ntime_based\n"
                          "[b]\nrw=write\nbs=8k\niodepth=2\nstartdelay=5ms\nnumber_ios=500\n")


def test_ineligible_configurations_fall_back_or_refuse():
    table, paths = make("queue-length")
    paths[0].faults = []
    sim = Simulation(table, paths, parse_fio("[j]\nnumber_ios=10\n").jobs, window_ns=1000)
    assert "windows" in fast.eligible(sim)
    assert sim.run().engine == "python"
    with pytest.raises(ValueError, match="compiled core cannot run"):
        Simulation(table, paths, parse_fio("[j]\nnumber_ios=10\n").jobs, window_ns=1000, engine="compiled").run()


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
