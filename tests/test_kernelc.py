"""The kernel's own selector C code (Debian's linux-source-6.1) run inside mpathlab.

The C files are extracted from the tarball at test time (only drivers/md) and
never stored in the repository.  Differential traces must find no
divergence between each C selector and its Python model, and must find one
when the shim is deliberately broken.
"""
import json
import os

import pytest

from conftest import FakeClock, require
from mpathlab.cli import main
from mpathlab.kernel import EINVAL
from mpathlab.scenarios import SCENARIOS, TOLERANCE, Column, Scenario
from mpathlab.selectors import CpuTopology, SelectorError, create, lookup

KINDS = ("round-robin", "queue-length", "service-time", "historical-service-time", "io-affinity")
TRACES = 2000


@pytest.fixture(scope="module")
def md():
    tarball = require("/usr/src/linux-source-6.1.tar.xz", "the kernel's selector sources (linux-source-6.1)")
    require("cc", "a C compiler builds the kernel selectors")
    from mpathlab.kernelc.tree import extract_md
    return extract_md(tarball)


def c_name(md, kind, opts=""):
    return "c:%s%s" % (os.path.join(md, "dm-ps-%s.c" % kind), opts)


@pytest.mark.parametrize("kind", KINDS)
def test_c_type_matches_the_python_type(md, kind):
    from mpathlab import kernelc
    c = kernelc.load(os.path.join(md, "dm-ps-%s.c" % kind))
    py = lookup(kind)
    assert c.kernel_name == kind
    assert (c.table_args, c.info_args, c.uses_hr_timer(), c.has_io_hooks) == \
        (py.table_args, py.info_args, py.uses_hr_timer(), py.has_io_hooks)
    # module_init ran: its DMINFO "version ... loaded" was captured (io-affinity prints none)
    if py.version:
        assert ("6", "device-mapper: multipath %s: version %s loaded" % (kind, py.version)) in c.lib.dmesg


@pytest.mark.parametrize("kind", KINDS)
def test_no_divergence_over_thousands_of_random_traces(md, kind):
    """io-affinity traces include lib/bitmap.c's odd mask forms (see kernelc.diff._mask_text)."""
    from mpathlab import kernelc
    from mpathlab.kernelc.diff import run_diff
    res = run_diff(kernelc.load(os.path.join(md, "dm-ps-%s.c" % kind)), kind, TRACES, seed=11)
    assert res.traces == TRACES
    assert res.divergence is None, res.divergence.format()


@pytest.mark.parametrize("kind", ("round-robin", "queue-length", "historical-service-time"))
def test_a_broken_shim_is_caught_with_a_minimal_trace(md, kind):
    from mpathlab import kernelc
    from mpathlab.kernelc.diff import run_diff
    broken = kernelc.load(os.path.join(md, "dm-ps-%s.c" % kind), shim_faults=["list_move_tail_to_head"])
    res = run_diff(broken, kind, TRACES, seed=11)
    d = res.divergence
    assert d is not None
    # two paths and two selections are enough to see the rotation go the wrong way
    assert len([op for op in d.trace.ops if op[0] == "add"]) == 2
    assert len(d.trace.ops) <= 5
    assert d.lines[-1].startswith("select")


def test_c_selector_by_hand(md):
    """Expectations from the kernel's algorithms, not from the Python model."""
    t = FakeClock(10 ** 12)
    rr = create(c_name(md, "round-robin"), [], clock=t)
    for p in ("a", "b", "c"):
        rr.add_path(p, ["1"])
    assert [rr.select_path(4096) for _ in range(4)] == ["a", "b", "c", "a"]
    rr.fail_path("b")
    assert [rr.select_path(4096) for _ in range(2)] == ["c", "a"]
    rr.reinstate_path("b")                       # round-robin reinstates at the head
    assert rr.select_path(4096) == "b"
    # kernel sscanf: no '+', no '-', wraps on overflow; repeat_count is clamped to 1 with a warning
    with pytest.raises(SelectorError) as e:
        rr.add_path("d", ["+3"])
    assert (e.value.message, e.value.errno) == ("round-robin ps: invalid repeat count", EINVAL)
    with pytest.raises(SelectorError):
        rr.add_path("d", ["-1"])
    rr.add_path("d", ["4294967296"])             # 2^32 wraps to 0, kept as 0
    assert rr.status("d", "table") == "0 "
    rr.add_path("e", [" 7"])                     # leading space skipped, 7 > 1 clamped
    assert rr.status("e", "table") == "1 "
    assert rr.lib.dmesg[-1] == ("4", "device-mapper: multipath round-robin: repeat_count > 1 is deprecated, "
                                     "using 1 instead")
    # HST: first completion of 1 ms on an idle path with base weight 972
    hst = create(c_name(md, "historical-service-time"), [], clock=t)
    hst.add_path("a", [])
    hst.add_path("b", [])
    p = hst.select_path(4096)
    hst.start_io(p, 4096)
    t0 = t.t
    t.t += 1_000_000
    hst.end_io(p, 4096, t0)
    # weight for a 1 ms sample (bucket 0) is 972: (1024*972 + (1e6<<10)*(1024-972) + 512) >> 10
    hst_fp = (1024 * 972 + (1_000_000 << 10) * 52 + 512) >> 10
    assert hst.status(p, "info") == "%d 0 %d " % (hst_fp, t.t + 2 * (hst_fp >> 10))
    assert hst.status(None, "table") == "2 972 0 "


