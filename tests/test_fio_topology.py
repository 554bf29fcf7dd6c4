import os

import pytest

from mpathlab.workload.fio import FioError, parse_fio
from mpathlab.topology import TopologyError, load_topology, rewrite_selector, topology_from_dict
from mpathlab.scenarios import HERE


def test_global_defaults_and_job_override():
    f = parse_fio("""
; comment
# another
[global]
rw=randwrite
bs=4k
size=1m
ioengine=libaio
direct=1

[a]
iodepth=8

[b]
rw=randrw
rwmixread=70
bs=64k
numjobs=2
runtime=3
time_based
""")
    a, b = f.jobs
    assert (a.rw, a.bs, a.iodepth, a.total_ios, a.read_fraction, a.random) == ("randwrite", 4096, 8, 256, 0.0, True)
    assert (b.rw, b.bs, b.numjobs, b.read_fraction, b.time_based) == ("randrw", 65536, 2, 0.7, True)
    assert b.runtime_ns == 3 * 10 ** 9
    assert b.total_ios == (1 << 20) // 65536
    assert f.global_options["rw"] == "randwrite"
    assert "time_based" not in b.options      # valueless booleans are not echoed (fio quirk)
    assert b.options["rwmixread"] == "70"


def test_env_expansion(monkeypatch):
    monkeypatch.setenv("DEPTH", "32")
    assert parse_fio("[j]\nioengine=libaio\niodepth=${DEPTH}\nsize=4k\n").jobs[0].iodepth == 32
    assert parse_fio("[j]\nbs=${NOPE}8k\nsize=64k\n").jobs[0].bs == 8192   # unset: empty string, as fio
    with pytest.raises(FioError, match=r"\$\{NOPE\} is not set"):
        parse_fio("[j]\nioengine=libaio\niodepth=${NOPE}\nsize=4k\n")


@pytest.mark.parametrize("text,msg", [
    ("[j]\nfrobnicate=1\nsize=1m\n", "line 2 [j]: unknown fio option 'frobnicate'"),
    ("[j]\nrw=sideways\nsize=1m\n", "rw=sideways: 'sideways' is not one of"),
    ("[j]\nbs=4q\nsize=1m\n", "unit 'q' is not one fio knows (it would read '4q' as 4 bytes)"),
    ("[j]\nioengine=libaio\niodepth=0\nsize=1m\n", "iodepth=0: must be between 1 and 65536"),
    ("[j]\nioengine=libaio\niodepth=x\nsize=1m\n", "iodepth=x: 'x' is not a number"),
    ("[global]\nbs=4k\n", "no job sections"),
    ("bs=4k\n[j]\n", "outside any [section]"),
    ("[j\nbs=4k\n", "malformed section header"),
    ("[j]\nsize=1m\nrwmixread=101\n", "rwmixread=101: must be between 0 and 100"),
    ("[j]\nsize=1m\nbs\n", "option 'bs' needs a value"),
    ("[j]\nsize=1m\nruntime=abc\n", "runtime=abc: 'abc' is not a time"),
])
def test_fio_errors_name_the_problem(text, msg):
    with pytest.raises(FioError) as ei:
        parse_fio(text, "job.fio")
    assert msg in str(ei.value)
    assert "job.fio" in str(ei.value)


def test_shipped_topologies_load():
    for name in ("hst-2020.toml", "hst-ktime-bio-10disk.toml"):
        t = load_topology(os.path.join(HERE, name))
        assert t.paths and t.table.startswith("0 1048576 multipath")
    t = load_topology(os.path.join(HERE, "hst-2020.toml"))
    assert t.sched_clock_offset_ns == 2 * 10 ** 9
    assert [p.parallelism for p in t.paths] == [12] * 4
    assert t.paths[3].service.mean_ns == 400_000


def _doc(**mp):
    d = {"multipath": {"table": "0 100 multipath 0 0 1 1 round-robin 0 1 0 sda"},
         "paths": {"sda": {"devt": "8:0", "service": "100us"}}}
    d["multipath"].update(mp)
    return d


