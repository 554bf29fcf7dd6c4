"""multipath-tools as users have it: real multipath.conf files against the real binaries.

The corpus (tests/data/mtools-corpus/, sources in SOURCES.toml) was run through each real
version's `multipath -t` (scripts/mtools-goldens.sh: Debian 12's 0.9.4 and upstream 0.14.3
built from its tag); mpathlab must print the same merged configuration and the same
warnings.  The live test reruns the installed /sbin/multipath (Debian's, installed by
scripts/test-deps.sh) on the corpus, so the goldens cannot drift from the binary.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import glob
import os
import re
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import require
from mpathlab.mtools import build_maps, parse_conf, path_topology_from_dict
from mpathlab.mtools.conf import load_conf
from mpathlab.mtools.hwtable import find_hwe
from mpathlab.mtools.profile import get_profile
from mpathlab.mtools.regex import RegexError, compile_posix
from mpathlab.mtools.showconfig import show_config, show_messages

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "tests", "data", "mtools-corpus")
CONFS = sorted(glob.glob(os.path.join(CORPUS, "*.conf")))
VERSIONS = ("0.9.4", "0.14.3")


def mine(conf_path, version):
    c = load_conf(conf_path, version)
    msgs = show_messages(c).replace(conf_path, os.path.basename(conf_path))
    return ("" if c.failed else show_config(c)), msgs


def golden(version, name):
    base = os.path.join(CORPUS, "golden", version, name)
    with open(base + ".stdout") as f:
        out = f.read()
    with open(base + ".stderr") as f:
        err = f.read()
    with open(base + ".rc") as f:
        rc = int(f.read())
    return out, err, rc


def _sources():
    try:
        import tomllib
    except ImportError:          # Python < 3.11
        import tomli as tomllib
    with open(os.path.join(CORPUS, "SOURCES.toml"), "rb") as f:
        return tomllib.load(f)


def test_corpus_is_large_and_every_file_has_a_source():
    src = _sources()
    names = [os.path.basename(c)[:-5] for c in CONFS]
    assert len(names) >= 20
    assert sorted(src) == sorted(names)
    for name, row in src.items():
        assert row["kind"] in ("issue", "vendor", "distribution", "upstream", "constructed"), name
        assert row["source"], name
    assert {r["kind"] for r in src.values()} >= {"issue", "vendor", "upstream", "distribution"}


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("conf", CONFS, ids=lambda p: os.path.basename(p)[:-5])
def test_corpus_agrees_with_the_real_multipath(version, conf):
    """Merged settings (multipath -t's stdout) and every warning (its stderr), line by line."""
    name = os.path.basename(conf)[:-5]
    out, err, rc = golden(version, name)
    my_out, my_err = mine(conf, version)
    assert my_err.splitlines() == err.splitlines()
    assert (rc != 0) == load_conf(conf, version).failed
    if rc == 0:
        assert my_out.splitlines() == out.splitlines()


def _printed_devices(text):
    """The device entries of the devices section of multipath -t output, as lists of lines."""
    body = text.split("\ndevices {\n", 1)[1].split("\n}\n", 1)[0]
    return [blk.strip("\n").splitlines() for blk in body.split("\tdevice {\n")[1:]]


@pytest.mark.parametrize("version,entries,blacklisted", [("0.9.4", 123, 14), ("0.14.3", 137, 16)])
def test_builtin_hardware_table_equals_the_binarys(version, entries, blacklisted):
    """Every built-in device entry, as mpathlab prints it, equals the real multipath -t's."""
    out, err, rc = golden(version, "_empty")
    assert rc == 0 and err == ""
    real = _printed_devices(out)
    ours = _printed_devices(show_config(parse_conf("", "multipath.conf", version)))
    assert len(real) == len(ours) == entries == len(get_profile(version).hwtable)
    for r, o in zip(real, ours):
        assert o == r
    bl = out.split("\nblacklist {\n", 1)[1].split("\n}\n", 1)[0]
    assert bl.count("\tdevice {") == blacklisted


def _topo(vendor, product, alua=(None, None)):
    paths = {}
    for i, a in enumerate(alua):
        d = {"devt": "8:%d" % (16 * i), "hcil": "%d:0:0:1" % i, "service": "100us"}
        if a:
            d["alua"] = a
        paths["sd" + "abcd"[i]] = d
    return path_topology_from_dict({"map": {"wwid": "36001405aa", "vendor": vendor, "product": product},
                                    "paths": paths})


@pytest.mark.parametrize("version", VERSIONS)
def test_probe_paths_get_the_real_tables_settings(version):
    # An empty multipath.conf: a Nimble path gets no_path_retry queue and failback immediate, a COMPAQ
    # MSA1000 the hp_sw prioritizer and checker, in both versions (the values multipath -t prints for the
    # entries (Nimble, Server) and ((COMPAQ|HP), (MSA|HSV)1[01]0)).
    conf = parse_conf("", "m.conf", version)
    t = _topo("Nimble", "Server", ("active/optimized", "active/non-optimized"))
    (mp,), dropped = build_maps(conf, t.paths, size_sectors=t.size_sectors)
    assert (mp.settings["no_path_retry"], mp.settings["failback"]) == ("queue", "immediate")
    assert "queue_if_no_path" in mp.table_line()
    t = _topo("COMPAQ", "MSA1000")
    (mp,), _ = build_maps(conf, t.paths, size_sectors=t.size_sectors)
    assert {(pp.prio_name, pp.checker) for pp in mp.paths} == {("hp_sw", "hp_sw")}
    assert mp.settings["no_path_retry"] == 12


@pytest.mark.parametrize("version", VERSIONS)
def test_every_literal_builtin_entry_is_found_for_its_own_strings(version):
    """A path whose vendor and product are an entry's own (plain-text) strings matches that entry; the
    entry chosen first is the last matching one in the table, as find_hwe walks it."""
    conf = parse_conf("", "m.conf", version)
    plain = re.compile(r"[A-Za-z0-9 _-]+")
    n = 0
    for e in conf.hwtable:
        v, p = e.get("vendor"), e.get("product")
        if plain.fullmatch(v) and plain.fullmatch(p):
            n += 1
            found = find_hwe(conf.hwtable, v, p, "")
            assert e in found
            assert found[0] is [x for x in conf.hwtable if x in found][-1]
    assert n > 40


def test_version_differences_the_profiles_carry():
    # 0.9.4 sets hardware_handler "1 alua" on 3PAR, PowerStore, LIO and PURE; 0.14.3 leaves it to the kernel
    for v, p in (("3PARdata", "VV"), ("DellEMC", "PowerStore"), ("LIO-ORG", "x"), ("PURE", "FlashArray")):
        old = find_hwe(parse_conf("", "m", "0.9.4").hwtable, v, p, "")[0]
        new = find_hwe(parse_conf("", "m", "0.14.3").hwtable, v, p, "")[0]
        assert old.get("hardware_handler") == "1 alua" and not new.has("hardware_handler"), (v, p)
    # detect_pgpolicy exists from 0.9.7: a keyword of 0.14.3, unknown to 0.9.4
    assert parse_conf("defaults {\n detect_pgpolicy yes\n}\n", "m", "0.9.4").messages == [
        "m line 2, invalid keyword in the defaults section: detect_pgpolicy"]
    assert parse_conf("defaults {\n detect_pgpolicy yes\n}\n", "m", "0.14.3").messages == []


def test_issue_cases_warn_and_continue_like_multipath():
    text = ('blacklist_exceptions {\n device {\n  vendor "PURE"\n }\n}\n'
            'defaults {\n no_path_retry "forever"\n}\nmutipaths {\n}\n'
            'blacklist {\n devnode "^hd[a-z][[0-9]*]"\n protocol "scsi:ata"\n}\n')
    for v in VERSIONS:
        c = parse_conf(text, "m.conf", v)
        assert c.messages == ['m.conf line 7, invalid value for no_path_retry: "forever"',
                              "m.conf line 9, invalid keyword: mutipaths",
                              "unmatched '}' at line 10 of m.conf", "m.conf line 10, invalid keyword: }"]
        assert not c.failed and c.exceptions.device == [("PURE", None)] and c.blacklist.protocol == ["scsi:ata"]


# -- regexes as glibc matches them ------------------------------------------------------------------
def _glibc():
    name = ctypes.util.find_library("c")
    if not name:
        pytest.skip("no C library to compare with")
    libc = ctypes.CDLL(name)
    libc.regcomp.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int]
    libc.regexec.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_int]
    libc.regfree.argtypes = [ctypes.c_void_p]
    return libc


