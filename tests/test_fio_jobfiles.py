"""fio job files read as fio 3.33 reads them, and what the simulator makes of
the options issue 10 added (mixed sizes, trims, open loop, verify, flow,
wait_for, logs).  Expected values marked "fio:" were read from
``fio --parse-only --debug=parse`` (fio 3.33) on the same lines."""
import io
import math
import os
import re
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from conftest import require
from mpathlab.cli import main
from mpathlab.sim import fast
from mpathlab.sim.arrival import DEFAULT_NS_PER_KIB
from mpathlab.sim.devices import Exponential, PathModel, ServiceTime
from mpathlab.sim.engine import Simulation, simulate
from mpathlab.workload import fio_options as fo
from mpathlab.workload.fio import FioError, fio_number, fio_time_ns, load_fio, parse_fio
from mpathlab.workload.fio_logs import write_logs

T2 = "0 2097152 multipath 0 0 1 1 service-time 0 2 2 sda 1 1 sdb 1 1"


def two_paths(svc=100_000, par=4, dist=ServiceTime, **kw):
    return [PathModel("sda", (8, 0), dist(svc), parallelism=par, **kw),
            PathModel("sdb", (8, 16), dist(svc), parallelism=par, **kw)]


def job(text, **kw):
    return parse_fio(text, "t.fio", **kw).jobs


# -- values as fio reads them --------------------------------------------------

@pytest.mark.parametrize("text,kb_base,value", [
    ("4k", 1024, 4096), ("4KiB", 1024, 4000), ("4kib", 1024, 4000), ("4Ki", 1024, 4096), ("4KB", 1024, 4096),
    ("1mi", 1024, 1048576), ("1gib", 1024, 10 ** 9), ("1ti", 1024, 1 << 40), ("1p", 1024, 1 << 50),
    ("4b", 1024, 4), ("0x1000", 1024, 4096), ("+4k", 1024, 4096), ("9223372036854775807", 1024, 2 ** 63 - 1),
    ("4k", 1000, 4000), ("4KiB", 1000, 4096), ("4ki", 1000, 4000), ("1mi", 1000, 10 ** 6), ("1g", 1000, 10 ** 9),
    ("1gib", 1000, 1 << 30),
])
def test_sizes_as_fio_reads_them(text, kb_base, value):
    assert fio_number(text, kb_base) == value          # fio: out=value


@pytest.mark.parametrize("text,unit,us", [
    ("10", "s", 10_000_000), ("10s", "s", 10_000_000), ("10ms", "s", 10_000), ("10msec", "s", 10_000),
    ("10us", "s", 10), ("10m", "s", 600_000_000), ("1h", "s", 3_600_000_000), ("1d", "s", 86_400_000_000),
    ("10", "us", 10), ("10ms", "us", 10_000),
])
def test_times_as_fio_reads_them(text, unit, us):
    # fio: runtime (bare number in s) and thinktime (bare number in us), out= in us
    assert fio_time_ns(text, unit) == us * 1000


@pytest.mark.parametrize("line,fio_reads,msg", [
    ("runtime=10sec", "10 us", "it would read '10sec' as 10 microseconds"),
    ("runtime=10min", "10 us", "it would read '10min' as 10 microseconds"),
    ("runtime=1.5s", "1 s", "fio ignores fractions"),
    ("bs=4.5k", "4 bytes", "fio ignores fractions and units after them (it reads '4.5k' as 4)"),
    ("bs=4q", "4 bytes", "it would read '4q' as 4 bytes"),
    ("bs=10x", "16 bytes (hex)", "fio reads anything containing '0x' as hex"),
    ("bs= 4k", "4 bytes", "does not skip blanks after '='"),
    ("bs=(2*4096)", "a parse error", "no arithmetic expressions"),
    ("bs=9223372036854775808", "a parse error", "larger than 2^63-1"),
    ("bs=9007199254740992k", "2^63, wrapped", "larger than 2^63-1 bytes"),
    ("bs=0", "a parse error (min 1)", "must be between 1 and"),
    ("bs=-4k", "2^64-4096 then 4096", "is negative"),
])
def test_values_fio_misreads_are_refused_by_name(line, fio_reads, msg):
    with pytest.raises(FioError) as ei:
        job("[j]\nsize=1m\n%s\n" % line)
    s = str(ei.value)
    assert msg in s and "t.fio line 3 [j]: " + line.split("=")[0] in s and "\n" not in s


def test_kb_base_applies_to_its_whole_section_and_is_inherited():
    j, = job("[j]\nsize=1m\nbs=4k\nkb_base=1000\n")        # fio: size 1000000, bs 4000
    assert (j.size, j.bs) == (10 ** 6, 4000)
    j, = job("[global]\nkb_base=1000\n[j]\nsize=1m\nbs=4KiB\n")
    assert (j.size, j.bs) == (10 ** 6, 4096)


