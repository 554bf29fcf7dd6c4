"""The collector: reads a host (through a Source) into a :class:`Capture`: its dm-multipath maps, each
path's queue and device kind, each path's service time over a window, NVMe subsystems, the kernel
release and the CPU count. Everything it could not read is kept as a note, never filled in.
"""
from __future__ import annotations

import re
import time
from typing import Dict, List, Optional, Tuple

from ..target.status_parse import StatusParseError, parse_status_info, split_dmsetup_output
from .parsers import (MultipathTable, kernel_series, parse_cpu_list, parse_devt, parse_diskstats, parse_hz,
                      parse_inflight, parse_multipath_params, parse_proc_devices, parse_scheduler, parse_stat,
                      stat_delta)
from .source import Source

# /proc/devices block driver names -> topology kinds (profiles.environment.DEVICE_KINDS)
MAJOR_KINDS = {"sd": "scsi", "nullb": "null_blk", "virtblk": "virtio", "loop": "loop",
               "device-mapper": "dm", "md": "md", "nvme": "nvme"}
NAME_KINDS = ((r"nvme\d+n\d+$", "nvme"), (r"nullb\d+$", "null_blk"), (r"sd[a-z]+$", "scsi"),
              (r"vd[a-z]+$", "virtio"), (r"loop\d+$", "loop"), (r"dm-\d+$", "dm"), (r"md\d+$", "md"))
# the directions whose completions the window's service time rests on (flushes carry no data)
DATA_DIRECTIONS = ("read", "write", "discard")
MPATH_UUID_PREFIX = "mpath-"
SAMPLES_PER_S = 10           # in-flight samples a second during the window
MIN_SAMPLES = 5              # fewer: Little's law is not used     # multipath-tools names its maps' uuids so (libmultipath/devmapper.c)


class PathCapture:
    def __init__(self, name: str, devt: Tuple[int, int], sysdir: str = ""):
        self.name = name
        self.devt = devt
        self.sysdir = sysdir or "/sys/block/" + name     # where its stat and inflight are
        self.kind: Optional[str] = None
        self.kind_from = ""
        self.queue: Dict[str, object] = {}     # scheduler, nr_requests, nr_hw_queues, nr_tags, queue_depth, ...
        self.window: Dict[str, Tuple[int, int, int]] = {}   # direction -> (I/Os completed, ticks ms, sectors)
        self.refused: Dict[str, int] = {}     # direction -> I/Os counted that were refused dispatches
        self.inflight: List[Tuple[int, int]] = []        # (reads, writes) at the window's start and end
        self.driver_inflight: Optional[Tuple[float, int]] = None   # mean requests in the driver, samples
        self.little_ms: Optional[float] = None   # time per request by Little's law, where ticks hold more
        self.ana_state: Optional[str] = None     # an NVMe path's
        self.ana_grpid: Optional[str] = None
        self.notes: List[str] = []

    @property
    def devt_text(self) -> str:
        return "%d:%d" % self.devt

    def completions(self) -> int:
        return sum(self.window.get(d, (0, 0, 0))[0] - self.refused.get(d, 0) for d in DATA_DIRECTIONS)

    def ticks_ms(self) -> Optional[float]:
        """The block layer's mean time per I/O (stat ticks / completions)."""
        ios = self.completions()
        return sum(self.window.get(d, (0, 0, 0))[1] for d in DATA_DIRECTIONS) / ios if ios > 0 else None

    def service_ms(self) -> Optional[Tuple[float, int]]:
        """(mean ms per I/O, the completions it rests on), or None without completions: Little's law
        where the ticks also hold scheduler time (see _service_by_little), else the ticks."""
        ticks = self.ticks_ms()
        if ticks is None:
            return None
        return (self.little_ms if self.little_ms is not None else ticks), self.completions()


