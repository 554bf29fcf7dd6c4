"""Kernel profiles, the host facts the kernel checks, and their plumbing into the target, the selectors,
topologies, the simulator and the CLI.  Capture comparisons are in test_kernel_captures.py."""
import errno

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpathlab import selectors
from mpathlab.cli import main
from mpathlab.kernel import EINVAL, EOVERFLOW, BitmapParseError, bitmap_parse
from mpathlab.profiles import (DEFAULT_SCHED_CLOCK_LEAD_NS, HISTORY, PROFILES, DeviceFact, Host, ProfileError,
                               get_profile, markdown_table)
from mpathlab.selectors import CpuTopology, SelectorError
from mpathlab.sim.engine import Simulation
from mpathlab.timing import TimeBase
from mpathlab.target import MessageError, TargetError, parse
from mpathlab.workload.fio import parse_fio
from mpathlab.topology import TopologyError, topology_from_dict

RR2 = "0 2097152 multipath 0 0 1 1 round-robin 0 2 1 252:0 1 252:1 1"


def test_named_profiles_and_their_upstream_facts():
    assert list(PROFILES) == ["5.8", "5.15", "6.1", "6.12", "current"]
    assert get_profile(None) is PROFILES["current"]
    p58, p515, p61, p612, cur = (PROFILES[n] for n in PROFILES)
    assert [p.hst_select_clock for p in (p58, p515, p61, p612, cur)] == ["sched_clock"] * 2 + ["ktime"] * 3
    assert [p.hr_timer_bio for p in (p58, p515, p61, p612, cur)] == [False, False, True, True, True]
    assert [p.ima for p in (p58, p515, p61, p612, cur)] == [False, True, True, True, True]
    # From the captures' `dmsetup targets` / `dmsetup version`.
    assert (p61.target_version, p61.dm_version) == ((1, 14, 0), "4.47.0")
    assert (p612.target_version, p612.dm_version) == ((1, 14, 0), "4.48.0")
    assert (cur.target_version, cur.dm_version) == ((1, 15, 0), "4.50.0")
    assert (p61.missing_path_errno, p612.missing_path_errno) == (errno.ENODEV, errno.ENOENT)
    assert (p61.message_opens_device, p612.message_opens_device) == (True, False)
    assert not p58.has_selector("io-affinity") and p515.has_selector("io-affinity")
    assert "ce40426fdc3c" in p61.where("hst_select_clock")
    assert p58.where("hst_select_clock") == ""        # no change applies yet
    for b in HISTORY:                                   # every behaviour says where it changed
        assert b.changes and all(c.where for c in b.changes)
    table = markdown_table()
    assert table.count("\n") == len(HISTORY) + 1 and "| 4.47.0 | 4.48.0 |" in table


def test_other_releases_evaluate_the_same_history():
    p = get_profile("5.7")
    assert not p.historical_service_time and not p.io_affinity and p.target_version == (1, 13, 0)
    assert get_profile("v6.1") is PROFILES["6.1"] and get_profile("linux-6.12") is PROFILES["6.12"]
    assert get_profile("5.19").hr_timer_bio and not get_profile("5.18").hr_timer_bio
    assert get_profile("5.18").hst_select_clock == "ktime"
    for bad in ("", "7", "99.1", "6.99", "stable", "6.x", "4.5", "2.6"):
        with pytest.raises(ProfileError):
            get_profile(bad)


def test_a_kernel_without_a_selector_refuses_it_by_name():
    with pytest.raises(selectors.UnknownSelectorError):
        selectors.create("historical-service-time", kernel="5.7")
    with pytest.raises(TargetError) as ei:
        parse("0 8 multipath 0 0 1 1 historical-service-time 0 1 0 8:16", kernel="5.7")
    assert ei.value.message == "unknown path selector type" and ei.value.errno == EINVAL
    with pytest.raises(TargetError):
        parse("0 8 multipath 0 0 1 1 io-affinity 0 1 1 8:16 1", kernel="5.8")
    parse("0 8 multipath 0 0 1 1 io-affinity 0 1 1 8:16 1", kernel="5.15")


