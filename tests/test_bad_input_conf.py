"""multipath.conf as a hostile or careless user writes it: compressed or with control bytes, tens of
thousands of device sections, an alias longer than a dm name or given to two WWIDs, digits multipath
does not read, regular expressions that make a backtracking engine blow up (matched in linear time by
RE2, as multipath's POSIX regexec has no such blow-up)."""
import gzip
import os
import time

import pytest

from badinput_util import EXAMPLES, one_error, write
from mpathlab import cli

MT = os.path.join(EXAMPLES, "mtools")
PATHS = os.path.join(MT, "alua-paths.toml")
WWID = "36001405a1b2c3d4e5f60718293a4b5c6"


def _conf():
    with open(os.path.join(MT, "multipath.conf")) as f:
        return f.read()


def test_gzip_compressed_conf_is_refused_not_read_as_keywords(tmp_path, capsys):
    conf = write(tmp_path, "multipath.conf.gz", gzip.compress(_conf().encode()))
    for argv in (["maps", "--conf", conf, PATHS], ["multipath", "-t", "--conf", conf]):
        msg = one_error(capsys, argv)
        assert msg == "%s:1: gzip-compressed data: a multipath.conf must be plain text (decompress it first)" % conf


def test_control_bytes_in_conf_are_refused_and_not_echoed(tmp_path, capsys):
    conf = write(tmp_path, "m.conf", _conf().replace("polling_interval        5", "polling_interval 5\x1b[2J"))
    msg = one_error(capsys, ["maps", "--conf", conf, PATHS])
    assert msg == "%s:3: a control character U+001B (column 23): a multipath.conf must be plain text" % conf


def test_ten_thousand_character_alias(tmp_path, capsys):
    conf = write(tmp_path, "m.conf", _conf().replace('alias   "data"', 'alias   "%s"' % ("a" * 10000)))
    msg = one_error(capsys, ["maps", "--conf", conf, PATHS])
    assert msg == ("%s:27: alias of 10000 bytes: a dm device name is at most 127 bytes (DM_NAME_LEN); the kernel "
                   "would refuse to create the map" % conf)
    # 127 bytes is a valid name
    ok = write(tmp_path, "ok.conf", _conf().replace('alias   "data"', 'alias   "%s"' % ("a" * 127)))
    assert cli.main(["maps", "--conf", ok, PATHS]) == 0
    assert "a" * 127 + " (" + WWID in capsys.readouterr().out


def test_two_wwids_with_one_alias(tmp_path, capsys):
    dup = _conf().replace("multipaths {\n", 'multipaths {\n    multipath {\n        wwid "3600140500000000000000000000000ff"\n'
                                            '        alias "data"\n    }\n')
    conf = write(tmp_path, "m.conf", dup)
    for argv in (["maps", "--conf", conf, PATHS],
                 ["run", "--conf", conf, PATHS, write(tmp_path, "j.fio", "[j]\nrw=read\nbs=4k\nnumber_ios=4\n"),
                  "--map", "data"]):
        msg = one_error(capsys, argv)
        assert msg.startswith("%s:" % conf) and "alias 'data' is already the alias of WWID " \
                                                 "3600140500000000000000000000000ff (line " in msg


def test_device_sections_beyond_the_budget(tmp_path, capsys, monkeypatch):
    body = "".join(' device {\n  vendor "V%d"\n  product "P%d"\n }\n' % (i, i) for i in range(2001))
    conf = write(tmp_path, "m.conf", "devices {\n%s}\n" % body)
    t = time.monotonic()
    msg = one_error(capsys, ["maps", "--conf", conf, PATHS])
    assert msg == ("%s:8002: more than 2000 device sections: merging them is quadratic (2,000 take about 1.6 s); "
                   "raise MPATHLAB_MAX_CONF_DEVICES to read this file" % conf)
    assert time.monotonic() - t < 10
    monkeypatch.setenv("MPATHLAB_MAX_CONF_DEVICES", "1_0")
    assert "MPATHLAB_MAX_CONF_DEVICES='1_0': a whole number" in one_error(capsys, ["maps", "--conf", conf, PATHS])


@pytest.mark.parametrize("value", ["1_0", "\u0661\u0660"])
def test_polling_interval_digits_multipath_does_not_read(tmp_path, capsys, value):
    # multipath reads the number with strtol: "1_0" stops at '_' and Arabic-Indic digits are no digits;
    # the value is rejected with multipath's message and the default kept, never read as 10
    conf = write(tmp_path, "m.conf", _conf().replace("polling_interval        5", "polling_interval %s" % value))
    assert cli.main(["multipath", "-t", "--conf", conf]) == 0
    cap = capsys.readouterr()
    assert "polling_interval" in cap.err and "line 3" in cap.err
    assert "polling_interval 10\n" not in cap.out


def test_nested_quantifier_regex_against_a_long_product(tmp_path, capsys):
    with open(PATHS) as f:
        topo = f.read()
    paths = write(tmp_path, "p.toml", topo.replace('product = "lun0"', 'product = "%s!"' % ("a" * 30000)))
    conf = write(tmp_path, "m.conf", 'devices {\n device {\n  vendor ".*"\n  product "(a+)+$"\n }\n}\n')
    t = time.process_time()
    assert cli.main(["maps", "--conf", conf, paths]) == 0
    capsys.readouterr()
    assert time.process_time() - t < 5       # a backtracking engine takes forever here


def test_alternation_regex_in_the_blacklist_against_a_long_wwid(tmp_path, capsys):
    with open(PATHS) as f:
        topo = f.read()
    paths = write(tmp_path, "p.toml", topo.replace(WWID, "3" * 100 + "4"))
    conf = write(tmp_path, "m.conf", 'blacklist {\n wwid "^(3|33)+$"\n}\n')
    t = time.process_time()
    cli.main(["maps", "--conf", conf, paths])
    capsys.readouterr()
    assert time.process_time() - t < 5


def test_c_selector_path_in_conf_is_reported_with_the_conf_line(tmp_path, capsys, monkeypatch):
    conf = write(tmp_path, "m.conf", 'defaults {\n    path_selector "c:dm-ps-round-robin.c 0"\n}\n')
    other = tmp_path / "elsewhere"
    other.mkdir()
    monkeypatch.chdir(other)
    msg = one_error(capsys, ["maps", "--conf", conf, PATHS])
    assert msg == ("%s:2: path_selector 'c:dm-ps-round-robin.c 0': no C selector file dm-ps-round-robin.c (a "
                   "relative path is read from the current directory, %s)" % (conf, other))
