"""fio job files: the INI subset a simulated run understands.

``[global]`` sets defaults for the jobs below it, each other section is a
job; ``;`` and ``#`` start comments; ``${VAR}`` expands from the environment;
a line without ``=`` is a boolean flag.  Options that only matter to real
I/O engines (ioengine, direct, filename, ...) are accepted and have no effect
on a simulation; options we do not model are refused with a clear error
rather than silently ignored.
"""
from __future__ import annotations

import os
import re
from typing import Dict, List, Optional, Tuple

from ..units import UnitError, parse_duration_ns, parse_size


class FioError(ValueError):
    """A job file problem; the message names the file, line and option."""


RW_MODES = {"read": (1.0, False), "write": (0.0, False), "randread": (1.0, True),
            "randwrite": (0.0, True), "rw": (None, False), "readwrite": (None, False),
            "randrw": (None, True)}

# Options that change what a simulation does.
MODELLED = {"rw", "readwrite", "bs", "blocksize", "iodepth", "size", "numjobs", "runtime", "time_based",
            "rwmixread", "rwmixwrite", "name", "percentile_list", "lat_percentiles", "clat_percentiles",
            "group_reporting", "stonewall", "new_group", "startdelay", "io_size", "io_limit", "number_ios",
            "ramp_time", "cpus_allowed", "description", "continue_on_error"}
# Accepted for compatibility with real job files; no effect on a simulation.
NO_EFFECT = {"ioengine", "direct", "buffered", "filename", "filename_format", "directory", "randrepeat",
             "allrandrepeat", "norandommap", "random_generator", "iodepth_batch", "iodepth_batch_submit",
             "iodepth_batch_complete", "iodepth_batch_complete_min", "iodepth_batch_complete_max",
             "iodepth_low", "refill_buffers", "end_fsync", "fsync_on_close", "gtod_reduce", "thread",
             "invalidate", "overwrite", "verify", "do_verify", "group_reporting", "unified_rw_reporting",
             "disable_lat", "disable_clat", "disable_slat", "randseed", "offset", "file_service_type",
             "nrfiles", "kb_base", "unit_base", "exitall", "exitall_on_error",
             "log_avg_msec", "write_lat_log", "write_bw_log", "write_iops_log", "per_job_logs",
             "cpus_allowed_policy", "hipri", "fixedbufs", "registerfiles", "sqthread_poll", "userspace_reap",
             "allow_file_create", "lockmem", "zero_buffers", "scramble_buffers", "buffer_compress_percentage",
             "dedupe_percentage", "clocksource", "significant_figures", "serialize_overlap"}
VALUE_OPTIONAL = {"time_based", "group_reporting", "stonewall", "new_group", "norandommap", "direct",
                  "thread", "lat_percentiles", "clat_percentiles", "refill_buffers", "end_fsync",
                  "gtod_reduce", "randrepeat", "allrandrepeat", "exitall", "hipri", "fixedbufs",
                  "unified_rw_reporting", "zero_buffers", "scramble_buffers", "overwrite", "invalidate",
                  "disable_lat", "disable_clat", "disable_slat", "per_job_logs", "serialize_overlap",
                  "continue_on_error", "allow_file_create", "lockmem", "buffered"}


