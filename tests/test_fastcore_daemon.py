"""multipathd's loop (`run --conf`) with the dm I/O in the compiled core is the Python engine's run: the
daemon's timers call back into the one Python daemon (sim/fast.py _Target.daemon); its messages, device
operations and table reloads reach the core in the order the Python engine applies them."""
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mpathlab.mtools.conf import parse_conf
from mpathlab.mtools.daemon import Multipathd
from mpathlab.mtools.paths import load_path_topology
from mpathlab.mtools.run import discover, simulate_conf
from mpathlab.sim import fast
from mpathlab.sim.engine import Simulation
from mpathlab.workload.fio import load_fio, parse_fio

from test_fastcore import assert_same_run as assert_same   # (skips the module if the core is not built)
from test_mtools import CONF_TL, TWO_FAILS, WEIGHTED, path, topo

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EX = os.path.join(ROOT, "examples", "mtools")


def job(seconds, depth=1):
    return parse_fio("[j]\nrw=randread\nbs=4k\niodepth=%d\nnumjobs=2\ntime_based=1\nruntime=%ds\n" % (depth, seconds),
                     "j.fio").jobs


def compare(conf_text, make_topo, jobs, **kw):
    """The same conf, topology (built afresh: the daemon changes its paths' states) and jobs in both engines."""
    runs = []
    for eng in ("python", "compiled"):
        res, d, _ = simulate_conf(parse_conf(conf_text), make_topo(), jobs, engine=eng, **kw)
        runs.append((res, d))
    (a, da), (b, db) = runs
    assert_same(a, b)
    assert (da.log, da.tables, da.checks, da.loops) == (db.log, db.tables, db.checks, db.loops)
    return a, da


def test_the_example_run_alike():
    conf = open(os.path.join(EX, "multipath.conf")).read()
    a, d = compare(conf, lambda: load_path_topology(os.path.join(EX, "alua-paths.toml")),
                   load_fio(os.path.join(EX, "randread.fio")).jobs)
    assert len(d.tables) == 4 and a.completed > 100_000      # three reloads (tests/test_mtools.py test_example_run)


@pytest.mark.parametrize("failback", ["immediate", "5", "followover", "manual"])
@pytest.mark.parametrize("npr", ["3", "queue", "fail"])
@pytest.mark.parametrize("depth", [1, 16])
def test_failback_and_no_path_retry_alike(failback, npr, depth):
    a, d = compare(CONF_TL % (failback, npr) + WEIGHTED, lambda: topo(TWO_FAILS), job(30, depth),
                   window_ns=500_000_000)
    assert d.loops > 10


def test_alua_changes_and_standby_ports_alike():
    alua = {"sda": path("8:0", alua="active/optimized", tpg=1,
                        alua_changes=[{"at": "5.5s", "state": "active/non-optimized"}]),
            "sdb": path("8:16", alua="active/non-optimized", tpg=2,
                        alua_changes=[{"at": "5.5s", "state": "active/optimized"}])}
    _, d = compare(CONF_TL % ("immediate", "queue"), lambda: topo(alua), job(10, 8))
    assert len(d.tables) == 2
    standby = {"sda": path("8:0", alua="active/optimized", tpg=1, faults=[{"at": "3.5s", "action": "fail"}]),
               "sdb": path("8:16", alua="standby", tpg=2, alua_changes=[{"at": "8.5s", "state": "active/optimized"}])}
    _, d = compare(CONF_TL % ("immediate", "queue"), lambda: topo(standby), job(14, 4))
    assert len(d.tables) == 3


def test_checker_back_off_and_queueing_forever_alike():
    paths = {"sda": path("8:0", faults=[{"at": "15.5s", "action": "fail"}]), "sdb": path("8:16")}
    conf = "defaults {\n polling_interval 2\n max_polling_interval 16\n path_grouping_policy failover\n no_path_retry queue\n}\n"
    compare(conf, lambda: topo(paths), job(42, 4))
    # every path gone with queueing on: the daemon stops, the run ends as stalled in both engines
    gone = {"sda": path("8:0", faults=[{"at": "1.5s", "action": "fail"}]),
            "sdb": path("8:16", faults=[{"at": "1.5s", "action": "fail"}])}
    a, _ = compare(conf, lambda: topo(gone), job(20, 4))
    assert a.stalled and a.pending


def test_an_admin_message_from_a_daemon_timer_alike():
    # tests/test_mtools.py's followover case: a timer of the test's own sends switch_group
    paths = {"sda": path("8:0", serial="A", faults=[{"at": "3.5s", "action": "fail"},
                                                    {"at": "7.5s", "action": "reinstate"}]),
             "sdb": path("8:16", serial="A"), "sdc": path("8:32", serial="B")}
    conf = CONF_TL % ("followover", "queue") + "overrides {\n path_grouping_policy group_by_serial\n}\n"
    results = []
    for eng in ("python", "compiled"):
        c, t = parse_conf(conf), topo(paths)
        maps, _, env = discover(c, t)
        mp = maps[0]
        sim = Simulation(mp.table_line(), [pp.path.model for pp in mp.paths], job(12, 8), window_ns=500_000_000,
                         engine=eng, **t.sim)
        d = Multipathd(mp, c.checkint(), c.max_checkint(), env=env, topology=t)
        sim.add_daemon(d)
        sim.daemon_timer(10 ** 9, lambda sim=sim: sim.send_message("switch_group 2"))
        results.append((sim.run(), d))
    (a, da), (b, db) = results
    assert_same(a, b)
    assert da.log == db.log


def test_daemons_the_core_does_not_mirror_fall_back():
    c, t = parse_conf(""), topo({"sda": path("8:0"), "sdb": path("8:16")})
    mp = discover(c, t)[0][0]

    class Other(Multipathd):
        in_compiled_core = False
    sim = Simulation(mp.table_line(), [pp.path.model for pp in mp.paths], job(1), **t.sim)
    sim.add_daemon(Other(mp, 5, 20, topology=t))
    assert fast.eligible(sim) == "the daemon Other needs the Python engine"
    c = parse_conf("defaults {\n path_selector \"io-affinity 0\"\n}\n")
    mp = discover(c, t)[0][0]
    sim = Simulation(mp.table_line(), [pp.path.model for pp in mp.paths], job(1), **t.sim)
    sim.add_daemon(Multipathd(mp, 5, 20, topology=t))
    assert "io-affinity" in fast.eligible(sim)


_ALUA = ["active/optimized", "active/non-optimized", "standby", "unavailable"]


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(failback=st.sampled_from(["immediate", "3", "followover", "manual"]),
       npr=st.sampled_from(["2", "queue", "fail"]), depth=st.integers(1, 12),
       paths=st.lists(st.tuples(st.sampled_from(_ALUA), st.lists(st.tuples(st.integers(1, 14), st.booleans()), max_size=3),
                                st.lists(st.tuples(st.integers(1, 14), st.sampled_from(_ALUA)), max_size=2)),
                      min_size=2, max_size=3))
def test_random_maps_and_faults_alike(failback, npr, depth, paths):
    doc = {}
    for i, (alua, faults, changes) in enumerate(paths):
        doc["sd%s" % "abc"[i]] = path("8:%d" % (16 * i), alua=alua, tpg=1 + i % 2,
                                      faults=[{"at": "%d.5s" % t, "action": "fail" if down else "reinstate"}
                                              for t, down in sorted(faults)],
                                      alua_changes=[{"at": "%d.5s" % t, "state": s} for t, s in sorted(changes)])
    compare(CONF_TL % (failback, npr), lambda: topo(doc), job(16, depth))
