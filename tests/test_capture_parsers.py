"""Property tests of every parser `mpathlab capture` uses: what the kernel (or the capture script) prints,
generated, printed the way it prints it, and read back; and arbitrary text never raises anything but the
parser's own error."""
import pytest
from hypothesis import given, settings, strategies as st

from mpathlab.capture.parsers import (kernel_series, parse_cpu_list, parse_devt, parse_diskstats, parse_hz,
                                      parse_inflight, parse_multipath_params, parse_proc_devices, parse_scheduler,
                                      parse_stat, stat_delta)
from mpathlab.capture.source import DumpSource, DUMP_MAGIC
from mpathlab.inputs import InputFileError

U64 = st.integers(0, 2 ** 64 - 1)
stat_lines = st.sampled_from([11, 15, 17]).flatmap(lambda n: st.lists(U64, min_size=n, max_size=n))


def stat_text(fields):
    # block/genhd.c part_stat_show: "%8lu %8lu %8llu %8u ..." then a newline
    return " ".join("%8d" % v for v in fields) + "\n"


@given(stat_lines)
def test_stat_round_trip(fields):
    assert parse_stat(stat_text(fields)) == fields


@given(stat_lines, st.data())
def test_stat_delta_counts_what_was_added(before, data):
    added = data.draw(st.lists(st.integers(0, 10 ** 6), min_size=len(before), max_size=len(before)))
    after = [b + a for b, a in zip(before, added)]
    d = stat_delta(before, after)
    assert d["read"] == (added[0], added[3], added[2]) and d["write"] == (added[4], added[7], added[6])
    assert ("discard" in d) == (len(before) >= 15) and ("flush" in d) == (len(before) == 17)
    if added[0] or added[4]:      # a counter that went backwards: a re-created device, not an I/O count
        with pytest.raises(ValueError):
            stat_delta(after, before)


@given(st.text(max_size=200))
def test_stat_refuses_anything_else_with_value_error(text):
    try:
        v = parse_stat(text)
    except ValueError:
        return
    assert len(v) in (11, 15, 17) and all(x >= 0 for x in v)


@given(st.lists(st.tuples(st.integers(0, 4095), st.integers(0, 2 ** 20 - 1), st.from_regex(r"[a-z]{1,6}[0-9]{0,3}", fullmatch=True),
                          stat_lines), max_size=8, unique_by=lambda t: t[2]))
def test_diskstats_round_trip(rows):
    # block/genhd.c diskstats_show: "%4d %7d %s " then the stat fields
    text = "".join("%4d %7d %s %s\n" % (ma, mi, name, " ".join(map(str, f))) for ma, mi, name, f in rows)
    assert parse_diskstats(text) == {name: (ma, mi, f) for ma, mi, name, f in rows}


@given(st.integers(0, 2 ** 32), st.integers(0, 2 ** 32))
def test_inflight_round_trip(r, w):
    assert parse_inflight("%8u %8u\n" % (r, w)) == (r, w)


NAMES = st.lists(st.sampled_from(["none", "mq-deadline", "kyber", "bfq"]), min_size=1, max_size=4, unique=True)


@given(NAMES, st.data())
def test_scheduler_current_is_the_bracketed_one(names, data):
    cur = data.draw(st.sampled_from(names))
    # block/elevator.c elv_iosched_show: the current one in brackets, each followed by a space
    text = "".join(("[%s] " if n == cur else "%s ") % n for n in names) + "\n"
    assert parse_scheduler(text) == (cur, names)


def test_scheduler_of_a_queue_without_elevator():
    assert parse_scheduler("none\n") == ("none", ["none"])
    with pytest.raises(ValueError):
        parse_scheduler("mq-deadline kyber\n")


@given(st.sets(st.integers(0, 511), min_size=1))
def test_cpu_list_counts_the_cpus(cpus):
    # lib/vsprintf.c bitmap_list_string: ranges joined by commas
    s, out = sorted(cpus), []
    i = 0
    while i < len(s):
        j = i
        while j + 1 < len(s) and s[j + 1] == s[j] + 1:
            j += 1
        out.append(str(s[i]) if i == j else "%d-%d" % (s[i], s[j]))
        i = j + 1
    assert parse_cpu_list(",".join(out) + "\n") == len(cpus)


@given(st.text(max_size=40))
def test_cpu_list_refuses_with_value_error(text):
    try:
        assert parse_cpu_list(text) >= 1
    except ValueError:
        pass


@given(st.integers(0, 4095), st.integers(0, 2 ** 20 - 1))
def test_devt_round_trip(major, minor):
    assert parse_devt("%d:%d\n" % (major, minor)) == (major, minor)


@given(st.integers(2, 9), st.integers(0, 30), st.integers(0, 300), st.from_regex(r"(-[0-9a-z+~.-]{0,20})?", fullmatch=True))
def test_kernel_series(a, b, c, tail):
    assert kernel_series("%d.%d.%d%s" % (a, b, c, tail)) == "%d.%d" % (a, b)
    assert kernel_series("%d.%d%s" % (a, b, tail)) == "%d.%d" % (a, b)


def test_kernel_series_of_the_lab_releases():
    assert kernel_series("6.1.0-57-amd64") == "6.1"
    assert kernel_series("6.12.118+deb12-amd64") == "6.12"
    assert kernel_series("garbage") is None


@given(st.sampled_from([100, 250, 300, 1000]), st.text(alphabet="ABCDEFGHIJ_=y\n", max_size=60))
def test_hz_from_a_config(hz, noise):
    assert parse_hz(noise + "\nCONFIG_HZ_%d=y\nCONFIG_HZ=%d\n" % (hz, hz) + noise.replace("CONFIG_HZ=", "")) == hz


