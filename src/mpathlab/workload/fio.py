"""fio job files, read as fio 3.33 reads them.

The reader follows fio's init.c/parse.c: a line is cut at its first ``;``
or ``#`` (anywhere, values included) and trailing blanks; ``[name]`` starts
a job (a name starting with ``global`` is a global section, whose options
the jobs below it start from); ``include FILE`` pulls option lines from
FILE (relative to the job file when not found as given; no sections in
it); ``${VAR}`` becomes the variable's value, or the empty string when it is
unset; ``$pagesize``, ``$mb_memory`` and ``$ncpus`` are this machine's
values; an option repeated in a section takes its last value; ``kb_base``
is applied before the other options of its section; an option without
``=`` is a bare flag.

Every option is declared once in :mod:`mpathlab.workload.fio_options`
(modelled / accepted without effect / refused) and parsed by its type.
Where fio 3.33 would silently read a value differently from how it looks
(``runtime=10sec`` is 10 microseconds to fio, ``bs=4.5k`` is 4 bytes,
``size = 1m`` with a space after ``=`` is 1 byte) the job file is refused
with a line that says what fio would do, rather than guessing either way.
"""
from __future__ import annotations

import copy
import os
import re
import sys
from typing import Dict, List, Optional, Tuple

from . import fio_options as fo
from .fio_options import MODELLED, REFUSED
from .trace import TraceError
from .trace_replay import SKIP_NAMES, ReplayOptions, estimate_ios, events_of, find_source, probe_depth, \
    source_notes, split_names

S64_MAX = fo.S64_MAX
READ, WRITE, TRIM = 0, 1, 2
DDIR_NAMES = ("read", "write", "trim")


class FioError(ValueError):
    """A job file problem; the message names the file, line and option."""


# rw value -> (directions it uses, random offsets)
RW_MODES = {"read": ("read", False), "write": ("write", False), "trim": ("trim", False),
            "randread": ("read", True), "randwrite": ("write", True), "randtrim": ("trim", True),
            "rw": ("mix", False), "readwrite": ("mix", False), "randrw": ("mix", True),
            "trimwrite": ("trimwrite", False), "randtrimwrite": ("trimwrite", True)}


# -- values ------------------------------------------------------------------

_UNIT_POW = {"k": 1, "m": 2, "g": 3, "t": 4, "p": 5}
_TIME_US = {"us": 1, "usec": 1, "ms": 1000, "msec": 1000, "s": 10 ** 6, "m": 60 * 10 ** 6,
            "h": 3600 * 10 ** 6, "d": 86400 * 10 ** 6}
_DEFAULT_UNIT_US = {"s": 10 ** 6, "ms": 1000, "us": 1}
_NUM_RE = re.compile(r"([+-]?)([0-9]+)(.*)\Z", re.S)     # fio's strtoll: ASCII digits only


class ValueProblem(ValueError):
    """A value fio would refuse or misread; the text says which."""


def _size_mult(suffix: str, kb_base: int) -> Optional[int]:
    """fio's __get_mult_bytes for the suffixes it really knows, else None."""
    s = suffix.lower()
    if s in ("", "b"):
        return 1
    letter, rest = s[0], s[1:]
    if letter not in _UNIT_POW or rest not in ("", "b", "i", "ib"):
        return None
    base = kb_base
    if rest == "ib":      # fio: "KiB" means the *other* base (4KiB = 4000 under kb_base=1024)
        base = 1000 if kb_base == 1024 else 1024
    return base ** _UNIT_POW[letter]


def _check_start(text: str) -> None:
    """What fio's number and time readers both refuse before reading digits."""
    if text == "":
        raise ValueProblem("empty value")
    if text[0].isspace():
        raise ValueProblem("fio 3.33 does not skip blanks after '=' and would misread %r (drop the blank)" % text)


def _check_one_value(text: str) -> None:
    """fio's handle_option splits a number or time at ',', else ':', else '-' and reads each part as
    another value (a range, or the next of read,write,trim), so '1m-2m' is not 1 byte to fio."""
    sep = next((c for c in ",:-" if c in text[1:]), None)
    if sep is not None:
        raise ValueProblem("fio 3.33 splits %r at %r into two values (a range, or more of a read,write,trim "
                           "list); mpathlab takes one value here" % (text, sep))


def _short(text: str, limit: int = 40) -> str:
    """A value quoted for a message; a long one is cut (the problem stays readable)."""
    return repr(text) if len(text) <= limit else "%r... (%d characters)" % (text[:limit], len(text))