def test_hst_select_clock_follows_the_profile():
    t = [10 ** 9]
    old = selectors.create("historical-service-time", clock=lambda: t[0], kernel="5.8")
    new = selectors.create("historical-service-time", clock=lambda: t[0], kernel="6.1")
    assert old.select_clock() == t[0] + DEFAULT_SCHED_CLOCK_LEAD_NS
    assert new.select_clock() == t[0]
    m = parse("0 8 multipath 0 0 1 1 historical-service-time 0 1 0 8:16", kernel="5.15",
              timebase=TimeBase(lambda: t[0]))
    assert m.priority_groups[0].ps.select_clock() == t[0] + DEFAULT_SCHED_CLOCK_LEAD_NS


def test_bio_start_time_follows_the_profile_and_the_switch_overrides_it():
    line = "0 8 multipath 2 queue_mode bio 0 1 1 historical-service-time 0 1 0 8:16"
    assert parse(line, kernel="5.15").force_jiffies_start
    assert not parse(line, kernel="6.1").force_jiffies_start
    assert not parse(line, kernel="5.15", force_jiffies_start=False).force_jiffies_start
    assert parse(line, kernel="6.1", force_jiffies_start=True).force_jiffies_start


def test_ima_numbers_follow_the_profile():
    assert "target_version=1.14.0," in parse(RR2, kernel="6.12").status("ima")
    assert "target_version=1.15.0," in parse(RR2).status("ima")
    with pytest.raises(ProfileError):
        parse(RR2, kernel="5.8").status("ima")


def test_host_facts_devices_and_handlers():
    host = Host([DeviceFact((8, 16), "scsi", "sdb"), DeviceFact((259, 0), "nvme", "nvme0n1")], 4)
    m = parse("0 8 multipath 0 1 alua 1 1 round-robin 0 2 1 sdb 1 /dev/sdb 1", kernel="6.1", host=host)
    assert m.table() == "0 1 alua 1 1 round-robin 0 2 1 8:16 1 8:16 1 "
    with pytest.raises(TargetError) as ei:
        parse("0 8 multipath 0 1 alua 1 1 round-robin 0 1 1 259:0 1", kernel="6.1", host=host)
    assert (ei.value.message, ei.value.errno) == ("error attaching hardware handler", errno.ENODEV)
    with pytest.raises(TargetError) as ei:    # scsi_dh has no such handler
        parse("0 8 multipath 0 1 foo 1 1 round-robin 0 1 1 8:16 1", kernel="6.1", host=host)
    assert (ei.value.message, ei.value.errno) == ("error attaching hardware handler", errno.EINVAL)
    # bio-based drops the handler before any device is looked at
    parse("0 8 multipath 2 queue_mode bio 1 alua 1 1 round-robin 0 1 1 259:0 1", kernel="6.1", host=host)
    for token, kernel, err in (("8:32", "6.1", errno.ENXIO), ("8:32", "6.12", errno.ENXIO),
                               ("sdz", "6.1", errno.ENODEV), ("sdz", "6.12", errno.ENOENT),
                               ("4096:0", "6.1", errno.EOVERFLOW), ("8:1048576", "6.12", errno.EOVERFLOW)):
        with pytest.raises(TargetError) as ei:
            parse("0 8 multipath 0 0 1 1 round-robin 0 1 1 %s 1" % token, kernel=kernel, host=host)
        assert (ei.value.message, ei.value.errno) == ("error getting device", err), (token, kernel)
    # without host facts every device exists and takes any handler (the old behaviour)
    parse("0 8 multipath 0 1 alua 1 1 round-robin 0 1 1 259:0 1", kernel="6.1")


