"""The multipath-tools layer: multipath.conf, property precedence, grouping policies,
prioritizers, assemble_map's table string, the -ll view and multipathd's loop.

Every expected string is written out by hand from multipath-tools' behaviour (0.14,
libmultipath and multipathd); each test names the function it follows.
"""
import os
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mpathlab.mtools import ConfError, build_maps, parse_conf, path_topology_from_dict
from mpathlab.mtools.conf import QUOTE, refuse_if_failed, tokenize
from mpathlab.mtools.maps import add_feature, blacklisted
from mpathlab.mtools.paths import Path
from mpathlab.mtools.printer import format_ll, format_size
from mpathlab.mtools.prioritizers import PrioEnv, create
from mpathlab.mtools.prioritizers.path_latency import prio_from_latencies_us
from mpathlab.mtools.run import loaded_target, simulate_conf
from mpathlab.workload.fio import parse_fio

ROOT = os.path.join(os.path.dirname(__file__), "..")
EX = os.path.join(ROOT, "examples", "mtools")


def P(name, minor, **kw):
    """A hand-written path: name sdX, devt 8:minor."""
    kw.setdefault("wwid", "3600a0980aaaa")
    kw.setdefault("hcil", "1:0:0:%d" % (minor // 16))
    return Path(name, (8, minor), **kw)


def table(conf_text, paths, **kw):
    maps, _ = build_maps(parse_conf(conf_text), paths, **kw)
    assert len(maps) == 1
    return maps[0].table_params()


FOUR = lambda **kw: [P("sda", 0, **kw), P("sdb", 16, **kw), P("sdc", 32, **kw), P("sdd", 48, **kw)]


# -- the parser -------------------------------------------------------------------------
def test_tokenizer_quotes_comments_braces():
    # alloc_strvec: quotes are tokens, "" inside quotes is a quote, # and ! end the line
    assert tokenize('  path_selector "service-time 0"  # comment') == ["path_selector", QUOTE, "service-time 0",
                                                                       QUOTE]
    assert tokenize("devices {") == ["devices", "{"]
    assert tokenize('alias "a""b"') == ["alias", QUOTE, 'a"b', QUOTE]
    assert tokenize("! all comment") == []
    assert tokenize("prio alua!x") == ["prio", "alua"]


def test_sections_and_values():
    conf = parse_conf('''
defaults {
    polling_interval 10
    failback 15
    no_path_retry queue
    rr_weight priorities
}
blacklist {
    wwid "^3600bad"
    device {
        vendor "ACME"
        product "Tape.*"
    }
}
blacklist_exceptions {
    devnode "^loop0$"
}
devices {
    device {
        vendor "NETAPP"
        product "LUN"
        path_grouping_policy group_by_serial
        hardware_handler "1 alua"
    }
}
overrides {
    rr_min_io_rq 7
}
multipaths {
    multipath {
        wwid 3600a0980aaaa
        alias db
    }
}
''')
    assert conf.defaults.get("polling_interval") == 10
    assert conf.defaults.get("failback") == 15
    assert conf.defaults.get("no_path_retry") == "queue"
    assert conf.checkint() == 10 and conf.max_checkint() == 40     # max defaults to 4 x (init_config)
    assert conf.blacklist.wwid == ["^3600bad"]
    assert conf.blacklist.device == [("ACME", "Tape.*")]
    assert conf.exceptions.devnode == ["^loop0$"]
    assert conf.devices[0].get("path_grouping_policy") == "group_by_serial"
    assert conf.overrides.get("rr_min_io_rq") == 7
    assert conf.multipaths[0].get("alias") == "db"
    assert conf.warnings == []


def test_polling_interval_fill_in():
    # init_config: only max given -> checkint = max / 4; checkint above max is capped
    assert parse_conf("defaults {\n max_polling_interval 20\n}\n").checkint() == 5
    assert parse_conf("defaults {\n max_polling_interval 2\n}\n").checkint() == 1
    c = parse_conf("defaults {\n polling_interval 30\n max_polling_interval 20\n}\n")
    assert (c.checkint(), c.max_checkint()) == (20, 20)


def test_unknown_keywords_are_warned_as_multipath_does():
    # process_stream: "FILE line N, invalid keyword in the SECTION section: KEY"
    conf = parse_conf("defaults {\n    frobnicate 3\n    hardware_handler \"1 alua\"\n}\nbogus 1\n",
                      "my.conf")
    assert conf.warnings == ["my.conf line 2, invalid keyword in the defaults section: frobnicate",
                             # hardware_handler is a devices-only keyword in dict.c
                             "my.conf line 3, invalid keyword in the defaults section: hardware_handler",
                             "my.conf line 5, invalid keyword: bogus"]


# Each text below is what Debian 12's /sbin/multipath -t (0.9.4) printed for the same file
# (scripts/mtools-oracle.sh, timestamps stripped); multipath warns and carries on.
@pytest.mark.parametrize("text,msgs", [
    ("defaults {\n  failback sometimes\n}\n", ['m.conf line 2, invalid value for failback: "sometimes"']),
    ("defaults {\n  no_path_retry -2\n}\n", ["m.conf line 2, value for no_path_retry too small, capping at 1"]),
    ('defaults {\n  features "2 queue_if_no_path"\n}\n',
     ["m.conf line 2, invalid argument count for features:, got '2' expected '1'"]),
    ("defaults {\n  rr_weight \n}\n", ["missing value for option 'rr_weight' on line 2 of m.conf"]),
    ("defaults {\n  polling_interval 5\n", ["missing '}' at end of m.conf"]),
    ("}\n", ["unmatched '}' at line 1 of m.conf", "m.conf line 1, invalid keyword: }"]),
    ("devices {\n device {\n  vendor X\n }\n}\n", ["device config in m.conf missing vendor or product parameter"]),
    ("multipaths {\n multipath {\n  alias a\n }\n}\n", ["multipaths config section missing wwid"]),
    ("defaults\n  polling_interval 7\n}\n", ["missing '{' on line 1 of m.conf"]),
    ('defaults {\n  polling_interval "5\n}\n', ["missing closing quotes on line 2 of m.conf"]),
])
def test_warnings_in_multipaths_words_and_parsing_goes_on(text, msgs):
    conf = parse_conf(text, "m.conf", "0.9.4")
    assert conf.messages == msgs
    assert not conf.failed


def test_bad_value_keeps_the_previous_one():
    conf = parse_conf("defaults {\n  failback 10\n  failback sometimes\n}\n", "m.conf", "0.9.4")
    assert conf.defaults.get("failback") == 10
    assert conf.messages == ["m.conf line 3, duplicate keyword: failback",
                             'm.conf line 3, invalid value for failback: "sometimes"']


def test_a_regex_regcomp_refuses_makes_multipath_refuse_the_file():
    conf = parse_conf('blacklist {\n  devnode "a(b"\n}\n', "m.conf", "0.9.4")
    assert conf.failed
    assert conf.messages == ['m.conf line 2, parsing failed:   devnode "a(b"', "error parsing config file"]
    with pytest.raises(ConfError) as e:
        refuse_if_failed(conf)
    assert str(e.value) == 'm.conf:2: multipath refuses this file (error parsing config file): devnode "a(b"'


KEYS = {
    "path_grouping_policy": st.sampled_from(["failover", "multibus", "group_by_serial", "group_by_prio",
                                             "group_by_node_name"]),
    "failback": st.one_of(st.sampled_from(["manual", "immediate", "followover"]), st.integers(1, 1000).map(str)),
    "no_path_retry": st.one_of(st.sampled_from(["fail", "queue"]), st.integers(1, 100).map(str)),
    "rr_min_io_rq": st.integers(1, 1000).map(str),
    "rr_weight": st.sampled_from(["priorities", "uniform"]),
    "path_selector": st.sampled_from(['"service-time 0"', '"round-robin 0"', '"queue-length 0"']),
    "polling_interval": st.integers(1, 60).map(str),
}
EXPECT = {"failback": lambda v: v if not v.isdigit() else int(v),
          "no_path_retry": lambda v: v if not v.isdigit() else int(v),
          "rr_min_io_rq": int, "polling_interval": int, "path_selector": lambda v: v.strip('"')}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.fixed_dictionaries({}, optional=KEYS), st.booleans())
def test_property_rendered_settings_parse_back(values, comment):
    """A multipath.conf written from random valid settings parses back to them."""
    lines = ["defaults {"] + ["    %s %s%s" % (k, v, "  # c" if comment else "") for k, v in values.items()] + ["}"]
    conf = parse_conf("\n".join(lines) + "\n")
    for k, v in values.items():
        assert conf.defaults.get(k) == EXPECT.get(k, lambda x: x)(v)
    assert conf.warnings == []


CONF_VOCAB = ["defaults", "devices", "device", "multipaths", "multipath", "overrides", "blacklist",
              "blacklist_exceptions", "{", "}", '"', "wwid", "vendor", "product", "failback", "immediate",
              "no_path_retry", "queue", "prio", "alua", "const", "weightedpath", "path_selector", "service-time",
              "0", "1", "-1", "x", "#", "!", "\n", " ", "features", "path_grouping_policy", "group_by_prio",
              "polling_interval", "devnode", "^sd", "(", "rr_min_io_rq", "hardware_handler", "alias"]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(CONF_VOCAB), max_size=40), st.text(max_size=20))