class JobSpec:
    """One fio job after [global] defaults are applied."""

    def __init__(self, name: str):
        self.name = name
        self.rw = "read"
        self.read_fraction = 1.0
        self.random = False
        self.bs = 4096
        self.iodepth = 1
        self.size: Optional[int] = None
        self.io_size: Optional[int] = None
        self.number_ios: Optional[int] = None
        self.numjobs = 1
        self.runtime_ns: Optional[int] = None
        self.time_based = False
        self.startdelay_ns = 0
        self.percentile_list: Optional[List[float]] = None
        self.lat_percentiles = False
        self.clat_percentiles = True
        self.group_reporting = False
        self.stonewall = False
        # fio stops a job at its first I/O error unless continue_on_error says otherwise.
        self.continue_on_error = False
        self.cpus_allowed: Optional[List[int]] = None   # the CPUs the job's clones run on
        self.notes: List[str] = []
        self.options: Dict[str, str] = {}   # what the file said, for the JSON "job options"

    @property
    def total_ios(self) -> Optional[int]:
        """I/Os one clone issues, or None when only the runtime bounds it."""
        if self.number_ios:
            return self.number_ios
        size = self.io_size or self.size
        if size is None:
            return None
        return max(1, size // self.bs)

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


_ENV_RE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def _expand_env(text: str, where: str) -> str:
    def sub(m):
        v = os.environ.get(m.group(1))
        if v is None:
            raise FioError("%s: environment variable ${%s} is not set" % (where, m.group(1)))
        return v
    return _ENV_RE.sub(sub, text)


def _read_sections(text: str, source: str) -> List[Tuple[str, List[Tuple[str, Optional[str], int]]]]:
    sections: List[Tuple[str, List[Tuple[str, Optional[str], int]]]] = []
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line[0] in ";#":
            continue
        where = "%s line %d" % (source or "job file", lineno)
        if line.startswith("["):
            if not line.endswith("]") or len(line) < 3:
                raise FioError("%s: malformed section header %r" % (where, raw.strip()))
            sections.append((line[1:-1].strip(), []))
            continue
        if not sections:
            raise FioError("%s: option %r outside any [section]" % (where, line))
        line = _expand_env(line, where)
        if "=" in line:
            key, _, value = line.partition("=")
            key, value = key.strip().lower(), value.strip()
            if not key:
                raise FioError("%s: missing option name before '='" % where)
            sections[-1][1].append((key, value, lineno))
        else:
            sections[-1][1].append((line.lower(), None, lineno))
    return sections


def _bool(value: Optional[str], key: str, where: str) -> bool:
    if value is None or value == "":
        return True
    v = value.lower()
    if v in ("1", "true", "yes", "on"):
        return True
    if v in ("0", "false", "no", "off"):
        return False
    raise FioError("%s: %s takes 0 or 1, not %r" % (where, key, value))


def _int(value: Optional[str], key: str, where: str, lo: int = 0, hi: int = 1 << 31) -> int:
    try:
        v = int(str(value).strip())
    except (TypeError, ValueError):
        raise FioError("%s: %s needs a whole number, not %r" % (where, key, value)) from None
    if not lo <= v <= hi:
        raise FioError("%s: %s must be between %d and %d, got %d" % (where, key, lo, hi, v))
    return v


def _apply(job: JobSpec, key: str, value: Optional[str], where: str) -> None:
    if key not in MODELLED and key not in NO_EFFECT:
        raise FioError("%s: unknown or unsupported fio option %r (supported: %s)"
                       % (where, key, ", ".join(sorted(MODELLED))))
    if value is None and key not in VALUE_OPTIONAL:
        raise FioError("%s: option %r needs a value (%s=...)" % (where, key, key))
    if value is not None and value == "" and key not in VALUE_OPTIONAL:
        raise FioError("%s: option %r has an empty value" % (where, key))
    if key not in ("name", "description"):
        if value is None and key in ("time_based",):
            pass  # fio does not echo valueless booleans in "job options"
        else:
            job.options[key] = value if value is not None else ""
    try:
        if key in ("rw", "readwrite"):
            mode = value.split(":")[0].lower()
            if mode not in RW_MODES:
                raise FioError("%s: rw=%s is not one of %s" % (where, value, ", ".join(sorted(RW_MODES))))
            job.rw = mode
            frac, job.random = RW_MODES[mode]
            if frac is not None:
                job.read_fraction = frac
            elif job.read_fraction in (0.0, 1.0):
                job.read_fraction = 0.5
        elif key in ("bs", "blocksize"):
            parts = value.split(",")
            sizes = [parse_size(p, "bs") for p in parts if p]
            if len(set(sizes)) > 1:
                raise FioError("%s: different read/write block sizes (bs=%s) are not supported" % (where, value))
            if not sizes or sizes[0] <= 0:
                raise FioError("%s: bs must be a positive size, got %r" % (where, value))
            job.bs = sizes[0]
        elif key == "iodepth":
            job.iodepth = _int(value, key, where, 1, 65536)
        elif key == "numjobs":
            job.numjobs = _int(value, key, where, 1, 4096)
        elif key in ("size", "io_size", "io_limit"):
            if value.endswith("%"):
                raise FioError("%s: %s=%s needs a real file to take a percentage of; give a byte count"
                               % (where, key, value))
            v = parse_size(value, key)
            if v <= 0:
                raise FioError("%s: %s must be positive" % (where, key))
            if key == "size":
                job.size = v
            else:
                job.io_size = v
        elif key == "number_ios":
            job.number_ios = _int(value, key, where, 1, 1 << 62)
        elif key == "runtime":
            job.runtime_ns = parse_duration_ns(value, "runtime", default_unit="s")
            if job.runtime_ns <= 0:
                raise FioError("%s: runtime must be positive" % where)
        elif key == "startdelay":
            job.startdelay_ns = parse_duration_ns(value, "startdelay", default_unit="s")
        elif key == "ramp_time":
            parse_duration_ns(value, "ramp_time", default_unit="s")
            job.notes.append("ramp_time is not modelled: every I/O counts from the start")
        elif key == "time_based":
            job.time_based = _bool(value, key, where)
        elif key in ("rwmixread", "rwmixwrite"):
            pct = _int(value, key, where, 0, 100)
            job.read_fraction = pct / 100.0 if key == "rwmixread" else 1 - pct / 100.0
        elif key == "percentile_list":
            vals = [float(x) for x in value.split(":") if x]
            if not vals or len(vals) > 20 or any(not 0 <= v <= 100 for v in vals):
                raise FioError("%s: percentile_list takes up to 20 values in [0, 100] separated by ':'" % where)
            job.percentile_list = vals
        elif key == "lat_percentiles":
            job.lat_percentiles = _bool(value, key, where)
        elif key == "clat_percentiles":
            job.clat_percentiles = _bool(value, key, where)
        elif key == "group_reporting":
            job.group_reporting = _bool(value, key, where)
        elif key == "cpus_allowed":
            cpus = []
            for part in value.split(","):
                part = part.strip()
                lo, sep, hi = part.partition("-")
                if not lo.isdigit() or (sep and not hi.isdigit()):
                    raise FioError("%s: cpus_allowed takes CPU numbers and ranges like 0-3,8, not %r"
                                   % (where, value))
                a, b = int(lo), int(hi) if sep else int(lo)
                if b < a or b > 4095:
                    raise FioError("%s: bad CPU range %r in cpus_allowed" % (where, part))
                cpus.extend(range(a, b + 1))
            job.cpus_allowed = sorted(set(cpus))
        elif key == "continue_on_error":
            v = (value or "").lower()
            if v not in ("", "none", "0", "read", "write", "io", "verify", "all", "1"):
                raise FioError("%s: continue_on_error takes none, read, write, io, verify or all, not %r"
                               % (where, value))
            job.continue_on_error = v not in ("none", "0")
        elif key == "stonewall":
            job.stonewall = _bool(value, key, where)
    except UnitError as e:
        raise FioError("%s: %s" % (where, e)) from None
    except ValueError as e:
        if isinstance(e, FioError):
            raise
        raise FioError("%s: bad value %r for %s" % (where, value, key)) from None


def parse_fio(text: str, source: str = "") -> FioJobFile:
    """Parse job-file text into jobs with [global] applied."""
    sections = _read_sections(text, source)
    global_opts: List[Tuple[str, Optional[str], int]] = []
    jobs: List[JobSpec] = []
    global_echo: Dict[str, str] = {}
    for name, opts in sections:
        if name.lower() == "global":
            global_opts.extend(opts)
            for k, v, _ in opts:
                if v is not None:
                    global_echo[k] = v
            # validate global options once
            probe = JobSpec("global")
            for k, v, ln in opts:
                _apply(probe, k, v, "%s line %d" % (source or "job file", ln))
            continue
        job = JobSpec(name)
        for k, v, ln in global_opts:
            _apply(job, k, v, "%s line %d" % (source or "job file", ln))
        job.options = {}
        for k, v, ln in opts:
            _apply(job, k, v, "%s line %d [%s]" % (source or "job file", ln, name))
        for k, v, _ in opts:
            if k == "name" and v:
                job.name = v
        jobs.append(job)
    if not jobs:
        raise FioError("%s: no job sections (only [global]?)" % (source or "job file"))
    for job in jobs:
        if job.total_ios is None and not job.runtime_ns:
            raise FioError("%s: job %r has neither size nor runtime; the simulation needs one to end"
                           % (source or "job file", job.name))
        if job.time_based and not job.runtime_ns:
            raise FioError("%s: job %r is time_based but has no runtime" % (source or "job file", job.name))
    return FioJobFile(jobs, global_echo, source)


def load_fio(path: str) -> FioJobFile:
    try:
        with open(path) as f:
            text = f.read()
    except OSError as e:
        raise FioError("cannot read job file %s: %s" % (path, e.strerror or e)) from None
    return parse_fio(text, os.path.basename(path))