REG_EXTENDED, REG_NOSUB = 1, 8


def glibc_search(libc, pattern: str, subjects):
    """regcomp(REG_EXTENDED|REG_NOSUB) + regexec, as multipath calls them; None when regcomp refuses."""
    buf = ctypes.create_string_buffer(256)          # larger than glibc's regex_t
    if libc.regcomp(buf, pattern.encode(), REG_EXTENDED | REG_NOSUB) != 0:
        return None
    try:
        return [libc.regexec(buf, s.encode(), 0, None, 0) == 0 for s in subjects]
    finally:
        libc.regfree(buf)


def our_search(pattern, subjects):
    try:
        rx = compile_posix(pattern)
    except RegexError:
        return None
    return [rx.search(s) for s in subjects]


PATTERN_ATOMS = ["a", "b", "A", "0", "9", " ", "-", ".", "^", "$", "*", "+", "?", "|", "(", ")", "[", "]",
                 "[a-c]", "[^a]", "[]a]", "[[:digit:]]", "[[:alpha:]]", "\\.", "\\w", "\\(", "{2}", "{1,2}",
                 "{,}", "[[0-9]", "\\", "{", "}", ".*", "[a-]", "[\\]", "\\<", "\\>", "{,3}"]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(PATTERN_ATOMS), min_size=1, max_size=6).map("".join),
       st.lists(st.text(alphabet="abcAB09 -.()[]*\\", max_size=6), min_size=1, max_size=5))
