"""Whole `dmsetup status` / `dmsetup table` outputs, `mpathlab status`, and
kernel log lines in the CLI, checked against real kernel captures."""
import io
import json
import os
import sys

import pytest
from hypothesis import given, settings, strategies as st

from mpathlab import cli, klog
from mpathlab.target import parse, table_line
from mpathlab.target.explain import explain_status
from mpathlab.target.status_parse import (StatusParseError, explain_dmsetup, parse_dmsetup_status,
                                          parse_dmsetup_table, parse_status_info, split_dmsetup_output)

# the captures from Debian 6.1 and 6.12, kept in the repository (tests/data/kernel-captures)
CAPTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "kernel-captures")
VERSIONS = ("linux-6.1", "linux-6.12")


def _cases(version):
    path = os.path.join(CAPTURES, version, "cases.json")
    with open(path) as f:
        return json.load(f)["cases"]


def _captured(version):
    """Every dmsetup status and table string of the captures (after loading, after each step, during I/O)."""
    statuses, tables = [], []
    for c in _cases(version):
        if c.get("dmsetup_status"):
            statuses.append(c["dmsetup_status"])
            tables.append(c["dmsetup_table"])
        for s in c["steps"]:
            for k in ("dmsetup_status", "dmsetup_status_during_io"):
                if s.get(k):
                    statuses.append(s[k])
            if s.get("dmsetup_table"):
                tables.append(s["dmsetup_table"])
    return statuses, tables


@pytest.mark.parametrize("version", VERSIONS)
def test_every_captured_status_and_table_line_parses(version):
    statuses, tables = _captured(version)
    assert len(statuses) > 60 and len(tables) > 60
    for text in statuses:
        (info,) = parse_dmsetup_status(text)
        assert info["length"] == 2097152 and info["name"] is None
        # what the kernel printed, token for token, can be rebuilt from the parse
        assert _rebuild_info(info) == text.split(None, 3)[3].split()
        # and with the name prefix `dmsetup status` prints for several devices
        (named,) = parse_dmsetup_status("mp: " + text)
        assert named["name"] == "mp" and named["groups"] == info["groups"]
    for text in tables:
        ((dl, m),) = parse_dmsetup_table(text, nr_cpu_ids=2)       # the capture VM had 2 CPUs
        assert table_line(m) == text.rstrip("\n")
    # the whole output at once, as `dmsetup status` lists several devices, with other targets in between
    listing = "".join("mp%d: %s" % (i, s) for i, s in enumerate(statuses)) + "vg-root: 0 8388608 linear 8:2 2048\n"
    parsed = parse_dmsetup_status(listing)
    assert [p["name"] for p in parsed] == ["mp%d" % i for i in range(len(statuses))]


def _rebuild_info(info):
    out = [str(len(info["features"]))] + info["features"] + [str(len(info["hw"]))] + info["hw"]
    out += [str(info["nr_groups"]), str(info["current_group"])]
    for g in info["groups"]:
        out += [g["state"], str(len(g["selector_status"]))] + g["selector_status"]
        out += [str(len(g["paths"])), str(g["nr_fields"])]
        for p in g["paths"]:
            out += [p["dev"], "A" if p["active"] else "F", str(p["fail_count"])] + p["selector"]
    return out


def test_split_accepts_every_form_dmsetup_prints():
    text = ("mpatha: 0 2097152 multipath 2 0 0 0 1 1 A 0 2 0 8:16 A 0 8:32 F 1 \n"
            "vg-root: 0 100 linear 8:1 0\n\n"
            "0 4096 multipath 2 1 0 0 1 1 E 0 1 0 8:48 A 0\n"
            "2 0 0 0 1 1 A 0 1 0 8:64 A 0\n")
    lines = split_dmsetup_output(text)
    assert [(d.name, d.start, d.length, d.lineno) for d in lines] == [
        ("mpatha", 0, 2097152, 1), (None, 0, 4096, 4), (None, None, None, 5)]
    assert split_dmsetup_output("No devices found\n") == []
    # a bare table with a hardware handler has a word in third place: still a multipath line
    (d,) = split_dmsetup_output("0 1 alua 1 1 round-robin 0 1 1 8:16 1")
    assert d.start is None and d.params.startswith("0 1 alua")