def test_messages_name_devices_as_each_kernel_does():
    host = Host.null_blk(4, nr_cpu_ids=2)
    for kernel, token, err, logged in (("6.1", "9:9", errno.ENXIO, True), ("6.12", "9:9", errno.EINVAL, False),
                                       ("6.1", "nosuch", errno.ENODEV, True),
                                       ("6.12", "nosuch", errno.ENOENT, True),
                                       ("6.1", "252:3", errno.EINVAL, False),   # exists, not in the table
                                       ("6.12", "4096:1", errno.EOVERFLOW, True)):
        m = parse(RR2, kernel=kernel, host=host)
        with pytest.raises(MessageError) as ei:
            m.message("fail_path", token)
        assert ei.value.errno == err, (kernel, token)
        assert bool(m.dmesg) == logged, (kernel, token)
    m = parse(RR2, kernel="6.1", host=host)
    m.message("fail_path", "nullb1")         # a name the host knows resolves
    assert [p.is_active for p in m.pgpaths] == [True, False]


def test_selector_warnings_reach_the_kernel_log():
    m = parse("0 8 multipath 0 0 1 1 round-robin 0 2 1 8:16 1000 8:32 1")
    assert list(m.dmesg) == ["device-mapper: multipath round-robin: repeat_count > 1 is deprecated, "
                             "using 1 instead"]
    with pytest.raises(TargetError) as ei:
        parse("0 8 multipath 0 0 1 1 io-affinity 0 2 1 8:16 1 8:32 1")
    assert ei.value.dmesg_lines == ["device-mapper: multipath io-affinity: CPU mapping for 0 exists. Ignoring."]


def test_io_affinity_masks_as_lib_bitmap_parses_them():
    host = Host([DeviceFact((8, 16)), DeviceFact((8, 32))], nr_cpu_ids=2)
    m = parse("0 8 multipath 0 0 1 1 io-affinity 0 2 1 8:16 x00000001 8:32 2", kernel="6.1", host=host)
    assert m.table() == "0 0 1 1 io-affinity 0 2 1 8:16 1 8:32 2 "     # nr_cpu_ids = 2: one hex digit
    for mask in ("100", "3g", "123456789", "1,1"):
        with pytest.raises(TargetError) as ei:
            parse("0 8 multipath 0 0 1 1 io-affinity 0 1 1 8:16 %s" % mask, host=host)
        assert (ei.value.message, ei.value.errno) == ("io-affinity ps: invalid cpumask", EINVAL), mask


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 96), st.data())
def test_bitmap_parse_round_trips_and_skips_one_char_before_full_groups(nbits, data):
    mask = data.draw(st.integers(0, (1 << nbits) - 1))
    groups = []
    v = mask
    while True:
        groups.append(v & 0xFFFFFFFF)
        v >>= 32
        if not v:
            break
    # Full groups of eight digits, each may carry one junk character in front (stepped past unread).
    junk = data.draw(st.lists(st.sampled_from(["", "x", "#", ",", " "]), min_size=len(groups),
                              max_size=len(groups)))
    text = ",".join(j + "%08x" % g for j, g in zip(junk, reversed(groups)))
    assert bitmap_parse(text, nbits) == mask


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet="0123456789abcdefxX, \n#", max_size=30), st.integers(1, 80))
def test_bitmap_parse_fails_only_with_its_two_errors_and_io_affinity_says_einval(text, nbits):
    try:
        v = bitmap_parse(text, nbits)
        assert 0 <= v < (1 << nbits)
    except BitmapParseError as e:
        assert e.errno in (EINVAL, EOVERFLOW)
    ps = selectors.create("io-affinity", topology=CpuTopology(nbits))
    try:
        ps.add_path("p", [text])
    except SelectorError as e:
        assert e.errno == EINVAL
        assert e.message in ("io-affinity ps: invalid cpumask", "io-affinity ps: No new/valid CPU mapping found")


