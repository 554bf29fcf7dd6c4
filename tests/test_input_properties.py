"""Property tests of every input surface through the command line: whatever a generated
multipath.conf, path/NVMe/host topology, status line, fio job or latency trace holds, mpathlab either
does its work (exit 0) or refuses it with one line on stderr (exit 3), never an internal error, a
traceback, or a control character echoed to the terminal.  The generators mix valid values with the
hostile ones a careless or malicious user writes: huge and negative numbers, thousands of digits,
Unicode digits, '1_0', NaN/inf, control bytes, empty values."""
import contextlib
import io
import json
import math
import os
import sys
import tempfile

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from mpathlab import cli

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "examples")
SETTINGS = settings(max_examples=int(os.environ.get("MPATHLAB_PROPERTY_EXAMPLES", "40")), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
TINY_JOB = "[j]\nrw=randread\nbs=4k\nnumber_ios=8\niodepth=2\nioengine=libaio\n"


def run_cli(argv, stdin: bytes = b""):
    """(exit code, stdout, stderr) of ``mpathlab ARGV``, in-process, with a small run budget."""
    out, err = io.StringIO(), io.StringIO()
    old_stdin, old_env = sys.stdin, os.environ.get("MPATHLAB_MAX_SIM_SECONDS")
    sys.stdin = io.TextIOWrapper(io.BytesIO(stdin))
    os.environ["MPATHLAB_MAX_SIM_SECONDS"] = "600"
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                rc = cli.main(argv)
            except SystemExit as e:          # argparse: a usage error
                rc = e.code
    finally:
        sys.stdin = old_stdin
        if old_env is None:
            os.environ.pop("MPATHLAB_MAX_SIM_SECONDS", None)
        else:
            os.environ["MPATHLAB_MAX_SIM_SECONDS"] = old_env
    return rc, out.getvalue(), err.getvalue()


def check_contract(rc, err, ok=(0, 3)):
    assert rc in ok, (rc, err[-800:])
    assert "internal error" not in err and "Traceback" not in err, err[-800:]
    assert not any(c in err for c in "\x00\x1b\x07\x08"), "control character on stderr: %r" % err[-300:]
    if rc == 3:
        errors = [ln for ln in err.splitlines() if ln.startswith("mpathlab: error: ")]
        assert len(errors) == 1, err[-800:]
        assert err.rstrip("\n").splitlines()[-1] == errors[0]
        assert len(errors[0]) < 2000, "a message that buries its problem: %d characters" % len(errors[0])


def _file(text, suffix):
    f = tempfile.NamedTemporaryFile("wb", suffix=suffix, delete=False)
    f.write(text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass"))
    f.close()
    return f.name


# -- values a user may write anywhere --------------------------------------------------------------

HOSTILE_NUMBERS = ["0", "1", "-1", "2147483648", "4294967296", "18446744073709551616", "9" * 5000, "1_0",
                   "\u0661\u0660", "\uff11", "+5", " 5", "0x10", "1e3", "nan", "inf", ""]
hostile_text = st.one_of(
    st.sampled_from(HOSTILE_NUMBERS),
    st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12),
    st.text(alphabet="abc.*+?()[]^$|\\{}0123456789 ", max_size=16),
)


def toml_value(v):
    """A TOML literal for a generated value (strings as basic strings, JSON escapes are TOML's)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf") if math.isinf(v) else repr(v)
    if isinstance(v, dict):
        return "{ %s }" % ", ".join("%s = %s" % (k, toml_value(x)) for k, x in v.items())
    if isinstance(v, list):
        return "[ %s ]" % ", ".join(toml_value(x) for x in v)
    return json.dumps(v)


toml_scalar = st.one_of(
    st.integers(-2 ** 70, 2 ** 70), st.floats(allow_nan=True, allow_infinity=True), st.booleans(),
    st.sampled_from(["100us", "1ms", "0us", "-1ms", "1e400us", "10000000d", "8:16", "8:32", "x", "", "nan"]),
    hostile_text)


# -- multipath.conf ------------------------------------------------------------------------------

CONF_KEYS = ["polling_interval", "max_polling_interval", "path_selector", "path_grouping_policy", "failback",
             "no_path_retry", "rr_min_io", "rr_min_io_rq", "rr_weight", "prio", "prio_args", "alias", "wwid",
             "vendor", "product", "user_friendly_names", "features", "hardware_handler", "queue_without_daemon",
             "flush_on_last_del", "dev_loss_tmo", "fast_io_fail_tmo", "path_checker", "uid_attribute", "devnode"]
conf_value = st.one_of(
    hostile_text,
    st.sampled_from(['"service-time 0"', '"round-robin 0"', "queue", "immediate", "multibus", "failover",
                     "group_by_prio", "alua", '"weightedpath hbtl 1:0:0:0 18446744073709551616"', "const",
                     '"^(3|33)+$"', '"(a+)+$"', '"1 queue_if_no_path"', '"a' + "a" * 300 + '"', "yes", "no"]))


@st.composite
def multipath_conf(draw):
    lines = []
    for section in draw(st.lists(st.sampled_from(["defaults", "blacklist", "blacklist_exceptions", "devices",
                                                  "multipaths", "overrides", "bogus"]), max_size=4)):
        lines.append("%s {" % section)
        inner = {"devices": "device", "multipaths": "multipath"}.get(section)
        for _ in range(draw(st.integers(0, 3))):
            if inner:
                lines.append("    %s {" % inner)
            for _ in range(draw(st.integers(0, 4))):
                lines.append("        %s %s" % (draw(st.sampled_from(CONF_KEYS)), draw(conf_value)))
            if inner and draw(st.booleans()) or inner:
                lines.append("    }")
        if draw(st.integers(0, 9)):              # sometimes a missing '}'
            lines.append("}")
    text = "\n".join(lines) + "\n"
    if draw(st.integers(0, 9)) == 0:
        text = draw(st.binary(max_size=40)).decode("latin-1") + text     # binary or control bytes in front
    return text


@SETTINGS
@given(multipath_conf())
def test_generated_multipath_conf(text):
    conf = _file(text, ".conf")
    try:
        rc, _, err = run_cli(["multipath", "-t", "--conf", conf])
        check_contract(rc, err)
        rc, _, err = run_cli(["maps", "--conf", conf, os.path.join(EXAMPLES, "mtools", "alua-paths.toml")])
        check_contract(rc, err)
    finally:
        os.unlink(conf)


# -- path, NVMe and multi-host topologies ---------------------------------------------------------

PATH_KEYS = ["devt", "service", "parallelism", "delay", "per_kib", "hw_queue_depth", "nr_hw_queues", "scheduler",
             "nr_requests", "fail_latency", "kind", "bogus"]
fault = st.fixed_dictionaries({"at": st.sampled_from(["1ms", "0us", "100d", "10000000d", 5, "x"]),
                               "action": st.sampled_from(["fail", "reinstate", "slow", "explode"])},
                              optional={"factor": st.one_of(st.floats(), st.integers(-3, 10 ** 30)),
                                        "reinstate_after": st.sampled_from(["1ms", "100000d", "0us", -1])})
TABLES = ["0 8 multipath 0 0 1 1 round-robin 0 2 1 sdb 1 sdc 1",
          "0 8 multipath 1 queue_if_no_path 0 1 1 service-time 0 2 2 sdb 1 1 sdc 1 1",
          "0 8 multipath 0 1 alua 2 1 queue-length 0 1 1 sdb 1 round-robin 0 1 1 sdc 1",
          "0 18446744073709551616 multipath 0 0 1 1 round-robin 0 1 1 sdb 1",
          "0 8 multipath 0 0 1 %s round-robin 0 1 1 sdb 1" % ("9" * 5000), "garbage"]


@st.composite
def topology(draw, nvme=False, hosts=False):
    out = []
    if hosts:
        out.append("[hosts]\ncount = %s\nwindow = %s\n" % (toml_value(draw(st.one_of(st.integers(-1, 4), toml_scalar))),
                                                          toml_value(draw(st.sampled_from(["1ms", "0us", "x"])))))
    mp = {"table": draw(st.sampled_from(TABLES))}
    for k in draw(st.lists(st.sampled_from(["queue_if_no_path_timeout_secs", "hz", "seed", "nr_cpus", "kernel",
                                            "uptime"]), max_size=2, unique=True)):
        mp[k] = draw(toml_scalar)
    if not nvme or draw(st.booleans()):
        out.append("[multipath]\n" + "".join("%s = %s\n" % (k, toml_value(v)) for k, v in mp.items()))
    for name, devt in (("sdb", "8:16"), ("sdc", "8:32")):
        p = {"devt": devt, "service": draw(st.sampled_from(["100us", {"dist": "exponential", "mean": "50us"}]))}
        for k in draw(st.lists(st.sampled_from(PATH_KEYS), max_size=3, unique=True)):
            p[k] = draw(toml_scalar)
        if draw(st.integers(0, 3)) == 0:
            p["faults"] = draw(st.lists(fault, max_size=2))
        out.append("[paths.%s]\n" % name + "".join("%s = %s\n" % (k, toml_value(v)) for k, v in p.items()))
    if nvme:
        n = {"iopolicy": draw(st.sampled_from(["numa", "round-robin", "queue-depth", "bogus"])),
             "namespaces": draw(st.one_of(st.integers(0, 3), toml_scalar))}
        out.append("[nvme]\n" + "".join("%s = %s\n" % (k, toml_value(v)) for k, v in n.items()))
        for gid in draw(st.lists(st.integers(-1, 3), max_size=2)):
            g = {"id": gid, "namespaces": draw(st.lists(st.integers(0, 3), max_size=3)),
                 "state": {"sdb": draw(st.sampled_from(["optimized", "inaccessible", "non-optimized", "x"])),
                           "sdc": draw(st.sampled_from(["optimized", "inaccessible", "persistent-loss"]))}}
            out.append("[[nvme.ana_groups]]\n" + "".join("%s = %s\n" % (k, toml_value(v)) for k, v in g.items()))
    return "\n".join(out)


@SETTINGS
@given(topology())
def test_generated_path_topologies(text):
    topo, job = _file(text, ".toml"), _file(TINY_JOB, ".fio")
    try:
        rc, _, err = run_cli(["run", topo, job])
        check_contract(rc, err)
    finally:
        os.unlink(topo)
        os.unlink(job)


@SETTINGS
@given(topology(nvme=True))
def test_generated_nvme_topologies(text):
    topo, job = _file(text, ".toml"), _file(TINY_JOB, ".fio")
    try:
        rc, out, err = run_cli(["run", topo, job, "--json"])
        check_contract(rc, err)
        if rc == 0:                        # a run with I/O pending says stalled, in every mode
            doc = json.loads(out)["mpath"]
            assert doc["stalled"] == bool(doc["pending"]) or doc["stalled"]
    finally:
        os.unlink(topo)
        os.unlink(job)


@settings(SETTINGS, max_examples=max(5, SETTINGS.max_examples // 4))
@given(topology(hosts=True))
def test_generated_host_topologies(text):
    topo, job = _file(text, ".toml"), _file("[j]\nrw=randread\nbs=4k\nnumber_ios=4\n", ".fio")
    try:
        rc, _, err = run_cli(["hosts", topo, job, "--seeds", "1", "--selectors", "round-robin"])
        check_contract(rc, err)
    finally:
        os.unlink(topo)
        os.unlink(job)


# -- dmsetup status / table lines --------------------------------------------------------------

status_token = st.one_of(st.sampled_from(["0", "1", "2", "A", "F", "E", "D", "8:16", "8:16\x00", "\x1b[31m",
                                          "-7", "multipath", "mpatha:", "9" * 5000, "\u0663", "2097152"]),
                         st.integers(-2 ** 65, 2 ** 65).map(str))


@SETTINGS
@given(st.lists(st.lists(status_token, max_size=24).map(" ".join), min_size=1, max_size=3).map("\n".join),
       st.booleans())
def test_generated_status_lines(text, as_argument):
    if as_argument:
        rc, _, err = run_cli(["status", text.replace("\x00", "")] if "\x00" in text else ["status", text])
    else:
        rc, _, err = run_cli(["status"], stdin=text.encode())
    check_contract(rc, err)


# -- fio job files -------------------------------------------------------------------------------

FIO_KEYS = ["rw", "bs", "number_ios", "iodepth", "thinktime", "thinktime_blocks", "runtime", "time_based", "size",
            "ioengine", "rate", "rate_iops", "numjobs", "stonewall", "startdelay", "bssplit", "rwmixread",
            "verify", "offset", "loops", "wait_for", "flow", "bogus"]
fio_value = st.one_of(hostile_text, st.sampled_from(["randread", "randwrite", "rw", "4k", "512", "1m", "libaio",
                                                     "bogus", "1000d", "365d", "10000000", "1", "0", "4k/50:8k/50"]))


@st.composite
def fio_job(draw):
    lines = []
    for name in draw(st.lists(st.sampled_from(["global", "a", "b"]), min_size=1, max_size=3)):
        lines.append("[%s]" % name)
        for _ in range(draw(st.integers(0, 5))):
            k = draw(st.sampled_from(FIO_KEYS))
            lines.append(k if draw(st.integers(0, 5)) == 0 else "%s=%s" % (k, draw(fio_value)))
    return "\n".join(lines) + "\n"


@SETTINGS
@given(fio_job())
def test_generated_fio_jobs_parse_or_are_refused(text):
    from mpathlab.workload.fio import FioError, parse_fio
    try:
        parse_fio(text, "g.fio", ".")
    except FioError as e:
        assert "\n" not in str(e) and str(e).startswith("g.fio")
        assert not any(c in str(e) for c in "\x00\x1b\x07")


@settings(SETTINGS, max_examples=max(5, SETTINGS.max_examples // 2))
@given(fio_job())
def test_generated_fio_jobs_through_the_cli(text):
    # the run is kept small: the number of I/Os is capped by a 4 KiB device, and the budget is 600 s
    job = _file(text, ".fio")
    try:
        rc, _, err = run_cli(["run", "--table", "0 8 multipath 0 0 1 1 round-robin 0 1 1 8:16 1", job])
        check_contract(rc, err)
    finally:
        os.unlink(job)


# -- latency traces (empirical service times from a file) -------------------------------------------

@SETTINGS
@given(st.lists(st.one_of(st.sampled_from(["120us", "1ms", "5", "-5", "nan", "inf", "1e400", "# c", "",
                                           "1_0", "\u0663", "9" * 5000, "12us,3", "\x1b[2J"]),
                          st.text(max_size=8)), max_size=8).map("\n".join))
def test_generated_latency_traces(text):
    trace = _file(text, ".lat")
    topo = _file('[multipath]\ntable = "0 8 multipath 0 0 1 1 round-robin 0 1 1 sdb 1"\n[paths.sdb]\ndevt = "8:16"\n'
                 'service = { dist = "empirical", file = %s }\n' % json.dumps(trace), ".toml")
    job = _file(TINY_JOB, ".fio")
    try:
        rc, _, err = run_cli(["run", topo, job])
        check_contract(rc, err)
    finally:
        for p in (trace, topo, job):
            os.unlink(p)


@pytest.mark.parametrize("argv", [
    ["kernel-selector", "diff", "x.c", "round-robin", "--max-ops", "0"],
    ["kernel-selector", "diff", "x.c", "round-robin", "--traces", "-5"],
    ["run", "--table", "0 8 multipath 0 0 1 1 round-robin 0 1 1 8:16 1", "j.fio", "--hz", "\u0661\u0660\u0660"],
])
def test_command_line_values_are_usage_errors(argv):
    rc, _, err = run_cli(argv)
    check_contract(rc, err, ok=(2,))


def test_multiline_status_argument_starting_with_minus_is_text():
    # found by test_generated_status_lines: argparse took "-1<newline>0" for an unknown option (exit 2)
    rc, _, err = run_cli(["status", "-1\n0"])
    assert rc == 3 and "feature count must not be negative" in err and err.count("\n") == 1
    rc, _, err = run_cli(["status", "--no-such-option"])
    assert rc == 2


# -- the kernel lab's results.json, as `mpathlab validate FILE` reads it -----------------------------

def _lab_cell():
    with open(os.path.join(os.path.dirname(__file__), "..", "validation", "kernel-lab", "results.json")) as f:
        return next(c for c in json.load(f) if c["topology"] == "D1-4" and c["selector"] == "historical-service-time")


json_value = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(-10, 10 ** 12), st.floats(allow_nan=False),
                                    st.text(max_size=6)),
                          lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                  st.dictionaries(st.text(max_size=4), inner, max_size=3)),
                          max_leaves=6)


def _change(cell, key, value):
    """Set (or drop) one field of the cell, or of its first path ("path0.NAME"), or that path itself."""
    where, name = cell, key
    if key.startswith("path0"):
        paths = cell.get("paths")
        if not isinstance(paths, list) or not paths:
            return
        if key == "path0":
            paths[0] = None if value == "<drop>" else value
            return
        where, name = paths[0], key.split(".", 1)[1]
        if not isinstance(where, dict):
            return
    if value == "<drop>":
        where.pop(name, None)
    else:
        where[name] = value


@settings(SETTINGS, max_examples=max(5, SETTINGS.max_examples // 2))
@given(st.lists(st.tuples(st.sampled_from(["topology", "selector", "queue_mode", "iodepth", "paths", "mean_share",
                                            "repeats", "kernel", "selector_args", "path_scheduler", "fio_extra",
                                            "path0", "path0.completion_ns", "path0.hw_queue_depth", "path0.label"]),
                          st.one_of(st.just("<drop>"), json_value)), max_size=3))
def test_generated_lab_results_are_validated_or_refused(changes):
    cell = json.loads(json.dumps(_lab_cell()))
    for key, value in changes:
        _change(cell, key, value)
    results = _file(json.dumps([cell]), ".json")
    try:
        rc, _, err = run_cli(["validate", results, "--runtime", "0.05"])
        check_contract(rc, err)
        if rc == 3:
            assert results in err
    finally:
        os.unlink(results)


def test_lab_results_refusals_name_the_file_the_cell_and_the_field():
    cell = _lab_cell()
    for change, expected in ((("iodepth", 0), "cell 1: iodepth is 0, not from 1 to 65536"),
                             (("paths", [{"label": "p0"}]), "cell 1: path 0: completion_ns is missing"),
                             (("selector", "round robin"), "cell 1: selector is 'round robin'"),
                             (("path_scheduler", "cfq"),
                              "cell D1-4 historical-service-time bio d16 (kernel 6.1): path p0: scheduler must be")):
        results = _file(json.dumps([dict(cell, **dict([change]))]), ".json")
        try:
            rc, _, err = run_cli(["validate", results, "--runtime", "0.05"])
        finally:
            os.unlink(results)
        assert rc == 3 and err.startswith("mpathlab: error: %s: %s" % (results, expected)) and err.count("\n") == 1, err


def _stored(name):
    with open(os.path.join(os.path.dirname(__file__), "..", "validation", "kernel-lab", name)) as f:
        return json.load(f)


@settings(SETTINGS, max_examples=max(5, SETTINGS.max_examples // 4))
@given(st.sampled_from(["fault", "nvme"]), st.integers(0, 10 ** 6),
       st.lists(st.tuples(st.integers(0, 100), st.one_of(st.just("<drop>"), json_value)), max_size=3))
def test_generated_fault_and_nvme_results_are_validated_or_refused(kind, pick, changes):
    """validate-faults and validate-nvme on one stored cell (and, for NVMe, its calibration cell) with
    fields dropped or replaced: a table, or one line naming the file."""
    if kind == "fault":
        cells, argv = _stored("results-faults.json"), ["validate-faults"]
    else:
        cells, argv = _stored(os.path.join("nvme", "results-nvme.json")), ["validate-nvme"]
    cell = cells[pick % len(cells)]
    for key, value in changes:
        key = sorted(cell)[key % len(cell)]             # a field the cell has
        _change(cell, key, value)
    if type(cell.get("runtime_s")) in (int, float) and cell["runtime_s"] > 10:
        cell["runtime_s"] = 10          # a valid but long run: minutes in the Python engine, not a parser case
    keep = [cell] + [c for c in cells if kind == "nvme" and c is not cell and c["cell"] in ("C1", "C1-loop")
                     and c.get("kernel") == cell.get("kernel")][:1]
    results = _file(json.dumps(keep), ".json")
    try:
        rc, _, err = run_cli(argv + [results])
        check_contract(rc, err)
    finally:
        os.unlink(results)
