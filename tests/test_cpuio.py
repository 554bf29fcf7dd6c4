"""ioengine=cpuio: fio's CPU burner, modelled on the host's CPUs.

fio's cpuio engine (engines/cpu.c) turns a job into a loop of one
synchronous "I/O" that spins the CPU for ``cpuchunks`` microseconds, then a
think time of ``cpuchunks x (100 - cpuload) / cpuload`` microseconds
(integer arithmetic) once it completed.  The expectations below are computed
by hand from that rule; tests/data/fio-3.33/cpuio.* is real fio 3.33 running
such a job, for the report's shape and counts."""
import json
import os

import pytest

from mpathlab.report.fio_json import fio_json
from mpathlab.report.text import run_summary
from mpathlab.sim.devices import PathModel, ServiceTime
from mpathlab.sim.engine import Simulation, simulate
from mpathlab.sim.host import HostModel
from mpathlab.workload.fio import FioError, load_fio, parse_fio, sim_only

T2 = "0 2097152 multipath 0 0 1 1 service-time 0 2 2 sda 1 1 sdb 1 1"
HERE = os.path.join(os.path.dirname(__file__), "data", "fio-3.33")


def paths(svc=100_000):
    return [PathModel("sda", (8, 0), ServiceTime(svc), parallelism=1),
            PathModel("sdb", (8, 16), ServiceTime(svc), parallelism=1)]


def jobs(text):
    return parse_fio(text, "t.fio").jobs


# -- reading the job ---------------------------------------------------------------

@pytest.mark.parametrize("load,chunks,think_us", [(50, 50000, 50000), (30, 10000, 23333), (40, 30000, 45000),
                                                  (1, 7, 693), (100, 10000, 0), (250, 10000, 0)])
def test_think_time_is_fios_integer_formula(load, chunks, think_us):
    [j] = jobs("[b]\nioengine=cpuio\ncpuload=%d\ncpuchunks=%d\nruntime=1\n" % (load, chunks))
    assert j.thinktime_ns == think_us * 1000 and j.thinktime_blocks == 1 and j.iodepth == 1
    assert j.cpuload == min(load, 100)        # fio caps cpuload at 100


def test_burner_needs_cpuload_and_an_end():
    with pytest.raises(FioError, match=r"^t\.fio line 2 \[b\]: ioengine=cpuio needs cpuload="):
        jobs("[b]\nioengine=cpuio\nruntime=1\n")
    with pytest.raises(FioError, match="burns until fio is killed"):
        jobs("[b]\nioengine=cpuio\ncpuload=10\n")
    with pytest.raises(FioError, match=r"line 3 \[b\]: cpuchunks=0"):
        jobs("[b]\nioengine=cpuio\ncpuchunks=0\ncpuload=10\nruntime=1\n")
    with pytest.raises(FioError, match=r"line 3 \[b\]: cpumode=spin"):
        jobs("[b]\nioengine=cpuio\ncpumode=spin\ncpuload=10\nruntime=1\n")
    for end in ("runtime=1", "number_ios=3", "exit_on_io_done=1"):
        assert jobs("[b]\nioengine=cpuio\ncpuload=10\n%s\n" % end)[0].burns_cpu


def test_qsort_mode_says_what_it_assumes():
    [j] = jobs("[b]\nioengine=cpuio\ncpumode=qsort\ncpuload=10\nruntime=1\n")
    assert any("cpumode=qsort" in n for n in j.notes)


def test_live_mode_refuses_a_burner():
    [j] = jobs("[b]\nioengine=cpuio\ncpuload=10\nruntime=1\n")
    assert sim_only(j) == "ioengine=cpuio"


# -- running it -----------------------------------------------------------------------

def test_burn_count_cpu_time_and_runtime_by_hand():
    # cpuload=25, cpuchunks=10000: spin 10 ms, think 30 ms; burns at 0, 40, ..., 960 ms: 25 of them
    r = simulate(T2, paths(), jobs("[b]\nioengine=cpuio\ncpuload=25\ncpuchunks=10000\nruntime=1\ntime_based\n"))
    [b] = r.jobs
    assert b.completed == 25 and b.read_lat.n == 25 and b.read_lat.min == b.read_lat.max == 10_000_000
    assert b.usr_ns == 25 * 10_000_000                        # no other work on its CPU
    assert (b.start_ns, b.end_ns) == (0, 1_000_000_000)       # its last think is cut at the runtime's end
    assert r.completed == r.submitted == 0 and all(p["completed"] == 0 for p in r.paths)
    r.check_accounting()


def test_a_burn_ending_after_the_runtime_still_thinks_in_full():
    # the capture's job: cpuload=30, cpuchunks=11000: spin 11 ms, think 11000 x 70 // 30 = 25666 us, a cycle
    # of 36.666 ms; burns start at k x 36.666 ms < 1000 ms: k = 0..27, 28 burns (fio: 28).  The last ends at
    # 1000.98 ms, past the runtime, and fio still sleeps its think time: the job ends at 1026.648 ms (fio
    # reported 1027-1029 ms).
    r = simulate(T2, paths(), load_fio(os.path.join(HERE, "cpuio.fio")).jobs)
    [b] = r.jobs
    assert b.completed == 28
    assert b.end_ns == 27 * 36_666_000 + 11_000_000 + 25_666_000
    assert b.usr_ns == 28 * 11_000_000