def test_property_parser_only_raises_conf_error(tokens, noise):
    """Random token soup and random text: parse_conf returns or raises ConfError, never
    anything else; every error names the file and a line."""
    for text in (" ".join(tokens), noise, " ".join(tokens) + noise):
        try:
            parse_conf(text, "r.conf")
        except ConfError as e:
            assert str(e).startswith("r.conf line "), str(e)


# -- grouping policies and prioritizers: the table string (assemble_map) ------------------
NO_DETECT = "defaults {\n    detect_pgpolicy no\n    path_grouping_policy %s\n%s}\n"


def test_failover_const():
    # one_path_per_group; const prio 1 everywhere; the stable sort keeps path order;
    # select_path_group picks group 1; rr_min_io_rq default 1; selector default "service-time 0"
    assert table("defaults {\n path_grouping_policy failover\n}\n", FOUR()) == (
        "0 0 4 1 service-time 0 1 1 8:0 1 service-time 0 1 1 8:16 1 service-time 0 1 1 8:32 1 "
        "service-time 0 1 1 8:48 1")


def test_default_policy_is_failover():
    # DEFAULT_PGPOLICY is FAILOVER; two non-ALUA paths
    assert table("", FOUR()[:2]) == "0 0 2 1 service-time 0 1 1 8:0 1 service-time 0 1 1 8:16 1"


def test_multibus():
    # one_group
    assert table("defaults {\n path_grouping_policy multibus\n path_selector \"round-robin 0\"\n}\n",
                 FOUR()) == "0 0 1 1 round-robin 0 4 1 8:0 1 8:16 1 8:32 1 8:48 1"


def test_group_by_serial():
    # group_by_match: groups open in path order, each pulls in the later paths with its serial
    ps = [P("sda", 0, serial="A"), P("sdb", 16, serial="B"), P("sdc", 32, serial="A"), P("sdd", 48, serial="C")]
    assert table("defaults {\n path_grouping_policy group_by_serial\n}\n", ps) == (
        "0 0 3 1 service-time 0 2 1 8:0 1 8:32 1 service-time 0 1 1 8:16 1 service-time 0 1 1 8:48 1")


def test_group_by_node_name():
    ps = [P("sda", 0, node_name="n1"), P("sdb", 16, node_name="n2"), P("sdc", 32, node_name="n2"),
          P("sdd", 48, node_name="n1")]
    assert table("defaults {\n path_grouping_policy group_by_node_name\n}\n", ps) == (
        "0 0 2 1 service-time 0 2 1 8:0 1 8:48 1 service-time 0 2 1 8:16 1 8:32 1")


def test_group_by_prio_weightedpath_sorted_by_priority():
    # weightedpath devname: sda 10, sdb 20, sdc 10, sdd 30; group_by_prio makes {sda,sdc} {sdb} {sdd};
    # sort_pathgroups orders by priority descending: sdd (30), sdb (20), sda+sdc (10)
    conf = ('defaults {\n path_grouping_policy group_by_prio\n prio weightedpath\n'
            ' prio_args "devname sda 10 sdb 20 sdc 10 sdd 30"\n}\n')
    assert table(conf, FOUR()) == (
        "0 0 3 1 service-time 0 1 1 8:48 1 service-time 0 1 1 8:16 1 service-time 0 2 1 8:0 1 8:32 1")


def test_rr_weight_priorities_scales_repeat():
    # assemble_map: repeat = rr_min_io_rq * priority with rr_weight priorities (priority > 0)
    conf = ('defaults {\n path_grouping_policy multibus\n prio weightedpath\n rr_weight priorities\n'
            ' rr_min_io_rq 2\n prio_args "hbtl 1:0:0:0 5 1:0:0:1 3"\n}\n')
    ps = FOUR()
    # hbtl of sda is 1:0:0:0 (5), sdb 1:0:0:1 (3), sdc/sdd match nothing: priority 0 -> plain repeat 2
    assert table(conf, ps) == "0 0 1 1 service-time 0 4 1 8:0 10 8:16 6 8:32 2 8:48 2"


def test_weightedpath_serial_and_unknown_kind():
    env = PrioEnv()
    wp = create("weightedpath")
    p = P("sdq", 0, serial="SN77")
    assert wp.getprio(p, "serial ^SN7 40", env) == 40
    assert wp.getprio(p, "serial ^XX 40", env) == 0       # no match: DEFAULT_PRIORITY 0
    assert wp.getprio(p, "colour red 40", env) == 0        # unknown kind: 0


def test_weightedpath_reads_priorities_with_atoi_and_posix_regexes():
    # the priority is atoi()'d: 2^64 saturates to LONG_MAX and the int cast keeps -1; an Arabic-Indic
    # digit is no digit (0); a POSIX class works and an unbalanced regex is skipped as regcomp refuses it
    env = PrioEnv()
    wp = create("weightedpath")
    p = P("sdq", 0, serial="SN77")
    assert wp.getprio(p, "serial ^SN 18446744073709551616", env) == -1
    assert wp.getprio(p, "serial ^SN \u0663", env) == 0
    assert wp.getprio(p, "serial ^SN[[:digit:]]+$ 7", env) == 7
    assert wp.getprio(p, "serial (SN 5 SN7 9", env) == 9