def test_posix_ere_translation_agrees_with_glibc(pattern, subjects):
    libc = _glibc()
    want = glibc_search(libc, pattern, subjects)
    got = our_search(pattern, subjects)
    assert got == want, (pattern, subjects)


@pytest.mark.parametrize("version", VERSIONS)
def test_every_builtin_and_corpus_regex_compiles_and_matches_as_glibc(version):
    libc = _glibc()
    pats = set()
    for e in parse_conf("", "m", version).hwtable:
        for k in ("vendor", "product", "revision", "product_blacklist"):
            if e.has(k):
                pats.add(e.get(k))
    for conf in CONFS:
        c = load_conf(conf, version)
        for lst in (c.blacklist.devnode, c.blacklist.wwid, c.exceptions.devnode, c.exceptions.wwid):
            pats.update(p[1:] if p.startswith("!") else p for p in lst)
    subjects = ["sda", "hda", "hda[1]", "PURE", "FlashArray", "3PARdata", "VV", "MSA 2060 FC", "nvme0n1",
                "Universal Xport", "LUNZ", "HSV110", "OPEN-V", "2145", "loop0", "dm-1", ""]
    for p in sorted(pats):
        assert our_search(p, subjects) == glibc_search(libc, p, subjects), p


# -- the live binary ------------------------------------------------------------------------------------
def _debian_mtools_version():
    try:
        out = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "multipath-tools"], capture_output=True,
                             text=True).stdout
    except OSError:
        return None
    m = re.match(r"(\d+\.\d+\.\d+)", out)
    return m.group(1) if m else None


def test_live_multipath_agrees_on_the_corpus(tmp_path):
    """Run the installed /sbin/multipath -t on every corpus file (a private overlay on /etc, as root) and
    compare with mpathlab under that version's profile: settings, warnings, refusals."""
    mp = require("/sbin/multipath", "the real multipath -t is the oracle of the corpus")
    if os.geteuid() != 0:
        pytest.skip("the oracle overlays /etc in a mount namespace: needs root")
    version = _debian_mtools_version()
    if version not in VERSIONS:
        pytest.skip("installed multipath-tools %s has no mpathlab profile" % version)
    disagree = []
    for conf in [None] + CONFS:
        out = tmp_path / "o"
        r = subprocess.run(["bash", os.path.join(ROOT, "scripts", "mtools-oracle.sh"), mp, conf or "-", str(out)],
                           capture_output=True, text=True)
        if r.returncode == 2:
            pytest.skip(r.stderr.strip())
        assert r.returncode == 0, r.stderr
        real_out = (tmp_path / "o.stdout").read_text()
        real_err = (tmp_path / "o.stderr").read_text()
        if conf is None:
            my_out, my_err = show_config(parse_conf("", "multipath.conf", version)), ""
        else:
            my_out, my_err = mine(conf, version)
        if my_err != real_err or (int((tmp_path / "o.rc").read_text()) == 0 and my_out != real_out):
            disagree.append(os.path.basename(conf or "(none)"))
    assert disagree == []


