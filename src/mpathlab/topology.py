"""Topology files (TOML): the dm table line and a device model for each path.

    [multipath]
    table = "0 1048576 multipath 0 0 1 1 service-time 0 2 2 sda 1 1 sdb 1 1"
    hz = 250                  # jiffies rate for bio-based start times
    rq_stats = true           # request-based: blk-mq stamps io_start_time_ns
    force_jiffies_start = false   # bio-based: ignore DM_PS_USE_HR_TIMER (pre-5.19)
    uptime = "1h"             # ktime at the start of the run
    hst_select_clock = "ktime"    # "sched_clock": HST as in 5.8-5.17 (select_path used sched_clock)
    sched_clock_offset = "2s"     # how far sched_clock runs ahead of ktime
    queue_if_no_path_timeout_secs = 0   # dm_multipath module parameter
    nr_cpus = 8               # nr_cpu_ids, for io-affinity masks (default: enough for the jobs)
    kernel = "current"        # kernel profile: 5.8, 5.15, 6.1, 6.12, current or X.Y (mpathlab.profiles)
    seed = 1

    [paths.sda]
    devt = "8:0"
    kind = "scsi"             # what the device is (scsi, nvme, null_blk, ...): only SCSI takes "1 alua"
    service = { dist = "exponential", mean = "100us" }   # constant|exponential|lognormal|empirical
    parallelism = 8           # device-internal concurrency
    delay = "0us"             # fixed added delay (transport: the request holds its tag meanwhile)
    dm_delay = "0ms"          # a dm-delay device over the device: its delay, before the device's tags;
                              # faults suspend and { at = "2s", action = "resume", delay = "20ms" } (dmsetup
                              # suspend, reload with a new delay, resume)
    per_kib = "0ns"           # extra service time per KiB of I/O
    faults = [ { at = "2s", action = "fail" }, { at = "4s", action = "reinstate" } ]
    hw_queue_depth = 32       # driver tags per hardware queue (default: unlimited)
    nr_hw_queues = 1          # hardware queues; tags = hw_queue_depth x nr_hw_queues
    scheduler = "none"        # "mq-deadline", "kyber", "bfq": scheduler tags as well
    nr_requests = 64          # scheduler tags per hw queue (default 2 x min(hw_queue_depth, 128))

    # kind = "scsi" also takes the faults offline, delete, poweroff, online and
    # { at = "1s", action = "error", error = "medium", every_nth = 10 } (sim/scsi.py ERRORS)
    queue_depth = 4           # kind = "scsi": the device's budget (sdev->queue_depth; default unlimited)
    scsi_host = "hba0"        # kind = "scsi": the SCSI host whose can_queue tags it shares (sim/scsi.py)

    [scsi_hosts.hba0]         # a SCSI host (HBA port, iSCSI session) shared by the paths naming it
    can_queue = 32            # driver tags of the host's tag set (default unlimited)

    [host]                    # the host's CPUs (sim/host.py); costs default to 0 (free CPUs)
    cpus = 2                  # fio job clones on CPU n run on CPU n mod cpus
    submit_cost = "0us"       # CPU time to submit one I/O
    complete_cost = "0us"     # CPU time to complete one I/O
    wake_cost = "0us"         # latency of waking an idle CPU (halted vCPU, deep C-state)
    steal = 0.0               # fraction of each CPU other tenants take (a busy host descheduling a vCPU)
    steal_period = "6ms"      # ... taken in one piece every steal_period
    work_latency = "0us"      # deferred kernel work (kblockd's queue runs) starts this much later
    dispatch_cost = "0us"     # request-based: a run of the dm queue maps one request per dispatch_cost
    completion = "queued"     # "interrupt": complete_cost preempts the CPU's work, as the kernel's interrupt does
    woken_issue = "0us"       # bio-based: a task asleep for a tag issues this long after the freeing completion
    woken_late = "0us"        # ... and a share of those wakes this much later still (the guest's other work)
    woken_late_share = 0.0    # ... that share, from 0 to 1 (picked per wake from the run's seed)
    cpu_nodes = [0, 0]        # NUMA node of each CPU (default all 0); the NVMe numa iopolicy reads it
    node_distance = [[10]]    # distances between nodes (default 10 local, 20 remote)

    [[messages]]              # dm messages at given times
    at = "3s"
    message = "switch_group 2"

Durations take units (ns, us, ms, s); a bare number is ns.
"""
from __future__ import annotations

import os
import re
from typing import Dict, List, Optional, Sequence, Tuple

try:
    import tomllib
except ModuleNotFoundError:  # Python < 3.11
    import tomli as tomllib  # type: ignore

from .kernel import parse_devt
from .selectors import lookup
from .sim.devices import SCHEDULERS, Empirical, Exponential, Fault, LogNormal, PathModel, ServiceTime
from .sim.host import COMPLETION_MODES, HostModel
from .sim.scsi import ERRORS as SCSI_ERRORS, ScsiHostModel
from .target import TargetError, construct, mapping_resolver, split_table_line
from .timing import VALID_HZ
from .units import UnitError, parse_duration_ns
from .inputs import TopologyError  # noqa: F401  (lives in inputs so the NVMe reader can raise it too)
from .inputs import SEED_MAX


