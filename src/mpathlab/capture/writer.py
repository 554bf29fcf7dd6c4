"""The writer: a :class:`Capture` as topology files (docs/formats.md) that `mpathlab run`, `report` and
`sweep` take unchanged, one per multipath map. What was measured is written as values; what could not be
read is written as comments; where the topology needs a value that sysfs does not hold (a device's
internal concurrency, a service time on a path that completed nothing in the window), the value is marked
ASSUMED in the comment beside it.
"""
from __future__ import annotations

import json
import re
from typing import List, Optional

from .collect import Capture, MapCapture, PathCapture

# sim.devices.SCHEDULERS: the ones a topology can model
MODELLED_SCHEDULERS = ("none", "mq-deadline", "kyber", "bfq")
NO_IO_SERVICE = "1ms"        # the placeholder of a path that completed nothing in the window
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def _key(name: str) -> str:
    return name if _BARE_KEY.fullmatch(name) else json.dumps(name)


def _comment(text: str) -> List[str]:
    return ["# " + line if line else "#" for line in text.splitlines()] or ["#"]


def _duration(ms: float) -> str:
    """A service time with enough digits: 4.1234 ms -> "4123.4us"."""
    us = ms * 1000.0
    return ("%.1fus" % us) if us < 1e6 else ("%.6fs" % (ms / 1000.0))


def write_topology(cap: Capture, m: MapCapture, version: str = "") -> str:
    """The topology file of map ``m``."""
    out: List[str] = []
    out += _comment("captured by mpathlab capture%s from %s" % (" " + version if version else "", cap.source))
    out.append("# map %s (%s%s%s)" % (m.name, m.dm, ", %d:%d" % m.devt if m.devt else "",
                                      ", uuid %s" % m.uuid if m.uuid else ""))
    if cap.window_s is not None:
        out.append("# service times: /sys/block/*/stat over a window of %.2f s" % cap.window_s)
    if m.window:
        ios = sum(v[0] for k, v in m.window.items() if k != "flush")
        out.append("# the map itself completed %d I/Os in the window (%s)" % (
            ios, ", ".join("%s %d" % (k, v[0]) for k, v in m.window.items() if v[0])))
    if m.status:
        out.append("# dmsetup status: %s" % m.status)
    for n in cap.notes + m.notes:
        out += _comment("not read: " + n)
    if cap.dm_other:
        out.append("# other dm devices (not written): %s" % "; ".join(cap.dm_other))
    out.append("description = %s" % json.dumps("captured map %s from %s%s" % (
        m.name, cap.source, " (kernel %s)" % cap.release if cap.release else "")))
    out.append("")
    out.append("[multipath]")
    table = m.table
    if table is None:
        table = _assumed_table(m, cap, out)
    out.append("table = %s" % json.dumps(table))
    _kernel(cap, out)
    if cap.cpus:
        out.append("nr_cpus = %d    # /sys/devices/system/cpu/online" % cap.cpus)
    if cap.hz:
        out.append("hz = %d    # CONFIG_HZ" % cap.hz)
    for d in m.path_devts:
        p = cap.paths.get(d)
        out.append("")
        if p is None:
            out.append("# path %s: no block device found, not written (the table names it)" % d)
            continue
        _path(p, m, out)
    if cap.cpus:
        out += ["", "[host]", "cpus = %d    # the host's CPUs; CPU costs per I/O are not captured (0 = free)"
                % cap.cpus]
    _nvme_comments(cap, out)
    if cap.conf is not None:
        out += ["", "# multipath.conf (%s), as read:" % cap.conf_source]
        out += _comment(cap.conf.rstrip("\n"))
    return "\n".join(out) + "\n"


def _assumed_table(m: MapCapture, cap: Capture, out: List[str]) -> str:
    n = len(m.path_devts)
    out.append("# ASSUMED table: dmsetup could not be read, so the selector, features and groups are not known;")
    out.append("# the line below puts the map's %d slave(s) in one group under service-time, multipath-tools'"
               % n)
    out.append("# default selector, and is not what the host runs. Replace it with `dmsetup table %s`." % m.name)
    return "0 %d multipath 0 0 1 1 service-time 0 %d 2 %s" % (
        m.size or 2048, n, " ".join("%s 1 1" % d for d in m.path_devts))


