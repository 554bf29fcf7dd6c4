"""The trace readers (mpathlab.workload.trace_*): write -> read round trips, truncation and garbage
(hypothesis), real fio iologs, blktrace files read by the real blkparse (text and -d merge), and a real
kernel's blktrace with blkparse's text and fio's iolog of the same run."""
import io
import os
import struct

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from conftest import require
from mpathlab.workload.trace import (TA_COMPLETE, TA_QUEUE, TC_AHEAD, TC_DISCARD, TC_FLUSH, TC_FUA, TC_META,
                                     TC_NOTIFY, TC_READ, TC_SYNC, TC_WRITE, BlkEvent, IologEntry, TraceError, tc_act)
from mpathlab.workload.trace_blktrace import (format_blkparse_line, merge_by_time, pack_event, percpu_files,
                                              read_blkparse, read_blktrace, read_blktrace_set, write_blktrace)
from mpathlab.workload.trace_iolog import FILE_ACTIONS, read_iolog, write_iolog
from mpathlab.workload.trace_replay import IO, IOLOG_DDIRS, ReplayOptions, find_source, open_pieces
from trace_util import DATA, percpu_events, write_percpu, blkparse

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

# -- fio iologs ------------------------------------------------------------------------------------

names = st.text(st.characters(whitelist_categories=("L", "N"), whitelist_characters="/._-"), min_size=1,
                max_size=30).filter(lambda s: len(s.encode()) <= 256)


@st.composite
def iolog_entries(draw, version):
    actions = list(FILE_ACTIONS) + ["read", "write", "trim", "sync", "datasync"] + (["wait"] if version == 2 else [])
    out = []
    t = 0
    for _ in range(draw(st.integers(0, 25))):
        a = draw(st.sampled_from(actions))
        t += draw(st.integers(0, 10 ** 7))
        off, ln = (0, 0) if a in FILE_ACTIONS else (draw(st.integers(0, 2 ** 64 - 1)), draw(st.integers(0, 2 ** 32 - 1)))
        out.append(IologEntry(0, t if version == 3 else None, draw(names), a, off, ln))
    return out


def _write_iolog(tmp_path, entries, version):
    buf = io.StringIO()
    write_iolog(buf, entries, version)
    p = tmp_path / ("t%d.iolog" % version)
    p.write_bytes(buf.getvalue().encode())
    return str(p)


@pytest.mark.parametrize("version", [2, 3])
@SETTINGS
@given(data=st.data())
def test_iolog_round_trip(tmp_path, version, data):
    entries = data.draw(iolog_entries(version))
    path = _write_iolog(tmp_path, entries, version)
    v, stream = read_iolog(path)
    assert v == version
    back = list(stream)
    assert [e._replace(line=0) for e in back] == entries
    assert [e.line for e in back] == list(range(2, len(entries) + 2))


@pytest.mark.parametrize("version", [2, 3])
@SETTINGS
@given(data=st.data())
def test_iolog_truncated_is_a_prefix_or_one_line_error(tmp_path, version, data):
    entries = data.draw(iolog_entries(version).filter(bool))
    path = _write_iolog(tmp_path, entries, version)
    raw = open(path, "rb").read()
    header = raw.index(b"\n") + 1
    cut = data.draw(st.integers(header, len(raw)))
    open(path, "wb").write(raw[:cut])
    try:
        back = list(read_iolog(path)[1])
    except TraceError as e:
        msg = str(e)
        assert msg.startswith("%s:" % path) and "\n" not in msg
        line = int(msg[len(path) + 1:].split(":")[0])
        assert line == raw[:cut].count(b"\n") + 1       # the cut (last) line
        return
    # a cut inside a number still reads as a line: every line before the last is unchanged
    assert [e._replace(line=0) for e in back[:-1]] == entries[:max(0, len(back) - 1)]
    assert len(back) <= len(entries)


