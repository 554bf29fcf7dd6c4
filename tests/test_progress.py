"""Long runs show progress on stderr as the sweep does: `faults` and `hosts` take --progress/--no-progress,
show it on a terminal only, and never with --quiet; their text stays within 100 columns."""
import pytest

from mpathlab.cli import main
from mpathlab.sim import fast

SMALL = "[j]\nrw=randread\nbs=4k\nioengine=libaio\niodepth=4\nnumber_ios=300\n"
HOSTS = "src/mpathlab/scenarios/hosts-8x4.toml"


@pytest.fixture(autouse=True)
def no_fallback_notes(monkeypatch):
    monkeypatch.setattr(fast, "_noted", {"several hosts (mpathlab.multihost) need the Python engine"})


def test_faults_progress_is_shown_when_asked_and_counts_the_runs(capsys):
    assert main(["faults", "slow-path-20x", "--progress"]) == 0
    out, err = capsys.readouterr()
    assert "\rfaults 1/4" in err    # one run per selector (later ones may fall inside the bar's 0.1 s)
    assert err.endswith("\r" + " " * 60 + "\r")        # the bar is cleared before the results
    assert "\r" not in out


@pytest.mark.parametrize("argv", [[], ["--no-progress"], ["--progress", "--quiet"]])
def test_faults_progress_is_off_off_a_terminal_with_no_progress_or_quiet(capsys, argv):
    assert main(["faults", "slow-path-20x", "--selector", "queue-length"] + argv) == 0
    assert "faults 1/1" not in capsys.readouterr().err


def test_hosts_progress_and_columns(capsys, tmp_path):
    job = tmp_path / "small.fio"
    job.write_text(SMALL)
    argv = ["hosts", HOSTS, str(job), "--selectors", "historical-service-time;queue-length", "--seeds", "1,2"]
    assert main(argv + ["--progress"]) == 0
    out, err = capsys.readouterr()
    assert "\rhosts 1/4" in err     # 2 selectors x 2 seeds
    assert err.endswith("\r" + " " * 60 + "\r")
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= 100, max(lines, key=len)
    assert any(line.startswith("      (seed 1)") for line in lines)     # a long line continues, indented
    assert main(argv + ["--quiet", "--progress"]) == 0
    assert "hosts 1/4" not in capsys.readouterr().err