def test_c_io_affinity_cpumask_follows_lib_bitmap(md):
    topo = CpuTopology(40, [0] * 20 + [1] * 20)
    cpu = [0]
    ioa = create(c_name(md, "io-affinity"), [], clock=FakeClock(), cpu=lambda: cpu[0], topology=topo)
    ioa.add_path("a", ["1,00000001"])            # CPUs 0 and 32
    assert ioa.status("a", "table") == "01,00000001 "   # %*pb: the top chunk only 2 digits wide for 8 bits
    # lib/bitmap.c steps over one non-hex character after eight digits: mask = CPU 1
    ioa.add_path("b", ["x00000002"])
    assert ioa.status("b", "table") == "00,00000002 "
    cpu[0] = 1
    assert ioa.select_path(0) == "b"
    # any parse failure is -EINVAL with the kernel's message, also a bit beyond nr_cpu_ids
    for bad in ("1,0,00000001", "100,00000000", "123456789", "zz"):
        with pytest.raises(SelectorError) as e:
            ioa.add_path("c", [bad])
        assert (e.value.message, e.value.errno) == ("io-affinity ps: invalid cpumask", EINVAL), bad
    cpu[0] = 25                                   # unmapped, node 1: no node-1 path; first mapped CPU (0)
    assert ioa.select_path(0) == "a"
    assert ioa.status("a", "info") == "1 "        # map_misses


def test_c_selector_in_a_table_line(md):
    from mpathlab.target import parse
    name = c_name(md, "service-time")
    line = "0 100 multipath 0 0 1 1 %s 0 2 2 8:16 1 4 8:32 1 1"
    m = parse(line % name)
    py = parse(line % "service-time")
    assert m.status("info").endswith("2 2 8:16 A 0 0 4 8:32 A 0 0 1 ")
    assert m.status("info") == py.status("info")
    assert m.table() == py.table().replace("service-time", name)
    assert "%s 0 2 2 8:16 1 4 8:32 1 1" % name in m.table()
    with pytest.raises(Exception) as e:
        parse("0 100 multipath 0 0 1 1 %s 0 1 2 8:16 1 101" % name)
    assert "service-time ps: invalid relative_throughput value" in str(e.value)


def test_stock_hst_on_hst_2020_depth1_gives_the_python_shares(md):
    """Same topology, same options.  The scenario models the 5.8 HST, whose select_path read
    sched_clock() (2 s ahead of ktime); the 6.1 file reads ktime_get_ns().  At iodepth=1 every path
    is idle at each selection, and HST then compares stale_after values only, never "now", so
    both clocks give the same decisions: the runs are identical, I/O for I/O."""
    sc = SCENARIOS["hst-2020-depth1"]
    cols = [Column("HST", c_name(md, "historical-service-time")), Column("Python HST", "historical-service-time")]
    o = Scenario(sc.name, sc.title, sc.topology, sc.job, cols, {"HST": sc.published["HST"]}, sc.source).run()
    c, py = o.results["HST"], o.results["Python HST"]
    assert o.columns["HST"] == o.columns["Python HST"]
    assert c.completed == py.completed == 128000
    assert [p["completed"] for p in c.paths] == [p["completed"] for p in py.paths]
    assert o.within(TOLERANCE), o.deviations()