def test_explanation_names_groups_paths_and_selector_fields():
    text = "mpatha: 0 2097152 multipath 2 1 0 0 2 2 E 0 2 2 8:16 A 0 0 1 8:32 F 3 4096 2 A 0 1 2 8:48 A 0 8192 1\n"
    lines = explain_dmsetup(text)
    joined = "\n".join(lines)
    assert lines[0] == "mpatha (2097152 sectors, 1 GiB): multipath status"
    assert "queue_io=1: I/O is held" in joined
    assert "2 priority groups; group 2 is in use" in joined
    assert "group 2: A (active: the group in use), selector service-time" in joined and "<- in use" in lines[
        [i for i, l in enumerate(lines) if l.startswith("  group 2")][0]]
    assert "    8:32       FAILED  fail_count=3  in_flight_size=4096 relative_throughput=2" in lines
    assert "    8:48       active  fail_count=0  in_flight_size=8192 relative_throughput=1" in lines
    # one field per path: queue-length or io-affinity, the table says which
    amb = explain_dmsetup("2 0 0 0 1 1 A 0 1 1 8:16 A 0 7")
    assert any("one of queue-length, io-affinity" in l for l in amb)
    named = explain_dmsetup("2 0 0 0 1 1 A 0 1 1 8:16 A 0 7",
                            table="0 8 multipath 0 0 1 1 io-affinity 0 1 1 8:16 1")
    assert "    8:16       active  fail_count=0  map_misses=7" in named


def test_status_command_reads_stdin_and_args(monkeypatch, capsys):
    line = "mpatha: 0 2097152 multipath 2 0 0 0 1 1 A 0 2 0 8:16 A 0 8:32 F 1"
    assert cli.main(["status"] + line.split()) == 0          # unquoted, as the shell splits it
    out = capsys.readouterr().out
    assert "8:32       FAILED  fail_count=1" in out and "selector round-robin" in out
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO((line + "\n" + line.replace("mpatha", "mpathb"))
                                                                    .encode())))
    assert cli.main(["status", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [d["name"] for d in doc] == ["mpatha", "mpathb"] and doc[0]["groups"][0]["paths"][1]["fail_count"] == 1


@pytest.mark.parametrize("text,needle", [
    ("2 0 0 0 1 1 X 0 1 0 8:16 A 0", "input:1: neither a multipath status"),
    ("mpatha: 0 10 multipath 2 0 0 0 1 1 A 0 1 0 8:16 A", "argument:1:"),
    ("vg: 0 10 linear 8:1 0", "no multipath lines"),
])
def test_status_command_bad_input_is_one_line_exit_3(text, needle, capsys):
    assert cli.main(["status", text]) == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("mpathlab: error: ")
    if not needle.startswith("input"):
        assert needle in err[0]


def test_status_command_non_utf8_stdin(monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"2 0 0 \xff\xfe")))
    assert cli.main(["status"]) == 3
    assert "stdin: byte 6 is not UTF-8" in capsys.readouterr().err


@pytest.mark.parametrize("version", VERSIONS)
def test_cli_shows_the_kernel_warnings_of_a_table_load_as_the_kernel_logs_them(version, capsys):
    cases = [c for c in _cases(version) if c["warnings"] and c["create_rc"] == 0]
    assert cases
    for c in cases:
        assert cli.main(["table", c["table"]]) == 0
        err = capsys.readouterr().err.splitlines()
        # exactly the lines the kernel logged for this load (once per path for a per-path warning)
        assert err == c["warnings"], (c["table"], err)
        assert cli.main(["-q", "table", c["table"]]) == 0
        assert capsys.readouterr().err == ""
        assert cli.main(["table", c["table"], "--quiet"]) == 0
        assert capsys.readouterr().err == ""
    # a refused table: the selector's warning as the kernel logged it, then one error line, exit 3
    for c in _cases(version):
        if c["create_rc"] and any("io-affinity: CPU mapping" in w for w in c["warnings"]):
            assert cli.main(["table", c["table"]]) == 3
            err = capsys.readouterr().err.splitlines()
            assert err[0] == "device-mapper: multipath io-affinity: CPU mapping for 0 exists. Ignoring."
            assert len(err) == 2 and err[1].startswith("mpathlab: error: ")
            break
    else:
        pytest.fail("no refused io-affinity case in the captures")


