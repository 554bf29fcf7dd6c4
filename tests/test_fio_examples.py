"""fio's own examples/*.fio: those fio 3.33 parses either simulate or are
refused by one line naming an option (or ioengine) that has no meaning in a
simulation.  The files and fio's verdict on each (MANIFEST) are kept under
tests/data/fio-examples, so this test does not need fio."""
import os
import subprocess

import pytest

from conftest import require
from mpathlab.runner import run_simulation
from mpathlab.workload import fio_options as fo
from mpathlab.workload.fio import FioError, load_fio
from mpathlab.topology import topology_from_table

HERE = os.path.join(os.path.dirname(__file__), "data", "fio-examples")
TABLE = "0 2097152 multipath 0 0 1 1 service-time 0 2 2 sdb 1 1 sdc 1 1"


def manifest():
    out = {}
    with open(os.path.join(HERE, "MANIFEST")) as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                name, verdict = line.split()
                out[name] = verdict
    return out


PARSED = sorted(n for n, v in manifest().items() if v == "parses")

# The ones refused, and why: each uses an engine that moves no data through a
# block device, so nothing of it reaches multipath.  (cpuio.fio simulates: its
# burners load the host model's CPUs, tests/test_cpuio.py.)
EXPECTED_REFUSED = {
    "exec.fio": "ioengine=exec", "netio.fio": "ioengine=net",
    "netio_multicast.fio": "ioengine=net", "dircreate-ioengine.fio": "ioengine=dircreate",
    "dirdelete-ioengine.fio": "ioengine=dirdelete", "dirstat-ioengine.fio": "ioengine=dirstat",
    "filecreate-ioengine.fio": "ioengine=filecreate", "filedelete-ioengine.fio": "ioengine=filedelete",
    "filestat-ioengine.fio": "ioengine=filestat", "ftruncate.fio": "ioengine=ftruncate",
    "page_fault.fio": "ioengine=page_fault",
}


def _cap(jobs):
    """Keep each example small: at most 64 I/Os, 20 ms and 4 clones per job."""
    for j in jobs.jobs:
        j.number_ios = min(j.number_ios or 64, 64)
        if j.runtime_ns is None or j.runtime_ns > 20_000_000:
            j.runtime_ns = 20_000_000
        j.startdelay_ns = min(j.startdelay_ns, 1_000_000)
        j.numjobs = min(j.numjobs, 4)
        j.lat_log = j.bw_log = j.iops_log = None


def outcome(name):
    try:
        jobs = load_fio(os.path.join(HERE, name))
    except FioError as e:
        return "refused", str(e)
    _cap(jobs)
    topo = topology_from_table(TABLE, service="exponential:100us", parallelism=4)
    res = run_simulation(topo, jobs, seed=1)
    return "simulated", res


def test_manifest_matches_the_files():
    kept = sorted(f for f in os.listdir(HERE) if f.endswith(".fio"))
    assert kept == PARSED
    assert len(manifest()) == 107 and len(PARSED) == 71
    assert os.path.exists(os.path.join(HERE, "COPYING"))


@pytest.mark.parametrize("name", PARSED)
def test_example_simulates_or_is_refused_by_name(name):
    kind, detail = outcome(name)
    if name in EXPECTED_REFUSED:
        assert kind == "refused", "%s simulated, expected a refusal" % name
        assert "\n" not in detail and detail.startswith(name) and EXPECTED_REFUSED[name] in detail, detail
        return
    assert kind == "simulated", detail
    res = detail
    assert res.completed == res.submitted - res.errored - res.pending
    # I/O reached the paths, or the file only burns CPU (cpuio.fio), and then each burner ran
    assert res.completed > 0 or all(j.burner and j.completed for j in res.jobs)
    for j in res.jobs:
        assert j.completed <= 64 + 64 * j.spec.verify      # the cap (plus read-backs of what was written)


def test_at_least_60_of_the_71_simulate():
    simulated = [n for n in PARSED if n not in EXPECTED_REFUSED]
    assert len(simulated) >= 60 and len(EXPECTED_REFUSED) == 11
    # every refusal names something the option table marks as meaningless for a simulation
    for name, what in EXPECTED_REFUSED.items():
        if what.startswith("ioengine="):
            assert what.split("=")[1] in fo.NO_BLOCK_IO_ENGINES
        else:
            assert fo.lookup(what.strip("'")).cls == fo.REFUSED


def test_manifest_agrees_with_fio():
    """With fio installed, re-check a few verdicts of the manifest."""
    require("fio", "the manifest records what fio 3.33 --parse-only says")
    for name in ("aio-read.fio", "steadystate.fio", "cpuio.fio"):
        r = subprocess.run(["fio", "--parse-only", name], cwd=HERE, capture_output=True)
        assert r.returncode == 0, name
