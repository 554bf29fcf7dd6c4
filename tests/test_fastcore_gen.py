"""sim/arrival.py's IoGen in the compiled core: mixed sizes, trims and open-loop arrivals run there,
run for run identical to the Python engine (test_fastcore.compare also checks trims, wake-ups and the
generator's final state); the rest of IoGen falls back, with its reason."""
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mpathlab.sim import PathModel, ServiceTime, fast
from mpathlab.sim.devices import Fault
from mpathlab.sim.engine import Simulation
from mpathlab.sim.host import HostModel
from mpathlab.workload.fio import parse_fio

from test_fastcore import PER_PATH, _py_table, _tagged, compare, make   # (skips the module if the core is not built)


def in_core(table, paths, job, **kw):
    """compare(), after checking the core takes the run."""
    why = fast.eligible(Simulation(table, paths, parse_fio(job).jobs, **kw))
    assert why == "", why
    return compare(table, paths, job, **kw)


def sizes_seen(job_state):
    return job_state.bytes_read + job_state.bytes_written + job_state.bytes_trimmed


# ------------------------------------------------------------------ mixed sizes
@pytest.mark.parametrize("selector", sorted(PER_PATH))
@pytest.mark.parametrize("mode", ["rq", "bio"])
@pytest.mark.parametrize("sizes", [
    "bssplit=4k/50:64k/30:16k/20",
    "bssplit=4k/10:8k:1m/20,16k/60:128k/40",          # a share left to split, per-direction lists
    "bsrange=4k-128k", "bsrange=1k-60k\nbs_unaligned", "bsrange=512-8k,64k-64k",
    "bs=4k,64k",
])
def test_mixed_sizes(selector, mode, sizes):
    table, paths = make(selector, mode, per_kib=200.0)
    a = in_core(table, paths, "[j]\nrw=randrw\n%s\nioengine=libaio\niodepth=16\nnumber_ios=2500\n" % sizes)
    (j,) = a.jobs
    assert j.completed == 2500 and j.bytes_trimmed == 0
    if sizes == "bs=4k,64k":
        assert j.bytes_read == 4096 * j.read_lat.n and j.bytes_written == 65536 * j.write_lat.n
    else:       # sizes vary: not every I/O has the job's smallest size
        assert sizes_seen(j) > j.spec.bs * j.completed


def test_bssplit_shares_reach_the_device_and_service_time_weighs_bytes():
    # two equal paths but the 1 MiB I/Os cost 1 ms more each (ns_per_kib): the bytes must reach the device
    table, paths = make("service-time", per_kib=1000.0, dist="const", n=2)
    a = in_core(table, paths, "[j]\nrw=randwrite\nbssplit=4k/90:1m/10\nioengine=libaio\niodepth=8\nnumber_ios=3000\n")
    (j,) = a.jobs
    big = (j.bytes_written - 4096 * 3000) // (1048576 - 4096)
    assert 200 < big < 400          # about 10% of 3000
    assert j.write_lat.max > 1_000_000      # a 1 MiB write costs its device over 1 ms


# ------------------------------------------------------------------ trims
@pytest.mark.parametrize("selector", sorted(PER_PATH))
@pytest.mark.parametrize("rw", ["trim", "randtrim", "trimwrite", "randtrimwrite"])
def test_trims(selector, rw):
    table, paths = make(selector)
    a = in_core(table, paths, "[j]\nrw=%s\nbs=8k\nioengine=libaio\niodepth=8\nsize=8m\n" % rw)
    (j,) = a.jobs
    assert j.bytes_trimmed == 8 << 20 and j.bytes_read == 0
    if "write" in rw:       # each block trimmed, then written with the trim's size
        assert j.bytes_written == 8 << 20 and j.trim_lat.n == j.write_lat.n == 1024
    else:
        assert j.bytes_written == 0 and j.trim_lat.n == 1024
    assert sum(w[2] for w in j.rate_windows.windows.values()) == j.bytes_trimmed


