"""mpathlab.policies (selectors beyond the kernel's) and the HST herding scenario.

Every policy is checked on a hand-built trace: paths added, I/Os started and
ended at chosen times, and the choices and estimates worked out by hand from
the rule in the policy's docstring.
"""
import math
import random

import pytest

from mpathlab import selectors
from mpathlab.selectors import SelectorError


class Clock:
    def __init__(self):
        self.t = 0

    def __call__(self):
        return self.t


class Scripted(random.Random):
    """An rng whose randrange returns a given sequence (to pin p2c's draws)."""

    def __init__(self, seq):
        super().__init__(0)
        self.seq = list(seq)

    def randrange(self, n):
        v = self.seq.pop(0)
        assert 0 <= v < n
        return v


def make(name, args=(), paths=("a", "b", "c"), **env):
    clk = env.pop("clock", None) or Clock()
    ps = selectors.create(name, list(args), clock=clk, **env)
    for p in paths:
        ps.add_path(p, [])
    return ps, clk


def issue(ps, nr_bytes=4096):
    p = ps.select_path(nr_bytes)
    ps.start_io(p, nr_bytes)
    return p


def test_policies_are_built_in_whatever_the_installed_entry_points(monkeypatch):
    # An install made before (or without) any entry points, e.g. ./mpathlab from a checkout, still finds them.
    import importlib.metadata as md
    from mpathlab.selectors import registry
    for name in registry.BUILTIN:
        monkeypatch.delitem(registry._types, name, raising=False)
    monkeypatch.setattr(md, "entry_points", lambda group=None: [])
    registry.reload_entry_points()
    try:
        for name in ("p2c", "sed", "peak-ewma", "prequal", "hst-latency"):
            cls = selectors.lookup(name)
            assert cls.name == name and cls.__module__.startswith("mpathlab.policies."), name
    finally:
        registry.reload_entry_points()


# ------------------------------------------------------------------ p2c
def test_p2c_two_draws_lower_queue_wins_first_drawn_on_tie():
    # draws: (0, 1) -> paths 0 and 2 (the second draw skips the first); (2, 0) -> paths 2 and 0
    ps, _ = make("p2c", rng=Scripted([0, 1, 2, 0]))
    assert issue(ps) == "a"                       # a and c both idle: first drawn
    assert ps.valid_order() == ["b", "c", "a"]    # winner to the tail
    assert issue(ps) == "b"                       # drew a (1 in flight) and b (0): b
    assert ps.status("a", "info") == "1 0 " and ps.status(None, "table") == "0 "


def test_p2c_delay_metric_uses_latency_ewma():
    # draws (i, j): (0, 0) -> paths 0 and 1; (1, 0) -> paths 1 and 0
    ps, clk = make("p2c", ["delay"], paths=("a", "b"), rng=Scripted([0, 0, 0, 0, 1, 0, 0, 0]))
    assert issue(ps) == "a"                        # [a, b]: a vs b, both load 0 -> first drawn
    clk.t = 800_000
    ps.end_io("a", 4096, 0)                        # first sample replaces: a est 800 us
    assert issue(ps) == "b"                        # [b, a]: b (1 x 0) vs a (1 x 800 us) -> b
    clk.t = 1_000_000
    ps.end_io("b", 4096, 800_000)                  # b est 200 us
    assert issue(ps) == "b"                        # [a, b], draws (1, 0): b (200) vs a (800) -> b
    # b has one in flight: 2 x 200 = 400 us, still below a's 1 x 800
    assert ps.select_path(4096) == "b"             # [a, b], draws (0, 0): a (800) vs b (400) -> b
    clk.t = 1_100_000
    ps.end_io("b", 4096, 1_000_000)                # 100 us: 200 + (100 - 200) / 8 = 187.5 us
    assert ps._info["b"].est == pytest.approx(187_500)
    assert ps.status("b", "info") == "0 187500 " and ps.status(None, "table") == "1 delay "


def test_p2c_refuses_bad_metric_and_is_seeded():
    with pytest.raises(SelectorError):
        selectors.create("p2c", ["fastest"])
    seqs = []
    for seed in (1, 1, 2):
        ps, _ = make("p2c", rng=random.Random(seed), paths=tuple("abcdefgh"))
        seqs.append([issue(ps) for _ in range(40)])
    assert seqs[0] == seqs[1] and seqs[0] != seqs[2]