def test_comments_flags_duplicates_and_sections():
    a, b, c = job("; top\n[global]\nrw=randread # inline\n[a]\nbs=4k;x\nbs=8k\nsize=1m\nwrite_bw_log\n"
                  "[a]\nsize=64k\n[global2]\nbs=16k\n[c]\nsize=64k\n")
    assert (a.rw, a.bs, a.bw_log) == ("randread", 8192, "")       # last value wins; bare flag
    assert b.name == "a" and b.bs == 4096                          # a second [a] is another job
    assert c.bs == 16384                                           # fio: [global*] is global
    assert "bs" in a.options and "write_bw_log" in a.options


def test_name_option():
    a, b = job("[global]\nname=g\nsize=64k\n[x]\n[y]\nname=own\n")      # fio 3.33: jobs x and own
    assert (a.name, b.name) == ("x", "own")


def test_bs_triple():
    r, = job("[j]\nsize=1m\nbs=4k,8k\n")                 # fio: read 4096, write 8192, trim 8192
    assert r.bs_rwt == [4096, 8192, 8192]
    r, = job("[j]\nsize=1m\nbs=,8k\n")                   # fio: read keeps its default
    assert r.bs_rwt == [4096, 8192, 8192]
    r, = job("[j]\nsize=1m\nblocksize=512,512,16384\nrw=trim\n")   # mtd.fio: only trim differs
    assert r.bs_rwt == [512, 512, 16384] and r.bs == 16384 and not r.mixed_sizes
    r, = job("[j]\nsize=1m\nbs=512,512,16384\nrw=randrw\n")
    assert not r.mixed_sizes                             # trim is not used by randrw
    r, = job("[j]\nsize=1m\nbs=4k,16k\nrw=randrw\n")
    assert r.mixed_sizes


def test_env_vars_keywords_and_includes(tmp_path, monkeypatch):
    monkeypatch.delenv("NOPE_UNSET", raising=False)
    (tmp_path / "inc.fio").write_text("iodepth=7\ninclude inc2.fio\n")
    (tmp_path / "inc2.fio").write_text("bs=8k\n")
    (tmp_path / "main.fio").write_text("[j]\nsize=1m\ninclude inc.fio\nnumjobs=$ncpus/$ncpus*2\n"
                                       "rw=rand${NOPE_UNSET}read\n")
    j, = load_fio(str(tmp_path / "main.fio")).jobs
    assert (j.iodepth_option, j.iodepth, j.bs, j.numjobs, j.rw) == (7, 1, 8192, 2, "randread")   # psync: 1 in flight
    (tmp_path / "bad.fio").write_text("[j]\ninclude sect.fio\n")
    (tmp_path / "sect.fio").write_text("[x]\n")
    with pytest.raises(FioError, match="no \\[sections\\] in an included file"):
        load_fio(str(tmp_path / "bad.fio"))
    (tmp_path / "loop.fio").write_text("[j]\ninclude loop2.fio\n")
    (tmp_path / "loop2.fio").write_text("include loop2.fio\n")
    with pytest.raises(FioError, match="nested more than 16 deep"):
        load_fio(str(tmp_path / "loop.fio"))


def test_job_from_stdin(monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"[s]\nbs=8k\nsize=64k\n")))
    f = load_fio("-")
    assert f.jobs[0].bs == 8192 and f.source == "<stdin>"


def test_non_utf8_and_binary_job_files(tmp_path, capsys):
    bad = tmp_path / "latin1.fio"
    bad.write_bytes(b"[j]\nsize=1m\ndescription=caf\xe9\n")
    with pytest.raises(FioError, match=r"latin1.fio line 3: not UTF-8 text \(byte 0xe9\)"):
        load_fio(str(bad))
    binf = tmp_path / "bin.fio"
    binf.write_bytes(b"\x7fELF\x02\x01\x00\x00" * 8)
    topo = os.path.join(os.path.dirname(__file__), "..", "examples", "asymmetric.toml")
    assert main(["run", topo, str(binf)]) == 3
    err = capsys.readouterr().err
    assert "bin.fio: not a job file (binary data" in err and err.count("\n") == 1


def test_refused_option_is_one_line_naming_it():
    with pytest.raises(FioError) as ei:
        job("[j]\nsize=1m\nrate_ignore_thinktime=1\n")
    assert str(ei.value).startswith("t.fio line 3 [j]: fio option 'rate_ignore_thinktime' is refused: it would "
                                    "change")
    with pytest.raises(FioError, match="ioengine=exec: this engine runs a program instead of doing I/O"):
        job("[j]\nioengine=exec\n")


