"""Simulator behaviour, the shipped scenarios against the seeds, and fio JSON."""
import json
import random

import pytest

from mpathlab.report import fio_json
from mpathlab.scenarios import SCENARIOS, TOLERANCE
from mpathlab.sim import Exponential, LatencyStats, PathModel, ServiceTime, best_distribution, simulate
from mpathlab.workload.fio import parse_fio


def four_paths(k=1, slow=4.0, svc=ServiceTime, delay=0):
    return [PathModel(n, (8, 16 * i), svc(100_000 * (slow if n == "sdd" else 1)), parallelism=k, delay_ns=delay)
            for i, n in enumerate(["sda", "sdb", "sdc", "sdd"])]


def table(sel, mode="", args=None):
    per = {"service-time": "2 %s 1 1", "historical-service-time": "1 %s 0", "queue-length": "1 %s 1",
           "round-robin": "1 %s 1"}[sel]
    head = per.split(" %s")[0]
    paths = " ".join((per.split(" ", 1)[1] % n) for n in ["sda", "sdb", "sdc", "sdd"])
    feat = "2 queue_mode bio" if mode == "bio" else "0"
    return "0 2097152 multipath %s 0 1 1 %s 0 4 %s %s" % (feat, sel, head, paths)


def jobs(text):
    return parse_fio(text).jobs


def test_best_is_capacity_proportional():
    best = best_distribution(four_paths(), 4096)
    assert best["sda"] == pytest.approx(4 / 13) and best["sdd"] == pytest.approx(1 / 13)
    # a fixed delay costs latency, not capacity
    assert best_distribution(four_paths(delay=10 ** 6), 4096) == best
    # parallelism multiplies capacity
    m = four_paths()
    m[3].parallelism = 4
    assert best_distribution(m, 4096)["sdd"] == pytest.approx(0.25)


def test_st_at_depth1_is_exactly_round_robin():
    r = simulate(table("service-time"), four_paths(), jobs("[j]\nbs=4k\nnumber_ios=1000\n"))
    r.check_accounting()
    assert [p["completed"] for p in r.paths] == [250, 250, 250, 250]


def test_constant_service_depth1_latency_and_runtime_exact():
    r = simulate(table("round-robin"), four_paths(), jobs("[j]\nbs=4k\nnumber_ios=8\n"))
    # 2 I/Os per path; fast paths 100 us, slow 400 us -> 6*100 + 2*400 us
    assert r.runtime_ns == 6 * 100_000 + 2 * 400_000
    st = r.jobs[0].read_lat if r.jobs[0].read_lat.n else r.jobs[0].write_lat
    assert (st.min, st.max, st.n) == (100_000, 400_000, 8)


def test_queueing_at_a_single_server_device():
    # one path, one server, iodepth 4, constant 100 us: latencies 100,200,300,400 then 400 steady
    p = [PathModel("sda", (8, 0), ServiceTime(100_000), parallelism=1)]
    r = simulate("0 2097152 multipath 0 0 1 1 round-robin 0 1 0 sda", p,
                 jobs("[j]\nrw=read\nbs=4k\nioengine=libaio\niodepth=4\nnumber_ios=8\n"))
    lat = r.jobs[0].read_lat
    assert (lat.min, lat.max) == (100_000, 400_000)
    assert r.runtime_ns == 800_000


def test_runs_are_deterministic_for_a_seed():
    a = simulate(table("historical-service-time"), four_paths(4, svc=Exponential),
                 jobs("[j]\nbs=4k\nioengine=libaio\niodepth=16\nnumber_ios=5000\n"), seed=5)
    b = simulate(table("historical-service-time"), four_paths(4, svc=Exponential),
                 jobs("[j]\nbs=4k\nioengine=libaio\niodepth=16\nnumber_ios=5000\n"), seed=5)
    c = simulate(table("historical-service-time"), four_paths(4, svc=Exponential),
                 jobs("[j]\nbs=4k\nioengine=libaio\niodepth=16\nnumber_ios=5000\n"), seed=6)
    assert a.shares == b.shares and a.status_info == b.status_info
    assert a.status_info != c.status_info


