"""How many I/Os a job does with size, filesize, nrfiles, io_size, loops and
number_ios, as fio 3.33 counts them (backend.c: do_io's passes, keep_running,
exceeds_number_ios).  The expected counts were captured from
``fio --name=x --ioengine=null --output-format=json --OPTION...`` (fio 3.33);
the property test asks the fio binary itself."""
import json
import shutil
import subprocess

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from conftest import require
from mpathlab.sim.devices import PathModel, ServiceTime
from mpathlab.sim.engine import simulate
from mpathlab.workload.fio import FioError, parse_fio

T2 = "0 2097152 multipath 0 0 1 1 service-time 0 2 2 sda 1 1 sdb 1 1"
DEVICE_BYTES = 2097152 * 512


def _job(opts):
    j, = parse_fio("[x]\n" + "\n".join(opts.split()) + "\n", "t.fio").jobs
    return j


FIO_3_33 = [
    ("rw=randread bs=4k size=1m io_size=2m loops=2", 512),          # not 2m x 2: passes cover 1m each
    ("rw=read bs=4k size=1m io_size=2560k loops=2", 768),
    ("rw=write bs=4k size=1m io_size=3m loops=2", 768),
    ("rw=randread bs=4k size=1m io_size=512k loops=3", 384),        # io_size within the size: x loops
    ("rw=randread bs=4k size=1m io_size=2560k", 640),
    ("rw=randwrite bs=64k size=256k io_size=5000k", 79),             # the I/O crossing io_size still goes out
    ("rw=randread bs=64k size=1000k io_size=1500k loops=3", 45),     # 15 whole blocks per pass
    ("rw=read bs=64k size=1000k io_size=60k", 1),
    ("rw=read bs=64k size=1000k loops=2", 30),
    ("rw=read bs=64k filesize=1000k", 16),                          # filesize is not rounded down: the tail
    ("rw=randread bs=64k filesize=1000k", 15),
    ("rw=write bs=12k filesize=64k io_size=512k loops=2", 42),
    ("rw=randread bs=4k filesize=1m nrfiles=2 io_size=3m loops=2", 1024),
    ("rw=randread bs=4k size=1m number_ios=10 loops=3", 30),         # number_ios counts over all loops
    ("rw=randread bs=4k size=1m number_ios=300 loops=3", 768),
    ("rw=randread bs=4k size=1m io_size=2m number_ios=300", 300),
    ("rw=trimwrite bs=4k size=1m number_ios=10", 20),               # fio doubles number_ios: 10 trims, 10 writes
    ("rw=randtrimwrite bs=4k size=1m number_ios=300", 512),
]


@pytest.mark.parametrize("opts,ios", FIO_3_33)
def test_counts_as_fio_3_33(opts, ios):
    assert _job(opts).ios_for(DEVICE_BYTES) == ios
    paths = [PathModel("sda", (8, 0), ServiceTime(10_000)), PathModel("sdb", (8, 16), ServiceTime(10_000))]
    r = simulate(T2, paths, [_job(opts)])
    r.check_accounting()
    assert r.completed == ios


def test_number_ios_with_time_based_is_ignored_as_fio_3_33_does_and_said():
    # fio 3.33, ioengine=null, time_based runtime=1s number_ios=10: millions of I/Os, not 10
    f = parse_fio("[j]\nrw=randread\nbs=4k\nsize=1m\nnumber_ios=10\ntime_based\nruntime=10ms\n", "t.fio")
    assert f.jobs[0].number_ios is None and "fio 3.33 ignores number_ios" in f.notes[0]
    paths = [PathModel("sda", (8, 0), ServiceTime(100_000)), PathModel("sdb", (8, 16), ServiceTime(100_000))]
    r = simulate(T2, paths, f.jobs)
    assert r.completed == 100            # 10 ms of back-to-back 100 us I/Os at iodepth 1


def test_files_smaller_than_a_block_are_refused_as_fio_does():
    # fio 3.33: "blocksize is larger than data set range", no I/O
    with pytest.raises(FioError, match=r"t\.fio line 5 \[x\]: size 65536 over nrfiles=2 leaves each file less than"):
        _job("rw=randread bs=64k size=64k nrfiles=2")


def _fio_ios(opts):
    p = subprocess.run(["fio", "--name=x", "--ioengine=null", "--output-format=json"]
                       + ["--" + o for o in opts.split()], capture_output=True, text=True)
    if p.returncode:
        return None
    j = json.loads(p.stdout)["jobs"][0]
    return sum(j[d]["total_ios"] for d in ("read", "write", "trim")) or None


_opts = st.builds(
    lambda rw, bs, sz, nf, io, lp, n: " ".join(x for x in ("rw=" + rw, "bs=%dk" % bs, sz, nf, io, lp, n) if x),
    st.sampled_from(["read", "randread", "write", "randwrite"]), st.sampled_from([4, 8, 12, 64]),
    st.builds("{}={}k".format, st.sampled_from(["size", "filesize"]), st.sampled_from([64, 256, 1000, 1024])),
    st.sampled_from(["", "nrfiles=2", "nrfiles=3"]),
    st.sampled_from([""] + ["io_size=%dk" % k for k in (60, 128, 512, 1024, 1500, 2560, 5000)]),
    st.sampled_from(["", "loops=1", "loops=2", "loops=3", "loops=5"]),
    st.sampled_from(["", "number_ios=5", "number_ios=30", "number_ios=400"]))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_opts)
def test_counts_match_the_fio_binary(opts):
    require("fio", "fio 3.33 itself, to count a job's I/Os with ioengine=null")
    expected = _fio_ios(opts)
    try:
        got = _job(opts).ios_for(DEVICE_BYTES)
    except FioError:
        got = None
    assert got == expected, opts