def reject_unknown_keys(table: dict, allowed, src: str, section: str) -> None:
    """A [section] with a key the reader does not know: refused, naming the key (and, through
    load_topology, the line of the first one)."""
    bad = set(table) - set(allowed)
    if bad:
        raise TopologyError("%s: [%s] has unknown key(s) %s" % (src, section, ", ".join(sorted(bad))),
                            key=(section, sorted(bad)[0]))


class Topology:
    def __init__(self, table: str, paths: List[PathModel], *, hz: int = 250, rq_stats: bool = True,
                 force_jiffies_start: Optional[bool] = None, uptime_ns: int = 3600 * 10 ** 9, seed: int = 1,
                 sched_clock_offset_ns: Optional[int] = None, queue_if_no_path_timeout_secs: int = 0,
                 nr_cpus: Optional[int] = None, kernel: Optional[str] = None,
                 kinds: Optional[Dict[Tuple[int, int], str]] = None, host: Optional[HostModel] = None,
                 messages: Sequence[Tuple[int, str]] = (), activation_ns: int = 0, source: str = "",
                 description: str = ""):
        self.table = table
        self.paths = paths
        self.hz = hz
        self.rq_stats = rq_stats
        self.force_jiffies_start = force_jiffies_start
        self.uptime_ns = uptime_ns
        self.seed = seed
        self.messages = list(messages)
        self.activation_ns = activation_ns
        self.sched_clock_offset_ns = sched_clock_offset_ns
        self.queue_if_no_path_timeout_secs = queue_if_no_path_timeout_secs
        self.nr_cpus = nr_cpus
        self.kernel = kernel
        self.kinds = dict(kinds or {})   # devt -> device kind, where the file says
        self.host = host
        self.source = source
        self.nvme = None      # mpathlab.nvme.topology.NvmeConfig when the file has an [nvme] section
        self.description = description   # the file's free text, shown in reports

    def host_facts(self):
        """The host facts the kernel checks: the topology's devices (and their kinds) exist, nothing else."""
        from .profiles import DeviceFact, Host
        return Host([DeviceFact(p.devt, self.kinds.get(p.devt, ""), p.name) for p in self.paths], self.nr_cpus)

    def sim_kwargs(self) -> dict:
        return {"hz": self.hz, "rq_stats": self.rq_stats, "force_jiffies_start": self.force_jiffies_start,
                "uptime_ns": self.uptime_ns, "seed": self.seed, "messages": self.messages,
                "activation_ns": self.activation_ns, "sched_clock_offset_ns": self.sched_clock_offset_ns,
                "queue_if_no_path_timeout_secs": self.queue_if_no_path_timeout_secs, "nr_cpus": self.nr_cpus,
                "kernel": self.kernel, "host_facts": self.host_facts(),
                **({"host": self.host} if self.host is not None else {})}

    def resolver(self):
        return mapping_resolver({p.name: p.devt for p in self.paths})

    def with_selector(self, name: str, args: Sequence[str] = ()) -> "Topology":
        """The same topology with every priority group using another selector."""
        import copy
        t = copy.copy(self)
        t.table = rewrite_selector(self.table, name, args, self.resolver())
        return t


def _service(spec, where: str) -> ServiceTime:
    svc = _service_model(spec, where)
    if not 0 < svc.mean_ns <= MAX_SERVICE_NS:
        # zero: the device is infinitely fast and a time-based run never ends
        raise TopologyError("%s: the mean service time must be above 0 and at most 1h, got %dns"
                            % (where if where.startswith("--") else where + ".service", svc.mean_ns))
    return svc


MAX_SERVICE_NS = 3600 * 10 ** 9
MAX_PARALLELISM = 65536     # servers inside one device model


def _service_model(spec, where: str) -> ServiceTime:
    if isinstance(spec, (str, int, float)):
        return ServiceTime(parse_duration_ns(spec, where if where.startswith("--") else where + ".service"))
    if not isinstance(spec, dict):
        raise TopologyError("%s.service must be a duration or a table {dist=..., mean=...}" % where)
    unknown = set(spec) - {"dist", "mean", "sigma", "file", "unit"}
    if unknown:
        raise TopologyError("%s.service: unknown key(s) %s" % (where, ", ".join(sorted(unknown))))
    dist = str(spec.get("dist", "constant")).lower()
    if dist == "empirical":
        if "file" not in spec:
            raise TopologyError("%s.service: an empirical distribution needs file = \"latencies.txt\"" % where)
        return Empirical.from_file(spec["file"], unit=spec.get("unit", "us"))
    if "mean" not in spec:
        raise TopologyError("%s.service: missing mean" % where)
    mean = parse_duration_ns(spec["mean"], where + ".service.mean")
    if dist == "constant":
        return ServiceTime(mean)
    if dist == "exponential":
        return Exponential(mean)
    if dist == "lognormal":
        sigma = spec.get("sigma", 0.5)
        if not isinstance(sigma, (int, float)) or isinstance(sigma, bool):
            raise TopologyError("%s.service.sigma must be a number" % where)
        return LogNormal(mean, float(sigma))
    raise TopologyError("%s.service: dist must be constant, exponential, lognormal or empirical, not %r"
                        % (where, dist))


