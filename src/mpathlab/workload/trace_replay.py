"""Replaying a trace as fio 3.33 does (``read_iolog`` and the ``replay_*`` options).

fio turns each trace record into an *io piece* (iolog.c read_iolog, blktrace.c queue_trace) and,
when the job asks for its next I/O, takes the next piece (read_iolog_get):

- a piece's delay is the trace's time since the previous record (``delay_since_ttime``): 0 while
  the previous record's time is 0 (so a trace whose first record is at time 0 loses the gap to its
  second), 0 when the time goes backwards, 0 under ``replay_no_stall``, and otherwise the gap
  times 100 / ``replay_time_scale`` (a double, truncated); an iolog counts in microseconds, a
  blktrace in nanoseconds that the piece keeps as whole microseconds;
- fio sleeps until the delay has passed since its *last issue*, not since the trace's start
  (iolog_delay), so when the queue is full an I/O goes out as soon as a slot frees and every later
  one keeps its gap from it; file actions (add, open, close) and syncs are timed the same way;
- version 2's ``wait`` sleeps until that many milliseconds after fio started (the code, not the
  HOWTO's "microseconds, relative to the previous wait"); ``replay_no_stall`` drops it;
- an iolog's ``trim`` lines are dropped (fio 3.33's read_iolog2 says "bad ddir: 2"), but their time
  still counts as the last record's;
- ``replay_scale`` divides offsets, ``replay_align`` aligns them down (an iolog) and, in a blktrace,
  also rounds the byte count up;
- from a blktrace fio takes only queue events (``Q``): a discard is a trim, a flush a sync, any other
  a read or a write by its write bit, a zero-byte one is dropped; ``replay_skip`` drops directions;
  when the job sets no ``iodepth`` it takes the deepest queue the trace shows (queued minus merged
  events between completions, at most 1024; a synchronous engine still caps it at 1).

mpathlab simulates reads, writes and trims; a sync (flush) reaches no path in the model, so it stays
a point in time the replay waits for, as a file action does. The pieces come from a stream: the
trace is read as the run goes, never held whole.
"""
from __future__ import annotations

import os
from typing import Iterator, List, NamedTuple, Optional, Tuple

from .trace import (READ, TA_BACKMERGE, TA_COMPLETE, TA_FRONTMERGE, TA_QUEUE, TC_DISCARD, TC_FLUSH, TC_NOTIFY,
                    TC_READ, TC_WRITE, TRIM, WRITE, BlkEvent, TraceError, open_trace, tc_act)
from .trace_blktrace import (blktrace_byte_order, looks_like_blkparse, percpu_files, read_blkparse,
                             read_blktrace, read_blktrace_set, split_name)
from .trace_iolog import FILE_ACTIONS, iolog_version, read_iolog

# piece kinds: an I/O to submit; a point in time without I/O (file action, sync); v2's absolute wait
IO, MARK, WAIT = 0, 1, 2
# the I/O an iolog line replays: fio 3.33 takes reads and writes; it takes trims from a blktrace only
IOLOG_DDIRS = {"read": READ, "write": WRITE}
SKIP_NAMES = {"read": READ, "write": WRITE, "trim": TRIM, "sync": 3}
SYNC = 3                  # fio's DDIR_SYNC, for replay_skip
MAX_PROBED_DEPTH = 1024   # blktrace.c: stacked devices miss completions, so the probe is capped

_Q = tc_act(TC_NOTIFY)
_DISCARD, _FLUSH, _WRITE, _READ = tc_act(TC_DISCARD), tc_act(TC_FLUSH), tc_act(TC_WRITE), tc_act(TC_READ)


class ReplayOptions(NamedTuple):
    no_stall: bool = False
    time_scale: int = 100     # percent
    align: int = 0            # bytes, a power of 2; 0: none
    scale: int = 1            # offsets divided by it; 0 acts as 1 (fio skips the division)
    skip: frozenset = frozenset()   # fio DDIRs (READ, WRITE, TRIM, SYNC) a blktrace replay drops


