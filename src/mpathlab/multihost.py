"""Many hosts, one array: N hosts, each with its own multipath device, sharing the array's ports.

A multi-host topology is an ordinary topology file (the ``[multipath]`` table
every host loads, and one ``[paths.NAME]`` model per *array port*) plus a
``[hosts]`` section::

    [hosts]
    count = 8          # hosts; each loads the table, so each has its own selector instances
    window = "1ms"     # per-port load is counted in windows of this length

Every host runs its own copy of the fio job file and maps its I/O through its
own :class:`~mpathlab.target.Multipath` (own priority groups, own selector
state: a host sees only its own outstanding I/O and its own latencies).  A
path of a host's table names a port, and all hosts' paths to a port share
that port's device: one queue in front of its servers, so one host's load is
another host's latency.

This module composes the engine rather than changing it: the only hook is
``Simulation._target_of(io)`` (which target an I/O goes through).  Faults,
dm messages and stonewall groups are refused in multi-host runs, and the
compiled core refuses them (sim/fast.py), so they run on the Python engine.
Host 0 keeps the single-host selector stream, so a one-host run is the same
run as ``mpathlab run`` (tested).
"""
from __future__ import annotations

import os
import random
from typing import Dict, List, Optional

from .target import construct, mapping_resolver, split_table_line
from .units import UnitError, parse_duration_ns
from .topology import Topology, TopologyError, reject_unknown_keys, topology_from_dict
from .sim.engine import SimResult, Simulation
from .sim.stats import LatencyStats, merged_latency

HOST_KEYS = {"count", "window"}


class HostsConfig:
    def __init__(self, count: int, window_ns: int):
        self.count = count
        self.window_ns = window_ns


def load_multihost(path: str):
    """(Topology, HostsConfig) from a multi-host topology file; TopologyError on bad input, naming the
    file and the option's line as load_topology does."""
    from .inputs import load_toml, locate_topology_error, toml_key_line, with_line
    # read as every topology file is: binary, non-UTF-8 and TOML errors as FILE:LINE
    doc, text = load_toml(path, "topology")
    try:
        return _multihost_from_dict(doc, path)
    except (TopologyError, UnitError) as e:
        msg = str(e)
        key = getattr(e, "key", None)
        line = toml_key_line(text, *key) if key else locate_topology_error(text, msg)
        src = os.path.basename(path)
        if not msg.startswith(src + ":"):
            msg = "%s: %s" % (src, msg)        # the shared [paths.NAME] builder does not name the file
        raise TopologyError(with_line(msg, path, line)) from None


def _multihost_from_dict(doc: dict, path: str):
    src = os.path.basename(path)
    hosts = doc.pop("hosts", None)
    if not isinstance(hosts, dict):
        raise TopologyError("%s: a multi-host topology needs a [hosts] section with count = N" % src)
    reject_unknown_keys(hosts, HOST_KEYS, src, "hosts")
    count = hosts.get("count")
    if not isinstance(count, int) or isinstance(count, bool) or not 1 <= count <= 1024:
        raise TopologyError("%s: [hosts] count must be a whole number from 1 to 1024" % src, key=("hosts", "count"))
    try:
        window = parse_duration_ns(hosts.get("window", "1ms"), "[hosts] window")
    except UnitError as e:
        raise TopologyError("%s: %s" % (src, e), key=("hosts", "window")) from None
    if window <= 0:
        raise TopologyError("%s: [hosts] window must be positive" % src, key=("hosts", "window"))
    topo = topology_from_dict(doc, src, os.path.dirname(os.path.abspath(path)))
    # A port that slows down is a device event every host sees through its own latencies; failures
    # and messages act on one target (reinstate_path, switch_group) and are not modelled across hosts.
    if topo.messages or any(f.action != "slow" for p in topo.paths for f in p.faults):
        raise TopologyError("%s: only \"slow\" faults are modelled with several hosts (no fail/reinstate "
                            "faults, no [[messages]])" % src)
    return topo, HostsConfig(count, window)