ALUA = [("sda", 0, "active/optimized", 1), ("sdb", 16, "active/non-optimized", 2),
        ("sdc", 32, "active/optimized", 1), ("sdd", 48, "standby", 2)]


def alua_paths(states=ALUA, **kw):
    return [P(n, m, alua_state=s, tpg=t, **kw) for n, m, s, t in states]


def test_alua_paths_autodetect_group_by_prio_and_handler():
    # detect_prio -> sysfs prio (50/10/50/1); detect_pgpolicy -> group_by_prio; all ports
    # ALUA -> hwhandler "1 alua"; groups sorted 50 {sda,sdc}, 10 {sdb}, 1 {sdd}
    assert table("", alua_paths()) == (
        "0 1 alua 3 1 service-time 0 2 1 8:0 1 8:32 1 service-time 0 1 1 8:16 1 service-time 0 1 1 8:48 1")


def test_group_by_tpg():
    # detect_pgpolicy_use_tpg: group_by_tpg; groups {sda,sdc} (tpg 1, prio 50) and {sdb,sdd}
    # (tpg 2: mean of 10 and 1 = 5 in integer division)
    assert table("defaults {\n detect_pgpolicy_use_tpg yes\n}\n", alua_paths()) == (
        "0 1 alua 2 1 service-time 0 2 1 8:0 1 8:32 1 service-time 0 2 1 8:16 1 8:48 1")


def test_group_by_tpg_falls_back_without_alua_prio():
    # select_pgpolicy: group_by_tpg set explicitly but not all prios alua -> emergency failover
    maps, _ = build_maps(parse_conf("defaults {\n detect_pgpolicy no\n path_grouping_policy group_by_tpg\n}\n"),
                         FOUR()[:2])
    assert maps[0].pgpolicy == "failover"


def test_alua_prio_values_and_pref_bit():
    # prioritizers/alua.c: 50/10/5/1/0, +80 for the preferred bit unless active/optimized
    # without exclusive_pref_bit
    a = create("alua")
    env = PrioEnv()
    mk = lambda s, pref=False: P("sdz", 0, alua_state=s, alua_pref=pref)
    assert [a.getprio(mk(s), "", env) for s in ("active/optimized", "active/non-optimized", "lba-dependent",
                                                 "standby", "unavailable", "offline")] == [50, 10, 5, 1, 0, 0]
    assert a.getprio(mk("active/optimized", True), "", env) == 50
    assert a.getprio(mk("active/optimized", True), "exclusive_pref_bit", env) == 130
    assert a.getprio(mk("standby", True), "", env) == 81
    assert a.getprio(P("sdz", 0), "", env) == -1                   # no TPGS: error


def test_prio_alua_without_tpgs_falls_back_to_const():
    # select_prio: alua on a port without TPGS -> "emergency fallback - alua failed" -> const
    maps, _ = build_maps(parse_conf("defaults {\n prio alua\n path_grouping_policy group_by_prio\n}\n"),
                         FOUR()[:2])
    assert [pp.prio_name for pp in maps[0].paths] == ["const", "const"]
    assert maps[0].table_params() == "0 0 1 1 service-time 0 2 1 8:0 1 8:16 1"


def test_mixed_alua_drops_handler():
    # select_hwhandler: not every port has TPGS -> "0" even though one port would attach alua
    ps = [P("sda", 0, alua_state="active/optimized", tpg=1), P("sdb", 16)]
    assert table("defaults {\n path_grouping_policy multibus\n}\n", ps) == (
        "0 0 1 1 service-time 0 2 1 8:0 1 8:16 1")


def test_path_latency_arithmetic():
    # path_latency.c: prio = int(log_b(1e8) - mean(log_b(lat_us))), with b = 10: 8 - 3 = 5
    assert prio_from_latencies_us([1000] * 20, 10.0) == 5
    assert prio_from_latencies_us([100] * 20, 10.0) == 6
    assert prio_from_latencies_us([0] * 20, 10.0) == 8          # 0 us reads add nothing: avg 0 <= min
    assert prio_from_latencies_us([10 ** 9] * 20, 10.0) == 0     # above the 100 s ceiling


def test_path_latency_groups_fast_paths_first():
    # constant service times 100 us and 1 ms -> prios 6 and 5 with base 10 -> group_by_prio
    # puts the fast paths first
    topo = path_topology_from_dict({"map": {"wwid": "36001"}, "paths": {
        "sda": {"devt": "8:0", "service": "1ms"}, "sdb": {"devt": "8:16", "service": "100us"},
        "sdc": {"devt": "8:32", "service": "1ms"}}})
    conf = parse_conf('defaults {\n path_grouping_policy group_by_prio\n prio path_latency\n'
                      ' prio_args "io_num=20 base_num=10"\n}\n')
    from mpathlab.mtools.run import discover
    maps, _, _ = discover(conf, topo)
    assert [pp.priority for pp in maps[0].paths] == [5, 6, 5]
    assert maps[0].table_params() == "0 0 2 1 service-time 0 1 1 8:16 1 service-time 0 2 1 8:0 1 8:32 1"


def test_random_prio_in_range_and_seeded():
    conf = "defaults {\n path_grouping_policy group_by_prio\n prio random\n}\n"
    a = [pp.priority for pp in build_maps(parse_conf(conf), FOUR(), env=PrioEnv(7))[0][0].paths]
    b = [pp.priority for pp in build_maps(parse_conf(conf), FOUR(), env=PrioEnv(7))[0][0].paths]
    assert a == b and all(1 <= x <= 10 for x in a)


def test_features_from_no_path_retry():
    base = "defaults {\n path_grouping_policy multibus\n %s\n}\n"
    two = FOUR()[:2]
    # assemble_map adds queue_if_no_path for no_path_retry queue or N, not for fail
    assert table(base % "no_path_retry queue", two).startswith("1 queue_if_no_path 0 1 1 ")
    assert table(base % "no_path_retry 5", two).startswith("1 queue_if_no_path 0 1 1 ")
    assert table(base % "no_path_retry fail", two).startswith("0 0 1 1 ")
    # add_feature appends after the existing features and bumps the count
    assert table(base % 'features "2 pg_init_retries 50"\n no_path_retry queue', two).startswith(
        "3 pg_init_retries 50 queue_if_no_path 0 1 1 ")
    # reconcile_features_with_options: the old spelling is read as no_path_retry queue
    assert table(base % 'features "1 queue_if_no_path"', two).startswith("1 queue_if_no_path 0 1 1 ")
    # ... but loses to an explicit no_path_retry fail
    assert table(base % 'features "1 queue_if_no_path"\n no_path_retry fail', two).startswith("0 0 1 1 ")
    assert add_feature("0", "queue_if_no_path") == "1 queue_if_no_path"
    assert add_feature("1 queue_if_no_path", "queue_if_no_path") == "1 queue_if_no_path"


# -- precedence (propsel.c) ---------------------------------------------------------------------
LAYERS = {
    "defaults": "defaults {\n detect_pgpolicy no\n path_grouping_policy multibus\n}\n",
    "devices": 'devices {\n device {\n vendor "ACME"\n product "Box"\n path_grouping_policy group_by_serial\n }\n}\n',
    "overrides": "overrides {\n path_grouping_policy group_by_node_name\n}\n",
    "multipaths": "multipaths {\n multipath {\n wwid 3600a0980aaaa\n path_grouping_policy failover\n }\n}\n",
}