class TraceSource(NamedTuple):
    """One trace a job clone replays: its format and file(s)."""
    kind: str                 # iolog | blktrace | blkparse
    paths: Tuple[str, ...]    # one file, or a blktrace's per-CPU files
    name: str                 # as the job file gave it


def delay_since(last: int, time: int, opts: ReplayOptions) -> int:
    """fio's delay_since_ttime, in the trace's unit."""
    if not last or opts.no_stall or time < last:
        return 0
    if opts.time_scale == 100:
        return time - last
    return int(float(time - last) * (100.0 / opts.time_scale))


def _place(offset: int, opts: ReplayOptions) -> int:
    if opts.scale:
        offset //= opts.scale
    if opts.align:
        offset &= ~(opts.align - 1)
    return offset


def iolog_pieces(version: int, entries, opts: ReplayOptions) -> Iterator[tuple]:
    """(kind, delay_us, ddir, nbytes, offset) per entry, as read_iolog queues io pieces."""
    last = 0
    for e in entries:
        delay = 0
        if version == 3:
            delay = delay_since(last, e.time_us, opts)
            last = e.time_us
        action = e.action
        if action in FILE_ACTIONS:
            yield (MARK, delay, -1, 0, 0)
        elif action == "wait":
            if not opts.no_stall:
                yield (WAIT, e.offset, -1, 0, 0)
        elif action in ("sync", "datasync"):
            yield (MARK, delay, SYNC, 0, 0)
        elif action in IOLOG_DDIRS:
            yield (IO, delay, IOLOG_DDIRS[action], e.length, _place(e.offset, opts))
        # a trim line: fio 3.33's read_iolog2 drops it ("bad ddir: 2") after taking its time as the last


def blktrace_pieces(events: Iterator[BlkEvent], opts: ReplayOptions) -> Iterator[tuple]:
    """The io pieces fio's queue_trace makes of a blktrace's queue events."""
    last = 0
    skip = opts.skip
    align = opts.align
    for t in events:
        action = t.action
        if action & 0xFFFF != TA_QUEUE:
            continue
        if action & _Q:
            continue            # a notify (its low bits equal a queue's): no time, no I/O
        delay = delay_since(last, t.time_ns, opts) // 1000
        last = t.time_ns
        nbytes = (t.nbytes + align - 1) & ~(align - 1) if align else t.nbytes
        if action & _DISCARD:
            if TRIM not in skip:
                yield (IO, delay, TRIM, nbytes, _place(t.sector * 512, opts))
        elif action & _FLUSH:
            if SYNC not in skip:
                yield (MARK, delay, SYNC, 0, 0)
        else:
            rw = WRITE if action & _WRITE else READ
            if rw not in skip and nbytes:
                yield (IO, delay, rw, nbytes, _place(t.sector * 512, opts))


def probe_depth(events: Iterator[BlkEvent]) -> int:
    """The iodepth fio takes from a blktrace when the job sets none (read_blktrace's probe)."""
    this = [0, 0, 0]
    depth = [0, 0, 0]
    ios = [0, 0, 0]
    for t in events:
        action = t.action
        if action & _Q:
            continue
        d = READ if action & _READ else WRITE if action & _WRITE else TRIM if action & _DISCARD else -1
        kind = action & 0xFFFF
        if kind == TA_QUEUE:
            if d >= 0:
                this[d] += 1
            # what fio counts as an I/O of each direction (queue_trace): discards are trims
            if action & _DISCARD:
                ios[TRIM] += 1
            elif not action & _FLUSH and t.nbytes:
                ios[WRITE if action & _WRITE else READ] += 1
        elif kind in (TA_BACKMERGE, TA_FRONTMERGE):
            if d >= 0:
                this[d] -= 1
        elif kind == TA_COMPLETE and d >= 0:
            depth[d] = max(depth[d], this[d])
            this[d] = 0
    out = 0
    for i in range(3):
        v = min(depth[i], MAX_PROBED_DEPTH)
        if not v and ios[i]:
            v = 1
        out = max(out, v)
    return out


