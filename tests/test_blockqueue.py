"""Tags, the blk-mq requeue/restart rules and host CPU costs (sim/blockqueue.py, sim/host.py).

Each trace below is worked out by hand from the kernel's rules (see the
docstring of sim/blockqueue.py); the comments give the derivation.
"""
import json

import pytest

from mpathlab.sim.blockqueue import BLK_MQ_RESOURCE_DELAY_NS
from mpathlab.sim.devices import Exponential, PathModel, ServiceTime
from mpathlab.sim.engine import Simulation, simulate
from mpathlab.sim.host import HostModel
from mpathlab.workload.fio import JobSpec
from mpathlab.topology import TopologyError, load_topology

MS = 1_000_000


def job(depth, ios=None, runtime_ns=None):
    j = JobSpec("j")
    j.rw, j.read_fraction, j.random, j.iodepth = "randwrite", 0.0, True, depth
    if ios:
        j.number_ios = ios
    if runtime_ns:
        j.runtime_ns, j.time_based = runtime_ns, True
    return j


def table(selector, n, bio=False):
    feat = "2 queue_mode bio" if bio else "0"
    return "0 2097152 multipath %s 0 1 1 %s 0 %d 1 %s" % (   # 1 GiB: number_ios ends the jobs
        feat, selector, n, " ".join("8:%d 1" % (16 * i) for i in range(n)))


def two_paths(**slow):
    return [PathModel("A", (8, 0), ServiceTime(1 * MS), parallelism=64),
            PathModel("B", (8, 16), ServiceTime(4 * MS), parallelism=64, **slow)]


def record_start_io(sim):
    """(time in ms, path) of every start_io: the selector's successful mappings."""
    ps = sim.mp.priority_groups[0].ps
    log = []
    orig = ps.start_io
    names = {p: sim.dev_of_pgpath[p].model.name for p in sim.mp.pgpaths}

    def start_io(path, nr_bytes):
        log.append((sim.now / MS, names[path]))
        return orig(path, nr_bytes)
    ps.start_io = start_io
    ps.has_io_hooks = True
    return log


def test_request_based_round_robin_one_tag_on_slow_path():
    # A: 1 ms, unlimited tags; B: 4 ms, one tag (no scheduler).  RR list [A, B],
    # each selection moves the chosen path to the tail.  iodepth 3, 9 I/Os.
    # Every queue run goes through the one run_work; its latest request wins
    # (mod_delayed_work); work latency 0 here.
    # t=0  run: io1->A, io2->B (B's tag), io3->A.                      list [B,A]
    # t=1  io1, io3 done; io4, io5 submitted; run: io4 selects B: no tag,
    #      REQUEUE, queue not marked SCHED_RESTART -> run again now: marks
    #      it, io4 -> A; io5 selects B: no tag -> run in 3 ms.          [A,B]
    # t=2  io4 done: restart; io6 submitted; run: io5 -> A, io6 selects B:
    #      no tag -> run in 3 ms (replacing the one due at 4).          [A,B]
    # t=3  io5 done; io7 submitted; run: io6 -> A; io7 selects B: no tag.
    # t=4  io2 (B) and io6 done; io8, io9 submitted; run: io7 -> A, io8 -> B
    #      (free now), io9 -> A.  t=5 io7, io9 done; t=8 io8 done.
    #      A 7 I/Os, B 2; B refused 4 times.
    sim = Simulation(table("round-robin", 2), two_paths(hw_queue_depth=1), [job(3, ios=9)], engine="python")
    log = record_start_io(sim)
    res = sim.run()
    res.check_accounting()
    assert log == [(0, "A"), (0, "B"), (0, "A"), (1, "A"), (2, "A"), (3, "A"), (4, "A"), (4, "B"), (4, "A")]
    assert [p["completed"] for p in res.paths] == [7, 2]
    assert sim.blk.resource_stalls == 4
    assert res.jobs[0].end_ns == 8 * MS
    # without the tag limit round-robin alternates: B gets 4 of 9
    free = simulate(table("round-robin", 2), two_paths(), [job(3, ios=9)], engine="python")
    assert [p["completed"] for p in free.paths] == [5, 4]


