"""`mpathlab hosts` reads its topology as every topology file is read: a
non-UTF-8 or binary file was an "internal error" (exit 70), and no error
named its line (issue 10, "Bad input")."""
import os

import pytest

from mpathlab.cli import main

SC = os.path.join(os.path.dirname(__file__), "..", "src", "mpathlab", "scenarios")
JOB = os.path.join(SC, "hosts-8x4.fio")
GOOD = ('[hosts]\ncount = 2\nwindow = "1ms"\n\n[multipath]\n'
        'table = "0 1048576 multipath 0 0 1 1 service-time 0 2 1 pA 1 pB 1"\n\n'
        '[paths.pA]\nservice = "1ms"\n\n[paths.pB]\nservice = "1ms"\n')


@pytest.mark.parametrize("data,needle", [
    (GOOD.encode().replace(b'count = 2', b'description = "caf\xe9"\ncount = 2'),
     "h.toml:2: not UTF-8 text (byte 0xe9"),
    (b"\x7fELF\x02\x01\x01\x00" * 8, "h.toml:1: a NUL byte: a topology must be a text file"),
    (GOOD.replace("count = 2", "count = = 2").encode(), "h.toml:2: invalid TOML in the topology file"),
    (GOOD.replace("count = 2", "count = 0").encode(), "h.toml:2: [hosts] count must be a whole number"),
    (GOOD.replace('window = "1ms"', "window = 5").encode(), "h.toml:3: [hosts] window: 5 has no unit"),
    (GOOD.replace('window = "1ms"', 'bogus = 1').encode(), "h.toml:3: [hosts] has unknown key(s) bogus"),
    (GOOD.replace('[paths.pB]\nservice = "1ms"', '[paths.pB]\nservice = "0ms"').encode(),
     "h.toml:12: paths.pB.service: the mean service time must be above 0"),
    (GOOD.replace('[paths.pB]\nservice = "1ms"', '[paths.pB]\nservice = "1ms"\nparallelism = 0').encode(),
     "h.toml:13: paths.pB.parallelism must be a whole number"),
])
def test_hosts_topology_errors_name_file_and_line(tmp_path, capsys, data, needle):
    topo = tmp_path / "h.toml"
    topo.write_bytes(data)
    assert main(["hosts", str(topo), JOB]) == 3
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1 and err.count("h.toml") == 1, err


def test_the_good_file_runs(tmp_path, capsys):
    topo = tmp_path / "h.toml"
    topo.write_text(GOOD)
    job = tmp_path / "j.fio"
    job.write_text("[j]\nrw=randread\nbs=4k\nnumber_ios=200\niodepth=4\n")
    assert main(["hosts", str(topo), str(job), "--selectors", "service-time"]) == 0
