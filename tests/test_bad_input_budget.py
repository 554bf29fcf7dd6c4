"""The run budget: a run whose plan walks more simulated time than MPATHLAB_MAX_SIM_SECONDS is refused
before it starts (exit 3, naming what sets the span); values that overflow the simulated clock are
refused in the topology; a large run the compiled core cannot take is announced with its reason."""
import pytest

from badinput_util import ASYM, JOB, TOPO, one_error, write

QINP = ('[multipath]\ntable = "0 8 multipath 1 queue_if_no_path 0 1 1 round-robin 0 1 1 sdb 1"\n%s'
        '[paths.sdb]\ndevt = "8:16"\nservice = "100us"\nfaults = [{ at = "50us", action = "fail"%s }]\n')
SMALL = "[j]\nrw=randread\nbs=512\nnumber_ios=20\n"


def test_paths_back_after_100000_days_while_io_queues(tmp_path, capsys):
    topo = write(tmp_path, "t.toml", QINP % ("", ', reinstate_after = "2400000h"'))
    msg = one_error(capsys, ["run", topo, write(tmp_path, "j.fio", SMALL)])
    assert msg.startswith("t.toml: paths.sdb.faults[0].at + reinstate_after = 1e+05 days: the run would walk "
                                 "1e+05 days of simulated time, beyond the run budget of 86400 s")
    assert "MPATHLAB_MAX_SIM_SECONDS" in msg


def test_queue_timeout_of_2_63_is_refused_and_the_largest_is_budgeted(tmp_path, capsys):
    topo = write(tmp_path, "t.toml", QINP % ("queue_if_no_path_timeout_secs = 9223372036854775807\n", ""))
    msg = one_error(capsys, ["run", topo, write(tmp_path, "j.fio", SMALL)])
    assert msg.startswith(topo + ":3: [multipath] queue_if_no_path_timeout_secs must be a whole number of seconds "
                                 "from 0 to 9223372036")
    topo = write(tmp_path, "t.toml", QINP % ("queue_if_no_path_timeout_secs = 9223372036\n", ""))
    assert "queue_if_no_path_timeout_secs = 9223372036 (I/O queues that long once every path has failed): " \
           "the run would walk" in one_error(capsys, ["run", topo, write(tmp_path, "j.fio", SMALL)])


def test_a_queue_timeout_within_the_budget_runs_and_errors_the_io(tmp_path, capsys):
    from mpathlab import cli
    topo = write(tmp_path, "t.toml", QINP % ("queue_if_no_path_timeout_secs = 2\n", ""))
    assert cli.main(["run", topo, write(tmp_path, "j.fio", SMALL)]) == 0
    out = capsys.readouterr().out
    assert "0 pending" in out and "errored" in out


def test_a_365_day_time_based_job(tmp_path, capsys):
    job = write(tmp_path, "j.fio", "[j]\nrw=randread\nbs=4k\ntime_based\nruntime=365d\n")
    msg = one_error(capsys, ["run", ASYM, job])
    assert msg.startswith("j.fio: job 'j': runtime (with startdelay) 365 days: the run would walk 365 days")


def test_thinktime_of_1000_days(tmp_path, capsys):
    job = write(tmp_path, "j.fio", "[j]\nrw=randread\nbs=4k\nnumber_ios=3\nthinktime=1000d\n")
    msg = one_error(capsys, ["run", ASYM, job])
    assert msg.startswith("j.fio: job 'j': thinktime 1000 days between blocks of 1 I/O(s), 3 I/Os: "
                          "the run would walk 3000 days")


def test_the_budget_can_be_raised_and_is_checked(tmp_path, capsys, monkeypatch):
    job = write(tmp_path, "j.fio", "[j]\nrw=randread\nbs=4k\nnumber_ios=3\nthinktime=2d\n")
    one_error(capsys, ["run", ASYM, job])
    monkeypatch.setenv("MPATHLAB_MAX_SIM_SECONDS", "\u0663")
    assert "MPATHLAB_MAX_SIM_SECONDS='\u0663': a whole number" in one_error(capsys, ["run", ASYM, job])
    monkeypatch.setenv("MPATHLAB_MAX_SIM_SECONDS", str(7 * 86400))
    from mpathlab import cli
    assert cli.main(["run", ASYM, job]) == 0
    assert "I/O: 3 completed" in capsys.readouterr().out


@pytest.mark.parametrize("factor", ["nan", "inf", "1e308", "-1", "0"])
def test_slow_path_factor_must_be_finite_and_positive(tmp_path, capsys, factor):
    topo = write(tmp_path, "t.toml", TOPO.replace('devt = "8:32"', 'devt = "8:32"\nfaults = [{ at = "1ms", '
                                                                  'action = "slow", factor = %s }]' % factor))
    msg = one_error(capsys, ["run", topo, write(tmp_path, "j.fio", JOB)])
    assert msg.startswith(topo + ":8: paths.sdc.faults[0].factor must be a finite number above 0 and at most 1e+06")


def test_ten_million_ios_on_the_python_engine_are_announced(tmp_path, monkeypatch):
    import io

    from mpathlab import budget
    from mpathlab.sim.engine import Simulation
    from mpathlab.workload.fio import load_fio
    from mpathlab.topology import load_topology
    monkeypatch.setenv("MPATHLAB_ENGINE", "python")
    topo = load_topology(ASYM)
    jobs = load_fio(write(tmp_path, "j.fio", "[j]\nrw=randwrite\nbs=512\nnumber_ios=10000000\nsize=100g\n"))
    sim = Simulation(topo.table, topo.paths, jobs.jobs, **topo.sim_kwargs())
    err = io.StringIO()
    budget.check_run(sim, topo, stream=err)
    assert err.getvalue() == ("mpathlab: warning: about 10000000 I/Os on the Python engine (MPATHLAB_ENGINE=python): "
                              "expect 66 s or more\n")
    monkeypatch.delenv("MPATHLAB_ENGINE")
    err = io.StringIO()
    budget.check_run(sim, topo, stream=err)     # the compiled core takes it: nothing to say
    assert err.getvalue() == ""
