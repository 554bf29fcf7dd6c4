"""A path that is a dm-delay device over its device (PathModel.dm_delay_ns, drivers/md/dm-delay.c) and
the suspend / resume of that dm device (the kernel lab's ``delay`` step: dmsetup suspend, reload with a
new delay, resume), with hand-computed times."""
import pytest

from mpathlab.sim import PathModel, ServiceTime, fast
from mpathlab.sim.devices import Fault
from mpathlab.sim.engine import Simulation
from mpathlab.units import UnitError
from mpathlab.workload.fio import parse_fio

MS = 1_000_000
BIO = "0 4096 multipath 2 queue_mode bio 0 1 1 round-robin 0 %d 1 %s"


def table(n):
    return BIO % (n, " ".join("8:%d 1" % (16 * i) for i in range(n)))


def path(i=0, **kw):
    kw.setdefault("parallelism", 8)
    kw.setdefault("hw_queue_depth", 8)
    return PathModel("p%d" % i, (8, 16 * i), ServiceTime(2 * MS), **kw)


def run(paths, job, **kw):
    s = Simulation(table(len(paths)), paths, parse_fio("[j]\nrw=randwrite\nbs=4k\nioengine=libaio\n" + job).jobs,
                   record_completions=True, engine="python", **kw)
    res = s.run()
    res.check_accounting()
    return res


def test_each_io_takes_the_delay_plus_the_device_time():
    # one I/O every 100 ms (rate_iops=10), never two at once: each completes in 20 + 2 ms
    res = run([path(dm_delay_ns=20 * MS)], "iodepth=1\nrate_iops=10\nruntime=1s\ntime_based\n")
    lat = res.jobs[0].write_lat
    assert res.completed == 10 and lat.min == lat.max == 22 * MS
    assert res.done_at[:3] == [22 * MS, 122 * MS, 222 * MS]


def test_delayed_io_holds_no_tag_of_the_device():
    # 8 I/Os at once over one tag: all wait out the 20 ms delay together, then go through the one tag
    # 2 ms apart (22, 24, .. 36 ms).  A transport delay (delay_ns) is taken with the tag: 22, 44, ..
    job = "iodepth=8\nnumber_ios=8\n"
    res = run([path(dm_delay_ns=20 * MS, parallelism=1, hw_queue_depth=1)], job)
    assert sorted(res.done_at) == [(20 + 2 * k) * MS for k in range(1, 9)]
    res = run([path(delay_ns=20 * MS, parallelism=1, hw_queue_depth=1)], job)
    assert sorted(res.done_at) == [22 * k * MS for k in range(1, 9)]


def test_io_to_a_suspended_path_waits_for_resume_and_its_new_delay():
    # I/O at 0, 20, 40, .. ms (rate_iops=50); suspended from 10 to 50 ms, resumed with a 5 ms delay: the
    # I/O of 0 ms is done at 2; that of 20 ms waits to 50, then 5 + 2 ms: done at 57 (37 ms late); the
    # one due at 40 was not sent (fio reaps its I/O in flight first): sent at 57, done at 64
    faults = [Fault(10 * MS, "suspend"), Fault(50 * MS, "resume", delay_ns=5 * MS)]
    res = run([path(faults=faults)], "iodepth=1\nrate_iops=50\nruntime=100ms\ntime_based\n")
    assert res.done_at[:3] == [2 * MS, 57 * MS, 64 * MS]
    assert res.jobs[0].write_lat.max == 37 * MS


def test_suspend_sends_the_delayed_io_to_the_device_at_once():
    # dm-delay's presuspend flushes its list: the I/O of 0 ms, due to leave it at 20, leaves at 5 and is
    # done at 7; the next (sent at 7) waits for the resume at 30 and its 0 ms delay: done at 32
    faults = [Fault(5 * MS, "suspend"), Fault(30 * MS, "resume", delay_ns=0)]
    res = run([path(dm_delay_ns=20 * MS, faults=faults)], "iodepth=1\nnumber_ios=2\n")
    assert res.done_at == [7 * MS, 32 * MS]


def test_resume_without_a_new_delay_keeps_the_delay():
    faults = [Fault(5 * MS, "suspend"), Fault(30 * MS, "resume")]
    res = run([path(dm_delay_ns=20 * MS, faults=faults)], "iodepth=1\nnumber_ios=2\n")
    assert res.done_at == [7 * MS, 52 * MS]