class MultiHostSimulation(Simulation):
    """``hosts`` copies of the jobs, each copy mapped through its own target; shared port devices."""

    def __init__(self, table_line: str, paths, jobs, *, hosts: int, seed: int = 1, **kw):
        specs = list(jobs)
        if any(j.stonewall for j in specs[1:]):
            raise ValueError("stonewall groups are not modelled with several hosts")
        self.nr_hosts = hosts
        super().__init__(table_line, paths, specs * hosts, seed=seed, **kw)
        if self.mp.hw_handler_name:
            raise ValueError("hardware handlers are not modelled with several hosts")
        per_host = len(self.jobs) // hosts
        for i, job in enumerate(self.jobs):
            job.host = i // per_host
        self.targets = [self.mp]
        tl = split_table_line(table_line)
        by_name = {pm.name: pm.devt for pm in self.paths}
        devs_by_devt = {d.model.devt: d for d in self.devices}
        for h in range(1, hosts):
            env = {"clock": self._ktime, "cpu": lambda: self._cur_cpu, "topology": self.topology,
                   "rng": random.Random("mpathlab-selectors-%d-host%d" % (seed, h))}
            if self.sched_clock_offset_ns is not None:
                env["select_clock"] = lambda: self._base + self.now + self.sched_clock_offset_ns
            mp = construct(tl.params, resolve_device=mapping_resolver(by_name), selector_env=env,
                           timebase=self.timebase, rq_stats=kw.get("rq_stats", True),
                           force_jiffies_start=kw.get("force_jiffies_start"), activate=self._activate,
                           on_kick=self._on_kick, set_timer=self._set_timer, kernel=self.kernel,
                           host=kw.get("host"))
            mp.table_start, mp.table_length = tl.start, tl.length
            for pgpath in mp.pgpaths:
                self.dev_of_pgpath[pgpath] = devs_by_devt[pgpath.dev.devt]
            self.targets.append(mp)
        self.host_port = [[0] * len(self.devices) for _ in range(hosts)]

    def _target_of(self, io):
        return self.targets[io.job.host]

    def _on_kick(self, mp) -> None:
        if mp is not self.mp:
            # the run loop drains only host 0's queue; nothing in a multi-host run queues
            # (no faults, messages or handlers), so this is a modelling gap, not a case to guess at
            raise RuntimeError("a multi-host run reached queued I/O on host %d" % self.targets.index(mp))
        super()._on_kick(mp)

    def _dispatch(self, io) -> None:
        super()._dispatch(io)
        if io.dev is not None:
            self.host_port[io.job.host][self._dev_index[io.dev]] += 1


class MultiHostResult:
    """A multi-host run: the engine's result plus per-host and per-port views."""

    def __init__(self, sim: MultiHostSimulation, res: SimResult):
        self.result = res
        self.selector = res.selector
        self.ports = [d.model.name for d in sim.devices]
        self.window_ns = res.window_ns
        self.windows = res.windows
        hosts = sim.nr_hosts
        self.host_latency: List[LatencyStats] = [merged_latency([j for j in res.jobs if j.host == h])
                                                 for h in range(hosts)]
        self.host_port = [dict(zip(self.ports, row)) for row in sim.host_port]
        self.all_latency = merged_latency(res.jobs)
        self.completed = res.completed
        self.runtime_ns = res.runtime_ns
        self.port_share = dict(res.shares)

    def port_load_series(self) -> List[Dict[str, float]]:
        """Per window, each port's share of the I/O dispatched in that window."""
        out = []
        for _, counts in self.windows:
            tot = sum(counts.values())
            out.append({p: (counts.get(p, 0) / tot if tot else 0.0) for p in self.ports})
        return out

    def port_in_flight(self) -> List[Dict[str, int]]:
        """The engine's in-flight snapshots: I/O on each port (queued or in service), all hosts together."""
        return [c for _, c in self.result.timeline]

    def mean_in_flight(self) -> Dict[str, float]:
        snaps = self.port_in_flight()
        return {p: (sum(c[p] for c in snaps) / len(snaps) if snaps else 0.0) for p in self.ports}

    def imbalance(self) -> float:
        """Mean over the in-flight snapshots of (most loaded port - least loaded) / all in flight: 0 when even."""
        snaps = [c for c in self.port_in_flight() if sum(c.values())]
        if not snaps:
            return 0.0
        return sum((max(c.values()) - min(c.values())) / sum(c.values()) for c in snaps) / len(snaps)

    def busiest_changes(self) -> int:
        """How often the port with the most I/O in flight changed between snapshots (herds moving)."""
        prev = None
        n = 0
        for c in self.port_in_flight():
            if not sum(c.values()):
                continue
            top = max(self.ports, key=lambda p: c[p])
            if prev is not None and top != prev:
                n += 1
            prev = top
        return n

    def host_percentile(self, p: float) -> List[int]:
        return [st.percentiles((p,))["%f" % p] for st in self.host_latency]