def test_request_based_stall_waits_for_resource_delay_without_completions():
    # One path, one tag (10 ms), iodepth 2: io2 finds no tag; the immediate
    # re-run marks SCHED_RESTART and fails again; the 3 ms work fails at 3, 6
    # and 9 ms (each re-arming it), and io1's completion at 10 ms restarts the
    # queue (replacing the work due at 12 ms): io2 goes at 10 ms.
    paths = [PathModel("B", (8, 0), ServiceTime(10 * MS), hw_queue_depth=1)]
    sim = Simulation(table("round-robin", 1), paths, [job(2, ios=2)], engine="python")
    log = record_start_io(sim)
    res = sim.run()
    assert log == [(0, "B"), (10, "B")]
    # t=0: fail, immediate re-run fails; delayed runs at 3, 6, 9 ms fail: 5
    assert sim.blk.resource_stalls == 2 + 3
    assert res.jobs[0].end_ns == 20 * MS
    assert BLK_MQ_RESOURCE_DELAY_NS == 3 * MS


def test_bio_based_submitter_sleeps_on_full_path():
    # bio-based RR, A 1 ms unlimited, B 4 ms one tag, no scheduler, iodepth 4, 6 I/Os.
    # t=0: io1->A, io2->B (tag), io3->A, io4 selects B (start_io runs at map)
    #      and the task sleeps in tag allocation holding io4.
    # t=1: io1, io3 done; the task is asleep, so nothing is submitted: A idles.
    # t=4: io2 done, its tag goes to io4 (B until 8); the task wakes and
    #      submits io5->A (done 5), io6 selects B and the task sleeps again.
    # t=8: io4 done, io6 gets the tag (done 12).  A: 3 I/Os, B: 3; end 12 ms.
    sim = Simulation(table("round-robin", 2, bio=True), two_paths(hw_queue_depth=1), [job(4, ios=6)],
                     engine="python")
    log = record_start_io(sim)
    res = sim.run()
    res.check_accounting()
    assert log == [(0, "A"), (0, "B"), (0, "A"), (0, "B"), (4, "A"), (4, "B")]
    assert [p["completed"] for p in res.paths] == [3, 3]
    assert res.jobs[0].end_ns == 12 * MS
    lat = res.jobs[0].write_lat
    assert (lat.min, lat.max) == (1 * MS, 8 * MS)     # io4: mapped at 0, started at 4, done at 8


def test_bio_based_scheduler_tags_queue_in_path_before_sleeping():
    # B with mq-deadline: 1 driver tag, nr_requests = 2*min(1,128) = 2 scheduler tags.
    # bio RR, iodepth 6, 6 I/Os: io1 A, io2 B (started), io3 A, io4 B (sched tag,
    # waits in the elevator), io5 A, io6 B: no scheduler tag, the task sleeps.
    # t=4: io2 done: io4 starts (to 8); io6 gets the scheduler tag and waits.
    # t=8: io4 done: io6 starts (to 12).  End 12 ms, A 3, B 3.
    sim = Simulation(table("round-robin", 2, bio=True), two_paths(hw_queue_depth=1, scheduler="mq-deadline"),
                     [job(6, ios=6)], engine="python")
    assert sim.devices[1].model.nr_sched_tags == 2
    res = sim.run()
    res.check_accounting()
    assert [p["completed"] for p in res.paths] == [3, 3]
    assert res.jobs[0].end_ns == 12 * MS
    assert res.jobs[0].write_lat.max == 12 * MS


def test_request_based_clone_released_without_driver_tag_ends_with_start_zero():
    # Request-based service-time; both paths 1 tag with mq-deadline (2 scheduler
    # tags).  iodepth 3: io1->A, io2->B are started (io_start_time_ns = ktime of
    # the driver's start, t=0).  io3 gets a scheduler tag on A (ST's tie picks
    # the first of the rotated list) but no driver tag: multipath_release_clone
    # calls end_io with io_start_time_ns 0, then BLK_STS_RESOURCE.
    paths = [PathModel("A", (8, 0), ServiceTime(1 * MS), hw_queue_depth=1, scheduler="mq-deadline"),
             PathModel("B", (8, 16), ServiceTime(1 * MS), hw_queue_depth=1, scheduler="mq-deadline")]
    sim = Simulation(table("service-time", 2), paths, [job(3, ios=3)], engine="python")
    ps = sim.mp.priority_groups[0].ps
    calls = []
    orig = ps.end_io

    def end_io(path, nr_bytes, start):
        calls.append((sim.now, sim.dev_of_pgpath[path].model.name, start))
        return orig(path, nr_bytes, start)
    ps.end_io = end_io
    base = sim._base
    res = sim.run()
    res.check_accounting()
    released = [c for c in calls if c[2] == 0]
    assert released and released[0][0] == 0          # at t=0, before anything started on it
    done = [c for c in calls if c[2] != 0]
    assert done[:2] == [(1 * MS, "A", base), (1 * MS, "B", base)]
    # every start_io was undone: nothing left in flight
    assert all(ps._info[p].in_flight_size == 0 for p in sim.mp.pgpaths)