def test_option_table_declares_each_name_once_with_help():
    names = [n for o in fo.OPTIONS for n in (o.name,) + o.aliases]
    assert len(names) == len(set(names))
    for o in fo.OPTIONS:
        assert o.help and o.cls in (fo.MODELLED, fo.NO_EFFECT, fo.REFUSED)
        assert (o.cls == fo.REFUSED) == bool(o.why)
    from mpathlab.workload.fio import SETTERS
    assert {o.name for o in fo.OPTIONS if o.cls == fo.MODELLED} == set(SETTERS) - {"ioengine"}


def test_docs_list_the_options_from_the_table():
    doc = open(os.path.join(os.path.dirname(__file__), "..", "docs", "formats.md")).read()
    assert fo.markdown() in doc, "regenerate: PYTHONPATH=src python -m mpathlab.workload.fio_options --update-readme docs/formats.md"


# -- sizes and counts ----------------------------------------------------------

def _run(text, table=T2, paths=None, **kw):
    r = simulate(table, paths or two_paths(), job(text), **kw)
    r.check_accounting()
    return r


def test_no_size_means_the_whole_device():
    r = _run("[j]\nrw=read\nbs=4k\n", table="0 2048 multipath 0 0 1 1 service-time 0 2 2 sda 1 1 sdb 1 1")
    assert r.completed == 2048 * 512 // 4096                            # 1 MiB device, 4k blocks
    r = _run("[j]\nrw=read\nsize=25%\n", table="0 2048 multipath 0 0 1 1 service-time 0 2 2 sda 1 1 sdb 1 1")
    assert r.completed == 64


@pytest.mark.parametrize("text,ios", [
    ("filesize=64k\nnrfiles=2\n", 32), ("size=64k\nloops=3\n", 48), ("size=1m\nio_size=64k\n", 16),
    ("size=64k\nnumber_ios=1000\n", 16),           # number_ios does not extend the job (fio's rule)
    ("size=1m\nnumber_ios=10\n", 10), ("size=64k\ntime_based\n", 16),   # time_based without runtime: size
    ("zonesize=16k\nsize=4z\n", 16),
])
def test_size_options(text, ios):
    assert _run("[j]\nbs=4k\n" + text).completed == ios


def test_time_based_without_runtime_is_noted():
    f = parse_fio("[j]\nsize=64k\ntime_based\n")
    assert not f.jobs[0].time_based and "runs until its size is done" in f.notes[0]


def test_huge_block_sizes_both_engines_agree():
    # fio refuses bs >= 2^63 when parsing; a big but legal bs runs in the Python engine either way
    with pytest.raises(FioError):
        job("[j]\nbs=9223372036854775808\n")
    jobs = job("[j]\nbs=3g\nsize=12g\n")
    sims = [Simulation(T2, two_paths(), jobs, engine=e) for e in ("auto", "python")]
    assert "2 GiB" in fast.eligible(sims[0]) or not fast.available()
    a, b = (s.run() for s in sims)
    assert a.engine == b.engine == "python" and a.shares == b.shares and a.completed == b.completed == 4


# -- mixed sizes ----------------------------------------------------------------

def test_bssplit_draws_by_weight():
    r = _run("[j]\nrw=randread\nbssplit=4k/25:64k/75\nnumber_ios=4000\nioengine=libaio\niodepth=8\n")
    j = r.jobs[0]
    n64 = (j.bytes_read - 4096 * 4000) / (65536 - 4096)
    assert abs(n64 / 4000 - 0.75) < 0.03


def test_bssplit_shares_as_fio_assigns_them():
    from mpathlab.workload.fio import parse_bssplit
    assert parse_bssplit("4k/10:8k:16k")[0] == [(4096, 10.0), (8192, 45.0), (16384, 45.0)]
    assert parse_bssplit("4k/10:64k/50")[0] == [(4096, 10.0), (65536, 90.0)]
    assert parse_bssplit("4k/50:8k/50,16k")[1] == [(16384, 100.0)]
    with pytest.raises(Exception, match="more than 100"):
        parse_bssplit("4k/60:8k/60")


def test_bsrange_follows_fio_get_next_buflen():
    # lo + hi*u aligned down to lo, capped at hi: 4k..16k gives 4,8,12,16k a quarter each
    jobs = job("[j]\nrw=randread\nbsrange=4k-16k\nnumber_ios=4000\n")
    sim = Simulation(T2, two_paths(), jobs, engine="python")   # the spy sees the Python target's map
    seen = {}
    orig = sim.mp.map

    def spy(io):
        seen[io.nr_bytes] = seen.get(io.nr_bytes, 0) + 1
        return orig(io)
    sim.mp.map = spy
    sim.run()
    assert set(seen) == {4096, 8192, 12288, 16384}
    assert all(abs(n / sum(seen.values()) - 0.25) < 0.04 for n in seen.values())