class MapCapture:
    def __init__(self, name: str, dm: str):
        self.name = name
        self.dm = dm
        self.devt: Optional[Tuple[int, int]] = None
        self.uuid: Optional[str] = None
        self.table: Optional[str] = None       # "0 <len> multipath <params>" as dmsetup printed it
        self.status: Optional[str] = None
        self.parsed: Optional[MultipathTable] = None
        self.status_info: Optional[dict] = None
        self.size: Optional[int] = None        # sectors (/sys/block/dm-N/size)
        self.path_devts: List[str] = []        # in table order, or the slaves' when there is no table
        self.window: Dict[str, Tuple[int, int, int]] = {}
        self.notes: List[str] = []

    def path_state(self, devt: str) -> Optional[Tuple[str, int]]:
        """("A"/"F", fail count) of a path from the status line."""
        for g in (self.status_info or {}).get("groups", []):
            for p in g["paths"]:
                if p["dev"] == devt:
                    return ("A" if p["active"] else "F"), p["fail_count"]
        return None


class Capture:
    def __init__(self, source: str):
        self.source = source
        self.release: Optional[str] = None
        self.series: Optional[str] = None
        self.cpus: Optional[int] = None
        self.hz: Optional[int] = None
        self.maps: List[MapCapture] = []
        self.paths: Dict[str, PathCapture] = {}        # devt text -> path
        self.nvme: List[dict] = []
        self.conf: Optional[str] = None
        self.conf_source = ""
        self.window_s: Optional[float] = None
        self.notes: List[str] = []                     # what could not be read, host-wide
        self.dm_other: List[str] = []                  # dm devices that are not multipath maps


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:160]
    return "(no output)"


def collect(src: Source, seconds: float = 5.0, conf: Optional[Tuple[str, str]] = None,
            sleep=time.sleep) -> Capture:
    """Read everything through ``src``; ``seconds``: the service-time window on a live host (a dump
    brings its own); ``conf``: (file name, text) of the host's multipath.conf."""
    cap = Capture(src.name)
    _host_facts(src, cap)
    majors = parse_proc_devices(src.read("/proc/devices") or "")
    if not majors:
        cap.notes.append("/proc/devices could not be read: device kinds come from names and sysfs links only")
    blocks = src.listdir("/sys/block")
    if blocks is None:
        cap.notes.append("/sys/block could not be read: no maps or paths")
        blocks = []
    by_devt: Dict[Tuple[int, int], str] = {}
    for b in blocks:
        t = src.read("/sys/block/%s/dev" % b)
        try:
            by_devt[parse_devt(t or "")] = b
        except ValueError:
            # an NVMe controller's path to a namespace (nvme0c1n1) is a hidden disk without a dev_t
            if not re.fullmatch(r"nvme\d+c\d+n\d+", b):
                cap.notes.append("/sys/block/%s/dev could not be read" % b)
    _maps(src, cap, blocks)
    for m in cap.maps:
        for d in m.path_devts:
            if d in cap.paths:
                continue
            try:
                devt = parse_devt(d)
            except ValueError:
                m.notes.append("path %s is not major:minor: its block device is not known" % d)
                continue
            name = by_devt.get(devt)
            if name is None:
                m.notes.append("path %s has no /sys/block entry" % d)
                continue
            p = PathCapture(name, devt)
            _path_facts(src, p, majors)
            cap.paths[d] = p
    _nvme(src, cap)
    _window(src, cap, seconds, sleep)
    for m in cap.maps:
        paths = [cap.paths[d] for d in m.path_devts if d in cap.paths]
        _refused_dispatches(m, paths)
        _service_by_little(m, paths, cap.window_s)
    if conf is not None:
        cap.conf_source, cap.conf = conf
    elif src.read("/etc/multipath.conf") is not None:
        cap.conf_source, cap.conf = "/etc/multipath.conf", src.read("/etc/multipath.conf")
    return cap