SLOW_FACTOR_MAX = 1e6
QUEUE_TIMEOUT_MAX = (2 ** 63 - 1) // 10 ** 9      # seconds the simulated (signed 64-bit ns) clock can hold


def parse_faults(items, where: str) -> List[Fault]:
    if not isinstance(items, list):
        raise TopologyError("%s.faults must be a list of {at=..., action=...}" % where)
    out = []
    for i, f in enumerate(items):
        w = "%s.faults[%d]" % (where, i)
        if not isinstance(f, dict) or "at" not in f or "action" not in f:
            raise TopologyError("%s needs at and action" % w)
        unknown = set(f) - {"at", "action", "factor", "reinstate_after", "error", "every_nth", "delay"}
        if unknown:
            raise TopologyError("%s: unknown key(s) %s" % (w, ", ".join(sorted(unknown))))
        if not isinstance(f["action"], str) or f["action"] not in Fault.ACTIONS:
            raise TopologyError("%s.action must be one of %s, not %r" % (w, ", ".join(Fault.ACTIONS), f["action"]))
        factor = f.get("factor", 1.0)
        if not isinstance(factor, (int, float)) or isinstance(factor, bool):
            raise TopologyError("%s.factor must be a number" % w)
        # a service time (at most 1h) times the factor must stay a finite 64-bit count of ns
        if not 0 < factor <= SLOW_FACTOR_MAX:     # also false for NaN
            raise TopologyError("%s.factor must be a finite number above 0 and at most %g, got %r"
                                % (w, SLOW_FACTOR_MAX, factor))
        error, nth = _fault_error(f, w)
        if "delay" in f and f["action"] != "resume":
            raise TopologyError("%s: delay belongs to action = \"resume\" (the dm-delay table's new delay)" % w)
        delay = parse_duration_ns(f["delay"], w + ".delay") if "delay" in f else None
        out.append(Fault(parse_duration_ns(f["at"], w + ".at"), str(f["action"]), float(factor),
                         parse_duration_ns(f.get("reinstate_after", 0), w + ".reinstate_after"),
                         error=error, every_nth=nth, delay_ns=delay))
    return out


def _fault_error(f: dict, w: str) -> Tuple[str, int]:
    """error = "<class of sim.scsi.ERRORS>" and every_nth of an ``action = "error"`` fault."""
    if f.get("action") != "error":
        if "error" in f or "every_nth" in f:
            raise TopologyError("%s: error and every_nth belong to action = \"error\"" % w)
        return "", 1
    error = f.get("error")
    if not isinstance(error, str) or error not in SCSI_ERRORS and error != "":
        raise TopologyError("%s.error must be one of %s (or \"\" to stop errors), not %r"
                            % (w, ", ".join(SCSI_ERRORS), error))
    nth = f.get("every_nth", 1)
    if not isinstance(nth, int) or isinstance(nth, bool) or not 1 <= nth <= 2 ** 31:
        raise TopologyError("%s.every_nth must be a whole number >= 1, not %r" % (w, nth))
    return str(error), nth


SCSI_FAULTS = ("offline", "delete", "poweroff", "online", "error")
_PATH_KEYS = {"devt", "kind", "service", "parallelism", "delay", "dm_delay", "per_kib", "faults", "fail_latency",
              "hw_queue_depth", "nr_hw_queues", "scheduler", "nr_requests", "queue_depth", "scsi_host"}
_HOST_KEYS = {"cpus", "submit_cost", "complete_cost", "wake_cost", "steal", "steal_period", "work_latency",
              "dispatch_cost", "completion", "woken_issue", "woken_late", "woken_late_share", "cpu_nodes",
              "node_distance"}
_MP_KEYS = {"table", "hz", "rq_stats", "force_jiffies_start", "uptime", "seed", "activation",
            "hst_select_clock", "sched_clock_offset", "queue_if_no_path_timeout_secs", "nr_cpus", "kernel"}


def topology_from_dict(doc: dict, source: str = "", base_dir: str = ".") -> Topology:
    try:
        return _topology_from_dict(doc, source, base_dir)
    except UnitError as e:
        raise TopologyError("%s: %s" % (source or "topology", e)) from None