def test_mixed_sizes_turn_on_the_default_per_kib_cost():
    sim = Simulation(T2, two_paths(), job("[j]\nbssplit=4k/50:1m/50\nnumber_ios=10\n"))
    assert all(p.ns_per_kib == DEFAULT_NS_PER_KIB for p in sim.paths)
    given = two_paths()
    for p in given:
        p.per_kib_given = True            # the topology said per_kib = "0"
    assert all(p.ns_per_kib == 0 for p in Simulation(T2, given, job("[j]\nbssplit=4k/50:1m/50\n")).paths)
    assert all(p.ns_per_kib == 0 for p in Simulation(T2, two_paths(), job("[j]\nbs=1m\n")).paths)


@pytest.mark.parametrize("sel,table_args,field", [
    ("service-time", "0 2 2 sda 1 1 sdb 1 1", "in_flight_size"),   # weighs bytes in flight
    ("queue-length", "0 2 1 sda 1 sdb 1", "qlen"),                 # counts I/Os
])
def test_mixed_sizes_reach_the_selectors(sel, table_args, field):
    """With bssplit, service-time picks the path with the fewest bytes in flight
    (dm-ps-service-time, equal relative throughput), queue-length the one with
    the fewest I/Os (each as the kernel's selector does)."""
    jobs = job("[j]\nrw=randread\nbssplit=4k/80:1m/20\nnumber_ios=2000\nioengine=libaio\niodepth=16\n")
    # (engine="python": the spy sees the Python target's map; tests/test_fastcore_gen.py shows the core's runs equal)
    sim = Simulation("0 2097152 multipath 0 0 1 1 %s %s" % (sel, table_args), two_paths(dist=Exponential), jobs,
                     engine="python")
    ps = sim.mp.priority_groups[0].ps
    orig = sim.mp.map
    checked = [0]

    def spy(io):
        before = {pg: getattr(ps._info[pg], field) for pg in ps._info}
        r = orig(io)
        if io.pgpath is not None:
            assert before[io.pgpath] == min(before.values())
            checked[0] += 1
        return r
    sim.mp.map = spy
    sim.run().check_accounting()
    assert checked[0] == 2000


# -- trims --------------------------------------------------------------------

@pytest.mark.parametrize("rw,trims,writes", [("trim", 16, 0), ("randtrim", 16, 0), ("trimwrite", 16, 16)])
def test_trims_go_through_multipath(rw, trims, writes):
    r = _run("[j]\nrw=%s\nbs=4k\nsize=64k\n" % rw)
    j = r.jobs[0]
    assert (j.trim_lat.n, j.write_lat.n, j.bytes_trimmed) == (trims, writes, trims * 4096)
    from mpathlab.report import fio_json
    doc = fio_json(r)
    assert doc["jobs"][0]["trim"]["total_ios"] == trims


# -- open loop ------------------------------------------------------------------

def test_rate_iops_linear_submits_on_a_schedule():
    # 1000 IOPS with 100 us service: one I/O every 1 ms, never queued, although iodepth is 16
    r = _run("[j]\nrw=randread\nbs=4k\nrate_iops=1000\nruntime=100ms\ntime_based\nioengine=libaio\niodepth=16\n")
    j = r.jobs[0]
    assert j.read_lat.n == 100 and j.read_lat.max == 100_000
    closed = _run("[j]\nrw=randread\nbs=4k\nruntime=100ms\ntime_based\nioengine=libaio\niodepth=16\n").jobs[0]
    assert closed.read_lat.n > 10 * j.read_lat.n


def test_rate_bytes_and_poisson():
    r = _run("[j]\nrw=randread\nbs=4k\nrate=4m\nruntime=1s\ntime_based\nioengine=libaio\niodepth=8\n")
    assert r.jobs[0].read_lat.n == 1024                     # 4 MiB/s of 4 KiB
    # 80% load on two single-server 400 us paths: evenly spaced arrivals never queue, Poisson ones do.
    # Ahead of the rate fio reaps everything in flight before it sleeps (rate_ddir -> io_u_quiesce), and
    # sleeps what it measured before: io1 at 0 (next due 250 us) is reaped at 400, the sleep ends at 650,
    # io2 (due 250) and io3 (due 500) go out then, are reaped at 1050, and so on: two I/Os every 500 us,
    # 400 us behind the schedule, so the last I/O of the second is not issued: 3999
    text = "[j]\nrw=randread\nbs=4k\nrate_iops=4000\nruntime=1s\ntime_based\nioengine=libaio\niodepth=64\n"
    lin = _run(text, paths=two_paths(400_000, par=1)).jobs[0]
    poi = _run(text + "rate_process=poisson\n", paths=two_paths(400_000, par=1)).jobs[0]
    assert lin.read_lat.n == 3999 and lin.read_lat.max == 400_000
    assert abs(poi.read_lat.n - 4000) < 4 * math.sqrt(4000)
    assert poi.read_lat.max > 1_200_000 and poi.read_lat.mean > 1.3 * lin.read_lat.mean