@pytest.mark.parametrize("version", [2, 3])
@SETTINGS
@given(garbage=st.binary(max_size=300))
def test_iolog_garbage_is_refused_in_one_line(tmp_path, version, garbage):
    p = tmp_path / "g.iolog"
    p.write_bytes(("fio version %d iolog\n" % version).encode() + garbage)
    try:
        list(read_iolog(str(p))[1])
    except TraceError as e:
        assert str(e).startswith(str(p) + ":") and "\n" not in str(e)


@SETTINGS
@given(garbage=st.binary(max_size=200))
def test_any_file_is_a_trace_or_refused(tmp_path, garbage):
    p = tmp_path / "x"
    p.write_bytes(garbage)
    try:
        find_source(str(p), str(tmp_path))
    except TraceError as e:
        assert "\n" not in str(e) and str(p) in str(e)


@pytest.mark.parametrize("name", ["fio-libaio-randrw.iolog", "fio-null-rate.iolog"])
def test_real_fio_iologs_read_whole(name):
    """Logs written by fio 3.33's write_iolog: version 3, add/open first, close last, I/O in between."""
    path = os.path.join(DATA, name)
    version, stream = read_iolog(path)
    entries = list(stream)
    assert version == 3
    assert [e.action for e in entries[:2]] == ["add", "open"] and entries[-1].action == "close"
    ios = entries[2:-1]
    assert ios and all(e.action in ("read", "write") and e.length % 4096 == 0 for e in ios)
    times = [e.time_us for e in entries]
    assert times == sorted(times)
    assert sum(1 for _ in open(path)) == len(entries) + 1


def test_iolog_refusals_name_the_line(tmp_path):
    cases = {
        "12 f read 0\n": "4 fields",
        "12 f wait 5 0\n": "wait in a version 3 iolog",
        "12 f frobnicate 0 1\n": "not an I/O action",
        "-1 f read 0 512\n": "timestamp '-1'",
        "12 f read 0 4294967296\n": "length",
        "12 f open 3 4\n": "not an I/O action",
    }
    for body, want in cases.items():
        p = tmp_path / "bad.iolog"
        p.write_text("fio version 3 iolog\n0 f add\n" + body)
        with pytest.raises(TraceError) as e:
            list(read_iolog(str(p))[1])
        assert str(e.value).startswith("%s:3: " % p) and want in str(e.value), (body, str(e.value))
    p = tmp_path / "v1.iolog"
    p.write_text("0,0,4096\n")
    with pytest.raises(TraceError, match=r":1: not a fio iolog"):
        read_iolog(str(p))


# -- blktrace binaries -----------------------------------------------------------------------------

events = st.builds(BlkEvent, st.integers(0, 2 ** 64 - 1), st.integers(0, 2 ** 64 - 1), st.integers(0, 2 ** 32 - 1),
                   st.integers(0, 2 ** 32 - 1), st.integers(0, 2 ** 32 - 1), st.integers(0, 2 ** 32 - 1),
                   st.integers(0, 2 ** 32 - 1), st.integers(0, 2 ** 32 - 1), st.integers(0, 2 ** 16 - 1), st.just(""))


@SETTINGS
@given(evs=st.lists(st.tuples(events, st.binary(max_size=40)), max_size=30), order=st.sampled_from("<>"))
def test_blktrace_round_trip_both_byte_orders_with_payloads(tmp_path, evs, order):
    p = tmp_path / "t.blktrace.0"
    p.write_bytes(b"".join(pack_event(e, order, pdu) for e, pdu in evs) or pack_event(BlkEvent(*[0] * 9, ""), order))
    back = [e._replace(where="") for e in read_blktrace(str(p))]
    assert back == ([e for e, _ in evs] or [BlkEvent(*[0] * 9, "")])


@SETTINGS
@given(evs=st.lists(st.tuples(events, st.binary(max_size=40)), min_size=1, max_size=20), data=st.data())
def test_blktrace_truncated_keeps_whole_events_then_names_the_byte(tmp_path, evs, data):
    packed = [pack_event(e, "<", pdu) for e, pdu in evs]
    raw = b"".join(packed)
    cut = data.draw(st.integers(48, len(raw)))
    p = tmp_path / "t.bin"
    p.write_bytes(raw[:cut])
    starts = [sum(map(len, packed[:i])) for i in range(len(packed) + 1)]
    got = []
    try:
        for e in read_blktrace(str(p)):
            got.append(e._replace(where=""))
    except TraceError as e:
        broken = max(i for i, s in enumerate(starts) if s < cut)
        assert "byte %d" % starts[broken] in str(e) and "\n" not in str(e)
        assert got == [e for e, _ in evs[:broken]]
        return
    assert cut in starts and got == [e for e, _ in evs[:starts.index(cut)]]


