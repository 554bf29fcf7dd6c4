"""fio's own log readers on mpathlab's log files (write_lat_log, write_bw_log,
write_iops_log with log_avg_msec): fio-plot's log graph (-g) and fio's
fiologparser.py, with the values they print checked against the simulation."""
import gzip
import os
import subprocess
import sys

import pytest

from conftest import require, require_module
from mpathlab.cli import main
from mpathlab.sim.devices import PathModel, ServiceTime
from mpathlab.sim.engine import simulate
from mpathlab.workload.fio import parse_fio
from mpathlab.workload.fio_logs import write_logs

T2 = "0 2097152 multipath 0 0 1 1 service-time 0 2 2 sda 1 1 sdb 1 1"
T2_CLI = "0 2097152 multipath 0 0 1 1 service-time 0 2 2 sdb 1 1 sdc 1 1"
AVG_MS = 10          # log_avg_msec of the runs below


def fio_window(t_ns, avg_ms):
    """fio's averaging window of a sample: fio counts whole ms since the job started and the sample that
    reaches a window's end closes it, so window k holds (k x M, (k + 1) x M] ms (the first one from 0)."""
    return max(0, t_ns // 1_000_000 - 1) // avg_ms


def _run(job_text, directory):
    """Simulate on two 1 ms paths that serve one I/O at a time (so a few MiB take about two seconds,
    several of fiologparser's 1 s intervals) and write the logs; the result."""
    paths = [PathModel("sda", (8, 0), ServiceTime(1_000_000), parallelism=1),
             PathModel("sdb", (8, 16), ServiceTime(1_000_000), parallelism=1)]
    r = simulate(T2, paths, parse_fio(job_text, "t.fio").jobs)
    os.makedirs(directory, exist_ok=True)
    write_logs(r, str(directory))
    return r


def _log(path):
    return [[int(c, 0) for c in line.split(", ")] for line in path.read_text().splitlines()]


# -- fio-plot -g ------------------------------------------------------------------

def test_fio_plot_draws_our_logs(tmp_path):
    require_module("fio_plot", "fio-plot (PyPI, a test dependency) must draw mpathlab's fio logs (-g)")
    from fio_plot.fiolib import dataimport, defaultsettings

    # fio-plot finds logs by bench-fio's naming: the log prefix is RW-iodepth-D-numjobs-N (bench-fio sets
    # write_*_log to it); the files are then named as fio names them, PREFIX_TYPE.CLONE.log
    prefix = "randrw-iodepth-8-numjobs-2"
    avg = 100       # ms: about 50 reads and 50 writes per clone and window, so no window goes without
    # (libaio, bench-fio's engine: fio writes slat lines only for an engine that queues I/O)
    r = _run("[j]\nioengine=libaio\nrw=randrw\nbs=4k\nsize=4m\niodepth=8\nnumjobs=2\nlog_avg_msec=%d\nwrite_lat_log=%s\n"
             "write_bw_log=%s\nwrite_iops_log=%s\n" % (avg, prefix, prefix, prefix), tmp_path / "run")
    # fio-plot 1.1 draws at most three metrics in one graph (one y axis each; a fourth is a KeyError)
    for types in (["lat", "iops", "bw"], ["clat", "slat"]):
        png = tmp_path / ("logs-%s.png" % "-".join(types))
        p = subprocess.run([sys.executable, "-m", "fio_plot", "-i", str(tmp_path / "run"), "-T", "t", "-g",
                            "-t", *types, "-r", "randrw", "-d", "8", "-n", "2", "-o", str(png)],
                           capture_output=True, text=True, timeout=300, env=dict(os.environ, MPLBACKEND="Agg"),
                           cwd=str(tmp_path))
        assert p.returncode == 0 and png.exists(), (types, p.stdout[-500:], p.stderr[-500:])
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000

    # what -g plots, read by fio-plot's own importer: per window, the two clones' iops summed, and each
    # value is the clone's I/Os of that direction completed in the window, per second
    settings = dict(defaultsettings.get_default_settings(), rw="randrw", iodepth=[8], numjobs=[2], type=["iops"])
    files = dataimport.filterLogFiles(settings, dataimport.list_fio_log_files(str(tmp_path / "run")))
    assert sorted(os.path.basename(f["filename"]["filename"]) for f in files) == [
        prefix + "_iops.1.log", prefix + "_iops.2.log"]
    merged = dataimport.mergeDataSet(settings, dataimport.readLogDataFromFiles(settings, files))
    (data,) = merged[0]["data"]
    for ddir, name in ((0, "read"), (1, "write")):
        counts = {}
        for job in r.jobs:
            for t, _lat, d, _n in job.log.samples:
                if d == ddir:
                    key = (job.log.number, fio_window(t, avg))
                    counts[key] = counts.get(key, 0) + 1
        windows = [sorted(k for (num, k) in counts if num == n) for n in (1, 2)]
        assert all(w == list(range(len(w))) for w in windows)     # I/O in every window, so rows line up
        # only full windows have a line (fio writes no rate for the job's last, partial one)
        full = min((j.end_ns - j.start_ns) // 1_000_000 // avg for j in r.jobs)
        expect = [sum(counts[(n, k)] * 1000 // avg for n in (1, 2)) for k in range(full)]
        assert [v for _ts, v in data[name]] == expect, name


# -- fiologparser.py ------------------------------------------------------------------

# fio 3.33's copy (Debian's) unpacks exactly four columns, the format before fio 3.18 added the priority
# column, so it fails on fio 3.33's own logs; upstream fixed that line in fio 3.34 (commit 5f2a90b8, "fix
# fiologparser.py to work with new logging format") to read the first two columns, which are all it uses.
OLD_UNPACK = "(time, value, foo, bar) = line.rstrip('\\r\\n').rsplit(', ')"
FIXED_UNPACK = "(time, value) = line.rstrip('\\r\\n').rsplit(', ')[:2]"


def _fiologparser(tmp_path):
    """Debian's fiologparser.py, gunzipped into tmp_path (with fio 3.34's one-line fix where it is the 3.33
    copy, after checking that copy fails on fio's own log exactly as it fails on ours); its path."""
    gz = require("/usr/share/doc/fio/fiologparser.py.gz", "fio's fiologparser.py reads mpathlab's logs")
    with gzip.open(gz, "rt") as f:
        src = f.read()
    script = tmp_path / "fiologparser.py"
    if OLD_UNPACK in src:
        script.write_text(src)
        fio = require("fio", "fio 3.33's own log, to show the shipped fiologparser.py fails on it too")
        subprocess.run([fio, "--name=f", "--ioengine=null", "--size=64k", "--rw=read", "--bs=4k",
                        "--write_bw_log=f", "--output=/dev/null"], cwd=tmp_path, check=True, timeout=60)
        for log in ("f_bw.1.log", "m_bw.1.log"):
            p = subprocess.run([sys.executable, str(script), log], cwd=tmp_path, capture_output=True, text=True,
                               timeout=60)
            assert p.returncode != 0 and "too many values to unpack (expected 4)" in p.stderr, (log, p.stderr)
        assert src.count(OLD_UNPACK) == 1
        src = src.replace(OLD_UNPACK, FIXED_UNPACK)
    script.write_text(src)
    return script


def _parser_out(script, args, cwd):
    p = subprocess.run([sys.executable, str(script), *args], cwd=cwd, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, (args, p.stderr[-800:])
    return [[float(c) for c in line.split(", ")] for line in p.stdout.splitlines()]


def test_fiologparser_reads_our_bw_and_clat_logs(tmp_path):
    size = 10 << 20
    r = _run("[m]\nrw=read\nbs=4k\nsize=10m\nioengine=libaio\niodepth=4\nnumjobs=2\nlog_avg_msec=%d\nwrite_bw_log=m\n"
             "write_lat_log=m\n" % AVG_MS, tmp_path)
    script = _fiologparser(tmp_path)
    logs = {kind: [_log(tmp_path / ("m_%s.%d.log" % (kind, n))) for n in (1, 2)] for kind in ("bw", "clat")}
    # fiologparser spreads a sample over the time since the previous line: that is its window only when
    # every window has a line, which a steady run gives (checked, so the values below mean what they say);
    # as in fio, the job's last, partial window has a clat line stamped with the job's end and no bw line
    samples = {job.log.number: job.log.samples for job in r.jobs}
    assert sorted(samples) == [1, 2]
    for n, lines in enumerate(logs["bw"], 1):
        span_ms = (r.jobs[n - 1].end_ns - r.jobs[n - 1].start_ns) / 1e6
        assert [t for t, *_ in lines] == [AVG_MS * (k + 1) for k in range(int(span_ms // AVG_MS))]
    for bw, clat in zip(logs["bw"], logs["clat"]):
        tb, tc = [t for t, *_ in bw], [t for t, *_ in clat]
        assert tc == tb or (tc[:-1] == tb and tb[-1] < tc[-1] < tb[-1] + AVG_MS)

    # default mode, one bw log: the run's mean bandwidth (KiB/s) over the time the log covers: the bytes
    # clone 1 read before the log's last time, over that time (each window's KiB/s is rounded down: less
    # than 1 KiB/s low in all); all but the last partial window's bytes
    end1 = logs["bw"][0][-1][0]
    nbytes1 = sum(n for t, _lat, _d, n in samples[1] if fio_window(t, AVG_MS) < end1 // AVG_MS)
    assert size - 2 * AVG_MS * 4096 < nbytes1 < size
    ((mean_bw,),) = _parser_out(script, ["m_bw.1.log"], tmp_path)
    assert nbytes1 / 1024 * 1000 / end1 - 1 < mean_bw <= nbytes1 / 1024 * 1000 / end1 + 0.0005

    # -s, both bw logs: per 1 s interval (the last one cut at the earlier log's end), the KiB/s both
    # clones read in it, counted from the simulation's completions (each window's rounding: < 1 KiB/s
    # per clone)
    ftime = min(lines[-1][0] for lines in logs["bw"])
    sums = _parser_out(script, ["-s", "m_bw.1.log", "m_bw.2.log"], tmp_path)
    ends = [e for e in range(1000, ftime, 1000)] + [ftime]
    assert [e for e, _ in sums] == ends and len(ends) >= 3
    for (end, got), start in zip(sums, [0] + ends):
        # the windows that end in (start, end]
        nbytes = sum(n for s in samples.values() for t, _lat, _d, n in s
                     if start // AVG_MS <= fio_window(t, AVG_MS) < end // AVG_MS)
        want = nbytes / 1024 * 1000 / (end - start)
        assert want - 2 < got <= want + 0.0005, (start, end, got, want)

    # -a, both clat logs: per interval, the mean over the two clones of the mean of their windows' mean
    # completion latencies (ns), from the simulation (each logged window mean is rounded: 0.5 ns)
    avgs = _parser_out(script, ["-a", "m_clat.1.log", "m_clat.2.log"], tmp_path)
    ftime_clat = min(lines[-1][0] for lines in logs["clat"])
    assert [e for e, _ in avgs] == ends[:-1] + [ftime_clat]
    # (the last interval holds the partial windows, which fiologparser weighs by their shorter span)
    assert avgs[-1][1] == pytest.approx(4_000_000, rel=0.05)
    for (end, got), start in zip(avgs[:-1], [0] + ends):
        per_clone = []
        for s in samples.values():
            win = {}
            for t, lat, _d, _n in s:
                k = fio_window(t, AVG_MS)
                if start // AVG_MS <= k < end // AVG_MS:
                    win.setdefault(k, []).append(lat)
            assert len(win) == (end - start) // AVG_MS
            per_clone.append(sum(sum(v) / len(v) for v in win.values()) / len(win))
        want = sum(per_clone) / 2
        assert abs(got - want) <= 0.5 + 0.0005, (start, end, got, want)
        # 4 I/Os in flight per clone, 8 on two paths that serve one at a time for 1 ms: 4 ms each
        assert got == pytest.approx(4_000_000, rel=0.05)


def test_averaged_windows_end_as_fios_do(tmp_path):
    """fio 3.33 itself, ioengine=null, 256 reads at rate_iops=1000 (a 255 ms job), log_avg_msec=100:
    the clat log has lines at 100, 200 and, for the last partial window, at the job's end (255); the bw
    log has a line per full window at most (fio stamps those when its helper thread samples, and may miss
    one)."""
    fio = require("fio", "compare the averaged log windows with fio 3.33's")
    job = "[r]\nioengine=null\nrw=read\nbs=4k\nsize=1m\nrate_iops=1000\nlog_avg_msec=100\nwrite_lat_log=%s\n" \
          "write_bw_log=%s\n"
    (tmp_path / "fio").mkdir()
    (tmp_path / "fio" / "r.fio").write_text(job % ("f", "f"))
    subprocess.run([fio, "--output=/dev/null", "r.fio"], cwd=tmp_path / "fio", check=True, timeout=60)
    # paths of 100 us, a null engine's instant completions being out of reach: the job still ends at 255 ms
    paths = [PathModel("sda", (8, 0), ServiceTime(100_000)), PathModel("sdb", (8, 16), ServiceTime(100_000))]
    r = simulate(T2, paths, parse_fio(job % ("m", "m"), "t.fio").jobs)
    (tmp_path / "sim").mkdir()
    write_logs(r, str(tmp_path / "sim"))
    assert r.jobs[0].end_ns // 1_000_000 == 255
    fio_clat = [t for t, *_ in _log(tmp_path / "fio" / "f_clat.1.log")]
    our_clat = [t for t, *_ in _log(tmp_path / "sim" / "m_clat.1.log")]
    # fio stamps a window when its thread gets the CPU: on a loaded host a few ms late, never early
    assert our_clat == [100, 200, 255] and len(fio_clat) == 3
    assert all(0 <= f - o <= 10 for f, o in zip(fio_clat, our_clat))
    # bw: ours at the two full windows' ends; fio's at most as many, at its helper thread's ticks
    assert [t for t, *_ in _log(tmp_path / "sim" / "m_bw.1.log")] == [100, 200]
    assert 1 <= len(_log(tmp_path / "fio" / "f_bw.1.log")) <= 2


def test_fio_plot_graph_mode_reads_our_logs(tmp_path, monkeypatch):
    """The same through the CLI: `mpathlab run` writes the logs into the current directory."""
    require_module("fio_plot", "fio-plot (PyPI, a test dependency) must draw mpathlab's fio logs (-g)")
    name = "randread-iodepth-8-numjobs-1"     # the file names fio-plot looks for
    (tmp_path / "j.fio").write_text("[%s]\nrw=randread\nbs=4k\nsize=16m\nioengine=libaio\niodepth=8\nwrite_lat_log=%s\n"
                                    "write_iops_log=%s\nwrite_bw_log=%s\nlog_avg_msec=10\n" % ((name,) * 4))
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--table", T2_CLI, "j.fio", "--no-progress"]) == 0
    for kind in ("lat", "clat", "iops", "bw"):
        assert (tmp_path / ("%s_%s.1.log" % (name, kind))).stat().st_size > 0
    png = tmp_path / "g.png"
    p = subprocess.run([sys.executable, "-m", "fio_plot", "-i", str(tmp_path), "-T", "t", "-g", "-t", "bw", "iops",
                        "lat", "-r", "randread", "-d", "8", "-n", "1", "-o", str(png)],
                       capture_output=True, text=True, timeout=300, env=dict(os.environ, MPLBACKEND="Agg"),
                       cwd=str(tmp_path))
    assert p.returncode == 0 and png.exists() and png.stat().st_size > 10_000, (p.stdout[-500:], p.stderr[-500:])
