"""`reproduce hst-2020-depth64` prints identical ST and HST columns: the output says why, and the reason it
gives holds (the same devices under HST with ktime only starve sdd at this depth)."""
import os

from mpathlab.cli import main
from mpathlab.scenarios import HERE
from mpathlab.sim.engine import Simulation
from mpathlab.topology import load_topology
from mpathlab.workload.fio import load_fio


def test_the_identical_columns_are_explained(capsys):
    assert main(["reproduce", "hst-2020-depth64", "--no-progress"]) == 0
    out = capsys.readouterr().out
    rows = [line.split("|") for line in out.splitlines() if line.startswith("| sd")]
    assert rows and all(r[2].split()[0] == r[3].split()[0] for r in rows)      # ST == HST, path by path
    assert "Why ST and HST agree here" in out and "docs/scenarios.md" in out
    assert max(len(line) for line in out.splitlines()) <= 100


def test_hst_with_ktime_only_starves_the_slow_path_at_depth_64():
    topo = load_topology(os.path.join(HERE, "hst-2020.toml")).with_selector("historical-service-time")
    kw = topo.sim_kwargs()
    kw.pop("sched_clock_offset_ns", None)       # ktime in select_path as in end_io (the 2022 fix)
    kw["kernel"] = "6.1"
    res = Simulation(topo.table, topo.paths, load_fio(os.path.join(HERE, "hst-2020-depth64.fio")).jobs,
                     **kw).run()
    assert res.shares["sdd"] < 0.01 < 0.1 < res.shares["sda"]
