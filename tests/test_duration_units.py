"""A bare number in a duration is refused, not read as nanoseconds (issue 10:
"a bare number in a duration silently means ns"), in every place a user
writes one; and a --conf path topology's errors name the file and line once."""
import os

import pytest
from hypothesis import given, strategies as st

from mpathlab.cli import main
from mpathlab.units import UnitError, parse_duration_ns

T2 = "0 2097152 multipath 0 0 1 1 service-time 0 2 2 sdb 1 1 sdc 1 1"
EX = os.path.join(os.path.dirname(__file__), "..", "examples")


@pytest.fixture
def job(tmp_path):
    p = tmp_path / "j.fio"
    p.write_text("[j]\nrw=read\nbs=4k\nnumber_ios=10\n")
    return str(p)


def _err(capsys, argv):
    assert main(argv) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    return err.strip()


@given(st.one_of(st.integers(1, 10 ** 15), st.floats(1e-3, 1e12)))
def test_a_bare_nonzero_number_is_refused_with_units_suggested(n):
    for v in (n, str(n)):
        with pytest.raises(UnitError, match=r"^x: .* has no unit \(write e.g. "):
            parse_duration_ns(v, "x")


def test_zero_and_numbers_with_units_and_explicit_default_units():
    assert parse_duration_ns(0, "x") == parse_duration_ns("0", "x") == 0
    assert parse_duration_ns("400us", "x") == 400_000 and parse_duration_ns("2ms", "x") == 2_000_000
    assert parse_duration_ns("400", "x", default_unit="us") == 400_000     # empirical latency files say their unit
    with pytest.raises(UnitError, match="not a duration below 2\\^63"):
        parse_duration_ns(1e400, "x")


@pytest.mark.parametrize("argv,needle", [
    (["--table", T2, "--service", "400"], "--service: '400' has no unit (write e.g. 400us, 400ms or 400ns)"),
    (["--table", T2, "--service", "exponential:400"], "'400' has no unit"),
    (["--table", T2, "--delay", "400"], "--delay: '400' has no unit"),
    (["--table", T2, "--model", "sdb,delay=5"], "--model sdb: '5' has no unit"),
])
def test_cli_durations_without_unit(capsys, job, argv, needle):
    assert needle in _err(capsys, ["run", *argv, job])


@pytest.mark.parametrize("body,needle", [
    ('[paths.sdb]\nservice = 100\n', "t.toml:4: paths.sdb.service: 100 has no unit"),
    ('[paths.sdb]\nservice = "100us"\ndelay = 50\n', "t.toml:5: paths.sdb.delay: 50 has no unit"),
    ('[paths.sdb]\nservice = { dist = "lognormal", mean = 100, sigma = 0.5 }\n',
     "t.toml:4: paths.sdb.service.mean: 100 has no unit"),
    ('[paths.sdb]\nservice = "100us"\nfaults = [{ at = 5, action = "fail" }]\n',
     "t.toml:5: paths.sdb.faults[0].at: 5 has no unit"),
])
def test_topology_durations_without_unit(tmp_path, capsys, job, body, needle):
    topo = tmp_path / "t.toml"
    topo.write_text('[multipath]\ntable = "%s"\n%s[paths.sdc]\nservice = "100us"\n' % (T2, body))
    assert needle in _err(capsys, ["run", str(topo), job])


def test_live_delay_without_unit(tmp_path, capsys):
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    err = _err(capsys, ["live", os.path.join(EX, "live.fio"), "--path", a, "--path", b, "--delay", b + "=2"])
    assert "--delay: '2' has no unit" in err and not os.path.exists(a)


@pytest.mark.parametrize("body,needle", [
    ('[paths.sda]\nservice = "1ms"\nfaults = [{ at = "x", action = "fail" }]\n',
     "pt.toml:3: paths.sda.faults[0].at: cannot read 'x' as a duration"),
    ('[paths.sda]\nservice = "1ms"\n[paths.sdb]\nservice = 0\n',
     "pt.toml:4: paths.sdb.service: the mean service time must be above 0"),
    ('[paths.sda]\nservice = "1ms"\nbogus = 1\n', "pt.toml:3: paths.sda has unknown key(s) bogus"),
    ('[map]\nsize = "abc"\n[paths.sda]\nservice = "1ms"\n', "pt.toml:2: [map] size: size must be like"),
])
def test_conf_path_topology_errors_name_file_and_line_once(tmp_path, capsys, job, body, needle):
    topo = tmp_path / "pt.toml"
    topo.write_text(body)
    err = _err(capsys, ["run", "--conf", os.path.join(EX, "mtools", "multipath.conf"), str(topo), job])
    assert needle in err and err.count("pt.toml") == 1
