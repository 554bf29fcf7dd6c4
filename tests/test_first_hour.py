"""What a new user meets first: dmsetup's own output accepted as printed, output that explains itself,
terminal output that fits, the example configuration as documented."""
import contextlib
import io
import os

from mpathlab.cli import main
from mpathlab.target import parse

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
JOB = os.path.join(ROOT, "examples", "randwrite.fio")
LINE = "0 2097152 multipath 0 0 1 1 round-robin 0 2 0 8:16 8:32"


def _run(argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(argv)
    return rc, out.getvalue(), err.getvalue()


def test_dmsetup_table_name_prefix_is_accepted_where_a_table_line_is():
    # `dmsetup table` prints "mpatha: 0 2097152 multipath ..." (the status command already took it)
    assert _run(["table", "mpatha: " + LINE]) == _run(["table", LINE])
    assert parse("mpatha: " + LINE).table() == parse(LINE).table()
    rc, out, err = _run(["run", "--no-progress", "--table", "mpatha: " + LINE, JOB])
    assert rc == 0, err
    assert "8:16" in out and "8:32" in out
    # a major:minor followed by ':' is not a name; the kernel's error for it stays
    rc, _, err = _run(["table", "8:16: " + LINE])
    assert rc == 3 and "invalid number of feature args" in err


def test_readme_maps_sample_is_the_commands_output_warnings_included():
    import re
    import subprocess
    import sys
    readme = open(os.path.join(ROOT, "README.md")).read()
    section = readme.split("## multipath.conf", 1)[1]
    cmd = re.search(r"^(\./mpathlab maps [^#\n]*?)\s+#", section, re.M).group(1).split()
    sample = re.search(r"```\n(device-mapper:.*?)```", section, re.S).group(1).splitlines()
    p = subprocess.run([sys.executable, "-m", "mpathlab"] + cmd[1:], cwd=ROOT, capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=os.path.join(ROOT, "src")))
    assert p.returncode == 0, p.stderr
    assert sample == p.stderr.splitlines() + p.stdout.splitlines()[:len(sample) - len(p.stderr.splitlines())]
    assert sum(l.startswith("device-mapper:") for l in sample) == 4


ALUA_TOPO = """
[multipath]
table = "0 2097152 multipath 0 1 alua 1 1 service-time 0 2 2 sdb 1 1 sdc 1 1"
activation = "100ms"
[paths.sdb]
devt = "8:16"
kind = "scsi"
service = "100us"
[paths.sdc]
devt = "8:32"
kind = "scsi"
service = "100us"
"""


def test_a_pg_init_delay_is_explained_in_the_run_summary(tmp_path):
    topo = tmp_path / "alua.toml"
    topo.write_text(ALUA_TOPO)
    rc, out, err = _run(["run", "--no-progress", str(topo), JOB])
    assert rc == 0, err
    note = " ".join(l.strip() for l in out.split("note: pg_init", 1)[1].splitlines()[:4])
    assert note.startswith("ran 1 time: with a hardware handler ('1 alua')") and "max latency" in note
    assert "max=10" in out                   # the first I/O waited the 100 ms activation
    plain = tmp_path / "plain.toml"
    plain.write_text(ALUA_TOPO.replace("0 1 alua 1 1", "0 0 1 1"))
    rc, out, err = _run(["run", "--no-progress", str(plain), JOB])
    assert rc == 0 and "pg_init" not in out, err


NVME_TOPO = """
[paths.a]
service = { dist = "constant", mean = "100us" }
parallelism = 8
[paths.b]
service = { dist = "constant", mean = "300us" }
parallelism = 8
[paths.c]
service = { dist = "constant", mean = "100us" }
parallelism = 8
[nvme]
iopolicy = "round-robin"
[nvme.controllers.nvme0]
path = "a"
[nvme.controllers.nvme1]
path = "b"
[nvme.controllers.nvme2]
path = "c"
[[nvme.ana_groups]]
id = 1
namespaces = [1]
state = { nvme0 = "optimized", nvme1 = "optimized", nvme2 = "non-optimized" }
"""