def test_thinktime():
    # iodepth 1, 100 us service, 1 ms think after every I/O: 1.1 ms per cycle
    r = _run("[j]\nrw=read\nbs=4k\nnumber_ios=10\nthinktime=1ms\n")
    assert r.runtime_ns == 9 * 1_100_000 + 100_000
    r = _run("[j]\nrw=read\nbs=4k\nnumber_ios=8\nioengine=libaio\niodepth=4\nthinktime=1000\nthinktime_blocks=4\n")
    assert r.runtime_ns == 2 * 100_000 + 1_000_000          # a batch, 1 ms think (bare number: us), a batch
    r = _run("[j]\nrw=read\nbs=4k\nnumber_ios=8\nioengine=libaio\niodepth=4\nthinktime=1ms\nthinktime_blocks=4\n"
             "thinktime_blocks_type=issue\n")
    assert r.runtime_ns == 1_000_000 + 100_000               # thinks right after issuing the first batch


def test_iodepth_low_refills_at_the_low_water_mark():
    # one path, one server, 100 us: depth 4 fills, then no refill until only 1 is in flight
    paths = [PathModel("sda", (8, 0), ServiceTime(100_000), parallelism=1)]
    table = "0 2097152 multipath 0 0 1 1 round-robin 0 1 0 sda"
    jobs = job("[j]\nrw=read\nbs=4k\nnumber_ios=8\nioengine=libaio\niodepth=4\niodepth_low=1\nwrite_lat_log\n")
    r = simulate(table, paths, jobs)
    lats = sorted(lat for _, lat, _, _ in r.jobs[0].log.samples)
    # I1-I4 at 0 (done at 100..400 us); only at 300 us (1 left) are I5-I7 sent (done 500, 600, 700);
    # at 600 us (1 left) the last one (done 800): latencies 100,200,300,400, 200,300,400, 200
    assert lats == [100_000, 200_000, 200_000, 200_000, 300_000, 300_000, 400_000, 400_000]
    assert r.runtime_ns == 800_000
    plain = simulate(table, paths, job("[j]\nrw=read\nbs=4k\nnumber_ios=8\nioengine=libaio\niodepth=4\n"))
    assert plain.jobs[0].read_lat.max == 400_000 and plain.jobs[0].read_lat.min == 100_000


def test_open_loop_jobs_run_in_the_compiled_core():
    sim = Simulation(T2, two_paths(), job("[j]\nrate_iops=100\nsize=64k\n"))
    assert fast.eligible(sim) == "" or not fast.available()


# -- verify, flow, wait_for -------------------------------------------------------

def test_verify_reads_back_after_the_writes():
    jobs = job("[j]\nrw=randwrite\nbs=4k\nsize=256k\nverify=crc32c\nioengine=libaio\niodepth=8\nwrite_lat_log\n")
    r = simulate(T2, two_paths(dist=Exponential), jobs)
    r.check_accounting()
    j = r.jobs[0]
    assert (j.write_lat.n, j.read_lat.n) == (64, 64)
    samples = j.log.samples        # (t, lat, ddir, bytes) at completion
    last_write = max(t for t, _, d, _ in samples if d == 1)
    first_read_submit = min(t - lat for t, lat, d, _ in samples if d == 0)
    assert first_read_submit >= last_write                   # the read-back starts once writes completed
    r = _run("[j]\nrw=randwrite\nbs=4k\nsize=256k\nverify=md5\nverify_backlog=8\nioengine=libaio\niodepth=4\n")
    assert r.jobs[0].read_lat.n == 64
    assert _run("[j]\nrw=read\nsize=64k\nverify=meta\n").jobs[0].read_lat.n == 16   # reads verify themselves
    assert _run("[j]\nrw=write\nsize=64k\nverify=md5\ndo_verify=0\n").jobs[0].read_lat.n == 0


def test_flow_keeps_the_weights():
    r = _run("[a]\nrw=read\nbs=4k\nflow=1\nnumber_ios=4000\nioengine=libaio\niodepth=4\nwrite_iops_log\n"
             "[b]\nrw=write\nbs=4k\nflow=3\nnumber_ios=3000\nioengine=libaio\niodepth=4\n")
    a, b = r.jobs
    assert (a.completed, b.completed) == (4000, 3000) and b.end_ns < a.end_ns
    # while both run, b issues 3 for each of a's: when b's 3000 are done, a has done about 1000
    a_by_then = sum(1 for t, _, _, _ in a.log.samples if t <= b.end_ns)
    assert 950 <= a_by_then <= 1050