# -- which file, which format ----------------------------------------------------------------------

def split_names(value: str) -> List[str]:
    """read_iolog's ':'-separated names (fio's get_next_str: '\\:' is a colon in a name; empty names are
    skipped); job clone N replays name N modulo their number."""
    names, cur, i = [], "", 0
    while i < len(value):
        c = value[i]
        if c == "\\" and value[i + 1:i + 2] == ":":
            cur += ":"
            i += 2
            continue
        if c == ":":
            if cur:
                names.append(cur)
            cur = ""
        else:
            cur += c
        i += 1
    if cur:
        names.append(cur)
    return names


def _existing(name: str, base_dir: str) -> Optional[str]:
    for cand in (name, os.path.join(base_dir, name)):
        if os.path.isfile(cand):
            return cand
    return None


def find_source(name: str, base_dir: str) -> TraceSource:
    """The trace NAME names: a file tried as given, then relative to the job file's directory; or, when
    no such file exists, the per-CPU files NAME.blktrace.N of a blktrace (as ``blkparse -i NAME``)."""
    if name == "-":
        raise TraceError("read_iolog=-: a trace on standard input is not replayed (give a file)")
    path = _existing(name, base_dir)
    if path is None:
        for base in (name, os.path.join(base_dir, name)):
            parts = percpu_files(base)
            if parts:
                return TraceSource("blktrace", tuple(parts), name)
        if any(os.path.isdir(c) for c in (name, os.path.join(base_dir, name))):
            raise TraceError("read_iolog=%s: a directory, not a trace file" % name)
        raise TraceError("read_iolog=%s: no such file (nor per-CPU files %s.blktrace.N)" % (name, name))
    try:
        with open_trace(path) as f:
            head = f.read(4096)
    except (OSError, EOFError) as e:
        raise TraceError("%s: byte 0: cannot read the trace: %s" % (path, e)) from None
    first = head.split(b"\n", 1)[0]
    if blktrace_byte_order(head):
        return TraceSource("blktrace", (path,), name)
    if iolog_version(first):
        return TraceSource("iolog", (path,), name)
    if looks_like_blkparse(first):
        return TraceSource("blkparse", (path,), name)
    if not head:
        raise TraceError("%s: empty file; a trace is a fio iolog, a blktrace binary or blkparse text" % path)
    raise TraceError("%s:1: not a trace mpathlab reads: a fio iolog starts 'fio version 2 iolog' or 'fio version "
                     "3 iolog' (fio 3.33 reads no version 1), a blktrace binary with its magic, blkparse text with "
                     "'MAJ,MIN CPU SEQ TIME PID ACTION'" % path)


def source_notes(src: TraceSource, sample: int = 2000) -> List[str]:
    """What a user should know about a source (said once per run); of an iolog, from its first lines."""
    out = []
    if src.kind == "iolog":
        for n, e in enumerate(read_iolog(src.paths[0])[1]):
            if e.action == "trim":
                out.append("%s:%d: an iolog's trim lines are not replayed, as fio 3.33 drops them (\"bad ddir: "
                           "2\"); later fio versions replay them" % (src.paths[0], e.line))
                break
            if n >= sample:
                break
    if src.kind == "blktrace" and len(src.paths) == 1:
        base, cpu = split_name(src.paths[0])
        if cpu is not None and len(percpu_files(base)) > 1:
            out.append("read_iolog=%s is one CPU's file of a per-CPU blktrace (fio replays just it); name %s to "
                       "replay all %d merged by time, as blkparse -d merges them"
                       % (src.name, os.path.basename(base), len(percpu_files(base))))
    return out


def events_of(src: TraceSource) -> Iterator[BlkEvent]:
    if src.kind == "blkparse":
        return read_blkparse(src.paths[0])
    if len(src.paths) > 1:
        return read_blktrace_set(list(src.paths))
    return read_blktrace(src.paths[0])