def test_bio_based_start_time_is_dm_map_not_driver_start():
    # bio-based selectors time from dm's map (ktime with DM_PS_USE_HR_TIMER),
    # not from the driver's start: on one path with one tag, io2 is mapped at 0,
    # waits for io1's tag until 4 ms, and its end_io at 8 ms gets start 0.
    paths = [PathModel("B", (8, 0), ServiceTime(4 * MS), hw_queue_depth=1)]
    sim = Simulation(table("historical-service-time", 1, bio=True), paths, [job(2, ios=2)], engine="python")
    ps = sim.mp.priority_groups[0].ps
    calls = []
    orig = ps.end_io

    def end_io(path, nr_bytes, start):
        calls.append((sim.now, start - sim._base))
        return orig(path, nr_bytes, start)
    ps.end_io = end_io
    sim.run()
    assert calls == [(4 * MS, 0), (8 * MS, 0)]


def test_cpu_cost_is_a_server():
    # One CPU, submit 100 us, complete 200 us; one path 1 ms, iodepth 2, 2 I/Os.
    # t=0      io1 submission on the CPU (to 0.1); the task is busy meanwhile
    # t=0.1    io1 mapped (device to 1.1); io2 created and submitted (CPU to 0.2)
    # t=0.2    io2 mapped (device to 1.2)
    # t=1.1    io1 completion on the CPU (to 1.3); t=1.2 io2 waits for the CPU
    # t=1.3    io1 done (latency 1.3); io2 completion runs to 1.5 (latency 1.4)
    paths = [PathModel("A", (8, 0), ServiceTime(1 * MS), parallelism=8)]
    sim = Simulation(table("round-robin", 1), paths, [job(2, ios=2)], engine="python",
                     host=HostModel(1, 100_000, 200_000))
    res = sim.run()
    res.check_accounting()
    lat = res.jobs[0].write_lat
    assert (lat.min, lat.max) == (1_300_000, 1_400_000)
    assert res.jobs[0].end_ns == 1_500_000
    assert sim.host.cpus[0].busy_ns == 600_000


def test_cpu_bound_throughput():
    # 1 CPU costing 0.5 ms per I/O in all caps IOPS at 2000 whatever the paths can do.
    paths = [PathModel("A", (8, 0), ServiceTime(0), parallelism=64)]
    res = simulate(table("round-robin", 1), paths, [job(8, ios=2000)], engine="python",
                   host=HostModel(1, 200_000, 300_000))
    assert res.runtime_ns == pytest.approx(2000 * 500_000, rel=0.01)


def test_huge_tag_count_gives_exactly_the_old_result():
    def paths(**kw):
        return [PathModel("A", (8, 0), Exponential(300_000), parallelism=2, **kw),
                PathModel("B", (8, 16), Exponential(900_000), parallelism=1, delay_ns=50_000, **kw)]
    for sel in ("round-robin", "queue-length", "service-time", "historical-service-time"):
        for bio in (False, True):
            old = simulate(table(sel, 2, bio), paths(), [job(16, ios=3000)], engine="python", seed=5)
            new = simulate(table(sel, 2, bio), paths(hw_queue_depth=10 ** 6, scheduler="mq-deadline",
                                                     nr_requests=10 ** 6),
                           [job(16, ios=3000)], engine="python", seed=5)
            assert [p["completed"] for p in new.paths] == [p["completed"] for p in old.paths]
            assert new.jobs[0].write_lat.mean == old.jobs[0].write_lat.mean
            assert new.runtime_ns == old.runtime_ns
            assert new.status_info == old.status_info


def test_zero_cpu_cost_host_is_the_old_run():
    paths = [PathModel("A", (8, 0), Exponential(300_000), parallelism=2),
             PathModel("B", (8, 16), Exponential(900_000))]
    old = simulate(table("service-time", 2), paths, [job(8, ios=2000)], engine="python")
    new = simulate(table("service-time", 2), paths, [job(8, ios=2000)], engine="python", host=HostModel(2))
    assert new.shares == old.shares and new.runtime_ns == old.runtime_ns


def test_hard_stop_counts_io_held_in_queues():
    # time-based with a stall: everything still waiting in the dm queue, on a
    # CPU or asleep is counted as pending, so the accounting invariant holds.
    paths = [PathModel("A", (8, 0), ServiceTime(2 * MS), hw_queue_depth=1)]
    for bio in (False, True):
        res = simulate(table("round-robin", 1, bio), paths, [job(8, runtime_ns=20 * MS)], engine="python",
                       drain_ns=1, host=HostModel(1, 10_000, 10_000))
        res.check_accounting()


