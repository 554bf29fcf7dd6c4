"""The fio option table: every job-file option mpathlab knows, declared once.

Like fio's own ``fio_options[]`` array, one descriptor per option (name,
aliases, value type, unit, range, default, help) plus what a *simulation*
does with it:

- ``MODELLED``: changes the simulated I/O stream or its report.
- ``NO_EFFECT``: accepted; it only matters to a real I/O engine, a real file
  or file system, or fio's own process (buffers, files, CPU affinity, ...).
  The I/O that reaches dm-multipath (its direction, size and timing) is the
  same with or without it.
- ``REFUSED``: would change what reaches multipath (or when the job ends) in
  a way the simulation does not model; a job file using it is refused by
  name, in one line.

The parser (:mod:`mpathlab.workload.fio`), its error messages,
``mpathlab fio-options`` and the option list of docs/formats.md are all produced
from this table (``python -m mpathlab.workload.fio_options --update-readme docs/formats.md``
rewrites that list; a test checks the page holds exactly that).

Value types follow fio 3.33's parse.c:

- ``size``: an integer with fio's suffixes (k, m, g, t, p with optional
  b/i/ib; under ``kb_base=1024``, the default, ``k`` means 1024 and ``kib``
  means 1000 -- fio's "inverted" compatibility rule); ``0x`` hex.
- ``int``: the same reader as ``size`` (fio lets ``iodepth=1k`` mean 1024).
- ``time``: an integer with suffix us/usec, ms/msec, s, m, h, d; a bare
  number is in the option's own unit (seconds for runtime, startdelay and
  ramp_time; microseconds for thinktime).
- ``bool``: 0 or 1; ``flag``: may appear without a value (means 1).
- ``choice``: one of the listed words; ``str``: any text.
- ``range``: ``lo-hi`` or ``lo:hi`` (sizes); ``bssplit``: ``size/pct:...``;
  ``float_list``: ``a:b:c``; ``cpus``: ``0-3,8``.
``triple`` options take fio's ``read,write,trim`` comma form.
"""
from __future__ import annotations

import sys
from typing import Dict, List, NamedTuple, Optional, Tuple

MODELLED = "modelled"
NO_EFFECT = "accepted without effect"
REFUSED = "refused"


class Opt(NamedTuple):
    name: str
    cls: str
    type: str
    help: str
    default: Optional[str] = None
    aliases: Tuple[str, ...] = ()
    unit: str = ""              # time: default unit of a bare number; size: "bytes"
    lo: Optional[int] = None
    hi: Optional[int] = None
    choices: Tuple[str, ...] = ()
    triple: bool = False        # read,write,trim comma form
    why: str = ""               # REFUSED: what it would change


S64_MAX = (1 << 63) - 1

# The engines of fio 3.33's engines/ directory, whichever a build includes (Debian's lists the first
# 33 in `fio --enghelp`; the others are optional libraries, and cpp_null is fio's example of an engine
# built apart).  Any other name fio tries to dlopen as a shared object and, failing, refuses the job
# ("fio: engine NAME not loadable"); a path or external:PATH is such a shared object.
FIO_ENGINES = frozenset((
    "cpuio", "mmap", "sync", "psync", "vsync", "pvsync", "pvsync2", "null", "net", "netsplice", "ftruncate",
    "filecreate", "filestat", "filedelete", "exec", "posixaio", "falloc", "e4defrag", "splice", "gfapi",
    "gfapi_async", "mtd", "sg", "io_uring", "io_uring_cmd", "nbd", "libaio", "rdma", "rados", "rbd", "pmemblk",
    "dev-dax", "libpmem",
    "dircreate", "dirstat", "dirdelete", "http", "ime_psync", "ime_psyncv", "ime_aio", "libcufile", "libhdfs",
    "libiscsi", "libzbc", "nfs", "xnvme", "dfs", "solarisaio", "windowsaio", "cpp_null"))

# ioengines that move no data through the block device: a job using one has
# nothing to simulate in a multipath simulation.
NO_BLOCK_IO_ENGINES = {
    "exec": "runs a program instead of doing I/O",
    "net": "does network I/O, not block I/O",
    "netsplice": "does network I/O, not block I/O",
    "dircreate": "creates directories (file-system metadata, not data I/O)",
    "dirdelete": "deletes directories (file-system metadata, not data I/O)",
    "dirstat": "stats directories (no data I/O)",
    "filecreate": "creates files (file-system metadata, not data I/O)",
    "filedelete": "deletes files (file-system metadata, not data I/O)",
    "filestat": "stats files (no data I/O)",
    "ftruncate": "truncates a file (no data I/O)",
    "page_fault": "touches anonymous memory, no storage at all",
}
# cpuio moves no data either, but what it does (keep a CPU busy) is part of
# the model: its clones burn the host's CPUs (sim/host.py) in cycles, as fio
# does, and I/O jobs sharing those CPUs see it.
CPU_BURN_ENGINE = "cpuio"
# Engines whose I/O units are file-system operations that do move data but
# not exactly as plain reads and writes: simulated as the job's plain I/O,
# with a note.
APPROXIMATE_ENGINES = {
    "falloc": "fallocate/punch-hole calls are simulated as plain writes/trims of the job's sizes",
    "e4defrag": "extent moves are simulated as plain writes of the job's sizes",
}

