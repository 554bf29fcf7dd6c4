"""Trace replay as a workload (read_iolog and the replay_* options): the issue times fio 3.33's rules give,
worked by hand; the same counts, bytes and timing as the real fio replaying the same traces."""
import json
import tomllib
import os
import random
import subprocess

import pytest

from badinput_util import one_error, write
from conftest import require
from mpathlab.runner import run_simulation
from mpathlab.sim import fast
from mpathlab.sim.engine import Simulation
from mpathlab.topology import topology_from_dict
from mpathlab.workload.fio import FioError, parse_fio
from mpathlab.workload.trace import TA_QUEUE, TC_QUEUE, TC_READ, TC_WRITE, BlkEvent, tc_act
from mpathlab.workload.trace_blktrace import write_blktrace
from mpathlab.workload.trace_replay import IO, ReplayOptions, delay_since, open_pieces, probe_depth
from trace_util import DATA, blkparse, percpu_events, write_percpu

# one path, a constant 100 us per I/O: completions are exact
TOPO = ('[multipath]\ntable = "0 8 multipath 0 0 1 1 round-robin 0 1 1 sdb 1"\n'
        '[paths.sdb]\ndevt = "8:16"\nservice = { dist = "constant", mean = "100us" }\nper_kib = "0ns"\n')
FAST_TOPO = TOPO.replace('"100us"', '"1us"')


def _run(tmp_path, job_text, topo=TOPO):
    topo_path = write(tmp_path, "t.toml", topo)
    job_path = write(tmp_path, "r.fio", job_text)
    from mpathlab.topology import load_topology
    from mpathlab.workload.fio import load_fio
    return run_simulation(load_topology(topo_path), load_fio(job_path))


def _issues(result):
    """(issue ns, ddir, bytes) of every I/O, from the job's latency log samples."""
    job = result.jobs[0]
    return sorted((t - lat + job.start_ns, d, n) for t, lat, d, n in job.log.samples)


def _iolog(tmp_path, lines, version=3, name="t.iolog"):
    return write(tmp_path, name, "fio version %d iolog\n" % version + "".join(l + "\n" for l in lines))


def test_delay_since_is_fios():
    o = ReplayOptions()
    assert delay_since(0, 500, o) == 0                 # no previous time yet (or it was 0)
    assert delay_since(100, 90, o) == 0                # backwards
    assert delay_since(100, 600, o) == 500
    assert delay_since(100, 600, o._replace(no_stall=True)) == 0
    assert delay_since(100, 600, o._replace(time_scale=200)) == 250
    assert delay_since(100, 190, o._replace(time_scale=33)) == 272      # 90 x 3.0303..., truncated
    assert delay_since(100, 101, o._replace(time_scale=300)) == 0