def _cut(value: str, limit: int = 60) -> str:
    """An option's value as echoed before its problem: a long one is cut so the problem stays in view, and
    a control character (a NUL, a terminal's ESC) is written as its escape, never sent to the terminal."""
    value = re.sub(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", lambda m: "\\x%02x" % ord(m.group(0)), value)
    return value if len(value) <= limit else "%s...(%d characters)" % (value[:limit], len(value))


def _leading_integer(text: str, what: str) -> Tuple[int, str]:
    """The decimal digits a value starts with (no sign, at most 2^63-1) and the rest, the unit."""
    m = _NUM_RE.match(text)
    if not m:
        raise ValueProblem("%r is not %s" % (text, what))
    sign, digits, suffix = m.groups()
    if sign == "-":
        raise ValueProblem("%r is negative" % text)
    if len(digits.lstrip("0")) > 19:
        raise ValueProblem("%s is larger than 2^63-1 (fio's limit)" % _short(text))
    v = int(digits)
    if v > S64_MAX:
        raise ValueProblem("%r is larger than 2^63-1 (fio's limit)" % text)
    return v, suffix


def fio_number(text: str, kb_base: int = 1024, percent_ok: bool = False):
    """An integer as fio's str_to_decimal(kilo=1) reads it: int, or ('%', N)."""
    _check_start(text)
    if text[0] == "(":
        raise ValueProblem("fio 3.33 (as Debian builds it) has no arithmetic expressions")
    low = text.lower()
    if "0x" in low:
        m = re.fullmatch(r"0x([0-9a-f]+)", low)
        if not m:
            raise ValueProblem("fio reads anything containing '0x' as hex and would misread %r" % text)
        if len(m.group(1).lstrip("0")) > 16:
            raise ValueProblem("%s is larger than 2^63-1 (fio's limit)" % _short(text))
        v = int(m.group(1), 16)
        if v > S64_MAX:
            raise ValueProblem("%r is larger than 2^63-1 (fio's limit)" % text)
        return v
    v, suffix = _leading_integer(text, "a number")
    if suffix.startswith("."):
        raise ValueProblem("fio ignores fractions and units after them (it reads %r as %d)" % (text, v))
    if suffix == "z" and percent_ok:
        return ("z", v)
    if suffix == "%" and percent_ok:
        if not 0 < v <= 100:
            raise ValueProblem("a percentage must be 1-100, not %r" % text)
        return ("%", v)
    mult = _size_mult(suffix, kb_base)
    if mult is None:
        _check_one_value(text)
        raise ValueProblem("unit %r is not one fio knows (it would read %r as %d bytes); use k, m, g, t, p "
                           "with optional b, i or ib" % (suffix, text, v))
    v *= mult
    if v > S64_MAX:
        raise ValueProblem("%r is larger than 2^63-1 bytes (fio 3.33 wraps it around)" % text)
    return v


def fio_time_ns(text: str, unit: str) -> int:
    """A time as fio's check_str_time reads it, in ns; a bare number is in ``unit``."""
    _check_start(text)
    if "0x" in text.lower():
        raise ValueProblem("fio reads anything containing '0x' as hex and would misread %r" % text)
    v, suffix = _leading_integer(text, "a time")
    if suffix.startswith("."):
        raise ValueProblem("fio ignores fractions (it reads %r as %d %s)" % (text, v, unit))
    s = suffix.lower()
    if s == "":
        mult = _DEFAULT_UNIT_US[unit]
    elif s in _TIME_US:
        mult = _TIME_US[s]
    else:
        _check_one_value(text)
        raise ValueProblem("unit %r is not one fio 3.33 knows (it would read %r as %d microseconds); use us, "
                           "ms, s, m, h or d" % (suffix, text, v))
    ns = v * mult * 1000
    if ns > S64_MAX:
        raise ValueProblem("%r is too long" % text)
    return ns


def parse_bssplit(text: str, kb_base: int = 1024) -> List[List[Tuple[int, float]]]:
    """'4k/10:64k/50:32k/40[,read...]' -> per-direction [(size, weight)]; entries
    without a percentage share what the others leave (integer division, fio's
    rule); a total under 100 leaves the rest to the largest entry (where fio's
    draw lands); over 100 is refused."""
    parts = text.split(",")
    if len(parts) > 3:
        raise ValueProblem("bssplit takes at most read,write,trim lists")
    out: List[List[Tuple[int, float]]] = []
    for part in parts:
        if not part:
            out.append(out[-1] if out else [])
            continue
        entries = []
        for item in part.split(":"):
            if not item:
                break
            size_s, slash, pct_s = item.partition("/")
            size = fio_number(size_s, kb_base)
            if size <= 0:
                raise ValueProblem("bssplit size must be positive in %r" % item)
            pct = None
            if slash:
                if not pct_s.isdigit():
                    raise ValueProblem("bssplit percentage must be a whole number in %r" % item)
                pct = min(100, int(pct_s))
                if pct == 0:
                    pct = None
            entries.append([size, pct])
            if len(entries) > 64:
                raise ValueProblem("bssplit has more than 64 entries")
        if not entries:
            raise ValueProblem("bssplit list %r is empty" % part)
        given = sum(e[1] for e in entries if e[1] is not None)
        if given > 100:
            raise ValueProblem("bssplit percentages add up to %d, more than 100" % given)
        free = [e for e in entries if e[1] is None]
        for e in free:
            e[1] = (100 - given) // len(free)
        total = sum(e[1] for e in entries)
        if total < 100:
            # fio draws past the last share into the entry with the largest percentage
            big = max(range(len(entries)), key=lambda i: (entries[i][1], i))
            entries[big][1] += 100 - total
        out.append([(s, float(p)) for s, p in entries if p > 0])
    while len(out) < 3:
        out.append(out[-1])     # write = read, trim = write when not given (fio)
    return out


def _split_triple(value: str, allow_range_seps: bool = True) -> List[str]:
    """fio's read,write,trim split (also 'r:w' / 'r-w' for plain numbers)."""
    if value.startswith("-"):
        raise ValueProblem("%r is negative (fio would split it at the '-' and read a huge first value)" % value)
    if value.endswith(","):
        value = value[:-1]
    if "," in value:
        parts = value.split(",")
    elif allow_range_seps and (":" in value or "-" in value.lstrip("+")):
        parts = re.split(r"[:-]", value)
    else:
        parts = [value]
    if len(parts) > 3:
        raise ValueProblem("takes at most three values (read,write,trim)")
    return parts


def _triple_values(value: str, conv, default, allow_range_seps=True) -> List:
    """read,write,trim: an empty part keeps the default; the last given value
    fills the directions after it (fio's option parsing)."""
    parts = _split_triple(value, allow_range_seps)
    vals: List = [default, default, default]
    last = None
    for i, p in enumerate(parts):
        if p == "":
            continue
        last = conv(p)
        vals[i] = last
    if last is None:
        raise ValueProblem("no value given")
    for i in range(len(parts), 3):
        vals[i] = vals[len(parts) - 1]
    return vals


# -- jobs --------------------------------------------------------------------

class JobSpec:
    """One fio job after its [global] options are applied."""

    def __init__(self, name: str):
        self.name = name
        self.rw = "read"
        self.ddir_mode = "read"          # read | write | trim | mix | trimwrite
        self.read_fraction = 1.0
        self.random = False
        self.bs_rwt = [4096, 4096, 4096]
        self.bsrange_rwt: Optional[List[Tuple[int, int]]] = None
        self.bssplit_rwt: Optional[List[List[Tuple[int, float]]]] = None
        self.bs_unaligned = False
        self.iodepth = 1                   # I/Os in flight (1 for a synchronous engine, as fio runs it)
        self.iodepth_option = 1            # what the file said (fio reports it as latency_depth)
        self.size: Optional[int] = None          # None: the whole device
        self.size_percent: Optional[int] = None
        self.filesize: Optional[int] = None
        self.nrfiles = 1
        self.io_size: Optional[int] = None
        self.fill_device = False
        self.loops = 1
        self.number_ios: Optional[int] = None
        self.numjobs = 1
        self.runtime_ns: Optional[int] = None
        self.time_based = False
        self.startdelay_ns = 0
        self.rate_bps = [0, 0, 0]
        self.rate_iops = [0, 0, 0]
        self.rate_process = "linear"
        self.thinktime_ns = 0
        self.thinktime_spin_ns = 0
        self.thinktime_blocks = 1
        self.thinktime_blocks_type = "complete"
        self.percentile_list: Optional[List[float]] = None
        self.lat_percentiles = False
        self.clat_percentiles = True
        self.group_reporting = False
        self.stonewall = False
        # fio stops a job at its first I/O error unless continue_on_error says otherwise.
        self.continue_on_error = False
        self.cpus_allowed: Optional[List[int]] = None   # the CPUs the job's clones run on
        self.lat_log: Optional[str] = None
        self.bw_log: Optional[str] = None
        self.iops_log: Optional[str] = None
        self.log_avg_msec = 0
        self.log_offset = False
        self.log_prio = False
        self.per_job_logs = True
        self.kb_base = 1024
        self.ioengine = "psync"
        self.verify = False
        self.do_verify = True
        self.verify_backlog = 0
        self.flow = 0
        self.flow_id = 0
        self.flow_sleep_ns = 0
        self.wait_for: Optional[str] = None
        self.zonesize: Optional[int] = None
        self.latency_target_ns = 0
        self.latency_window_ns = 0
        self.latency_percentile = 100.0
        self.latency_run = False
        self.exitall = False
        self.exit_what = "group"
        self.new_group = False
        self.iodepth_low = 0
        self.exitall_on_error = False
        # ioengine=cpuio: a burner of the host's CPUs instead of an I/O job
        self.cpuload = 0
        self.cpu_cycle_us = 50_000          # cpuchunks
        self.cpumode = "noop"
        self.exit_on_io_done = False
        self.iodepth_given = False          # a blktrace replay takes its depth from the trace otherwise
        # read_iolog: the trace each clone replays (workload/trace_replay.py), set up by _finish_job
        self.read_iolog: Optional[str] = None
        self.replay_options = ReplayOptions()
        self.replay_sources: list = []
        self.replay_estimate = 0            # about how many I/Os the first trace holds
        self._zones: Dict[str, int] = {}       # size/io_size given in zones, resolved with zonesize
        self.notes: List[str] = []
        self.options: Dict[str, str] = {}   # what the file said, for the JSON "job options"

    # -- derived -------------------------------------------------------------
    @property
    def ddirs(self) -> Tuple[int, ...]:
        return {"read": (READ,), "write": (WRITE,), "trim": (TRIM,), "mix": (READ, WRITE),
                "trimwrite": (TRIM, WRITE)}[self.ddir_mode]

    def sizes_of(self, d: int) -> List[Tuple[int, float]]:
        """(size, weight) choices for direction d (one entry for a fixed size)."""
        if self.bssplit_rwt is not None:
            return self.bssplit_rwt[d]
        if self.bsrange_rwt is not None:
            lo, hi = self.bsrange_rwt[d]
            return [(lo, 1.0)] if lo == hi else [(lo, 0.0), (hi, 0.0)]
        return [(self.bs_rwt[d], 1.0)]

    @property
    def mixed_sizes(self) -> bool:
        """True when I/O sizes vary within the job (bssplit, bsrange, or
        different sizes for the directions it uses; a replayed trace's sizes are the trace's)."""
        if self.read_iolog is not None:
            return True
        sizes = set()
        for d in self.ddirs:
            s = self.sizes_of(d)
            if len(s) > 1:
                return True
            sizes.add(s[0][0])
        return len(sizes) > 1

    @property
    def bs(self) -> int:
        """The job's block size (of its first direction; the smallest of a mix)."""
        return min(s for s, _ in self.sizes_of(self.ddirs[0]))

    def set_iodepth(self, depth: int) -> bool:
        """Take iodepth as a job file says it: fio keeps that many in flight only with an engine that
        queues I/O; a synchronous one runs one at a time.  True when it was capped so."""
        self.iodepth_option = depth
        capped = depth > 1 and not fo.is_async_engine(self.ioengine, depth)
        self.iodepth = 1 if capped else depth
        return capped

    @property
    def burns_cpu(self) -> bool:
        """ioengine=cpuio: each 'I/O' is a burn of cpu_cycle_us on the job's CPU
        (fio's cpuio engine), followed by the think time fio derives from cpuload."""
        return self.ioengine == fo.CPU_BURN_ENGINE

    @property
    def open_loop(self) -> bool:
        return bool(any(self.rate_bps) or any(self.rate_iops) or self.thinktime_ns)

    def region_bytes(self, device_bytes: Optional[int]) -> Optional[int]:
        """The job's size: size, N% of the device, filesize x nrfiles, or the device."""
        if self.size is not None and not self.fill_device:
            return self.size
        if self.size_percent is not None and device_bytes:
            return device_bytes * self.size_percent // 100
        if self.filesize is not None and not self.fill_device:
            return self.filesize * self.nrfiles
        return device_bytes

    def io_bytes(self, device_bytes: Optional[int] = None) -> Optional[int]:
        """Bytes one clone transfers, as fio 3.33 counts them (backend.c).

        Each of fio's passes covers each file once in whole blocks (a file's
        tail shorter than a block is skipped) and issues I/O while the bytes
        issued so far are below io_size (or size) x loops, so the last I/O may
        go past it.  fio runs `loops` passes, then more while io_size exceeds
        what is done by at least the largest block size: io_size up to the
        size gives io_size x loops, a larger one whole passes until it is
        covered (size=1m io_size=3m loops=2: 3 MiB, not 6).  Mixed sizes are
        counted in blocks of the smallest size."""
        region = self.region_bytes(device_bytes)
        base = self.io_size if self.io_size is not None else region
        if base is None:
            return None
        bs = self.bs
        nfiles = max(1, self.nrfiles)
        per_pass = None
        if region is not None:
            per_file = region // nfiles
            blocks = per_file // bs
            if per_file % bs and region == (self.filesize or 0) * nfiles and not self.rw.startswith("rand"):
                blocks += 1     # fio rounds size= down to the block size, not filesize=: a sequential pass does the tail
            per_pass = blocks * bs * nfiles
        limit = base * self.loops
        if not per_pass:
            return limit
        reach = -(-limit // bs) * bs          # the I/O that crosses the limit is still issued
        passes = self.loops
        if self.io_size is not None:
            max_bs = max(s for d in range(3) for s, _ in self.sizes_of(d))
            passes = max(passes, max(0, self.io_size - max_bs) // per_pass + 1)
        return min(passes * per_pass, reach)

    def ios_for(self, device_bytes: Optional[int] = None) -> Optional[int]:
        """I/Os one clone issues (fixed block size), None when unknown or mixed."""
        nbytes = self.io_bytes(device_bytes)
        n = None if nbytes is None else nbytes // self.bs
        if self.ddir_mode == "trimwrite" and n is not None:
            n *= 2            # each block is trimmed, then written
        if self.number_ios:
            n = self.number_ios if n is None else min(n, self.number_ios)
        return n

    @property
    def total_ios(self) -> Optional[int]:
        """I/Os one clone issues when the job names its size, else None."""
        return self.ios_for(None)

    def describe(self) -> str:
        parts = ["rw=%s" % self.rw, "bs=%d" % self.bs, "iodepth=%d" % self.iodepth]
        if self.total_ios:
            parts.append("ios=%d" % self.total_ios)
        if self.runtime_ns:
            parts.append("runtime=%gs" % (self.runtime_ns / 1e9))
        if self.numjobs > 1:
            parts.append("numjobs=%d" % self.numjobs)
        return "%s: %s" % (self.name, " ".join(parts))


class FioJobFile:
    def __init__(self, jobs: List[JobSpec], global_options: Dict[str, str], source: str = ""):
        self.jobs = jobs
        self.global_options = global_options
        self.source = source

    @property
    def notes(self) -> List[str]:
        """Things the simulation does differently from fio, once each."""
        out: List[str] = []
        for j in self.jobs:
            for n in j.notes:
                if n not in out:
                    out.append(n)
        return out


# -- setters: what each modelled option does to a JobSpec ----------------------

def _bool_value(value: Optional[str], o: fo.Opt) -> bool:
    if value is None:
        if o.type == "flag":
            return True
        raise ValueProblem("needs a value (%s=0 or %s=1)" % (o.name, o.name))
    if value in ("0", "1"):
        return value == "1"
    if o.type == "flag" and value.isdigit():
        return int(value) != 0
    raise ValueProblem("takes 0 or 1, not %r" % value)


def _int_value(value: str, o: fo.Opt, kb_base: int) -> int:
    v = fio_number(value, kb_base)
    _check_range(v, o)
    return v


def _check_range(v: int, o: fo.Opt) -> None:
    lo = 0 if o.lo is None else o.lo
    hi = S64_MAX if o.hi is None else o.hi
    if not lo <= v <= hi:
        raise ValueProblem("must be between %d and %d, got %d" % (lo, hi, v))


def _set_rw(job, o, value):
    mode, _, modifier = value.partition(":")
    if mode not in RW_MODES:
        raise ValueProblem("%r is not one of %s" % (value, ", ".join(fo.RW_CHOICES)))
    if modifier:
        fio_number(modifier.lstrip("-"), job.kb_base)   # an offset step: offsets are not modelled
    job.rw = mode
    job.ddir_mode, job.random = RW_MODES[mode]


def _set_rwmix(job, o, value):
    pct = _int_value(value, o, job.kb_base)
    job.read_fraction = pct / 100.0 if o.name == "rwmixread" else 1 - pct / 100.0
    job._rwmix_set = True


def _set_bs(job, o, value):
    job.bs_rwt = _triple_values(value, lambda p: _int_value(p, o, job.kb_base), 4096)
    job.bsrange_rwt = None
    job.bssplit_rwt = None


def _set_bsrange(job, o, value):
    def conv(p):
        m = re.fullmatch(r"([^:-]+)[:-]([^:-]+)", p)
        if not m:
            raise ValueProblem("%r is not a range lo-hi" % p)
        a, b = _int_value(m.group(1), o, job.kb_base), _int_value(m.group(2), o, job.kb_base)
        return (min(a, b), max(a, b))
    parts = value.rstrip(",").split(",") if "/" not in value else value.split("/")
    if len(parts) > 3:
        raise ValueProblem("takes at most three ranges (read,write,trim)")
    vals = [None, None, None]
    for i, p in enumerate(parts):
        if p:
            vals[i] = conv(p)
    if vals[0] is None:
        raise ValueProblem("needs a read range first")
    for i in range(1, 3):
        if vals[i] is None:
            vals[i] = vals[i - 1]
    job.bsrange_rwt = vals
    job.bssplit_rwt = None


def _set_bssplit(job, o, value):
    job.bssplit_rwt = parse_bssplit(value, job.kb_base)
    if any(not s for s in job.bssplit_rwt):
        raise ValueProblem("bssplit needs at least one size per direction")


def _set_size_like(job, o, value):
    v = fio_number(value, job.kb_base, percent_ok=(o.name != "filesize"))
    if isinstance(v, tuple) and v[0] == "z":
        job._zones[o.name] = v[1]              # N zones: needs zonesize (checked at the end of the job)
        return
    job._zones.pop(o.name, None)
    if isinstance(v, tuple) and o.name != "size":
        raise ValueProblem("a percentage is only meaningful for size")
    if isinstance(v, tuple):
        job.size, job.size_percent = None, v[1]
        return
    _check_range(v, o)
    if o.name == "size":
        job.size, job.size_percent = v, None
    elif o.name == "filesize":
        job.filesize = v
    else:
        job.io_size = v


def _set_time(attr):
    def setter(job, o, value):
        v = fio_time_ns(value, o.unit)
        setattr(job, attr, v)
    return setter


def _set_int(attr):
    def setter(job, o, value):
        setattr(job, attr, _int_value(value, o, job.kb_base))
    return setter


def _set_bool(attr):
    def setter(job, o, value):
        setattr(job, attr, _bool_value(value, o))
    return setter


def _choice(value, o):
    if value not in o.choices:
        raise ValueProblem("%r is not one of %s" % (value, ", ".join(o.choices)))
    return value


def _set_choice(attr):
    def setter(job, o, value):
        setattr(job, attr, _choice(value, o))
    return setter


def _set_rate(job, o, value):
    setattr(job, "rate_bps" if o.name == "rate" else "rate_iops",
            _triple_values(value, lambda p: _int_value(p, o, job.kb_base), 0))


def _set_percentiles(job, o, value):
    vals = []
    for x in value.split(":"):
        if not x:
            continue
        try:
            vals.append(float(x))
        except ValueError:
            raise ValueProblem("%r is not a number" % x) from None
    if not vals or len(vals) > 20 or any(not 0 <= v <= 100 for v in vals):
        raise ValueProblem("takes up to 20 values in [0, 100] separated by ':'")
    job.percentile_list = vals


def _set_latency_percentile(job, o, value):
    try:
        v = float(value)
    except ValueError:
        raise ValueProblem("%r is not a number" % value) from None
    if not 0 < v <= 100:
        raise ValueProblem("must be above 0 and at most 100")
    job.latency_percentile = v


def _set_cpus(job, o, value):
    cpus = []
    for part in value.split(","):
        part = part.strip()
        lo, sep, hi = part.partition("-")
        if not lo.isdigit() or (sep and not hi.isdigit()):
            raise ValueProblem("takes CPU numbers and ranges like 0-3,8, not %r" % value)
        a, b = int(lo), int(hi) if sep else int(lo)
        if b < a or b > 4095:
            raise ValueProblem("bad CPU range %r" % part)
        cpus.extend(range(a, b + 1))
    job.cpus_allowed = sorted(set(cpus))


def fio_str_head(value: str) -> str:
    """What fio matches against a string option's values (parse.c opt_len): up to the first ',', else
    the first ':' (random_distribution=zipf:1.2 is zipf, verify=md5:x is md5)."""
    for c in ",:":
        if c in value:
            return value[:value.index(c)]
    return value


def _set_verify(job, o, value):
    # 0 is off; every method (null too) reads the written blocks back
    job.verify = _choice(fio_str_head(value), o) != "0"


def _set_coe(job, o, value):
    v = value or ""                 # fio 3.33 refuses it bare, empty or in capitals ("failed parsing ...")
    if v not in ("none", "0", "read", "write", "io", "verify", "all", "1"):
        raise ValueProblem("takes none, read, write, io, verify or all, not %r" % value)
    job.continue_on_error = v not in ("none", "0")


def _set_log(attr):
    def setter(job, o, value):
        # fio: a bare write_lat_log (or an empty value) uses the job name as the prefix
        setattr(job, attr, value if value else "")
    return setter


def _set_ioengine(job, o, value):
    eng = value.split(":")[0]
    if eng not in fo.FIO_ENGINES and eng not in fo.NO_BLOCK_IO_ENGINES and eng != "external" and "/" not in eng:
        # fio would dlopen the name and refuse the job: "fio: engine NAME not loadable"
        raise ValueProblem("fio 3.33 has no engine %s (it would refuse the job: engine not loadable); its engines: %s"
                           % (_short(eng), ", ".join(sorted(fo.FIO_ENGINES))))
    if eng in fo.NO_BLOCK_IO_ENGINES:
        raise ValueProblem("this engine %s: nothing of it reaches a multipath device, so there is nothing "
                           "to simulate" % fo.NO_BLOCK_IO_ENGINES[eng])
    if eng in fo.APPROXIMATE_ENGINES:
        job.notes.append("ioengine=%s: %s" % (eng, fo.APPROXIMATE_ENGINES[eng]))
    job.ioengine = eng


def _set_ramp(job, o, value):
    if fio_time_ns(value, o.unit):
        job.notes.append("ramp_time is not modelled: every I/O counts from the start")


def _set_iodepth(job, o, value):
    _set_int("iodepth")(job, o, value)
    job.iodepth_given = True


def _set_replay(field):
    def setter(job, o, value):
        if o.type == "bool":
            v = _bool_value(value, o)
        else:
            v = _int_value(value, o, job.kb_base)
            _check_range(v, o)
        if field == "align" and v & (v - 1):
            raise ValueProblem("must be a power of 2 (fio refuses others)")
        job.replay_options = job.replay_options._replace(**{field: v})
    return setter


def _set_replay_skip(job, o, value):
    skip = set()
    for word in value.strip().split(","):
        if word not in SKIP_NAMES:
            raise ValueProblem("takes read, write, trim and sync, comma-separated, not %r (fio: Unknown skip type)"
                               % _short(word))
        skip.add(SKIP_NAMES[word])
    job.replay_options = job.replay_options._replace(skip=frozenset(skip))


def _set_name(job, o, value):
    job.name = value          # (a name= in [global] does not rename the jobs: fio keeps their section names)


SETTERS = {
    "rw": _set_rw, "rwmixread": _set_rwmix, "rwmixwrite": _set_rwmix, "bs": _set_bs,
    "bsrange": _set_bsrange, "bssplit": _set_bssplit, "bs_unaligned": _set_bool("bs_unaligned"),
    "iodepth": _set_iodepth, "numjobs": _set_int("numjobs"), "size": _set_size_like,
    "filesize": _set_size_like, "io_size": _set_size_like, "nrfiles": _set_int("nrfiles"),
    "fill_device": _set_bool("fill_device"), "loops": _set_int("loops"),
    "number_ios": _set_int("number_ios"), "runtime": _set_time("runtime_ns"),
    "time_based": _set_bool("time_based"), "startdelay": _set_time("startdelay_ns"), "ramp_time": _set_ramp,
    "stonewall": _set_bool("stonewall"), "new_group": _set_bool("new_group"), "name": _set_name,
    "description": lambda j, o, v: None, "cpus_allowed": _set_cpus, "continue_on_error": _set_coe,
    "rate": _set_rate, "rate_iops": _set_rate, "rate_process": _set_choice("rate_process"),
    "thinktime": _set_time("thinktime_ns"), "thinktime_spin": _set_time("thinktime_spin_ns"),
    "thinktime_blocks": _set_int("thinktime_blocks"),
    "thinktime_blocks_type": _set_choice("thinktime_blocks_type"),
    "percentile_list": _set_percentiles, "lat_percentiles": _set_bool("lat_percentiles"),
    "clat_percentiles": _set_bool("clat_percentiles"), "group_reporting": _set_bool("group_reporting"),
    "write_lat_log": _set_log("lat_log"), "write_bw_log": _set_log("bw_log"),
    "write_iops_log": _set_log("iops_log"), "log_avg_msec": _set_int("log_avg_msec"),
    "log_offset": _set_bool("log_offset"), "log_prio": _set_bool("log_prio"),
    "per_job_logs": _set_bool("per_job_logs"), "kb_base": lambda j, o, v: setattr(j, "kb_base", int(_choice(v, o))),
    "ioengine": _set_ioengine,
    "verify": _set_verify,
    "do_verify": _set_bool("do_verify"), "verify_backlog": _set_int("verify_backlog"),
    "flow": _set_int("flow"), "flow_id": _set_int("flow_id"),
    "flow_sleep": lambda j, o, v: setattr(j, "flow_sleep_ns", _int_value(v, o, j.kb_base) * 1000),
    "wait_for": lambda j, o, v: setattr(j, "wait_for", v), "zonesize": _set_int("zonesize"),
    "latency_target": _set_time("latency_target_ns"), "latency_window": _set_time("latency_window_ns"),
    "latency_percentile": _set_latency_percentile, "latency_run": _set_bool("latency_run"),
    "exitall": _set_bool("exitall"), "exit_what": _set_choice("exit_what"),
    "iodepth_low": _set_int("iodepth_low"), "exitall_on_error": _set_bool("exitall_on_error"),
    "cpuload": _set_int("cpuload"), "cpuchunks": _set_int("cpu_cycle_us"), "cpumode": _set_choice("cpumode"),
    "exit_on_io_done": _set_bool("exit_on_io_done"),
    "read_iolog": lambda j, o, v: setattr(j, "read_iolog", v), "replay_no_stall": _set_replay("no_stall"),
    "replay_time_scale": _set_replay("time_scale"), "replay_align": _set_replay("align"),
    "replay_scale": _set_replay("scale"), "replay_skip": _set_replay_skip,
}
# options whose value may be left out (fio's FIO_OPT_STR_SET, and the log options)
_VALUE_OPTIONAL_TYPES = ("flag",)
_VALUE_OPTIONAL = {"write_lat_log", "write_bw_log", "write_iops_log"}


def _validate_no_effect(job: JobSpec, o: fo.Opt, value: Optional[str]) -> None:
    """Options without effect still get fio's type check."""
    if o.name == "steadystate":
        job.notes.append("steadystate: the simulation runs the whole runtime (fio may end a job earlier once "
                         "it is steady)")
    if value is None:
        return
    if o.type in ("bool", "flag"):
        _bool_value(value, o)
    elif o.type in ("int", "size"):
        if o.triple:
            _triple_values(value, lambda p: fio_number(p, job.kb_base), 0)
        else:
            fio_number(value.split(",")[0] if "," in value else value, job.kb_base, percent_ok=True)
    elif o.type == "choice":
        _choice(value, o)
    elif o.type == "time":
        fio_time_ns(value, o.unit)
    elif o.choices:
        _choice(fio_str_head(value), o)     # e.g. random_distribution=zipf:1.2


def apply_option(job: JobSpec, key: str, value: Optional[str], where: str) -> None:
    """Apply one option line to ``job`` (raises FioError naming ``where``)."""
    o = fo.lookup(key)
    if o is None:
        raise FioError("%s: unknown fio option %r (`mpathlab fio-options` lists the ones mpathlab knows)"
                       % (where, key))
    if o.cls == REFUSED:
        raise FioError("%s: fio option %r is refused: it would change %s, which the simulation does not "
                       "model" % (where, key, o.why))
    if value is None and o.type not in _VALUE_OPTIONAL_TYPES and o.name not in _VALUE_OPTIONAL:
        raise FioError("%s: option %r needs a value (%s=...)" % (where, key, key))
    if value == "" and o.name not in _VALUE_OPTIONAL:
        raise FioError("%s: option %r has an empty value" % (where, key))
    if key not in ("name", "description"):
        if value is None and o.type == "flag":
            pass  # fio does not echo valueless booleans in "job options"
        else:
            job.options[key] = value if value is not None else ""
    try:
        if o.cls == MODELLED:
            SETTERS[o.name](job, o, value)
        else:
            _validate_no_effect(job, o, value)
            if o.name == "ioengine":
                _set_ioengine(job, o, value)
    except ValueProblem as e:
        raise FioError("%s: %s=%s: %s" % (where, key, "" if value is None else _cut(value), e)) from None


# -- reading -----------------------------------------------------------------

def _strip_line(raw: str) -> str:
    """fio's strip_blank_front/strip_blank_end: cut at the first ';' and the first '#'."""
    line = raw.lstrip()
    for c in ";#":
        i = line.find(c)
        if i >= 0:
            line = line[:i]
    return line.rstrip(" \t\r\n\v\f\x00")


_ENV_RE = re.compile(r"\$\{([^}]+)\}")


def _expand(value: str) -> str:
    """${VAR} (empty when unset, as fio does) and fio's reserved keywords."""
    value = _ENV_RE.sub(lambda m: os.environ.get(m.group(1), ""), value)
    if "$" in value:
        kw = _keywords()
        for word in ("$pagesize", "$mb_memory", "$ncpus"):
            value = value.replace(word, kw[word])
        # fio hands the value to bc, unless it is longer than 100 characters
        if len(value) <= 100 and re.fullmatch(r"[0-9+\-*/ ()]+", value) and re.search(r"[+\-*/]", value):
            value = _calc(value)
    return value


def _keywords() -> Dict[str, str]:
    try:
        page = os.sysconf("SC_PAGE_SIZE")
        mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // (1 << 20)
    except (ValueError, OSError, AttributeError):   # pragma: no cover - non-POSIX
        page, mem = 4096, 1024
    return {"$pagesize": str(page), "$mb_memory": str(mem), "$ncpus": str(os.cpu_count() or 1)}


def _calc(expr: str) -> str:
    """What fio hands to bc after a keyword: integer + - * / arithmetic."""
    tokens = re.findall(r"\d+|[+\-*/()]", expr.replace(" ", ""))
    pos = [0]

    def peek():
        return tokens[pos[0]] if pos[0] < len(tokens) else None

    def take():
        pos[0] += 1
        return tokens[pos[0] - 1]

    def atom():
        t = take() if peek() is not None else None
        if t == "(":
            v = add()
            if take() != ")":
                raise ValueProblem("unbalanced parentheses in %r" % expr)
            return v
        if t is None or not t.isdigit():
            raise ValueProblem("cannot compute %r" % expr)
        return int(t)

    def mul():
        v = atom()
        while peek() in ("*", "/"):
            op = take()
            r = atom()
            if op == "/" and r == 0:
                raise ValueProblem("division by zero in %r" % expr)
            v = v * r if op == "*" else v // r
        return v

    def add():
        v = mul()
        while peek() in ("+", "-"):
            op = take()
            v = v + mul() if op == "+" else v - mul()
        return v

    try:
        v = add()
    except IndexError:
        raise ValueProblem("cannot compute %r" % expr) from None
    if pos[0] != len(tokens):
        raise ValueProblem("cannot compute %r" % expr)
    return str(v)


def _decode(data: bytes, source: str) -> str:
    from ..inputs import binary_problem, control_character
    bad = binary_problem(data[:65536], "job file")
    if bad and "NUL" in bad[1]:
        raise FioError("%s: not a job file (binary data: a NUL byte)" % source)
    if bad:
        raise FioError("%s line %d: %s" % (source, bad[0], bad[1]))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[:e.start].count(b"\n") + 1
        raise FioError("%s line %d: not UTF-8 text (byte 0x%02x)" % (source, line, data[e.start])) from None
    ctl = control_character(text)
    if ctl:
        raise FioError("%s line %d: a control character U+%04X (column %d): a job file must be plain text"
                       % ((source,) + ctl))
    return text


Line = Tuple[str, Optional[str], str]   # key, value, where


def _read_sections(text: str, source: str, base_dir: str = ".", depth: int = 0,
                   nested: bool = False) -> List[Tuple[str, List[Line], str]]:
    sections: List[Tuple[str, List[Line], str]] = []
    current: Optional[List[Line]] = [] if nested else None
    for lineno, raw in enumerate(text.splitlines(), 1):
        where = "%s line %d" % (source, lineno)
        line = _strip_line(raw)
        if not line:
            continue
        if line.startswith("["):
            if nested:
                raise FioError("%s: no [sections] in an included file (fio refuses them)" % where)
            if not line.endswith("]") or len(line) < 3:
                raise FioError("%s: malformed section header %r" % (where, line))
            current = []
            sections.append((line[1:-1], current, where))
            continue
        if current is None:
            raise FioError("%s: option %r outside any [section]" % (where, line))
        if line.startswith("include"):
            if depth >= 16:
                raise FioError("%s: include nested more than 16 deep (a loop?)" % where)
            name = line[len("include") + 1:]
            path = name if os.path.exists(name) else os.path.join(base_dir, name)
            try:
                with open(path, "rb") as f:
                    data = f.read()
            except OSError as e:
                raise FioError("%s: cannot include %r: %s" % (where, name, e.strerror or e)) from None
            inc = _read_sections(_decode(data, name), os.path.basename(path), os.path.dirname(path) or ".",
                                 depth + 1, nested=True)
            current.extend(inc[0][1])
            continue
        if "=" in line:
            key, _, value = line.partition("=")
            key = key.rstrip()
            if not key:
                raise FioError("%s: missing option name before '='" % where)
            try:
                expanded = _expand(value)
            except ValueProblem as e:
                sect = " [%s]" % sections[-1][0] if sections and not nested else ""
                raise FioError("%s%s: %s=%s: %s" % (where, sect, key, _cut(value), e)) from None
            unset = [n for n in _ENV_RE.findall(value) if n not in os.environ]
            if unset and not expanded:
                raise FioError("%s: %s=%s: ${%s} is not set, so the value is empty (fio substitutes an empty "
                               "string, and refuses the empty value)" % (where, key, value, unset[0]))
            current.append((key, expanded, where))
        else:
            current.append((line, None, where))
    if nested:
        return [("", current or [], source)]
    return sections


def _apply_section(job: JobSpec, opts: List[Line], section: str) -> None:
    # fio parses kb_base (a high-priority option) before the rest of its section
    ordered = [x for x in opts if x[0] == "kb_base"] + [x for x in opts if x[0] != "kb_base"]
    for key, value, where in ordered:
        try:
            apply_option(job, key, value, "%s [%s]" % (where, section) if section else where)
        except ValueProblem as e:   # from _expand's arithmetic
            raise FioError("%s: %s" % (where, e)) from None


def parse_fio(text: str, source: str = "", base_dir: str = ".") -> FioJobFile:
    """Parse job-file text into jobs with [global] applied."""
    source = source or "job file"
    sections = _read_sections(text, source, base_dir)
    defaults = JobSpec("global")
    global_echo: Dict[str, str] = {}
    jobs: List[JobSpec] = []
    iolog_global = None     # "FILE line N" of a read_iolog in [global]: a trace problem names that line
    global_lines: Dict[str, str] = {}   # option -> "FILE line N" of its last setting in [global]
    for name, opts, where in sections:
        iolog_here = next((w for k, _, w in reversed(opts) if k == "read_iolog"), None)
        if name.startswith("global"):
            iolog_global = iolog_here or iolog_global
            _apply_section(defaults, opts, "")
            for k, v, w in opts:
                global_lines[k] = w
                if v is not None:
                    global_echo[k] = v
            continue
        job = copy.deepcopy(defaults)
        job.name = name
        job.options = {}
        _apply_section(job, opts, name)
        lines = dict(global_lines, **{k: w for k, _, w in opts})
        _finish_job(job, source, [j.name for j in jobs], base_dir, iolog_here or iolog_global,
                    {k: "%s [%s]" % (w, name) for k, w in lines.items()})
        jobs.append(job)
    if not jobs:
        raise FioError("%s: no job sections (only [global]?)" % source)
    return FioJobFile(jobs, global_echo, source)


def _finish_job(job: JobSpec, source: str, earlier: List[str], base_dir: str = ".",
                iolog_where: Optional[str] = None, option_lines: Optional[Dict[str, str]] = None) -> None:
    where = "%s: job %r" % (source, job.name)
    # a check across options names the line of the one that sets the limit ("FILE line N [job]")
    at = lambda *keys: next((option_lines[k] for k in keys if option_lines and k in option_lines), where)
    if job.read_iolog is not None:
        _finish_replay(job, "%s [%s]" % (iolog_where, job.name) if iolog_where else where, base_dir)
    for key, n in job._zones.items():
        if not job.zonesize:
            raise FioError("%s: %s=%dz counts zones, which needs zonesize (the simulated paths are not zoned "
                           "devices that could tell)" % (at(key), key, n))
        if key == "size":
            job.size, job.size_percent = n * job.zonesize, None
        else:
            job.io_size = n * job.zonesize
    if job.wait_for is not None and job.wait_for not in earlier:
        raise FioError("%s: wait_for=%s names no job before it (fio refuses that)" % (at("wait_for"), job.wait_for))
    if job.time_based and not job.runtime_ns:
        # fio 3.33: "time_based requires a runtime/timeout setting", then runs without it
        job.time_based = False
        job.notes.append("job %r: time_based without runtime: fio ignores time_based and the job runs until "
                         "its size is done" % job.name)
    if job.number_ios and job.time_based:
        # fio 3.33's do_io loops on while time_based, whatever exceeds_number_ios says
        job.number_ios = None
        job.notes.append("job %r: number_ios with time_based: fio 3.33 ignores number_ios and the job runs "
                         "for its runtime" % job.name)
    elif job.number_ios:
        job.number_ios *= job.loops      # fio: exceeds_number_ios counts against number_ios x loops
        if job.ddir_mode == "trimwrite":
            # fio's do_io doubles number_ios for trimwrite (a trim and a write per block); it does so again
            # in each loop's pass, which this does not follow (loops > 1 with number_ios: fewer I/Os)
            job.number_ios *= 2
    if job.ddir_mode == "mix" and not getattr(job, "_rwmix_set", False):
        job.read_fraction = 0.5
    elif job.ddir_mode != "mix":
        job.read_fraction = 1.0 if job.ddir_mode == "read" else 0.0
    if job.set_iodepth(job.iodepth) and not job.burns_cpu:
        # fio runs a synchronous engine's I/O one at a time (its JSON still reports the option)
        job.notes.append("job %r: ioengine=%s is synchronous: fio caps the queue depth at 1 (iodepth=%d has no "
                         "effect; ioengine=libaio or io_uring keeps %d in flight)"
                         % (job.name, job.ioengine, job.iodepth_option, job.iodepth_option))
    if job.burns_cpu:
        _finish_cpu_burner(job, at("ioengine"))
    if job.thinktime_spin_ns > job.thinktime_ns:
        job.thinktime_spin_ns = job.thinktime_ns     # fio clamps it
    if any(job.rate_bps) and any(job.rate_iops):
        raise FioError("%s: rate and rate_iops are mutually exclusive (fio refuses both)" % at("rate_iops", "rate"))
    rated = [d for d in job.ddirs if job.rate_bps[d] or job.rate_iops[d]]
    if rated and len(rated) != len(job.ddirs):
        unrated = [DDIR_NAMES[d] for d in job.ddirs if d not in rated]
        job.notes.append("job %r: no rate for %s: those I/Os are not throttled" % (job.name, "/".join(unrated)))
    size = job.region_bytes(None)
    if size is not None and job.io_size is None and size < job.bs and not job.time_based and not job.burns_cpu:
        raise FioError("%s: size %d is smaller than the block size %d (fio refuses: size too small)"
                       % (at("size", "filesize", "bs", "blocksize"), size, job.bs))
    if size is not None and job.nrfiles > 1 and size // job.nrfiles < job.bs and not job.time_based:
        raise FioError("%s: size %d over nrfiles=%d leaves each file less than the block size %d (fio: "
                       "blocksize is larger than data set range)" % (at("nrfiles", "size", "filesize"), size,
                                                                    job.nrfiles, job.bs))


# what a replayed job's own pattern would add on top of the trace, which the replay does not model
_NOT_WITH_REPLAY = (("rate", lambda j: any(j.rate_bps) or any(j.rate_iops)), ("thinktime", lambda j: j.thinktime_ns),
                    ("verify", lambda j: j.verify), ("flow", lambda j: j.flow),
                    ("latency_target", lambda j: j.latency_target_ns), ("iodepth_low", lambda j: j.iodepth_low),
                    ("ioengine=cpuio", lambda j: j.burns_cpu))


def _finish_replay(job: JobSpec, where: str, base_dir: str) -> None:
    """read_iolog: find each trace (and its format), take a blktrace's depth when the job sets none."""
    for what, used in _NOT_WITH_REPLAY:
        if used(job):
            raise FioError("%s: %s with read_iolog is not modelled (the trace alone sets the I/O and its timing)"
                           % (where, what))
    names = split_names(job.read_iolog or "")
    if not names:
        raise FioError("%s: read_iolog names no file" % where)
    try:
        job.replay_sources = [find_source(n, base_dir) for n in names[:max(1, job.numjobs)]]
        first = job.replay_sources[0]
        job.replay_estimate = estimate_ios(first)
        if first.kind != "iolog" and not job.iodepth_given:
            # fio probes the deepest queue of the trace; a synchronous engine still caps it at 1
            depth = probe_depth(events_of(first))
            if not depth:
                # (fio: "found no ios in blktrace data"; e.g. a path of a request-based map: no queue events)
                raise TraceError("%s: no read, write or trim to replay (fio refuses such a trace)"
                                 % ", ".join(first.paths))
            job.set_iodepth(depth)
    except TraceError as e:
        raise FioError("%s: %s" % (where, e)) from None
    for src in job.replay_sources:
        job.notes.extend(n for n in source_notes(src) if n not in job.notes)


def _finish_cpu_burner(job: JobSpec, where: str) -> None:
    """fio's cpuio set-up: the job issues one 'I/O' at a time, each a spin of
    cpuchunks, and thinks cpuchunks x (100 - cpuload) / cpuload microseconds
    (integer, as fio computes it) after each one completes."""
    if not job.cpuload:
        raise FioError("%s: ioengine=cpuio needs cpuload= (fio: \"cpu thread needs rate\")" % where)
    load = min(job.cpuload, 100)              # fio caps it
    job.cpuload = load
    job.thinktime_ns = job.cpu_cycle_us * (100 - load) // load * 1000
    job.thinktime_spin_ns = 0
    job.thinktime_blocks = 1
    job.thinktime_blocks_type = "complete"
    if not (job.runtime_ns or job.number_ios or job.exit_on_io_done):
        raise FioError("%s: ioengine=cpuio without runtime=, number_ios= or exit_on_io_done=1 burns until fio "
                       "is killed; give one of them" % where)
    if job.cpumode == "qsort":
        job.notes.append("job %r: cpumode=qsort: each sort is taken to last cpuchunks (%d us); fio measures "
                         "the real CPU's sort time" % (job.name, job.cpu_cycle_us))


def sim_only(spec: JobSpec) -> Optional[str]:
    """What of this job only the simulator models ('' when live mode can run it)."""
    what = []
    if spec.burns_cpu:
        what.append("ioengine=cpuio")
    if spec.mixed_sizes:
        what.append("mixed block sizes")
    if TRIM in spec.ddirs:
        what.append("trims")
    if spec.open_loop and not spec.burns_cpu:
        what.append("rate/thinktime")
    if spec.verify and spec.do_verify:
        what.append("verify")
    if spec.flow or spec.wait_for:
        what.append("flow/wait_for")
    if spec.lat_log is not None or spec.bw_log is not None or spec.iops_log is not None:
        what.append("log files")
    if spec.read_iolog is not None:
        what.append("read_iolog")
    return ", ".join(what)


def _read_path(path: str) -> Tuple[bytes, str, str]:
    if path == "-":
        return sys.stdin.buffer.read(), "<stdin>", "."
    try:
        with open(path, "rb") as f:
            return f.read(), os.path.basename(path), os.path.dirname(path) or "."
    except OSError as e:
        raise FioError("cannot read job file %s: %s" % (path, e.strerror or e)) from None


def load_fio(path: str) -> FioJobFile:
    """Read a job file (``-``: standard input, as fio does)."""
    data, source, base = _read_path(path)
    return parse_fio(_decode(data, source), source, base)