def test_trims_with_per_direction_sizes_and_bssplit():
    table, paths = make("queue-length", per_kib=100.0)
    in_core(table, paths, "[j]\nrw=randtrim\nbssplit=4k/50:64k/50,4k,16k/30:256k/70\nioengine=libaio\niodepth=4\nnumber_ios=1500\n")
    a = in_core(table, paths, "[j]\nrw=trimwrite\nbs=4k,8k,32k\nioengine=libaio\niodepth=4\nsize=4m\n")
    (j,) = a.jobs
    assert j.bytes_trimmed == 4 << 20 and j.bytes_written == j.bytes_trimmed       # writes take the trim's size


# ------------------------------------------------------------------ open loop
@pytest.mark.parametrize("selector", sorted(PER_PATH))
@pytest.mark.parametrize("process", ["linear", "poisson"])
@pytest.mark.parametrize("rate", ["rate_iops=20000", "rate=40m", "rate_iops=5000,15000", "rate=,8m"])
def test_rates(selector, process, rate):
    table, paths = make(selector, "rq")
    a = in_core(table, paths, "[j]\nrw=randrw\nbs=4k\n%s\nrate_process=%s\nioengine=libaio\niodepth=16\nnumber_ios=2000\n"
                % (rate, process))
    assert a.jobs[0].completed == 2000


@pytest.mark.parametrize("process", ["linear", "poisson"])
def test_rate_iops_spaces_submissions(process):
    table, paths = make("queue-length", dist="const")
    a = in_core(table, paths, "[j]\nrw=randread\nbs=4k\nrate_iops=20000\nrate_process=%s\nioengine=libaio\niodepth=16\n"
                              "number_ios=2000\n" % process)
    (j,) = a.jobs
    if process == "linear":
        # evenly spaced: the last of 2000 is due at 1999/20000 s; ahead of the rate fio reaps what is in
        # flight before it sleeps, which puts it up to a service time (50-350 us) behind, and it is done
        # 50-350 us after it goes out
        assert 99_950_000 + 50_000 <= j.end_ns <= 99_950_000 + 700_000
    else:                       # exponential gaps of mean 50 us: 100 ms give or take a few ms
        assert 90_000_000 < j.end_ns < 110_000_000


@pytest.mark.parametrize("selector", ["round-robin", "historical-service-time"])
@pytest.mark.parametrize("kind", ["complete", "issue"])
@pytest.mark.parametrize("blocks", [1, 3, 16])
def test_thinktime(selector, kind, blocks):
    table, paths = make(selector, "bio")
    job = ("[j]\nrw=randrw\nbs=4k\nthinktime=70us\nthinktime_blocks=%d\nthinktime_blocks_type=%s\nioengine=libaio\niodepth=8\n"
           "runtime=15ms\ntime_based\n" % (blocks, kind))
    a = in_core(table, paths, job)
    (j,) = a.jobs
    assert j.completed > 0 and j.end_ns >= 15_000_000


def test_thinktime_and_rate_with_startdelay_numjobs_and_bssplit():
    table, paths = make("service-time", per_kib=300.0)
    in_core(table, paths, "[a]\nrw=randread\nbssplit=4k/70:32k/30\nrate_iops=8000\nrate_process=poisson\n"
                          "iodepth=4\nnumjobs=3\nstartdelay=2ms\nnumber_ios=600\n"
                          "[b]\nrw=randwrite\nbsrange=4k-64k\nthinktime=30us\nthinktime_blocks=5\nioengine=libaio\niodepth=8\n"
                          "runtime=30ms\ntime_based\n"
                          "[c]\nrw=randtrim\nbs=16k\nrate=20m\nthinktime=100us\nthinktime_blocks=2\n"
                          "thinktime_blocks_type=issue\nioengine=libaio\niodepth=2\nnumber_ios=300\n")


def test_runtime_ends_while_the_job_sleeps():
    # the job sleeps (rate, think time) past its runtime: fio counts the sleep in the job's time
    table, paths = make("queue-length", dist="const")
    a = in_core(table, paths, "[j]\nrw=randread\nbs=4k\nrate_iops=300\nioengine=libaio\niodepth=1\nruntime=10ms\ntime_based\n")
    assert a.jobs[0].end_ns == 10_000_000
    # 2 ms I/Os and 1 ms think times: I/Os at 0, 3, 6 and 9 ms; the last completes at 11 ms, after the
    # runtime, and fio still thinks in full: 12 ms
    one = [PathModel("p0", (8, 0), ServiceTime(2_000_000))]
    b = in_core("0 2097152 multipath 0 0 1 1 queue-length 0 1 1 p0 1", one,
                "[j]\nrw=randread\nbs=4k\nthinktime=1ms\nioengine=libaio\niodepth=1\nruntime=10ms\ntime_based\n")
    assert b.jobs[0].completed == 4 and b.jobs[0].end_ns == 12_000_000


