"""blktrace's events: the binary files and blkparse's default text.

**The binary format.** blktrace writes, per traced device and per CPU, a file ``NAME.blktrace.CPU``
of events one after another. Each event is a fixed 48-byte header followed by ``pdu_len`` bytes of
payload (a process name, a remap, a message; fio and mpathlab skip it). The header holds, in this
order and in the byte order of the machine that traced: a 32-bit magic word (``0x654174`` shifted
up by 8, with the format version, 7, in the low byte: fio accepts only version 7, and a magic that
reads right only byte-swapped means a trace from a machine of the other byte order), a 32-bit
sequence number, the 64-bit time in nanoseconds since tracing started, the 64-bit start sector
(512 bytes), the 32-bit byte count, the 32-bit action word, the 32-bit pid, the 32-bit device
(major in the top 12 bits, minor in the low 20), the 32-bit CPU, a 16-bit error and the 16-bit
payload length. The action word's low 16 bits say what happened (1 queued, 2 and 3 merged, 7
issued, 8 completed, ...); its high 16 bits are categories (read, write, flush, sync, discard,
notify, fua, ...). The layout is struct blk_io_trace in the kernel's
include/uapi/linux/blktrace_api.h.

``blkparse -i NAME -d FILE`` merges the per-CPU files of NAME by time into one such file: that is
the file fio 3.33's ``read_iolog`` takes (its own merge option, ``merge_blktrace_file``, reads its
inputs with a wrong-sized fread in 3.33 and never gets past the first event; fixed upstream in
fio commit c55d29ef). mpathlab reads either, and also a set of per-CPU files merged the same way
(:func:`read_blktrace_set`).

**blkparse's text.** Without ``-f``/``-F``, blkparse prints one line per event,
``MAJ,MIN CPU SEQUENCE SECONDS.NANOSECONDS PID ACTION RWBS`` and then what the action has
(``SECTOR + BLOCKS [PROCESS]`` for most); after the events come per-CPU and total summaries.
:func:`read_blkparse` reads those lines back into the same events; the summaries are skipped.
"""
from __future__ import annotations

import glob
import heapq
import os
import re
import struct
from typing import IO, Iterable, Iterator, List, Optional, Tuple

from .trace import (BLK_IO_TRACE_MAGIC, BLK_IO_TRACE_VERSION, MINORBITS, TA_BACKMERGE, TA_COMPLETE,
                    TA_FRONTMERGE, TA_ISSUE, TA_QUEUE, TC_AHEAD, TC_COMPLETE, TC_DISCARD, TC_FLUSH, TC_ISSUE,
                    TC_FUA, TC_META, TC_NOTIFY, TC_QUEUE, TC_READ, TC_SYNC, TC_WRITE, BlkEvent, TraceError,
                    dev_major, dev_minor, open_trace, tc_act)

HEADER = struct.Struct("<IIQQIIIIIHH")       # struct blk_io_trace, little-endian
HEADER_BE = struct.Struct(">IIQQIIIIIHH")
assert HEADER.size == 48
_CHUNK = 1 << 16


def blktrace_byte_order(head: bytes) -> Optional[str]:
    """'<' or '>' when the 48 bytes start a blktrace event (fio's is_blktrace), else None."""
    if len(head) < HEADER.size:
        return None
    for order in ("<", ">"):
        magic = struct.unpack(order + "I", head[:4])[0]
        if magic & 0xFFFFFF00 == BLK_IO_TRACE_MAGIC:
            return order
    return None


def read_blktrace(path: str) -> Iterator[BlkEvent]:
    """The events of one binary file (a per-CPU file or a blkparse -d dump), payloads skipped."""
    f = open_trace(path)
    head = f.read(HEADER.size)
    order = blktrace_byte_order(head)
    if order is None:
        f.close()
        raise TraceError("%s: byte 0: not a blktrace binary (no blk_io_trace magic 0x%x)"
                         % (path, BLK_IO_TRACE_MAGIC >> 8))
    f.seek(0)
    return _events(f, path, HEADER if order == "<" else HEADER_BE)


