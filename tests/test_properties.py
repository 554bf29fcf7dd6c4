"""Property tests: parsers never fail with anything but their own clear error,
and selectors keep their invariants under random operation sequences."""
import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mpathlab import selectors
from mpathlab.cli import main
from mpathlab.selectors import CpuTopology, SelectorError
from mpathlab.target import TargetError, construct, parse_status_info
from mpathlab.workload.fio import FioError, parse_fio
from mpathlab.topology import TopologyError, topology_from_dict

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

VOCAB = ["0", "1", "2", "3", "4", "1024", "1025", "-1", "x", "8:0", "8:16", "253:7", "4096:1",
         "queue_if_no_path", "QUEUE_IF_NO_PATH", "pg_init_retries", "pg_init_delay_msecs", "queue_mode", "bio",
         "rq", "mq", "retain_attached_hw_handler", "alua", "round-robin", "queue-length", "service-time",
         "historical-service-time", "io-affinity", "0f", "ff", "972", "100", "101", "", "\\", " "]

VALID = [
    "0 0 1 1 round-robin 0 2 0 8:16 8:32",
    "1 queue_if_no_path 0 2 1 service-time 0 2 2 8:16 1 1 8:32 1 1 service-time 0 2 2 8:48 1 1 8:64 1 1",
    "2 queue_mode bio 0 1 1 historical-service-time 2 972 1 2 1 8:16 0 8:32 0",
    "4 pg_init_retries 3 pg_init_delay_msecs 50 1 alua 1 1 queue-length 0 1 1 8:0 1",
    "0 0 1 1 io-affinity 0 2 1 8:16 0f 8:32 f0",
]


def mutate(tokens, rnd):
    tokens = list(tokens)
    for _ in range(rnd.randint(1, 3)):
        op = rnd.randrange(4)
        i = rnd.randrange(len(tokens) + 1)
        if op == 0 and tokens:
            del tokens[min(i, len(tokens) - 1)]
        elif op == 1:
            tokens.insert(i, rnd.choice(VOCAB))
        elif op == 2 and tokens:
            tokens[min(i, len(tokens) - 1)] = rnd.choice(VOCAB)
        else:
            tokens = tokens[:i]
    return tokens


def check_table(params):
    try:
        m = construct(params)
    except TargetError as e:
        assert e.message and isinstance(e.message, str)
        return None
    table = m.table()
    assert table.endswith(" ")
    again = construct(table)
    if "\\" in params:
        # dm_split_args unescapes a backslash ("1 \\ alua": the handler " alua") and the status prints the name
        # as it is ("1  alua"), so such a table is canonical from its second printing on, as in the kernel
        table = again.table()
        again = construct(table)
    assert again.table() == table                    # canonical form is a fixed point
    info = parse_status_info(m.status("info"))       # status parses back
    assert info["nr_groups"] == m.nr_priority_groups
    assert [len(g["paths"]) for g in info["groups"]] == [pg.nr_pgpaths for pg in m.priority_groups]
    ima = m.status("ima")
    assert ima.startswith("target_name=multipath,target_version=1.15.0,") and ima.endswith(";")
    return m


def test_an_escaped_space_in_a_name_is_printed_as_the_kernel_prints_it():
    """dm_split_args turns "\\ alua" into one argument " alua"; multipath_status prints the handler's name
    verbatim, and the printed table reads back as "alua" (found by the property test below)."""
    m = construct("4 pg_init_retries 3 pg_init_delay_msecs 50 1 \\ alua 1 1 queue-length 0 1 1 8:0 3")
    assert m.table() == "4 pg_init_retries 3 pg_init_delay_msecs 50 1  alua 1 1 queue-length 0 1 1 8:0 1 "
    assert construct(m.table()).table() == \
        "4 pg_init_retries 3 pg_init_delay_msecs 50 1 alua 1 1 queue-length 0 1 1 8:0 1 "
    check_table("4 pg_init_retries 3 pg_init_delay_msecs 50 1 \\ alua 1 1 queue-length 0 1 1 8:0 3")


@SETTINGS
@given(st.sampled_from(VALID), st.integers(0, 2 ** 32))
def test_mutated_tables_give_kernel_errors_or_valid_devices(base, seed):
    check_table(" ".join(mutate(base.split(), random.Random(seed))))