def _kernel(cap: Capture, out: List[str]) -> None:
    if not cap.series:
        out.append("# kernel: release not read, the default profile applies")
        return
    from ..profiles import ProfileError, get_profile
    try:
        get_profile(cap.series)
    except ProfileError as e:
        out.append("# kernel %s: no profile (%s); the default profile applies" % (cap.release, e))
        return
    out.append("kernel = %s    # release %s" % (json.dumps(cap.series), cap.release))


def _path(p: PathCapture, m: MapCapture, out: List[str]) -> None:
    out.append("[paths.%s]" % _key(p.name))
    out.append("devt = %s" % json.dumps(p.devt_text))
    if p.kind:
        out.append("kind = %s    # %s" % (json.dumps(p.kind), p.kind_from))
    svc = p.service_ms()
    if svc:
        per_dir = ", ".join("%s %d I/Os %.3f ms" % (d, ios - p.refused.get(d, 0), t / (ios - p.refused.get(d, 0)))
                            for d, (ios, t, _) in p.window.items() if ios - p.refused.get(d, 0) > 0 and d != "flush")
        if p.little_ms is not None:
            mean, n = p.driver_inflight
            out.append("service = %s    # Little's law: %.2f requests in the driver (%d samples) at %.0f "
                       "completions/s; the stat ticks (%s) also hold time in its %s scheduler (bio-based map)"
                       % (json.dumps(_duration(svc[0])), mean, n, mean / p.little_ms * 1000.0, per_dir,
                          p.queue.get("scheduler")))
        else:
            out.append("service = %s    # mean over %d I/Os in the window (%s); constant: sysfs gives the mean "
                       "only" % (json.dumps(_duration(svc[0])), svc[1], per_dir))
    else:
        out.append("service = %s    # ASSUMED: no I/O completed on this path in the window, nothing measured"
                   % json.dumps(NO_IO_SERVICE))
    q = p.queue
    tags = q.get("nr_tags")
    qd = q.get("queue_depth")
    depth = min(tags, qd) if isinstance(tags, int) and isinstance(qd, int) else (tags if isinstance(tags, int) else qd)
    if isinstance(depth, int) and depth > 0:
        why = "mq/*/nr_tags %s" % tags if tags is not None else ""
        if qd is not None:
            why += "%sdevice/queue_depth %d (the LUN's limit)" % (", " if why else "", qd)
        out.append("hw_queue_depth = %d    # %s" % (depth, why))
        out.append("parallelism = %d    # ASSUMED: the device serves every tag at once (its internal "
                   "concurrency is not in sysfs)" % depth)
    else:
        out.append("# driver tags not known: hw_queue_depth not written (unlimited), parallelism 1")
    if q.get("nr_hw_queues"):
        out.append("nr_hw_queues = %d    # entries of mq/" % q["nr_hw_queues"])
    sched = q.get("scheduler")
    if isinstance(sched, str):
        if sched in MODELLED_SCHEDULERS:
            out.append("scheduler = %s" % json.dumps(sched))
            if sched != "none" and isinstance(q.get("nr_requests"), int):
                out.append("nr_requests = %d" % q["nr_requests"])
        else:
            out.append("# scheduler %s is not modelled: left out (none)" % sched)
    facts = []
    for k in ("rotational", "logical_block_size", "max_sectors_kb"):
        if k in q:
            facts.append("%s %s" % (k, q[k]))
    if sched == "none" and "nr_requests" in q:
        facts.append("nr_requests %s" % q["nr_requests"])
    if p.inflight:
        facts.append("in flight (reads, writes) at the window's start and end: %s"
                     % ", ".join("%d/%d" % x for x in p.inflight))
    st = m.path_state(p.devt_text)
    if st:
        facts.append("path state %s, fail count %d" % st)
    if facts:
        out.append("# " + "; ".join(facts))
    for n in p.notes:
        out += _comment("not read: " + n)


def _nvme_comments(cap: Capture, out: List[str]) -> None:
    if not cap.nvme:
        return
    out.append("")
    out.append("# NVMe subsystems (native multipath; not part of this dm map; each is a file of its own):")
    for s in cap.nvme:
        out.append("#   %s iopolicy %s nqn %s" % (s["name"], s["iopolicy"] or "(not read)", s["nqn"] or "(not read)"))
        for c in s["controllers"]:
            out.append("#     controller %s %s %s %s" % (c["name"], c["state"] or "?", c["transport"] or "?",
                                                       c["address"] or ""))
            for p in c["paths"]:
                out.append("#       path %s ANA %s group %s" % (p.name, p.ana_state or "(not read)", p.ana_grpid or "?"))