def test_latency_target_finds_a_depth_then_runs_one_window_there():
    # 2 paths x 4 servers x 100 us: up to depth 8 every I/O takes 100 us, beyond it they queue
    text = ("[j]\nrw=randread\nbs=4k\nioengine=libaio\niodepth=64\nlatency_target=150us\nlatency_window=2ms\n"
            "latency_percentile=50\nruntime=1s\n")
    r = _run(text)
    j = r.jobs[0]
    lt = j.gen.lat_target
    assert lt.end_run and not lt.failed_fatal and j.first_error is None
    assert 2 <= lt.qd <= 12                        # around the 8 the devices serve without queueing
    assert j.start_ns > 0 and j.end_ns - j.start_ns >= 2_000_000    # statistics of the final window only
    assert j.read_lat.n < j.completed and r.runtime_ns < 10 ** 9     # ended before the runtime


def test_latency_target_unmet_at_depth_1_fails_the_job():
    r = _run("[j]\nrw=randread\nbs=4k\nioengine=libaio\niodepth=8\nlatency_target=50us\nruntime=1s\n")
    j = r.jobs[0]
    assert j.completed == 1 and "ETIMEDOUT" in j.first_error     # fio: "max latency exceeded"


def test_exitall_stops_the_other_jobs():
    r = _run("[a]\nrw=read\nsize=64k\nexitall\n[b]\nrw=write\nsize=64m\n")
    a, b = r.jobs
    assert a.completed == 16 and b.completed < 16384 and b.end_ns - a.end_ns < 1_000_000
    r = _run("[a]\nrw=read\nsize=64k\n[b]\nrw=write\nsize=1m\n")
    assert r.jobs[1].completed == 256                          # without exitall b runs to its end
    # exitall is global in fio: any job's end stops its reporting group; new_group starts another one
    r = _run("[global]\nexitall\n[a]\nrw=read\nsize=64k\n[b]\nrw=write\nsize=64m\n"
             "[c]\nnew_group\nrw=write\nsize=1m\n")
    a, b, c = r.jobs
    assert b.completed < 16384 and c.completed == 256


def test_wait_for():
    r = _run("[a]\nrw=read\nsize=64k\n[b]\nrw=read\nsize=64k\n[c]\nwait_for=a\nrw=write\nsize=64k\n")
    a, b, c = r.jobs
    assert c.start_ns >= a.end_ns and b.start_ns == 0
    with pytest.raises(FioError, match="wait_for=zz names no job before it"):
        job("[a]\nsize=64k\n[b]\nwait_for=zz\nsize=64k\n")


# -- logs -----------------------------------------------------------------------

LOG_LINE = re.compile(r"^\d+, \d+, [012], \d+, \d+$")


def test_logs_in_fio_format(tmp_path):
    jobs = job("[j]\nrw=randrw\nbs=4k\nsize=1m\niodepth=8\nwrite_lat_log=x\nwrite_bw_log=x\nwrite_iops_log=x\n"
               "[k]\nrw=read\nsize=64k\nwrite_iops_log\nlog_avg_msec=1\nper_job_logs=0\n")
    r = simulate(T2, two_paths(dist=Exponential), jobs)
    names = sorted(os.path.basename(p) for p in write_logs(r, str(tmp_path)))
    assert names == ["k_iops.log", "x_bw.1.log", "x_clat.1.log", "x_iops.1.log", "x_lat.1.log", "x_slat.1.log"]
    lat = (tmp_path / "x_lat.1.log").read_text().splitlines()
    assert len(lat) == 256 and all(LOG_LINE.match(x) for x in lat)
    j = r.jobs[0]
    total = j.read_lat.n * j.read_lat.mean + j.write_lat.n * j.write_lat.mean
    assert abs(sum(int(x.split(", ")[1]) for x in lat) - total) < 1     # one latency (ns) per I/O
    assert (tmp_path / "x_slat.1.log").read_text() == ""     # psync: fio times no submissions (as 3.33)
    iops = (tmp_path / "k_iops.log").read_text().splitlines()
    assert all(LOG_LINE.match(x) and x.split(", ")[3] == "0" for x in iops)      # averaged: no block size
    # per-second rates of the I/Os in each full 1 ms window; fio's windows are (k, k + 1] in whole ms, so
    # the last I/O closes the last window and all 16 are in full ones (a partial window has no rate line)
    assert sum(int(x.split(", ")[1]) for x in iops) == 16 * 1000


def test_log_prio_prints_the_priority_column_in_hex(tmp_path):
    # fio 3.33 (ioengine=null, 4k reads): log_prio=0 -> "0, 6990, 0, 4096, 0"; log_prio=1 -> "..., 4096, 0x0000";
    # with log_offset=1 the offset column comes first: "..., 4096, 0, 0x0000"
    for extra, tail in (("", ", 0"), ("log_prio=1\n", ", 0x0000"), ("log_prio=1\nlog_offset=1\n", ", 0, 0x0000")):
        r = simulate(T2, two_paths(), job("[j]\nrw=read\nbs=4k\nsize=16k\nwrite_lat_log=p\n" + extra))
        write_logs(r, str(tmp_path))
        lines = (tmp_path / "p_lat.1.log").read_text().splitlines()
        assert len(lines) == 4 and all(x.endswith(", 4096" + tail) for x in lines), (extra, lines)