def test_issue_times_worked_by_hand(tmp_path):
    """v3: 'open' at 10 us follows 'add' at 0, whose time leaves fio's last time at 0: no delay; then gaps
    of 90, 500, 50 and 5000 us from the previous *issue*. With psync (depth 1) and 100 us per I/O, the
    read due at 640 us waits for the write issued at 590 us to complete (690 us), and the last write
    keeps its 5000 us gap from that late issue (5690 us), not from the trace's 5650."""
    t = _iolog(tmp_path, ["0 f add", "10 f open", "100 f read 0 4096", "600 f write 4096 8192",
                          "650 f read 8192 4096", "5650 f write 0 65536", "5700 f close"])
    r = _run(tmp_path, "[r]\nread_iolog=%s\nwrite_lat_log=l\n" % t)
    assert [(i // 1000, d, n) for i, d, n in _issues(r)] == [(90, 0, 4096), (590, 1, 8192), (690, 0, 4096),
                                                              (5690, 1, 65536)]
    # replay_time_scale=200: every gap halved (int(gap x 0.5)); no queueing then
    r = _run(tmp_path, "[r]\nread_iolog=%s\nwrite_lat_log=l\nreplay_time_scale=200\niodepth=4\n"
             "ioengine=libaio\n" % t)
    assert [i // 1000 for i, _, _ in _issues(r)] == [45, 295, 320, 2820]
    # replay_no_stall: back to back at depth 1
    r = _run(tmp_path, "[r]\nread_iolog=%s\nwrite_lat_log=l\nreplay_no_stall=1\n" % t)
    assert [i // 1000 for i, _, _ in _issues(r)] == [0, 100, 200, 300]


def test_version2_wait_is_milliseconds_since_the_start(tmp_path):
    """fio 3.33's read_iolog_get sleeps until WAIT ms after it started (not the HOWTO's microseconds)."""
    t = _iolog(tmp_path, ["f add", "f open", "f read 0 4096", "f wait 3 0", "f write 0 4096", "f wait 2 0",
                          "f read 0 4096", "f close"], version=2)
    r = _run(tmp_path, "[r]\nread_iolog=%s\nwrite_lat_log=l\n" % t)
    assert [i // 1000 for i, _, _ in _issues(r)] == [0, 3000, 3100]
    r = _run(tmp_path, "[r]\nread_iolog=%s\nwrite_lat_log=l\nreplay_no_stall=1\n" % t)
    assert [i // 1000 for i, _, _ in _issues(r)] == [0, 100, 200]


def _ev(t, low, cats, nbytes, sector=8, cpu=0, seq=0):
    return BlkEvent(t, sector, nbytes, tc_act(cats) | low, 1, 7 << 20, cpu, seq, 0, "")


def test_blktrace_probe_depth_worked_by_hand():
    Q, M, C = 1, 2, 8
    R, W = TC_READ, TC_WRITE
    evs = [_ev(1, Q, R, 4096), _ev(2, Q, R, 4096), _ev(3, Q, R, 4096), _ev(4, M, R, 4096), _ev(5, C, R, 4096),
           _ev(6, Q, W, 4096), _ev(7, C, W, 4096), _ev(8, Q, R, 4096), _ev(9, C, R, 4096)]
    assert probe_depth(iter(evs)) == 2          # three reads queued, one merged, before the first completion
    assert probe_depth(iter(evs[:3])) == 1      # queued and never completed: fio still takes 1


def test_a_trace_is_read_as_the_run_goes(tmp_path):
    """A bad line far into the trace is not reached when the runtime ends first: nothing reads ahead."""
    lines = ["0 f add"] + ["%d f read %d 4096" % (100 + 10 * i, i * 4096) for i in range(5000)] + ["x f read 0 1"]
    t = _iolog(tmp_path, lines)
    r = _run(tmp_path, "[r]\nread_iolog=%s\nruntime=20ms\nioengine=libaio\niodepth=64\n" % t)
    assert 100 < r.completed < 5000      # one path serving 100 us I/O one at a time
    with pytest.raises(Exception, match=r"t.iolog:5003: timestamp 'x'"):
        _run(tmp_path, "[r]\nread_iolog=%s\n" % t)


def test_replay_runs_in_the_python_engine_and_says_why(tmp_path):
    t = os.path.join(DATA, "fio-null-rate.iolog")
    jobs = parse_fio("[r]\nread_iolog=%s\n" % t)
    topo = topology_from_dict(tomllib.loads(TOPO))
    sim = Simulation(topo.table, topo.paths, jobs.jobs, **topo.sim_kwargs())
    assert "read_iolog" in fast.eligible(sim)


def test_job_file_refusals_name_file_and_line(tmp_path, capsys):
    topo = write(tmp_path, "t.toml", TOPO)
    bad = _iolog(tmp_path, ["0 f add", "5 f read 0 4096", "9 f read 0"], name="bad.iolog")
    job = write(tmp_path, "j.fio", "[r]\nread_iolog=bad.iolog\n")
    msg = one_error(capsys, ["run", topo, job])
    assert "bad.iolog:4: 4 fields" in msg and "j.fio" in msg
    job = write(tmp_path, "k.fio", "[r]\nread_iolog=missing.iolog\n")
    assert "read_iolog=missing.iolog: no such file" in one_error(capsys, ["run", topo, job])
    job = write(tmp_path, "m.fio", "[r]\nread_iolog=%s\nrate_iops=100\n" % bad)
    assert "rate with read_iolog is not modelled" in one_error(capsys, ["run", topo, job])
    job = write(tmp_path, "n.fio", "[r]\nread_iolog=%s\nreplay_align=3000\n" % bad)
    assert "replay_align=3000: must be a power of 2" in one_error(capsys, ["run", topo, job])
    job = write(tmp_path, "o.fio", "[r]\nread_iolog=%s\nreplay_skip=reads\n" % bad)
    assert "Unknown skip type" in one_error(capsys, ["run", topo, job])
    empty = _iolog(tmp_path, ["0 f add", "3 f open", "9 f close"], name="empty.iolog")
    job = write(tmp_path, "p.fio", "[r]\nread_iolog=%s\n" % empty)
    assert "no read, write or trim to replay" in one_error(capsys, ["run", topo, job])


# -- against the real fio ----------------------------------------------------------------------------

def _fio(tmp_path, args):
    fio = require("fio", "fio replays the same traces")
    out = subprocess.run(["nice", "-n", "19", fio, "--output-format=json"] + args, cwd=str(tmp_path),
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout[out.stdout.index("{"):])["jobs"][0]


def _fio_counts(j):
    return {d: (j[d]["total_ios"], j[d]["io_bytes"]) for d in ("read", "write", "trim")}, j["sync"]["total_ios"]


def _sim_counts(r):
    job = r.jobs[0]
    return ({"read": (job.read_lat.n, job.bytes_read), "write": (job.write_lat.n, job.bytes_written),
             "trim": (job.trim_lat.n, job.bytes_trimmed)}, job.gen.syncs)


@pytest.fixture(scope="module")
def blktrace_files(tmp_path_factory):
    """A per-CPU blktrace (kernel-shaped: merges, flushes, discards, preflush writes, zero-byte flushes)
    and the one file blkparse -d makes of it."""
    d = tmp_path_factory.mktemp("bt")
    per_cpu = percpu_events(seed=11, per_cpu=150)
    # a zero-byte write and a notify whose low bits equal a queue's: fio drops both
    per_cpu[0].append(BlkEvent(per_cpu[0][-1].time_ns + 10, 0, 0, tc_act(TC_WRITE | TC_QUEUE) | TA_QUEUE, 1,
                               7 << 20 | 3, 0, 10 ** 6, 0, ""))
    per_cpu[0].append(BlkEvent(per_cpu[0][-1].time_ns + 10, 0, 0, tc_act(1 << 10) | 1, 1, 7 << 20 | 3, 0,
                               10 ** 6 + 1, 0, ""))
    base = write_percpu(str(d), "k", per_cpu)
    require("blkparse", "blkparse merges the per-CPU files as fio's HOWTO asks")
    blkparse(["-i", "k", "-d", "k.bin", "-o", "/dev/null"], str(d))
    return d, base


@pytest.mark.parametrize("extra", ["", "replay_skip=write,sync", "replay_align=65536", "replay_skip=trim,read"])
def test_blktrace_counts_match_fio(tmp_path, blktrace_files, extra):
    d, base = blktrace_files
    opts = [x for x in extra.split("\n") if x]
    # depth 1: fio's null engine then completes every I/O (queued asynchronously, the last one of a replay is
    # counted as issued but never completed, so its bytes would be missing from fio's io_bytes)
    j = _fio(tmp_path, ["--name=r", "--ioengine=null", "--iodepth=1", "--read_iolog=%s" % (d / "k.bin"),
                        "--replay_redirect=%s" % (tmp_path / "dev")] + ["--" + o for o in opts])
    want = _fio_counts(j)
    assert sum(n for n, _ in want[0].values()) > 20
    for trace in (str(d / "k.bin"), base):       # the dump, and the per-CPU files merged by us
        r = _run(tmp_path, "[r]\nread_iolog=%s\n%s\n" % (trace, extra), topo=FAST_TOPO)
        assert _sim_counts(r) == want, (trace, extra)


@pytest.mark.parametrize("name", ["fio-libaio-randrw.iolog", "fio-null-rate.iolog"])
def test_real_iolog_counts_match_fio(tmp_path, name):
    t = os.path.join(DATA, name)
    want = _fio_counts(_fio(tmp_path, ["--name=r", "--ioengine=null", "--read_iolog=%s" % t]))
    r = _run(tmp_path, "[r]\nread_iolog=%s\n" % t, topo=FAST_TOPO)
    assert _sim_counts(r) == want


def _gap_trace(tmp_path, n=50, seed=5):
    rng = random.Random(seed)
    lines = ["0 tr add", "10 tr open"]
    t = 100
    for i in range(n):
        t += rng.randint(2000, 9000)
        lines.append("%d tr %s %d %d" % (t, rng.choice(["read", "write"]), i * 65536, rng.choice([4096, 16384])))
    lines.append("%d tr close" % (t + 50))
    return _iolog(tmp_path, lines, name="gaps.iolog"), lines


@pytest.mark.parametrize("scale", [100, 200])
def test_issue_times_against_fio(tmp_path, scale):
    """fio (null engine) replays a v3 iolog with gaps of 2-9 ms; its latency log (log_offset=1, in ms) gives
    each I/O's issue time. The simulation issues each I/O exactly the trace's gap (scaled) after the previous
    one, in the same order as fio. fio's sleeps (usec_sleep) can only run long, and it makes up an overrun on
    the next gap at most (iolog_delay's time_offset), so no I/O of fio's is earlier than the simulated
    schedule by more than the lateness before it and fio's 1 ms resolution. How late fio is depends on the machine: on a quiet one its
    gaps are the trace's to the millisecond; at nice 19 on a loaded one its sleeps overrun by tens of ms."""
    t, lines = _gap_trace(tmp_path)
    j = _fio(tmp_path, ["--name=r", "--ioengine=null", "--read_iolog=%s" % t, "--write_lat_log=f",
                        "--log_offset=1", "--replay_time_scale=%d" % scale])
    fio_ms = {}
    order = []
    for line in open(tmp_path / "f_clat.1.log"):
        f = [x.strip() for x in line.split(",")]
        fio_ms[int(f[4])] = int(f[0])
        order.append(int(f[4]))
    r = _run(tmp_path, "[r]\nread_iolog=%s\nwrite_lat_log=l\nreplay_time_scale=%d\n" % (t, scale), topo=FAST_TOPO)
    sim = [i for i, _, _ in _issues(r)]
    trace_us = [int(l.split()[0]) for l in lines[2:-1]]
    offsets = [int(l.split()[3]) for l in lines[2:-1]]
    counts = _fio_counts(j)[0]
    assert len(sim) == len(trace_us) == counts["read"][0] + counts["write"][0] == len(order)
    assert order == offsets                        # fio issued (and completed) them in the trace's order
    want_gaps = [int((b - a) * (100.0 / scale)) for a, b in zip(trace_us, trace_us[1:])]
    assert [(b - a) // 1000 for a, b in zip(sim, sim[1:])] == want_gaps
    # both clocks start with the job (fio's log times are whole ms since it started: at most 1 ms short);
    # fio takes a late sleep's excess off the next gap, so it is early by at most the lateness before
    late_ms = [fio_ms[o] - s / 1e6 for o, s in zip(offsets, sim)]
    for i, late in enumerate(late_ms):
        assert late >= -1.0 - max([0.0] + late_ms[:i]), late_ms


def test_clones_take_the_names_in_turn_and_one_cpu_file_is_noted(tmp_path):
    """read_iolog=A:B with numjobs=3: clones 0, 1, 2 replay A, B, A (fio's get_name_by_idx, modulo)."""
    _iolog(tmp_path, ["0 f add", "5 f read 0 4096"], name="a.iolog")
    _iolog(tmp_path, ["0 f add", "5 f write 0 8192", "9 f write 0 8192"], name="b.iolog")
    r = _run(tmp_path, "[r]\nread_iolog=a.iolog:b.iolog\nnumjobs=3\n")
    assert [(j.bytes_read, j.bytes_written) for j in r.jobs] == [(4096, 0), (0, 16384), (4096, 0)]
    jobs = parse_fio("[r]\nread_iolog=synth.blktrace.0\n", "j.fio", DATA)
    assert any("one CPU's file of a per-CPU blktrace" in n for n in jobs.notes)
    assert not parse_fio("[r]\nread_iolog=synth\n", "j.fio", DATA).notes


def _mixed_trace(tmp_path, n=40, seed=7):
    """A v3 iolog over two files: reads, writes, trims and a sync at unaligned offsets, gaps of 2-9 ms."""
    rng = random.Random(seed)
    lines = ["0 fa add", "0 fb add", "10 fa open", "12 fb open"]
    t = 100
    for i in range(n):
        t += rng.randint(2000, 9000)
        f = rng.choice(["fa", "fb"])
        act = "sync" if i == n // 2 else rng.choice(["read", "write", "write", "trim"])
        off, nbytes = (0, 0) if act == "sync" else (rng.randrange(1 << 30) // 512 * 512 + rng.choice([0, 512, 1536]),
                                                    rng.choice([4096, 8192, 65536]))
        lines.append("%d %s %s %d %d" % (t, f, act, off, nbytes))
    lines += ["%d fa close" % (t + 50), "%d fb close" % (t + 60)]
    return _iolog(tmp_path, lines, name="mixed.iolog"), lines


def _fio_log(path):
    """(ms, ddir, bytes, offset) per I/O of fio's latency log (log_offset=1), in its order."""
    out = []
    for line in open(path):
        f = [int(x) for x in line.split(",")]
        out.append((f[0], f[2], f[3], f[4]))
    return out


@pytest.mark.parametrize("opt", ["", "replay_no_stall=1", "replay_time_scale=50", "replay_redirect=dev",
                                 "replay_align=4096", "replay_scale=4", "replay_scale=3\nreplay_align=8192"])
def test_replay_options_issue_what_fio_issues_when_fio_issues_it(tmp_path, opt):
    """fio 3.33 (null engine, depth 1) and the simulation replay the same two-file iolog under each option:
    the same reads and writes (fio drops the trims, "bad ddir: 2", and so does the replay) with the same
    bytes and offsets, in the same order; the simulated issue times are the trace's gaps (scaled, each
    from the previous record, a dropped trim too, whose own gap is never slept) to the microsecond, and
    fio's (its log: whole ms) are never earlier than them beyond that millisecond and the lateness fio
    made up on the way. Under replay_no_stall both issue everything at
    once: the simulation within its 1 us service times, fio well inside the trace's span."""
    t, lines = _mixed_trace(tmp_path)
    opts = [o for o in opt.split("\n") if o]
    j = _fio(tmp_path, ["--name=r", "--ioengine=null", "--read_iolog=%s" % t, "--write_lat_log=f", "--log_offset=1"]
             + ["--" + o.replace("=dev", "=%s" % (tmp_path / "dev")) for o in opts])
    fio_ios = _fio_log(tmp_path / "f_clat.1.log")
    r = _run(tmp_path, "[r]\nread_iolog=%s\nwrite_lat_log=l\n%s\n" % (t, opt), topo=FAST_TOPO)
    spec = r.jobs[0].spec
    pieces = [p for p in open_pieces(spec.replay_sources[0], spec.replay_options) if p[0] == IO]
    sim = _issues(r)
    assert _sim_counts(r) == _fio_counts(j)
    assert [(d, n, off) for _, d, n, off in fio_ios] == [(d, n, off) for (_, d, n), (_, _, _, _, off) in
                                                          zip(sim, pieces)] == [(p[2], p[3], p[4]) for p in pieces]
    # by hand: offset // scale, aligned down (fio's iolog.c read_iolog2 with ipo_bytes_align)
    scale = int(dict(o.split("=") for o in opts).get("replay_scale", 1))
    align = int(dict(o.split("=") for o in opts).get("replay_align", 0))
    ios = [l.split() for l in lines if l.split()[2] in ("read", "write")]
    assert [p[4] for p in pieces] == [int(l[3]) // scale & ~(align - 1 if align else 0) for l in ios]
    times = [int(l.split()[0]) for l in lines]
    if "replay_no_stall=1" in opts:
        assert sim[-1][0] < 1_000_000 and fio_ios[-1][0] < (times[-1] - times[0]) // 4000
        return
    pct = int(dict(o.split("=") for o in opts).get("replay_time_scale", 100))
    due, prev, want = 0, 0, []
    for l in lines:
        time, _, act = l.split()[:3]
        # a piece waits its gap from the previous record; an add or a trim makes no piece (its gap is
        # never slept) but is that previous record for the next one
        if act not in ("add", "trim"):
            due += int((int(time) - prev) * (100.0 / pct)) * 1000 if prev else 0
        prev = int(time)
        if act in ("read", "write"):
            want.append(due)
    assert [s for s, _, _ in sim] == [w + sim[0][0] - want[0] for w in want]
    # fio's sleeps only run long, and it takes a late sleep's excess off the next gap (iolog_delay's
    # time_offset): an I/O of fio's is early by at most the lateness before it, plus its 1 ms resolution
    late_ms = [ms - s / 1e6 for (ms, _, _, _), (s, _, _) in zip(fio_ios, sim)]
    for i, late in enumerate(late_ms):
        assert late >= -1.0 - max([0.0] + late_ms[:i]), late_ms


def test_an_iolog_trim_is_dropped_but_its_time_is_the_last(tmp_path):
    """fio 3.33 (read_iolog2) takes a trim line's time as the last record's, then drops the line ("bad ddir:
    2"): the read after it waits 10 ms from the first read, not 209 ms nor 10 ms after a 199 ms sleep.
    (fio's own log of this trace: reads at 1 and 11 ms, no trim.)"""
    t = _iolog(tmp_path, ["0 fa add", "10 fa open", "1000 fa read 0 4096", "200000 fa trim 8192 4096",
                          "210000 fa read 4096 4096", "220000 fa close"])
    r = _run(tmp_path, "[r]\nread_iolog=%s\nwrite_lat_log=l\n" % t)
    (a, da, na), (b, db, nb) = _issues(r)
    assert (da, na, db, nb) == (0, 4096, 0, 4096) and b - a == 10_000_000
    assert r.jobs[0].trim_lat.n == 0
    notes = parse_fio("[r]\nread_iolog=%s\n" % t).notes
    assert any("t.iolog:5: an iolog's trim lines are not replayed" in n for n in notes), notes


KERNEL = os.path.join(DATA, "kernel-6.1-dm-scsi")     # a real 6.1 blktrace (its README.md)


def test_kernel_blktrace_replays_as_fio_replays_it(tmp_path):
    """fio (null engine, depth 1) replays the dm device's trace as blkparse -d merges it; the simulation
    replays the same dump and the per-CPU files: the same counts and bytes, and fio issues the I/O the
    pieces hold (direction, size, offset), in their order."""
    require("blkparse", "blkparse merges the per-CPU files as fio's HOWTO asks")
    blkparse(["-i", os.path.join(KERNEL, "dm-0"), "-d", "k.bin", "-o", "/dev/null"], str(tmp_path))
    j = _fio(tmp_path, ["--name=r", "--ioengine=null", "--iodepth=1", "--read_iolog=k.bin", "--write_lat_log=f",
                        "--log_offset=1", "--replay_redirect=%s" % (tmp_path / "dev")])
    fio_ios = [(d, n, off) for _, d, n, off in _fio_log(tmp_path / "f_clat.1.log")]
    for trace in (str(tmp_path / "k.bin"), os.path.join(KERNEL, "dm-0")):
        r = _run(tmp_path, "[r]\nread_iolog=%s\niodepth=1\n" % trace, topo=FAST_TOPO)
        assert _sim_counts(r) == _fio_counts(j)
        spec = r.jobs[0].spec
        assert [p[2:] for p in open_pieces(spec.replay_sources[0], spec.replay_options) if p[0] == IO] == fio_ios
    assert len(fio_ios) == 29


def test_a_path_of_a_request_based_map_has_nothing_to_replay(tmp_path, capsys):
    """The path's trace holds the clones (remap, issue, completion) but no queue event: fio says "found no
    ios in blktrace data" and exits 1; mpathlab refuses it in one line, exit 3: while taking the trace's
    depth (it used to run no I/O then, with the depth of 0 the probe found) or, at a given depth, when
    the replay starts."""
    topo = write(tmp_path, "t.toml", FAST_TOPO)
    for extra in ("", "iodepth=1\n"):
        job = write(tmp_path, "j.fio", "[r]\nread_iolog=%s\n%s" % (os.path.join(KERNEL, "sda"), extra))
        assert "no read, write or trim to replay" in one_error(capsys, ["run", topo, job])