def _topology_from_dict(doc: dict, source: str, base_dir: str) -> Topology:
    src = source or "topology"
    unknown = set(doc) - {"multipath", "paths", "messages", "description", "nvme", "host", "scsi_hosts"}
    if unknown:
        raise TopologyError("%s: unknown section(s) %s" % (src, ", ".join(sorted(unknown))))
    mp = doc.get("multipath")
    if mp is None and "nvme" in doc:
        mp = {"table": ""}    # an NVMe subsystem only (mpathlab.nvme)
    if not isinstance(mp, dict) or "table" not in mp:
        raise TopologyError("%s: needs a [multipath] section with table = \"0 <len> multipath ...\"" % src)
    bad = set(mp) - _MP_KEYS
    if bad:
        raise TopologyError("%s: [multipath] has unknown key(s) %s" % (src, ", ".join(sorted(bad))))
    paths_doc = doc.get("paths")
    if not isinstance(paths_doc, dict) or not paths_doc:
        raise TopologyError("%s: needs [paths.NAME] sections, one per path device" % src)
    paths: List[PathModel] = []
    seen = {}
    kinds = {}
    scsi_hosts = _scsi_hosts(doc.get("scsi_hosts"), src)
    used_hosts = set()
    for i, (name, p) in enumerate(paths_doc.items()):
        where = "paths.%s" % name
        if not isinstance(p, dict):
            raise TopologyError("%s: %s must be a table" % (src, where))
        bad = set(p) - _PATH_KEYS
        if bad:
            raise TopologyError("%s: %s has unknown key(s) %s" % (src, where, ", ".join(sorted(bad))))
        # default numbers as the kernel gives them: SCSI disks 8:16*i, NVMe namespaces (blkext) 259:i
        nvme_only = "nvme" in doc and "multipath" not in doc
        devt = parse_devt(str(p.get("devt", ("259:%d" % i) if nvme_only else "8:%d" % (16 * i))))
        if devt is None:
            raise TopologyError("%s: %s.devt must be \"major:minor\"" % (src, where))
        if devt in seen:
            raise TopologyError("%s: %s and %s have the same devt" % (src, seen[devt], name))
        seen[devt] = name
        if "kind" in p:
            from .profiles.environment import DEVICE_KINDS
            if p["kind"] not in DEVICE_KINDS:
                raise TopologyError("%s: %s.kind must be one of %s" % (src, where, ", ".join(DEVICE_KINDS)))
            kinds[devt] = p["kind"]
        paths.append(path_model(name, devt, p, src, where, base_dir))
        _scsi_path(paths[-1], p, scsi_hosts, src, where)
        used_hosts.add(p.get("scsi_host"))
    for name in scsi_hosts:
        if name not in used_hosts:
            raise TopologyError("%s: [scsi_hosts.%s] is the host of no path (scsi_host = \"%s\")"
                                % (src, name, name), key=("scsi_hosts." + name, "can_queue"))
    hz = mp.get("hz", 250)
    if hz not in VALID_HZ:
        raise TopologyError("%s: hz must be one of %s" % (src, ", ".join(map(str, VALID_HZ))))
    messages = []
    for i, m in enumerate(doc.get("messages", [])):
        if not isinstance(m, dict) or "at" not in m or "message" not in m:
            raise TopologyError("%s: messages[%d] needs at and message" % (src, i))
        messages.append((parse_duration_ns(m["at"], "messages[%d].at" % i), str(m["message"])))
    for key in ("rq_stats", "force_jiffies_start"):
        if key in mp and not isinstance(mp[key], bool):
            raise TopologyError("%s: [multipath] %s must be true or false" % (src, key))
    seed = mp.get("seed", 1)
    if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed <= SEED_MAX:
        raise TopologyError("%s: [multipath] seed must be an integer from 0 to %d (as --seed)" % (src, SEED_MAX))
    kernel = mp.get("kernel")
    if kernel is not None and not isinstance(kernel, str):
        # kernel = 5.10 in TOML is the number 5.1: refuse rather than guess.
        raise TopologyError("%s: [multipath] kernel must be a string, e.g. kernel = \"6.1\"" % src)
    if kernel is not None:
        from .profiles import ProfileError, get_profile
        try:
            profile = get_profile(str(kernel))
        except ProfileError as e:
            raise TopologyError("%s: [multipath] kernel: %s" % (src, e)) from None
    else:
        from .profiles import get_profile
        profile = get_profile(None)
    # hst_select_clock overrides the profile's clock; without it the profile decides.
    clock = str(mp.get("hst_select_clock", profile.hst_select_clock)).lower()
    if clock not in ("ktime", "sched_clock"):
        raise TopologyError("%s: [multipath] hst_select_clock must be \"ktime\" or \"sched_clock\"" % src)
    offset = None
    if clock == "sched_clock":
        offset = parse_duration_ns(mp.get("sched_clock_offset", "2s"), "sched_clock_offset")
    elif "sched_clock_offset" in mp:
        raise TopologyError("%s: sched_clock_offset only applies with hst_select_clock = \"sched_clock\"" % src)
    elif profile.hst_select_clock == "sched_clock":
        offset = 0   # ktime asked for on a kernel whose HST reads sched_clock: no lead
    qto = mp.get("queue_if_no_path_timeout_secs", 0)
    if not isinstance(qto, int) or isinstance(qto, bool) or not 0 <= qto <= QUEUE_TIMEOUT_MAX:
        raise TopologyError("%s: [multipath] queue_if_no_path_timeout_secs must be a whole number of "
                            "seconds from 0 to %d (292 years: simulated time is a signed 64-bit count of ns)"
                            % (src, QUEUE_TIMEOUT_MAX))
    if qto and not profile.queue_if_no_path_timeout:
        raise TopologyError("%s: [multipath] queue_if_no_path_timeout_secs: kernel %s has no such module "
                            "parameter (added in 5.7)" % (src, profile.name))
    ncpu = mp.get("nr_cpus")
    if ncpu is not None and (not isinstance(ncpu, int) or isinstance(ncpu, bool) or not 1 <= ncpu <= 4096):
        raise TopologyError("%s: [multipath] nr_cpus must be a whole number from 1 to 4096" % src)
    topo = Topology(str(mp["table"]), paths, sched_clock_offset_ns=offset, queue_if_no_path_timeout_secs=qto,
                    nr_cpus=ncpu, kernel=None if kernel is None else str(kernel), kinds=kinds,
                    host=_host(doc.get("host"), src), hz=hz, rq_stats=mp.get("rq_stats", True),
                    force_jiffies_start=mp.get("force_jiffies_start"),
                    uptime_ns=parse_duration_ns(mp.get("uptime", "1h"), "uptime"), seed=seed,
                    messages=messages, activation_ns=parse_duration_ns(mp.get("activation", 0), "activation"),
                    source=src, description=str(doc.get("description", "")).strip())
    if topo.table:
        validate_table(topo)
    if "nvme" in doc:
        from .nvme.topology import parse_nvme
        topo.nvme = parse_nvme(doc["nvme"], paths, src, host=topo.host, path_docs=doc.get("paths"),
                               kernel=topo.kernel)
        topo.kernel = topo.kernel or topo.nvme.kernel     # [nvme] kernel, for a file without [multipath]
    return topo