def test_logs_match_fio_and_its_tools(tmp_path):
    fio = require("fio", "compare the log format with fio 3.33's own")
    subprocess.run([fio, "--name=r", "--ioengine=null", "--size=1m", "--rw=randrw", "--bs=4k",
                    "--write_lat_log=r", "--write_iops_log=r", "--output=/dev/null"], cwd=tmp_path, check=True)
    theirs = (tmp_path / "r_lat.1.log").read_text().splitlines()
    assert theirs and all(LOG_LINE.match(x) for x in theirs)
    r = simulate(T2, two_paths(), job("[r]\nrw=randrw\nbs=4k\nsize=1m\nwrite_bw_log=m\nlog_avg_msec=1\n"))
    write_logs(r, str(tmp_path))
    g = require("fio2gnuplot", "Debian's fio2gnuplot reads the bandwidth logs")
    out = subprocess.run([g, "-b"], cwd=tmp_path, capture_output=True, text=True)
    assert "m_bw.1.log" in out.stdout + out.stderr
    assert (tmp_path / "result.average").exists()


# -- property test: nothing but a one-line FioError ---------------------------------

KEYS = [o.name for o in fo.OPTIONS][:60] + ["bs", "size", "rate_iops", "thinktime", "bssplit", "bsrange", "rw",
                                           "runtime", "include", "zz_unknown", "number_ios", "verify", "flow",
                                           "ioengine", "cpuload", "cpuchunks", "cpumode", "exit_on_io_done"]
VALS = ["", "0", "-1", "4k", "1m", "9223372036854775808", "18446744073709551616k", "99999999999999999999",
        "4k,8k,16k", "4k/50:8k/50", "4k-64k", "1:2", "randtrimwrite", "poisson", "${NOPE}", "10sec", "1.5",
        "0x10", "50%", "3z", "( 1+2 )", "a", "1,2,3,4", "$ncpus/0", "$pagesize*$ncpus", "((($ncpus",
        "4k;c", "1k-4k/8k", "-", ",", "read:8k", "4k/0:8k/", "cpuio", "qsort", "101"]


@st.composite
def fio_bytes(draw):
    parts = []
    for _ in range(draw(st.integers(0, 4))):
        parts.append(b"[%s]" % draw(st.sampled_from([b"global", b"a", b"a", b"", b"b\xff"])))
        for _ in range(draw(st.integers(0, 6))):
            k = draw(st.sampled_from(KEYS)).encode()
            if draw(st.booleans()):
                parts.append(k + b"=" + draw(st.sampled_from(VALS)).encode())
            else:
                parts.append(k)
        if draw(st.booleans()):
            parts.append(draw(st.binary(max_size=12)))
        if draw(st.booleans()):
            parts.append(draw(st.sampled_from(KEYS)).encode() + b"=" + draw(st.text(max_size=10)).encode())
    return b"\n".join(parts)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fio_bytes())
def test_job_files_parse_or_give_one_line(tmp_path_factory, data):
    p = tmp_path_factory.mktemp("fz") / "fuzz.fio"
    p.write_bytes(data)
    try:
        f = load_fio(str(p))
    except FioError as e:
        s = str(e)
        assert "fuzz.fio" in s and "\n" not in s
        return
    for j in f.jobs:
        assert 0 < j.bs <= 2 ** 63 - 1 and j.iodepth >= 1
        for d in j.ddirs:
            assert all(0 < s <= 2 ** 63 - 1 for s, _ in j.sizes_of(d))
        j.number_ios = min(j.number_ios or 20, 20)
        j.runtime_ns = min(j.runtime_ns or 10 ** 7, 10 ** 7)
        j.numjobs = min(j.numjobs, 2)
        j.lat_log = j.bw_log = j.iops_log = None
    if all(j.bs <= 1 << 30 for j in f.jobs):
        r = simulate(T2, two_paths(), f.jobs)
        r.check_accounting()


def test_live_mode_refuses_what_only_the_simulator_models(tmp_path):
    from mpathlab.live import LiveError, LiveRun
    with pytest.raises(LiveError, match="live mode does not do mixed block sizes, rate/thinktime"):
        LiveRun([str(tmp_path / "a")], "round-robin", job("[j]\nbssplit=4k/50:8k/50\nrate_iops=10\nsize=64k\n"))