@SETTINGS
@given(st.lists(st.sampled_from(VOCAB), max_size=30))
def test_random_token_tables(tokens):
    check_table(" ".join(tokens))


@SETTINGS
@given(st.text(max_size=80))
def test_arbitrary_text_tables(text):
    check_table(text)


FIO_KEYS = ["rw", "bs", "iodepth", "size", "numjobs", "runtime", "time_based", "rwmixread", "ioengine",
            "percentile_list", "bogus", "number_ios", "continue_on_error", "startdelay", "io_size"]
FIO_VALS = ["", "4k", "1m", "randwrite", "randrw", "read", "7", "0", "-3", "abc", "50%", "1:99.9", "2s",
            "io", "libaio", "${HOME}", "${NOPE_NOT_SET}", "4k,8k"]


@st.composite
def fio_text(draw):
    lines = []
    for _ in range(draw(st.integers(0, 4))):
        lines.append("[%s]" % draw(st.sampled_from(["global", "a", "b", "", "job one"])))
        for _ in range(draw(st.integers(0, 5))):
            k = draw(st.sampled_from(FIO_KEYS))
            if draw(st.booleans()):
                lines.append("%s=%s" % (k, draw(st.sampled_from(FIO_VALS))))
            else:
                lines.append(k)
        if draw(st.booleans()):
            lines.append(draw(st.text(max_size=15)))
    return "\n".join(lines)


@SETTINGS
@given(fio_text())
def test_fio_parser_only_raises_fio_errors(text):
    try:
        f = parse_fio(text, "fuzz.fio")
    except FioError as e:
        assert "fuzz.fio" in str(e)
        return
    for job in f.jobs:
        assert 0 < job.bs <= 2 ** 63 - 1 and job.iodepth >= 1   # no size: the whole device


_scalar = st.one_of(st.integers(-5, 10 ** 6), st.booleans(), st.text(max_size=8),
                    st.sampled_from(["100us", "8:0", "exponential", "lognormal", "1s", "fail", "slow"]))
_value = st.recursive(_scalar, lambda c: st.one_of(st.lists(c, max_size=3),
                                                   st.dictionaries(st.sampled_from(
                                                       ["dist", "mean", "sigma", "at", "action", "factor", "x"]),
                                                       c, max_size=3)), max_leaves=6)


@st.composite
def topo_doc(draw):
    doc = {"multipath": {"table": draw(st.sampled_from([
        "0 100 multipath 0 0 1 1 round-robin 0 1 0 sda", "0 100 multipath 0 0 1 1 queue-length 0 2 0 sda sdb",
        "0 0 multipath 0 0 0 0", "garbage"]))},
        "paths": {"sda": {"devt": "8:0", "service": "100us"}}}
    for _ in range(draw(st.integers(0, 4))):
        section = draw(st.sampled_from(["multipath", "sda", "sdb", "top"]))
        key = draw(st.sampled_from(["hz", "rq_stats", "seed", "uptime", "devt", "service", "parallelism",
                                    "delay", "faults", "per_kib", "hst_select_clock", "bogus"]))
        val = draw(_value)
        if section == "multipath":
            doc["multipath"][key] = val
        elif section == "top":
            doc[key] = val
        else:
            doc["paths"].setdefault(section, {"devt": "8:16", "service": "1ms"})[key] = val
    return doc


@SETTINGS
@given(topo_doc())
def test_topology_parser_only_raises_topology_errors(doc):
    try:
        topology_from_dict(doc, "fuzz.toml")
    except TopologyError as e:
        assert str(e)


ARG = st.sampled_from(["0", "1", "2", "100", "101", "1023", "1024", "4294967295", "4294967296", "-1", "x",
                       "", "0f", "ff", "1,0", " 7", "12345678901234567890"])


@SETTINGS
@given(st.sampled_from(selectors.names()), st.lists(ARG, max_size=3), st.lists(ARG, max_size=3))
def test_selector_arguments_only_raise_selector_errors(name, create_args, path_args):
    try:
        ps = selectors.create(name, create_args, topology=CpuTopology(8))
        ps.add_path("p", path_args)
    except SelectorError as e:
        assert e.errno > 0
        return
    assert isinstance(ps.status("p", "table"), str)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(VOCAB), max_size=12))