def _host_facts(src: Source, cap: Capture) -> None:
    rel = src.read("/proc/sys/kernel/osrelease")
    if rel and rel.strip():
        cap.release = rel.strip()
        cap.series = kernel_series(cap.release)
    else:
        cap.notes.append("/proc/sys/kernel/osrelease could not be read: no kernel profile")
    online = src.read("/sys/devices/system/cpu/online")
    try:
        cap.cpus = parse_cpu_list(online or "")
    except ValueError as e:
        cap.notes.append("/sys/devices/system/cpu/online could not be read (%s): no CPU count" % e)
    texts = []
    if cap.release:
        texts.append(src.read("/boot/config-%s" % cap.release) or "")
    gz = getattr(src, "read_gzip", None)
    if gz is not None:
        texts.append(gz("/proc/config.gz") or "")
    for cmd, (rc, out) in getattr(src, "commands", {}).items():
        if "config.gz" in cmd and rc == 0:
            texts.append(out)
    for t in texts:
        cap.hz = cap.hz or parse_hz(t)
    if cap.hz is None:
        cap.notes.append("CONFIG_HZ could not be read (no /boot/config-<release>, no /proc/config.gz)")


def _dmsetup(src: Source, what: str, cap: Capture) -> Optional[Dict[str, str]]:
    """{map name: its multipath line} from `dmsetup table|status`, or None (with a note) when dmsetup
    was not run or failed."""
    res = src.command(["dmsetup", what])
    if res is None:
        cap.notes.append("`dmsetup %s` was not run (the source is not this host's /): tables, selectors and "
                         "path states are not known" % what)
        return None
    rc, out = res
    if out.strip() == "No devices found":
        return {}
    if rc != 0:
        cap.notes.append("`dmsetup %s` failed (exit %d: %s)" % (what, rc, _first_line(out)))
        return None
    try:
        lines = split_dmsetup_output(out, "dmsetup " + what)
    except (StatusParseError, ValueError) as e:
        cap.notes.append("`dmsetup %s` output could not be read: %s" % (what, e))
        return None
    return {ln.name: "%d %d multipath %s" % (ln.start, ln.length, ln.params)
            for ln in lines if ln.name and ln.start is not None}


def _maps(src: Source, cap: Capture, blocks: List[str]) -> None:
    tables = _dmsetup(src, "table", cap)
    statuses = _dmsetup(src, "status", cap) if tables is not None else None
    for b in blocks:
        if not b.startswith("dm-"):
            continue
        name = (src.read("/sys/block/%s/dm/name" % b) or "").strip()
        uuid = (src.read("/sys/block/%s/dm/uuid" % b) or "").strip()
        slaves = src.listdir("/sys/block/%s/slaves" % b) or []
        if tables is not None:
            if name not in tables:
                cap.dm_other.append("%s (%s): not a multipath target" % (name or "?", b))
                continue
        elif not uuid.startswith(MPATH_UUID_PREFIX) and not slaves:
            cap.dm_other.append("%s (%s): target not known, no slaves" % (name or "?", b))
            continue
        m = MapCapture(name or b, b)
        m.uuid = uuid or None
        try:
            m.devt = parse_devt(src.read("/sys/block/%s/dev" % b) or "")
        except ValueError:
            m.notes.append("/sys/block/%s/dev could not be read" % b)
        size = (src.read("/sys/block/%s/size" % b) or "").strip()
        m.size = int(size) if size.isdigit() else None
        if tables is not None:
            m.table = tables[name]
            try:
                m.parsed = parse_multipath_params(m.table.split(None, 3)[3] if len(m.table.split()) > 3 else "")
                m.path_devts = m.parsed.devices()
            except ValueError as e:
                m.notes.append("the table could not be read: %s" % e)
            st = (statuses or {}).get(name)
            if st is None:
                m.notes.append("no `dmsetup status` line: path states not known")
            else:
                m.status = st
                try:
                    m.status_info = parse_status_info(st.split(None, 3)[3] if len(st.split()) > 3 else "")
                except StatusParseError as e:
                    m.notes.append("the status line could not be read: %s" % e)
        else:
            if not slaves:
                m.notes.append("no slaves listed: no paths")
            for s in slaves:
                t = src.read("/sys/block/%s/dev" % s)
                try:
                    m.path_devts.append("%d:%d" % parse_devt(t or ""))
                except ValueError:
                    m.notes.append("slave %s: dev could not be read" % s)
            m.notes.append("taken as a multipath map from sysfs (%s): its table, selector, groups and path "
                           "states were not read" % ("uuid %s" % uuid if uuid.startswith(MPATH_UUID_PREFIX)
                                                     else "it has %d slave(s)" % len(slaves)))
        cap.maps.append(m)


