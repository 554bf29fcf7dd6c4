"""fio-plot's log mode (-g) draws mpathlab's fio-format log files (issue 10:
the logs are read by fio2gnuplot, fiologparser and fio-plot; the JSON modes
are tested in test_fio_json.py)."""
import os
import subprocess
import sys

import pytest

from mpathlab.cli import main

T2 = "0 2097152 multipath 0 0 1 1 service-time 0 2 2 sdb 1 1 sdc 1 1"


def test_fio_plot_graph_mode_reads_our_logs(tmp_path, monkeypatch):
    if os.environ.get("CI") != "true":      # in the test extra: CI must run it, not skip it
        pytest.importorskip("fio_plot", reason="fio-plot (PyPI, in the test extra) is not installed")
    name = "randread-iodepth-8-numjobs-1"     # the file names fio-plot looks for
    (tmp_path / "j.fio").write_text("[%s]\nrw=randread\nbs=4k\nsize=16m\niodepth=8\nwrite_lat_log=%s\n"
                                    "write_iops_log=%s\nwrite_bw_log=%s\nlog_avg_msec=10\n" % ((name,) * 4))
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--table", T2, "j.fio", "--no-progress"]) == 0
    for kind in ("lat", "clat", "iops", "bw"):
        assert (tmp_path / ("%s_%s.1.log" % (name, kind))).stat().st_size > 0
    png = tmp_path / "g.png"
    p = subprocess.run([sys.executable, "-m", "fio_plot", "-i", str(tmp_path), "-T", "t", "-g", "-t", "bw", "iops",
                        "lat", "-r", "randread", "-d", "8", "-n", "1", "-o", str(png)],
                       capture_output=True, text=True, timeout=300, env=dict(os.environ, MPLBACKEND="Agg"),
                       cwd=str(tmp_path))
    assert p.returncode == 0 and png.exists() and png.stat().st_size > 10_000, (p.stdout[-500:], p.stderr[-500:])