@pytest.mark.parametrize("present,winner", [
    (["defaults"], "multibus"),
    (["defaults", "devices"], "group_by_serial"),
    (["defaults", "devices", "overrides"], "group_by_node_name"),
    # mp_set_mpe comes before mp_set_ovr: a multipaths entry beats overrides
    (["defaults", "devices", "overrides", "multipaths"], "failover"),
    ([], "failover"),
])
def test_precedence(present, winner):
    conf = parse_conf("".join(LAYERS[k] for k in present))
    maps, _ = build_maps(conf, FOUR(vendor="ACME", product="Box"))
    assert maps[0].pgpolicy == winner


def test_builtin_hwtable_beats_defaults_but_not_user_device():
    # IBM 2145 in the built-in table: group_by_prio, failback immediate, no_path_retry queue,
    # prio alua.  mp_set_hwe comes before mp_set_conf, so defaults lose to it.
    ps = alua_paths(vendor="IBM", product="2145")
    conf = parse_conf("defaults {\n detect_pgpolicy no\n path_grouping_policy multibus\n"
                      " no_path_retry fail\n}\n")
    mp = build_maps(conf, ps)[0][0]
    assert (mp.pgpolicy, mp.failback, mp.no_path_retry) == ("group_by_prio", "immediate", "queue")
    assert mp.table_params().startswith("1 queue_if_no_path 1 alua 3 1 ")
    # a user device entry with the same strings is merged over the built-in one
    conf = parse_conf("devices {\n device {\n vendor IBM\n product ^2145\n failback manual\n }\n}\n")
    mp = build_maps(conf, ps)[0][0]
    assert (mp.failback, mp.no_path_retry) == ("manual", "queue")


def test_pure_flasharray_uses_alua_not_sysfs():
    # the PURE entry turns detect_prio off, so its own prio (alua) applies
    mp = build_maps(parse_conf(""), alua_paths(vendor="PURE", product="FlashArray"))[0][0]
    assert {pp.prio_name for pp in mp.paths} == {"alua"}
    assert mp.failback == "immediate"


def test_blacklist_and_exceptions():
    conf = parse_conf('blacklist {\n wwid "^3600bad"\n devnode "^sdc"\n}\n'
                      'blacklist_exceptions {\n devnode "^sdc$"\n}\n')
    assert blacklisted(conf, P("sdb", 16, wwid="3600bad1")) == 'wwid "^3600bad"'
    assert blacklisted(conf, P("sdc", 32)) is None            # the exception wins within its filter
    assert blacklisted(conf, P("sdca", 32)) == 'devnode "^sdc"'
    # a device entry's product_blacklist blacklists that vendor's matching products
    conf2 = parse_conf('devices {\n device {\n vendor ACME\n product Box\n product_blacklist "^Gateway"\n }\n}\n')
    assert blacklisted(conf2, P("sdb", 16, vendor="ACME", product="Gateway 2")) == "device ACME:^Gateway"
    assert blacklisted(conf2, P("sdb", 16, vendor="ACME", product="Box")) is None
    # the built-in devnode blacklist "!^(sd[a-z]|dasd[a-z]|nvme[0-9])"
    assert blacklisted(conf, P("loop0", 112)) == 'devnode "!^(sd[a-z]|dasd[a-z]|nvme[0-9])"'


def test_aliases():
    conf = parse_conf("defaults {\n user_friendly_names yes\n}\nmultipaths {\n multipath {\n wwid w2\n"
                      " alias db\n }\n}\n")
    ps = [P("sda", 0, wwid="w1"), P("sdb", 16, wwid="w2"), P("sdc", 32, wwid="w3")]
    maps, _ = build_maps(conf, ps)
    assert [m.alias for m in maps] == ["mpatha", "db", "mpathc"]


# -- multipath -ll (print.c) ------------------------------------------------------------------
def test_size_format():
    # snprint_size: KiB in single precision halved by 1024, one decimal below 10
    assert format_size(2097152) == "1.0G"
    assert format_size(20971520) == "10G"
    assert format_size(1048576) == "512M"
    assert format_size(3) == "1.0K"
    assert format_size(2 * 1536 * 1024 * 1024) == "1.5T"


def test_ll_view():
    ps = alua_paths(vendor="LIO-ORG", product="disk01")
    ps[0].hcil = "10:0:0:1"
    conf = parse_conf("multipaths {\n multipath {\n wwid 3600a0980aaaa\n alias data\n }\n}\n")
    mp = build_maps(conf, ps, size_sectors=20971520)[0][0]
    # LIO-ORG: built-in directio checker (detect_checker off): standby sdd reads fail -> faulty,
    # failed in dm when the map is loaded; no_path_retry 12 -> queue_if_no_path
    expected = (
        "data (3600a0980aaaa) dm-0 LIO-ORG,disk01\n"
        "size=10G features='1 queue_if_no_path' hwhandler='1 alua' wp=rw\n"
        "|-+- policy='service-time 0' prio=50 status=active\n"
        "| |- 10:0:0:1 sda 8:0  active ready  running\n"
        "| `- 1:0:0:2  sdc 8:32 active ready  running\n"
        "|-+- policy='service-time 0' prio=10 status=enabled\n"
        "| `- 1:0:0:1  sdb 8:16 active ready  running\n"
        "`-+- policy='service-time 0' prio=0 status=enabled\n"
        "  `- 1:0:0:3  sdd 8:48 failed faulty running")
    assert format_ll(mp, loaded_target(mp)) == expected


def test_ll_group_status_is_the_kernels_letter():
    # multipath_status prints D for a bypassed group before it looks at current_pg: with every group
    # disabled the kernel still picks a path in group 1 (current_pg), and -ll says disabled, not active
    ps = alua_paths(vendor="LIO-ORG", product="disk01")
    conf = parse_conf("multipaths {\n multipath {\n wwid 3600a0980aaaa\n alias data\n }\n}\n")
    mp = build_maps(conf, ps, size_sectors=20971520)[0][0]
    t = loaded_target(mp)
    for g in ("1", "2", "3"):
        t.message("disable_group", g)
    assert t.choose_pgpath(4096) is not None and t.current_pg is t.priority_groups[0]
    assert t.status("info").split()[4:7] == ["3", "1", "D"]     # 3 groups, next group 1, group 1 state D
    assert [x.split("status=")[1] for x in format_ll(mp, t).splitlines() if "status=" in x] == ["disabled"] * 3


# -- multipathd in the simulation ----------------------------------------------------------------
CONF_TL = """
defaults {
    polling_interval 2
    max_polling_interval 2
    failback %s
    no_path_retry %s
}
"""


def job(seconds, extra=""):
    return parse_fio("[j]\nrw=randread\nbs=4k\niodepth=1\ntime_based=1\nruntime=%ds\n%s" % (seconds, extra),
                     "j.fio").jobs


def topo(paths, **mapkw):
    return path_topology_from_dict({"multipath": {"seed": 1}, "map": dict({"wwid": "36001405aaaa"}, **mapkw),
                                    "paths": paths}, "t.toml")


def path(devt, **kw):
    return dict({"devt": devt, "service": "1ms"}, **kw)


def events(d):
    return [(round(t / 1e9, 3), e) for t, e in d.log]