def test_cli_table_exits_cleanly(tokens):
    import contextlib
    import io
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(["table", "--status", "info"] + [t for t in tokens if t.strip()] + ["0"])
    err = err.getvalue()
    assert rc in (0, 3)
    if rc:
        assert err.startswith("mpathlab: error: ") and len(err.strip().splitlines()) == 1


# ------------------------------------------------------------ selector invariants
OPS = st.lists(st.tuples(st.sampled_from(["select", "end", "fail", "reinstate", "tick"]),
                         st.integers(0, 5), st.integers(1, 3_000_000)), max_size=150)


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(["round-robin", "queue-length", "service-time", "historical-service-time",
                        "io-affinity"]), st.integers(1, 6), OPS)
def test_selector_invariants_under_random_operations(name, npaths, ops):
    clock = [10 ** 9]
    cpu = [0]
    ps = selectors.create(name, [], clock=lambda: clock[0], cpu=lambda: cpu[0], topology=CpuTopology(8))
    paths = ["p%d" % i for i in range(npaths)]
    for i, p in enumerate(paths):
        ps.add_path(p, ["%x" % (1 << i)] if name == "io-affinity" else [])
    failed = set()
    inflight = []                      # (path, bytes, start)
    per_path = {p: 0 for p in paths}
    for op, idx, amount in ops:
        p = paths[idx % npaths]
        if op == "select":
            cpu[0] = idx % 8
            chosen = ps.select_path(4096)
            if len(failed) == npaths:
                assert chosen is None
                continue
            assert chosen is not None and chosen not in failed
            ps.start_io(chosen, 4096)
            inflight.append((chosen, 4096, clock[0]))
            per_path[chosen] += 1
        elif op == "end" and inflight:
            q, nb, start = inflight.pop(idx % len(inflight))
            ps.end_io(q, nb, start)
            per_path[q] -= 1
        # the core only fails active paths and reinstates failed ones (the
        # selectors, like the kernel's, trust it: HST's valid_count would drift)
        elif op == "fail" and p not in failed:
            ps.fail_path(p)
            failed.add(p)
        elif op == "reinstate" and p in failed:
            ps.reinstate_path(p)
            failed.discard(p)
        elif op == "tick":
            clock[0] += amount
        # in-flight accounting matches what was started and not ended
        for q in paths:
            if name == "queue-length":
                assert ps.in_flight(q) == per_path[q] >= 0
            elif name == "service-time":
                assert ps.in_flight(q) == 4096 * per_path[q] >= 0
            elif name == "historical-service-time":
                assert ps.path_state(q)[1] == per_path[q] >= 0
        # status strings have the advertised number of fields
        for q in paths:
            assert len(ps.status(q, "info").split()) == type(ps).info_args
            assert len(ps.status(q, "table").split()) == type(ps).table_args
            assert ps.status(q, "ima") == ""
    if name == "historical-service-time":
        assert ps.valid_count == npaths - len(failed)


# ------------------------------------------------------------ target invariants
TARGET_TABLES = [
    "1 queue_if_no_path 0 2 1 service-time 0 2 2 8:16 1 1 8:32 1 1 service-time 0 2 2 8:48 1 1 8:64 1 1",
    "3 queue_if_no_path queue_mode bio 0 2 2 historical-service-time 0 2 1 8:16 0 8:32 0 "
    "round-robin 0 1 1 8:48 1",
    "0 0 3 1 queue-length 0 1 1 8:16 1 queue-length 0 1 1 8:32 1 queue-length 0 1 1 8:16 1",
    "0 0 1 1 round-robin 0 3 0 8:16 8:32 8:48",
]
TARGET_OPS = st.lists(st.tuples(st.sampled_from(["map", "end", "err", "fail", "reinstate", "switch", "disable",
                                                 "enable", "fail_if_no_path", "queue_if_no_path"]),
                                st.integers(0, 7)), max_size=120)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(TARGET_TABLES), TARGET_OPS)