def test_report_matches_fio_on_the_same_job():
    theirs = json.load(open(os.path.join(HERE, "cpuio.jsonplus.json")))["jobs"][0]
    jf = load_fio(os.path.join(HERE, "cpuio.fio"))
    ours = json.loads(json.dumps(fio_json(simulate(T2, paths(), jf.jobs), jf.global_options, plus=True)))["jobs"][0]
    assert ours["job options"] == theirs["job options"]
    for d in ("read", "write", "trim"):
        for k in ("io_bytes", "bw", "runtime", "total_ios", "bw_samples", "iops", "iops_samples"):
            assert ours[d][k] == theirs[d][k], (d, k)
    # completions in [0, 500) ms: 14 (28/s), in [500, 1000) ms: 13 (26/s)
    assert (ours["read"]["iops_min"], ours["read"]["iops_max"], ours["read"]["iops_mean"]) == (26, 28, 27.0)
    assert abs(theirs["read"]["iops_mean"] - 27.0) <= 1.0
    assert ours["latency_ms"] == theirs["latency_ms"] and ours["iodepth_level"] == theirs["iodepth_level"]
    # fio spins a little longer than 11 ms: its bins are the model's or the next ones
    assert ours["read"]["clat_ns"]["bins"] == {"10944512": 28}
    fios = theirs["read"]["clat_ns"]["bins"]
    assert sum(fios.values()) == 28 and min(int(k) for k in fios) == 10944512
    # usr_cpu: 28 x 11 ms of 1026.648 ms; fio's is measured, on a busy machine
    assert ours["usr_cpu"] == pytest.approx(100 * 28 * 11 / 1026.648) and abs(theirs["usr_cpu"] - 30.0) < 3
    assert ours["job_runtime"] == 1027 and 1020 <= theirs["job_runtime"] < 1100


def test_exit_on_io_done_ends_the_burner_with_the_io_jobs():
    # I/O: 100 reads at depth 1, 1.05 ms each -> the I/O job ends at 105 ms.  Burner: 10 ms spins every
    # 20 ms; at 0, 20, ..., 100 ms an I/O job is still running (6 burns); at 120 ms none is: it exits.
    text = ("[io]\nrw=read\nbs=4k\nnumber_ios=100\n"
            "[burn]\nioengine=cpuio\ncpuload=50\ncpuchunks=10000\nexit_on_io_done=1\n")
    r = simulate(T2, paths(1_050_000), jobs(text))
    io_job, burner = r.jobs
    assert io_job.completed == r.completed == 100 and io_job.end_ns == 105_000_000
    assert burner.completed == 6 and burner.end_ns == 120_000_000
    # with nothing to wait for it ends at once, as fio's does
    r = simulate(T2, paths(), jobs("[burn]\nioengine=cpuio\ncpuload=50\nexit_on_io_done=1\n"))
    assert r.jobs[0].completed == 0


def _io_beside_burner(load):
    # one CPU: submission and completion cost 10 us each, waking an idle CPU 50 us; paths 100 us
    host = HostModel(cpus=1, submit_ns=10_000, complete_ns=10_000, wake_ns=50_000)
    text = "[io]\nrw=read\nbs=4k\nnumber_ios=200\n"
    if load:
        text += "[burn]\nioengine=cpuio\ncpuload=%d\ncpuchunks=10000\nexit_on_io_done=1\n" % load
    return Simulation(T2, paths(), jobs(text), host=host).run()


def test_a_busy_cpu_pays_no_wake_up_and_the_burner_loses_the_io_work():
    # alone: submit 10 + device 100 + wake 50 (the CPU went idle after the submission) + complete 10
    alone = _io_beside_burner(0)
    assert alone.jobs[0].read_lat.mean == 170_000
    # beside a 100% burner the CPU is never idle: no wake-up; the burner is preempted, never waited for
    busy = _io_beside_burner(100)
    io_job, burner = busy.jobs
    assert io_job.read_lat.min == io_job.read_lat.max == 120_000
    # the I/O job ran 200 x 120 us = 24 ms, 20 us of CPU work per I/O: the burner got the rest of its spins
    assert io_job.end_ns == 24_000_000
    spun = burner.completed * 10_000_000
    assert burner.usr_ns == spun - 200 * 20_000


def test_text_summary_lists_burners_apart_from_io_latency():
    r = _io_beside_burner(100)
    text = run_summary(r)
    assert "burn (cpuio, clone 0): 3 burns of 10.00ms, usr=86.7% (cpuload=100)" in text     # 26 of 30 ms
    # the I/O job's own span (24 ms), not the burner's: 200 / 24 ms
    assert "read: IOPS=8333  lat mean=120.0us" in text


def test_compiled_core_leaves_burners_to_the_python_engine():
    sim = Simulation(T2, paths(), jobs("[b]\nioengine=cpuio\ncpuload=30\nruntime=1\n"), engine="compiled")
    with pytest.raises(ValueError, match="cpuio burners need the Python engine"):
        sim.run()


def test_report_has_fios_shape_key_for_key():
    from test_fio_json import _shape
    theirs = _shape(json.load(open(os.path.join(HERE, "cpuio.jsonplus.json"))))
    jf = load_fio(os.path.join(HERE, "cpuio.fio"))
    ours = _shape(json.loads(json.dumps(fio_json(simulate(T2, paths(), jf.jobs), jf.global_options, plus=True))))
    assert {k: v for k, v in ours.items() if not k.startswith("/mpath")} == theirs