def test_time_based_runtime_and_numjobs():
    r = simulate(table("queue-length"), four_paths(2, svc=Exponential),
                 jobs("[j]\nbs=4k\nioengine=libaio\niodepth=4\nnumjobs=3\nruntime=10ms\ntime_based\n"))
    r.check_accounting()
    assert len(r.jobs) == 3
    assert 10 * 10 ** 6 <= r.runtime_ns < 12 * 10 ** 6
    assert all(j.completed > 0 for j in r.jobs)


def test_hr_timer_start_times_in_bio_mode():
    """The timer's precision changes HST's view: jiffies start = far in the past."""
    from mpathlab.sim.engine import Simulation
    sim = Simulation(table("historical-service-time", "bio"), four_paths(1),
                     jobs("[j]\nbs=4k\nnumber_ios=1\n"), force_jiffies_start=True)
    r = sim.run()
    hst_a = int(r.status_info.split()[15])  # 8:0 A 0 <hst> <out> <stale>
    # jiffies-derived start is (uptime - 300 s) on a 1 h uptime: the sample is 300 s + 100 us
    assert hst_a == (300 * 10 ** 9 + 100_000) * 1024
    sim = Simulation(table("historical-service-time", "bio"), four_paths(1), jobs("[j]\nbs=4k\nnumber_ios=1\n"))
    r = sim.run()
    assert int(r.status_info.split()[15]) == (972 * 1024 + 100_000 * 1024 * 52 + 512) >> 10


def test_latency_histogram_percentiles_close_to_exact():
    rnd = random.Random(3)
    vals = [int(rnd.lognormvariate(11, 1)) for _ in range(20000)]
    st = LatencyStats()
    for v in vals:
        st.add(v)
    vals.sort()
    pct = st.percentiles((50.0, 90.0, 99.0, 99.9))
    for p in (50.0, 90.0, 99.0, 99.9):
        exact = vals[int(p / 100 * len(vals)) - 1]
        assert abs(pct["%f" % p] - exact) / exact < 0.02
    assert st.n == 20000 and st.min == vals[0] and st.max == vals[-1]
    assert st.mean == pytest.approx(sum(vals) / len(vals))


def test_fio_json_keys_and_units():
    jf = parse_fio("[global]\nrw=randwrite\nbs=4k\n[w]\nioengine=libaio\niodepth=4\nnumber_ios=2000\n")
    r = simulate(table("service-time"), four_paths(2, svc=Exponential), jf.jobs)
    doc = json.loads(json.dumps(fio_json(r, jf.global_options)))
    assert doc["global options"] == {"rw": "randwrite", "bs": "4k"}
    w = doc["jobs"][0]["write"]
    assert w["total_ios"] == 2000 and w["io_bytes"] == 2000 * 4096
    assert w["bw"] == w["bw_bytes"] // 1024
    assert w["runtime"] == round(r.runtime_ns / 1e6)
    assert w["iops"] == pytest.approx(1000.0 * 2000 / w["runtime"])     # fio: from the runtime in ms
    pct = w["clat_ns"]["percentile"]
    assert list(pct)[:3] == ["1.000000", "5.000000", "10.000000"] and len(pct) == 17
    assert "percentile" not in w["lat_ns"]          # lat_percentiles defaults to 0
    assert doc["jobs"][0]["read"]["total_ios"] == 0
    assert doc["mpath"]["shares"] == r.shares
    assert doc["mpath"]["dmsetup_status"].startswith("2 0 0 0 1 1 A 0 4 2 8:0 A 0 0 1 ")