def test_hst_built_without_the_hr_timer_flag_reproduces_hst_orig(md):
    """`.features = 0` (a build option, the file is untouched) is the seed's "HST (orig)": bio-based
    start times from jiffies.  The stock flag gives the "HST (ktime)" column."""
    from mpathlab import kernelc
    orig = kernelc.load(os.path.join(md, "dm-ps-historical-service-time.c"), features=0)
    assert not orig.uses_hr_timer()
    sc = SCENARIOS["hst-ktime-bio-10disk"]
    cols = [Column("HST (orig)", c_name(md, "historical-service-time", "@features=0")),
            Column("HST (ktime)", c_name(md, "historical-service-time")),
            Column("Python HST (orig)", "historical-service-time", force_jiffies_start=True)]
    o = Scenario(sc.name, sc.title, sc.topology, sc.job, cols,
                 {k: sc.published[k] for k in ("HST (orig)", "HST (ktime)")}, sc.source).run()
    assert o.within(TOLERANCE), o.deviations()
    assert o.columns["HST (orig)"] == o.columns["Python HST (orig)"]
    # the jiffies column starves the slow paths; the ktime one does not
    assert o.columns["HST (orig)"]["sdg"] < 0.01 < o.columns["HST (ktime)"]["sdg"]


def test_run_report_and_sweep_point_with_a_c_selector(md, tmp_path):
    from mpathlab.report.html import run_report
    from mpathlab.runner import parse_selector_spec, run_simulation
    from mpathlab.scenarios import HERE
    from mpathlab.sweep import run_point
    from mpathlab.workload.fio import parse_fio
    from mpathlab.topology import load_topology
    import tomllib
    name = c_name(md, "queue-length")
    assert parse_selector_spec(name + ":1") == (name, ["1"])
    topo_path = os.path.join(HERE, "hst-2020.toml")
    job = "[j]\nrw=randwrite\nbs=4k\nioengine=libaio\niodepth=8\nnumber_ios=2000\n"
    res_c = run_simulation(load_topology(topo_path), parse_fio(job), selector=name, seed=3)
    res_py = run_simulation(load_topology(topo_path), parse_fio(job), selector="queue-length", seed=3)
    from mpathlab.sim import fast
    # the kernel's C selector is a Python selector to the engine: the compiled core calls it
    assert res_c.shares == res_py.shares and res_c.engine == ("compiled" if fast.available() else "python")
    page = run_report({name: res_c, "queue-length": res_py}, "t")
    assert name in page
    with open(topo_path, "rb") as f:
        doc = tomllib.load(f)
    row = run_point(doc, "hst-2020.toml", HERE, job.replace("iodepth=8\n", ""),
                    {"selector": name, "iodepth": 8, "seed": 3, "set": {}})
    assert row["share_sdd"] == res_py.shares["sdd"]


def test_cli_build_run_and_diff(md, capsys, tmp_path):
    rr = os.path.join(md, "dm-ps-round-robin.c")
    assert main(["kernel-selector", "build", rr]) == 0
    out = capsys.readouterr().out
    assert "path selector round-robin, features 0x0" in out and "--selector c:%s" % rr in out
    assert main(["kernel-selector", "diff", rr, "round-robin", "--traces", "200"]) == 0
    assert "200 traces, 0 divergences" in capsys.readouterr().out
    assert main(["kernel-selector", "diff", rr, "round-robin", "--traces", "200",
                 "--shim-fault", "list_move_tail_to_head"]) == 4
    out = capsys.readouterr().out
    assert "minimal trace" in out and "select nr_bytes" in out
    job = tmp_path / "j.fio"
    job.write_text("[j]\nrw=randread\nbs=4k\nioengine=libaio\niodepth=4\nnumber_ios=500\n")
    assert main(["run", "--table", "0 100 multipath 0 0 1 1 round-robin 0 2 1 sda 1 sdb 1", str(job),
                 "--selector", "c:" + rr, "--json", "--no-progress"]) == 0
    assert json.loads(capsys.readouterr().out)["jobs"]
    # bad input: one line, exit 3
    assert main(["kernel-selector", "build", str(tmp_path / "dm-ps-none.c")]) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "dm-ps-none.c" in err
    broken = tmp_path / "dm-ps-broken.c"
    broken.write_text("#include <linux/module.h>\nint x = ;\n")
    assert main(["kernel-selector", "build", str(broken)]) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "dm-ps-broken.c:2" in err and "error" in err


def test_a_selector_file_outside_a_kernel_tree_uses_the_fallback_headers(md, tmp_path):
    """A developer's copy kept elsewhere (here a temporary copy, never in the repository)."""
    from mpathlab import kernelc
    from mpathlab.kernelc.diff import run_diff
    src = tmp_path / "dm-ps-queue-length.c"
    with open(os.path.join(md, "dm-ps-queue-length.c"), "rb") as f:
        src.write_bytes(f.read())
    assert not (tmp_path / "dm-path-selector.h").exists()
    res = run_diff(kernelc.load(str(src)), "queue-length", 300, seed=5)
    assert res.divergence is None, res.divergence.format()