# Engines fio flags FIO_SYNCIO: each I/O completes inside its submission, so a
# job keeps one I/O in flight whatever its iodepth (fio 3.33: "both iodepth >= 1
# and synchronous I/O engine are selected, queue depth will be capped at 1"),
# and fio times no submissions (no slat).  psync is fio's default on Linux.
# The null engine is synchronous only at iodepth 1.  Engines not listed
# (libaio, io_uring, posixaio, external ones, ...) queue asynchronously.
SYNC_ENGINES = frozenset({"sync", "psync", "vsync", "pvsync", "pvsync2", "mmap", "splice", "e4defrag", "falloc",
                          "ftruncate", "filecreate", "filedelete", "filestat", "dircreate", "dirdelete", "dirstat",
                          "net", "netsplice", "dev-dax", "libpmem", "pmemblk", "mtd", "cpuio", "exec", "gfapi",
                          "http", "ime_psync", "ime_psyncv", "libzbc", "page_fault"})


def is_async_engine(ioengine: str, iodepth: int) -> bool:
    if ioengine == "null":
        return iodepth > 1
    return ioengine not in SYNC_ENGINES


RW_CHOICES = ("read", "write", "trim", "randread", "randwrite", "randtrim", "rw", "readwrite", "randrw",
              "trimwrite", "randtrimwrite")