def run_multihost(topo: Topology, cfg: HostsConfig, jobs, *, selector: Optional[str] = None,
                  seed: Optional[int] = None) -> MultiHostResult:
    from .runner import parse_selector_spec
    if selector:
        name, args = parse_selector_spec(selector)
        topo = topo.with_selector(name, args)
    kw = topo.sim_kwargs()
    kw.pop("messages", None)
    if seed is not None:
        kw["seed"] = seed
    sim = MultiHostSimulation(topo.table, topo.paths, jobs.jobs, hosts=cfg.count, window_ns=cfg.window_ns,
                              engine="python", **kw)
    res = sim.run()
    res.check_accounting()
    return MultiHostResult(sim, res)


def tail_rows(selector: str, seed: int, r: MultiHostResult) -> List[dict]:
    """Rows for mpathlab.report.tails: the tails of all I/O, and of the worst host (per percentile)."""
    from .report.tails import TAIL_COLUMNS, TAIL_PERCENTILES
    allp = r.all_latency.percentiles(TAIL_PERCENTILES)
    depth = max((j.spec.iodepth for j in r.result.jobs), default=0)
    rows = [{"selector": selector, "iodepth": depth, "measure": "all hosts", "seed": seed},
            {"selector": selector, "iodepth": depth, "measure": "worst host", "seed": seed}]
    for p, col in TAIL_COLUMNS.items():
        rows[0][col] = allp["%f" % p]
        rows[1][col] = max(r.host_percentile(p))
    return rows


def format_run(r: MultiHostResult, slices: int = 10) -> str:
    """Per-port load over time (mean in-flight I/O in ``slices`` stretches of the run), shares, per-host tails."""
    from .units import format_ns
    lines = ["%s: %d I/Os in %s; I/O in flight per port (all hosts) over the run, in %d slices:"
             % (r.selector, r.completed, format_ns(r.runtime_ns), slices)]
    snaps = r.port_in_flight()
    k = max(1, (len(snaps) + slices - 1) // slices)
    for p in r.ports:
        cells = ["%5.1f" % (sum(c[p] for c in snaps[i:i + k]) / len(snaps[i:i + k])) for i in range(0, len(snaps), k)]
        lines.append("  port %-6s share %.3f | %s" % (p, r.port_share.get(p, 0.0), " ".join(cells)))
    lines.append("  imbalance (mean of (most - least in flight) / all in flight): %.2f; the most loaded port "
                 "changed %d times in %d snapshots" % (r.imbalance(), r.busiest_changes(), len(snaps)))
    p99 = r.host_percentile(99.0)
    lines.append("  per-host p99: " + " ".join("h%d %s" % (h, format_ns(v)) for h, v in enumerate(p99)))
    return "\n".join(lines)


def cmd_hosts(args) -> int:
    """``mpathlab hosts TOPOLOGY JOB``: every selector, every seed; per-port load and tails with intervals."""
    from .report.tails import beats, tail_text
    from .runner import parse_selector_spec
    from .selectors import lookup
    from .workload.fio import load_fio
    topo, cfg = load_multihost(args.topology)
    jobs = load_fio(args.job)
    sels = [s for s in args.selectors.split(";" if ";" in args.selectors else ",") if s.strip()]
    for s in sels:
        if lookup(parse_selector_spec(s)[0]) is None:
            raise TopologyError("unknown path selector %r" % s)
    try:
        seeds = [int(x) for x in args.seeds.split(",") if x.strip()]
    except ValueError:
        raise TopologyError("--seeds: cannot read %r as comma-separated whole numbers" % args.seeds) from None
    if not seeds:
        raise TopologyError("--seeds: empty list")
    rows = []
    print("%s: %d hosts, ports %s; every host runs %s" % (os.path.basename(args.topology), cfg.count,
                                                         ", ".join(p.name for p in topo.paths), os.path.basename(args.job)))
    for sel in sels:
        for i, seed in enumerate(seeds):
            r = run_multihost(topo, cfg, jobs, selector=sel, seed=seed)
            if i == 0:
                print(format_run(r) + ("   (seed %d)" % seed))
            rows.extend(tail_rows(sel, seed, r))
    base = [b for b in ("historical-service-time", "service-time") if b in sels]
    print(tail_text(rows, baselines=base))
    if base:
        win = beats(rows, base, 99.0, measure="all hosts")
        print("p99 of all I/O, interval wholly below %s's: %s" % (" and ".join(base), ", ".join(win) or "none"))
    return 0
