"""Which runs the compiled core takes is an allow-list (sim/fast.py eligible): a part of a run the core
does not model, including one added to the Python engine later, sends the run to the Python engine,
and the run says so once on stderr with the reason."""
import pytest

from mpathlab.cli import main
from mpathlab.sim import PathModel, ServiceTime, fast
from mpathlab.sim.devices import Fault
from mpathlab.sim.engine import Simulation
from mpathlab.sim.host import HostModel
from mpathlab.workload.fio import parse_fio

if not fast.available():
    pytest.skip("compiled core not built (python setup.py build_ext --inplace)", allow_module_level=True)

TABLE = "0 2097152 multipath 0 0 1 1 queue-length 0 2 1 a 1 b 1"
JOB = "[j]\nrw=randread\nbs=4k\nioengine=libaio\niodepth=4\nnumber_ios=400\n"
NOTE = "mpathlab: note: this run uses the Python engine (slower): "


def unwrap(err):
    """The notes one per line (the terminal gets them wrapped at 100 columns)."""
    return err.replace("\n    ", " ")


@pytest.fixture(autouse=True)
def fresh_notes(monkeypatch):
    monkeypatch.setattr(fast, "_noted", set())
    monkeypatch.delenv("MPATHLAB_ENGINE", raising=False)


def paths(**kw):
    return [PathModel(n, (8, 16 * i), ServiceTime(50_000), **kw) for i, n in enumerate("ab")]


def sim(job=JOB, ps=None, **kw):
    return Simulation(TABLE, ps or paths(), parse_fio(job).jobs, **kw)


def test_a_run_the_core_takes_says_nothing(capsys):
    res = sim().run()
    assert res.engine == "compiled"
    assert capsys.readouterr().err == ""


def test_a_refused_run_says_why_once(capsys):
    job = JOB + "write_lat_log=x\n"
    for _ in range(3):
        assert sim(job).run().engine == "python"
    err = capsys.readouterr().err
    assert unwrap(err) == NOTE + "fio logs (write_*_log) need the Python engine\n"
    assert max(len(line) for line in err.splitlines()) <= 100


def test_each_reason_is_said_once(capsys):
    sim(JOB + "write_lat_log=x\n").run()
    sim(JOB + "[k]\nrw=read\nnumber_ios=10\nwait_for=j\n").run()
    sim(JOB + "write_lat_log=x\n").run()
    lines = unwrap(capsys.readouterr().err).splitlines()
    assert len(lines) == 2 and all(line.startswith(NOTE) for line in lines)


def test_asking_for_the_python_engine_is_not_a_fallback(capsys, monkeypatch):
    assert sim(engine="python").run().engine == "python"
    monkeypatch.setenv("MPATHLAB_ENGINE", "python")
    assert sim().run().engine == "python"
    assert capsys.readouterr().err == ""


# ---- the allow-list: parts unknown to the core are refused by name, not run without them
def test_a_path_setting_added_to_the_python_engine_only_is_refused():
    s = sim()
    s.devices[0].model.queue_full_retries = 3        # a device feature the core does not know
    assert fast.eligible(s) == "the path setting queue_full_retries is not in the compiled core"


def test_a_device_model_subclass_is_refused():
    class ScsiPathModel(PathModel):
        pass
    ps = [ScsiPathModel(n, (8, 16 * i), ServiceTime(50_000)) for i, n in enumerate("ab")]
    assert fast.eligible(sim(ps=ps)) == "ScsiPathModel devices are not in the compiled core"


def test_a_fault_action_the_core_lacks_is_refused():
    class SenseFault(Fault):
        ACTIONS = Fault.ACTIONS + ("check-condition",)
    s = sim(ps=paths(faults=[SenseFault(10_000, "check-condition")]))
    assert fast.eligible(s) == "the fault 'check-condition' is not in the compiled core"


def test_a_fio_option_added_to_the_python_engine_only_is_refused():
    jobs = parse_fio(JOB).jobs
    jobs[0].replay_trace = "trace.blktrace"          # a workload feature the core does not know
    assert fast.eligible(Simulation(TABLE, paths(), jobs)) == \
        "the fio option replay_trace is not in the compiled core"


def test_a_host_setting_added_to_the_python_engine_only_is_refused():
    host = HostModel(cpus=2, submit_ns=1000)
    host.irq_affinity = [1, 0]
    assert fast.eligible(sim(host=host)) == "the host setting irq_affinity is not in the compiled core"


def test_a_simulation_subclass_is_refused():
    class Tweaked(Simulation):
        pass
    assert fast.eligible(Tweaked(TABLE, paths(), parse_fio(JOB).jobs)) == \
        "the simulation Tweaked is not in the compiled core"


# ---- the commands whose runs the core refuses say so
SMALL = "[j]\nrw=randread\nbs=4k\nioengine=libaio\niodepth=4\nnumber_ios=200\n"


def test_hosts_run_in_the_core_and_say_when_they_do_not(capsys, tmp_path):
    job = tmp_path / "small.fio"
    job.write_text(SMALL)
    assert main(["hosts", "src/mpathlab/scenarios/hosts-8x4.toml", str(job), "--selectors", "queue-length",
                 "--seeds", "1"]) == 0
    assert NOTE not in capsys.readouterr().err
    # a job that verifies what it wrote: its generator stays in Python, for every host and seed
    job.write_text("[j]\nrw=write\nbs=4k\nioengine=libaio\niodepth=2\nnumber_ios=50\nverify=crc32c\n")
    assert main(["hosts", "src/mpathlab/scenarios/hosts-8x4.toml", str(job), "--selectors", "queue-length",
                 "--seeds", "1,2"]) == 0
    err = capsys.readouterr().err
    assert err.count(NOTE) == 1 and "verify" in err


def test_nvme_policy_outside_the_core_says_it_runs_on_the_python_engine(capsys, tmp_path):
    job = tmp_path / "small.fio"
    job.write_text(SMALL)
    assert main(["run", "examples/nvme-vs-dm.toml", str(job), "--selector", "nvme:adaptive",
                 "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert err.count(NOTE) == 1 and "NVMe I/O policy adaptive" in err
    # the kernel's policies run in the core, without a note
    assert main(["run", "examples/nvme-vs-dm.toml", str(job), "--selector", "nvme:queue-depth",
                 "--no-progress"]) == 0
    assert NOTE not in capsys.readouterr().err


def test_scsi_paths_run_in_the_core_without_a_note(capsys, tmp_path):
    topo = tmp_path / "scsi.toml"
    topo.write_text('[multipath]\ntable = "0 1048576 multipath 0 0 1 1 queue-length 0 2 1 sda 1 sdb 1"\n'
                    '[paths.sda]\ndevt = "8:0"\nkind = "scsi"\nservice = "1ms"\nqueue_depth = 4\n'
                    '[paths.sdb]\ndevt = "8:16"\nkind = "scsi"\nservice = "1ms"\nqueue_depth = 4\n')
    job = tmp_path / "small.fio"
    job.write_text(SMALL)
    assert main(["run", str(topo), str(job), "--no-progress"]) == 0
    assert NOTE not in capsys.readouterr().err     # queue_depth budgets are in the compiled core