# The kernel's own bounds of the block-layer keys: blk_mq_alloc_tag_set reduces a tag set's depth to
# BLK_MQ_MAX_DEPTH (include/linux/blk-mq.h) and its hardware queues to nr_cpu_ids (at most CONFIG_NR_CPUS,
# 8192 in Debian's kernels); blk_mq_tag_update_depth refuses scheduler tags above MAX_SCHED_RQ
# (block/blk-mq-sched.h); a host has at most CONFIG_NR_CPUS CPUs.
WHOLE_MOST = {"hw_queue_depth": (10240, "BLK_MQ_MAX_DEPTH"), "nr_hw_queues": (8192, "CONFIG_NR_CPUS"),
              "nr_requests": (2048, "MAX_SCHED_RQ"), "cpus": (8192, "CONFIG_NR_CPUS"),
              "queue_depth": (2 ** 31 - 1, "an int"), "can_queue": (2 ** 31 - 1, "an int")}


def _model_int(text: str, label: str, key: str, most: int) -> int:
    """A whole number of --model DEV,KEY=N: ASCII digits (not int()'s "1_0", "+5" or other scripts' digits)."""
    t = text.strip()
    if not re.fullmatch(r"[0-9]{1,20}", t) or not 1 <= int(t) <= most:
        raise TopologyError("--model %s: %s must be a whole number from 1 to %d, not %r"
                            % (label, key, most, text[:40]))
    return int(t)


def _whole(v, src: str, section: str, key: str) -> int:
    most, why = WHOLE_MOST.get(key, (None, ""))
    if not isinstance(v, int) or isinstance(v, bool) or v < 1:
        raise TopologyError("%s: [%s] %s must be a whole number >= 1, not %r" % (src, section, key, v),
                            key=(section, key))
    if most is not None and v > most:
        raise TopologyError("%s: [%s] %s must be at most %d (%s in the kernel), not %d" % (src, section, key, most,
                                                                                         why, v), key=(section, key))
    return v


def path_model(name: str, devt: Tuple[int, int], p: dict, src: str, where: str, base_dir: str,
               faults: Optional[List[Fault]] = None) -> PathModel:
    """The device model of one ``[paths.NAME]`` table (``where`` = "paths.NAME" of file ``src``): service
    time, servers, tags, added delay, per-KiB cost, faults and fail latency.  Shared by dm topologies and
    multipath-tools' path topologies (mpathlab.mtools.paths), which pass the faults the device itself
    keeps."""
    if "service" not in p:
        raise TopologyError("%s: %s needs a service time" % (src, where))
    svc = p["service"]
    if isinstance(svc, dict) and "file" in svc and not os.path.isabs(svc["file"]):
        svc = dict(svc, file=os.path.join(base_dir, svc["file"]))
    par = p.get("parallelism", 1)
    if not isinstance(par, int) or isinstance(par, bool) or not 1 <= par <= MAX_PARALLELISM:
        raise TopologyError("%s: %s.parallelism must be a whole number >= 1 and <= %d, got %r"
                            % (src, where, MAX_PARALLELISM, par))
    model = PathModel(
        name, devt, _service(svc, where), parallelism=par, **_path_queue_keys(p, src, where),
        delay_ns=parse_duration_ns(p.get("delay", 0), where + ".delay"),
        dm_delay_ns=parse_duration_ns(p.get("dm_delay", 0), where + ".dm_delay"),
        ns_per_kib=parse_duration_ns(p.get("per_kib", 0), where + ".per_kib"),
        faults=parse_faults(p.get("faults", []), where) if faults is None else faults,
        fail_latency_ns=parse_duration_ns(p.get("fail_latency", 0), where + ".fail_latency"))
    # a job with mixed I/O sizes gives paths without per_kib a default cost (sim/arrival.py)
    model.per_kib_given = "per_kib" in p
    return model


def _scsi_hosts(doc, src: str) -> Dict[str, ScsiHostModel]:
    """[scsi_hosts.NAME] sections: can_queue of each SCSI host."""
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        raise TopologyError("%s: scsi_hosts must be tables [scsi_hosts.NAME]" % src)
    out = {}
    for name, h in doc.items():
        section = "scsi_hosts.%s" % name
        if not isinstance(h, dict):
            raise TopologyError("%s: [%s] must be a table" % (src, section), key=(section, "can_queue"))
        reject_unknown_keys(h, {"can_queue"}, src, section)
        out[name] = ScsiHostModel(name, _whole(h["can_queue"], src, section, "can_queue") if "can_queue" in h
                                  else 0)
    return out


