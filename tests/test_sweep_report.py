"""Sweeps on a local Dask cluster, and HTML reports checked for their plots."""
import base64
import os
import re
import struct

import pytest

from mpathlab.cli import main
from mpathlab.report.html import run_report, sweep_report
from mpathlab.runner import run_simulation
from mpathlab.scenarios import HERE
from mpathlab.sweep import SweepError, parse_set, read_rows, run_point, run_sweep, write_rows
from mpathlab.workload.fio import parse_fio
from mpathlab.topology import load_topology

TOPO = os.path.join(HERE, "hst-2020.toml")
JOB = "[j]\nioengine=libaio\nrw=randwrite\nbs=4k\nnumber_ios=2000\n"


@pytest.fixture(scope="module")
def sweep_rows(tmp_path_factory):
    d = tmp_path_factory.mktemp("sweep")
    job = d / "job.fio"
    job.write_text(JOB)
    rows = run_sweep(TOPO, str(job), selectors=["round-robin", "historical-service-time"], iodepths=[1, 8],
                     seeds=[1], sets=parse_set(["paths.sdd.service.mean=100us,400us"]), workers=2)
    return rows, str(job), d


def test_sweep_on_local_dask_cluster(sweep_rows):
    rows, job, d = sweep_rows
    assert len(rows) == 8
    assert {(r["selector"], r["iodepth"], r["paths.sdd.service.mean"]) for r in rows} == {
        (s, k, m) for s in ("round-robin", "historical-service-time") for k in (1, 8) for m in ("100us", "400us")}
    for r in rows:
        assert r["completed"] == 2000 and r["errored"] == 0
        assert abs(sum(r["share_" + p] for p in ("sda", "sdb", "sdc", "sdd")) - 1) < 1e-9
        if r["selector"] == "round-robin":
            assert r["share_sdd"] == 0.25
        if r["paths.sdd.service.mean"] == "100us":
            assert r["best_sdd"] == pytest.approx(0.25)
        else:
            assert r["best_sdd"] == pytest.approx(1 / 13)


def test_sweep_points_equal_local_runs(sweep_rows):
    rows, job, d = sweep_rows
    import tomllib
    with open(TOPO, "rb") as f:
        doc = tomllib.load(f)
    r = next(x for x in rows if x["selector"] == "historical-service-time" and x["iodepth"] == 8
             and x["paths.sdd.service.mean"] == "400us")
    local = run_point(doc, "hst-2020.toml", HERE, JOB, {"selector": "historical-service-time", "iodepth": 8,
                                                         "seed": 1, "set": {"paths.sdd.service.mean": "400us"}})
    assert local == r
    # and the same as a plain run of that topology
    topo = load_topology(TOPO)
    jobs = parse_fio(JOB.replace("number_ios", "iodepth=8\nnumber_ios"))
    res = run_simulation(topo, jobs, selector="historical-service-time", seed=1)
    assert res.shares["sdd"] == r["share_sdd"]


def test_sweep_table_round_trip(sweep_rows, tmp_path):
    rows, job, d = sweep_rows
    out = tmp_path / "t.csv"
    write_rows(rows, str(out))
    back = read_rows(str(out))
    assert len(back) == len(rows)
    assert back[0]["selector"] == rows[0]["selector"] and back[0]["share_sdd"] == pytest.approx(rows[0]["share_sdd"])


def test_sweep_table_keeps_names_that_look_like_numbers(tmp_path):
    # a kernel profile "5.10" must come back as "5.10", not as the number 5.1; numbers come back exact
    rows = [{"selector": "round-robin", "iodepth": 4, "seed": 1, "multipath.kernel": k, "mean_deviation": v,
             "lat_p99_ns": 1662976, "steal": 0.1, "flag": True} for k, v in (("5.10", 0.30000000000000004),
                                                                              ("6.1", 1e-05))]
    out = tmp_path / "k.csv"
    write_rows(rows, str(out))
    back = read_rows(str(out))
    assert back == rows
    assert [type(r["multipath.kernel"]) for r in back] == [str, str]


def test_sweep_errors(tmp_path):
    with pytest.raises(SweepError, match="KEY=V1,V2"):
        parse_set(["nokey"])
    job = tmp_path / "j.fio"
    job.write_text(JOB)
    assert main(["sweep", TOPO, str(job), "--selectors", "nope"]) == 3
    assert main(["sweep", TOPO, str(job), "--iodepths", "a,b"]) == 3


def _pngs(page):
    out = []
    for alt, b in re.findall(r'<img alt="([^"]+)" src="data:image/png;base64,([^"]+)"', page):
        data = base64.b64decode(b)
        assert data[:8] == b"\x89PNG\r\n\x1a\n"
        w, h = struct.unpack(">II", data[16:24])
        out.append((alt, w, h, len(data)))
    return out


def test_run_report_has_its_plots():
    topo = load_topology(TOPO)
    jobs = parse_fio("[j]\nrw=randwrite\nbs=4k\nioengine=libaio\niodepth=16\nruntime=20ms\ntime_based\n")
    results = {s: run_simulation(topo, jobs, selector=s) for s in ("service-time", "historical-service-time")}
    page = run_report(results, "test report")
    imgs = _pngs(page)
    assert [a for a, *_ in imgs] == ["utilisation", "latency CDF", "in-flight"]
    assert all(w > 300 and h > 200 and n > 5000 for _, w, h, n in imgs)
    assert "historical-service-time" in page and '<td class="l">Best</td>' in page
    assert results["service-time"].timeline      # the in-flight plot has data


def test_sweep_report_and_cli(sweep_rows, tmp_path):
    rows, job, d = sweep_rows
    table = tmp_path / "t.csv"
    write_rows(rows, str(table))
    html_out = tmp_path / "s.html"
    assert main(["report", "--sweep", str(table), "-o", str(html_out)]) == 0
    imgs = _pngs(html_out.read_text())
    assert [a for a, *_ in imgs] == ["against iodepth", "against paths.sdd.service.mean"]
    runs_table = sweep_report(rows, "x").split("<h2>Runs</h2>")[1]
    assert runs_table.count("<tr>") == len(rows) + 1
    run_html = tmp_path / "r.html"
    assert main(["report", TOPO, job, "--selectors", "round-robin,queue-length", "-o", str(run_html),
                 "--no-progress"]) == 0
    assert len(_pngs(run_html.read_text())) == 3
    assert main(["report", "--sweep", str(tmp_path / "missing.csv")]) == 3