def open_pieces(src: TraceSource, opts: ReplayOptions) -> Iterator[tuple]:
    """The io pieces of a source, read as they are consumed."""
    if src.kind == "iolog":
        version, entries = read_iolog(src.paths[0])
        return iolog_pieces(version, entries, opts)
    return blktrace_pieces(events_of(src), opts)


def estimate_ios(src: TraceSource, sample: int = 2000) -> int:
    """About how many I/Os the trace holds, from its size and its first records (for progress and the
    run's timeline step; reading it whole first would double the time of a long trace)."""
    total = sum(os.path.getsize(p) for p in src.paths)     # (of a compressed file: an underestimate)
    if src.kind == "blktrace":
        n = ios = 0
        for e in events_of(src):
            n += 1
            if e.action & 0xFFFF == TA_QUEUE and not e.action & _Q:
                ios += 1
            if n >= sample:
                break
        return int(ios / n * total / 48) if n else 0
    if src.kind == "blkparse":
        n = ios = 0
        for e in read_blkparse(src.paths[0]):
            n += 1
            ios += e.action & 0xFFFF == TA_QUEUE
            if n >= sample:
                break
        return int(ios / n * total / 80) if n else 0
    # (parsed, so that a bad line among the first is refused before the run, naming the job too)
    n = ios = 0
    for e in read_iolog(src.paths[0])[1]:
        n += 1
        ios += e.action in IOLOG_DDIRS
        if n >= sample:
            with open(src.paths[0], "rb") as f:
                head = sum(len(f.readline()) for _ in range(e.line))
            return int(ios * total / max(1, head))
    return ios


class ReplayGen:
    """The next I/O of a job clone replaying a trace, and when: the engine asks it as it asks an IoGen
    (sim/arrival.py): (direction, bytes) to submit now, a time to ask again, or None when done."""

    def __init__(self, spec, clone: int = 0):
        self.spec = spec
        src: TraceSource = spec.replay_sources[clone % len(spec.replay_sources)]
        self.source = src
        self.pieces = open_pieces(src, spec.replay_options)
        self.pending: Optional[tuple] = None
        self.last_issue: Optional[int] = None     # fio's td->last_issue (unset: the first piece never waits)
        self.done = False
        self.flow = None            # (the engine's IoGen fields a replay leaves unused)
        self.batch = 0
        self.verify = False
        self.bytes_left = None
        self.ios_left: Optional[int] = spec.replay_estimate or None
        self.issued = 0
        self.syncs = 0              # syncs (flushes) the trace times but the model does not send

    def completed(self, job, now: int, lat_ns: int) -> None:
        return None

    def over(self, job, now: int) -> bool:
        return self.done or (job.stop_ns is not None and now >= job.stop_ns)

    def next_io(self, job, now: int):
        if self.done:
            return None
        stop = job.stop_ns
        while True:
            p = self.pending
            if p is None:
                p = next(self.pieces, None)
                if p is None:
                    if not self.issued:
                        # fio: "found no ios in blktrace data" / an iolog with no read, write or wait
                        raise TraceError("%s: no read, write or trim to replay (fio refuses such a trace)"
                                         % ", ".join(self.source.paths))
                    self.done = True
                    job.remaining = 0
                    return None
                self.pending = p
            kind, delay = p[0], p[1]
            if kind == WAIT:
                due = delay * 1_000_000         # milliseconds since fio started
                if due > now:
                    return due if stop is None or due < stop else stop
                self.pending = None
                continue
            if delay and self.last_issue is not None:
                due = self.last_issue + delay * 1000
                if due > now:
                    return due if stop is None or due < stop else stop
            self.pending = None
            self.last_issue = now
            if p[2] == SYNC:
                self.syncs += 1
            if kind == IO:
                self.issued += 1
                if self.ios_left:
                    self.ios_left -= 1
                return p[2], p[3]