def _scsi_path(model: PathModel, p: dict, hosts: Dict[str, ScsiHostModel], src: str, where: str) -> None:
    """queue_depth, scsi_host or a SCSI fault (offline, delete, poweroff, online, error) make the device
    of a kind = "scsi" path a SCSI device (sim/scsi.py): budgets, a host's shared tags, device states.
    Without them the path stays the plain model, as before these keys existed.  Another kind takes
    offline/delete/poweroff/online as its device failing and coming back (null_blk powered off, on)."""
    scsi_keys = [k for k in ("queue_depth", "scsi_host") if k in p]
    scsi_faults = [f.action for f in model.faults if f.action in SCSI_FAULTS]
    if p.get("kind") != "scsi" and "error" in scsi_faults:
        raise TopologyError("%s: [%s] an \"error\" fault needs kind = \"scsi\"" % (src, where),
                            key=(where, "faults"))
    if not scsi_keys and (p.get("kind") != "scsi" or not scsi_faults):
        return
    if p.get("kind") != "scsi":
        raise TopologyError("%s: [%s] %s needs kind = \"scsi\"" % (src, where, scsi_keys[0]),
                            key=(where, scsi_keys[0]))
    for key in ("hw_queue_depth", "nr_hw_queues", "scheduler", "nr_requests"):
        if key in p and not (key == "nr_hw_queues" and p[key] == 1 or key == "scheduler" and p[key] == "none"):
            raise TopologyError("%s: [%s] %s is not modelled on a SCSI device: its tags are the host's "
                                "can_queue, its budget queue_depth, one hardware queue, no I/O scheduler"
                                % (src, where, key), key=(where, key))
    if "queue_depth" in p:
        model.queue_depth = _whole(p["queue_depth"], src, where, "queue_depth")
    name = p.get("scsi_host")
    if name is None:
        model.scsi_host = ScsiHostModel(model.name + "-host")      # a host of its own, unlimited
    elif not isinstance(name, str) or name not in hosts:
        raise TopologyError("%s: [%s] scsi_host = %r names no [scsi_hosts.NAME] section" % (src, where, name),
                            key=(where, "scsi_host"))
    else:
        model.scsi_host = hosts[name]


def _path_queue_keys(p: dict, src: str, where: str) -> dict:
    """hw_queue_depth, nr_hw_queues, scheduler, nr_requests of [paths.X] (sim/blockqueue.py)."""
    out = {}
    for key in ("hw_queue_depth", "nr_hw_queues", "nr_requests"):
        if key in p:
            out[key] = _whole(p[key], src, where, key)
    if "scheduler" in p:
        if p["scheduler"] not in SCHEDULERS:
            raise TopologyError("%s: [%s] scheduler must be one of %s, not %r"
                                % (src, where, ", ".join(SCHEDULERS), p["scheduler"]), key=(where, "scheduler"))
        out["scheduler"] = p["scheduler"]
    if "nr_requests" in p and out.get("scheduler", "none") == "none":
        raise TopologyError("%s: [%s] nr_requests needs a scheduler (scheduler tags)" % (src, where),
                            key=(where, "nr_requests"))
    return out


def _host(h, src: str) -> Optional[HostModel]:
    if h is None:
        return None
    if not isinstance(h, dict):
        raise TopologyError("%s: [host] must be a table" % src)
    reject_unknown_keys(h, _HOST_KEYS, src, "host")
    cpus = _whole(h.get("cpus", 1), src, "host", "cpus")
    costs = {}
    for key in ("submit_cost", "complete_cost", "wake_cost", "work_latency", "dispatch_cost", "woken_issue",
                "woken_late"):
        try:
            v = parse_duration_ns(h.get(key, 0), "[host] " + key)
        except UnitError as e:
            raise TopologyError("%s: %s" % (src, e), key=("host", key)) from None
        if v < 0:
            raise TopologyError("%s: [host] %s must not be negative" % (src, key), key=("host", key))
        costs[key] = v
    steal = _host_fraction(h, "steal", src, below_one=True)
    try:
        period = parse_duration_ns(h.get("steal_period", "6ms"), "[host] steal_period")
    except UnitError as e:
        raise TopologyError("%s: %s" % (src, e), key=("host", "steal_period")) from None
    if period < 1:
        raise TopologyError("%s: [host] steal_period must be positive" % src, key=("host", "steal_period"))
    late_share = _host_fraction(h, "woken_late_share", src)
    completion = h.get("completion", "queued")
    if completion not in COMPLETION_MODES:
        raise TopologyError("%s: [host] completion must be %s, not %r" % (
            src, " or ".join('"%s"' % m for m in COMPLETION_MODES), completion), key=("host", "completion"))
    nodes, dist = _host_nodes(h, cpus, src)
    return HostModel(cpus, costs["submit_cost"], costs["complete_cost"], costs["wake_cost"],
                     steal=steal, steal_period_ns=period, work_latency_ns=costs["work_latency"],
                     dispatch_ns=costs["dispatch_cost"], cpu_nodes=nodes, node_distance=dist,
                     completion_irq=completion == "interrupt", woken_issue_ns=costs["woken_issue"],
                     woken_late_share=late_share, woken_late_ns=costs["woken_late"])