def test_verbose_shows_the_targets_runtime_lines(capsys):
    h = klog.setup(1, stream=sys.stderr)
    try:
        m = parse("0 8 multipath 0 0 1 1 round-robin 0 2 1 8:16 1 8:32 1")
        m.device_name = "253:0"
        m.message("fail_path", "8:16")
    finally:
        klog.teardown()
    assert "device-mapper: multipath: 253:0: Failing path 8:16." in capsys.readouterr().err


# -- property tests -----------------------------------------------------------------------------------

_tok = st.one_of(st.integers(-3, 2 ** 40).map(str), st.sampled_from(["A", "F", "E", "D", "8:16", "-", "--1", "²",
                                                                     "multipath", "mp:", "linear"]),
                 st.text(min_size=1, max_size=4).filter(lambda s: not any(c.isspace() for c in s)))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(_tok, max_size=30).map(" ".join), max_size=4).map("\n".join))
def test_status_and_table_parsers_raise_only_their_error(text):
    for fn in (parse_dmsetup_status, parse_dmsetup_table, explain_dmsetup):
        try:
            fn(text)
        except StatusParseError as e:
            assert "\n" not in str(e)


@st.composite
def _status(draw):
    ngroups = draw(st.integers(0, 3))
    nps = draw(st.integers(0, 2))
    nfields = draw(st.integers(0, 3))
    toks = ["2", draw(st.sampled_from("01")), str(draw(st.integers(0, 9))), "0", str(ngroups),
            str(draw(st.integers(1, ngroups)) if ngroups else 0)]   # the kernel's pg_num (multipath_status)
    for _ in range(ngroups):
        toks += [draw(st.sampled_from("ADE")), str(nps)] + [str(draw(st.integers(0, 10 ** 6))) for _ in range(nps)]
        npaths = draw(st.integers(0, 4))
        toks += [str(npaths), str(nfields)]
        for i in range(npaths):
            toks += ["8:%d" % (16 * i), draw(st.sampled_from("AF")), str(draw(st.integers(0, 99)))]
            toks += [str(draw(st.integers(0, 2 ** 63))) for _ in range(nfields)]
    return " ".join(toks)


@settings(max_examples=200, deadline=None)
@given(_status(), st.sampled_from(["", "mpatha: 0 2097152 multipath ", "0 8 multipath "]))
def test_valid_status_round_trips_and_explains(status, prefix):
    (info,) = parse_dmsetup_status(prefix + status)
    assert _rebuild_info(info) == status.split()
    lines = explain_status(info)
    assert sum(1 for l in lines if l.startswith("  group ")) == info["nr_groups"]
    # a truncated status is refused, never misread
    toks = status.split()
    if len(toks) > 1:
        with pytest.raises(StatusParseError):
            parse_status_info(" ".join(toks[:-1]))


def test_a_run_shows_the_load_warnings_once_per_path_although_it_builds_the_table_again(tmp_path, capsys):
    job = tmp_path / "j.fio"
    job.write_text("[j]\nrw=read\nbs=4k\nnumber_ios=10\n")
    assert cli.main(["run", "--table", "0 8 multipath 0 0 1 1 round-robin 0 2 1 sdb 1000 sdc 1000", str(job),
                     "--no-progress"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err == ["device-mapper: multipath round-robin: repeat_count > 1 is deprecated, using 1 instead"] * 2