def test_target_invariants_under_random_operations(params, ops):
    from mpathlab.target import MAP_REMAPPED, MessageError, MpathIO
    m = construct(params)
    devs = sorted({p.dev.name for p in m.pgpaths})
    inflight = []
    for op, k in ops:
        if op == "map":
            io = MpathIO(4096)
            if m.map(io) == MAP_REMAPPED:
                assert io.pgpath.is_active                     # never a failed path
                inflight.append(io)
        elif op in ("end", "err"):
            if inflight:
                io = inflight.pop(k % len(inflight))
                m.end_io(io, "transport" if op == "err" else None)
        else:
            words = {"fail": ["fail_path", devs[k % len(devs)]], "reinstate": ["reinstate_path", devs[k % len(devs)]],
                     "switch": ["switch_group", str(k % 4)], "disable": ["disable_group", str(k % 4)],
                     "enable": ["enable_group", str(k % 4)], "fail_if_no_path": ["fail_if_no_path"],
                     "queue_if_no_path": ["queue_if_no_path"]}[op]
            try:
                m.message(*words)
            except MessageError as e:
                assert e.errno == 22
        # the core's count matches the paths' states
        assert m.nr_valid_paths == sum(p.is_active for p in m.pgpaths)
        info = parse_status_info(m.status("info"))
        flat = [p for g in info["groups"] for p in g["paths"]]
        assert [(p["dev"], p["active"], p["fail_count"]) for p in flat] == [
            (p.dev.name, p.is_active, p.fail_count) for p in m.pgpaths]
        assert sum(g["state"] == "A" for g in info["groups"]) <= 1
        assert construct(m.table()).table().split()[:2] == m.table().split()[:2]
    # completing everything leaves every selector's accounting at zero
    for io in inflight:
        m.end_io(io)
    m.take_queued()
    for pg in m.priority_groups:
        for p in pg.pgpaths:
            if pg.ps.name == "queue-length":
                assert pg.ps.in_flight(p) == 0
            elif pg.ps.name == "service-time":
                assert pg.ps.in_flight(p) == 0
            elif pg.ps.name == "historical-service-time":
                assert pg.ps.path_state(p)[1] == 0


# ------------------------------------------------------------ whole input files and command lines
# The classes of bad input users hit: non-UTF-8 bytes, duplicated names, zero / negative / huge numbers,
# unknown keys.  Whatever the mix, the CLI exits 0 or 3 (never "internal error" 70, never a hang), and on 3
# prints one line that names the file.
import contextlib
import io
import os
import tempfile

NUMBERS = ["0", "-1", "1", "7", "18446744073709551616", "1e308", "nan", "9" * 40, "0.0", "-0"]
DURATIONS = ['"0us"', '"-5us"', '"100us"', '"1ms"', '"99999999999999999999h"', "0", "-3", "1e400", '"nan"']
BAD_BYTES = [b"\xff", b"\xfe\xfe", b"\xc3", b"\x00", b"\xed\xa0\x80", b"\xe9"]


def _run_cli(argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main(argv)
        except SystemExit as e:          # argparse usage errors
            rc = e.code
    return rc, err.getvalue()


def _assert_clean(rc, err, name=None):
    assert rc in (0, 2, 3, 5), (rc, err)
    if rc in (3, 5):
        lines = err.strip().splitlines()
        assert lines[-1].startswith("mpathlab: error: ") and "internal error" not in err, err
        assert all(not l.startswith("mpathlab: error: ") for l in lines[:-1])
        if name is not None and rc == 3:
            assert name in lines[-1], lines[-1]


@st.composite
def topo_file(draw):
    paths = draw(st.lists(st.sampled_from(["sdb", "sdc", "sdd"]), min_size=1, max_size=4))  # may repeat
    table = "0 8 multipath 0 0 1 1 round-robin 0 %d 1 %s" % (len(set(paths)), " ".join("%s 1" % p for p in
                                                                                          dict.fromkeys(paths)))
    lines = ["[multipath]", 'table = "%s"' % table]
    if draw(st.booleans()):
        lines.append("%s = %s" % (draw(st.sampled_from(["hz", "seed", "uptime", "nr_cpus", "bogus", "activation"])),
                                  draw(st.sampled_from(NUMBERS + DURATIONS))))
    for i, p in enumerate(paths):
        lines.append("[paths.%s]" % p)                       # a repeated name is a TOML error
        lines.append('devt = "8:%d"' % (16 * (i % 3 + 1) if draw(st.booleans()) else 16))   # maybe the same devt
        lines.append("service = %s" % draw(st.sampled_from(DURATIONS)))
        for _ in range(draw(st.integers(0, 2))):
            key = draw(st.sampled_from(["parallelism", "parallelism", "delay", "per_kib", "speed", "fail_latency"]))
            lines.append("%s = %s" % (key, draw(st.sampled_from(NUMBERS + DURATIONS))))
    data = "\n".join(lines).encode() + b"\n"
    if draw(st.integers(0, 4)) == 0:
        at = draw(st.integers(0, len(data)))
        data = data[:at] + draw(st.sampled_from(BAD_BYTES)) + data[at:]
    return data


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(topo_file())
def test_cli_run_on_generated_topology_files(data):
    with tempfile.TemporaryDirectory() as d:
        topo = os.path.join(d, "gen.toml")
        job = os.path.join(d, "j.fio")
        with open(topo, "wb") as f:
            f.write(data)
        with open(job, "w") as f:
            f.write("[j]\nrw=randwrite\nbs=4k\nnumber_ios=20\n")
        rc, err = _run_cli(["run", topo, job, "--no-progress"])
        _assert_clean(rc, err, "gen.toml")
        assert rc in (0, 3)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(VOCAB + NUMBERS), st.text(max_size=4)), max_size=14),
       st.booleans())