@pytest.mark.parametrize("mutate,msg", [
    (lambda d: d.pop("multipath"), "needs a [multipath] section"),
    (lambda d: d.pop("paths"), "needs [paths.NAME] sections"),
    (lambda d: d["paths"]["sda"].update(parallelism=0), "parallelism must be a whole number >= 1"),
    (lambda d: d["paths"]["sda"].update(service={"dist": "weibull", "mean": "1ms"}), "dist must be"),
    (lambda d: d["paths"]["sda"].update(service={"dist": "exponential"}), "missing mean"),
    (lambda d: d["paths"]["sda"].update(colour="red"), "unknown key(s) colour"),
    (lambda d: d["paths"]["sda"].update(delay="soon"), "cannot read 'soon' as a duration"),
    (lambda d: d["paths"]["sda"].update(devt="sda"), "devt must be"),
    (lambda d: d["multipath"].update(table="0 100 multipath 0 0 1 1 round-robin 0 1 0 sdz"), "table rejected"),
    (lambda d: d["multipath"].update(table="0 100 multipath 0 0 1 1 nope 0 1 0 sda"), "unknown path selector type"),
    (lambda d: d["multipath"].update(hz=123), "hz must be one of"),
    (lambda d: d["multipath"].update(hst_select_clock="tsc"), "hst_select_clock must be"),
    (lambda d: d["paths"]["sda"].update(faults=[{"at": "1s"}]), "needs at and action"),
    (lambda d: d["paths"]["sda"].update(faults=[{"at": "1s", "action": "explode"}]), "faults[0].action must be one of"),
    (lambda d: d.update(extra={}), "unknown section(s) extra"),
    # the compiled core takes a seed of 64 bits, as --seed does
    (lambda d: d["multipath"].update(seed=2 ** 64), "seed must be an integer from 0 to 18446744073709551615"),
    (lambda d: d["multipath"].update(seed=-1), "seed must be an integer from 0 to"),
])
def test_topology_errors(mutate, msg):
    d = _doc()
    mutate(d)
    with pytest.raises(TopologyError) as ei:
        topology_from_dict(d, "t.toml")
    assert msg in str(ei.value)


def test_empirical_service_from_file(tmp_path):
    lat = tmp_path / "lat.txt"
    lat.write_text("# latencies in us\n100\n200\n300us\n1ms\n")
    d = _doc()
    d["paths"]["sda"]["service"] = {"dist": "empirical", "file": "lat.txt"}
    t = topology_from_dict(d, "t.toml", str(tmp_path))
    assert t.paths[0].service.mean_ns == (100e3 + 200e3 + 300e3 + 1e6) / 4


def test_rewrite_selector_keeps_features_and_paths():
    line = "0 100 multipath 1 queue_if_no_path 0 2 1 round-robin 0 1 1 8:0 1 round-robin 0 1 1 8:16 1"
    assert rewrite_selector(line, "historical-service-time", ["972", "2"]) == (
        "0 100 multipath 1 queue_if_no_path 0 2 1 historical-service-time 2 972 2 1 0 8:0 "
        "historical-service-time 2 972 2 1 0 8:16")
    assert rewrite_selector(line, "dm-ps-io-affinity") == (
        "0 100 multipath 1 queue_if_no_path 0 2 1 io-affinity 0 1 1 8:0 1 io-affinity 0 1 1 8:16 2")


@pytest.mark.parametrize("text,msg", [
    ("1,18446744073709551616", "--seeds: 18446744073709551616 is outside 0..18446744073709551615"),
    ("-1", "--seeds: -1 is outside 0..18446744073709551615"),
    ("1,x", "--seeds: cannot read '1,x' as a comma-separated list"),
    (" , ", "--seeds: empty list"),
])
def test_seed_lists_take_the_range_of_seed(text, msg):
    """sweep, report and hosts read --seeds alike, in --seed's range (the compiled core takes 64 bits)."""
    from mpathlab.inputs import InputError, seed_list
    with pytest.raises(InputError) as ei:
        seed_list(text)
    assert str(ei.value) == msg


def test_seed_lists_take_both_ends_of_the_range():
    from mpathlab.inputs import seed_list
    assert seed_list("0, 18446744073709551615") == [0, 2 ** 64 - 1]