# ------------------------------------------------------------ seed tables
@pytest.fixture(scope="module")
def outcomes():
    return {name: sc.run() for name, sc in SCENARIOS.items()}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_scenario_within_tolerance_of_every_published_cell(outcomes, name):
    o = outcomes[name]
    for label, col in o.scenario.published.items():
        for path, v in col.items():
            assert abs(o.columns[label][path] - v) <= o.scenario.tolerance, (label, path, o.columns[label][path], v)


def test_depth1_st_even_hst_moves_load_off_the_slow_path(outcomes):
    o = outcomes["hst-2020-depth1"]
    assert all(v == pytest.approx(0.25, abs=1e-3) for v in o.columns["ST"].values())
    assert o.columns["HST"]["sdd"] < 0.15
    assert abs(o.results["HST"].mean_deviation) < abs(o.results["ST"].mean_deviation) / 2


def test_depth64_st_close_to_hst(outcomes):
    o = outcomes["hst-2020-depth64"]
    assert abs(o.columns["ST"]["sdd"] - o.columns["HST"]["sdd"]) < 0.02


def test_jiffies_starve_slow_paths_ktime_does_not(outcomes):
    o = outcomes["hst-ktime-bio-10disk"]
    slow = ["sdg", "sdh", "sdi", "sdj", "sdk"]
    orig = sum(o.columns["HST (orig)"][p] for p in slow)
    ktime = sum(o.columns["HST (ktime)"][p] for p in slow)
    assert orig < 0.005
    assert ktime > 0.05 and o.columns["HST (ktime)"]["sdg"] > 0.03


@pytest.mark.parametrize("offset,stale_limited", [(None, False), (0, False), (-10 ** 9, False),
                                                  (100_000, True), (2 * 10 ** 9, True), (60 * 10 ** 9, True)])
def test_2020_depth64_depends_on_sched_clock_leading_ktime(offset, stale_limited):
    """HST 5.8-5.17 compared ktime stale_after with sched_clock: a lead makes every
    path stale, so busy winners are limited to equal usage (ST-like shares)."""
    import os
    from mpathlab.runner import run_simulation
    from mpathlab.scenarios import HERE
    from mpathlab.topology import load_topology
    topo = load_topology(os.path.join(HERE, "hst-2020.toml"))
    topo.sched_clock_offset_ns = offset
    jobs = parse_fio("[j]\nrw=randwrite\nbs=4k\nioengine=libaio\niodepth=64\nnumber_ios=40000\n")
    sdd = run_simulation(topo, jobs, selector="historical-service-time").shares["sdd"]
    if stale_limited:
        assert 0.09 < sdd < 0.13
    else:
        assert sdd < 0.02


def test_io_affinity_follows_the_submitting_cpu():
    paths = four_paths(2, svc=Exponential)
    tbl = "0 2097152 multipath 0 0 1 1 io-affinity 0 4 1 sda 3 sdb c sdc 30 sdd c0"
    jf = parse_fio("[a]\nbs=4k\nioengine=libaio\niodepth=2\nnumber_ios=300\ncpus_allowed=0-1\n"
                   "[b]\nbs=4k\nioengine=libaio\niodepth=2\nnumber_ios=100\ncpus_allowed=6\n")
    r = simulate(tbl, paths, jf.jobs)
    r.check_accounting()
    assert {p["name"]: p["completed"] for p in r.paths} == {"sda": 300, "sdb": 0, "sdc": 0, "sdd": 100}
    assert r.status_table.endswith("io-affinity 0 4 1 8:0 03 8:16 0c 8:32 30 8:48 c0 ")


