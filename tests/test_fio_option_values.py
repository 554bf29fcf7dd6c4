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