def _host_fraction(h: dict, key: str, src: str, below_one: bool = False) -> float:
    """[host] KEY, a fraction from 0 to 1 (to below 1 with ``below_one``); 0 when not given."""
    v = h.get(key, 0.0)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not (0 <= v < 1 if below_one else 0 <= v <= 1):
        raise TopologyError("%s: [host] %s must be a fraction from 0 to %s1, not %r" % (
            src, key, "below " if below_one else "", v), key=("host", key))
    return float(v)


def _host_nodes(h: dict, cpus: int, src: str):
    """[host] cpu_nodes (the NUMA node of each CPU) and node_distance (sim/host.py)."""
    nodes = h.get("cpu_nodes")
    if nodes is not None:
        if (not isinstance(nodes, list) or len(nodes) != cpus
                or any(not isinstance(n, int) or isinstance(n, bool) or not 0 <= n <= 1023 for n in nodes)):
            raise TopologyError("%s: [host] cpu_nodes must list one node number (0 to 1023) for each of the %d "
                                "CPU(s)" % (src, cpus), key=("host", "cpu_nodes"))
    dist = h.get("node_distance")
    if dist is not None:
        n = max(nodes or [0]) + 1
        if (not isinstance(dist, list) or len(dist) < n
                or any(not isinstance(r, list) or len(r) != len(dist) for r in dist)
                or any(not isinstance(v, int) or isinstance(v, bool) or not 1 <= v <= 255 for r in dist for v in r)):
            raise TopologyError("%s: [host] node_distance must be a square table of whole numbers (1 to 255) "
                                "covering %d node(s)" % (src, n), key=("host", "node_distance"))
    return nodes, dist


def validate_table(topo: Topology) -> None:
    """Construct the table once so a bad line is reported before a run."""
    try:
        tl = split_table_line(topo.table)
        from .selectors import CpuTopology
        m = construct(tl.params, resolve_device=topo.resolver(),
                      selector_env={"topology": CpuTopology(topo.nr_cpus or 4096)},
                      kernel=topo.kernel, host=topo.host_facts())
    except TargetError as e:
        raise TopologyError("%s: table rejected: %s" % (topo.source or "topology", e)) from None
    models = {p.devt for p in topo.paths}
    for pgpath in m.pgpaths:
        if pgpath.dev.devt not in models:
            raise TopologyError("%s: table path %s has no [paths.*] device model"
                                % (topo.source or "topology", pgpath.dev.name))
    in_table = {pgpath.dev.devt for pgpath in m.pgpaths}
    for p in topo.paths:
        if p.devt not in in_table:
            # it would be counted in Best and never used
            raise TopologyError("%s: paths.%s (devt %d:%d) is not a path of the table; remove it or add it "
                                "to the table" % (topo.source or "topology", p.name, p.devt[0], p.devt[1]))


def load_topology(path: str) -> Topology:
    from .inputs import load_toml
    doc, text = load_toml(path, "topology")
    return _topology_of(doc, text, path)


def topology_from_text(text: str, path: str) -> Topology:
    """The topology of TEXT, as load_topology reads a file of that text at PATH (capture checks what it
    writes with it)."""
    from .inputs import loads_toml
    return _topology_of(loads_toml(text, path, "topology"), text, path)


def _topology_of(doc: dict, text: str, path: str) -> Topology:
    # Errors name the file and the line (of the option, for a problem in a value).
    from .inputs import locate_topology_error, toml_key_line, with_line
    try:
        return topology_from_dict(doc, os.path.basename(path), os.path.dirname(os.path.abspath(path)))
    except TopologyError as e:
        msg = str(e)
        # the key the error names, else the option found from the message
        line = toml_key_line(text, *e.key) if e.key else locate_topology_error(text, msg)
        raise TopologyError(with_line(msg, path, line)) from None


def rewrite_selector(table: str, name: str, args: Sequence[str] = (), resolver=None) -> str:
    """Replace the selector of every PG of a table line, keeping features and paths.

    Per-path selector arguments are dropped (each selector's defaults apply),
    except for io-affinity, which needs a CPU mask: path i gets CPU i.
    """
    cls = lookup(name)
    if cls is None:
        raise TopologyError("unknown path selector %r" % name)
    tl = split_table_line(table)
    m = construct(tl.params, resolve_device=resolver)
    feats = m.features_table()
    hw = "1 %s " % m.hw_handler_name if m.hw_handler_name else "0 "
    initial = m.next_pg.pg_num if m.next_pg is not None else (1 if m.nr_priority_groups else 0)
    parts = [feats, hw, "%u %u " % (m.nr_priority_groups, initial)]
    cpu = 0
    for pg in m.priority_groups:
        parts.append("%s %d %s" % (cls.name, len(args), "".join("%s " % a for a in args)))
        if getattr(cls, "kernel_name", cls.name) == "io-affinity":  # also a C io-affinity (kernelc)
            parts.append("%d 1 " % pg.nr_pgpaths)
            for p in pg.pgpaths:
                parts.append("%s %x " % (p.dev.name, 1 << cpu))
                cpu += 1
        else:
            parts.append("%d 0 " % pg.nr_pgpaths)
            for p in pg.pgpaths:
                parts.append("%s " % p.dev.name)
    return "%d %d multipath %s" % (tl.start, tl.length, "".join(parts).strip())