_O = Opt
OPTIONS: List[Opt] = [
    # -- what the job does --------------------------------------------------
    _O("rw", MODELLED, "choice", "I/O pattern; sequential and random differ only in offsets, which the "
       "device models do not see ('rw=read:8k' offset modifiers are accepted)", "read", ("readwrite",),
       choices=RW_CHOICES),
    _O("rwmixread", MODELLED, "int", "percentage of a mixed workload that is reads", "50", lo=0, hi=100),
    _O("rwmixwrite", MODELLED, "int", "percentage of a mixed workload that is writes", "50", lo=0, hi=100),
    _O("bs", MODELLED, "size", "block size, or read,write,trim block sizes", "4096", ("blocksize",),
       "bytes", 1, S64_MAX, triple=True),
    _O("bsrange", MODELLED, "range", "block sizes drawn from lo-hi as fio draws them (lo + hi x uniform, "
       "aligned down to lo unless bs_unaligned, capped at hi), or read,write,trim ranges", None, ("blocksize_range",),
       "bytes", 1, S64_MAX, triple=True),
    _O("bssplit", MODELLED, "bssplit", "weighted block sizes 'size/percent:size/percent', or "
       "read,write,trim lists", None, unit="bytes"),
    _O("bs_unaligned", MODELLED, "flag", "mixed sizes are not aligned down to the smallest size", "0",
       ("blocksize_unaligned",)),
    _O("bs_is_seq_rand", REFUSED, "bool", "bs read,write means sequential,random", "0",
       why="block sizes by sequential/random instead of direction"),
    _O("iodepth", MODELLED, "int", "I/Os kept in flight by each job clone (closed loop); a synchronous "
       "ioengine (psync, fio's default; sync, mmap, ...) keeps 1, as fio caps it", "1", lo=1, hi=65536),
    _O("numjobs", MODELLED, "int", "clones of this job", "1", lo=1, hi=4096),
    _O("size", MODELLED, "size", "bytes per clone; absent: the whole device (the table's length x 512); "
       "N% of the device", None, unit="bytes", lo=1, hi=S64_MAX),
    _O("filesize", MODELLED, "size", "size of each file; the job's size when size is absent (x nrfiles)",
       None, unit="bytes", lo=1, hi=S64_MAX),
    _O("nrfiles", MODELLED, "int", "files per job; only multiplies filesize into the job's size", "1",
       ("nr_files",), lo=1, hi=1 << 31),
    _O("io_size", MODELLED, "size", "bytes of I/O per clone and loop (default: size); beyond the size, whole passes over the size "
       "until it is covered, as fio 3.33 counts", None, ("io_limit",),
       "bytes", 1, S64_MAX),
    _O("fill_device", MODELLED, "bool", "write until the device is full: size becomes the device size",
       "0", ("fill_fs",)),
    _O("loops", MODELLED, "int", "times the job repeats its size", "1", lo=1, hi=1 << 31),
    _O("number_ios", MODELLED, "int", "stop a clone after this many I/Os per loop, if the size is not done first; "
       "ignored with time_based, as fio 3.33 ignores it (0: no limit)", "0", lo=0, hi=S64_MAX),
    _O("runtime", MODELLED, "time", "stop a clone after this time (0: no limit)", "0", ("timeout",), "s",
       0, S64_MAX),
    _O("time_based", MODELLED, "flag", "run for the whole runtime, repeating the size; without a runtime "
       "the job runs until its size is done (fio 3.33 ignores time_based then)", "0"),
    _O("startdelay", MODELLED, "time", "start a clone this long after its group starts", "0", unit="s",
       lo=0, hi=S64_MAX),
    _O("ramp_time", MODELLED, "time", "accepted; not subtracted from the statistics (a note says so)", "0",
       unit="s", lo=0, hi=S64_MAX),
    _O("stonewall", MODELLED, "flag", "wait for every job before this one to finish", "0",
       ("wait_for_previous",)),
    _O("new_group", MODELLED, "flag", "start a new reporting group (what exitall's exit_what=group stops)",
       "0"),
    _O("name", MODELLED, "str", "job name (default: the section name)"),
    _O("description", MODELLED, "str", "free text"),
    _O("cpus_allowed", MODELLED, "cpus", "CPUs the clones run on (what io-affinity sees)"),
    _O("continue_on_error", MODELLED, "choice", "keep going after I/O errors", "none",
       choices=("none", "read", "write", "io", "verify", "all", "0", "1")),
    # -- open-loop arrivals --------------------------------------------------
    _O("rate", MODELLED, "size", "bandwidth cap per clone in bytes/s (read,write,trim); the job then "
       "submits on a schedule, no longer keeping iodepth in flight", None, unit="bytes/s", lo=0, hi=S64_MAX,
       triple=True),
    _O("rate_iops", MODELLED, "int", "I/O rate cap per clone (read,write,trim); open loop as for rate",
       None, lo=0, hi=1 << 32, triple=True),
    _O("rate_process", MODELLED, "choice", "linear: evenly spaced submissions; poisson: exponential gaps "
       "with the same mean", "linear", choices=("linear", "poisson")),
    _O("thinktime", MODELLED, "time", "idle time after every thinktime_blocks I/Os", "0", unit="us",
       lo=0, hi=S64_MAX),
    _O("thinktime_spin", MODELLED, "time", "part of thinktime spent spinning (same as idle here)", "0",
       unit="us", lo=0, hi=S64_MAX),
    _O("thinktime_blocks", MODELLED, "int", "I/Os between think times", "1", lo=1, hi=1 << 31),
    _O("thinktime_blocks_type", MODELLED, "choice", "complete: think once the batch completed; issue: "
       "after issuing it", "complete", choices=("complete", "issue")),
    _O("rate_min", NO_EFFECT, "size", "fio fails a job slower than this; the simulation reports the rate",
       None, ("ratemin",), "bytes/s", 0, S64_MAX, triple=True),
    _O("rate_iops_min", NO_EFFECT, "int", "as rate_min in IOPS", None, lo=0, hi=1 << 32, triple=True),
    _O("rate_cycle", NO_EFFECT, "int", "window for rate_min", "1000"),
    _O("rate_ignore_thinktime", REFUSED, "bool", "rate ignores thinktime", "0",
       why="a different arrival process"),
    _O("thinktime_iotime", REFUSED, "time", "think after this much I/O time", "0", unit="s",
       why="think time by elapsed I/O time"),
    # -- reporting -----------------------------------------------------------
    _O("percentile_list", MODELLED, "float_list", "latency percentiles reported (up to 20)"),
    _O("lat_percentiles", MODELLED, "bool", "report percentiles of total latency", "0"),
    _O("clat_percentiles", MODELLED, "bool", "report percentiles of completion latency", "1"),
    _O("slat_percentiles", NO_EFFECT, "bool", "submission latency is 0 in a simulation", "0"),
    _O("group_reporting", MODELLED, "flag", "report a job's clones together", "0"),
    _O("write_lat_log", MODELLED, "str", "write PREFIX_lat.N.log, PREFIX_clat.N.log and PREFIX_slat.N.log "
       "(fio's format); without a value the prefix is the job name"),
    _O("write_bw_log", MODELLED, "str", "write PREFIX_bw.N.log"),
    _O("write_iops_log", MODELLED, "str", "write PREFIX_iops.N.log"),
    _O("log_avg_msec", MODELLED, "int", "average log entries over this many ms (0: one entry per I/O)", "0",
       lo=0, hi=1 << 31),
    _O("log_offset", MODELLED, "bool", "add the offset column to logs (offsets are not modelled: 0)", "0"),
    _O("log_prio", MODELLED, "bool", "add the priority column to logs (always 0 here)", "0"),
    _O("per_job_logs", MODELLED, "bool", "one log per clone (0: one per job)", "1"),
    _O("log_compression", NO_EFFECT, "size", "compress logs in memory", "0"),
    _O("unified_rw_reporting", REFUSED, "choice", "sum directions in the report", "none",
       choices=("none", "mixed", "both", "0", "1", "2"), why="the report's shape"),
    # -- units ---------------------------------------------------------------
    _O("kb_base", MODELLED, "choice", "1024: k=1024 and kib=1000 (fio's inverted default); 1000: k=1000 "
       "and kib=1024", "1024", choices=("1024", "1000")),
    _O("unit_base", NO_EFFECT, "choice", "bits or bytes in fio's human output", "0",
       choices=("0", "1", "8")),
    # -- only matter to a real engine, file or process ------------------------
    _O("ioengine", NO_EFFECT, "str", "the engine of a real run; cpuio burns the host model's CPUs; other "
       "engines that move no data through the block device (%s) are refused"
       % ", ".join(sorted(NO_BLOCK_IO_ENGINES)), "psync"),
    _O("direct", NO_EFFECT, "bool", "O_DIRECT", "0"),
    _O("buffered", NO_EFFECT, "bool", "page-cache I/O", "1"),
    _O("sync", NO_EFFECT, "str", "O_SYNC/O_DSYNC (the device models have no write cache, so FUA costs "
       "nothing extra)", "none",
       choices=("none", "0", "sync", "1", "dsync")),
    _O("filename", NO_EFFECT, "str", "the file or device of a real run"),
    _O("filename_format", NO_EFFECT, "str", "file naming"),
    _O("directory", NO_EFFECT, "str", "directory for files"),
    _O("unique_filename", NO_EFFECT, "bool", "file naming", "1"),
    _O("opendir", NO_EFFECT, "str", "files from a directory"),
    _O("lockfile", NO_EFFECT, "str", "file locking", "none",
       choices=("none", "exclusive", "readwrite")),
    _O("openfiles", NO_EFFECT, "int", "files kept open"),
    _O("file_service_type", NO_EFFECT, "str", "which file gets the next I/O", "roundrobin",
       choices=("random", "zipf", "pareto", "normal", "gauss", "roundrobin", "sequential")),
    _O("create_on_open", NO_EFFECT, "bool", "file creation", "0"),
    _O("create_serialize", NO_EFFECT, "bool", "file creation", "1"),
    _O("create_fsync", NO_EFFECT, "bool", "file creation", "1"),
    _O("create_only", REFUSED, "bool", "only create files", "0", why="a run without I/O"),
    _O("allow_file_create", NO_EFFECT, "bool", "file creation", "1"),
    _O("allow_mounted_write", NO_EFFECT, "bool", "safety check of a real run", "0"),
    _O("fallocate", NO_EFFECT, "str", "file preallocation", "native",
       choices=("none", "native", "posix", "keep", "truncate", "0", "1")),
    _O("unlink", NO_EFFECT, "bool", "remove files afterwards", "0"),
    _O("unlink_each_loop", NO_EFFECT, "bool", "remove files after each loop", "0"),
    _O("pre_read", NO_EFFECT, "bool", "page-cache warm-up", "0"),
    _O("invalidate", NO_EFFECT, "bool", "drop the page cache", "1"),
    _O("overwrite", NO_EFFECT, "bool", "file layout", "0"),
    _O("end_fsync", NO_EFFECT, "bool", "fsync at the end (no data I/O on a raw device)", "0"),
    _O("fsync_on_close", NO_EFFECT, "bool", "fsync at close", "0"),
    _O("offset", NO_EFFECT, "size", "start offset (offsets are not modelled)", "0"),
    _O("offset_increment", NO_EFFECT, "size", "per-clone offset", "0"),
    _O("offset_align", NO_EFFECT, "size", "offset alignment", "0"),
    _O("blockalign", NO_EFFECT, "size", "offset alignment", None, ("ba",), triple=True),
    _O("randrepeat", NO_EFFECT, "bool", "repeatable random offsets", "1"),
    _O("allrandrepeat", NO_EFFECT, "bool", "repeatable random everything (simulations always are)", "0"),
    _O("randseed", NO_EFFECT, "int", "random seed of a real run (use --seed)"),
    _O("norandommap", NO_EFFECT, "flag", "offset bookkeeping", "0"),
    _O("softrandommap", NO_EFFECT, "bool", "offset bookkeeping", "0"),
    _O("random_generator", NO_EFFECT, "str", "offset generator", "tausworthe",
       choices=("tausworthe", "lfsr", "tausworthe64")),
    _O("random_distribution", NO_EFFECT, "str", "offset distribution (offsets are not modelled)", "random",
       choices=("random", "zipf", "pareto", "normal", "zoned", "zoned_abs")),
    _O("percentage_random", NO_EFFECT, "int", "random vs sequential offsets", "100"),
    _O("zonemode", NO_EFFECT, "str", "offset zones (offsets are not modelled; the zone resets fio issues in "
       "zbd mode are not simulated)", "none",
       choices=("none", "strided", "zbd")),
    _O("zonesize", MODELLED, "size", "zone size: what a size or io_size of Nz means (offsets in zones have "
       "no effect)", None, unit="bytes", lo=1, hi=S64_MAX),
    _O("zonerange", NO_EFFECT, "size", "offset zones"),
    _O("zoneskip", NO_EFFECT, "size", "offset zones"),
    _O("zonecapacity", NO_EFFECT, "size", "offset zones"),
    _O("max_open_zones", NO_EFFECT, "int", "zoned devices"),
    _O("zone_reset_threshold", NO_EFFECT, "str", "zoned devices"),
    _O("zone_reset_frequency", NO_EFFECT, "str", "zoned devices"),
    _O("read_beyond_wp", NO_EFFECT, "bool", "zoned devices", "0"),
    _O("iodepth_batch", NO_EFFECT, "int", "submission batching", "1", ("iodepth_batch_submit",)),
    _O("iodepth_batch_complete", NO_EFFECT, "int", "completion batching", "1",
       ("iodepth_batch_complete_min",)),
    _O("iodepth_batch_complete_max", NO_EFFECT, "int", "completion batching"),
    _O("iodepth_low", MODELLED, "int", "once iodepth I/Os are in flight, refill only when no more than this "
       "many are (fio's low-water mark; default and 0: iodepth)", "0", lo=0, hi=65536),
    _O("io_submit_mode", NO_EFFECT, "str", "inline or offload submission", "inline",
       choices=("inline", "offload")),
    _O("threads", NO_EFFECT, "int", "an option of fio's tiobench profile, which fio 3.33 accepts in any job"),
    _O("thread", NO_EFFECT, "flag", "threads instead of processes", "0"),
    _O("cpus_allowed_policy", NO_EFFECT, "str", "CPU binding of a real run", "shared",
       choices=("shared", "split")),
    _O("cpumask", NO_EFFECT, "str", "CPU binding of a real run"),
    _O("numa_cpu_nodes", NO_EFFECT, "str", "NUMA binding"),
    _O("numa_mem_policy", NO_EFFECT, "str", "NUMA binding"),
    _O("nice", NO_EFFECT, "int", "process priority"),
    _O("prio", NO_EFFECT, "int", "I/O priority (the device models have no priorities)"),
    _O("prioclass", NO_EFFECT, "int", "I/O priority class"),
    _O("cmdprio", NO_EFFECT, "str", "per-command priority"),
    _O("cmdprio_class", NO_EFFECT, "str", "per-command priority"),
    _O("cmdprio_percentage", NO_EFFECT, "str", "per-command priority"),
    _O("cmdprio_bssplit", NO_EFFECT, "str", "per-command priority"),
    _O("hipri", NO_EFFECT, "flag", "polled I/O", "0"),
    _O("fixedbufs", NO_EFFECT, "flag", "io_uring buffers", "0"),
    _O("registerfiles", NO_EFFECT, "flag", "io_uring files", "0"),
    _O("sqthread_poll", NO_EFFECT, "flag", "io_uring submission thread", "0"),
    _O("sqthread_poll_cpu", NO_EFFECT, "int", "io_uring submission thread"),
    _O("nonvectored", NO_EFFECT, "int", "io_uring opcodes"),
    _O("userspace_reap", NO_EFFECT, "flag", "libaio reaping", "0"),
    _O("mem", NO_EFFECT, "str", "buffer memory", "malloc", ("iomem",),
       choices=("malloc", "shm", "shmhuge", "mmap", "mmapshared", "mmaphuge", "cudamalloc")),
    _O("iomem_align", NO_EFFECT, "int", "buffer alignment", None, ("mem_align",)),
    _O("lockmem", NO_EFFECT, "size", "locked memory", "0"),
    _O("zero_buffers", NO_EFFECT, "flag", "buffer contents", "0"),
    _O("refill_buffers", NO_EFFECT, "flag", "buffer contents", "0"),
    _O("scramble_buffers", NO_EFFECT, "bool", "buffer contents", "1"),
    _O("buffer_pattern", NO_EFFECT, "str", "buffer contents"),
    _O("buffer_compress_percentage", NO_EFFECT, "int", "buffer contents"),
    _O("buffer_compress_chunk", NO_EFFECT, "size", "buffer contents"),
    _O("dedupe_percentage", NO_EFFECT, "int", "buffer contents"),
    _O("dedupe_mode", NO_EFFECT, "str", "buffer contents",
       choices=("repeat", "working_set")),
    _O("dedupe_global", NO_EFFECT, "bool", "buffer contents"),
    _O("dedupe_working_set_percentage", NO_EFFECT, "int", "buffer contents"),
    _O("gtod_reduce", NO_EFFECT, "flag", "fio's own clock calls", "0"),
    _O("clocksource", NO_EFFECT, "str", "fio's clock", "gettimeofday",
       choices=("gettimeofday", "clock_gettime", "cpu")),
    _O("disable_lat", NO_EFFECT, "bool", "skip latency accounting in a real run", "0"),
    _O("disable_clat", NO_EFFECT, "bool", "skip latency accounting in a real run", "0"),
    _O("disable_slat", NO_EFFECT, "bool", "skip latency accounting in a real run", "0"),
    _O("disable_bw_measurement", NO_EFFECT, "bool", "skip accounting in a real run", "0",
       ("disable_bw",)),
    _O("significant_figures", NO_EFFECT, "int", "human output", "4"),
    _O("serialize_overlap", NO_EFFECT, "flag", "overlapping offsets", "0"),
    _O("ignore_error", NO_EFFECT, "str", "error numbers treated as success (simulated errors are path "
       "errors, see continue_on_error)"),
    _O("error_dump", NO_EFFECT, "bool", "error messages", "1"),
    _O("exitall_on_error", MODELLED, "flag", "when a job stops at an I/O error, stop the others as exitall "
       "does", "0"),
    _O("skip_bad", NO_EFFECT, "bool", "mtd bad blocks", "0"),
    _O("block_error_percentiles", NO_EFFECT, "bool", "trim error report", "0"),
    _O("donorname", NO_EFFECT, "str", "e4defrag donor file"),
    _O("inplace", NO_EFFECT, "int", "e4defrag option"),
    _O("cpuload", MODELLED, "int", "cpuio: percent of a CPU each clone burns (required; above 100 means "
       "100): spins of cpuchunks, then sleeps cpuchunks x (100 - cpuload) / cpuload", None, lo=0, hi=1 << 31),
    _O("cpuchunks", MODELLED, "int", "cpuio: length of one burn cycle in microseconds", "50000", lo=1,
       hi=1 << 31),
    _O("cpumode", MODELLED, "choice", "cpuio: noop spins; qsort sorts, and fio sizes each sleep from the "
       "sort's measured time (here each sort takes cpuchunks: the real CPU's speed is not modelled)",
       "noop", choices=("noop", "qsort")),
    _O("exit_on_io_done", MODELLED, "bool", "cpuio: the burner ends once every job doing I/O has ended", "0"),
    _O("program", NO_EFFECT, "str", "exec engine option"),
    _O("arguments", NO_EFFECT, "str", "exec engine option"),
    _O("grace_time", NO_EFFECT, "int", "exec engine option"),
    _O("std_redirect", NO_EFFECT, "bool", "exec engine option"),
    _O("hostname", NO_EFFECT, "str", "network engine option"),
    _O("port", NO_EFFECT, "int", "network engine option"),
    _O("protocol", NO_EFFECT, "str", "network engine option", None, ("proto",)),
    _O("listen", NO_EFFECT, "flag", "network engine option"),
    _O("pingpong", NO_EFFECT, "flag", "network engine option"),
    _O("ttl", NO_EFFECT, "int", "network engine option"),
    _O("busy_poll", NO_EFFECT, "bool", "engine polling option"),
    _O("clientname", NO_EFFECT, "str", "rbd/rados engine option"),
    _O("pool", NO_EFFECT, "str", "rbd/rados engine option"),
    _O("rbdname", NO_EFFECT, "str", "rbd engine option"),
    _O("conf", NO_EFFECT, "str", "rados engine option"),
    _O("volume", NO_EFFECT, "str", "gfapi engine option"),
    _O("brick", NO_EFFECT, "str", "gfapi engine option"),
    _O("sg_write_mode", NO_EFFECT, "str", "sg engine option"),
    _O("cmd_type", NO_EFFECT, "str", "io_uring_cmd engine option"),
    _O("namenode", NO_EFFECT, "str", "libhdfs engine option"),
    _O("hdfsdirectory", NO_EFFECT, "str", "libhdfs engine option"),
    _O("chunk_size", NO_EFFECT, "size", "libhdfs engine option"),
    _O("exitall", MODELLED, "flag", "(for the whole run, as in fio) when a job finishes, stop the others "
       "named by its exit_what: they issue nothing more and end when their I/O in flight completes", "0"),
    _O("exit_what", MODELLED, "choice", "what exitall stops: group (the job's reporting group, started by "
       "stonewall or new_group), stonewall (the running stonewall group), all", "group",
       choices=("group", "stonewall", "all")),
    # -- change what reaches multipath, not modelled --------------------------
    _O("verify", MODELLED, "str", "verify written data: after its writes (and trims) the job reads every "
       "written block back, at the same depth, once per run (fio: once per loop); 0: off; the method "
       "(md5, crc32c, ...) only names what fio would check", "0",
       choices=("0", "md5", "crc64", "crc32", "crc32c-intel", "crc32c", "crc16", "crc7", "sha1", "sha256",
                "sha512", "sha3-224", "sha3-256", "sha3-384", "sha3-512", "xxhash", "meta", "pattern", "null")),
    _O("do_verify", MODELLED, "bool", "run the read-back phase (only with verify)", "1"),
    _O("verify_backlog", MODELLED, "int", "read back after every N written blocks instead of at the end",
       "0", lo=0, hi=S64_MAX),
    _O("verify_fatal", NO_EFFECT, "bool", "stop at a verify error (simulated data always verifies)", "0"),
    _O("verify_dump", NO_EFFECT, "bool", "dump bad blocks", "0"),
    _O("verify_async", NO_EFFECT, "int", "verify threads", "0"),
    _O("verify_pattern", NO_EFFECT, "str", "verify data pattern"),
    _O("verify_interval", NO_EFFECT, "size", "verify header interval"),
    _O("verify_offset", NO_EFFECT, "size", "verify header offset"),
    _O("verify_state_save", NO_EFFECT, "bool", "verify state file", "1"),
    _O("verify_only", REFUSED, "flag", "only verify", why="a read-only run instead of the writes"),
    _O("flow", MODELLED, "int", "weight in fio's token-based flow control: a job of a flow_id group issues "
       "only while its share of the group's I/Os is at most its share of the weights", "0", lo=0, hi=1024),
    _O("flow_id", MODELLED, "int", "flow-control group", "0", lo=0, hi=1 << 31),
    _O("flow_sleep", MODELLED, "int", "microseconds a held job waits before retrying (0: until another job "
       "of its group issues)", "0", unit="us", lo=0, hi=1 << 31),
    _O("latency_target", MODELLED, "time", "fio's depth search: start at depth 1, double while the "
       "latency_percentile of the I/Os of each latency_window stay under this latency, bisect down when not, "
       "then run one more window at the depth found and end (statistics are from that window)", "0",
       unit="us", lo=0, hi=S64_MAX),
    _O("latency_window", MODELLED, "time", "window of the latency_target search", "0", unit="us", lo=0,
       hi=S64_MAX),
    _O("latency_percentile", MODELLED, "float_list", "percentage of I/Os that must meet latency_target", "100"),
    _O("latency_run", MODELLED, "bool", "keep adjusting the depth for the whole run instead of ending", "0"),
    _O("steadystate", NO_EFFECT, "str", "fio may end a job early once it is steady; a simulated run is "
       "stationary and runs its whole runtime (a note says so)", None, ("ss",),
       choices=("iops", "iops_slope", "bw", "bw_slope")),
    _O("steadystate_duration", NO_EFFECT, "time", "steady-state window", None, ("ss_dur",), "s"),
    _O("steadystate_ramp_time", NO_EFFECT, "time", "steady-state ramp", None, ("ss_ramp",), "s"),
    _O("wait_for", MODELLED, "str", "start once every clone of the named (earlier) job has finished"),
    # -- trace replay (workload/trace_replay.py, docs/traces.md) ---------------
    _O("read_iolog", MODELLED, "str", "replay a trace instead of the job's own pattern: a fio iolog (version 2 "
       "or 3, as write_iolog writes it), a blktrace binary (one file, e.g. blkparse -d's dump; or NAME for the "
       "per-CPU files NAME.blktrace.N) or blkparse's text; NAME1:NAME2 gives clone N the Nth (modulo); a "
       "relative name is tried as given, then beside the job file"),
    _O("replay_no_stall", MODELLED, "bool", "replay as fast as the queue depth allows, ignoring the trace's "
       "timing (and version 2's waits)", "0"),
    _O("replay_time_scale", MODELLED, "int", "percent of the trace's I/O rate: 200 replays its gaps at half "
       "their length", "100", lo=1, hi=(1 << 32) - 1),
    _O("replay_redirect", NO_EFFECT, "str", "replay every trace device onto one device (the simulation always "
       "replays onto the simulated multipath device)"),
    _O("replay_align", MODELLED, "int", "align replayed offsets down to this power of 2 (a blktrace's byte "
       "counts round up to it)", "0", lo=0, hi=(1 << 32) - 1),
    _O("replay_scale", MODELLED, "int", "divide replayed offsets by this", "1", lo=0, hi=(1 << 32) - 1),
    _O("replay_skip", MODELLED, "str", "directions a blktrace replay drops: read,write,trim,sync (fio 3.33 "
       "applies it to blktraces only)"),
    _O("read_iolog_chunked", NO_EFFECT, "bool", "read the trace in parts (mpathlab always streams it)", "0"),
    _O("merge_blktrace_file", REFUSED, "str", "merge the read_iolog blktraces into this file",
       why="the trace replayed (fio 3.33's merge fails at the first event: name the per-CPU files' NAME in "
       "read_iolog, which merges them by time)"),
    _O("merge_blktrace_scalars", REFUSED, "float_list", "time scale of each merged trace",
       why="the trace replayed (merge_blktrace_file)"),
    _O("merge_blktrace_iters", REFUSED, "float_list", "passes of each merged trace",
       why="the trace replayed (merge_blktrace_file)"),
    _O("write_iolog", NO_EFFECT, "str", "record an I/O log of a real run"),
    _O("fsync", REFUSED, "int", "fsync every N writes", "0", why="extra flush requests"),
    _O("fdatasync", REFUSED, "int", "fdatasync every N writes", "0", why="extra flush requests"),
    _O("sync_file_range", REFUSED, "str", "sync_file_range every N writes", why="extra flush requests"),
    _O("trim_percentage", REFUSED, "int", "trim verified blocks", why="extra trims"),
]