# ------------------------------------------------------------------ sed
def test_sed_size_aware_expected_delay():
    ps, clk = make("sed", paths=("a", "b"))
    assert issue(ps, 4096) == "a"                  # no rate yet: tried first
    assert issue(ps, 8192) == "b"
    clk.t = 1_000_000
    ps.end_io("a", 4096, 0)                        # 4096 B in 1 ms: 4,096,000 B/s
    ps.end_io("b", 8192, 0)                        # 8192 B in 1 ms: 8,192,000 B/s
    assert ps.status("a", "info") == "0 4096000 "
    # 4 KiB: a 4096/4.096e6 = 1 ms, b 4096/8.192e6 = 0.5 ms -> b
    assert issue(ps, 4096) == "b"
    # now b: (4096 + 4096)/8.192e6 = 1 ms = a's 1 ms: tie, list order [a, b] -> a
    assert issue(ps, 4096) == "a"
    # a 64 KiB I/O: a (4096+65536)/4.096e6 = 17 ms, b (4096+65536)/8.192e6 = 8.5 ms -> b
    assert ps.select_path(65536) == "b"
    clk.t = 3_000_000
    ps.end_io("b", 4096, 1_000_000)                # 4096 B in 2 ms = 2,048,000: 8.192e6 + (2.048e6-8.192e6)/8
    assert ps._info["b"].est == pytest.approx(7_424_000)


# ------------------------------------------------------------------ peak-ewma
def test_peak_ewma_fast_rise_time_decayed_fall_and_decay_on_read():
    # decay 10 us, default rtt 1000 us, every path read (choices 0)
    ps, clk = make("peak-ewma", ["10", "1000", "0"], paths=("a", "b"))
    assert issue(ps) == "a"                        # both 1 ms x 1: tie -> a
    assert issue(ps) == "b"                        # a 1 ms x 2 > b 1 ms x 1
    clk.t = 2_000
    ps.end_io("a", 4096, 0)                        # rtt 2 us < 1 ms: fall, w = exp(-2000/10000)
    w = math.exp(-0.2)
    assert ps._info["a"].est == pytest.approx(1e6 * w + 2000 * (1 - w))
    ps.end_io("b", 4096, 0)
    b_est = ps._info["b"].est
    clk.t = 7_000
    ps.start_io("a", 4096)
    ps.end_io("a", 4096, 2_000)                    # rtt 5 us: above a's decayed estimate? a est ~ 819 us: no
    a_est = ps._info["a"].est
    w5 = math.exp(-0.5)
    assert a_est == pytest.approx((1e6 * w + 2000 * (1 - w)) * w5 + 5000 * (1 - w5))
    assert b_est == pytest.approx(1e6 * w + 2000 * (1 - w))
    # reading a load decays toward 0: 10 us later a's estimate is multiplied by exp(-1)
    clk.t = 17_000
    assert ps.load(ps._info["a"], clk.t) == pytest.approx(a_est * math.exp(-1.0))
    # b: an I/O taking 3 ms, above its ~819 us estimate: the estimate jumps to it
    clk.t = 3_000_000
    ps.start_io("b", 4096)
    ps.end_io("b", 4096, 0)
    assert ps._info["b"].est == 3_000_000.0
    assert ps.select_path(4096) == "a"             # a decayed to ~0, b 3 ms decayed by exp(-0) = 3 ms


def test_peak_ewma_peak_replaces_estimate():
    ps, clk = make("peak-ewma", ["1000", "100", "0"], paths=("a",))
    issue(ps)
    clk.t = 3_000_000
    ps.end_io("a", 4096, 0)                        # 3 ms > 100 us default: est = 3 ms exactly
    assert ps._info["a"].est == 3_000_000.0
    assert ps.status(None, "table") == "3 1000 100 0 "