def _write(tmp_path, text):
    p = tmp_path / "t.toml"
    p.write_text(text)
    return str(p)


BASE = """[multipath]
table = "0 2097152 multipath 0 0 1 1 round-robin 0 1 1 8:0 1"
[paths.a]
devt = "8:0"
service = "1ms"
"""


@pytest.mark.parametrize("extra,line,word", [
    ("hw_queue_depth = 0\n", 6, "hw_queue_depth"),
    ("nr_hw_queues = -2\n", 6, "nr_hw_queues"),
    ("scheduler = \"cfq\"\n", 6, "scheduler"),
    ("nr_requests = 8\n", 6, "needs a scheduler"),
    ("[host]\ncpus = 0\n", 7, "cpus"),
    ("[host]\nsubmit_cost = \"-3us\"\n", 7, "submit_cost"),
    ("[host]\nsockets = 1\n", 7, "sockets"),
    ("[host]\nsteal = 1.5\n", 7, "steal"),
    ("[host]\nsteal_period = \"0ms\"\n", 7, "steal_period"),
    ("[host]\ndispatch_cost = \"-1us\"\n", 7, "dispatch_cost"),
    ("[host]\ndispatch_cost = \"3 parsecs\"\n", 7, "dispatch_cost"),
    ("[host]\ncompletion = \"irq\"\n", 7, "completion"),
    ("[host]\nwoken_issue = \"-7us\"\n", 7, "woken_issue"),
    ("[host]\nwoken_late = \"soon\"\n", 7, "woken_late"),
    ("[host]\nwoken_late_share = 1.5\n", 7, "woken_late_share"),
    ("[host]\nwoken_late_share = true\n", 7, "woken_late_share"),
])
def test_topology_keys_rejected_with_line(tmp_path, extra, line, word):
    with pytest.raises(TopologyError) as e:
        load_topology(_write(tmp_path, BASE + extra))
    msg = str(e.value)
    assert msg.split(": ", 1)[0].endswith("t.toml:%d" % line) and word in msg and "\n" not in msg


def test_topology_keys_reach_the_models(tmp_path):
    topo = load_topology(_write(tmp_path, BASE + 'hw_queue_depth = 4\nnr_hw_queues = 2\nscheduler = "mq-deadline"\n'
                                "[host]\ncpus = 2\nsubmit_cost = \"1ms\"\ncomplete_cost = \"2ms\"\n"
                                "dispatch_cost = \"3us\"\ncompletion = \"interrupt\"\nwoken_issue = \"7us\"\n"
                                "woken_late = \"9us\"\nwoken_late_share = 0.01\n"))
    m = topo.paths[0]
    assert (m.nr_tags, m.nr_sched_tags) == (8, 16)      # 2 x min(4, 128) per hw queue
    assert (topo.host.cpus, topo.host.submit_ns, topo.host.complete_ns) == (2, MS, 2 * MS)
    assert (topo.host.steal, topo.host.steal_period_ns, topo.host.dispatch_ns) == (0.0, 6 * MS, 3000)
    assert (topo.host.completion_irq, topo.host.woken_issue_ns) == (True, 7000)
    assert (topo.host.woken_late_ns, topo.host.woken_late_share) == (9000, 0.01)
    assert topo.sim_kwargs()["host"] is topo.host


def test_wake_cost_only_when_the_cpu_was_idle():
    # 1 CPU: submit 100 us, complete 200 us, wake 1 ms; path 1 ms; iodepth 1, 2 I/Os.
    # t=0    io1 submission: the CPU was idle only since 0 (now): no wake -> 0.1
    # t=1.1  completion finds the CPU idle since 0.1: wakes 1 ms, works 0.2 -> 2.3
    # t=2.3  io2 submission: idle since 2.3 = now, no wake -> 2.4; device -> 3.4
    # t=3.4  completion wakes again -> 4.6.  Both latencies 2.3 ms; CPU busy 0.6 ms.
    paths = [PathModel("A", (8, 0), ServiceTime(1 * MS))]
    sim = Simulation(table("round-robin", 1), paths, [job(1, ios=2)], engine="python",
                     host=HostModel(1, 100_000, 200_000, wake_ns=1 * MS))
    res = sim.run()
    lat = res.jobs[0].write_lat
    assert (lat.min, lat.max, res.jobs[0].end_ns) == (2_300_000, 2_300_000, 4_600_000)
    assert sim.host.cpus[0].busy_ns == 600_000


