import json
import os

import pytest

from mpathlab.cli import main
from mpathlab.scenarios import HERE

TOPO = os.path.join(HERE, "hst-2020.toml")


def write_job(tmp_path, text):
    p = tmp_path / "job.fio"
    p.write_text(text)
    return str(p)


def test_run_table_output(tmp_path, capsys):
    job = write_job(tmp_path, "[j]\nrw=randread\nbs=4k\nioengine=libaio\niodepth=8\nnumber_ios=2000\n")
    assert main(["run", TOPO, job, "--selector", "queue-length", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "selector: queue-length" in out and "sdd" in out and "read: IOPS=" in out
    assert "dmsetup status: 2 0 0 0 1 1 A 0 4 1 8:0 A 0 0 " in out


def test_run_json(tmp_path, capsys):
    job = write_job(tmp_path, "[j]\nrw=randwrite\nbs=4k\nioengine=libaio\niodepth=8\nnumber_ios=2000\n")
    assert main(["run", TOPO, job, "--json", "--selector", "historical-service-time:972,2"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["jobs"][0]["write"]["total_ios"] == 2000
    assert doc["mpath"]["dmsetup_table"].startswith("0 0 1 1 historical-service-time 2 972 2 4 1 8:0 0 ")
    assert sum(doc["mpath"]["shares"].values()) == pytest.approx(1.0)


def test_reproduce_list_and_json(capsys):
    assert main(["reproduce", "--list"]) == 0
    out = capsys.readouterr().out
    assert "hst-2020-depth1" in out and "hst-ktime-bio-10disk" in out
    assert main(["reproduce", "hst-2020-depth1", "--json", "--no-progress"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["scenario"] == "hst-2020-depth1"
    assert set(doc["columns"]) == {"ST", "HST", "Best"}
    assert set(doc["columns"]["ST"]) == {"sda", "sdb", "sdc", "sdd"}


@pytest.mark.parametrize("argv,msg", [
    (["run", "/nonexistent.toml", "/nonexistent.fio"], "cannot read topology"),
    (["run", TOPO, "/nonexistent.fio"], "cannot read job file"),
    (["run", TOPO, "JOB", "--selector", "nope"], "unknown path selector"),
    (["reproduce", "no-such-scenario"], "unknown scenario"),
    (["table", "0", "0", "1", "1", "round-robin", "0", "1", "0", "8:0", "extra"], "not enough priority group arguments"),
])
def test_errors_are_one_line_without_traceback(tmp_path, capsys, argv, msg):
    argv = [a if a != "JOB" else write_job(tmp_path, "[j]\nsize=4k\n") for a in argv]
    rc = main(argv)
    err = capsys.readouterr().err
    assert rc != 0
    assert err.startswith("mpathlab: error: ") and msg in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_bad_fio_option_reported(tmp_path, capsys):
    job = write_job(tmp_path, "[j]\nsize=4k\nwibble=3\n")
    assert main(["run", TOPO, job]) == 3
    assert "unknown fio option 'wibble'" in capsys.readouterr().err


def test_table_command(capsys):
    assert main(["table", "0 100 multipath 0 0 1 1 queue-length 0 2 0 8:16 8:32"]) == 0
    assert capsys.readouterr().out.strip() == "0 100 multipath 0 0 1 1 queue-length 0 2 1 8:16 1 8:32 1"
    assert main(["table", "--status", "info", "0 0 1 1 queue-length 0 1 0 8:16"]) == 0
    assert capsys.readouterr().out == "2 1 0 0 1 1 E 0 1 1 8:16 A 0 0 \n"


def test_no_command_prints_help(capsys):
    assert main([]) == 2
    assert "reproduce" in capsys.readouterr().out


def test_run_straight_from_a_dmsetup_table(tmp_path, capsys):
    job = write_job(tmp_path, "[j]\nrw=randwrite\nbs=4k\nioengine=libaio\niodepth=16\nnumber_ios=4000\n")
    line = "0 2097152 multipath 0 0 1 1 service-time 0 3 2 sdb 1 1 8:32 1 1 /dev/sdq 1 1"
    assert main(["run", "--table", line, job, "--model", "8:32,service=exponential:400us,parallelism=2",
                 "--json", "--no-progress"]) == 0
    doc = json.loads(capsys.readouterr().out)
    paths = {p["name"]: p for p in doc["mpath"]["paths"]}
    assert paths["sdb"]["dev"] == "8:16" and paths["/dev/sdq"]["dev"] == "65:0"
    assert paths["8:32"]["parallelism"] == 2 and paths["8:32"]["mean_service_ns"] == 400_000
    assert doc["mpath"]["best"]["8:32"] == pytest.approx(2 / 400 / (2 / 400 + 2 / 100))
    assert main(["run", "--table", line, job, "--model", "sdz,service=1ms"]) == 3
    assert "not a path of the table" in capsys.readouterr().err


@pytest.mark.parametrize("topo", ["asymmetric.toml", "failover.toml"])
def test_examples_run(capsys, topo):
    ex = os.path.join(os.path.dirname(__file__), "..", "examples")
    assert main(["run", os.path.join(ex, topo), os.path.join(ex, "randwrite.fio"), "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "errored" in out and "dmsetup status: 2 " in out
    if topo == "failover.toml":
        assert "switch_group 2 (ok)" in out


def test_progress_bar_draws_and_clears():
    import io
    from mpathlab.cli import Progress
    buf = io.StringIO()
    bar = Progress(True, stream=buf)
    bar("hst", 0.5)
    bar("hst", 1.0)
    out = buf.getvalue()
    assert "[###############...............]  50%" in out and "100%" in out
    bar.done()
    assert buf.getvalue().endswith("\r")
    quiet = io.StringIO()
    Progress(False, stream=quiet)("x", 0.5)
    assert quiet.getvalue() == ""


def test_target_error_log_line():
    from mpathlab.target import TargetError, construct
    with pytest.raises(TargetError) as ei:
        construct("1 bogus 0 0 0")
    assert ei.value.dmesg("mpatha") == ("device-mapper: table: mpatha: multipath: "
                                        "Unrecognised multipath feature request (-EINVAL)")


def test_a_selector_written_in_python_runs_in_tables_and_the_simulator():
    import importlib.util
    from mpathlab import selectors
    from mpathlab.sim import Exponential, PathModel, simulate
    from mpathlab.workload.fio import parse_fio
    path = os.path.join(os.path.dirname(__file__), "..", "examples", "my_selector.py")
    spec = importlib.util.spec_from_file_location("my_selector", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    selectors.register(mod.ShortestQueueTail)
    try:
        paths = [PathModel(n, (8, 16 * i), Exponential(100_000 * (1 + 3 * i)), parallelism=2)
                 for i, n in enumerate(["sda", "sdb"])]
        r = simulate("0 2097152 multipath 0 0 1 1 shortest-queue-tail 0 2 1 sda 1 sdb 1", paths,
                     parse_fio("[j]\nbs=4k\nioengine=libaio\niodepth=8\nnumber_ios=3000\n").jobs)
        r.check_accounting()
        from mpathlab.sim import fast
        assert r.engine == ("compiled" if fast.available() else "python")   # called from the compiled loop
        assert r.shares["sda"] > r.shares["sdb"] > 0
        assert r.status_table == "0 0 1 1 shortest-queue-tail 0 2 1 8:0 1 8:16 1 "
    finally:
        selectors.unregister("shortest-queue-tail")


def test_json_plus_bins_add_up(tmp_path, capsys):
    job = write_job(tmp_path, "[j]\nrw=randwrite\nbs=4k\nioengine=libaio\niodepth=8\nnumber_ios=2000\n")
    assert main(["run", TOPO, job, "--json-plus", "--no-progress"]) == 0
    w = json.loads(capsys.readouterr().out)["jobs"][0]["write"]
    bins = w["clat_ns"]["bins"]
    assert sum(bins.values()) == 2000
    assert min(int(k) for k in bins) <= w["clat_ns"]["min"] * 1.02


def test_fault_and_scenario_views_fit_100_columns(capsys):
    """The terminal views (issue 15): fault-study rows and scenario headers wrap within 100 columns."""
    assert main(["faults", "slow-path-20x", "--selector", "queue-length"]) == 0
    assert main(["reproduce", "hst-ktime-bio-10disk"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines and max(len(l) for l in lines) <= 100, max(lines, key=len)
    # the reaction figures moved to their own line, under the counters
    assert any(l.strip().startswith("sdb share 0.246 -> 0.017") for l in lines)


@pytest.mark.parametrize("argv", [
    ["validate", "--filter", "H13 queue-length bio", "--runtime", "0.5"],   # the validations' own entry
    ["table", "0", "0", "1", "1", "round-robin", "0", "1", "1", "8:0", "1"],
])
def test_a_reader_that_stops_early_gets_no_traceback(argv):
    """`mpathlab ... | head`: the reader closes the pipe before the output is written; the command
    ends quietly (exit 0), as other Unix tools do, instead of printing a BrokenPipeError."""
    import subprocess
    import sys
    launcher = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "mpathlab")
    p = subprocess.Popen([sys.executable, launcher] + argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdout.close()
    err = p.stderr.read().decode()
    assert p.wait() == 0, err
    assert "Traceback" not in err and "Broken" not in err, err
