"""fio JSON output that fio's own tools read: the shape of a real fio 3.33
capture (tests/data/fio-3.33), fio_jsonplus_clat2csv --validate, fio-plot,
and hand-computed bw/iops sample statistics."""
import json
import math
import os
import re
import subprocess
import sys
import time

import pytest

from conftest import require, require_module
from mpathlab.report import fio_json
from mpathlab.report.fio_json import fio_time
from mpathlab.runner import run_simulation
from mpathlab.sim.engine import simulate
from mpathlab.sim import PathModel, ServiceTime
from mpathlab.workload.fio import parse_fio
import tomllib

from mpathlab.topology import topology_from_dict

DATA = os.path.join(os.path.dirname(__file__), "data", "fio-3.33")
TABLE = "0 2097152 multipath 0 0 1 1 service-time 0 2 2 sdb 1 1 sdc 1 1"


def _capture(name):
    with open(os.path.join(DATA, name)) as f:
        return json.load(f)


def _run(job_text, plus=False):
    jf = parse_fio(job_text)
    paths = [PathModel("sdb", (8, 16), ServiceTime(50_000), parallelism=2),
             PathModel("sdc", (8, 32), ServiceTime(80_000), parallelism=2)]
    r = simulate(TABLE, paths, jf.jobs)
    return json.loads(json.dumps(fio_json(r, jf.global_options, plus=plus)))


def _shape(obj, path=""):
    """Every key path with the JSON type of its value (bins/percentile maps collapsed)."""
    out = {}
    if isinstance(obj, dict):
        for k, v in obj.items():
            if path.endswith(("bins", "percentile")):
                k = "*"
            out.update(_shape(v, path + "/" + k))
    else:
        out[path] = type(obj).__name__
    return out


def _job_shape(doc):
    return {k: v for k, v in _shape(doc["jobs"][0]).items() if not k.startswith("/job options/")}


def test_json_has_the_shape_and_key_order_of_fio_3_33():
    real = _capture("randrw.json")
    ours = _run("[global]\nbs=4k\n[randrw]\nrw=randrw\nioengine=libaio\niodepth=4\nnumber_ios=4096\n")
    assert [k for k in ours if k != "mpath"] == list(real)
    assert list(ours["jobs"][0]) == list(real["jobs"][0])
    for d in ("read", "write", "trim"):
        assert list(ours["jobs"][0][d]) == list(real["jobs"][0][d])
    # same keys with the same JSON types (an int stays an int, a float a float)
    assert _job_shape(ours) == _job_shape(real)
    for key in ("iodepth_level", "iodepth_submit", "iodepth_complete", "latency_ns", "latency_us", "latency_ms"):
        assert list(ours["jobs"][0][key]) == list(real["jobs"][0][key])


def test_json_plus_omits_what_fio_omits_and_fills_what_it_fills():
    real = _capture("randread-latpct.jsonplus.json")
    ours = _run("[latpct]\nrw=randread\nbs=4k\nioengine=libaio\niodepth=2\nlat_percentiles=1\nnumber_ios=3000\n", plus=True)
    assert _job_shape(ours) == _job_shape(real)
    for doc in (real, ours):
        job = doc["jobs"][0]
        # lat_percentiles=1: percentiles and bins in clat_ns and lat_ns; none in a direction without I/O
        assert {"percentile", "bins"} <= set(job["read"]["clat_ns"]) and {"percentile", "bins"} <= set(job["read"]["lat_ns"])
        for d in ("write", "trim"):
            for lat in ("slat_ns", "clat_ns", "lat_ns"):
                assert set(job[d][lat]) == {"min", "max", "mean", "stddev", "N"}
        assert all(re.fullmatch(r"\d+", k) for k in job["read"]["clat_ns"]["bins"])
        assert sum(job["read"]["clat_ns"]["bins"].values()) == job["read"]["total_ios"]
    # without lat_percentiles lat_ns has neither
    plain = _run("[j]\nrw=randread\nbs=4k\nnumber_ios=100\n", plus=True)["jobs"][0]["read"]
    assert "bins" in plain["clat_ns"] and set(plain["lat_ns"]) == {"min", "max", "mean", "stddev", "N"}