# the kernel's iopolicy names (drivers/nvme/host/multipath.c nvme_iopolicy_names) the simulator models
NVME_IOPOLICIES = ("numa", "round-robin", "queue-depth")


def write_nvme_topology(cap: Capture, sub: dict, version: str = "") -> str:
    """The topology file of NVMe subsystem ``sub`` (docs/nvme.md): one path model per controller (its
    first namespace path's service time), the iopolicy, the controllers and their ANA states."""
    out: List[str] = []
    out += _comment("captured by mpathlab capture%s from %s" % (" " + version if version else "", cap.source))
    out.append("# NVMe subsystem %s (%s)" % (sub["name"], sub["nqn"] or "nqn not read"))
    if cap.window_s is not None:
        out.append("# service times: each controller path's stat over a window of %.2f s" % cap.window_s)
    for n in cap.notes:
        out += _comment("not read: " + n)
    out.append("description = %s" % json.dumps("captured NVMe subsystem %s from %s%s" % (
        sub["name"], cap.source, " (kernel %s)" % cap.release if cap.release else "")))
    ctrls = [c for c in sub["controllers"] if c["paths"]]
    for c in ctrls:
        p = c["paths"][0]
        out.append("")
        out.append("[paths.%s]" % _key(c["name"]))
        if p.devt != (0, 0):
            out.append("devt = %s    # %s" % (json.dumps(p.devt_text), p.name))
        out.append("kind = \"nvme\"")
        svc = p.service_ms()
        if svc:
            out.append("service = %s    # %s: mean over %d I/Os in the window" % (json.dumps(_duration(svc[0])), p.name, svc[1]))
        else:
            out.append("service = %s    # ASSUMED: no I/O completed on %s in the window" % (json.dumps(NO_IO_SERVICE), p.name))
        qc, sq = c.get("queue_count"), c.get("sqsize")
        if sq and sq.isdigit():
            # sqsize is 0's based (NVMe base spec, MQES): the I/O queues' depth is one more
            out.append("hw_queue_depth = %d    # sqsize %s + 1" % (int(sq) + 1, sq))
            out.append("parallelism = %d    # ASSUMED: the controller serves every queued command at once" % (int(sq) + 1))
        if qc and qc.isdigit() and int(qc) > 1:
            out.append("nr_hw_queues = %d    # queue_count %s less the admin queue" % (int(qc) - 1, qc))
        for n in p.notes:
            out += _comment("not read: " + n)
    if cap.cpus:
        out += ["", "[host]", "cpus = %d" % cap.cpus]
    out += ["", "[nvme]"]
    pol = sub["iopolicy"]
    if pol in NVME_IOPOLICIES:
        out.append("iopolicy = %s" % json.dumps(pol))
    else:
        out.append("# iopolicy %s: %s" % (pol or "not read", "not modelled, the default applies" if pol else "the default applies"))
    for c in ctrls:
        out.append("")
        out.append("[nvme.controllers.%s]" % _key(c["name"]))
        out.append("path = %s" % json.dumps(c["name"]))
        node = c.get("numa_node")
        if node is not None and node.lstrip("-").isdigit():
            out.append("numa_node = %s" % node)
    groups: dict = {}
    for c in ctrls:
        p = c["paths"][0]
        if p.ana_state and p.ana_grpid and p.ana_grpid.isdigit():
            groups.setdefault(int(p.ana_grpid), {})[c["name"]] = p.ana_state
    for gid, states in sorted(groups.items()):
        out += ["", "[[nvme.ana_groups]]", "id = %d" % gid, "namespaces = [1]",
                "state = { %s }" % ", ".join("%s = %s" % (_key(k), json.dumps(v)) for k, v in states.items())]
    return "\n".join(out) + "\n"


def summary(cap: Capture) -> str:
    """What a capture found, for the terminal."""
    lines = ["captured %s: kernel %s, %s CPU(s), %d multipath map(s)%s" % (
        cap.source, cap.release or "(not read)", cap.cpus or "?", len(cap.maps),
        ", window %.2f s" % cap.window_s if cap.window_s is not None else "")]
    for m in cap.maps:
        lines.append("  map %s (%s): %d path(s)%s" % (m.name, m.dm, len(m.path_devts),
                                                      "" if m.table else ", table not read"))
    for s in cap.nvme:
        lines.append("  NVMe subsystem %s: iopolicy %s, %d controller(s)" % (s["name"], s["iopolicy"] or "?",
                                                                          len(s["controllers"])))
    return "\n".join(lines)
