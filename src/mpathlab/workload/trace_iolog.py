"""fio's iolog, versions 2 and 3, read and written as fio 3.33 does (iolog.c).

The first line is ``fio version 2 iolog`` or ``fio version 3 iolog`` (fio compares that prefix).
Each following line is one action, its fields separated by blanks:

- version 2: ``FILE ACTION`` for a file action (add, open, close) and ``FILE ACTION OFFSET LENGTH``
  for I/O (read, write, trim, sync, datasync) or ``FILE wait USEC 0``;
- version 3: the same, each led by a timestamp in microseconds since the job's log started, and
  no ``wait`` (the timestamps time the replay).

fio 3.33's ``write_iolog`` writes version 3: ``add`` for each file when the job is set up, ``open``
and ``close`` around the I/O, and one line per I/O as it is issued (before the engine queues it).

fio skips a line it cannot read with a message and replays the rest; mpathlab refuses the trace
at that line instead (one line naming the file and line), as it refuses job-file values fio would
misread: a replay that silently lost I/O would predict the wrong load.
"""
from __future__ import annotations

from typing import IO, Iterable, Iterator, Optional, Tuple

from .trace import IologEntry, TraceError, open_trace

IOLOG_HEADERS = {2: "fio version 2 iolog", 3: "fio version 3 iolog"}
IO_ACTIONS = ("read", "write", "trim", "sync", "datasync", "wait")
FILE_ACTIONS = ("add", "open", "close")
# fio reads a line with fgets(4096) and a file name or action with %256s
LINE_MAX = 4095
NAME_MAX = 256
U64_MAX = (1 << 64) - 1
U32_MAX = (1 << 32) - 1


def iolog_version(first_line: bytes) -> int:
    """2 or 3 when the line starts with that version's header (fio's strncmp), else 0."""
    for version, header in IOLOG_HEADERS.items():
        if first_line.startswith(header.encode()):
            return version
    return 0


def _number(text: str, limit: int, what: str, where: str) -> int:
    # fio's sscanf %llu/%u would also take a sign or wrap a huge value; a trace fio wrote has neither
    if not (text.isascii() and text.isdigit()) or len(text) > 20 or int(text) > limit:
        raise TraceError("%s: %s %r is not a whole number from 0 to %d" % (where, what, text[:40], limit))
    return int(text)


def parse_iolog_line(raw: bytes, version: int, where: str, lineno: int) -> Optional[IologEntry]:
    """One line after the header (None for a blank one, which fio skips silently)."""
    if len(raw.rstrip(b"\n")) > LINE_MAX:
        raise TraceError("%s: a line of more than %d bytes (fio reads lines with fgets(4096) and would "
                         "split it)" % (where, LINE_MAX))
    # blanks as C's isspace (fio's sscanf): bytes.split, not str.split, which also splits at \x1c-\x1f
    fields = [x.decode("utf-8", "surrogateescape") for x in raw.split()]
    if not fields:
        return None
    time_us: Optional[int] = None
    if version == 3:
        time_us = _number(fields[0], U64_MAX, "timestamp", where)
        fields = fields[1:]
    if len(fields) not in (2, 4):
        shape = "TIME FILE ACTION [OFFSET LENGTH]" if version == 3 else "FILE ACTION [OFFSET LENGTH]"
        raise TraceError("%s: %d fields where a version %d iolog line is %s (fio would skip it: \"bad iolog%d\")"
                         % (where, len(fields) + (version == 3), version, shape, version))
    name, action = fields[0], fields[1]
    if len(name.encode("utf-8", "surrogateescape")) > NAME_MAX or len(action) > NAME_MAX:
        raise TraceError("%s: a file name of more than %d bytes (fio reads it with %%256s)" % (where, NAME_MAX))
    if len(fields) == 2:
        if action not in FILE_ACTIONS:
            raise TraceError("%s: %r is not a file action (add, open, close)%s" % (
                where, action[:40], "; I/O needs OFFSET LENGTH" if action in IO_ACTIONS else ""))
        return IologEntry(lineno, time_us, name, action, 0, 0)
    if action not in IO_ACTIONS:
        raise TraceError("%s: %r is not an I/O action (%s)" % (where, action[:40], ", ".join(IO_ACTIONS)))
    if action == "wait" and version == 3:
        raise TraceError("%s: wait in a version 3 iolog (fio ignores it: the timestamps time the replay)" % where)
    offset = _number(fields[2], U64_MAX, "offset", where)
    length = _number(fields[3], U32_MAX, "length", where)
    return IologEntry(lineno, time_us, name, action, offset, length)


def read_iolog(path: str) -> Tuple[int, Iterator[IologEntry]]:
    """The version and a stream of the entries (the file is read as the stream is consumed)."""
    f = open_trace(path)
    try:
        first = f.readline(LINE_MAX + 1)
    except (OSError, EOFError) as e:
        f.close()
        raise TraceError("%s:1: cannot read: %s" % (path, e)) from None
    version = iolog_version(first)
    if not version:
        f.close()
        raise TraceError("%s:1: not a fio iolog: the first line must be %r or %r (fio 3.33 reads no version 1)"
                         % (path, IOLOG_HEADERS[2], IOLOG_HEADERS[3]))
    return version, _entries(f, path, version)


_FAST_IO = {b"read": "read", b"write": "write", b"trim": "trim"}


def _entries(f: IO[bytes], path: str, version: int) -> Iterator[IologEntry]:
    lineno = 1
    name_b, name = b"", ""
    try:
        with f:
            for lineno, raw in enumerate(f, 2):
                # the common line of a version 3 log, checked as parse_iolog_line checks it; anything
                # else (and every problem) goes the long way, which says what is wrong
                fields = raw.split()
                if version == 3 and len(fields) == 5 and len(raw) <= LINE_MAX:
                    t, fb, act, off, ln = fields
                    action = _FAST_IO.get(act)
                    if action is not None and t.isdigit() and off.isdigit() and ln.isdigit() and len(fb) <= NAME_MAX:
                        ti, oi, li = int(t), int(off), int(ln)
                        if ti <= U64_MAX and oi <= U64_MAX and li <= U32_MAX:
                            if fb != name_b:
                                name_b, name = fb, fb.decode("utf-8", "surrogateescape")
                            yield IologEntry(lineno, ti, name, action, oi, li)
                            continue
                entry = parse_iolog_line(raw, version, "%s:%d" % (path, lineno), lineno)
                if entry is not None:
                    yield entry
    except (OSError, EOFError) as e:        # a damaged compressed file
        raise TraceError("%s:%d: cannot read on: %s" % (path, lineno + 1, e)) from None


def format_iolog_entry(e: IologEntry, version: int) -> str:
    """One line as fio's log_io_u / log_file print it (version 3 leads with the timestamp)."""
    body = "%s %s" % (e.file, e.action) if e.action in FILE_ACTIONS else \
        "%s %s %d %d" % (e.file, e.action, e.offset, e.length)
    return "%d %s\n" % (e.time_us or 0, body) if version == 3 else body + "\n"


def write_iolog(f: IO[str], entries: Iterable[IologEntry], version: int = 3) -> int:
    """Write a header and the entries; the number of entries written."""
    f.write(IOLOG_HEADERS[version] + "\n")
    n = 0
    for e in entries:
        f.write(format_iolog_entry(e, version))
        n += 1
    return n