def test_c_name_round_trip():
    from hypothesis import given, strategies as st
    from mpathlab import kernelc
    from mpathlab.kernelc import BuildError

    @given(st.text(st.characters(blacklist_characters="@:\0", blacklist_categories=("Z", "Cc", "Cs")),
                   min_size=1, max_size=30),
           st.one_of(st.none(), st.integers(0, 2 ** 32 - 1)),
           st.lists(st.sampled_from(sorted(kernelc.SHIM_FAULTS)), max_size=2))
    def check(stem, features, faults):
        path = os.path.join("/tmp", stem + ".c")
        name = kernelc.canonical_name(path, features, faults)
        assert kernelc.parse_name(name) == (os.path.abspath(path), features, tuple(faults))

    check()
    for bad in ("c:", "c:x.c@features=z", "c:x.c@colour=red", "x.c"):
        with pytest.raises(BuildError):
            kernelc.parse_name(bad)
    with pytest.raises(BuildError):
        kernelc.canonical_name("/tmp/a b.c")


def test_shim_sscanf_agrees_with_the_kernel_u32_parser(md):
    """The shim's sscanf("%u%c") against mpathlab.kernel.parse_u32 (both the kernel's rules), through
    service-time's relative_throughput (accepted iff a u32 <= 100, printed back by status)."""
    from hypothesis import given, settings, strategies as st
    from mpathlab.kernel import parse_u32
    cls = lookup(c_name(md, "service-time"))
    alphabet = st.sampled_from(list("0123456789+- \t\xa0x") + ["\n", "a"])

    @settings(max_examples=400, deadline=None)
    @given(st.one_of(st.text(alphabet, max_size=24), st.integers(0, 2 ** 70).map(str)))
    def check(tok):
        ps = cls([], clock=FakeClock())
        v = parse_u32(tok)
        try:
            ps.add_path("p", ["1", tok])
        except SelectorError as e:
            assert v is None or v > 100, tok
            assert e.message == "service-time ps: invalid relative_throughput value"
            return
        assert v is not None and v <= 100, tok
        assert ps.status("p", "table") == "1 %d " % v

    check()


def test_a_patched_hst_reading_sched_clock_reproduces_the_2020_depth64_run(md, tmp_path):
    """A developer's patched file works the same: a temporary copy of the 6.1 HST whose select_path
    reads sched_clock(), as 5.8-5.17 did.  The shim's sched_clock() is the topology's select clock
    (hst_select_clock = "sched_clock", 2 s ahead), so at depth 64, where "now" matters, the patched C
    file and the Python HST (which models that clock) make the same run, and match the 2020 table."""
    with open(os.path.join(md, "dm-ps-historical-service-time.c")) as f:
        text = f.read()
    assert text.count("u64 time_now = ktime_get_ns();") == 1
    patched = tmp_path / "dm-ps-historical-service-time.c"
    patched.write_text(text.replace("u64 time_now = ktime_get_ns();", "u64 time_now = sched_clock();"))
    sc = SCENARIOS["hst-2020-depth64"]
    cols = [Column("HST", "c:%s" % patched), Column("stock 6.1 HST", c_name(md, "historical-service-time")),
            Column("Python HST", "historical-service-time")]
    o = Scenario(sc.name, sc.title, sc.topology, sc.job, cols, {"HST": sc.published["HST"]}, sc.source).run()
    assert o.columns["HST"] == o.columns["Python HST"]
    assert o.within(TOLERANCE), o.deviations()
    # the stock file (ktime in select_path) runs differently on the same workload
    assert o.columns["stock 6.1 HST"] != o.columns["HST"]


def test_sweep_on_dask_with_a_c_selector(md, tmp_path, capsys):
    from mpathlab.scenarios import HERE
    from mpathlab.sweep import read_rows
    job = tmp_path / "j.fio"
    job.write_text("[j]\nrw=randwrite\nbs=4k\nnumber_ios=1000\n")
    out = tmp_path / "s.csv"
    name = c_name(md, "round-robin")
    assert main(["sweep", os.path.join(HERE, "hst-2020.toml"), str(job), "--selectors", name + ",round-robin",
                 "--iodepths", "4", "--workers", "1", "--out", str(out), "--no-progress"]) == 0
    rows = read_rows(str(out))
    by = {r["selector"]: r for r in rows}
    assert set(by) == {name, "round-robin"}
    assert float(by[name]["share_sdd"]) == float(by["round-robin"]["share_sdd"]) == 0.25