def _doc(**mp):
    d = {"multipath": dict({"table": "0 1024 multipath 2 queue_mode bio 0 1 1 historical-service-time 0 2 0 "
                                     "sda sdb"}, **mp),
         "paths": {"sda": {"devt": "8:0", "service": {"dist": "exponential", "mean": "100us"}},
                   "sdb": {"devt": "8:16", "service": {"dist": "exponential", "mean": "400us"}}}}
    return d


JOB = parse_fio("[j]\nrw=randwrite\nbs=4k\nioengine=libaio\niodepth=8\nnumber_ios=3000\n").jobs


def _shares(topo, **kw):
    r = Simulation(topo.table, topo.paths, JOB, **dict(topo.sim_kwargs(), **kw)).run()
    return [p["completed"] for p in r.paths]


def test_topology_kernel_equals_the_switches_it_stands_for():
    old = topology_from_dict(_doc(kernel="5.15"))
    switches = topology_from_dict(_doc(force_jiffies_start=True, hst_select_clock="sched_clock",
                                       sched_clock_offset="2s"))
    assert _shares(old) == _shares(switches)
    new = topology_from_dict(_doc(kernel="6.1"))
    assert _shares(new) == _shares(topology_from_dict(_doc()))
    assert _shares(new) != _shares(old)
    # an explicit switch overrides the profile
    assert _shares(topology_from_dict(_doc(kernel="5.15", force_jiffies_start=False,
                                           hst_select_clock="ktime"))) == _shares(new)


def test_topology_kinds_and_refusals():
    d = _doc(kernel="6.1")
    d["multipath"]["table"] = "0 1024 multipath 0 1 alua 1 1 round-robin 0 2 0 sda sdb"
    d["paths"]["sda"]["kind"] = "scsi"
    topology_from_dict(d)                                   # sdb's kind is not said: no check
    d["paths"]["sdb"]["kind"] = "nvme"
    with pytest.raises(TopologyError, match="error attaching hardware handler"):
        topology_from_dict(d)
    d["paths"]["sdb"]["kind"] = "floppy"
    with pytest.raises(TopologyError, match="kind must be one of"):
        topology_from_dict(d)
    with pytest.raises(TopologyError, match="unknown kernel profile"):
        topology_from_dict(_doc(kernel="2.4"))
    with pytest.raises(TopologyError, match="no such module parameter"):
        topology_from_dict(_doc(kernel="5.6", queue_if_no_path_timeout_secs=5))
    d = _doc(kernel="5.8")
    d["multipath"]["table"] = "0 1024 multipath 0 0 1 1 io-affinity 0 2 1 sda 1 sdb 2"
    with pytest.raises(TopologyError, match="unknown path selector type"):
        topology_from_dict(d)


def test_cli_kernel_and_host(capsys):
    line = "0 2097152 multipath 0 0 1 1 round-robin 0 2 1 252:0 1 252:1 1"
    assert main(["table", "--status", "ima", "--kernel", "6.1", line]) == 0
    assert "target_version=1.14.0," in capsys.readouterr().out
    assert main(["table", "--kernel", "5.8", "--status", "ima", line]) == 3
    assert "no IMA" in capsys.readouterr().err
    assert main(["table", "--kernel", "6.1", "--device", "252:0=null_blk", "--device", "252:1=null_blk",
                 "0 2097152 multipath 0 1 alua 1 1 round-robin 0 2 1 252:0 1 252:1 1"]) == 3
    assert "error attaching hardware handler" in capsys.readouterr().err
    assert main(["table", "--kernel", "9.9", line]) == 3
    assert "unknown kernel profile" in capsys.readouterr().err
    assert main(["table", "--device", "252:0=null_blk", "--device", "252:1=null_blk", "--nr-cpus", "2",
                 "0 2097152 multipath 0 0 1 1 io-affinity 0 2 1 252:0 x00000001 252:1 2"]) == 0
    assert capsys.readouterr().out == "0 2097152 multipath 0 0 1 1 io-affinity 0 2 1 252:0 1 252:1 2 \n"