def _events(f: IO[bytes], path: str, header: struct.Struct) -> Iterator[BlkEvent]:
    try:
        yield from _unpack_events(f, path, header)
    except (OSError, EOFError) as e:        # a damaged compressed file
        raise TraceError("%s: cannot read on: %s" % (path, e)) from None


def _unpack_events(f: IO[bytes], path: str, header: struct.Struct) -> Iterator[BlkEvent]:
    size = header.size
    unpack = header.unpack_from
    with f:
        buf = b""
        pos = 0             # in buf
        base = 0            # file offset of buf[0]
        while True:
            if len(buf) - pos < size:
                more = f.read(_CHUNK)
                buf = buf[pos:] + more
                base += pos
                pos = 0
                if not more:
                    if buf:
                        raise TraceError("%s: byte %d: a truncated event (%d of %d bytes; fio stops there with "
                                         "\"iolog short read\")" % (path, base, len(buf), size))
                    return
                continue
            (magic, seq, time_ns, sector, nbytes, action, pid, device, cpu, error,
             pdu_len) = unpack(buf, pos)
            where = "%s: byte %d" % (path, base + pos)
            if magic & 0xFFFFFF00 != BLK_IO_TRACE_MAGIC:
                raise TraceError("%s: bad magic 0x%08x (fio: \"bad magic in blktrace data\")" % (where, magic))
            if magic & 0xFF != BLK_IO_TRACE_VERSION:
                raise TraceError("%s: blktrace format version %d; fio reads only version %d"
                                 % (where, magic & 0xFF, BLK_IO_TRACE_VERSION))
            end = pos + size + pdu_len
            while len(buf) < end:
                more = f.read(max(_CHUNK, end - len(buf)))
                if not more:
                    raise TraceError("%s: the event's %d-byte payload is cut short by the end of the file"
                                     % (where, pdu_len))
                buf += more
            yield BlkEvent(time_ns, sector, nbytes, action, pid, device, cpu, seq, error, where)
            pos = end


def percpu_files(name: str) -> List[str]:
    """The per-CPU files NAME.blktrace.N of a trace, by CPU number (what blkparse -i NAME reads)."""
    found = []
    for p in glob.glob(glob.escape(name) + ".blktrace.*"):
        tail = p.rsplit(".", 1)[1]
        if tail.isascii() and tail.isdigit():
            found.append((int(tail), p))
    return [p for _, p in sorted(found)]


def merge_by_time(streams: Iterable[Iterator[BlkEvent]]) -> Iterator[BlkEvent]:
    """Events of several files in time order (ties: the lower-numbered file first), as blkparse
    sorts the per-CPU files of a trace; one event per file is held at a time."""
    return heapq.merge(*streams, key=lambda e: e.time_ns)


def read_blktrace_set(paths: List[str]) -> Iterator[BlkEvent]:
    """The per-CPU files of one trace as the one file ``blkparse -d`` makes of them: merged by time, and
    timed from the first event (blkparse subtracts it, and fio's replay treats a first time of 0 specially)."""
    streams = [read_blktrace(p) for p in paths]
    merged = merge_by_time(streams)
    first = next(merged, None)
    if first is None:
        return
    genesis = first.time_ns
    yield first._replace(time_ns=0)
    for e in merged:
        yield e._replace(time_ns=e.time_ns - genesis)


def pack_event(e: BlkEvent, order: str = "<", pdu: bytes = b"") -> bytes:
    """One event as blktrace writes it (for tests and the benchmark's generated traces)."""
    h = HEADER if order == "<" else HEADER_BE
    return h.pack(BLK_IO_TRACE_MAGIC | BLK_IO_TRACE_VERSION, e.sequence, e.time_ns, e.sector, e.nbytes,
                  e.action, e.pid, e.device, e.cpu, e.error, len(pdu)) + pdu