@SETTINGS
@given(tail=st.binary(max_size=400))
def test_blktrace_garbage_after_a_good_event_is_refused_in_one_line(tmp_path, tail):
    p = tmp_path / "g.bin"
    p.write_bytes(pack_event(BlkEvent(1, 2, 3, 4, 5, 6, 7, 8, 0, "")) + tail)
    try:
        list(read_blktrace(str(p)))
    except TraceError as e:
        assert str(e).startswith("%s: byte " % p) and "\n" not in str(e)


def test_blktrace_bad_version_and_magic(tmp_path):
    good = pack_event(BlkEvent(1, 2, 3, 4, 5, 6, 7, 8, 0, ""))
    p = tmp_path / "v.bin"
    p.write_bytes(good + struct.pack("<I", 0x65617406) + good[4:])
    with pytest.raises(TraceError, match=r"byte 48: blktrace format version 6"):
        list(read_blktrace(str(p)))
    p.write_bytes(good + b"\0" * 48)
    with pytest.raises(TraceError, match=r"byte 48: bad magic"):
        list(read_blktrace(str(p)))


# -- blkparse's text and merge, by the real blkparse ------------------------------------------------

FLAGS = TC_READ | TC_WRITE | TC_DISCARD | TC_FLUSH | TC_SYNC | TC_AHEAD | TC_META | TC_FUA


def _seen(e, genesis=0):
    """What blkparse's text keeps of an event."""
    return (e.time_ns - genesis, e.sector, e.nbytes, e.action & 0xFFFF, (e.action >> 16) & FLAGS, e.pid, e.device,
            e.cpu, e.sequence, e.error)


def test_blkparse_text_of_our_binaries_reads_back(tmp_path):
    """blkparse (blktrace 1.2.0) prints the per-CPU files; its text reads back into the same events."""
    require("blkparse", "blkparse prints the blktrace files")
    per_cpu = percpu_events(seed=3, per_cpu=150)
    base = write_percpu(str(tmp_path), "k", per_cpu)
    blkparse(["-i", "k", "-o", "k.txt"], str(tmp_path))
    merged = list(merge_by_time(iter(evs) for evs in per_cpu))
    genesis = merged[0].time_ns
    text = [_seen(e) for e in read_blkparse(str(tmp_path / "k.txt"))]
    assert text == [_seen(e, genesis) for e in merged]
    assert len(percpu_files(base)) == 2


def test_blkparse_dump_is_our_merge(tmp_path):
    """blkparse -d writes one binary of the per-CPU files; read_blktrace_set makes the same stream."""
    require("blkparse", "blkparse merges the per-CPU files")
    per_cpu = percpu_events(seed=4, per_cpu=200, cpus=3)
    base = write_percpu(str(tmp_path), "k", per_cpu)
    blkparse(["-i", "k", "-d", "k.bin", "-o", "/dev/null"], str(tmp_path))
    dump = [e._replace(where="") for e in read_blktrace(str(tmp_path / "k.bin"))]
    ours = [e._replace(where="") for e in read_blktrace_set(percpu_files(base))]
    assert ours == dump and len(ours) == sum(map(len, per_cpu))


@SETTINGS
@given(seed=st.integers(0, 10 ** 6))
def test_blkparse_text_round_trip(tmp_path, seed):
    evs = [e for cpu in percpu_events(seed, per_cpu=20) for e in cpu]
    p = tmp_path / "t.txt"
    p.write_text("".join(format_blkparse_line(e) for e in evs) + "\nCPU0 (k):\n Reads Queued: 1, 4KiB\n")
    assert [_seen(e) for e in read_blkparse(str(p))] == [_seen(e) for e in evs]


