"""Live mode on temporary files: real pread/pwrite through the target and selector."""
import json
import os

import pytest

from mpathlab.cli import main
from mpathlab.live import LiveError, LiveRun
from mpathlab.target import parse_status_info
from mpathlab.workload.fio import parse_fio


def jobs(text):
    return parse_fio(text).jobs


def test_round_robin_depth1_alternates_exactly(tmp_path):
    paths = [str(tmp_path / "a"), str(tmp_path / "b")]
    res = LiveRun(paths, "round-robin", jobs("[j]\nrw=randwrite\nbs=4k\nsize=1m\nnumber_ios=100\n")).run()
    assert [p["completed"] for p in res.paths] == [50, 50]
    assert res.completed == res.submitted == 100 and res.errored == 0
    for p in paths:
        assert os.path.getsize(p) == 1 << 20
        with open(p, "rb") as f:
            assert f.read().count(b"\0") < (1 << 20)      # something was written
    st = parse_status_info(res.status_info)
    assert [x["dev"] for x in st["groups"][0]["paths"]] == ["7:0", "7:1"]


def test_hst_moves_load_off_a_delayed_path(tmp_path):
    paths = [str(tmp_path / "fast"), str(tmp_path / "slow")]
    res = LiveRun(paths, "historical-service-time",
                  jobs("[j]\nrw=randwrite\nbs=4k\niodepth=4\nsize=4m\nnumber_ios=600\n"),
                  delays={paths[1]: 10_000_000}).run()   # 10 ms: far above a loaded machine's jitter
    share = {p["file"]: p["share"] for p in res.paths}
    assert share[paths[1]] < 0.25
    assert res.best[paths[0]] > res.best[paths[1]]      # Best from measured latency
    assert res.completed == 600


def test_reads_bio_mode_and_time_based(tmp_path):
    p = tmp_path / "data"
    p.write_bytes(os.urandom(1 << 20))
    res = LiveRun([str(p)], "queue-length", jobs("[j]\nrw=randread\nbs=8k\niodepth=2\nsize=1m\n"
                                                 "runtime=100ms\ntime_based\n"), queue_mode="bio").run()
    assert res.completed > 0 and res.jobs[0].read_lat.n == res.completed
    assert 90e6 <= res.runtime_ns < 2e9
    assert res.status_table.startswith("3 retain_attached_hw_handler queue_mode bio ")


def test_live_errors(tmp_path):
    with pytest.raises(LiveError, match="does not exist"):
        LiveRun([str(tmp_path / "nope")], "round-robin", jobs("[j]\nrw=read\nsize=4k\n"))
    with pytest.raises(LiveError, match="has 10 bytes"):
        (tmp_path / "small").write_bytes(b"x" * 10)
        LiveRun([str(tmp_path / "small")], "round-robin", jobs("[j]\nrw=read\nsize=4k\n"))
    with pytest.raises(LiveError, match="not a --path"):
        LiveRun([str(tmp_path / "a")], "round-robin", jobs("[j]\nrw=write\nsize=4k\n"), delays={"zz": 1})
    with pytest.raises(LiveError, match="unknown path selector"):
        LiveRun([str(tmp_path / "a")], "bogus", jobs("[j]\nrw=write\nsize=4k\n"))


def test_cli_live_json(tmp_path, capsys):
    job = tmp_path / "j.fio"
    job.write_text("[j]\nrw=randwrite\nbs=4k\niodepth=2\nsize=256k\nnumber_ios=64\n")
    rc = main(["live", str(job), "--path", str(tmp_path / "a"), "--path", str(tmp_path / "b"),
               "--delay", "%s=1ms" % (tmp_path / "b"), "--selector", "service-time", "--json", "--no-progress"])
    assert rc == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["jobs"][0]["write"]["total_ios"] == 64
    assert doc["mpath"]["selector"] == "service-time"
    assert main(["live", str(job), "--path", "/dev/definitely-not-here"]) == 3
    assert "no such device" in capsys.readouterr().err
