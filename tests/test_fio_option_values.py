"""Values fio 3.33 refuses are refused by name, not run: verify's methods and
the times of options that have no effect (fio still type-checks them)."""
import subprocess

import pytest

from conftest import require
from mpathlab.workload.fio import FioError, parse_fio

# fio 3.33 --parse-only: accepted (True) or "failed parsing" (False)
VERIFY = [("0", True), ("md5", True), ("md5:x", True), ("crc32c-intel", True), ("sha3-224", True),
          ("null", True), ("meta", True), ("pattern", True),
          ("none", False), ("1", False), ("MD5", False), ("crc3", False), ("md5x", False)]


def _parses(text):
    try:
        parse_fio(text, "t.fio")
        return True
    except FioError as e:
        assert "\n" not in str(e) and str(e).startswith("t.fio line 4 [j]: ")
        return False


@pytest.mark.parametrize("value,fio_accepts", VERIFY)
def test_verify_methods_as_fio_3_33_reads_them(value, fio_accepts):
    assert _parses("[j]\nrw=write\nsize=1m\nverify=%s\n" % value) == fio_accepts


def test_verify_null_and_methods_read_back_zero_does_not():
    # fio 3.33, ioengine=null, rw=write size=1m: verify=null and verify=md5 both read 256 blocks back
    for v, on in (("null", True), ("md5:x", True), ("0", False)):
        j, = parse_fio("[j]\nrw=write\nsize=1m\nverify=%s\n" % v).jobs
        assert j.verify is on


@pytest.mark.parametrize("line,fio_accepts", [
    ("ss_dur=bogus", False), ("ss_dur=30", True), ("ss_dur=30s", True), ("ss_ramp=1m", True),
    ("ss_ramp=10q", False)])
def test_no_effect_times_are_still_type_checked(line, fio_accepts):
    assert _parses("[j]\nrw=read\nsize=1m\n%s\n" % line) == fio_accepts


@pytest.mark.parametrize("value,fio_accepts", VERIFY)
def test_verify_table_is_what_the_fio_binary_says(tmp_path, value, fio_accepts):
    fio = require("fio", "fio 3.33 itself, to check which verify values it parses")
    job = tmp_path / "v.fio"
    job.write_text("[j]\nrw=write\nsize=1m\nverify=%s\n" % value)
    p = subprocess.run([fio, "--parse-only", str(job)], capture_output=True, text=True)
    assert ("failed parsing" not in p.stderr and p.returncode == 0) == fio_accepts


# fio 3.33 --debug=parse reads each of these as two values (parse.c handle_option splits a number or a
# time at ',', else ':', else '-'): runtime=1-5 is 1 s (not "1 microsecond"), size=1m-2m is 1 MiB (not
# "1 byte"), startdelay=1-5 a random delay from 1 to 5 s
TWO_VALUES = [("runtime=1-5", "-"), ("size=1m-2m", "-"), ("iodepth=4,8", ","), ("startdelay=1-5", "-"),
              ("thinktime=1:5", ":"), ("numjobs=2,3", ",")]


@pytest.mark.parametrize("line,sep", TWO_VALUES)
def test_two_values_are_refused_saying_what_fio_does(line, sep):
    with pytest.raises(FioError) as ei:
        parse_fio("[j]\nrw=read\nsize=1m\n%s\n" % line, "t.fio")
    msg = str(ei.value)
    assert msg == ("t.fio line 4 [j]: %s: fio 3.33 splits %r at %r into two values (a range, or more of a "
                   "read,write,trim list); mpathlab takes one value here" % (line, line.split("=")[1], sep))


@pytest.mark.parametrize("line,sep", TWO_VALUES)
def test_fio_reads_them_as_two_values(tmp_path, line, sep):
    fio = require("fio", "fio 3.33 itself, to see how it splits a value")
    job = tmp_path / "t.fio"
    job.write_text("[j]\nrw=read\n%s\n" % line)
    p = subprocess.run([fio, "--parse-only", "--debug=parse", str(job)], capture_output=True, text=True)
    name = line.split("=")[0]
    handled = [l for l in (p.stdout + p.stderr).splitlines() if "__handle_option=%s," % name in l]
    assert len(handled) == 2, handled


# fio 3.33 --parse-only on no-effect string options: the value is matched up to a ',' or ':' against fio's
# own list, case-sensitively (parse.c opt_len / str_match_len)
STRINGS = [("random_distribution=zipf:1.2", True), ("random_distribution=zipff", False), ("sync=dsync", True),
           ("sync=bogus", False), ("clocksource=clock_gettime", True), ("clocksource=rdtsc", False),
           ("mem=mmaphuge:/hugepages/x", True), ("mem=heap", False), ("steadystate=iops_slope:0.3%", True),
           ("ss=iops_slop", False), ("zonemode=zbd", True), ("zonemode=ZBD", False),
           ("continue_on_error=all", True), ("continue_on_error=", False), ("continue_on_error", False),
           ("continue_on_error=ALL", False)]


@pytest.mark.parametrize("line,fio_accepts", STRINGS)
def test_no_effect_strings_and_continue_on_error_as_fio_3_33_reads_them(line, fio_accepts):
    assert _parses("[j]\nrw=read\nsize=1m\n%s\n" % line) == fio_accepts


def test_bare_continue_on_error_no_longer_turns_it_on():
    # it was read as continue_on_error=all: failed I/O counted and resubmitted where fio refuses the job
    with pytest.raises(FioError, match="option 'continue_on_error' needs a value"):
        parse_fio("[j]\nrw=read\nsize=1m\ncontinue_on_error\n", "t.fio")


@pytest.mark.parametrize("line,fio_accepts", STRINGS)
def test_strings_table_is_what_the_fio_binary_says(tmp_path, line, fio_accepts):
    fio = require("fio", "fio 3.33 itself, to check which values it parses")
    job = tmp_path / "v.fio"
    job.write_text("[j]\nrw=read\nsize=1m\n%s\n" % line)
    p = subprocess.run([fio, "--parse-only", str(job)], capture_output=True, text=True)
    assert ("failed parsing" not in p.stderr and p.returncode == 0) == fio_accepts, p.stderr