def write_blktrace(f: IO[bytes], events: Iterable[BlkEvent], order: str = "<") -> int:
    n = 0
    for e in events:
        f.write(pack_event(e, order))
        n += 1
    return n


# -- blkparse's default text -------------------------------------------------------------------

# the action letters of blkparse's default output, for the actions fio looks at; the others are read
# (so that a trace is accepted whole) and kept as what they are
ACTION_LETTERS = {"Q": TA_QUEUE, "M": TA_BACKMERGE, "F": TA_FRONTMERGE, "G": 4, "S": 5, "R": 6, "D": TA_ISSUE,
                  "C": TA_COMPLETE, "P": 9, "U": 10, "T": 11, "I": 12, "X": 13, "B": 14, "A": 15}
_LETTER_OF = {v: k for k, v in ACTION_LETTERS.items()}
# blkparse's header: "%D %2c %8s %5T.%9t %5p %2a %3d " (device, cpu, sequence, time, pid, action, RWBS)
_LINE = re.compile(rb"\s*(\d+),(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\.(\d{9})\s+(\d+)\s+([A-Za-z])\s+([A-Z]*)\s*(.*)\Z", re.S)
_RANGE = re.compile(rb"(\d+) \+ (\d+)")
_SECTOR_ONLY = re.compile(rb"(\d+) \[")
_ERROR = re.compile(rb"\[(-?\d+)\]")
# the category each RWBS letter stands for, after the first (blkparse's fill_rwbs: an F before the
# direction is a flush, one after it is FUA)
_RWBS_TAIL = {ord("F"): TC_FUA, ord("A"): TC_AHEAD, ord("S"): TC_SYNC, ord("M"): TC_META}


def _rwbs_categories(rwbs: bytes, where: str) -> int:
    cats = 0
    i = 0
    if rwbs[:1] == b"F":
        cats |= TC_FLUSH
        i = 1
    # the kernel marks every event read or write (op_is_write: a discard writes, a flush reads)
    d = rwbs[i:i + 1]
    if d == b"D":
        cats |= TC_DISCARD | TC_WRITE
    elif d == b"W":
        cats |= TC_WRITE
    elif d in (b"R", b"N"):
        cats |= TC_READ
    else:
        raise TraceError("%s: RWBS %r has no direction (R, W, D or N)" % (where, rwbs.decode("ascii", "replace")))
    for c in rwbs[i + 1:]:
        if c not in _RWBS_TAIL:
            raise TraceError("%s: RWBS %r: unknown flag %r" % (where, rwbs.decode("ascii", "replace"), chr(c)))
        cats |= _RWBS_TAIL[c]
    return cats


def parse_blkparse_line(raw: bytes, where: str) -> Optional[BlkEvent]:
    """An event line of blkparse's default output; None for what is not one (summaries, blanks)."""
    m = _LINE.match(raw)
    if m is None:
        return None
    maj, mnr, cpu, seq, sec, nsec, pid, letter, rwbs, rest = m.groups()
    if int(maj) >= 1 << 12 or int(mnr) >= 1 << MINORBITS:
        raise TraceError("%s: device %s,%s does not fit a blktrace dev_t" % (where, maj.decode(), mnr.decode()))
    act = ACTION_LETTERS.get(letter.decode())
    if act is None:
        if letter == b"m" or letter == b"N":       # a message or driver data: not I/O
            return BlkEvent(int(sec) * 10 ** 9 + int(nsec), 0, 0, tc_act(TC_NOTIFY) | 2, int(pid),
                            int(maj) << MINORBITS | int(mnr), int(cpu), int(seq), 0, where)
        raise TraceError("%s: unknown blkparse action %r" % (where, letter.decode()))
    cats = _rwbs_categories(rwbs, where)
    sector = nbytes = error = 0
    r = _RANGE.match(rest)
    if r is not None:       # (an event without data, a flush or a plug, has none)
        sector, nbytes = int(r.group(1)), int(r.group(2)) * 512
    elif act == TA_COMPLETE:
        r = _SECTOR_ONLY.match(rest)     # a completion without data still prints its sector
        if r is not None:
            sector = int(r.group(1))
    if act == TA_COMPLETE:
        r = _ERROR.search(rest)
        if r is not None:
            error = int(r.group(1)) & 0xFFFF
    # the queue-side actions carry the queue category, completions the completion one (blktrace_api.h)
    cats |= (TC_COMPLETE if act == TA_COMPLETE else TC_ISSUE if act == TA_ISSUE
             else TC_QUEUE if act in (TA_QUEUE, TA_BACKMERGE, TA_FRONTMERGE) else 0)
    return BlkEvent(int(sec) * 10 ** 9 + int(nsec), sector, nbytes, tc_act(cats) | act, int(pid),
                    int(maj) << MINORBITS | int(mnr), int(cpu), int(seq), error, where)