def _kind(src: Source, p: PathCapture, majors: Dict[int, str]) -> None:
    link = src.readlink("/sys/block/%s" % p.name) or ""
    driver = (src.readlink("/sys/block/%s/device/driver" % p.name) or "").rsplit("/", 1)[-1]
    major_name = majors.get(p.devt[0], "")
    if major_name in MAJOR_KINDS:
        p.kind, p.kind_from = MAJOR_KINDS[major_name], "major %d is %s (/proc/devices)" % (p.devt[0], major_name)
    elif "/nvme/" in link or driver == "nvme":
        p.kind, p.kind_from = "nvme", "sysfs device path (%s)" % link
    elif "/virtio" in link or driver == "virtio_blk":
        p.kind, p.kind_from = "virtio", "sysfs device path (%s)" % link
    elif driver == "sd" or re.search(r"/host\d+/target\d+:", link):
        p.kind, p.kind_from = "scsi", "SCSI device (driver %s)" % (driver or "in the device path")
    else:
        for pat, kind in NAME_KINDS:
            if re.match(pat, p.name):
                p.kind, p.kind_from = kind, "its name %s" % p.name
                break
    if p.kind is None:
        p.notes.append("device kind not known (major %d %s, no driver link)" % (p.devt[0], major_name or "unlisted"))


def _path_facts(src: Source, p: PathCapture, majors: Dict[int, str]) -> None:
    _kind(src, p, majors)
    q = "/sys/block/%s/queue/" % p.name
    sched = src.read(q + "scheduler")
    if sched is None:
        p.notes.append("queue/scheduler could not be read")
    else:
        try:
            p.queue["scheduler"], p.queue["schedulers"] = parse_scheduler(sched)
        except ValueError as e:
            p.notes.append(str(e))
    for key in ("nr_requests", "rotational", "logical_block_size", "max_sectors_kb"):
        v = (src.read(q + key) or "").strip()
        if v.isdigit():
            p.queue[key] = int(v)
        else:
            p.notes.append("queue/%s could not be read" % key)
    hws = src.listdir("/sys/block/%s/mq" % p.name)
    if hws is None:
        p.notes.append("mq/ could not be read: not a blk-mq device, or sysfs not readable (hardware queues "
                       "and driver tags not known)")
    else:
        hws = [h for h in hws if h.isdigit()]
        p.queue["nr_hw_queues"] = len(hws)
        tags = [int(t) for h in hws for t in [(src.read("/sys/block/%s/mq/%s/nr_tags" % (p.name, h)) or "").strip()]
                if t.isdigit()]
        if tags:
            p.queue["nr_tags"] = min(tags)
            if len(set(tags)) > 1:
                p.notes.append("hardware queues have different tag counts %s: the smallest is used" % sorted(set(tags)))
        elif hws:
            p.notes.append("mq/*/nr_tags could not be read: driver tags not known")
    qd = (src.read("/sys/block/%s/device/queue_depth" % p.name) or "").strip()
    if qd.isdigit():
        p.queue["queue_depth"] = int(qd)
    elif p.kind == "scsi":
        p.notes.append("device/queue_depth could not be read (the LUN's queue depth)")


