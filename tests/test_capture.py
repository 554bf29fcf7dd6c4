"""`mpathlab capture`: the collector on dumps recorded in the kernel lab's guest (Debian 6.1 / 6.12 in qemu,
dm-multipath over null_blk paths, taken while fio ran), on the same data laid out as a root directory, on
this machine, the topology it writes run through the simulator, and bad dumps."""
import os
import platform
import shutil
import subprocess
import sys

import pytest

from mpathlab.capture import RootSource, collect, read_dump, script_text, write_topology
from mpathlab.capture.parsers import parse_stat
from mpathlab.cli import main
from mpathlab.runner import run_simulation
from mpathlab.topology import load_topology
from mpathlab.workload.fio import parse_fio

DATA = os.path.join(os.path.dirname(__file__), "data", "capture")
T4Q = os.path.join(DATA, "guest-6.1-nullblk-T4q-st-mq.dump")   # 3 paths at 4 ms + 1 at 16 ms, 4 tags, request-based
H1 = os.path.join(DATA, "guest-6.1-nullblk-H1-st-bio.dump")    # 2 paths at 7 ms, 2 and 6 tags, bio-based
SCSI_MQ = os.path.join(DATA, "guest-6.1-scsi-S1-ql-mq.dump")    # scsi_debug LUNs at 5 ms, queue_depth 2 and 8
SCSI_BIO = os.path.join(DATA, "guest-6.12-scsi-S1-st-bio.dump")  # the same, bio-based, mq-deadline on the LUNs
NVME = os.path.join(DATA, "guest-6.12-nvme-N2-numa-ana.dump")   # nvme-loop, 2 controllers, optimized/non-optimized
HOST = os.path.join(DATA, "host-no-dm.dump")                   # a host without device-mapper
GUEST_DUMPS = sorted(os.path.join(DATA, f) for f in os.listdir(DATA)
                     if f.startswith("guest-") and f.endswith(".dump") and "-nvme-" not in f)
NULLBLK_DUMPS = [d for d in GUEST_DUMPS if "-nullblk-" in d]
JOB = "[j]\nioengine=libaio\nrw=randwrite\nbs=4k\niodepth=16\nruntime=300ms\ntime_based\n"


def dump_sections(path):
    """The dump's raw sections, read here without the package's parser: {(kind, arg): [lines]}, with the
    snapshot number in front of files inside a snapshot."""
    out, cur, snap = {}, None, None
    with open(path) as f:
        for line in f.read().splitlines():
            if line.startswith("|"):
                cur.append(line[1:])
                continue
            kind, _, arg = line[3:].partition(" ")
            if kind == "snap":
                snap = arg.split()[0]
            cur = out.setdefault((kind, arg) if snap is None or kind != "file" else ("snap" + snap, arg), [])
    return out


def meta_paths(dump):
    """The cell's paths as the lab built them: [(label, completion_ns, tags)]."""
    with open(dump[:-len(".dump")] + ".meta") as f:
        return [tuple(line.split()[:3]) for line in f.readlines()[1:] if line.strip()]


@pytest.mark.parametrize("dump", NULLBLK_DUMPS)
def test_guest_dump_gives_the_map_the_lab_built(dump):
    cap = collect(read_dump(dump))
    raw = dump_sections(dump)
    assert cap.release == raw[("file", "/proc/sys/kernel/osrelease")][0]
    assert cap.series in ("6.1", "6.12") and cap.cpus == 2
    (m,) = cap.maps
    table = raw[("cmd", "dmsetup table")][0]
    assert m.name == "mp" and table.startswith("mp: ") and m.table == table[4:].strip()
    built = meta_paths(dump)
    assert [cap.paths[d].name for d in m.path_devts] == [b[0] for b in built]
    for label, _, tags in built:
        (p,) = [p for p in cap.paths.values() if p.name == label]
        assert p.kind == "null_blk" and "nullb" in p.kind_from
        assert p.queue["nr_tags"] == int(tags)          # null_blk's hw_queue_depth
        assert p.queue["nr_hw_queues"] == 2             # submit_queues = 2 guest CPUs
        assert p.queue["scheduler"] == "none"
        assert m.path_state(p.devt_text) == ("A", 0)