def test_readme_table_is_the_generated_one():
    import os
    readme = open(os.path.join(os.path.dirname(__file__), "..", "docs", "kernel-profiles.md")).read()
    body = readme.split("<!-- kernel-profiles-table -->\n", 1)[1].split("\n<!-- /kernel-profiles-table -->", 1)[0]
    assert body == markdown_table()


def test_a_sweep_point_runs_under_its_kernel():
    # run_point is what a Dask worker runs; --kernels adds ("multipath.kernel", [...]) to the --set list.
    from mpathlab.sweep import run_point
    doc = _doc()
    job = "[j]\nrw=randwrite\nbs=4k\nioengine=libaio\niodepth=8\nnumber_ios=3000\n"
    rows = {k: run_point(doc, "t", ".", job, {"selector": "historical-service-time", "iodepth": 8, "seed": 1,
                                              "set": {"multipath.kernel": k}}) for k in ("5.15", "6.1")}
    assert rows["5.15"]["multipath.kernel"] == "5.15"
    assert rows["5.15"] != rows["6.1"]
    with pytest.raises(TopologyError, match="must be a string"):
        topology_from_dict(_doc(kernel=6.1))


def test_live_refuses_a_selector_the_kernel_lacks(tmp_path):
    from mpathlab.live import LiveError, LiveRun
    with pytest.raises(LiveError, match="unknown path selector type"):
        LiveRun([str(tmp_path / "a")], "historical-service-time", JOB, kernel="5.7")


@pytest.mark.parametrize("kernel", ["5.8", "5.15", "6.1", "current"])
def test_compiled_core_follows_the_profile_too(kernel):
    from mpathlab.sim import fast
    if not fast.available():
        pytest.skip("compiled core not built")
    topo = topology_from_dict(_doc(kernel=kernel))
    a = Simulation(topo.table, topo.paths, JOB, engine="python", **topo.sim_kwargs()).run()
    b = Simulation(topo.table, topo.paths, JOB, engine="compiled", **topo.sim_kwargs()).run()
    assert (a.engine, b.engine) == ("python", "compiled")
    assert [p["completed"] for p in a.paths] == [p["completed"] for p in b.paths]
    assert a.status_info == b.status_info and a.status_table == b.status_table


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=12), st.from_regex(r"v?[0-9]{1,2}\.[0-9]{1,3}(\.[0-9]+)?", fullmatch=True)))
def test_profile_names_parse_or_fail_with_profile_error(name):
    try:
        p = get_profile(name)
    except ProfileError:
        return
    assert (4, 6) <= p.version <= PROFILES["current"].version
    assert set(p.values) == {b.key for b in HISTORY}


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.text(max_size=10), st.integers(), st.floats(allow_nan=False), st.booleans(),
                 st.sampled_from(["6.1", "5.8", "current", "5.7", "4.5"])),
       st.one_of(st.text(max_size=8), st.integers(), st.sampled_from(["scsi", "nvme", "null_blk", ""])))
def test_topology_kernel_and_kind_values_fail_only_as_topology_errors(kernel, kind):
    d = _doc(kernel=kernel)
    d["paths"]["sda"]["kind"] = kind
    try:
        topology_from_dict(d)
    except TopologyError as e:
        assert str(e).startswith("topology: ")


def test_cli_faults_under_a_kernel(capsys):
    import json
    out = {}
    for k in ("5.8", "6.1"):
        assert main(["faults", "slow-path-20x", "--selector", "historical-service-time", "--kernel", k,
                     "--json"]) == 0
        out[k] = json.loads(capsys.readouterr().out)[0]
    # HST as merged (sched_clock in select_path) limits the stale winner: more I/O stays on the slow path.
    assert out["5.8"] != out["6.1"]
    assert main(["faults", "slow-path-20x", "--kernel", "1.0"]) == 3