def test_cli_multipath_t(tmp_path):
    conf = os.path.join(CORPUS, "mistakes-misspelt-section.conf")
    r = subprocess.run([sys.executable, "-m", "mpathlab", "multipath", "-t", "--conf", conf, "--mtools", "0.9.4"],
                       capture_output=True, text=True)
    out, err, _ = golden("0.9.4", "mistakes-misspelt-section")
    assert r.returncode == 0
    assert r.stdout == out
    assert r.stderr.replace(conf, os.path.basename(conf)) == err
    bad = tmp_path / "bad.conf"
    bad.write_text('blacklist {\n wwid "(["\n}\n')
    r = subprocess.run([sys.executable, "-m", "mpathlab", "multipath", "-t", "--conf", str(bad)],
                       capture_output=True, text=True)
    assert r.returncode == 3 and r.stdout == ""
    assert r.stderr.splitlines()[-1] == (
        'mpathlab: error: %s:2: multipath refuses this file (error parsing config file): wwid "(["' % bad)
    r = subprocess.run([sys.executable, "-m", "mpathlab", "multipath", "-t", "--mtools", "9.9"],
                       capture_output=True, text=True)
    assert r.returncode == 3 and "unknown multipath-tools version" in r.stderr


@pytest.mark.parametrize("mode,wwids,expect", [
    # WWID A has two paths, B one; the wwids file knows B only
    ("strict", ["B"], {"B"}),
    ("yes", ["B"], {"A", "B"}),
    ("smart", [], {"A"}),
    ("no", [], {"A", "B"}),
    ("greedy", [], {"A", "B"}),
    ("strict", None, {"A", "B"}),        # no wwids file in the topology: every WWID counts as known
])
def test_find_multipaths(mode, wwids, expect):
    conf = parse_conf("defaults {\n find_multipaths %s\n}\n" % mode, "m.conf", "0.14.3")
    assert conf.messages == []
    t = path_topology_from_dict({"map": {"vendor": "LIO-ORG", "product": "disk"}, "paths": {
        "sda": {"devt": "8:0", "wwid": "A", "service": "100us"},
        "sdb": {"devt": "8:16", "wwid": "A", "service": "100us"},
        "sdc": {"devt": "8:32", "wwid": "B", "service": "100us"}}})
    maps, left = build_maps(conf, t.paths, size_sectors=t.size_sectors, wwids=wwids)
    assert {m.wwid for m in maps} == expect
    assert {p.wwid for p, _ in left} == {"A", "B"} - expect


def test_blacklist_property_and_protocol_filters():
    conf = parse_conf('blacklist {\n protocol "scsi:iscsi"\n property "ID_ATA"\n}\n', "m.conf", "0.14.3")
    mk = lambda **kw: path_topology_from_dict({"map": {"vendor": "LIO-ORG", "product": "disk"}, "paths": {
        "sda": dict({"devt": "8:0", "service": "100us"}, **kw)}}).paths
    assert build_maps(conf, mk())[1] == []
    (p, why), = build_maps(conf, mk(protocol="scsi:iscsi"))[1]
    assert why == 'blacklisted by protocol "scsi:iscsi"'
    (p, why), = build_maps(conf, mk(properties=["ID_SERIAL"]))[1]
    assert why == "blacklisted by missing property"      # no match for the built-in (SCSI_IDENT_|ID_WWN)
    # the first property named by an exception or the blacklist decides
    (p, why), = build_maps(conf, mk(properties=["ID_ATA", "ID_WWN"]))[1]
    assert why == 'blacklisted by property "ID_ATA"'
    assert build_maps(conf, mk(properties=["ID_WWN", "ID_ATA"]))[1] == []


def test_show_paths_and_maps_format():
    from mpathlab.mtools.showformat import show_maps, show_paths
    conf = parse_conf("", "m.conf", "0.14.3")
    t = _topo("Nimble", "Server", ("active/optimized", "standby"))
    maps, _ = build_maps(conf, t.paths, size_sectors=t.size_sectors)
    # each wildcard column as wide as its widest entry, header included; text between kept; %Z unknown
    assert show_paths(maps, "%d|%T %p %Z").splitlines() == [
        "dev|chk_st pri %Z", "sda|ready  50  %Z", "sdb|ghost  1   %Z"]
    assert show_maps(maps, "%n %N %Q %F %h").splitlines() == [
        "name       paths queueing failback  hwhandler", "36001405aa 2     on       immediate 1 alua"]