def _build() -> Dict[str, Opt]:
    by_name: Dict[str, Opt] = {}
    for o in OPTIONS:
        for n in (o.name,) + o.aliases:
            if n in by_name:
                raise RuntimeError("fio option %s declared twice" % n)
            by_name[n] = o
    return by_name


BY_NAME = _build()


def lookup(name: str) -> Optional[Opt]:
    return BY_NAME.get(name)


def describe(o: Opt) -> str:
    """One line of help: name (aliases) type [unit] default -- help."""
    bits = [o.name]
    if o.aliases:
        bits.append("(%s)" % ", ".join(o.aliases))
    t = o.type
    if o.unit and o.type == "time":
        t += ", bare number in %s" % o.unit
    elif o.unit:
        t += ", " + o.unit
    if o.triple:
        t += ", r,w,t"
    if o.choices:
        t += ": " + "|".join(o.choices)
    if o.lo is not None and o.hi is not None and (o.lo, o.hi) != (0, S64_MAX):
        t += ", %d..%d" % (o.lo, o.hi)
    bits.append("[%s]" % t)
    if o.default is not None:
        bits.append("default %s" % o.default)
    text = " ".join(bits) + " -- " + o.help
    if o.cls == REFUSED:
        text += " (refused: it would change %s)" % o.why
    return text