def share(res, dev, t0, t1):
    return res.share_in_window(dev, int(t0 * 1e9), int(t1 * 1e9))


TWO_FAILS = {"sda": path("8:0", faults=[{"at": "3.5s", "action": "fail"}, {"at": "9.5s", "action": "reinstate"},
                                         {"at": "20.5s", "action": "fail"}]),
             "sdb": path("8:16", faults=[{"at": "20.5s", "action": "fail"}])}


def run_tl(failback, npr, paths=TWO_FAILS, seconds=40, conf_extra=""):
    res, d, mp = simulate_conf(parse_conf(CONF_TL % (failback, npr) + conf_extra), topo(paths), job(seconds),
                               window_ns=500_000_000)
    res.check_accounting()
    return res, d, mp


WEIGHTED = 'overrides {\n path_grouping_policy failover\n prio weightedpath\n prio_args "devname sda 50 sdb 10"\n}\n'
SDA_FIRST = "1 queue_if_no_path 0 2 1 service-time 0 1 1 8:0 1 service-time 0 1 1 8:16 1"
SDB_FIRST = "1 queue_if_no_path 0 2 1 service-time 0 1 1 8:16 1 service-time 0 1 1 8:0 1"


@pytest.mark.parametrize("failback,expected", [
    # need_switch_pathgroup sees group 1 (sda, down: priority 0) below group 2 (sdb, 10):
    # out of order, so failback immediate reloads at once (sdb's group first); when sda
    # is back at 10 s (priority 50) the groups are out of order again: reload, sda first
    ("immediate", [(4.0, "loaded " + SDB_FIRST), (10.0, "loaded " + SDA_FIRST)]),
    # failback 5: failback_tick = 5 + 1, counted down in the same loop: the reload comes
    # 5 loops later (9 s); sda's return at 10 s arms it again: 15 s
    ("5", [(9.0, "loaded " + SDB_FIRST), (15.0, "loaded " + SDA_FIRST)]),
    # followover: nothing at 4 s (no path came back); at 10 s sda is the first path of
    # the best group to come back: switch_group (groups are in order, no reload)
    ("followover", [(10.0, "switch_group 1")]),
    # manual: need_switch_pathgroup returns before anything: the kernel stays on group 2
    ("manual", []),
])
def test_failback_and_no_path_retry_timeline(failback, expected):
    """Checks every 2 s at even seconds (polling_interval = max = 2, uptime 3600 s), paths
    sda (priority 50) and sdb (10), one per group.  sda's link drops at 3.5 s: I/O there
    fails, the kernel fails sda and moves to group 2; multipathd takes in the dm event at
    its 4 s loop.  The link returns at 9.5 s; the 10 s check reinstates sda; failback
    decides when sda carries the I/O again.  Both links drop at 20.5 s: queue_if_no_path
    holds the I/O; at the 21 s loop both dm events make the map enter recovery mode with
    retry_tick = 3 * 2 + 1 = 7, counted down once per loop from 21 s: at 27 s
    fail_if_no_path is sent and the queued I/O fails (fio stops at the error)."""
    res, d, mp = run_tl(failback, 3, conf_extra=WEIGHTED)
    assert d.tables[0][1] == "0 2097152 multipath " + SDA_FIRST
    ev = events(d)
    assert (4.0, "sda: mark as failed (dm event)") in ev
    assert (10.0, "reinstate_path 8:0 (sda)") in ev
    assert [(t, e) for t, e in ev if e.startswith(("loaded", "switch_group"))] == expected
    assert share(res, "sda", 1, 3.5) == 1.0                     # group 1 first
    assert share(res, "sdb", 4, 9.5) == 1.0                     # after the kernel failed sda
    back = expected[-1][0] if expected else None
    if back:
        if back > 10:
            assert share(res, "sdb", 10, back) == 1.0
        assert share(res, "sda", back + 0.5, 20.5) == 1.0
    else:
        assert share(res, "sdb", 10, 20.5) == 1.0               # manual: stays on group 2
    assert (21.0, "entering recovery mode: max_retries=3") in ev
    assert (27.0, "fail_if_no_path") in ev
    j = res.jobs[0]
    assert j.first_error == "ioerr"
    assert j.end_ns == 27 * 10 ** 9                             # queued from 20.5 s until 27 s
    assert res.completed == sum(p["completed"] for p in res.paths)


def test_equal_priorities_do_not_fail_back_after_a_reload():
    """With const priorities (both 1) the out-of-order reload at 4 s puts sdb's group
    first; when sda returns both groups have priority 1 and one usable path, so
    select_path_group keeps group 1 (sdb): failback immediate does not move back."""
    res, d, _ = run_tl("immediate", 3)
    assert [(t, e) for t, e in events(d) if e.startswith(("loaded", "switch_group"))] == [
        (4.0, "loaded " + SDB_FIRST)]
    assert share(res, "sdb", 10, 20.5) == 1.0


def test_no_path_retry_recovery_before_timeout():
    """sda returns at 24.5 s, before retry_tick runs out: the 26 s check reinstates it,
    recovery mode ends, queue_if_no_path is turned back on, the queued I/O completes."""
    paths = dict(TWO_FAILS)
    paths["sda"] = path("8:0", faults=[{"at": "20.5s", "action": "fail"}, {"at": "24.5s", "action": "reinstate"}])
    res, d, _ = run_tl("immediate", 3, paths, seconds=30)
    ev = events(d)
    assert (21.0, "entering recovery mode: max_retries=3") in ev
    assert (26.0, "reinstate_path 8:0 (sda)") in ev
    assert (26.0, "queue_if_no_path") in ev
    assert not any(e == "fail_if_no_path" for _, e in ev)
    assert res.errored == 0 and res.jobs[0].first_error is None
    assert share(res, "sda", 26, 30) == 1.0


def test_no_path_retry_fail_errors_at_once():
    # no_path_retry fail: no queue_if_no_path in the table; when the last path fails the
    # target completes the I/O with its path error (multipath_end_io without queueing)
    res, d, mp = run_tl("immediate", "fail", seconds=30)
    assert d.tables[0][1].split(" multipath ")[1].startswith("0 0 2 1 ")
    assert res.jobs[0].first_error == "transport"
    assert 20.5e9 <= res.jobs[0].end_ns < 20.6e9