def test_finite_queues_do_not_explain_the_2020_depth64_hst_column():
    # README "Shipped scenarios": with the fixed (ktime) HST, giving the 2020
    # scenario's paths a finite queue (8 or 16 tags, with or without a
    # scheduler) still starves sdd at depth 64, far from the published 0.112
    # that the sched_clock lead reproduces; so the scenario keeps that assumption.
    import copy
    import os
    from mpathlab import scenarios
    from mpathlab.runner import run_simulation
    from mpathlab.workload.fio import load_fio
    here = os.path.dirname(scenarios.__file__)
    topo = load_topology(os.path.join(here, "hst-2020.toml"))
    jobs = load_fio(os.path.join(here, "hst-2020-depth64.fio"))
    for qd, sched in ((8, "none"), (16, "mq-deadline")):
        t = copy.copy(topo)
        t.paths = [copy.copy(p) for p in topo.paths]
        for p in t.paths:
            p.hw_queue_depth, p.scheduler = qd, sched
        t.sched_clock_offset_ns = None
        res = run_simulation(t, jobs, selector="historical-service-time")
        assert res.shares["sdd"] < 0.03


@pytest.mark.parametrize("bio", [False, True])
@pytest.mark.parametrize("selector", ["round-robin", "service-time", "historical-service-time"])
def test_faults_with_tags_and_cpus_keep_accounting(bio, selector):
    # a path failing and coming back while I/O waits for its tags (in the dm
    # queue, asleep, or in the path queue): nothing is lost or counted twice
    from mpathlab.sim.devices import Fault
    paths = [PathModel("A", (8, 0), Exponential(1 * MS), parallelism=4, hw_queue_depth=2, scheduler="mq-deadline"),
             PathModel("B", (8, 16), Exponential(3 * MS), parallelism=4, hw_queue_depth=1,
                       faults=[Fault(20 * MS, "fail"), Fault(60 * MS, "reinstate", reinstate_after_ns=5 * MS)])]
    feat = "3 queue_mode bio queue_if_no_path" if bio else "1 queue_if_no_path"
    t = "0 2097152 multipath %s 0 1 1 %s 0 2 1 8:0 1 8:16 1" % (feat, selector)
    for engine in ("python", "auto"):
        res = simulate(t, paths, [job(16, ios=2000)], engine=engine, host=HostModel(2, 20_000, 10_000))
        res.check_accounting()
        assert res.completed + res.errored == 2000
        assert res.paths[1]["errors"] > 0 and res.errored == 0   # queue_if_no_path: every I/O completes
        assert "queue_if_no_path" in res.status_table


@pytest.mark.parametrize("bio", [False, True])
def test_each_cpu_uses_its_own_hardware_queue(bio):
    # One path, 1 ms, one tag per hardware queue; two job clones (CPUs 0 and 1),
    # iodepth 1, 2 I/Os each.  Two hardware queues: each clone has a tag of its
    # own, both finish at 2 ms.  One: the four I/Os share the tag and run one
    # after another (bio: each clone sleeps while the other holds it): 4 ms.
    def run(nr_hw_queues):
        paths = [PathModel("A", (8, 0), ServiceTime(1 * MS), parallelism=4, hw_queue_depth=1,
                           nr_hw_queues=nr_hw_queues)]
        j = job(1, ios=2)
        j.numjobs = 2
        res = simulate(table("round-robin", 1, bio), paths, [j], engine="python")
        res.check_accounting()
        return [c.end_ns for c in res.jobs], res.paths[0]["peak_in_flight"]
    assert run(2) == ([2 * MS, 2 * MS], 2)
    ends, peak = run(1)
    # bio-based: the sleeping clone's I/O is already mapped to the path (in flight for dm)
    assert max(ends) == 4 * MS and peak == (2 if bio else 1)


def test_steal_takes_the_cpu_in_pieces():
    # 1 CPU, submit 100 us, complete 100 us, steal 0.5 of every 1 ms (500 us
    # arriving at t = 1, 2, ... ms, queued behind the work in service); path
    # 300 us; iodepth 1, 3 I/Os.
    # io1: CPU 0-0.1, device 0.1-0.4, CPU 0.4-0.5: done 0.5 (latency 0.5)
    # io2: CPU 0.5-0.6, device 0.6-0.9, CPU 0.9-1.0; the steal arriving at 1.0
    #      (its event is older) queues behind it and runs 1.0-1.5; io2 done 1.0
    # io3: created at 1.0, submission waits for the steal: CPU 1.5-1.6, device
    #      1.6-1.9, CPU 1.9-2.0 (the steal of 2.0 queues behind it): done 2.0 (latency 1.0)
    # at 3.0 nothing is left to run and the steals stop.  CPU busy 6 x 0.1 + 2 x 0.5.
    paths = [PathModel("A", (8, 0), ServiceTime(300_000))]
    sim = Simulation(table("round-robin", 1), paths, [job(1, ios=3)], engine="python",
                     host=HostModel(1, 100_000, 100_000, steal=0.5, steal_period_ns=1 * MS))
    res = sim.run()
    res.check_accounting()
    assert res.jobs[0].end_ns == 2 * MS
    lat = res.jobs[0].write_lat
    assert (lat.min, lat.max) == (500_000, 1 * MS)
    assert sim.host.cpus[0].busy_ns == 6 * 100_000 + 2 * 500_000