def test_stonewall_runs_groups_one_after_another():
    jf = parse_fio("[a]\nrw=read\nbs=4k\nioengine=libaio\niodepth=4\nnumber_ios=400\n"
                   "[b]\nstonewall\nrw=write\nbs=4k\nioengine=libaio\niodepth=2\nruntime=5ms\ntime_based\n"
                   "[c]\nrw=write\nbs=4k\nioengine=libaio\niodepth=1\nnumber_ios=10\n")
    r = simulate(table("queue-length"), four_paths(2, svc=Exponential), jf.jobs)
    r.check_accounting()
    a, b, c = r.jobs
    assert b.start_ns == c.start_ns >= a.end_ns       # b and c wait for a; c runs beside b
    assert b.end_ns - b.start_ns >= 5 * 10 ** 6
    assert (a.completed, c.completed) == (400, 10) and b.completed > 0
    assert r.engine == "python"


def test_ramp_time_is_noted():
    assert parse_fio("[j]\nsize=4k\nramp_time=2\n").notes == [
        "ramp_time is not modelled: every I/O counts from the start"]


def test_request_based_without_blk_stats_starts_at_zero():
    """No QUEUE_FLAG_STATS on the path queue: io_start_time_ns stays 0, so HST's
    first sample on a path is the whole uptime (bucket 63: it replaces history)."""
    from mpathlab.sim.engine import Simulation
    sim = Simulation(table("historical-service-time"), four_paths(1), jobs("[j]\nbs=4k\nnumber_ios=1\n"),
                     rq_stats=False, uptime_ns=3600 * 10 ** 9)
    r = sim.run()
    assert int(r.status_info.split()[15]) == (3600 * 10 ** 9 + 100_000) * 1024
    sim = Simulation(table("historical-service-time"), four_paths(1), jobs("[j]\nbs=4k\nnumber_ios=1\n"))
    assert int(sim.run().status_info.split()[15]) == (972 * 1024 + 100_000 * 1024 * 52 + 512) >> 10


@pytest.mark.parametrize("seed", [2, 3])
@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_scenarios_hold_for_other_seeds(name, seed):
    assert SCENARIOS[name].run(seed=seed).within()


def test_per_path_latency_partitions_the_jobs_latency():
    """Each completed I/O is counted once, on the path that completed it (also across a failover)."""
    from mpathlab.sim.stats import LatencyStats, merged_latency
    from mpathlab.runner import run_files
    import os
    here = os.path.join(os.path.dirname(__file__), "..", "examples")
    res = run_files(os.path.join(here, "failover.toml"), os.path.join(here, "randwrite.fio"))
    from mpathlab.sim import fast
    assert res.engine == ("compiled" if fast.available() else "python")    # a failover runs in the core too
    total = merged_latency(res.jobs)
    per = LatencyStats()
    for p in res.paths:
        st = res.path_latency[p["name"]]
        assert st.n == p["completed"]
        per.merge(st)
    assert per.n == total.n and per.hist == total.hist and per.min == total.min and per.max == total.max
    # sdd (group 2, 300 us devices) is slower than sdc (group 1, 100 us devices)
    assert res.path_latency["sdd"].mean > res.path_latency["sdc"].mean


def test_redirect_events_hands_scheduled_events_to_a_sink_and_back():
    # the compiled core's bridge takes the target's events this way (sim/fast.py _Target)
    from mpathlab.sim.engine import EV_KICK, Simulation
    from mpathlab.sim.devices import PathModel, ServiceTime
    from mpathlab.workload.fio import parse_fio
    sim = Simulation("0 1024 multipath 0 0 1 1 round-robin 0 1 1 sda 1", [PathModel("sda", (8, 0), ServiceTime(1000))],
                     parse_fio("[j]\nnumber_ios=1\n").jobs)
    got = []
    before = list(sim._heap)
    sim.redirect_events(lambda t, kind, obj: got.append((t, kind, obj)))
    sim.schedule(5, EV_KICK, None)
    assert got == [(5, EV_KICK, None)] and sim._heap == before
    sim.redirect_events(None)
    sim.schedule(7, EV_KICK, None)
    assert got == [(5, EV_KICK, None)] and [e[0] for e in sim._heap if e[2] == EV_KICK] == [7]
