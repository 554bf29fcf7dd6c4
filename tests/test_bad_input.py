"""Every input problem: one line on stderr naming the file, the line and the
option, exit 3 (5 for a missing optional package); never a traceback, an
"internal error", a hang, or a silently ignored option."""
import builtins
import os
import sys

import pytest

from mpathlab import cli

ROOT = os.path.join(os.path.dirname(__file__), "..")
EXAMPLES = os.path.join(ROOT, "examples")
TOPO = os.path.join(EXAMPLES, "asymmetric.toml")
TABLE1 = "0 8 multipath 0 0 1 1 round-robin 0 1 1 sdb 1"


def _err(capsys, argv, code=3):
    rc = cli.main(argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == code, (argv, err)
    assert len(err) == 1 and err[0].startswith("mpathlab: error: "), err
    assert "internal error" not in err[0] and "Traceback" not in err[0]
    return err[0][len("mpathlab: error: "):]


@pytest.fixture
def job(tmp_path):
    p = tmp_path / "j.fio"
    p.write_text("[j]\nrw=randwrite\nbs=4k\nnumber_ios=50\n")
    return str(p)


def _topo(tmp_path, text, name="t.toml"):
    p = tmp_path / name
    p.write_bytes(text if isinstance(text, bytes) else text.encode())
    return str(p)


GOOD = '[multipath]\ntable = "0 8 multipath 0 0 1 1 round-robin 0 2 1 sdb 1 sdc 1"\n' \
       '[paths.sdb]\ndevt = "8:16"\nservice = "100us"\n[paths.sdc]\ndevt = "8:32"\nservice = "100us"\n'


@pytest.mark.parametrize("data,needle", [
    (b"\xff\xfe[multipath]\n", "t.toml:1: not UTF-8 text (byte 0xff at offset 0)"),
    (b'[multipath]\ntable = "x"\n\x00\x01\x02', "t.toml:3: a NUL byte"),
    ('[multipath]\ntable = "x"\n# caf\xe9\n'.encode("latin-1"), "t.toml:3: not UTF-8 text (byte 0xe9"),
])
def test_non_utf8_or_binary_topology(tmp_path, job, capsys, data, needle):
    assert needle in _err(capsys, ["run", _topo(tmp_path, data), job])


def test_toml_errors_name_file_and_line(tmp_path, job, capsys):
    msg = _err(capsys, ["run", _topo(tmp_path, GOOD.replace('service = "100us"\n[paths.sdc]',
                                                                 'service = \n[paths.sdc]')), job])
    assert msg.startswith(str(tmp_path / "t.toml") + ":5: invalid TOML in the topology file: Invalid value (column 11)")
    # a key given twice is a TOML error too, on its line
    msg = _err(capsys, ["run", _topo(tmp_path, GOOD + '[paths.sdb]\nservice = "1us"\n'), job])
    assert "t.toml:9: invalid TOML in the topology file: Cannot declare" in msg


@pytest.mark.parametrize("edit,needle", [
    (('service = "100us"\n[paths.sdc]', 'service = "100us"\nparallelism = 0\n[paths.sdc]'),
     "t.toml:6: paths.sdb.parallelism must be a whole number >= 1 and <= 65536, got 0"),
    (('service = "100us"\n[paths.sdc]', 'service = "100us"\nparallelism = 18446744073709551616\n[paths.sdc]'),
     "t.toml:6: paths.sdb.parallelism must be a whole number >= 1 and <= 65536, got 18446744073709551616"),
    (('service = "100us"\n[paths.sdc]', 'service = 1e400\n[paths.sdc]'),
     "t.toml:5: paths.sdb.service: inf is not a duration below 2^63 ns"),
    (('[paths.sdb]', 'hz = 17\n[paths.sdb]'), "t.toml:3: hz must be one of"),
    (('[paths.sdb]', 'bogus = 1\n[paths.sdb]'), "t.toml:3: [multipath] has unknown key(s) bogus"),
    (('devt = "8:32"', 'devt = "8:32"\nspeed = 2'), "t.toml:8: paths.sdc has unknown key(s) speed"),
])
def test_topology_errors_name_the_option_and_its_line(tmp_path, job, capsys, edit, needle):
    assert needle in _err(capsys, ["run", _topo(tmp_path, GOOD.replace(*edit)), job])


def test_zero_service_time_is_refused_not_run_forever(tmp_path, job, capsys):
    msg = _err(capsys, ["run", _topo(tmp_path, GOOD.replace('service = "100us"', 'service = "0us"', 1)), job])
    assert msg.endswith("t.toml:5: paths.sdb.service: the mean service time must be above 0 and at most 1h, got 0ns")
    dist = GOOD.replace('service = "100us"', 'service = { dist = "exponential", mean = "0ns" }', 1)
    assert "paths.sdb.service: the mean service time must be above 0" in _err(capsys, ["run", _topo(tmp_path, dist), job])
    assert _err(capsys, ["run", "--table", TABLE1, job, "--service", "0us"]).startswith("--service: the mean")


def test_a_path_model_not_in_the_table_is_refused_not_counted_in_best(tmp_path, job, capsys):
    extra = GOOD + '[paths.sdd]\ndevt = "8:48"\nservice = "100us"\n'
    msg = _err(capsys, ["run", _topo(tmp_path, extra), job])
    assert msg.endswith("t.toml:9: paths.sdd (devt 8:48) is not a path of the table; remove it or add it to the table")


def test_sweep_set_into_a_path_that_does_not_exist(job, capsys):
    msg = _err(capsys, ["sweep", TOPO, job, "--set", "paths.nosuch.service.mean=1us,2us", "--no-progress"])
    assert msg == "--set paths.nosuch.service.mean: paths has no table 'nosuch' (its tables: sdb, sdc, sdd)"


@pytest.mark.parametrize("workers", ["0", "-3"])
def test_sweep_workers_zero_or_negative_is_refused_not_a_hang(job, capsys, workers):
    assert _err(capsys, ["sweep", TOPO, job, "--workers", workers]) == "--workers must be at least 1, got %s" % workers


def test_faults_with_an_unknown_or_empty_selector(capsys):
    assert "--selector: unknown path selector 'unknown'" in _err(capsys, ["faults", "slow-path-20x", "--selector", "unknown"])
    assert "--selector: empty selector name" in _err(capsys, ["faults", "slow-path-20x", "--selector", ""])


def test_empty_selector_is_not_ignored(job, capsys, tmp_path):
    assert "--selector: empty selector name" in _err(capsys, ["run", TOPO, job, "--selector", ""])
    assert "--selector: empty selector name" in _err(capsys, ["live", job, "--path", str(tmp_path / "a"),
                                                             "--selector", ""])
    assert "--selectors: empty selector name" in _err(capsys, ["report", TOPO, job, "--selectors", ":1"])


@pytest.mark.parametrize("opt", [["--service", "1ms"], ["--parallelism", "4"], ["--delay", "1ms"],
                                 ["--model", "sdb,service=1ms"]])
def test_table_only_options_without_table(job, capsys, opt):
    assert _err(capsys, ["run", TOPO, job] + opt) == \
        "%s only applies with --table (a topology file gives each path its model)" % opt[0]


def test_model_with_nothing_to_set(job, capsys):
    assert _err(capsys, ["run", "--table", TABLE1, job, "--model", "sdb"]) == \
        "--model sdb: nothing to set; use DEV,service=...,parallelism=N,delay=..."
    assert "--parallelism: parallelism must be from 1 to 65536, got 0" in _err(capsys, ["run", "--table", TABLE1, job,
                                                                           "--parallelism", "0"])


def test_run_with_four_files_says_what_it_takes(capsys):
    msg = _err(capsys, ["run", "a.toml", "b.fio", "c.toml", "d.fio"])
    assert msg == ("run takes one topology file and one job file (or --table LINE and a job file), got 4 files: "
                   "a.toml b.fio c.toml d.fio")


def test_two_line_table_gets_a_clear_message(job, capsys, tmp_path):
    two = "0 8 multipath 0 0 1 1 round-robin 0 1 1 8:16 1\n0 8 multipath 0 0 1 1 round-robin 0 1 1 8:32 1"
    bare = "0 0 1 1 round-robin 0 1 1 8:16 1\n0 0 1 1 round-robin 0 1 1 8:32 1"
    for argv in (["table", two], ["table", bare], ["table", "--status", "info", bare]):
        msg = _err(capsys, argv)
        assert "one table line expected, got 2 lines" in msg and "selector" not in msg
    msg = _err(capsys, ["run", "--table", two, job])
    assert "one multipath table line expected (got 2 lines" in msg and "selector" not in msg
    topo = GOOD.replace('table = "0 8 multipath 0 0 1 1 round-robin 0 2 1 sdb 1 sdc 1"',
                        'table = """0 8 multipath 0 0 1 1 round-robin 0 1 1 sdb 1\n0 8 multipath 0 0 1 1 '
                        'round-robin 0 1 1 sdc 1"""')
    msg = _err(capsys, ["run", _topo(tmp_path, topo), job])
    assert "t.toml:2: table rejected: one multipath table line expected" in msg


def test_live_same_path_twice(tmp_path, job, capsys):
    a = str(tmp_path / "a")
    assert "--path %s is given twice" % a in _err(capsys, ["live", job, "--path", a, "--path", a])
    link = tmp_path / "b"
    open(a, "w").close()
    os.symlink(a, link)
    msg = _err(capsys, ["live", job, "--path", a, "--path", str(link)])
    assert "are the same file" in msg
    assert os.path.getsize(a) == 0


def test_live_without_size_is_refused_like_fio(tmp_path, capsys):
    nosize = tmp_path / "n.fio"
    nosize.write_text("[j]\nrw=randwrite\nbs=4k\nnumber_ios=10\n")
    a, b = tmp_path / "a", tmp_path / "b"
    msg = _err(capsys, ["live", str(nosize), "--path", str(a), "--path", str(b)])
    assert msg == "%s: the job has no size= and the file does not exist; fio refuses such a job too: give size=" % a
    assert not a.exists() and not b.exists()          # nothing created
    # an existing file gives its size, as in fio
    a.write_bytes(b"\0" * 65536)
    b.write_bytes(b"\0" * 65536)
    assert cli.main(["live", str(nosize), "--path", str(a), "--path", str(b), "--json"]) == 0
    capsys.readouterr()
    assert a.stat().st_size == 65536


CSV_HEAD = "selector,iodepth,seed,mean_deviation,completed,lat_p99_ns\n"


@pytest.mark.parametrize("body,needle", [
    ("selector,iodepth\nst,1\n", "s.csv:1: missing column(s) mean_deviation, lat_p99_ns"),
    ("", "s.csv: empty"),
    (CSV_HEAD, "s.csv: no runs in the table"),
    (CSV_HEAD + "service-time,abc,1,0.1,10,5000\n", "s.csv:2: column iodepth: expected a whole number from 1, got 'abc'"),
    (CSV_HEAD + "service-time,0,1,0.1,10,5000\n", "s.csv:2: column iodepth"),
    (CSV_HEAD + "service-time,8,1,nan,10,5000\n", "s.csv:2: column mean_deviation"),
    (CSV_HEAD + "service-time,8,1,0.1,10\n", "s.csv:2: 5 fields, the header has 6"),
    ("selector,selector,iodepth,mean_deviation,lat_p99_ns\n", "s.csv:1: column selector appears twice"),
    (b"\x89PNG\r\n\x1a\n\x00\x00", "s.csv:3: a NUL byte"),
    (CSV_HEAD.encode() + b"st\xe9,1,1,0.1,10,5\n", "s.csv:2: not UTF-8 text"),
])
def test_report_sweep_on_a_bad_table(tmp_path, capsys, body, needle):
    p = tmp_path / "s.csv"
    p.write_bytes(body if isinstance(body, bytes) else body.encode())
    msg = _err(capsys, ["report", "--sweep", str(p), "-o", str(tmp_path / "r.html")])
    assert needle in msg
    assert not (tmp_path / "r.html").exists()


def _hide(monkeypatch, *modules):
    real = builtins.__import__

    def fake(name, *a, **kw):
        if name.split(".")[0] in modules:
            raise ImportError("No module named %r" % name)
        return real(name, *a, **kw)
    for m in list(sys.modules):
        if m.split(".")[0] in modules:
            monkeypatch.delitem(sys.modules, m)
    monkeypatch.setattr(builtins, "__import__", fake)


def test_missing_optional_dependency_has_its_own_exit_code(tmp_path, job, capsys, monkeypatch):
    p = tmp_path / "s.parquet"
    p.write_bytes(b"PAR1")
    _hide(monkeypatch, "pyarrow", "dask", "distributed", "matplotlib")
    msg = _err(capsys, ["report", "--sweep", str(p)], code=cli.EXIT_MISSING_DEPENDENCY)
    assert msg == "reading Parquet needs pyarrow, which is not installed: pip install pyarrow; or use the .csv table"
    msg = _err(capsys, ["sweep", TOPO, job, "--out", str(tmp_path / "o.csv")], code=5)
    assert msg.startswith("a sweep needs dask[distributed], which is not installed")
    msg = _err(capsys, ["report", TOPO, job, "--selectors", "round-robin", "-o", str(tmp_path / "r.html")], code=5)
    assert msg.startswith("a report needs matplotlib, which is not installed")
    assert cli.EXIT_MISSING_DEPENDENCY == 5


@pytest.mark.parametrize("content,needle", [
    (b"\xff\n", "lat.txt:1: not UTF-8 text"),
    (b"", "lat.txt: no latencies in the file"),
    (b"100us\n-5\n", "lat.txt:2: cannot read '-5' as a duration"),
    (b"0\n0\n", "the mean service time must be above 0"),
])
def test_empirical_latency_files(tmp_path, job, capsys, content, needle):
    lat = tmp_path / "lat.txt"
    lat.write_bytes(content)
    assert needle in _err(capsys, ["run", "--table", TABLE1, job, "--service", "empirical:%s" % lat])
    topo = GOOD.replace('service = "100us"', 'service = { dist = "empirical", file = "lat.txt" }', 1)
    assert needle in _err(capsys, ["run", _topo(tmp_path, topo), job])


def test_live_job_without_size_or_runtime_covers_each_file_once(tmp_path):
    # what fio does with a job that names neither: one pass over the file (no endless run)
    from mpathlab.live import LiveError, LiveRun
    from mpathlab.workload.fio import parse_fio
    a, b = tmp_path / "a", tmp_path / "b"
    a.write_bytes(b"\0" * 65536)
    b.write_bytes(b"\0" * 32768)
    spec = parse_fio("[j]\nrw=randwrite\nbs=4k\nnumber_ios=1\n").jobs[0]
    spec.number_ios = None
    assert spec.total_ios is None and not spec.runtime_ns
    res = LiveRun([str(a), str(b)], "round-robin", [spec]).run()
    assert res.completed == 32768 // 4096             # the smaller file, once
    spec.time_based = True
    with pytest.raises(LiveError, match="time_based without runtime= would run forever"):
        LiveRun([str(a), str(b)], "round-robin", [spec]).run()


def test_nr_cpus_fewer_than_the_clones_is_fine_but_not_fewer_than_a_named_cpu(tmp_path, capsys):
    # clones share CPUs (clone n on CPU n mod nr_cpus): 3 clones on a 1-CPU host run; a cpus_allowed CPU that
    # the host does not have is the topology's problem, named (it was an "internal error", exit 70)
    topo = _topo(tmp_path, GOOD.replace("[paths.sdb]", "nr_cpus = 1\n[paths.sdb]"))
    ok = tmp_path / "ok.fio"
    ok.write_text("[j]\nrw=read\nnumjobs=3\n")
    assert cli.main(["run", topo, str(ok), "--no-progress"]) == 0
    assert "I/O: 3 completed" in capsys.readouterr().out      # the 4 KiB table: one I/O per clone
    bad = tmp_path / "bad.fio"
    bad.write_text("[j]\nrw=read\nnumber_ios=30\ncpus_allowed=2\n")
    assert _err(capsys, ["run", topo, str(bad), "--no-progress"]) == \
        "t.toml: [multipath] nr_cpus = 1, but job 'j' of bad.fio runs on CPU 2 (cpus_allowed)"