def test_timeline_step_is_planned_before_the_paced_jobs_first_submissions():
    # no runtime: the in-flight timeline steps by completions, from the I/O count planned before the run
    # (Simulation.run_plan): 398 of job k and number_ios of each paced clone, 598 -> a point every 2
    # completions; the paced clones' first I/Os at 0 must not change that (found by the property test below)
    table, paths = make("historical-service-time")
    a = in_core(table, paths, "[j]\nrw=read\nbs=512\nrate_iops=500\nioengine=libaio\niodepth=1\nnumjobs=2\nnumber_ios=100\n"
                              "[k]\nrw=randwrite\nbs=4k\nioengine=libaio\niodepth=4\nnumber_ios=398\n")
    assert a.completed == 598 and len(a.timeline) == 299


def test_a_size_bounded_generator_job_gets_a_bounded_timeline():
    # its I/O count is estimated from its bytes at its mean size: about 200 points, not one per completion
    table, paths = make("queue-length")
    a = in_core(table, paths, "[j]\nrw=randrw\nbssplit=4k/50:64k/50\nsize=64m\nioengine=libaio\niodepth=8\n")
    assert a.completed > 1500 and 150 <= len(a.timeline) <= 250


# ------------------------------------------------------------------ with the rest of the core
@pytest.mark.parametrize("mode", ["rq", "bio"])
def test_generators_with_cpus_tags_faults_and_messages(mode):
    table, paths = make("historical-service-time", mode, k=4, per_kib=150.0)
    _tagged(paths, [2, 0, 3, 0], ["none", "none", "mq-deadline", "none"])
    paths[1].faults = [Fault(2_000_000, "fail"), Fault(5_000_000, "reinstate", reinstate_after_ns=300_000)]
    a = in_core(table, paths, "[a]\nrw=randrw\nbssplit=4k/60:64k/40\nrate_iops=30000\nioengine=libaio\niodepth=16\nnumjobs=2\n"
                              "runtime=10ms\ntime_based\n[b]\nrw=trimwrite\nbsrange=8k-32k\nthinktime=20us\n"
                              "iodepth=4\nruntime=10ms\ntime_based\n",
                host=HostModel(2, 10_000, 20_000), messages=[(3_000_000, "fail_path p2"),
                                                              (6_000_000, "reinstate_path p2")],
                window_ns=1_000_000)
    assert a.paths[1]["errors"] > 0 and a.errored == 0


@pytest.mark.parametrize("selector", ["p2c 1 delay", "sed 0", "peak-ewma 0"])
def test_generators_with_python_selectors(selector):
    table = _py_table(selector, lambda i: "1")
    _, paths = make("queue-length", k=4, per_kib=500.0)
    in_core(table, paths, "[j]\nrw=randrw\nbssplit=4k/50:128k/50\nrate=100m\nrate_process=poisson\n"
                          "thinktime=10us\nthinktime_blocks=8\nioengine=libaio\niodepth=16\nnumjobs=2\nnumber_ios=1200\n")


def test_verify_on_a_read_only_job_has_nothing_to_verify_and_runs_in_the_core():
    # IoGen.verify needs writes or trims to read back: a reading job with verify= is the plain generator
    table, paths = make("service-time", per_kib=100.0)
    a = in_core(table, paths, "[j]\nrw=randread\nbsrange=4k-32k\nverify=md5\nsize=2m\nioengine=libaio\niodepth=4\n")
    assert a.jobs[0].bytes_read == 2 << 20


