"""-q, the default and -v show a table's load warnings as the kernel logs them
for one load: once per path that causes one (the 6.1 capture of
``round-robin 0 2 1 252:0 1000 252:1 1000`` has the line twice), although a
run builds the table more than once."""
import pytest

from mpathlab import cli

RR = "0 8 multipath 0 0 1 1 round-robin 0 2 1 sdb 1000 sdc 1000"
WARN = "device-mapper: multipath round-robin: repeat_count > 1 is deprecated, using 1 instead"


@pytest.mark.parametrize("flags,expected", [([], [WARN] * 2), (["-v"], [WARN] * 2), (["-q"], [])])
def test_load_warnings_once_per_path_at_every_level(tmp_path, capsys, flags, expected):
    job = tmp_path / "j.fio"
    job.write_text("[j]\nrw=read\nbs=4k\nnumber_ios=10\n")
    assert cli.main(["run", *flags, "--table", RR, str(job), "--no-progress"]) == 0
    assert capsys.readouterr().err.splitlines() == expected


def test_verbose_still_shows_runtime_lines_each_time(tmp_path, capsys):
    # a failing path is a runtime line (-v), logged at each failure, not deduplicated like load lines
    topo = tmp_path / "t.toml"
    topo.write_text('[multipath]\ntable = "0 2097152 multipath 0 0 1 1 round-robin 0 2 1 sdb 1 sdc 1"\n'
                    '[paths.sdb]\ndevt = "8:16"\nservice = "100us"\n'
                    'faults = [{at = "1ms", action = "fail"}, {at = "2ms", action = "reinstate"},'
                    ' {at = "3ms", action = "fail"}, {at = "4ms", action = "reinstate"}]\n'
                    '[paths.sdc]\ndevt = "8:32"\nservice = "100us"\n')
    job = tmp_path / "j.fio"
    job.write_text("[j]\nrw=read\nbs=4k\nruntime=6ms\ntime_based\n")
    assert cli.main(["run", "-v", str(topo), str(job), "--no-progress"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert sum("Failing path 8:16." in line for line in err) == 2, err
    assert cli.main(["run", str(topo), str(job), "--no-progress"]) == 0
    assert not any("Failing path" in line for line in capsys.readouterr().err.splitlines())