@given(st.dictionaries(st.integers(1, 511), st.from_regex(r"[a-z][a-z_-]{0,12}", fullmatch=True), max_size=10),
       st.dictionaries(st.integers(1, 511), st.from_regex(r"[a-z/][a-z/_-]{0,12}", fullmatch=True), max_size=10))
def test_proc_devices_reads_block_majors_only(block, char):
    # fs/proc/devices.c: "Character devices:" then "%3d %s", a blank line, "Block devices:" then the same
    text = "Character devices:\n" + "".join("%3d %s\n" % kv for kv in sorted(char.items())) + "\nBlock devices:\n" + \
        "".join("%3d %s\n" % kv for kv in sorted(block.items()))
    assert parse_proc_devices(text) == block


WORD = st.from_regex(r"[a-z0-9_:-]{1,10}", fullmatch=True)
GROUP = st.tuples(st.from_regex(r"[a-z-]{3,20}", fullmatch=True), st.lists(WORD, max_size=3), st.integers(0, 3),
                  st.lists(st.from_regex(r"[0-9]{1,3}:[0-9]{1,4}", fullmatch=True), min_size=1, max_size=5))


@given(st.lists(WORD, max_size=4), st.lists(WORD, max_size=3), st.lists(GROUP, max_size=4), st.data())
def test_multipath_table_round_trip(features, hw, groups, data):
    paths_args = [[data.draw(st.lists(WORD, min_size=g[2], max_size=g[2])) for _ in g[3]] for g in groups]
    parts = [str(len(features))] + features + [str(len(hw))] + hw + [str(len(groups)), "1" if groups else "0"]
    for (sel, sargs, nargs, devs), pargs in zip(groups, paths_args):
        parts += [sel, str(len(sargs))] + sargs + [str(len(devs)), str(nargs)]
        for dev, a in zip(devs, pargs):
            parts += [dev] + a
    t = parse_multipath_params(" ".join(parts))
    assert t.features == features and t.hw_handler == hw
    assert [g["selector"] for g in t.groups] == [g[0] for g in groups]
    assert [g["selector_args"] for g in t.groups] == [g[1] for g in groups]
    assert [g["paths"] for g in t.groups] == [list(zip(g[3], pa)) for g, pa in zip(groups, paths_args)]
    assert t.devices() == [d for g in groups for d in g[3]]
    with pytest.raises(ValueError):
        parse_multipath_params(" ".join(parts + ["extra"]))


@given(st.text(max_size=120))
def test_multipath_table_refuses_with_value_error(text):
    try:
        parse_multipath_params(text)
    except ValueError:
        pass


CONTENT = st.lists(st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\n\r"), max_size=30),
                   max_size=4)
PATH = st.from_regex(r"/[a-z0-9/_.-]{1,30}", fullmatch=True)


@settings(max_examples=200)
@given(st.dictionaries(PATH, CONTENT, max_size=6), st.dictionaries(PATH, st.lists(WORD, max_size=4), max_size=3),
       st.dictionaries(st.from_regex(r"[a-z]{2,8}( [a-z]{1,5}){0,2}", fullmatch=True),
                       st.tuples(st.integers(0, 255), CONTENT), max_size=3),
       st.dictionaries(PATH, CONTENT, max_size=4), st.floats(0, 1e6), st.floats(0, 1e3),
       st.lists(st.dictionaries(WORD, st.tuples(st.integers(0, 10 ** 6), st.integers(0, 10 ** 6)), max_size=4),
                max_size=5))
def test_dump_round_trip(files, dirs, cmds, counters, t0, dt, samples):
    """A dump written the way capture.sh writes it reads back the same."""
    out = [DUMP_MAGIC, "@@ seconds 5"]
    for p, lines in files.items():
        out += ["@@ file " + p] + ["|" + x for x in lines]
    for p, entries in dirs.items():
        out += ["@@ dir " + p] + ["|" + x for x in entries]
    for c, (rc, lines) in cmds.items():
        out += ["@@ cmd " + c] + ["|" + x for x in lines] + ["@@ rc %d" % rc]
    for k, t in ((0, t0), (1, t0 + dt)):
        out.append("@@ snap %d %r" % (k, t))
        for p, lines in counters.items():
            out += ["@@ file " + p] + ["|" + x for x in lines]
        if k == 0:
            for i, c in enumerate(samples):
                out += ["@@ sample %r" % (t0 + i * 0.1)] + ["|%s %d %d" % (d, r, w) for d, (r, w) in c.items()]
    out.append("@@ end")
    src = DumpSource("\n".join(out) + "\n", "x.dump")
    assert src.complete and src.seconds == 5
    text = lambda lines: "".join(x + "\n" for x in lines)  # noqa: E731
    for p, lines in files.items():
        assert src.read(p) == text(lines)
    for p, entries in dirs.items():
        assert src.listdir(p) == sorted(entries)
    for c, (rc, lines) in cmds.items():
        assert src.command(c.split()) == (rc, text(lines))
    assert src.window() == pytest.approx(dt, abs=1e-6 * max(1.0, t0))
    for k in (0, 1):
        assert src.counters(k, list(counters))[1] == {p: text(v) for p, v in counters.items()}
    assert [c for _, c in src.samples()] == samples


@given(st.text(max_size=300))
def test_dump_parser_refuses_with_file_and_line(text):
    try:
        DumpSource(DUMP_MAGIC + "\n" + text, "x.dump")
    except InputFileError as e:
        assert str(e).startswith("x.dump:") and "\n" not in str(e)