def test_nvme_best_honours_ana_states_and_paths_are_named_by_controller(tmp_path):
    import json
    from mpathlab.topology import load_topology
    topo = tmp_path / "nvme.toml"
    topo.write_text(NVME_TOPO)
    # an NVMe-only topology numbers its devices as the kernel numbers namespaces (blkext, major 259)
    assert [p.devt for p in load_topology(str(topo)).paths] == [(259, 0), (259, 1), (259, 2)]
    rc, out, err = _run(["run", "--no-progress", "--json", str(topo), JOB])
    assert rc == 0, err
    paths = {p["name"]: p for p in json.loads(out)["mpath"]["paths"]}
    # by hand: the non-optimized controller gets nothing while optimized ones are live; among the optimized,
    # capacity 8/100us : 8/300us = 3 : 1
    assert {n: round(p["best"], 6) for n, p in paths.items()} == {"a": 0.75, "b": 0.25, "c": 0.0}
    assert paths["c"]["completed"] == 0 and {p["dev"] for p in paths.values()} == {"nvme0", "nvme1", "nvme2"}
    # round-robin alternates over the optimized two: shares 0.5/0.5 against Best 0.75/0.25
    assert abs(paths["a"]["share"] - 0.5) < 0.01
    rc, out, _ = _run(["run", "--no-progress", str(topo), JOB])
    assert "mean deviation from Best: 0.1667" in out      # (0.25 + 0.25 + 0) / 3


def test_live_table_names_files_apart_has_per_path_percentiles_and_cleans_up(tmp_path):
    job = tmp_path / "j.fio"
    job.write_text("[j]\nrw=randwrite\nbs=4k\nsize=1m\nnumber_ios=200\n")
    a, b = (str(tmp_path / ("a-long-file-name-for-the-first-path-%s.img" % x)) for x in ("one", "two"))
    keep = tmp_path / "kept.img"
    keep.write_bytes(b"\1" * (1 << 20))
    rc, out, err = _run(["live", str(job), "--path", a, "--path", b, "--path", str(keep), "--no-progress",
                         "--selector", "round-robin"])
    assert rc == 0, err
    rows = [l for l in out.splitlines() if "7:" in l and "img" in l]
    assert len(rows) == 3
    names = [r.split()[0] for r in rows]
    assert len(set(names)) == 3 and names[0].endswith("one.img") and names[1].endswith("two.img")
    # round-robin at depth 1: 200 I/Os, 67/67/66; each path's p50/p99/p99.9 measured, none "-"
    for r in rows:
        assert " - " not in r + " " and r.split()[4] in ("66", "67"), r
    assert all(len(l) <= 100 for l in out.splitlines()), max(out.splitlines(), key=len)
    # the two files the run created are gone, the one that was there stays
    assert not os.path.exists(a) and not os.path.exists(b) and keep.exists()
    assert "removed the files this run created" in out
    rc, out, err = _run(["live", str(job), "--path", a, "--no-progress", "--keep-files"])
    assert rc == 0 and os.path.getsize(a) == 1 << 20, err


def test_terminal_output_fits_100_columns_unless_asked_for_wide_output():
    status = "mpatha: 0 2097152 multipath 2 0 0 0 1 1 A 0 2 2 8:16 A 0 0 1 8:32 F 1 0 1"
    for argv in (["kernels"], ["selectors"], ["reproduce", "--list"], ["faults", "--list"], ["status", status]):
        rc, out, err = _run(argv)
        assert rc == 0, (argv, err)
        assert max(len(l) for l in out.splitlines()) <= 100, (argv, max(out.splitlines(), key=len))
    rc, out, _ = _run(["kernels", "--markdown"])        # asked for: the docs' table, one line per behaviour
    assert rc == 0 and out.startswith("| behaviour |") and max(len(l) for l in out.splitlines()) > 100
    rc, out, _ = _run(["kernels"])
    assert "historical-service-time selector exists\n    5.8: yes  5.15: yes" in out


def test_sweep_tail_table_is_cut_into_tables_that_fit():
    from mpathlab.report.tails import tail_text
    rows = [{"selector": s, "iodepth": 64, "seed": seed, "lat_p50_ns": 1234567.0 + seed, "lat_p99_ns": 2345678.0 * seed,
             "lat_p999_ns": 3456789.0 * seed, "lat_p9999_ns": 4567890.0 * seed}
            for s in ("historical-service-time", "service-time") for seed in (1, 2, 3)]
    text = tail_text(rows)
    assert max(len(l) for l in text.splitlines()) <= 100
    assert text.count("point       selector") == 2          # p50/p99, then p99.9/p99.99
    wide = tail_text(rows, width=None)                      # the HTML page: one table
    assert wide.count("point       selector") == 1 and max(len(l) for l in wide.splitlines()) > 100