def test_blkparse_text_in_repository_is_blkparses_own():
    """tests/data/traces/synth.txt is blkparse's print of synth.blktrace.{0,1} (summaries included)."""
    txt = os.path.join(DATA, "synth.txt")
    evs = list(read_blkparse(txt))
    merged = list(read_blktrace_set(percpu_files(os.path.join(DATA, "synth"))))
    assert [_seen(e) for e in evs] == [_seen(e) for e in merged]
    assert "Total (synth)" in open(txt).read()


def test_blkparse_refusals(tmp_path):
    p = tmp_path / "t.txt"
    p.write_text("  7,3    0        1     0.000000000   100  Q   X 8 + 8 [fio]\n")
    with pytest.raises(TraceError, match=r"t.txt:1: RWBS 'X' has no direction"):
        list(read_blkparse(str(p)))
    p.write_text("hello\n")
    with pytest.raises(TraceError, match=r"t.txt:1: not a blkparse event line"):
        list(read_blkparse(str(p)))


@pytest.mark.parametrize("name", ["fio-libaio-randrw.iolog", "synth.blktrace.0", "synth.txt"])
def test_gzip_compressed_traces_read_the_same_and_damage_is_one_line(tmp_path, name):
    """A lab's traces are kept gzipped: read as they are (fio itself would need them decompressed)."""
    import gzip
    src = os.path.join(DATA, name)
    raw = open(src, "rb").read()
    gz = tmp_path / (name + ".gz")
    gz.write_bytes(gzip.compress(raw))
    a, b = find_source(src, "."), find_source(str(gz), ".")
    assert a.kind == b.kind
    from mpathlab.workload.trace_replay import ReplayOptions, open_pieces
    assert list(open_pieces(a, ReplayOptions())) == list(open_pieces(b, ReplayOptions()))
    cut = gzip.compress(raw * 40)
    gz.write_bytes(cut[:len(cut) // 2])
    with pytest.raises(TraceError) as e:
        list(open_pieces(find_source(str(gz), "."), ReplayOptions()))
    assert str(gz) in str(e.value) and "\n" not in str(e.value)


# -- a real kernel's blktrace (tests/data/traces/kernel-6.1-dm-scsi/README.md) -------------------------

KERNEL = os.path.join(DATA, "kernel-6.1-dm-scsi")


@pytest.mark.parametrize("dev, queued", [("dm-0", 29), ("sda", 0)])
def test_kernel_blktrace_is_blkparses_text(dev, queued):
    """The 6.1 guest's per-CPU files read into the events blkparse printed there, event for event (queue,
    getrq, insert, plug, unplug, issue, both completions of a request-based dm, remaps on the path), once
    blktrace's process and timestamp notifications, which blkparse does not print, are set aside."""
    evs = list(read_blktrace_set(percpu_files(os.path.join(KERNEL, dev))))
    notify = tc_act(TC_NOTIFY)
    shown = [e for e in evs if not e.action & notify]
    assert len(shown) < len(evs)
    text = list(read_blkparse(os.path.join(KERNEL, dev + ".txt")))
    assert [_seen(e) for e in text] == [_seen(e, shown[0].time_ns) for e in shown]
    assert sum(e.action & 0xFFFF == TA_QUEUE for e in shown) == queued


def test_kernel_blktrace_queues_are_fios_own_iolog():
    """The dm device's queue events are the I/O fio logged (write_iolog) in the same run: the same
    directions, sizes and offsets in the same order, for the 29 I/Os the trace's window held."""
    src = find_source(os.path.join(KERNEL, "dm-0"), ".")
    pieces = [p[2:] for p in open_pieces(src, ReplayOptions()) if p[0] == IO]
    fio = [(IOLOG_DDIRS[e.action], e.length, e.offset) for e in read_iolog(os.path.join(KERNEL, "fio.iolog"))[1]
           if e.action in IOLOG_DDIRS]
    assert len(pieces) == 29 and len(fio) == 39
    assert pieces == fio[:29]