def test_best_counts_only_the_servers_tags_can_fill():
    from mpathlab.sim.devices import best_distribution
    a = PathModel("a", (8, 0), ServiceTime(1 * MS), parallelism=8, hw_queue_depth=2)
    b = PathModel("b", (8, 16), ServiceTime(1 * MS), parallelism=2)
    c = PathModel("c", (8, 32), ServiceTime(1 * MS), parallelism=2, hw_queue_depth=1, nr_hw_queues=4)
    assert best_distribution([a, b, c], 4096) == {"a": 1 / 3, "b": 1 / 3, "c": 1 / 3}


def test_work_latency_delays_the_asynchronous_queue_runs():
    # One path, one tag, 1 ms; iodepth 2, 2 I/Os; request-based; kblockd work
    # runs 0.5 ms after it is asked for.  The submissions' run at 0.5: io1
    # starts (done 1.5), io2 finds no tag -> run at 1.0: io2 fails again, marks
    # SCHED_RESTART -> run in 3 ms (4.5).  t=1.5: io1 done, restart -> run at
    # 2.0 (replacing 4.5): io2 starts, done 3.0.  Without the latency: 2.0.
    paths = [PathModel("A", (8, 0), ServiceTime(1 * MS), hw_queue_depth=1)]
    for latency, end in ((0, 2 * MS), (500_000, 3 * MS)):
        sim = Simulation(table("round-robin", 1), paths, [job(2, ios=2)], engine="python",
                         host=HostModel(1, work_latency_ns=latency))
        res = sim.run()
        assert res.jobs[0].end_ns == end and sim.blk.resource_stalls == 2


def test_cli_model_hw_queue_depth(tmp_path, capsys):
    from mpathlab.cli import main
    job_file = tmp_path / "j.fio"
    job_file.write_text("[j]\nrw=randwrite\nbs=4k\nioengine=libaio\niodepth=8\nnumber_ios=200\n")
    line = "0 2097152 multipath 0 0 1 1 round-robin 0 2 1 sda 1 sdb 1"
    assert main(["run", "--table", line, "--service", "1ms", "--parallelism", "8",
                 "--model", "sdb,hw_queue_depth=1", "--json", str(job_file)]) == 0
    out = json.loads(capsys.readouterr().out)
    peaks = {p["name"]: p["peak_in_flight"] for p in out["mpath"]["paths"]}
    assert peaks["sdb"] == 1 and peaks["sda"] > 1
    assert main(["run", "--table", line, "--model", "sdb,hw_queue_depth=0", str(job_file)]) == 3
    assert "hw_queue_depth" in capsys.readouterr().err


def test_dispatch_cost_maps_one_request_per_cost():
    # One path, no tag limit, 1 ms; iodepth 4, 4 I/Os submitted at 0; request-based; the dm queue's run maps
    # one request per 100 us: at 0, 0.1, 0.2 and 0.3 ms, done at 1.0 .. 1.3 ms (without the cost: all at 1.0).
    # The runs the later submissions ask for while the first is under way leave their requests to it.
    paths = [PathModel("A", (8, 0), ServiceTime(1 * MS), parallelism=4)]
    for cost, end in ((0, 1 * MS), (100_000, 1_300_000)):
        sim = Simulation(table("round-robin", 1), paths, [job(4, ios=4)], engine="python",
                         host=HostModel(1, dispatch_ns=cost))
        res = sim.run()
        assert res.jobs[0].end_ns == end and res.paths[0]["completed"] == 4
    # bio-based dm has no dm queue: the cost does not apply
    sim = Simulation(table("round-robin", 1, bio=True), paths, [job(4, ios=4)], engine="python",
                     host=HostModel(1, dispatch_ns=100_000))
    assert sim.run().jobs[0].end_ns == 1 * MS