# ------------------------------------------------------------------ prequal
def test_prequal_cold_lowest_latency_hot_lowest_rif():
    # q_rif 50 %, shift 0 (latency = last sample), window 3
    ps, clk = make("prequal", ["50", "0", "3"])
    assert ps.threshold() is None
    assert issue(ps) == "a"                        # nothing seen: all cold, latency 0 each: list order
    # recorded RIFs of [b, c, a] before a's start_io: 0 0 0
    assert list(ps.recent) == [0, 0, 0]
    clk.t = 1_000
    ps.end_io("a", 4096, 0)                        # a latency 1 us
    assert issue(ps) == "b"                        # thr 0; cold: all (RIF 0); latency: b 0, c 0, a 1000 -> b
    clk.t = 5_000
    ps.end_io("b", 4096, 1_000)                    # b latency 4 us
    assert issue(ps) == "c"                        # c still unmeasured (0 us)
    clk.t = 7_000
    ps.end_io("c", 4096, 5_000)                    # c latency 2 us
    # load a: two in flight; b, c idle.  Window holds the last 3 RIFs recorded.
    ps.start_io("a", 4096); ps.start_io("a", 4096)
    ps.recent.clear(); ps.recent.extend([0, 0, 0])
    # thr = 0: a (RIF 2) hot; cold b (4 us) and c (2 us): c
    assert ps.select_path(4096) == "c"
    # window now [b 0, a 2, c 0] -> sorted 0 0 2, q50 -> rank ceil(1.5)-1 = 1 -> thr 0
    ps.start_io("c", 4096); ps.start_io("b", 4096)
    ps.recent.clear(); ps.recent.extend([0, 0, 0])
    # everyone busy (a 2, b 1, c 1) and thr 0: all hot -> lowest RIF, first in list order [a, b, c]: b
    assert ps.valid_order() == ["a", "b", "c"]
    assert ps.select_path(4096) == "b"


# ------------------------------------------------------------------ hst-latency
def test_hst_latency_samples_own_latency_not_the_serialised_gap():
    stock, clk = make("historical-service-time", paths=("a",))
    var, clk2 = make("hst-latency", paths=("a",), clock=clk)
    for ps in (stock, var):
        ps.start_io("a", 4096); ps.start_io("a", 4096)
    clk.t = 1_000
    for ps in (stock, var):
        ps.end_io("a", 4096, 0)
    # both: (1024*972 + 1000*1024*52 + 512) >> 10
    assert stock._info["a"].hst == var._info["a"].hst == 52972
    clk.t = 1_100
    for ps in (stock, var):
        ps.end_io("a", 4096, 0)
    # stock: sample 1100 - max(0, last_finish 1000) = 100; variant: 1100
    assert stock._info["a"].hst == (52972 * 972 + 100 * 1024 * 52 + 512) >> 10 == 55482
    assert var._info["a"].hst == (52972 * 972 + 1100 * 1024 * 52 + 512) >> 10 == 107482
    assert var.status("a", "info") == "107482 0 %d " % (1_100 + 1 * (107482 >> 10))


# ------------------------------------------------------------------ in tables and simulations
@pytest.mark.parametrize("name,args", [("p2c", ["delay"]), ("sed", []), ("peak-ewma", []), ("prequal", []),
                                       ("hst-latency", [])])
def test_policies_run_in_tables_and_simulations(name, args):
    from mpathlab.target import parse
    from mpathlab.sim.engine import simulate
    from mpathlab.sim.devices import Exponential, PathModel
    from mpathlab.workload.fio import parse_fio
    sel = " ".join([name, str(len(args))] + args)
    line = "0 2097152 multipath 0 0 1 1 %s 2 1 8:16 1 8:32 1" % sel
    m = parse(line)
    # the policies print their arguments and repeat counts; hst-latency prints what HST prints
    want = "hst-latency 2 972 0 2 1 8:16 0 8:32 0 " if name == "hst-latency" else sel + " 2 1 8:16 1 8:32 1 "
    assert m.table() == "0 0 1 1 " + want
    paths = [PathModel("sdb", (8, 16), Exponential(100_000), 4), PathModel("sdc", (8, 32), Exponential(400_000), 4)]
    jobs = parse_fio("[j]\nbs=4k\niodepth=16\nnumber_ios=3000\n").jobs
    r1 = simulate(line, paths, jobs, seed=5)
    r1.check_accounting()
    # a Python selector runs inside the compiled loop when the core is built (tests/test_fastcore.py)
    from mpathlab.sim import fast
    assert r1.engine == ("compiled" if fast.available() else "python") and r1.completed == 3000
    assert r1.shares["sdb"] > r1.shares["sdc"]         # the 4x faster path gets more
    r2 = simulate(line, paths, jobs, seed=5)
    assert r1.shares == r2.shares                       # deterministic for a seed


# ------------------------------------------------------------------ the HST herding scenario
@pytest.fixture(scope="module")
def herding():
    from mpathlab.scenarios import SCENARIOS
    return SCENARIOS["hst-fast-path-herding"].run()


