"""Numbers and text as the kernel, dmsetup and fio read them: ASCII decimal digits, u32/u64/sector
bounds, thousands of digits refused before Python's int-string limit, control bytes never echoed."""
import pytest

from badinput_util import ASYM, JOB, TOPO, one_error, write

BIG = "9" * 5000
STATUS = "mpatha: 0 2097152 multipath 2 0 0 0 1 %s A 0 1 2 8:16 A %s 0 1"


def test_status_line_with_a_5000_digit_number(capsys):
    msg = one_error(capsys, ["status", STATUS % (1, BIG)])
    assert "fail count '9999" in msg and "(5000 characters) is not an unsigned 32-bit number" in msg
    assert len(msg) < 400
    msg = one_error(capsys, ["status", "mpatha: 0 %s multipath 2 0 0 0 1 1 A 0 1 2 8:16 A 0 0 1" % BIG])
    assert msg.startswith("argument:1: length '9999") and "does not fit sector_t" in msg


@pytest.mark.parametrize("group,needle", [
    ("-7", "current group must not be negative, got -7"),
    ("7", "current group 7 is not a group of the 1 listed"),
    ("4294967296", "current group '4294967296' is not an unsigned 32-bit number"),
])
def test_status_current_group_outside_the_groups(capsys, group, needle):
    # dm-mpath.c multipath_status prints next_pg, else current_pg, else 1: always one of the groups
    assert needle in one_error(capsys, ["status", STATUS % (group, 0)])


def test_status_current_group_in_range_is_still_explained(capsys):
    from mpathlab import cli
    assert cli.main(["status", STATUS % (1, 0)]) == 0
    assert "1 priority group; group 1 is in use" in capsys.readouterr().out


@pytest.mark.parametrize("data,needle", [
    (b"mpatha: 0 2097152 multipath 2 0 0 0 1 1 A 0 1 2 8:16\0 A 0 0 1\n", "stdin:1: a control character U+0000 (column 53)"),
    (b"mpatha: 0 2097152 multipath 2 0 0 0 1 1 A 0 1 2 \x1b[31m A 0 0 1\n", "stdin:1: a control character U+001B (column 49)"),
    (b"\n\nmpatha: 0 8 multipath 2 0 0 0 1 1 A 0 1 2 8:16 A 0 0 1\x07\n", "stdin:3: a control character U+0007"),
    (b"\x1f\x8b\x08\x00" + bytes(range(1, 40)), "stdin:1: gzip-compressed data"),
])
def test_status_input_with_control_bytes_is_refused_not_echoed(capsys, data, needle):
    assert needle in one_error(capsys, ["status"], stdin=data)


@pytest.mark.parametrize("line,needle", [
    ("0 18446744073709551616 multipath 0 0 1 1 round-robin 0 1 1 8:16 1",
     "start 0 + length 18446744073709551616 sectors does not fit sector_t"),
    ("0 162259276829213363391578010288127 multipath 0 0 1 1 round-robin 0 1 1 8:16 1",
     "start and length must be sector counts"),
    ("18446744073709551615 1 multipath 0 0 1 1 round-robin 0 1 1 8:16 1", "does not fit sector_t"),
    ("0 1_0 multipath 0 0 1 1 round-robin 0 1 1 8:16 1", "start and length must be sector counts (decimal digits)"),
    ("0 \u0661\u0660 multipath 0 0 1 1 round-robin 0 1 1 8:16 1", "start and length must be sector counts"),
])
def test_table_lengths_beyond_sector_t(capsys, line, needle):
    assert needle in one_error(capsys, ["table", line])


def test_largest_sector_count_still_accepted(capsys):
    from mpathlab import cli
    assert cli.main(["table", "0 18446744073709551615 multipath 0 0 1 1 round-robin 0 1 1 8:16 1"]) == 0


def test_status_listing_of_a_map_beyond_sector_t(capsys):
    msg = one_error(capsys, ["status", "mpatha: 0 162259276829213363391578010288127 multipath 2 0 0 0 1 1 A 0 1 2 "
                                       "8:16 A 0 0 1"])
    assert msg.startswith("argument:1: length '162259276829213363391578010288127' sectors does not fit sector_t")


def test_topology_with_a_5000_digit_number(tmp_path, capsys):
    topo = write(tmp_path, "t.toml", TOPO.replace('devt = "8:32"', 'devt = "8:32"\nparallelism = %s' % BIG))
    msg = one_error(capsys, ["run", topo, write(tmp_path, "j.fio", JOB)])
    assert msg == "%s:8: a number of 5000 digits in the topology file; no value here needs more than 20" % topo


def test_fio_file_with_a_5000_digit_number(tmp_path, capsys):
    job = write(tmp_path, "j.fio", JOB.replace("number_ios=50", "number_ios=" + BIG))
    msg = one_error(capsys, ["run", ASYM, job])
    assert msg.startswith("j.fio line 4 [j]: number_ios=9999")
    assert msg.endswith("(5000 characters) is larger than 2^63-1 (fio's limit)") and len(msg) < 300


@pytest.mark.parametrize("value", ["\u0663", "\u06f3\u06f3", "\uff13"])   # Arabic-Indic, Persian, full-width
def test_fio_takes_ascii_digits_only(tmp_path, capsys, value):
    # fio reads numbers with strtoll: only '0'-'9' are digits (Python's int() takes any Unicode Nd)
    job = write(tmp_path, "j.fio", JOB.replace("number_ios=50", "number_ios=" + value))
    assert "is not a number" in one_error(capsys, ["run", ASYM, job])


def test_selector_argument_with_5000_digits_wraps_as_the_kernel_does(capsys):
    # round-robin's repeat count is read with sscanf("%u"): simple_strtoull accumulates modulo 2^64
    from mpathlab.kernel import parse_u32
    assert parse_u32(BIG) == (10 ** 5000 - 1) % 2 ** 64 % 2 ** 32
    assert parse_u32("\u0661") is None
    from mpathlab import cli
    assert cli.main(["table", "0 8 multipath 0 0 1 1 round-robin 0 1 1 8:16 " + BIG]) == 0
    assert "repeat_count > 1 is deprecated" in capsys.readouterr().err


@pytest.mark.parametrize("data,needle", [
    (b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03", "j.fio line 1: gzip-compressed data: a job file must be plain text"),
    (b"[j]\nrw=randwrite\x1b[2J\nbs=4k\n", "j.fio line 2: a control character U+001B (column 13)"),
])
def test_fio_file_compressed_or_with_control_bytes(tmp_path, capsys, data, needle):
    assert needle in one_error(capsys, ["run", ASYM, write(tmp_path, "j.fio", data)])


def test_topology_with_control_bytes(tmp_path, capsys):
    topo = write(tmp_path, "t.toml", TOPO.replace('service = "100us"\n[paths.sdc]', 'service = "100us"\n# \x1b]0;x\x07\n[paths.sdc]'))
    msg = one_error(capsys, ["run", topo, write(tmp_path, "j.fio", JOB)])
    assert msg == "%s:6: a control character U+001B (column 3): a topology must be plain text" % topo


def test_a_very_long_error_keeps_its_problem_in_view(capsys):
    table = "0 8 multipath 0 0 1 1 round-robin 0 1 1 " + "x" * 38000 + " 1"
    msg = one_error(capsys, ["table", table])
    assert len(msg) < 1000