def listing() -> str:
    """The --help-style listing, grouped by class, within 100 columns."""
    from ..klog import wrap
    out: List[str] = []
    for cls in (MODELLED, NO_EFFECT, REFUSED):
        out.append("%s:" % cls)
        for o in OPTIONS:
            if o.cls == cls:
                out += wrap("  " + describe(o), " " * 6)
    return "\n".join(out)


def markdown() -> str:
    """The option list of docs/formats.md (checked by a test against that page)."""
    lines = ["<!-- fio options: generated by `python -m mpathlab.workload.fio_options --markdown` -->", ""]
    for cls, title in ((MODELLED, "Modelled"), (NO_EFFECT, "Accepted without effect"), (REFUSED, "Refused")):
        lines.append("**%s:** " % title + ", ".join(
            "`%s`" % o.name + (" (%s)" % ", ".join("`%s`" % a for a in o.aliases) if o.aliases else "")
            for o in OPTIONS if o.cls == cls))
        lines.append("")
    lines.append("<!-- end of fio options -->")
    return "\n".join(lines)


def update_readme(path: str) -> None:
    """Replace the generated list in a Markdown page (between its two markers)."""
    with open(path) as f:
        text = f.read()
    start = text.index("<!-- fio options: generated")
    end = text.index("<!-- end of fio options -->") + len("<!-- end of fio options -->")
    with open(path, "w") as f:
        f.write(text[:start] + markdown() + text[end:])


if __name__ == "__main__":   # pragma: no cover - a tiny generator script
    if "--update-readme" in sys.argv:
        update_readme(sys.argv[sys.argv.index("--update-readme") + 1])
    else:
        print(markdown() if "--markdown" in sys.argv else listing())