def parse_service_spec(text: str, where: str = "--service") -> ServiceTime:
    """'400us' (constant), 'exponential:400us', 'lognormal:400us:0.5', 'empirical:FILE'."""
    parts = text.split(":")
    if len(parts) == 1:
        return _service(parts[0], where)
    dist = parts[0].lower()
    if dist == "empirical":
        return _service({"dist": "empirical", "file": ":".join(parts[1:])}, where)
    spec = {"dist": dist, "mean": parts[1]}
    if dist == "lognormal" and len(parts) > 2:
        try:
            spec["sigma"] = float(parts[2])
        except ValueError:
            raise TopologyError("%s: lognormal sigma must be a number, not %r" % (where, parts[2])) from None
    elif len(parts) > 2:
        raise TopologyError("%s: cannot read %r (use 400us, exponential:400us or lognormal:400us:0.5)"
                            % (where, text))
    return _service(spec, where)


def _sd_devt(name: str) -> Optional[Tuple[int, int]]:
    """The kernel's numbering of SCSI disks: sda = 8:0, sdb = 8:16, ..., sdq = 65:0."""
    base = name[5:] if name.startswith("/dev/") else name
    if not (base.startswith("sd") and base[2:].isalpha() and base[2:].islower()):
        return None
    n = 0
    for c in base[2:]:
        n = n * 26 + (ord(c) - ord("a") + 1)
    n -= 1
    group = n // 16
    majors = [8, 65, 66, 67, 68, 69, 70, 71]
    if group >= len(majors):
        return None
    return majors[group], (n % 16) * 16


def topology_from_table(line: str, *, service: str = "exponential:100us", parallelism: int = 1,
                        delay: str = "0", models: Sequence[str] = (), hz: int = 250) -> Topology:
    """A topology straight from a ``dmsetup table`` line, every path with the same
    device model unless ``models`` overrides it: "DEV,service=...,parallelism=N,delay=..."."""
    try:
        tl = split_table_line(line)
    except TargetError as e:
        raise TopologyError("--table: %s" % e) from None
    names: Dict[str, Tuple[int, int]] = {}
    explicit = {d for d in (parse_devt(t) for t in tl.params.split()) if d is not None}

    def resolve(tok: str):
        devt = parse_devt(tok)
        if devt is not None:
            return devt
        if tok not in names:
            devt = _sd_devt(tok) or (259, len(names))
            while devt in explicit or devt in names.values():
                devt = (259, devt[1] + 1 if devt[0] == 259 else len(names))
            names[tok] = devt
        return names[tok]

    try:
        m = construct(tl.params, resolve_device=resolve)
    except TargetError as e:
        raise TopologyError("--table rejected: %s" % e) from None
    overrides: Dict[str, dict] = {}
    for item in models:
        dev, _, rest = item.partition(",")
        if not dev.strip() or not rest.strip():
            raise TopologyError("--model %s: nothing to set; use DEV,service=...,parallelism=N,delay=..." % item)
        kv = {}
        for part in filter(None, rest.split(",")):
            k, sep, v = part.partition("=")
            if not sep or k not in ("service", "parallelism", "delay", "hw_queue_depth"):
                raise TopologyError("--model %s: use DEV,service=...,parallelism=N,delay=...,hw_queue_depth=N "
                                    "(got %r)" % (item, part))
            kv[k] = v
        overrides[dev.strip()] = kv
    paths: List[PathModel] = []
    seen = set()
    for p in m.pgpaths:
        if p.dev.devt in seen:
            continue
        seen.add(p.dev.devt)
        label = p.dev.label
        ov = overrides.pop(label, None) or overrides.pop(p.dev.name, None) or {}
        par = parallelism
        if "parallelism" in ov:
            par = _model_int(ov["parallelism"], label, "parallelism", MAX_PARALLELISM)
        if not 1 <= par <= MAX_PARALLELISM:
            raise TopologyError("--parallelism: parallelism must be from 1 to 65536, got %d" % par)
        qd = 0
        if "hw_queue_depth" in ov:
            qd = _model_int(ov["hw_queue_depth"], label, "hw_queue_depth", WHOLE_MOST["hw_queue_depth"][0])
        try:
            paths.append(PathModel(label, p.dev.devt,
                                   parse_service_spec(ov.get("service", service),
                                                      "--model %s" % label if "service" in ov else "--service"),
                                   parallelism=par, delay_ns=parse_duration_ns(
                                       ov.get("delay", delay), "--model %s" % label if "delay" in ov else "--delay"),
                                   hw_queue_depth=qd))
        except UnitError as e:
            raise TopologyError(str(e)) from None
    if overrides:
        raise TopologyError("--model names %s, which is not a path of the table" % ", ".join(sorted(overrides)))
    table = "%d %d multipath %s" % (tl.start, tl.length, tl.params)
    # path names are the table's tokens, so the default resolver maps them back
    return Topology(table, paths, hz=hz, source="--table")