@pytest.mark.parametrize("dump", NULLBLK_DUMPS)
def test_service_time_is_ticks_over_ios_between_the_snapshots(dump):
    cap = collect(read_dump(dump))
    raw = dump_sections(dump)
    t0 = float([k[1] for k in raw if k[0] == "snap" and k[1].startswith("0 ")][0].split()[1])
    t1 = float([k[1] for k in raw if k[0] == "snap" and k[1].startswith("1 ")][0].split()[1])
    assert cap.window_s == pytest.approx(t1 - t0)
    for p in cap.paths.values():
        a = [int(x) for x in raw[("snap0", "/sys/block/%s/stat" % p.name)][0].split()]
        b = [int(x) for x in raw[("snap1", "/sys/block/%s/stat" % p.name)][0].split()]
        ios, ticks = b[4] - a[4], b[7] - a[7]        # writes completed, write ticks (fio ran randwrite)
        assert ios > 50
        assert p.service_ms() == (pytest.approx(ticks / ios), ios)


def test_captured_service_times_match_the_paths_the_lab_built():
    # null_blk's timer (scsi_debug's too) completes late under emulation, never early: 4 ms paths took
    # 4-5 ms, 16 ms 16-17 ms; on SCSI paths through the refused-issue and Little's-law corrections
    for dump in GUEST_DUMPS:
        cap = collect(read_dump(dump))
        for label, ns, _ in meta_paths(dump):
            (p,) = [p for p in cap.paths.values() if p.name == label]
            assert int(ns) / 1e6 <= p.service_ms()[0] < int(ns) / 1e6 * 1.2 + 0.3


@pytest.mark.parametrize("dump", GUEST_DUMPS)
def test_topology_round_trip_runs(dump, tmp_path):
    cap = collect(read_dump(dump))
    text = write_topology(cap, cap.maps[0])
    path = tmp_path / "captured.toml"
    path.write_text(text)
    topo = load_topology(str(path))
    assert topo.table == cap.maps[0].table
    assert topo.kernel == cap.series and topo.nr_cpus == 2
    for pm in topo.paths:
        p = [p for p in cap.paths.values() if p.name == pm.name][0]
        assert pm.devt == p.devt
        assert pm.hw_queue_depth == min(x for x in (p.queue["nr_tags"], p.queue.get("queue_depth")) if x)
        assert pm.service.mean_ns == pytest.approx(p.service_ms()[0] * 1e6, abs=100)
    res = run_simulation(topo, parse_fio(JOB))
    assert res.completed > 0
    assert sum(res.shares.values()) == pytest.approx(1.0)
    assert set(res.shares) == {p.name for p in cap.paths.values()}


def test_cli_capture_from_dump_then_run(tmp_path, capsys):
    out = tmp_path / "t.toml"
    assert main(["capture", "--from", T4Q, "-o", str(out)]) == 0
    job = tmp_path / "j.fio"
    job.write_text(JOB)
    capsys.readouterr()
    assert main(["run", str(out), str(job)]) == 0
    printed = capsys.readouterr().out
    for name in ("p0", "p1", "p2", "p3"):
        assert name in printed


def materialize(dump, root):
    """The dump laid out as a root directory (links, directories, files; counters from its first snapshot):
    the same recorded guest, read through the directory collector."""
    src = read_dump(dump)

    def at(path):
        return os.path.join(root, path.lstrip("/"))
    for path, target in sorted(src.links.items()):
        real = os.path.normpath(os.path.join(os.path.dirname(at(path)), target))
        os.makedirs(real, exist_ok=True)
        os.makedirs(os.path.dirname(at(path)), exist_ok=True)
        os.symlink(target, at(path))
    for path, entries in src.dirs.items():
        for e in entries:
            if not os.path.lexists(os.path.join(at(path), e)):
                os.makedirs(os.path.join(at(path), e))
    files = dict(src.files)
    files.update(src.snaps[0][1])
    for path, text in files.items():
        os.makedirs(os.path.dirname(at(path)), exist_ok=True)
        with open(at(path), "w") as f:
            f.write(text)
    return root