def test_followover_does_not_fail_back_to_a_group_with_a_working_path():
    """followover: fail back only when the returning path is the first of the best group to
    come back.  An admin switches to group 2 at 1 s while both group-1 paths work; sda
    then fails and returns at 7.5 s: sdb never failed, so followover stays on group 2.
    immediate undoes the admin's switch at the next loop (2 s): the best group is 1."""
    paths = {"sda": path("8:0", serial="A", faults=[{"at": "3.5s", "action": "fail"},
                                                    {"at": "7.5s", "action": "reinstate"}]),
             "sdb": path("8:16", serial="A"), "sdc": path("8:32", serial="B")}
    conf_extra = "overrides {\n path_grouping_policy group_by_serial\n}\n"
    for fb, back in (("followover", False), ("immediate", True)):
        from mpathlab.sim.engine import Simulation
        from mpathlab.mtools.daemon import Multipathd
        from mpathlab.mtools.run import discover
        conf = parse_conf(CONF_TL % (fb, "queue") + conf_extra)
        t = topo(paths)
        maps, _, env = discover(conf, t)
        mp = maps[0]
        assert mp.table_params() == ("1 queue_if_no_path 0 2 1 service-time 0 2 1 8:0 1 8:16 1 "
                                     "service-time 0 1 1 8:32 1")
        sim = Simulation(mp.table_line(), [pp.path.model for pp in mp.paths], job(12), window_ns=500_000_000,
                         **t.sim)
        d = Multipathd(mp, conf.checkint(), conf.max_checkint(), env=env, topology=t)
        sim.add_daemon(d)
        sim.daemon_timer(10 ** 9, lambda: sim.send_message("switch_group 2"))
        res = sim.run()
        switched = [(t_, e) for t_, e in events(d) if e.startswith("switch_group")]
        assert switched == ([(2.0, "switch_group 1")] if back else [])
        assert (8.0, "reinstate_path 8:0 (sda)") in events(d)
        if back:
            assert share(res, "sdc", 2.5, 12) == 0.0
        else:
            assert share(res, "sdc", 1.5, 12) == 1.0


def test_alua_state_change_switches_active_group():
    """Two TPGs swap states at 5.5 s.  The 6 s checks read the new priorities (10 and 50);
    group_by_prio with failback immediate reloads the map: sdb's group now comes first.
    The reload waits for the I/O on sda to finish (suspend without flush), so sdb carries
    the I/O from just after 6 s."""
    paths = {"sda": path("8:0", alua="active/optimized", tpg=1,
                         alua_changes=[{"at": "5.5s", "state": "active/non-optimized"}]),
             "sdb": path("8:16", alua="active/non-optimized", tpg=2,
                         alua_changes=[{"at": "5.5s", "state": "active/optimized"}])}
    res, d, mp = run_tl("immediate", "queue", paths, seconds=10)
    assert d.tables[0][1].split(" multipath ")[1] == (
        "1 queue_if_no_path 1 alua 2 1 service-time 0 1 1 8:0 1 service-time 0 1 1 8:16 1")
    ev = events(d)
    assert (6.0, "sda: prio changed 50 -> 10") in ev and (6.0, "sdb: prio changed 10 -> 50") in ev
    assert (6.0, "reload (path priorities changed)") in ev
    assert [e for t, e in ev if e.startswith("loaded")] == [
        "loaded 1 queue_if_no_path 1 alua 2 1 service-time 0 1 1 8:16 1 service-time 0 1 1 8:0 1"]
    assert d.tables[-1][0] - 6 * 10 ** 9 <= 1_000_000           # one 1 ms I/O to drain
    assert share(res, "sda", 0, 5.5) == 1.0
    assert share(res, "sdb", 6, 10) == 1.0
    assert res.errored == 0


def test_standby_port_is_not_reinstated_without_active_paths():
    """sda (optimized) loses its link at 3.5 s; the kernel moves to sdb, a standby port,
    which refuses I/O, so the kernel fails it too and the map queues.  At the 4 s loop
    both dm events are taken in and tur reports sdb as ghost: a state change with no
    usable path, so sdb is not reinstated (disable_reinstate).  The groups are out of
    order (sda's group has no usable path: priority 0), so the map is reloaded with sdb's
    group first; the reload syncs dm with multipathd's view, which fails sda but leaves
    ghost sdb active: the queued I/O fails on it again (dm event at 5 s), the 6 s check
    keeps it out as at 4 s.  At 8 s sdb's own ghost state counts as an active path
    (count_active_paths counts ghost), so it is reinstated and fails again (9 s).  At
    8.5 s the array makes sdb optimized: the 10 s check reinstates it for good, and its
    new priority (50, as sda's kept one) reloads the map as one group."""
    paths = {"sda": path("8:0", alua="active/optimized", tpg=1, faults=[{"at": "3.5s", "action": "fail"}]),
             "sdb": path("8:16", alua="standby", tpg=2,
                         alua_changes=[{"at": "8.5s", "state": "active/optimized"}])}
    res, d, mp = run_tl("immediate", "queue", paths, seconds=14)
    ev = events(d)
    assert (4.0, "sdb: mark as failed (dm event)") in ev and (4.0, "sdb: checker ghost") in ev
    assert [t for t, e in ev if e == "reinstate_path 8:16 (sdb)"] == [8.0, 10.0]
    assert [t for t, e in ev if e == "sdb: mark as failed (dm event)"] == [4.0, 5.0, 9.0]
    assert [e for t, e in ev if e.startswith("loaded")] == [
        "loaded 1 queue_if_no_path 1 alua 2 1 service-time 0 1 1 8:16 1 service-time 0 1 1 8:0 1",
        "loaded 1 queue_if_no_path 1 alua 1 1 service-time 0 2 1 8:0 1 8:16 1"]
    assert share(res, "sdb", 10.5, 14) == 1.0 and res.errored == 0


def test_checker_backs_off_to_max_polling_interval():
    """update_path_state doubles a healthy path's interval up to max_polling_interval (16);
    update_path then shortens the countdown by one when the next check would not fall on
    a multiple of the interval on the monotonic clock (uptime 3600 s, adjust_int 16).
    Healthy sdb: checked at 0 (interval 4, 3604 % 4 = 0: kept), 4 (interval 8; 3612 % 8
    != 0: 7), 11 (interval 16; 3627 % 16 != 0: 15), 26, 41.
    sda carries the I/O (failover, group 1); its link drops at 15.5 s, the I/O error
    fails it in the kernel and the 16 s loop takes in the event, bringing its check
    forward to at most polling_interval (2): checked at 17, then every 2 s from 18 on
    (tick 2 at 17 is shortened to 1 because 3619 is odd)."""
    paths = {"sda": path("8:0", faults=[{"at": "15.5s", "action": "fail"}]), "sdb": path("8:16")}
    conf = parse_conf("defaults {\n polling_interval 2\n max_polling_interval 16\n"
                      " path_grouping_policy failover\n no_path_retry queue\n}\n")
    res, d, _ = simulate_conf(conf, topo(paths), job(42))
    at = lambda name: [t // 10 ** 9 for t, n, _ in d.checks if n == name]
    assert at("sdb") == [0, 4, 11, 26, 41]
    assert (16.0, "sda: mark as failed (dm event)") in events(d)
    assert at("sda")[:8] == [0, 4, 11, 17, 18, 20, 22, 24]
    assert {st for t, n, st in d.checks if n == "sda" and t > 16e9} == {"faulty"}


def test_daemon_runs_in_the_compiled_core():
    from mpathlab.sim import fast
    from mpathlab.sim.engine import Simulation
    from mpathlab.mtools.daemon import Multipathd
    from mpathlab.mtools.run import discover
    conf = parse_conf("")
    t = topo({"sda": path("8:0"), "sdb": path("8:16")})
    mp = discover(conf, t)[0][0]
    sim = Simulation(mp.table_line(), [pp.path.model for pp in mp.paths], job(1), **t.sim)
    sim.add_daemon(Multipathd(mp, 5, 20, topology=t))
    assert fast.eligible(sim) == "" or not fast.available()     # tests/test_fastcore_daemon.py: the same runs


# -- the CLI and the example ---------------------------------------------------------------------
def cli(*args):
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "src"))
    return subprocess.run([sys.executable, "-m", "mpathlab"] + list(args), capture_output=True, text=True,
                          env=env, cwd=ROOT)