# ------------------------------------------------------------------ what stays in Python
@pytest.mark.parametrize("text, reason", [
    ("[j]\nrw=write\nbssplit=4k/50:8k/50\nverify=md5\nsize=256k\n", "verify needs the Python engine"),
    ("[a]\nrate_iops=1000\nflow=2\nnumber_ios=50\n[b]\nflow=1\nnumber_ios=50\n", "flow (fio's flow control)"),
    ("[j]\nbsrange=4k-16k\nlatency_target=1ms\nioengine=libaio\niodepth=8\nsize=256k\n", "latency_target needs"),
    ("[j]\nrw=randtrim\nioengine=libaio\niodepth=8\niodepth_low=2\nnumber_ios=100\n", "iodepth_low (draining"),
    ("[j]\nioengine=cpuio\ncpuload=50\nruntime=10ms\n", "cpuio burners"),
    ("[j]\nrw=randrw\nbs=4k,3g\nsize=12g\nnumber_ios=20\n", "block sizes of 2 GiB"),
    ("[j]\nrate=9007199254740992\nnumber_ios=20\n", "rates of 2^53 bytes/s"),
])
def test_the_rest_of_iogen_falls_back_with_its_reason(text, reason):
    table, paths = make("queue-length")
    jobs = parse_fio(text).jobs
    sim = Simulation(table, paths, jobs)
    assert reason in fast.eligible(sim)
    with pytest.raises(ValueError, match="compiled core cannot run"):
        Simulation(table, paths, jobs, engine="compiled").run()
    if "cpuio" not in text:         # (a burner needs the host's CPUs; its own tests run it)
        r = Simulation(table, paths, parse_fio(text.replace("number_ios=20", "number_ios=4")).jobs).run()
        assert r.engine == "python" and r.completed > 0


# ------------------------------------------------------------------ random combinations
SIZE = st.sampled_from(["512", "4k", "8k", "16k", "64k", "128k", "1m"])


@st.composite
def sizes(draw):
    kind = draw(st.sampled_from(["bs", "bs3", "bsrange", "bssplit", "bssplit3"]))
    if kind == "bs":
        return "bs=%s" % draw(SIZE)
    if kind == "bs3":
        return "bs=%s" % ",".join(draw(st.lists(SIZE, min_size=2, max_size=3)))
    if kind == "bsrange":
        lo, hi = sorted(draw(st.lists(st.integers(1, 256), min_size=2, max_size=2)))
        text = "bsrange=%dk-%dk" % (lo, hi)
        if draw(st.booleans()):
            lo2, hi2 = sorted(draw(st.lists(st.integers(1, 64), min_size=2, max_size=2)))
            text += ",%dk-%dk" % (lo2, hi2)
        return text + ("\nbs_unaligned" if draw(st.booleans()) else "")

    def one():
        n = draw(st.integers(1, 5))
        pcts = draw(st.lists(st.one_of(st.none(), st.integers(1, 100)), min_size=n, max_size=n))
        given_total = 0
        items = []
        for size, pct in zip(draw(st.lists(SIZE, min_size=n, max_size=n)), pcts):
            if pct is not None and given_total + pct <= 100:
                given_total += pct
                items.append("%s/%d" % (size, pct))
            else:
                items.append(size)
        return ":".join(items)
    return "bssplit=" + ",".join(one() for _ in range(1 if kind == "bssplit" else draw(st.integers(2, 3))))


@st.composite
def open_loop(draw):
    lines = []
    r = draw(st.sampled_from(["", "rate_iops", "rate"]))
    if r == "rate_iops":
        lines.append("rate_iops=%s" % ",".join(str(draw(st.integers(500, 60000))) for _ in
                                               range(draw(st.integers(1, 3)))))
    elif r == "rate":
        lines.append("rate=%s" % ",".join("%dk" % draw(st.integers(2000, 400000)) for _ in
                                          range(draw(st.integers(1, 3)))))
    if r:
        lines.append("rate_process=%s" % draw(st.sampled_from(["linear", "poisson"])))
    if draw(st.booleans()):
        lines.append("thinktime=%dus" % draw(st.integers(1, 400)))
        lines.append("thinktime_blocks=%d" % draw(st.integers(1, 20)))
        lines.append("thinktime_blocks_type=%s" % draw(st.sampled_from(["complete", "issue"])))
    return "\n".join(lines)