def test_herding_hst_piles_on_two_fast_paths_st_ql_split_evenly(herding):
    hst = herding.columns["HST"]
    assert hst["fast #1"] + hst["fast #2"] > 0.85 and hst["fast #3-5 (mean)"] < 0.04
    for col in ("ST", "QL"):
        c = herding.columns[col]
        assert c["fast #1"] - c["fast #3-5 (mean)"] < 0.01
    assert herding.within()


def test_herding_mechanism_instrumented():
    """The README's explanation, read off the selector's state (hst_herding.trace)."""
    from mpathlab.scenarios.hst_herding import trace
    t = trace()
    hot = [t["paths"][p] for p in t["hot"]]
    cold = [t["paths"][p] for p in t["cold"]]
    for h in hot:
        # the EMA is the gap between completions, about S / outstanding ...
        assert h["outstanding"] > 20 and h["hst_ns"] < 2_000_000 / h["outstanding"] * 1.5
        # ... so (1 + out) * hst stays near one service time (2 ms), and the path is never stale
        assert 1_900_000 < h["estimate_ns"] < 2_200_000 and h["stale"] == 0
    for c in cold:
        assert c["outstanding"] < 1 and 1_700_000 < c["hst_ns"] < 2_400_000
    lost = t["cold_lost"]
    assert set(lost) == {"busy", "estimate", "scan order"} and lost["scan order"] > 0.1 * sum(lost.values())
    # the cold paths' I/O comes mostly on estimate (an idle path whose EMA dipped), rarely as a stale probe
    assert t["cold_chosen"]["estimate"] > 10 * t["cold_chosen"].get("stale probe", 0) > 0


def test_hst_latency_spreads_the_fast_paths():
    from mpathlab.scenarios import SCENARIOS, herding_rows
    from mpathlab.runner import run_simulation
    from mpathlab.workload.fio import load_fio
    from mpathlab.topology import load_topology
    sc = SCENARIOS["hst-fast-path-herding"]
    r = run_simulation(load_topology(sc.topology), load_fio(sc.job), selector="hst-latency")
    rows = herding_rows(r.shares)
    assert rows["fast #1"] < 0.22 and rows["fast #3-5 (mean)"] > 0.17


@pytest.mark.parametrize("name,args", [("sed", []), ("prequal", ["100", "3", "8"])])
def test_sed_and_prequal_probe_an_idle_stale_path(name, args):
    """HST's probing rule: idle and nothing completed for nr_valid x mean latency -> tried again."""
    ps, clk = make(name, args, paths=("a", "b"))
    assert issue(ps) == "a" and issue(ps) == "b"      # both unmeasured: list order
    clk.t = 1_000
    ps.end_io("a", 4096, 0)                           # a: 1 us (fast), last_finish 1000
    clk.t = 5_000
    ps.end_io("b", 4096, 0)                           # b: 5 us (slow), b stale after 5000 + 2 x 5000 = 15000
    ps.start_io("a", 4096)
    clk.t = 14_000
    ps.end_io("a", 4096, 13_000)                      # a: 1 us again, stale after 14000 + 2 x 1000 = 16000
    assert ps._info["b"].lat == 5_000 and ps._info["a"].lat == 1_000
    clk.t = 15_000
    assert ps.select_path(4096) == "a"                # b not yet stale (15000 is not after 15000): a is faster
    clk.t = 15_001
    assert ps.select_path(4096) == "b"                # b idle and stale: probed
    ps.start_io("b", 4096)
    assert ps.select_path(4096) == "a"                # a busy-free and fresh; b now busy, no longer "idle stale"


from hypothesis import given, settings, strategies as st  # noqa: E402

_ARG = st.one_of(st.text(max_size=8), st.integers(-5, 10 ** 12).map(str), st.sampled_from(["ql", "delay", "0", "100"]))


@settings(max_examples=200, deadline=None)
@given(name=st.sampled_from(["p2c", "sed", "peak-ewma", "prequal", "hst-latency"]), args=st.lists(_ARG, max_size=4))
def test_policy_arguments_construct_or_refuse_cleanly(name, args):
    """Any argument list either builds a selector whose TABLE status round-trips it, or is a SelectorError."""
    try:
        ps = selectors.create(name, args, clock=lambda: 0)
    except SelectorError:
        return
    ps.add_path("a", [])
    assert ps.select_path(4096) == "a"
    if name != "hst-latency":
        assert ps.status(None, "table") == "%d %s" % (len(args), "".join(a + " " for a in args))