def test_table_lines_with_huge_and_negative_numbers(tokens, full):
    line = " ".join(tokens)
    if full:
        line = "0 %s multipath %s" % (draw_len(tokens), line)
    try:
        from mpathlab.target import parse
        (parse if full else construct)(line)
    except TargetError as e:
        assert e.message


def draw_len(tokens):
    return tokens[0] if tokens and tokens[0].strip() else "8"


CSV_COLS = ["selector", "iodepth", "seed", "mean_deviation", "lat_p99_ns", "iops", "selector", "bogus"]


@st.composite
def sweep_csv(draw):
    cols = draw(st.lists(st.sampled_from(CSV_COLS), min_size=0, max_size=6))
    lines = [",".join(cols)]
    for _ in range(draw(st.integers(0, 4))):
        n = len(cols) + draw(st.sampled_from([0, 0, 0, -1, 1]))
        lines.append(",".join(draw(st.sampled_from(NUMBERS + ["service-time", "", "x", "1"])) for _ in range(max(n, 0))))
    data = "\n".join(lines).encode()
    if draw(st.integers(0, 5)) == 0:
        at = draw(st.integers(0, len(data)))
        data = data[:at] + draw(st.sampled_from(BAD_BYTES)) + data[at:]
    return data


@settings(max_examples=200, deadline=None)
@given(sweep_csv())
def test_sweep_table_reader_only_raises_input_errors(data):
    from mpathlab.inputs import InputFileError
    from mpathlab.sweep import REPORT_COLUMNS, SweepError, read_rows
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "gen.csv")
        with open(p, "wb") as f:
            f.write(data)
        try:
            rows = read_rows(p)
        except (SweepError, InputFileError) as e:
            assert "gen.csv" in str(e) and "\n" not in str(e)
            return
    assert rows and all(set(REPORT_COLUMNS) <= set(r) for r in rows)
    assert all(isinstance(r["iodepth"], int) and r["iodepth"] >= 1 for r in rows)


CLI_WORDS = ["run", "table", "status", "faults", "selectors", "--table", "--selector", "--service", "--model",
             "--parallelism", "--delay", "--seed", "--hz", "--json", "--kind", "--list", "-q", "-v", "", "0", "-1",
             "18446744073709551616", "sdb", "sdb,service=0us", "sdb,", "round-robin", "bogus", "exponential:0us",
             "lognormal:1us:-1", "0 8 multipath 0 0 1 1 round-robin 0 1 1 sdb 1", "2 0 0 0 1 1 A 0 1 0 8:16 A 0",
             "mpatha: 0 8 multipath 2 0 0 0 1 1 A 0 1 0 8:16 A 0", "JOB", "\udcff\udcfe", "slow-path-20x"]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(CLI_WORDS), min_size=1, max_size=7))
def test_cli_arguments_exit_cleanly(words):
    if "faults" in words and "--list" not in words:
        words = [w for w in words if w != "slow-path-20x"]     # a fault study takes seconds; not here
    with tempfile.TemporaryDirectory() as d:
        job = os.path.join(d, "j.fio")
        with open(job, "w") as f:
            f.write("[j]\nrw=randread\nbs=4k\nnumber_ios=20\n")
        rc, err = _run_cli([job if w == "JOB" else w for w in words] + ["--no-progress"] * ("run" == words[0]))
    _assert_clean(rc, err)