def test_root_tree_without_dmsetup_says_what_it_could_not_read(tmp_path):
    root = materialize(T4Q, str(tmp_path / "root"))
    cap = collect(RootSource(root), seconds=0)
    (m,) = cap.maps
    assert m.table is None
    assert any("dmsetup table" in n and "not run" in n for n in cap.notes)
    from_dump = collect(read_dump(T4Q))
    assert sorted(cap.paths) == sorted(from_dump.paths)
    for d, p in cap.paths.items():
        q = from_dump.paths[d]
        assert (p.name, p.kind, p.queue["nr_tags"], p.queue["nr_hw_queues"]) == \
               (q.name, q.kind, q.queue["nr_tags"], q.queue["nr_hw_queues"])
        assert p.service_ms() is None          # the same counters at both ends of the window
    text = write_topology(cap, m)
    assert "ASSUMED table" in text and "ASSUMED: no I/O completed" in text
    path = tmp_path / "t.toml"
    path.write_text(text)
    assert load_topology(str(path)).paths


def test_no_device_mapper_host_writes_nothing(tmp_path, capsys):
    out = tmp_path / "t.toml"
    assert main(["capture", "--from", HOST, "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert "no dm-multipath map or NVMe subsystem" in err and "nothing written" in err and "dmsetup table" in err
    assert not out.exists()


def test_this_machine_as_a_user_without_root(tmp_path):
    """On this machine, run as a user who is not root: a clear message, exit 0, nothing pretending."""
    out = tmp_path / "t.toml"
    cmd = [sys.executable, "-m", "mpathlab", "capture", "--seconds", "0", "-o", str(out)]
    if os.geteuid() == 0:
        if not shutil.which("setpriv"):
            pytest.skip("root without setpriv: cannot drop to another user")
        cmd = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] + cmd
        os.chmod(tmp_path, 0o777)
    env = dict(os.environ, PYTHONPATH=os.path.join(os.path.dirname(__file__), "..", "src"))
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "Traceback" not in p.stderr
    maps = [ln for ln in p.stderr.splitlines() if ln.startswith("  map ")]
    if "no dm-multipath map" in p.stderr:
        assert not out.exists() and not maps
    else:        # a host with maps: each written map is one the kernel listed
        assert out.exists() and maps


def test_script_runs_here_and_its_dump_reads(tmp_path):
    script = tmp_path / "capture.sh"
    script.write_text(script_text())
    p = subprocess.run(["sh", str(script), "0"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0
    dump = tmp_path / "host.dump"
    dump.write_text(p.stdout)
    src = read_dump(str(dump))
    assert src.complete and src.window() is not None
    cap = collect(src)
    assert cap.release == platform.release()
    assert cap.cpus == len(os.sched_getaffinity(0)) or cap.cpus >= 1


@pytest.mark.skipif(not shutil.which("shellcheck"), reason="shellcheck not installed")
def test_script_is_posix_shell():
    from mpathlab.capture import SCRIPT
    p = subprocess.run(["shellcheck", "-s", "sh", SCRIPT], capture_output=True, text=True)
    assert p.returncode == 0, p.stdout


def test_print_script(capsys):
    assert main(["capture", "--print-script"]) == 0
    assert capsys.readouterr().out == script_text()


BAD = [
    ("not a dump\n", 1, "not a capture dump"),
    ("@@ mpathlab-capture-dump 1\n|orphan\n", 2, "outside"),
    ("@@ mpathlab-capture-dump 1\n@@ cmd dmsetup table\n|x\n@@ dir /sys/block\n", 2, "no '@@ rc"),
    ("@@ mpathlab-capture-dump 1\n@@ rc 0\n", 2, "without a '@@ cmd'"),
    ("@@ mpathlab-capture-dump 1\n@@ snap 1 5.0\n", 2, "must be 0, then 1"),
    ("@@ mpathlab-capture-dump 1\n@@ snap 0 x\n", 2, "uptime"),
    ("@@ mpathlab-capture-dump 1\n@@ file /a\n|1\nstray\n", 4, "expected a '@@ KIND"),
    ("@@ mpathlab-capture-dump 1\n@@ bogus x\n", 2, "unknown section kind"),
    ("@@ mpathlab-capture-dump 1\n@@ end\n@@ file /a\n", 3, "after '@@ end'"),
    ("@@ mpathlab-capture-dump 1\n@@ cmd dmsetup status\n@@ rc 300\n", 3, "exit status"),
]


@pytest.mark.parametrize("text,line,what", BAD)
def test_bad_dump_is_one_line_with_file_and_line(tmp_path, capsys, text, line, what):
    p = tmp_path / "bad.dump"
    p.write_text(text)
    assert main(["capture", "--from", str(p)]) == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "%s:%d:" % (p, line) in err[0] and what in err[0]


def test_binary_dump_refused(tmp_path, capsys):
    p = tmp_path / "bad.dump"
    p.write_bytes(b"\x1f\x8b\x08\x00rest")
    assert main(["capture", "--from", str(p)]) == 3
    assert "gzip" in capsys.readouterr().err


def test_stat_parser_reads_the_recorded_lines():
    raw = dump_sections(T4Q)
    for (kind, arg), lines in raw.items():
        if kind.startswith("snap") and arg.endswith("/stat"):
            assert len(parse_stat(lines[0])) in (15, 17)


def test_refused_dispatches_are_taken_out_of_the_service_time():
    """blk_insert_cloned_request counts a refused issue as a done I/O with no sectors: a path whose sectors
    per I/O fall below the map's gets its completions from its sectors (hand-computed)."""
    from mpathlab.capture.collect import MapCapture, PathCapture, _refused_dispatches
    m = MapCapture("mp", "dm-0")
    m.window = {"write": (1000, 9000, 8000)}                  # 8 sectors (4 KiB) per I/O
    busy, calm = PathCapture("sda", (8, 0)), PathCapture("sdb", (8, 16))
    busy.window = {"write": (1400, 5000, 4000)}               # 500 completions, 900 refusals
    calm.window = {"write": (500, 2500, 4000)}
    _refused_dispatches(m, [busy, calm])
    assert busy.refused == {"write": 900} and busy.service_ms() == (10.0, 500)
    assert calm.refused == {} and calm.service_ms() == (5.0, 500)
    assert "900 of the 1400 write I/Os" in busy.notes[0]


def test_bio_based_path_with_a_scheduler_takes_littles_law():
    """Bio-based dm over a path with mq-deadline: the stat ticks hold the scheduler wait, so the time per
    request is the driver's in-flight mean over the completion rate (hand-computed); request-based maps
    and paths without a scheduler keep the ticks."""
    from mpathlab.capture.collect import MapCapture, PathCapture, _service_by_little
    from mpathlab.capture.parsers import parse_multipath_params
    for features, sched, expect in (("2 queue_mode bio", "mq-deadline", 2.0 / (726 / 2.03) * 1000),
                                    ("0", "mq-deadline", 20.0), ("2 queue_mode bio", "none", 20.0)):
        m = MapCapture("mp", "dm-0")
        m.parsed = parse_multipath_params(features + " 0 1 1 service-time 0 1 2 8:0 1 1")
        p = PathCapture("sda", (8, 0))
        p.window = {"write": (726, 726 * 20, 726 * 8)}
        p.queue["scheduler"] = sched
        p.driver_inflight = (2.0, 20)
        _service_by_little(m, [p], 2.03)
        assert p.service_ms() == (pytest.approx(expect), 726)


def test_scsi_luns_request_based_take_refused_issues_out():
    """6.1, request-based over scsi_debug LUNs of queue_depth 2 and 8: the 2-deep LUN refuses issues,
    which its stat counts as done; the captured time per I/O comes from its sectors."""
    cap = collect(read_dump(SCSI_MQ))
    raw = dump_sections(SCSI_MQ)
    by_name = {p.name: p for p in cap.paths.values()}
    for name, qd in (("sda", 2), ("sdb", 8)):
        p = by_name[name]
        assert p.kind == "scsi" and p.queue["queue_depth"] == qd and p.queue["scheduler"] == "mq-deadline"
        a = [int(x) for x in raw[("snap0", "/sys/block/%s/stat" % name)][0].split()]
        b = [int(x) for x in raw[("snap1", "/sys/block/%s/stat" % name)][0].split()]
        ios, ticks, sectors = b[4] - a[4], b[7] - a[7], b[6] - a[6]
        if name == "sda":
            assert ios > 3 * sectors / 9                  # most of its counted I/Os moved nothing
            assert p.refused["write"] == ios - p.completions() > 0
        assert 5.0 <= p.service_ms()[0] < 6.5             # scsi_debug ndelay 5 ms
    text = write_topology(cap, cap.maps[0])
    assert "hw_queue_depth = 2" in text and "device/queue_depth 2" in text and "blk_insert_cloned_request" in text


def test_scsi_luns_bio_based_behind_a_scheduler_take_littles_law():
    """6.12, bio-based over the same LUNs with mq-deadline: the 2-deep LUN's stat ticks hold ~4 requests'
    wait in the scheduler; the driver's in-flight samples over its completion rate give its 5 ms."""
    cap = collect(read_dump(SCSI_BIO))
    p = {p.name: p for p in cap.paths.values()}["sda"]
    assert p.ticks_ms() > 15
    mean, n = p.driver_inflight
    assert n >= 10 and 0 < mean <= 2
    assert p.service_ms()[0] == pytest.approx(mean / (p.completions() / cap.window_s) * 1000)
    assert 5.0 <= p.service_ms()[0] < 6.5


def test_nvme_subsystem_capture_round_trip(tmp_path):
    """6.12 nvme-loop: one subsystem, two controllers, ANA optimized / non-optimized, iopolicy numa."""
    from mpathlab.capture import write_nvme_topology
    cap = collect(read_dump(NVME))
    assert not any("dev could not be read" in n for n in cap.notes)
    (sub,) = [s for s in cap.nvme if s["controllers"]]
    assert sub["iopolicy"] == "numa" and sub["nqn"] == "klab-capture"
    ctrls = {c["name"]: c for c in sub["controllers"]}
    assert sorted(ctrls) == ["nvme0", "nvme1"]
    assert [p.ana_state for c in ctrls.values() for p in c["paths"]] == ["optimized", "non-optimized"]
    assert all(c["transport"] == "loop" and c["state"] == "live" for c in ctrls.values())
    fast = ctrls["nvme0"]["paths"][0]
    assert 1.0 <= fast.service_ms()[0] < 3.0 and fast.service_ms()[1] > 1000   # null_blk at 1 ms behind nvmet
    assert ctrls["nvme1"]["paths"][0].service_ms() is None                   # numa sends nothing there
    path = tmp_path / "nvme.toml"
    path.write_text(write_nvme_topology(cap, sub))
    topo = load_topology(str(path))
    assert topo.nvme is not None
    res = run_simulation(topo, parse_fio(JOB))
    assert res.shares["nvme0"] == pytest.approx(1.0)       # the kernel's numa policy: the optimized path only


@pytest.mark.parametrize("argv,what", [(["--root", "/nonexistent-root"], "not a directory"),
                                        (["--seconds", "-1"], "--seconds"),
                                        (["--from", "/nonexistent.dump"], "cannot read")])
def test_bad_options_are_one_line(argv, what, capsys):
    assert main(["capture"] + argv) == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and what in err[0]


def test_bad_conf_names_file_and_line(tmp_path, capsys):
    conf = tmp_path / "multipath.conf"
    conf.write_bytes(b"defaults {\n\xff\n}\n")
    assert main(["capture", "--from", HOST, "--conf", str(conf)]) == 3
    assert "%s:2:" % conf in capsys.readouterr().err