def test_fio_jsonplus_clat2csv_converts_and_validates_our_json_plus(tmp_path):
    tool = require("fio_jsonplus_clat2csv", "fio's json+ to CSV converter, from Debian's fio package")
    # the script imports six, which Debian's fio does not pull in: run it with Debian's python3 and python3-six
    require("/usr/lib/python3/dist-packages/six.py", "python3-six, for fio_jsonplus_clat2csv")
    tool_cmd = ["/usr/bin/python3", tool]
    src = tmp_path / "out.json"
    out = subprocess.run([sys.executable, "-m", "mpathlab", "run", "--table", TABLE,
                          os.path.join(DATA, "..", "..", "..", "examples", "randwrite.fio"), "--json-plus"],
                         capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=_src()), timeout=300)
    assert out.returncode == 0, out.stderr
    src.write_text(out.stdout)
    dest = str(tmp_path / "lat.csv")
    conv = subprocess.run(tool_cmd + [str(src), dest], capture_output=True, text=True, timeout=120)
    assert conv.returncode == 0, conv.stderr
    val = subprocess.run(tool_cmd + ["--validate", str(src), dest], capture_output=True, text=True, timeout=120)
    assert val.returncode == 0 and "lat_job0.csv validated" in val.stdout, val.stdout + val.stderr
    # and a mixed read/write job with lat_percentiles (bins in both lat objects)
    doc = _run("[global]\nbs=4k\nlat_percentiles=1\n[a]\nrw=randrw\nioengine=libaio\niodepth=4\nnumber_ios=2000\n"
               "[b]\nrw=read\nnumber_ios=300\n", plus=True)
    src.write_text(json.dumps(doc))
    for args in (tool_cmd + [str(src), dest], tool_cmd + ["--validate", str(src), dest]):
        p = subprocess.run(args, capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stdout + p.stderr
    assert "lat_job1.csv validated" in p.stdout


def _src():
    return os.path.join(os.path.dirname(__file__), "..", "src")


def test_bw_and_iops_samples_per_500ms_window_hand_computed():
    # One path, constant 100 us service, one server, iodepth 1: an I/O completes every 100 us.
    # At 750.05 ms the path becomes 2x slower (the I/O started at 750.0 ms keeps 100 us).
    # Window 0 [0, 500 ms): completions at 0.1 .. 499.9 ms = 4999 I/Os.
    # Window 1 [500, 1000 ms): 500.0 .. 750.1 ms = 2502, then every 200 us: 750.3 .. 999.9 ms = 1249 -> 3751.
    # Window 2 is partial (the job stops at 1200 ms): no sample, as in fio.
    topo = topology_from_dict(tomllib.loads('[multipath]\ntable = "0 8 multipath 0 0 1 1 round-robin 0 1 1 sdb 1"\n'
                          '[paths.sdb]\ndevt = "8:16"\nservice = "100us"\nparallelism = 1\n'
                          'faults = [ { at = "750050us", action = "slow", factor = 2 } ]\n'), "t.toml")
    jf = parse_fio("[j]\nrw=write\nbs=4k\nioengine=libaio\niodepth=1\nruntime=1200ms\ntime_based\n")
    r = run_simulation(topo, jf)
    (job,) = r.jobs
    assert [w[4] for _, w in sorted(job.rate_windows.windows.items())][:2] == [4999, 3751]  # write I/Os per window
    w = json.loads(json.dumps(fio_json(r, jf.global_options)))["jobs"][0]["write"]
    # bw sample = bytes * 1000 / 500 ms / 1024 (KiB/s); iops sample = I/Os * 1000 / 500 ms
    assert (w["bw_samples"], w["bw_min"], w["bw_max"]) == (2, 3751 * 8, 4999 * 8)
    assert w["bw_mean"] == pytest.approx(35000.0)
    assert w["bw_dev"] == pytest.approx(4992 * math.sqrt(2))
    assert (w["iops_samples"], w["iops_min"], w["iops_max"]) == (2, 7502, 9998)
    assert w["iops_mean"] == pytest.approx(8750.0)
    assert w["iops_stddev"] == pytest.approx(1248 * math.sqrt(2))
    assert w["bw_agg"] == 100.0            # the only job: its mean is (more than) the group's aggregate
    # fio's formulas on the whole run: bw_bytes = 1000 * io_bytes // runtime_ms
    assert w["bw_bytes"] == 1000 * w["io_bytes"] // w["runtime"] and w["bw"] == w["bw_bytes"] // 1024
    job_out = json.loads(json.dumps(fio_json(r, jf.global_options)))["jobs"][0]
    assert job_out["iodepth_level"]["1"] == 100.0 and job_out["iodepth_submit"]["4"] == 100.0
    # latency ranges: 100 us I/Os fall in fio's "100 <= us < 250" slot, keyed "250"; the slow ones too
    assert job_out["latency_us"]["250"] == pytest.approx(100.0)
    assert job_out["read"]["bw_samples"] == 0 and "percentile" not in job_out["read"]["clat_ns"]


def test_short_run_has_no_samples_like_fio():
    w = _run("[j]\nrw=write\nbs=4k\nnumber_ios=100\n")["jobs"][0]["write"]
    assert (w["bw_samples"], w["bw_min"], w["bw_max"], w["bw_agg"], w["iops_samples"]) == (0, 0, 0, 0.0, 0)


def test_iodepth_level_and_latency_clamps():
    job = _run("[j]\nrw=randread\nbs=4k\nioengine=libaio\niodepth=32\nnumber_ios=20000\n")["jobs"][0]
    lvl = job["iodepth_level"]
    # depths 1..31 once each while filling the queue, then 32 for the rest; fio shows a non-empty slot as >= 0.1
    assert lvl["1"] == lvl["2"] == lvl["4"] == lvl["8"] == lvl["16"] == 0.1
    assert lvl["32"] == pytest.approx(100.0 * (20000 - 31) / 20000)
    assert lvl[">=64"] == 0.0


def test_time_is_formatted_as_fio_formats_it(monkeypatch):
    real = _capture("randrw.json")
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    try:
        assert fio_time(1796282064) == "Thu Dec  3 07:14:24 2026"    # the capture's timestamp and time
        assert real["time"] == "Thu Dec  3 07:14:24 2026" and real["timestamp"] == 1796282064
        doc = _run("[j]\nnumber_ios=10\n")
        assert re.fullmatch(r"\w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4}", doc["time"])
    finally:
        monkeypatch.undo()
        time.tzset()


def test_fio_plot_reads_our_json_in_every_json_mode(tmp_path):
    require_module("fio_plot", "fio-plot (PyPI, a test dependency) must draw every JSON mode from our output")
    d1, d2 = tmp_path / "a", tmp_path / "b"
    d1.mkdir()
    d2.mkdir()
    for depth in (1, 8):
        doc = _run("[global]\nrw=randread\nbs=4k\nnumjobs=1\nioengine=libaio\niodepth=%d\n[j]\nnumber_ios=3000\n" % depth)
        for d in (d1, d2):
            (d / ("randread-%d-1.json" % depth)).write_text(json.dumps(doc))
    modes = {"-l": ["-i", str(d1), "-n", "1"], "-N": ["-i", str(d1), "-d", "8"], "-L": ["-i", str(d1), "-t", "iops"],
             "-H": ["-i", str(d1), "-d", "8", "-n", "1"], "-C": ["-i", str(d1), str(d2), "-d", "8", "-n", "1"]}
    for mode, args in modes.items():
        png = tmp_path / ("out%s.png" % mode)
        p = subprocess.run([sys.executable, "-m", "fio_plot", "-T", "t", "-r", "randread", mode, *args,
                            "-o", str(png)], capture_output=True, text=True, timeout=300,
                           env=dict(os.environ, MPLBACKEND="Agg"), cwd=str(tmp_path))
        assert p.returncode == 0 and png.exists(), (mode, p.stdout[-500:], p.stderr[-500:])


from hypothesis import given, settings, strategies as st  # noqa: E402


@settings(max_examples=25, deadline=None)
@given(st.sampled_from(["read", "write", "randrw"]), st.integers(1, 70), st.integers(1, 3), st.booleans(),
       st.integers(50, 3000))
def test_json_invariants_on_random_jobs(rw, depth, numjobs, group, ios):
    text = "[j]\nrw=%s\nbs=4k\nioengine=libaio\niodepth=%d\nnumjobs=%d\nnumber_ios=%d\n%s" % (
        rw, depth, numjobs, ios, "group_reporting\n" if group else "")
    doc = _run(text, plus=True)
    assert len(doc["jobs"]) == (1 if group else numjobs)
    for job in doc["jobs"]:
        total = sum(job[d]["total_ios"] for d in ("read", "write", "trim"))
        assert total == ios * (numjobs if group else 1)
        for d in ("read", "write"):
            dd = job[d]
            if dd["total_ios"]:
                assert sum(dd["clat_ns"]["bins"].values()) == dd["total_ios"]
                assert dd["bw_bytes"] == 1000 * dd["io_bytes"] // dd["runtime"]
            else:
                assert "bins" not in dd["clat_ns"] and dd["runtime"] == 0 and dd["bw_samples"] == 0
        ranges = [v for k in ("latency_ns", "latency_us", "latency_ms") for v in job[k].values()]
        assert sum(ranges) == pytest.approx(100.0, abs=0.01 * len(ranges))
        levels = job["iodepth_level"]
        assert sum(levels.values()) == pytest.approx(100.0, abs=0.1 * 7)
        # the deepest level reached is the job's iodepth slot
        slot = [k for k, v in levels.items() if v > 0][-1]
        assert slot == ("1", "2", "4", "8", "16", "32", ">=64")[min(6, min(depth, ios).bit_length() - 1)]


def test_percentile_list_is_printed_sorted_as_fio_does():
    w = _run("[j]\nrw=write\nbs=4k\nnumber_ios=500\npercentile_list=99.9:50:1\n")["jobs"][0]["write"]
    assert list(w["clat_ns"]["percentile"]) == ["1.000000", "50.000000", "99.900000"]


@pytest.mark.parametrize("engine,in_flight", [("", 1), ("ioengine=psync\n", 1), ("ioengine=sync\n", 1),
                                              ("ioengine=null\n", 32), ("ioengine=libaio\n", 32),
                                              ("ioengine=io_uring\n", 32)])
def test_synchronous_engines_run_one_io_at_a_time_as_fio_does(engine, in_flight):
    # fio 3.33, `--ioengine=psync --iodepth=32` (psync is the default): "note: both iodepth >= 1 and
    # synchronous I/O engine are selected, queue depth will be capped at 1"; its JSON: iodepth_level
    # {"1": 100.0, ...} and latency_depth 32.  The null engine is synchronous only at iodepth 1.
    [j] = parse_fio("[j]\n%srw=randread\nbs=4k\niodepth=32\nnumber_ios=640\n" % engine).jobs
    assert j.iodepth == in_flight and j.iodepth_option == 32
    assert any("caps the queue depth at 1" in n for n in j.notes) == (in_flight == 1)
    doc = _run("[j]\n%srw=randread\nbs=4k\niodepth=32\nnumber_ios=640\n" % engine)["jobs"][0]
    assert doc["latency_depth"] == 32
    assert doc["iodepth_level"]["1"] == (100.0 if in_flight == 1 else pytest.approx(100 / 640, abs=0.1))
    assert doc["iodepth_level"][">=64" if in_flight > 32 else "32"] == (0.0 if in_flight == 1 else
                                                                         pytest.approx(100 * 609 / 640, abs=0.2))
