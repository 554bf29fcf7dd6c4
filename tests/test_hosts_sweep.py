"""Sweeps over host counts (mpathlab sweep on a multi-host topology, --set hosts.count=...) on a local Dask
cluster: every point is the `mpathlab hosts` run of that count, and the sweep reports per point as it goes."""
import os

import pytest

from mpathlab.multihost import load_multihost, run_multihost
from mpathlab.scenarios import HERE
from mpathlab.sweep import parse_set, run_point, run_sweep
from mpathlab.topology import TopologyError
from mpathlab.workload.fio import parse_fio

pytest.importorskip("dask.distributed")

TOPO = os.path.join(HERE, "hosts-8x4.toml")
JOB = "[host]\nioengine=libaio\nrw=randread\nbs=4k\nnumber_ios=300\n"


@pytest.fixture(scope="module")
def host_sweep(tmp_path_factory):
    job = tmp_path_factory.mktemp("hosts") / "job.fio"
    job.write_text(JOB)
    seen = []
    rows = run_sweep(TOPO, str(job), selectors=["service-time", "historical-service-time"], iodepths=[16], seeds=[1],
                     sets=parse_set(["hosts.count=1,2,6"]), workers=2, progress=seen.append)
    return rows, seen


def test_a_sweep_over_host_counts_runs_every_point_as_mpathlab_hosts(host_sweep):
    rows, _ = host_sweep
    assert len(rows) == 6
    topo, cfg = load_multihost(TOPO)
    jobs = parse_fio(JOB.replace("number_ios", "iodepth=16\nnumber_ios"))
    for r in rows:
        n = r["hosts.count"]
        assert r["completed"] == 300 * n and r["errored"] == 0 and r["engine"] == "compiled"
        assert abs(sum(r["share_" + p] for p in ("pA", "pB", "pC", "pD")) - 1) < 1e-9
        cfg.count = n
        mh = run_multihost(topo, cfg, jobs, selector=r["selector"], seed=1)
        # the point's numbers are that run's: all I/O's p99 and the worst host's
        assert r["lat_p99_ns"] == mh.all_latency.percentiles((99.0,))["99.000000"]
        # (no host's p99 below all I/O's: if every host had 99 % under some time, so would all I/O)
        assert r["lat_p99_worst_host_ns"] == max(mh.host_percentile(99.0)) >= r["lat_p99_ns"]
    # ST spreads each host's 16 I/Os evenly: 4 and 8 in flight per port with 1 and 2 hosts fit the ports' 16
    # servers, 24 with 6 hosts queue behind them, so only there the tail grows by the wait
    st = {r["hosts.count"]: r["lat_p99_ns"] for r in rows if r["selector"] == "service-time"}
    assert st[6] > 1.2 * max(st[1], st[2])


def test_host_sweep_progress_is_per_point(host_sweep):
    _, seen = host_sweep
    assert seen == [i / 6 for i in range(1, 7)]


def test_a_point_is_the_same_on_a_worker_and_here(host_sweep):
    import tomllib
    rows, _ = host_sweep
    with open(TOPO, "rb") as f:
        doc = tomllib.load(f)
    r = next(x for x in rows if x["selector"] == "historical-service-time" and x["hosts.count"] == 6)
    assert run_point(doc, "hosts-8x4.toml", HERE, JOB, {"selector": "historical-service-time", "iodepth": 16,
                                                        "seed": 1, "set": {"hosts.count": 6}}) == r


def test_a_host_count_out_of_range_is_refused_before_the_cluster_starts(tmp_path):
    job = tmp_path / "job.fio"
    job.write_text(JOB)
    with pytest.raises(TopologyError) as e:
        run_sweep(TOPO, str(job), selectors=["service-time"], iodepths=[16], seeds=[1],
                  sets=parse_set(["hosts.count=8,2000"]), workers=1)
    assert "hosts.count=2000" in str(e.value) and "count must be a whole number from 1 to 1024" in str(e.value)


def test_a_host_sweep_on_a_scheduler_address(host_sweep, tmp_path):
    """--scheduler ADDRESS: the same rows from a cluster the sweep did not start."""
    from dask.distributed import LocalCluster
    rows, _ = host_sweep
    job = tmp_path / "job.fio"
    job.write_text(JOB)
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0") as cluster:
        got = run_sweep(TOPO, str(job), selectors=["service-time"], iodepths=[16], seeds=[1],
                        sets=parse_set(["hosts.count=2,6"]), scheduler=cluster.scheduler_address)
    assert got == [r for r in rows if r["selector"] == "service-time" and r["hosts.count"] in (2, 6)]