def test_fio_at_its_rate_stalls_while_one_io_is_held():
    # two paths, round-robin, fio at 1000 IOPS (1 ms apart) and iodepth 16: p0 suspended from 100.5 to
    # 200 ms.  The I/O sent to p0 at 101 ms is held; p1's of 102 completes at 104; fio, ahead of its rate,
    # then reaps every I/O in flight before it sleeps (io_u_quiesce): nothing more is sent until the
    # held I/O completes at 202 (resume + 2 ms), and no completion falls in between
    faults = [Fault(100 * MS + MS // 2, "suspend"), Fault(200 * MS, "resume")]
    res = run([path(0, faults=faults), path(1)], "iodepth=16\nrate_iops=1000\nruntime=300ms\ntime_based\n")
    done = sorted(res.done_at)
    gaps = [(b - a, a) for a, b in zip(done, done[1:])]
    gap, since = max(gaps)
    assert (since, since + gap) == (104 * MS, 202 * MS)
    assert res.errored == 0 and res.pending == 0


def test_a_request_based_table_cannot_stack_on_a_dm_delay_path():
    rq = "0 4096 multipath 0 0 1 1 round-robin 0 1 1 8:0 1"
    with pytest.raises(ValueError, match="bio-based"):
        Simulation(rq, [path(dm_delay_ns=MS)], parse_fio("[j]\nnumber_ios=1\n").jobs)


def test_bad_fault_delays_are_refused():
    with pytest.raises(UnitError, match="resume"):
        Fault(0, "suspend", delay_ns=MS)
    with pytest.raises(UnitError, match="negative"):
        Fault(0, "resume", delay_ns=-1)
    with pytest.raises(UnitError, match="negative"):
        path(dm_delay_ns=-1)


@pytest.mark.skipif(not fast.available(), reason="compiled core not built")
def test_the_compiled_core_refuses_dm_delay_and_runs_a_zero_delay_as_before(monkeypatch, capsys):
    monkeypatch.setattr(fast, "_noted", set())
    monkeypatch.delenv("MPATHLAB_ENGINE", raising=False)
    job = parse_fio("[j]\nrw=randwrite\nbs=4k\nioengine=libaio\niodepth=4\nnumber_ios=400\n").jobs
    s = Simulation(table(2), [path(0, dm_delay_ns=MS), path(1)], job)
    assert fast.eligible(s) == "the path setting dm_delay_ns is not in the compiled core"
    s = Simulation(table(2), [path(0, faults=[Fault(MS, "suspend"), Fault(2 * MS, "resume")]), path(1)], job)
    assert fast.eligible(s) == "the fault 'suspend' is not in the compiled core"
    res = s.run()
    assert res.engine == "python" and "the fault 'suspend'" in capsys.readouterr().err
    # a dm-delay device with no delay and never suspended is the plain path: the core runs it, identically
    a = Simulation(table(2), [path(0, dm_delay_ns=0), path(1)], job, seed=3).run()
    b = Simulation(table(2), [path(0), path(1)], job, seed=3, engine="python").run()
    assert a.engine != "python" and (a.completed, a.jobs[0].write_lat.mean) == (b.completed, b.jobs[0].write_lat.mean)


TOPO = '''
[multipath]
table = "0 4096 multipath 2 queue_mode bio 0 1 1 round-robin 0 1 1 8:0 1"
[paths.p0]
devt = "8:0"
service = "2ms"
hw_queue_depth = 8
parallelism = 8
dm_delay = "20ms"
faults = [ { at = "5ms", action = "suspend" }, { at = "30ms", action = "resume", delay = "0ms" } ]
'''


def test_a_topology_gives_the_dm_delay_and_its_suspend_and_resume():
    try:
        import tomllib
    except ModuleNotFoundError:       # Python < 3.11
        import tomli as tomllib       # type: ignore
    from mpathlab.topology import TopologyError, topology_from_dict
    t = topology_from_dict(tomllib.loads(TOPO), "t.toml")
    (p,) = t.paths
    assert p.dm_delay_ns == 20 * MS
    assert [(f.at_ns, f.action, f.delay_ns) for f in p.faults] == [(5 * MS, "suspend", None), (30 * MS, "resume", 0)]
    # as test_suspend_sends_the_delayed_io_to_the_device_at_once
    res = Simulation(t.table, t.paths, parse_fio("[j]\nrw=randwrite\nbs=4k\niodepth=1\nnumber_ios=2\n").jobs,
                     record_completions=True, **t.sim_kwargs()).run()
    assert res.done_at == [7 * MS, 32 * MS]
    # the report's events say what each does
    from mpathlab.report import model
    evs = model.events({"rr": res}, t)
    assert [(e.at_ns // MS, e.what, e.outcome["rr"]) for e in evs] == [
        (5, "the dm device over p0 (8:0) is suspended: new I/O to it waits", "I/O sent to p0 is held until its resume"),
        (30, "the dm device over p0 (8:0) resumes with a delay of 0ns", "the held I/O goes on to the device")]
    bad = TOPO.replace('action = "suspend"', 'action = "suspend", delay = "1ms"')
    with pytest.raises(TopologyError, match=r"faults\[0\]: delay belongs to action = \"resume\""):
        topology_from_dict(tomllib.loads(bad), "t.toml")


def test_a_path_suspended_for_good_leaves_its_held_io_pending(tmp_path, capsys):
    # iodepth 1, one I/O every 20 ms: the I/O of 0 ms is done at 2; that of 20 ms is held by the device
    # suspended at 10 ms, which no resume follows: the run ends with it pending, and says why
    res = run([path(faults=[Fault(10 * MS, "suspend")])], "iodepth=1\nrate_iops=50\nruntime=100ms\ntime_based\n")
    assert (res.completed, res.pending, res.stalled) == (1, 1, True)
    from mpathlab.cli import main
    topo = tmp_path / "t.toml"
    topo.write_text(TOPO.replace(', { at = "30ms", action = "resume", delay = "0ms" }', ""))
    job = tmp_path / "j.fio"
    job.write_text("[j]\nrw=randwrite\nbs=4k\niodepth=1\nnumber_ios=2\n")
    assert main(["run", str(topo), str(job)]) == 0
    out = capsys.readouterr().out.replace("\n    ", " ")
    assert "1 I/O(s) pending" in out and "the dm device of path p0 stays suspended (no resume)" in out