def _window(src: Source, cap: Capture, seconds: float, sleep) -> None:
    """Service time per path over the window: the stat counters at its start and end."""
    nvme_paths = [p for s in cap.nvme for c in s["controllers"] for p in c["paths"]]
    devs = [(p.sysdir, p) for p in list(cap.paths.values()) + nvme_paths] + \
        [("/sys/block/" + m.dm, m) for m in cap.maps]
    files = ["%s/%s" % (d, f) for d, _ in devs for f in ("stat", "inflight")] + ["/proc/diskstats"]
    t0, s0 = src.counters(0, files)
    samples = src.samples()
    if src.live:
        # ten samples a second of the requests in each path's driver (as capture.sh takes them)
        for _ in range(int(seconds * SAMPLES_PER_S)):
            sleep(1.0 / SAMPLES_PER_S)
            counts = {}
            for sysdir, _ in devs:
                try:
                    counts[sysdir.rsplit("/", 1)[-1]] = parse_inflight(src.read(sysdir + "/inflight") or "")
                except ValueError:
                    pass
            samples.append((0.0, counts))
        seconds -= int(seconds * SAMPLES_PER_S) / SAMPLES_PER_S
        if seconds > 0:
            sleep(seconds)
    t1, s1 = src.counters(1, files)
    for sysdir, obj in devs:
        name = sysdir.rsplit("/", 1)[-1]
        vals = [sum(c[name]) for _, c in samples if name in c]
        if isinstance(obj, PathCapture) and vals:
            obj.driver_inflight = (sum(vals) / len(vals), len(vals))
    win = src.window()
    if win is None and t0 is not None and t1 is not None:
        win = t1 - t0
    cap.window_s = win
    if s0 and all(v is None for v in s0.values()) and s1 and all(v is None for v in s1.values()):
        cap.notes.append("no counters were read (no stat files, no /proc/diskstats): no service times")
        return
    disk0 = _diskstats(s0.get("/proc/diskstats"))
    disk1 = _diskstats(s1.get("/proc/diskstats"))
    for sysdir, obj in devs:
        name = sysdir.rsplit("/", 1)[-1]
        before = _stat(s0.get(sysdir + "/stat"), disk0.get(name))
        after = _stat(s1.get(sysdir + "/stat"), disk1.get(name))
        if before is None or after is None:
            obj.notes.append("stat could not be read at the window's %s: no service time"
                             % ("start" if before is None else "end"))
            continue
        try:
            obj.window = stat_delta(before, after)
        except ValueError as e:
            obj.notes.append("stat: %s" % e)
        if isinstance(obj, PathCapture):
            for s in (s0, s1):
                try:
                    obj.inflight.append(parse_inflight(s.get(sysdir + "/inflight") or ""))
                except ValueError:
                    pass


def _refused_dispatches(m: MapCapture, paths: List[PathCapture]) -> None:
    """Request-based dm hands a clone to a path with blk_insert_cloned_request (block/blk-mq.c), which
    counts an issue the path refused (BLK_STS_RESOURCE: a SCSI LUN at its queue_depth) as a completed I/O
    with its time so far and no sectors. A path whose sectors per I/O fall below the map's has such counts:
    its completions are estimated from its sectors at the map's sectors per I/O, and the difference is
    kept (PathCapture.refused) and said."""
    for d in DATA_DIRECTIONS:
        mios, _, msec = m.window.get(d, (0, 0, 0))
        if not mios or not msec:
            continue
        for p in paths:
            ios, _, sec = p.window.get(d, (0, 0, 0))
            done = round(sec * mios / msec)
            if ios - done > max(2, 0.02 * ios):
                p.refused[d] = ios - done
                p.notes.append("%d of the %d %s I/Os the path counted moved no sectors: issues it refused, which "
                               "the kernel counts as done (blk_insert_cloned_request); the service time rests "
                               "on the %d completions its sectors show at the map's %.1f sectors per I/O"
                               % (ios - done, ios, d, done, msec / mios))