def read_blkparse(path: str) -> Iterator[BlkEvent]:
    f = open_trace(path)
    return _text_events(f, path)


def _text_events(f: IO[bytes], path: str) -> Iterator[BlkEvent]:
    try:
        yield from _text_lines(f, path)
    except (OSError, EOFError) as e:        # a damaged compressed file
        raise TraceError("%s: cannot read on: %s" % (path, e)) from None


def _text_lines(f: IO[bytes], path: str) -> Iterator[BlkEvent]:
    with f:
        seen = False
        for lineno, raw in enumerate(f, 1):
            e = parse_blkparse_line(raw, "%s:%d" % (path, lineno))
            if e is not None:
                seen = True
                yield e
            elif not seen and raw.strip():
                raise TraceError("%s:%d: not a blkparse event line (MAJ,MIN CPU SEQ SECONDS.NANOSECONDS PID "
                                 "ACTION RWBS ...)" % (path, lineno))
        if not seen:
            raise TraceError("%s: no blkparse event lines" % path)


def looks_like_blkparse(first_line: bytes) -> bool:
    return _LINE.match(first_line) is not None


def rwbs_of(action: int, nbytes: int) -> str:
    cats = action >> 16
    out = "F" if cats & TC_FLUSH else ""
    out += "D" if cats & TC_DISCARD else "W" if cats & TC_WRITE else "R" if nbytes else "N"
    for bit, c in ((TC_FUA, "F"), (TC_AHEAD, "A"), (TC_SYNC, "S"), (TC_META, "M")):
        if cats & bit:
            out += c
    return out


def format_blkparse_line(e: BlkEvent, process: str = "fio") -> str:
    """An event as blkparse's default format prints a queue, issue or completion."""
    letter = _LETTER_OF[e.action & 0xFFFF]
    head = "%3d,%-3d %2d %8d %5d.%09d %5d  %s %3s " % (dev_major(e.device), dev_minor(e.device), e.cpu, e.sequence,
                                                     e.time_ns // 10 ** 9, e.time_ns % 10 ** 9, e.pid, letter,
                                                     rwbs_of(e.action, e.nbytes))
    if letter == "C":
        where = "%d + %d" % (e.sector, e.nbytes // 512) if e.nbytes else "%d" % e.sector
        return head + "%s [%d]\n" % (where, e.error)
    if not e.nbytes:
        return head + "[%s]\n" % process
    return head + "%d + %d [%s]\n" % (e.sector, e.nbytes // 512, process)


def write_blkparse(f: IO[str], events: Iterable[BlkEvent]) -> int:
    n = 0
    for e in events:
        f.write(format_blkparse_line(e))
        n += 1
    return n


def split_name(path: str) -> Tuple[str, Optional[int]]:
    """(NAME, CPU) for a per-CPU file NAME.blktrace.CPU, else (path, None)."""
    head, dot, tail = os.path.basename(path).rpartition(".blktrace.")
    if dot and tail.isascii() and tail.isdigit():
        return os.path.join(os.path.dirname(path), head), int(tail)
    return path, None
