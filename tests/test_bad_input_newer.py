"""Bad input on the newer surfaces: SCSI path keys and hosts, SCSI fault actions, [nvme] keys and events,
`run --model`.  Each refusal is one line naming the file and line, exit 3, never a traceback; the property
tests generate topologies that are mostly valid (so the runs get deep into the SCSI and NVMe models) with
hostile values mixed in, and check that every one either runs or is refused that way."""
import json
import os
import re

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from badinput_util import one_error, write
from test_input_properties import check_contract, run_cli, toml_value

SETTINGS = settings(max_examples=int(os.environ.get("MPATHLAB_PROPERTY_EXAMPLES", "40")), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
JOB = "[j]\nrw=randread\nbs=4k\nioengine=libaio\niodepth=4\nnumber_ios=40\n"
TABLE = "0 8 multipath 0 0 1 1 round-robin 0 2 1 sdb 1 sdc 1"


def _topo(sdb_keys="", extra=""):
    return ('[multipath]\ntable = "%s"\n[paths.sdb]\ndevt = "8:16"\nservice = "100us"\n%s\n'
            '[paths.sdc]\ndevt = "8:32"\nservice = "100us"\n%s' % (TABLE, sdb_keys, extra))


@pytest.mark.parametrize("keys, line, problem", [
    # the kernel's own bounds: blk_mq_alloc_tag_set, blk_mq_tag_update_depth, CONFIG_NR_CPUS
    ("hw_queue_depth = 1000000000000000000000000000000", 6, "hw_queue_depth must be at most 10240 (BLK_MQ_MAX_DEPTH"),
    ("hw_queue_depth = 10241", 6, "hw_queue_depth must be at most 10240"),
    ('scheduler = "mq-deadline"\nnr_requests = 2049', 7, "nr_requests must be at most 2048 (MAX_SCHED_RQ"),
    ("nr_hw_queues = 1000000000000000000000000000000", 6, "nr_hw_queues must be at most 8192 (CONFIG_NR_CPUS"),
    ('kind = "scsi"\nqueue_depth = 2147483648', 7, "queue_depth must be at most 2147483647"),
    ('kind = "scsi"\nscsi_host = "h"\n[scsi_hosts.h]\ncan_queue = 2147483648', 9, "can_queue must be at most 2147483647"),
    ('kind = "scsi"\nfaults = [ { at = "1ms", action = "error", error = [] } ]', 7,
     "faults[0].error must be one of"),
    ('kind = "scsi"\nfaults = [ { at = "1ms", action = "error", error = "medium", every_nth = 0 } ]', 7,
     "every_nth must be a whole number >= 1"),
    ('kind = "scsi"\nfaults = [ { at = "1ms", action = "offline", every_nth = 2 } ]', 7,
     'error and every_nth belong to action = "error"'),
    ('faults = [ { at = "1ms", action = "explode" } ]', 6, "faults[0].action must be one of fail, reinstate, slow"),
    ('faults = [ { at = "1ms", action = [] } ]', 6, "faults[0].action must be one of"),
])
def test_block_layer_and_scsi_keys_are_refused_with_their_line(tmp_path, capsys, keys, line, problem):
    topo = write(tmp_path, "t.toml", _topo(keys))
    msg = one_error(capsys, ["run", "--no-progress", topo, write(tmp_path, "j.fio", JOB)])
    assert msg.startswith("%s:%d: " % (topo, line)) and problem in msg, msg


def test_the_bounds_themselves_run(tmp_path, capsys):
    keys = 'hw_queue_depth = 10240\nnr_hw_queues = 8192\nscheduler = "mq-deadline"\nnr_requests = 2048'
    rc = run_cli(["run", "--no-progress", write(tmp_path, "t.toml", _topo(keys)), write(tmp_path, "j.fio", JOB)])[0]
    assert rc == 0


NVME = ('[paths.a]\nservice = "100us"\n[paths.b]\nservice = "100us"\n[nvme]\n'
        '[nvme.controllers.nvme0]\npath = "a"\n[nvme.controllers.nvme1]\npath = "b"\n')


@pytest.mark.parametrize("status", ["[]", "{}", "{ a = [] }", '"bogus"'])
def test_an_nvme_error_event_of_another_type_is_one_line(tmp_path, capsys, status):
    text = NVME + '[[nvme.events]]\nat = "1ms"\nerror = { controller = "nvme0", status = %s, count = 1 }\n' % status
    topo = write(tmp_path, "n.toml", text)
    msg = one_error(capsys, ["run", "--no-progress", topo, write(tmp_path, "j.fio", JOB)])
    assert msg.startswith(topo + ":12: ") and "events[0].error must be {controller=NAME, status=" in msg, msg


@pytest.mark.parametrize("model, problem", [
    ("sdb,hw_queue_depth=99999999999999999999999", "hw_queue_depth must be a whole number from 1 to 10240"),
    ("sdb,hw_queue_depth=1_0", "hw_queue_depth must be a whole number from 1 to 10240, not '1_0'"),
    ("sdb,hw_queue_depth=\u0661\u0660", "hw_queue_depth must be a whole number"),
    ("sdb,parallelism=+5", "parallelism must be a whole number from 1 to 65536, not '+5'"),
    ("sdb,parallelism=0", "parallelism must be a whole number from 1 to 65536"),
])
def test_run_model_numbers_are_ascii_digits_within_the_kernel_s_bounds(tmp_path, capsys, model, problem):
    msg = one_error(capsys, ["run", "--no-progress", "--table", TABLE, write(tmp_path, "j.fio", JOB),
                             "--model", model])
    assert msg.startswith("--model sdb: ") and problem in msg, msg


def test_run_model_with_good_numbers_still_runs(tmp_path):
    rc, out, err = run_cli(["run", "--no-progress", "--table", TABLE, write(tmp_path, "j.fio", JOB),
                            "--model", "sdb,parallelism=8,hw_queue_depth=4", "--json"])
    assert rc == 0, err


# -- properties: mostly-valid SCSI and NVMe topologies with hostile values mixed in ----------------------

HOSTILE = st.one_of(st.integers(-2 ** 70, 2 ** 70), st.floats(), st.booleans(), st.just([]), st.just({}),
                    st.sampled_from(["", "x", "1_0", "\u0661", "100us", "-1ms", "1e400us", "8:16"]))


def _either(good):
    return st.one_of(st.sampled_from(good), st.sampled_from(good), st.sampled_from(good), HOSTILE)


SCSI_PATH = {"queue_depth": [1, 2, 4, 32, 2 ** 31 - 1], "hw_queue_depth": [1, 2, 64, 10240],
             "scheduler": ["none", "mq-deadline", "kyber", "bfq"], "nr_hw_queues": [1, 2, 8192],
             "scsi_host": ["h0", "h1"]}
FAULT = st.fixed_dictionaries(
    {"at": _either(["0us", "50us", "1ms", "2ms"]),
     "action": _either(["offline", "delete", "online", "error", "reinstate", "fail", "slow"])},
    optional={"error": _either(["medium", "timeout", "aborted", "not_ready", "ua", "transport", ""]),
              "every_nth": _either([1, 2, 10]), "reinstate_after": _either(["1ms", "5ms"]),
              "factor": _either([2, 0.5])})


@st.composite
def scsi_topology(draw):
    out = ['[multipath]\ntable = "0 8 multipath %s 0 1 1 %s"\n' % (
        draw(st.sampled_from(["0", "1 queue_if_no_path", "2 queue_mode bio"])),
        draw(st.sampled_from(["round-robin 0 2 1 sdb 1 sdc 1", "queue-length 0 2 1 sdb 1 sdc 1",
                              "service-time 0 2 2 sdb 1 1 sdc 1 1"])))]
    if draw(st.booleans()):
        out.append("queue_if_no_path_timeout_secs = %s\n" % toml_value(draw(_either([0, 1, 5]))))
    for name, devt in (("sdb", "8:16"), ("sdc", "8:32")):
        p = {"devt": devt, "service": draw(st.sampled_from(["100us", "2ms"])), "kind": draw(_either(["scsi"]))}
        for k in draw(st.lists(st.sampled_from(sorted(SCSI_PATH)), max_size=3, unique=True)):
            p[k] = draw(_either(SCSI_PATH[k]))
        if draw(st.booleans()):
            p["faults"] = draw(st.lists(FAULT, min_size=1, max_size=3))
        out.append("[paths.%s]\n" % name + "".join("%s = %s\n" % (k, toml_value(v)) for k, v in p.items()))
    for h in draw(st.lists(st.sampled_from(["h0", "h1"]), max_size=2, unique=True)):
        out.append("[scsi_hosts.%s]\ncan_queue = %s\n" % (h, toml_value(draw(_either([1, 2, 4, 2 ** 31 - 1])))))
    return "\n".join(out)


NVME_KEYS = {"kernel": ["6.1", "6.12", "current"], "reconnect_delay": ["10ms", "1s", -1],
             "ctrl_loss_tmo": ["50ms", "600s", -1], "fast_io_fail_tmo": [-1, "10ms"], "anatt": ["10ms", "10s"],
             "ana_log_delay": ["0us", "1ms"], "max_retries": [0, 1, 5], "delayed_removal": ["0s", "10ms"],
             "spdk_retry_count": [-1, 0, 3], "spdk_preferred": ["nvme0", "nvme1"], "spdk_rr_min_io": [1, 2],
             "iopolicy": ["numa", "round-robin", "queue-depth", "spdk-round-robin", "spdk-active-passive"],
             "namespaces": [1, 2], "marginal_aware": [True, False]}
EVENT = st.one_of(
    st.fixed_dictionaries({"at": _either(["1ms", "3ms"]), "ana": st.fixed_dictionaries(
        {"group": _either([1]), "controller": _either(["nvme0", "nvme1"]),
         "state": _either(["change", "optimized", "inaccessible", "non-optimized"])})}),
    st.fixed_dictionaries({"at": _either(["1ms"]), "error": st.fixed_dictionaries(
        {"controller": _either(["nvme0", "nvme1"]), "status": _either(["internal", "medium", "host-path"])},
        optional={"count": _either([1, 2]), "dnr": _either([True, False])})}),
    st.fixed_dictionaries({"at": _either(["2ms"]), "iopolicy": _either(["numa", "round-robin"])}),
    st.fixed_dictionaries({"at": _either(["2ms"]), "marginal": st.fixed_dictionaries(
        {"controller": _either(["nvme1"]), "value": _either([True, False])})}))


@st.composite
def nvme_topology(draw):
    a_faults = draw(st.lists(FAULT, max_size=1))
    out = ['[paths.a]\nservice = "100us"\n%s[paths.b]\nservice = "1ms"\n'
           % ("faults = %s\n" % toml_value(a_faults) if a_faults else "")]
    nv = {k: draw(_either(NVME_KEYS[k])) for k in draw(st.lists(st.sampled_from(sorted(NVME_KEYS)), max_size=5,
                                                                 unique=True))}
    out.append("[nvme]\n" + "".join("%s = %s\n" % (k, toml_value(v)) for k, v in nv.items()))
    out.append('[nvme.controllers.nvme0]\npath = "a"\n[nvme.controllers.nvme1]\npath = "b"\n')
    for e in draw(st.lists(EVENT, max_size=3)):
        out.append("[[nvme.events]]\n" + "".join("%s = %s\n" % (k, toml_value(v)) for k, v in e.items()))
    return "\n".join(out)


@SETTINGS
@given(text=scsi_topology())
def test_generated_scsi_topologies_run_or_are_refused_in_one_line(tmp_path, text):
    rc, _, err = run_cli(["run", "--no-progress", write(tmp_path, "s.toml", text), write(tmp_path, "j.fio", JOB)])
    check_contract(rc, err)
    if rc == 3:
        assert err.rstrip().splitlines()[-1].startswith("mpathlab: error: %s" % (tmp_path / "s.toml")), err


@SETTINGS
@given(text=nvme_topology())
def test_generated_nvme_topologies_run_or_are_refused_in_one_line(tmp_path, text):
    rc, _, err = run_cli(["run", "--no-progress", write(tmp_path, "n.toml", text), write(tmp_path, "j.fio", JOB)])
    check_contract(rc, err)
    if rc == 3:
        assert err.rstrip().splitlines()[-1].startswith("mpathlab: error: %s" % (tmp_path / "n.toml")), err


# -- capture --from: a dump whose numbers no kernel gives ----------------------------------------------

DUMPS = sorted(os.path.join(os.path.dirname(__file__), "data", "capture", f)
               for f in os.listdir(os.path.join(os.path.dirname(__file__), "data", "capture"))
               if f.startswith("guest") and f.endswith(".dump"))
ODD_NUMBERS = ["-1", "0", "18446744073709551616", "99999999999999999999999999", "4294967296", "x", "", "1e400",
               "\u0661", "10241", "8193"]


@SETTINGS
@given(data=st.data())
def test_a_dump_with_numbers_no_kernel_gives_is_refused_or_captured_into_runnable_topologies(tmp_path, data):
    import glob
    import re
    lines = open(data.draw(st.sampled_from(DUMPS))).read().split("\n")
    numbered = [i for i, line in enumerate(lines) if line.startswith("|") and re.search(r"(^|\s|\|)\d+(\s|$)", line)]
    for i in data.draw(st.lists(st.sampled_from(numbered), min_size=1, max_size=3, unique=True)):
        toks = lines[i][1:].split(" ")
        j = data.draw(st.sampled_from([k for k, t in enumerate(toks) if re.fullmatch(r"\d+", t)]))
        toks[j] = data.draw(st.sampled_from(ODD_NUMBERS))
        lines[i] = "|" + " ".join(toks)
    dump = write(tmp_path, "h.dump", "\n".join(lines))
    out = tmp_path / "out"
    out.mkdir(exist_ok=True)
    for f in out.iterdir():
        f.unlink()
    rc, _, err = run_cli(["capture", "--from", dump, "-o", str(out)])
    check_contract(rc, err)
    if rc == 3:
        assert err.rstrip().splitlines()[-1].startswith("mpathlab: error: " + dump), err
        assert not list(out.iterdir())              # nothing half written
        return
    job = write(tmp_path, "j.fio", JOB)
    for topo in glob.glob(str(out / "*.toml")):     # what capture writes, run takes
        rc, _, err = run_cli(["run", "--no-progress", topo, job])
        assert rc == 0, err


def test_a_captured_value_the_reader_refuses_names_the_dump_and_the_written_line(tmp_path, capsys):
    # a LUN whose queue_depth and tags no kernel gives (the path model serves that many at once)
    src = [d for d in DUMPS if "scsi-S1-ql" in d][0]
    text = open(src).read()
    for f, v in (("device/queue_depth", "8"), ("mq/0/nr_tags", "192")):
        old = "@@ file /sys/block/sdb/%s\n|%s\n" % (f, v)
        assert old in text
        text = text.replace(old, old.replace("|%s" % v, "|99999"))
    dump = write(tmp_path, "h.dump", text)
    msg = one_error(capsys, ["capture", "--from", dump, "-o", str(tmp_path / "mp.toml")])
    assert msg.startswith(dump + ": the topology captured for mp is not one mpathlab runs") and \
        "mp.toml:" in msg and "parallelism must be a whole number >= 1 and <= 65536, got 99999" in msg, msg
    assert not (tmp_path / "mp.toml").exists()


# -- read_iolog: a trace that cannot be read names the job file's line of the option -----------------------

@pytest.mark.parametrize("trace, problem", [
    ("", "empty file"),
    (b"\x89PNG\r\n\x1a\n" + bytes(range(256)), "not a trace mpathlab reads"),
    (None, "no such file"),
    ("DIR", "a directory, not a trace file"),
    ("fio version 2 iolog\n/dev/sdb add\n/dev/sdb open\n/dev/sdb write -1 4096\n", "t.log:4: offset '-1'"),
    ("fio version 3 iolog\n0 /dev/sdb add\n5 /dev/sdb open\n9 /dev/sdb read 0\n", "t.log:4: "),
])
@pytest.mark.parametrize("section", ["job", "global"])
def test_a_trace_problem_names_the_read_iolog_line(tmp_path, capsys, trace, problem, section):
    name = str(tmp_path / "t.log")
    if trace == "DIR":
        os.mkdir(name)
    elif trace is not None:
        write(tmp_path, "t.log", trace)
    text = ("[global]\nioengine=libaio\nread_iolog=%s\n[j]\nbs=4k\n" % name if section == "global"
            else "[global]\nioengine=libaio\n[j]\nbs=4k\nread_iolog=%s\n" % name)
    job = write(tmp_path, "j.fio", text)
    msg = one_error(capsys, ["run", "--no-progress", "--table", TABLE, job])
    assert msg.startswith("j.fio line %d [j]: " % (3 if section == "global" else 5)) and problem in msg, msg


IOLOG_TOKEN = st.one_of(st.sampled_from(["0", "4096", "-1", "18446744073709551616", "4294967296", "x", "", "1e3",
                                         "\u0661", "read", "write", "trim", "sync", "wait", "add", "open", "close",
                                         "/dev/sdb", "/dev/sdc"]), st.integers(0, 2 ** 40).map(str))
REPLAY_OPTION = st.sampled_from(["replay_no_stall=1", "replay_time_scale=1", "replay_time_scale=4294967295",
                                 "replay_time_scale=0", "replay_scale=4096", "replay_align=4096", "replay_align=3",
                                 "replay_skip=write", "replay_skip=bogus", "replay_redirect=/dev/sdc", "iodepth=8",
                                 "loops=2", "number_ios=2", "bs=8k", "size=4k", "read_iolog_chunked=1"])


@st.composite
def iolog(draw):
    v = draw(st.sampled_from([2, 3]))
    stamp = (lambda: "%d " % draw(st.integers(0, 10 ** 6))) if v == 3 else (lambda: "")
    lines = ["fio version %d iolog" % v, stamp() + "/dev/sdb add", stamp() + "/dev/sdb open"]
    for _ in range(draw(st.integers(0, 8))):
        toks = ["/dev/sdb", draw(st.sampled_from(["read", "write", "trim", "sync", "wait", "datasync"])),
                str(draw(st.sampled_from([0, 4096, 1 << 40]))), str(draw(st.sampled_from([512, 4096, 1 << 20])))]
        if draw(st.integers(0, 3)) == 0:
            toks[draw(st.integers(0, 3))] = draw(IOLOG_TOKEN)
        lines.append(stamp() + " ".join(toks[:draw(st.sampled_from([2, 4, 4, 4, 5]))]))
    if draw(st.booleans()):
        lines.append(stamp() + "/dev/sdb close")
    text = "\n".join(lines) + "\n"
    return text[:draw(st.integers(0, len(text)))] if draw(st.integers(0, 5)) == 0 else text


@SETTINGS
@given(trace=iolog(), options=st.lists(REPLAY_OPTION, max_size=3))
def test_generated_iolog_replays_run_or_are_refused_naming_the_job_line(tmp_path, trace, options):
    log = write(tmp_path, "t.log", trace)
    job = write(tmp_path, "j.fio", "[j]\nioengine=libaio\nread_iolog=%s\n%s\n" % (log, "\n".join(options)))
    rc, _, err = run_cli(["run", "--no-progress", "--table", TABLE, job])
    check_contract(rc, err)
    if rc == 3:     # the job file's line of read_iolog, or (found during the replay, which streams it) the trace
        last = err.rstrip().splitlines()[-1]
        assert re.match(r"mpathlab: error: j\.fio line \d+ \[j\]: ", last) or last.startswith("mpathlab: error: " + log), err


@pytest.mark.parametrize("text", ["[global]\nbs=0\x000\n", "[global]\nbs=\x000\n", "[j]\nbs=\x1b[31m\n",
                                  "[j]\niodepth=4\x07\n"])
def test_a_job_file_value_with_a_control_character_is_echoed_escaped(text):
    # found by test_input_properties on a fresh clone: parse_fio echoed the raw NUL before the problem
    from mpathlab.workload.fio import FioError, parse_fio
    with pytest.raises(FioError) as ei:
        parse_fio(text, "g.fio", ".")
    msg = str(ei.value)
    assert msg.startswith("g.fio line 2") and "\\x" in msg
    assert not any(c in msg for c in "\x00\x1b\x07")


def test_a_replayed_wait_of_decades_runs_in_little_memory(tmp_path):
    # found by test_generated_iolog_replays_run_or_are_refused_naming_the_job_line: a version 2 wait of
    # 2^40 ms put the next I/O 35 years out, and fio's per-500-ms rate windows filled 24 GB on the way
    log = write(tmp_path, "t.log", "fio version 2 iolog\n/dev/sdb add\n/dev/sdb open\n/dev/sdb write 0 4096\n"
                                   "/dev/sdb wait 1099511627776 4096\n/dev/sdb write 4096 4096\n")
    job = write(tmp_path, "j.fio", "[j]\nioengine=libaio\nread_iolog=%s\n" % log)
    import resource
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    rc, out, err = run_cli(["run", "--no-progress", "--json", "--table", TABLE, job])
    check_contract(rc, err)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 200_000     # KiB
    if rc == 0:
        w = json.loads(out)["jobs"][0]["write"]
        # two periods with I/O: the first (full) gives a sample, the last (partial) none, as fio
        assert w["total_ios"] == 2 and w["iops_samples"] == 1


@pytest.mark.parametrize("text, line", [("[j]\nioengine=libaio\nbs=8k\nsize=4k\n", 4),
                                        ("[global]\nsize=4k\n[j]\nioengine=libaio\nbs=8k\n", 2)])
def test_a_size_below_the_block_size_names_the_line_of_size(text, line):
    # found by test_generated_iolog_replays_run_or_are_refused_naming_the_job_line: the check across
    # options named the job but no line
    from mpathlab.workload.fio import FioError, parse_fio
    with pytest.raises(FioError) as ei:
        parse_fio(text, "s.fio", ".")
    assert str(ei.value) == "s.fio line %d [j]: size 4096 is smaller than the block size 8192 (fio refuses: size too small)" % line


@pytest.mark.parametrize("text, expected", [
    ("[global]\nrate=1m\n[j]\nrate_iops=10\n", "s.fio line 4 [j]: rate and rate_iops are mutually exclusive"),
    ("[j]\nrw=read\nwait_for=nobody\n", "s.fio line 3 [j]: wait_for=nobody names no job before it"),
    ("[j]\nsize=2z\n", "s.fio line 2 [j]: size=2z counts zones, which needs zonesize"),
])
def test_checks_across_options_name_a_line(text, expected):
    from mpathlab.workload.fio import FioError, parse_fio
    with pytest.raises(FioError) as ei:
        parse_fio(text, "s.fio", ".")
    assert str(ei.value).startswith(expected), str(ei.value)