def is_bio_based(m: MapCapture) -> bool:
    f = m.parsed.features if m.parsed else []
    return any(a == "queue_mode" and b == "bio" for a, b in zip(f, f[1:]))


def _service_by_little(m: MapCapture, paths: List[PathCapture], window_s: Optional[float]) -> None:
    """A bio-based map submits bios to its paths, and a path with an I/O scheduler allocates the
    request (where the block layer starts its clock, blk_mq_rq_ctx_init) before the request waits in
    the scheduler: its stat ticks then hold that wait, which the simulator models itself. Such a path's
    time per request is taken by Little's law instead: the requests in its driver (``inflight`` counts
    only started ones, blk_mq_check_inflight), sampled in the window, over its completions per second.
    Request-based dm inserts its clones past the scheduler (blk_insert_cloned_request), and without a
    scheduler a bio waits for its tag before the clock starts, so the ticks stand there."""
    if not is_bio_based(m) or not window_s:
        return
    for p in paths:
        if p.queue.get("scheduler") in (None, "none") or not p.completions():
            continue
        if p.driver_inflight is None or p.driver_inflight[1] < MIN_SAMPLES:
            p.notes.append("its stat ticks hold time in its %s scheduler (bio-based map), and too few in-flight "
                           "samples were taken to tell it apart: the service time may be too long"
                           % p.queue["scheduler"])
            continue
        mean, n = p.driver_inflight
        p.little_ms = mean / (p.completions() / window_s) * 1000.0


def _diskstats(text: Optional[str]) -> Dict[str, List[int]]:
    try:
        return {k: v[2] for k, v in parse_diskstats(text or "").items()}
    except ValueError:
        return {}


def _stat(text: Optional[str], fallback: Optional[List[int]]) -> Optional[List[int]]:
    if text is not None:
        try:
            return parse_stat(text)
        except ValueError:
            pass
    return fallback


def _nvme(src: Source, cap: Capture) -> None:
    """NVMe subsystems (native multipath): iopolicy, controllers (state, transport, address, NUMA node,
    I/O queues and their depth) and each controller's path to each namespace (its ANA state and group,
    and, through the window, its service time)."""
    base = "/sys/class/nvme-subsystem"
    subs = src.listdir(base)
    if not subs:
        return

    def text(path):
        return (src.read(path) or "").strip() or None
    for s in subs:
        d = "%s/%s" % (base, s)
        sub = {"name": s, "iopolicy": text(d + "/iopolicy"), "nqn": text(d + "/subsysnqn"), "controllers": []}
        for c in src.listdir(d) or []:
            if not re.fullmatch(r"nvme\d+", c):
                continue
            cd = "%s/%s" % (d, c)
            ctl = {"name": c, "state": text(cd + "/state"), "transport": text(cd + "/transport"),
                   "address": text(cd + "/address"), "numa_node": text(cd + "/numa_node"),
                   "queue_count": text(cd + "/queue_count"), "sqsize": text(cd + "/sqsize"), "paths": []}
            for pth in src.listdir(cd) or []:
                if not re.fullmatch(r"nvme\d+c\d+n\d+", pth):
                    continue
                try:
                    devt = parse_devt(text("%s/%s/dev" % (cd, pth)) or "")
                except ValueError:
                    devt = (0, 0)
                p = PathCapture(pth, devt, "%s/%s" % (cd, pth))
                p.kind, p.kind_from = "nvme", "an NVMe controller's path (%s)" % c
                p.ana_state = text("%s/%s/ana_state" % (cd, pth))
                p.ana_grpid = text("%s/%s/ana_grpid" % (cd, pth))
                ctl["paths"].append(p)
            sub["controllers"].append(ctl)
        cap.nvme.append(sub)