@st.composite
def gen_job(draw):
    rw = draw(st.sampled_from(["read", "randwrite", "rw", "randrw", "trim", "randtrim", "trimwrite",
                               "randtrimwrite"]))
    numjobs = draw(st.integers(1, 3))
    lines = ["[j]", "rw=%s" % rw, draw(sizes()), draw(open_loop()), "iodepth=%d" % draw(st.integers(1, 32)),
             "numjobs=%d" % numjobs]
    if rw in ("rw", "randrw"):
        lines.append("rwmixread=%d" % draw(st.integers(0, 100)))
    end = draw(st.sampled_from(["number_ios", "size", "runtime"]))
    if end == "number_ios":
        lines.append("number_ios=%d" % draw(st.integers(100, 3000 // numjobs)))
    elif end == "size":
        lines.append("size=%dm" % draw(st.integers(2, 16)))
        lines.append("number_ios=%d" % (3000 // numjobs))      # a few thousand I/Os at most
    else:
        lines += ["runtime=%dms" % draw(st.integers(3, 20)), "time_based"]
    if draw(st.booleans()):
        lines.append("startdelay=%dus" % draw(st.integers(1, 2000)))
    text = "\n".join(l for l in lines if l) + "\n"
    if draw(st.booleans()):
        # a second job beside it: the plain closed loop, still in the core's own loop
        text += "[k]\nrw=randwrite\nbs=4k\nioengine=libaio\niodepth=4\nnumber_ios=%d\n" % draw(st.integers(1, 500))
    return text


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(gen_job(), st.sampled_from(sorted(PER_PATH) + ["p2c 1 delay", "sed 0"]), st.sampled_from(["rq", "bio"]),
       st.sampled_from([0.0, 400.0]), st.sampled_from(["", "cpus", "tags", "fault"]))
def test_random_generator_jobs_are_identical_in_both_engines(job, selector, mode, per_kib, extra):
    if selector in PER_PATH:
        table, paths = make(selector, mode, per_kib=per_kib, k=4)
    else:
        table = _py_table(selector, lambda i: "1", mode=mode)
        _, paths = make("queue-length", per_kib=per_kib, k=4)
    kw = {}
    if extra == "cpus":     # the host's CPUs: submission and completion costs
        kw["host"] = HostModel(2, 8_000, 12_000)
    elif extra == "tags":   # path tags, with and without a scheduler
        _tagged(paths, [2, 0, 3, 1], ["none", "none", "mq-deadline", "none"])
    elif extra == "fault":  # a path fails and comes back (the Python target's end_io and reinstate)
        paths[1].faults = [Fault(1_000_000, "fail"), Fault(3_000_000, "reinstate", reinstate_after_ns=200_000)]
    a = in_core(table, paths, job, **kw)
    for j in a.jobs:
        # every byte accounted once, by direction, in the job's totals and in its rate windows
        w = j.rate_windows.windows.values()
        assert [sum(x[d] for x in w) for d in range(3)] == [j.bytes_read, j.bytes_written, j.bytes_trimmed]
        assert sum(x[3] + x[4] + x[5] for x in w) == j.completed


def test_fio_examples_the_core_takes_run_identically():
    # fio's own example job files (tests/data/fio-examples), a thousand I/Os each at most: every one the
    # core takes gives the Python engine's results, and the ones with mixed sizes or rates are among them
    import os
    from test_fio_examples import EXPECTED_REFUSED, HERE, PARSED, TABLE
    from mpathlab.workload.fio import load_fio
    from mpathlab.topology import topology_from_table
    ran = []
    for name in PARSED:
        if name in EXPECTED_REFUSED:
            continue
        jobs = load_fio(os.path.join(HERE, name)).jobs
        for j in jobs:
            j.number_ios = min(j.number_ios or 1000, 1000)
            j.runtime_ns = min(j.runtime_ns or 20_000_000, 20_000_000)
            j.startdelay_ns = min(j.startdelay_ns, 1_000_000)
            j.numjobs = min(j.numjobs, 4)
            j.lat_log = j.bw_log = j.iops_log = None
        topo = topology_from_table(TABLE, service="exponential:100us", parallelism=4)
        if fast.eligible(Simulation(topo.table, topo.paths, jobs)):
            continue
        compare(topo.table, topo.paths, jobs)
        ran.append(name)
    assert {"1mbs_clients.fio", "fixed-rate-submission.fio", "iometer-file-access-server.fio", "jesd219.fio",
            "poisson-rate-submission.fio"} <= set(ran) and len(ran) >= 30