def test_cli_refuses_huge_bs_and_misread_durations_with_exit_3(tmp_path, capsys):
    topo = os.path.join(os.path.dirname(__file__), "..", "examples", "asymmetric.toml")
    for body, msg in (("bs=9223372036854775808\n", "bs=9223372036854775808: '9223372036854775808' is larger "
                                                   "than 2^63-1"),
                      ("thinktime=5sec\nsize=64k\n", "it would read '5sec' as 5 microseconds")):
        p = tmp_path / "j.fio"
        p.write_text("[j]\n" + body)
        assert main(["run", topo, str(p)]) == 3
        err = capsys.readouterr().err
        assert msg in err and "j.fio line 2 [j]" in err and err.count("\n") == 1


@pytest.mark.parametrize("value,msg", [("$ncpus/0", "division by zero"), ("$ncpus**2", "cannot compute"),
                                       ("($ncpus", "no arithmetic expressions"), ("$ncpus-$ncpus", "must be between 1")])
def test_keyword_arithmetic_errors_are_one_line(value, msg):
    with pytest.raises(FioError, match=re.escape(msg)) as ei:
        job("[j]\nsize=64k\nnumjobs=%s\n" % value)
    assert str(ei.value).startswith("t.fio line 3 [j]: numjobs=")


@pytest.mark.parametrize("text", [
    "[j]\nbssplit=4k/50:64k/50\nnumber_ios=200\n", "[j]\nrw=randtrim\nnumber_ios=200\n",
    "[j]\nrate_iops=5000\nnumber_ios=50\n", "[j]\nthinktime=10us\nnumber_ios=50\n",
])
def test_mixed_sizes_trims_and_open_loop_run_in_the_compiled_core(text):
    auto = Simulation(T2, two_paths(dist=Exponential), job(text))
    a = auto.run()
    b = Simulation(T2, two_paths(dist=Exponential), job(text), engine="python").run()
    assert a.engine == ("compiled" if fast.available() else "python")
    assert (a.shares, a.completed, a.status_info) == (b.shares, b.completed, b.status_info)


@pytest.mark.parametrize("text", [
    "[j]\nrw=write\nverify=md5\nsize=64k\n", "[a]\nsize=64k\n[b]\nwait_for=a\nsize=64k\n",
    "[j]\nsize=64k\nwrite_iops_log\n", "[j]\nsize=64k\nlatency_target=1ms\nioengine=libaio\niodepth=8\n",
])
def test_the_compiled_core_leaves_new_features_to_the_python_engine(text):
    auto = Simulation(T2, two_paths(dist=Exponential), job(text))
    if fast.available():
        assert fast.eligible(auto)
    a = auto.run()
    b = Simulation(T2, two_paths(dist=Exponential), job(text), engine="python").run()
    assert a.engine == "python" and (a.shares, a.completed, a.status_info) == (b.shares, b.completed, b.status_info)


def test_exitall_on_error():
    from mpathlab.sim.devices import Fault
    paths = two_paths(faults=[Fault(1_000_000, "fail")])
    text = ("[a]\nrw=read\nruntime=50ms\ntime_based\n%s\n"
            "[b]\nrw=read\nruntime=50ms\ntime_based\ncontinue_on_error=all\n")
    r = simulate(T2, paths, job(text % "exitall_on_error"))
    a, b = r.jobs
    assert a.first_error and a.stopped and b.stopped and b.end_ns < 2_000_000
    r = simulate(T2, two_paths(faults=[Fault(1_000_000, "fail")]), job(text % ""))
    assert r.jobs[1].end_ns >= 49_000_000           # without it b keeps going (and failing) to its runtime


def test_rate_limited_fio_reaps_what_is_in_flight_before_it_sleeps():
    # fio's rate_ddir, ahead of the rate: usec = next due - now, then io_u_quiesce (every I/O in flight
    # reaped), then the sleep of usec.  250 us between I/Os, 400 us per I/O on two idle paths: io1 at 0
    # (io2 due at 250: sleep 250 measured), reaped at 400, awake at 650: io2 and io3 (due 500) go out,
    # io4 is due at 750 (sleep 100), both reaped at 1050, awake at 1150, and so on
    from mpathlab.sim.engine import Simulation

    class Submits(Simulation):
        def _complete(self, io, error):
            self.subs.append(io.submit_ns // 1000)
            super()._complete(io, error)
    text = "[j]\nrw=randread\nbs=4k\nrate_iops=4000\nnumber_ios=7\nioengine=libaio\niodepth=64\n"
    sim = Submits("0 2097152 multipath 0 0 1 1 round-robin 0 2 1 8:0 1 8:16 1", two_paths(400_000, par=1),
                  job(text), engine="python")
    sim.subs = []
    sim.run()
    assert sorted(sim.subs) == [0, 650, 650, 1150, 1150, 1650, 1650]