@pytest.mark.parametrize("tags,batch", [(12, 1), (16, 2), (24, 3), (64, 8)])
@pytest.mark.parametrize("engine", ["python", "compiled"])
def test_a_task_asleep_for_a_tag_wakes_per_batch_of_freed_tags(tags, batch, engine):
    # bio-based, one 10 ms path of ``tags`` tags; fio at depth tags + 1, each submission 100 us of CPU:
    # I/O k reaches the path at k x 0.1 ms and completes at 10 + k x 0.1 ms; the last one finds no tag
    # and its task sleeps. sbitmap_queue_wake_up wakes it when ``batch`` (an eighth of the depth,
    # 1 to 8) tags are freed: at 10 + batch x 0.1 ms, done 10 ms later.
    from mpathlab.sim.blockqueue import sbq_wake_batch
    assert sbq_wake_batch(tags) == batch
    paths = [PathModel("A", (8, 0), ServiceTime(10 * MS), parallelism=tags, hw_queue_depth=tags)]
    sim = Simulation(table("round-robin", 1, bio=True), paths, [job(tags + 1, ios=tags + 1)], engine=engine,
                     host=HostModel(1, submit_ns=100_000))
    res = sim.run()
    assert res.engine == engine and res.jobs[0].end_ns == 20 * MS + batch * 100_000


def test_wake_batches_of_the_kernels_bitmaps():
    from mpathlab.sim.blockqueue import sbq_wake_batch, tag_wake_batch
    # sbq_calc_wake_batch: depth / 8 over words of 64 bits, halved while four do not fit (24 tags: 4-bit
    # words, 24 bits, 3); a scheduler's shallow depth of 1 counts one bit per word (mq-deadline, bfq)
    assert [sbq_wake_batch(d) for d in (1, 4, 8, 15, 16, 24, 40, 63, 64, 1023)] == [1, 1, 1, 1, 2, 3, 5, 7, 8, 8]
    assert [sbq_wake_batch(d, 1) for d in (8, 64, 256, 2048)] == [1, 1, 1, 4]
    tagged = PathModel("A", (8, 0), ServiceTime(MS), hw_queue_depth=32)
    assert tag_wake_batch(tagged) == 4
    tagged.scheduler = "mq-deadline"            # 64 scheduler tags, the ones a task sleeps for
    assert tag_wake_batch(tagged) == 1
    assert tag_wake_batch(PathModel("B", (8, 16), ServiceTime(MS))) == 1


@pytest.mark.parametrize("engine", ["python", "compiled"])
def test_completion_as_interrupt_pushes_back_the_submission(engine):
    # One CPU, submission 100 us, completion 40 us; one 50 us path; iodepth 2, 2 I/Os.
    # Interrupt work (completion_irq):
    #   t=0      io1's submission (to 0.10); 0.10 io1 mapped (done at 0.15); io2's submission from 0.10
    #   t=0.15   io1's completion interrupts it: interrupt work to 0.19, io2's submission now ends at 0.24;
    #            io1 back to fio at 0.19 (latency 0.19)
    #   t=0.24   io2 mapped (done at 0.29); the CPU is idle: interrupt work to 0.33 (latency 0.23), end 0.33
    # Queued (the default): io1's completion waits for io2's submission (0.20), runs to 0.24 (latency 0.24);
    # io2 mapped at 0.20, done at 0.25, its completion runs to 0.29 (latency 0.19), end 0.29.
    paths = [PathModel("A", (8, 0), ServiceTime(50_000), parallelism=8)]
    for irq, lats, end in ((True, (190_000, 230_000), 330_000), (False, (190_000, 240_000), 290_000)):
        sim = Simulation(table("round-robin", 1), paths, [job(2, ios=2)], engine=engine,
                         host=HostModel(1, 100_000, 40_000, completion_irq=irq))
        res = sim.run()
        res.check_accounting()
        lat = res.jobs[0].write_lat
        assert res.engine == engine
        assert (lat.min, lat.max, res.jobs[0].end_ns) == (*lats, end)


@pytest.mark.parametrize("engine", ["python", "compiled"])
def test_a_woken_task_issues_its_io_woken_issue_later(engine):
    # As test_a_task_asleep_for_a_tag_wakes_per_batch_of_freed_tags with 12 tags (a batch of 1): the sleeper
    # gets its tag at 10.1 ms and issues 7 us later, so its I/O ends at 20.1 ms + 7 us.
    paths = [PathModel("A", (8, 0), ServiceTime(10 * MS), parallelism=12, hw_queue_depth=12)]
    for woken, end in ((0, 20_100_000), (7_000, 20_107_000)):
        sim = Simulation(table("round-robin", 1, bio=True), paths, [job(13, ios=13)], engine=engine,
                         host=HostModel(1, submit_ns=100_000, woken_issue_ns=woken))
        res = sim.run()
        assert res.engine == engine and res.jobs[0].end_ns == end


