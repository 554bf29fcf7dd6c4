"""I/O traces: what the trace readers yield, and their one error.

Three formats are read (docs/traces.md), each as a stream, one record at a time, so a run replays a
trace of any length in the same memory:

- fio's iolog, versions 2 and 3 (:mod:`.trace_iolog`), as fio 3.33's ``write_iolog`` writes them
  and its ``read_iolog`` reads them;
- blktrace's binary events, a per-CPU file ``NAME.blktrace.N`` or the one-file dump ``blkparse -d``
  writes, and blkparse's default text output (:mod:`.trace_blktrace`).

How fio turns those records into I/O it issues, and when, is :mod:`.trace_replay`.
"""
from __future__ import annotations

import gzip
from typing import IO, NamedTuple, Optional

from ..inputs import InputFileError

READ, WRITE, TRIM = 0, 1, 2       # fio's enum fio_ddir (the same numbers as workload.fio's)

# blktrace_api.h: the category bits (high 16 bits of an action) and the basic actions (low 16 bits)
BLK_TC_SHIFT = 16
TC_READ, TC_WRITE, TC_FLUSH, TC_SYNC = 1 << 0, 1 << 1, 1 << 2, 1 << 3
TC_QUEUE, TC_REQUEUE, TC_ISSUE, TC_COMPLETE = 1 << 4, 1 << 5, 1 << 6, 1 << 7
TC_FS, TC_PC, TC_NOTIFY, TC_AHEAD, TC_META, TC_DISCARD = 1 << 8, 1 << 9, 1 << 10, 1 << 11, 1 << 12, 1 << 13
TC_DRV_DATA, TC_FUA = 1 << 14, 1 << 15
(TA_QUEUE, TA_BACKMERGE, TA_FRONTMERGE, TA_GETRQ, TA_SLEEPRQ, TA_REQUEUE, TA_ISSUE, TA_COMPLETE, TA_PLUG,
 TA_UNPLUG_IO, TA_UNPLUG_TIMER, TA_INSERT, TA_SPLIT, TA_BOUNCE, TA_REMAP, TA_ABORT, TA_DRV_DATA) = range(1, 18)
TN_PROCESS, TN_TIMESTAMP, TN_MESSAGE = 0, 1, 2      # notify events (with TC_NOTIFY)
BLK_IO_TRACE_MAGIC = 0x65617400
BLK_IO_TRACE_VERSION = 0x07
# the kernel's dev_t as blktrace stores it: 12 bits of major above 20 bits of minor
MINORBITS = 20


def tc_act(categories: int) -> int:
    """BLK_TC_ACT: category bits in an action word."""
    return categories << BLK_TC_SHIFT


class TraceError(InputFileError):
    """A trace file that cannot be replayed: one line naming the file and the line (or byte offset)."""


class IologEntry(NamedTuple):
    """One line of a fio iolog after its header."""
    line: int                   # line number in the file (the header is line 1)
    time_us: Optional[int]      # version 3: microseconds since the job's log started; version 2: None
    file: str
    action: str                 # add, open, close, read, write, trim, sync, datasync, wait (version 2)
    offset: int                 # bytes (wait: its time, see trace_replay); 0 for file actions
    length: int                 # bytes; 0 for file actions


class BlkEvent(NamedTuple):
    """One struct blk_io_trace (its payload skipped), from the binary or from blkparse's text."""
    time_ns: int                # since the trace started
    sector: int                 # 512-byte sectors
    nbytes: int
    action: int                 # category bits << 16 | basic action
    pid: int
    device: int                 # major << 20 | minor
    cpu: int
    sequence: int
    error: int
    where: str                  # "FILE: byte N" or "FILE:LINE", for messages


def dev_major(device: int) -> int:
    return device >> MINORBITS


def dev_minor(device: int) -> int:
    return device & ((1 << MINORBITS) - 1)


GZIP_MAGIC = b"\x1f\x8b"


def open_trace(path: str) -> IO[bytes]:
    """A trace file for reading; a gzip-compressed one is decompressed as it is read (fio itself reads
    no compressed trace; lines and byte offsets in messages count the decompressed data)."""
    try:
        f = open(path, "rb")
        if f.read(2) == GZIP_MAGIC:
            f.close()
            return gzip.open(path, "rb")    # type: ignore[return-value]
        f.seek(0)
        return f
    except OSError as e:
        raise TraceError("cannot read trace %s: %s" % (path, e.strerror or e)) from None