def test_example_maps():
    r = cli("maps", "--conf", os.path.join(EX, "multipath.conf"), os.path.join(EX, "alua-paths.toml"))
    assert r.returncode == 0, r.stderr
    # LIO-ORG device entry (round-robin 0, rr_min_io_rq 2), built-in no_path_retry 12 beats
    # the defaults' 3, the multipaths alias "data"
    assert r.stdout.splitlines()[0] == (
        "table: 0 20971520 multipath 1 queue_if_no_path 1 alua 2 1 round-robin 0 2 1 8:16 2 8:48 2 "
        "round-robin 0 2 1 8:32 2 8:64 2")
    assert "data (36001405a1b2c3d4e5f60718293a4b5c6) dm-0 LIO-ORG,lun0" in r.stdout
    r = cli("maps", "-v", "--conf", os.path.join(EX, "multipath.conf"), os.path.join(EX, "alua-paths.toml"))
    lines = r.stdout.splitlines()
    # select_no_path_retry: the built-in LIO-ORG entry (12) beats the defaults section (3)
    assert "data: no_path_retry = 12 (setting: storage device configuration)" in lines
    assert "data: path_grouping_policy = group_by_prio (setting: storage device autodetected)" in lines
    assert "sdb: path_checker = directio (setting: storage device configuration)" in lines


def test_example_run():
    r = cli("run", "--conf", os.path.join(EX, "multipath.conf"), os.path.join(EX, "alua-paths.toml"),
            os.path.join(EX, "randread.fio"), "--json")
    assert r.returncode == 0, r.stderr
    import json
    doc = json.loads(r.stdout)
    ev = [e["event"] for e in doc["multipathd"]["events"]]
    assert "reinstate_path 8:16 (sdb)" in ev and "reload (path priorities changed)" in ev
    # 10 s: TPG 1 lost, groups out of order: TPG 2 first; 40 s: TPG 1 back first; 73 s:
    # sdb/sdd are checked and read 10, so update_prio reads the unchecked sdc/sde too (50):
    # TPG 2 first
    tables = [(t["time_ns"] // 10 ** 9, t["table"].split(" multipath ")[1]) for t in doc["multipathd"]["tables"]]
    tpg1 = "round-robin 0 2 1 8:16 2 8:48 2"
    tpg2 = "round-robin 0 2 1 8:32 2 8:64 2"
    head = "1 queue_if_no_path 1 alua 2 1 "
    assert tables == [(0, head + tpg1 + " " + tpg2), (10, head + tpg2 + " " + tpg1), (40, head + tpg1 + " " + tpg2),
                      (73, head + tpg2 + " " + tpg1)]
    assert doc["jobs"][0]["error"] == 0


def test_cli_bad_conf_exit_3(tmp_path):
    bad = tmp_path / "bad.conf"
    bad.write_text('blacklist {\n    wwid "(["\n}\n')
    r = cli("maps", "--conf", str(bad), os.path.join(EX, "alua-paths.toml"))
    assert r.returncode == 3
    assert r.stderr.strip().splitlines()[-1] == (
        'mpathlab: error: %s:2: multipath refuses this file (error parsing config file): wwid "(["' % bad)
    warn = tmp_path / "warn.conf"
    warn.write_text("defaults {\n    colour blue\n}\n")
    r = cli("maps", "--conf", str(warn), os.path.join(EX, "alua-paths.toml"))
    assert r.returncode == 0
    assert "warn.conf line 2, invalid keyword in the defaults section: colour" in r.stderr


def test_cli_bad_topology_exit_3(tmp_path):
    t = tmp_path / "t.toml"
    t.write_text('[paths.sda]\nservice = "1ms"\nalua = "sideways"\n')
    r = cli("maps", "--conf", os.path.join(EX, "multipath.conf"), str(t))
    assert r.returncode == 3 and "ALUA state must be one of" in r.stderr


def test_cli_bad_toml_in_path_topology_names_file_and_line(tmp_path):
    # the --conf path topology is read like every topology (inputs.load_toml): FILE:LINE first, exit 3
    t = tmp_path / "t.toml"
    t.write_text('[paths.sda]\nservice = "1ms"\nalua = \n')
    r = cli("maps", "--conf", os.path.join(EX, "multipath.conf"), str(t))
    assert r.returncode == 3 and "%s:3: invalid TOML in the topology file: Invalid value" % t in r.stderr
    t.write_bytes(b'[paths.sda]\nservice = "1ms" # caf\xe9\n')
    r = cli("maps", "--conf", os.path.join(EX, "multipath.conf"), str(t))
    assert r.returncode == 3 and "%s:2: not UTF-8 text (byte 0xe9" % t in r.stderr


@pytest.mark.parametrize("par", [0, 65537, 10 ** 12, True])
def test_path_topology_parallelism_has_the_topology_bound(par):
    # the same 1..65536 (MAX_PARALLELISM) as a dm topology's [paths.*]: a --conf topology took any size
    with pytest.raises(TopologyError, match=r"t.toml: paths.sda.parallelism must be a whole number >= 1 and "
                                            r"<= 65536, got %r" % par):
        path_topology_from_dict({"paths": {"sda": {"service": "1ms", "parallelism": par}}}, "t.toml")


def test_path_topology_per_kib_0_is_kept_for_mixed_sizes():
    # as in a dm topology: an explicit per_kib = 0 is the user's, a job with mixed sizes must not replace it
    # with DEFAULT_NS_PER_KIB (which only fills in a per_kib nobody gave)
    from mpathlab.sim.arrival import DEFAULT_NS_PER_KIB, with_default_size_cost
    topo = path_topology_from_dict({"paths": {"sda": {"service": "1ms", "per_kib": 0}, "sdb": {"service": "1ms"}}},
                                   "t.toml")
    jobs = parse_fio("[j]\nrw=read\nbssplit=4k/50:64k/50\nsize=1m\n").jobs
    models = with_default_size_cost([p.model for p in topo.paths], jobs)
    assert [m.ns_per_kib for m in models] == [0, DEFAULT_NS_PER_KIB]


# -- property tests: the path topology parser and map invariants -----------------------------------
from mpathlab.topology import TopologyError  # noqa: E402

ANY = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(-5, 70000), st.text(max_size=8),
                             st.sampled_from(["1ms", "standby", "active/optimized", "8:0", "1:0:0:0", "fail",
                                              "reinstate", "slow", "2s", "1G", "x"])),
                   lambda c: st.one_of(st.lists(c, max_size=3), st.dictionaries(st.sampled_from(
                       ["at", "action", "state", "devt", "service", "alua", "tpg", "pref", "hcil", "faults",
                        "alua_changes", "wwid", "size", "seed", "table", "factor"]), c, max_size=4)),
                   max_leaves=12)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.sampled_from(["multipath", "map", "paths", "description", "other"]), ANY, max_size=4),
       st.dictionaries(st.sampled_from(["sda", "sdb"]), ANY, max_size=2))
def test_property_path_topology_only_raises_topology_errors(doc, paths):
    if paths:
        doc = dict(doc, paths=paths)
    try:
        path_topology_from_dict(doc, "fuzz.toml")
    except TopologyError as e:
        assert str(e).startswith("fuzz.toml"), str(e)