@pytest.mark.parametrize("engine", ["python", "compiled"])
def test_interrupt_work_and_woken_issues_counted_when_a_run_is_cut(engine):
    # time-based runs cut (drain_ns=1) at every us of 2 ms, some while a completion's interrupt work or a woken
    # task's issue is under way: every submitted I/O is completed or pending, in both engines alike
    paths = [PathModel("A", (8, 0), ServiceTime(2 * MS), hw_queue_depth=2),
             PathModel("B", (8, 16), ServiceTime(3 * MS), hw_queue_depth=1)]
    # (and with the completion queued on the CPU: a reap waiting for it, or on it, when the run is cut)
    reaps = 0
    for irq in (True, False):
        host = HostModel(1, 10_000, 6_000, completion_irq=irq, woken_issue_ns=7_000)
        for runtime in range(20 * MS, 22 * MS, 1_000):
            res = simulate(table("historical-service-time", 2, bio=True), paths, [job(8, runtime_ns=runtime)],
                           engine=engine, host=host, drain_ns=1)
            assert res.engine == engine
            assert res.submitted == res.completed + res.errored + res.pending, runtime
            res.check_accounting()      # an I/O dm ended and fio had not reaped: in its path's count, and pending
            reaps += res.pending_reap
    assert reaps > 0


@pytest.mark.parametrize("engine", ["python", "compiled"])
def test_a_late_wake_issues_woken_late_after_the_woken_issue(engine):
    # One 10 ms path of 1 tag, depth 2, 4 I/Os, submission 100 us: I/O 1 issues at 0.1 ms; each later one
    # maps while the tag is out, sleeps, and is woken by the completion before it (10.1, 20.1 + d, 30.1 + 2d ms),
    # issuing d = woken_issue (+ woken_late when the wake is a late one) after it: the run ends at 40.1 ms + 3d.
    paths = [PathModel("A", (8, 0), ServiceTime(10 * MS), parallelism=1, hw_queue_depth=1)]
    for share, late, end in ((0.0, 5_000, 40_121_000), (1.0, 5_000, 40_136_000), (1.0, 0, 40_121_000)):
        sim = Simulation(table("round-robin", 1, bio=True), paths, [job(2, ios=4)], engine=engine,
                         host=HostModel(1, submit_ns=100_000, woken_issue_ns=7_000, woken_late_share=share,
                                        woken_late_ns=late))
        res = sim.run()
        assert res.engine == engine and res.jobs[0].end_ns == end, (share, late)


def test_the_late_wakes_are_the_share_asked_for_and_the_seeds_own():
    host = HostModel(1, woken_issue_ns=7_000, woken_late_share=0.01, woken_late_ns=10_000)
    draws = [host.woken_late(n, seed=1) for n in range(1, 100_001)]
    assert set(draws) == {0, 10_000}
    assert 900 <= draws.count(10_000) <= 1100           # 1% of 100,000, within 3 standard deviations
    assert draws != [host.woken_late(n, seed=2) for n in range(1, 100_001)]
    with pytest.raises(ValueError, match="woken_late_share"):
        HostModel(1, woken_late_share=1.5)


@pytest.mark.parametrize("seed", [1, 7])
def test_late_wakes_are_the_same_in_both_engines(seed):
    # a run with tag sleepers on two paths and a late wake in about one of twenty: the compiled core draws the
    # same wakes as late as the Python engine does, and the run is the same to the nanosecond
    paths = [PathModel("A", (8, 0), ServiceTime(2 * MS), hw_queue_depth=2),
             PathModel("B", (8, 16), ServiceTime(3 * MS), hw_queue_depth=1)]
    host = HostModel(1, 10_000, 6_000, completion_irq=True, woken_issue_ns=7_000, woken_late_share=0.05,
                     woken_late_ns=20_000)
    runs = [simulate(table("historical-service-time", 2, bio=True), paths, [job(8, runtime_ns=200 * MS)],
                     engine=engine, host=host, seed=seed) for engine in ("python", "compiled")]
    assert [r.engine for r in runs] == ["python", "compiled"]
    lat = [(r.jobs[0].write_lat.mean, r.jobs[0].write_lat.max) for r in runs]
    assert runs[0].shares == runs[1].shares and lat[0] == lat[1] and runs[0].completed == runs[1].completed > 0
    prompt = simulate(table("historical-service-time", 2, bio=True), paths, [job(8, runtime_ns=200 * MS)],
                      host=HostModel(1, 10_000, 6_000, completion_irq=True, woken_issue_ns=7_000), seed=seed)
    assert (prompt.jobs[0].write_lat.mean, prompt.jobs[0].write_lat.max) != lat[0]     # some wakes were late