STATES = st.sampled_from([None, "active/optimized", "active/non-optimized", "standby", "unavailable"])


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(STATES, st.integers(0, 3), st.sampled_from("AB"), st.sampled_from("xy")),
                min_size=1, max_size=6),
       st.sampled_from(["failover", "multibus", "group_by_serial", "group_by_prio", "group_by_node_name",
                        "group_by_tpg"]),
       st.sampled_from(["uniform", "priorities"]), st.booleans())
def test_property_map_invariants(specs, policy, rr_weight, detect):
    """Whatever the paths: every path is in exactly one group, groups are in the order
    sort_pathgroups gives, the table parses in the kernel target with the same groups,
    and the initial group is select_path_group's."""
    from mpathlab.mtools.maps import select_path_group
    ps = [P("sd" + "abcdef"[i], 16 * i, alua_state=s, tpg=t, serial=ser, node_name=nn)
          for i, (s, t, ser, nn) in enumerate(specs)]
    conf = parse_conf("defaults {\n detect_pgpolicy %s\n path_grouping_policy %s\n rr_weight %s\n}\n"
                      % ("yes" if detect else "no", policy, rr_weight))
    mp = build_maps(conf, ps)[0][0]
    names = [pp.name for g in mp.groups for pp in g.paths]
    assert sorted(names) == sorted(p.name for p in ps)
    keys = [(g.marginal, -g.priority, -g.enabled_paths) for g in mp.groups]
    assert keys == sorted(keys)
    t = loaded_target(mp, first_io=False)
    assert [[p.dev.devt for p in pg.pgpaths] for pg in t.priority_groups] == [
        [pp.path.devt for pp in g.paths] for g in mp.groups]
    assert mp.bestpg == select_path_group(mp.groups)
    assert t.nr_priority_groups == len(mp.groups)


def test_san_path_err_delays_a_flapping_path():
    """check_path_reinstate_state with threshold 1, forget_rate 10, recovery_time 6:
    sda comes back at the 6 s check (first failure: 1 > 1 is false, reinstated), fails
    again at 7.5 s and comes back for the 10 s check: the second failure exceeds the
    threshold, so it is delayed from 10 s (monotonic 3610) and reinstated at the first
    check more than 6 s later, 18 s (3618 - 3610 = 8 > 6; at 16 s 6 > 6 is false)."""
    paths = {"sda": path("8:0", faults=[{"at": "3.5s", "action": "fail"}, {"at": "5.5s", "action": "reinstate"},
                                         {"at": "7.5s", "action": "fail"}, {"at": "9.5s", "action": "reinstate"}]),
             "sdb": path("8:16")}
    extra = ("overrides {\n san_path_err_threshold 1\n san_path_err_forget_rate 10\n"
             " san_path_err_recovery_time 6\n}\n")
    res, d, _ = run_tl("immediate", "queue", paths, seconds=22, conf_extra=extra)
    ev = events(d)
    assert [t for t, e in ev if e == "reinstate_path 8:0 (sda)"] == [6.0, 18.0]
    assert (10.0, "sda: path is now marginal (san_path_err), delaying reinstatement") in ev
    assert [st for t, n, st in d.checks if n == "sda" and 10e9 <= t <= 16e9] == ["ready"] * 4
    # the 4 s reload put sdb's group first (const priorities), so sda only gets I/O again
    # if sdb fails; what matters here is that it is back in dm from 18 s
    assert share(res, "sda", 10, 22) == 0.0 and (8.0, "sda: checker faulty") in ev


def test_bio_based_map_with_daemon():
    # queue_mode bio in the features: queued bios wait inside the target and go out when
    # multipathd reinstates a path
    paths = {"sda": path("8:0", faults=[{"at": "2.5s", "action": "fail"}, {"at": "5.5s", "action": "reinstate"}])}
    conf = parse_conf(CONF_TL % ("immediate", "queue") + 'overrides {\n features "2 queue_mode bio"\n}\n')
    res, d, _ = simulate_conf(conf, topo(paths), job(8))
    assert d.tables[0][1].split(" multipath ")[1].startswith("3 queue_mode bio queue_if_no_path 0 1 1 ")
    assert (6.0, "reinstate_path 8:0 (sda)") in events(d)
    assert res.errored == 0 and res.pending == 0
    res.check_accounting()


EVENT = st.tuples(st.integers(1, 11), st.sampled_from(["fail", "reinstate", "standby", "active/optimized",
                                                      "active/non-optimized", "transitioning"]))


@settings(max_examples=int(os.environ.get("MTOOLS_EXAMPLES", 25)), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.lists(EVENT, max_size=4), min_size=2, max_size=3),
       st.sampled_from(["immediate", "manual", "followover", "3"]), st.sampled_from(["queue", "fail", "2"]),
       st.sampled_from(["group_by_prio", "failover", "multibus"]), st.booleans())
def test_property_daemon_keeps_io_accounted(schedules, failback, npr, policy, bio):
    """Random link failures/returns and ALUA changes under any failback and no_path_retry:
    the run ends, no I/O is lost or counted twice (reloads included), every check happens
    on a whole second, and a path multipathd believes failed in dm is failed in the kernel
    (the other way round its view may lag: the kernel fails paths between loops)."""
    paths = {}
    for i, sched in enumerate(schedules):
        faults, changes = [], []
        for at, what in sorted(sched):
            at_s = "%d.5s" % at
            if what in ("fail", "reinstate"):
                faults.append({"at": at_s, "action": what})
            else:
                changes.append({"at": at_s, "state": what})
        paths["sd" + "abc"[i]] = path("8:%d" % (16 * i), alua="active/optimized" if i == 0 else
                                      "active/non-optimized", tpg=i + 1, faults=faults, alua_changes=changes)
    conf = parse_conf(CONF_TL % (failback, npr) + "overrides {\n path_grouping_policy %s\n%s}\n"
                      % (policy, ' features "2 queue_mode bio"\n' if bio else ""))
    res, d, mp = simulate_conf(conf, topo(paths), job(14, "continue_on_error=all\n"))
    res.check_accounting()
    assert all(t % 10 ** 9 == 0 for t, _, _ in d.checks)
    if not d._held:
        for pp in mp.paths:
            assert pp.dmstate == "active" or not d.pgpath[pp.path.devt].is_active


def test_endless_ghost_reinstatement_ends_as_stalled():
    """A size-bound job, queueing forever, sda dead and sdb standby: multipathd keeps
    reinstating the ghost path and the kernel keeps failing it, as the real daemon would.
    After 600 s without a finished I/O the daemon stops so the run can end (stalled, the
    queued I/O reported as pending)."""
    paths = {"sda": path("8:0", alua="active/optimized", tpg=1, faults=[{"at": "1.5s", "action": "fail"}]),
             "sdb": path("8:16", alua="standby", tpg=2)}
    jobs = parse_fio("[j]\nrw=randread\nbs=4k\niodepth=1\nsize=40m\n", "j.fio").jobs
    res, d, _ = simulate_conf(parse_conf(CONF_TL % ("immediate", "queue")), topo(paths), jobs)
    assert res.stalled and res.pending == 1 and res.errored == 0
    assert events(d)[-1] == (602.0, "no I/O finished for 600 s: multipathd stops, the run ends as stalled")
    res.check_accounting()
