"""Many hosts, one array, in the engine: per-host targets over shared port devices.

The engine's only hook is ``Simulation._target_of(io)`` (which target an I/O goes through); the
reader of ``[hosts]`` and the ``mpathlab hosts`` command are :mod:`mpathlab.multihost`.  The compiled
core runs the same model (_fastcore.c "multi-host": per-host selector state over shared paths).
"""
from __future__ import annotations

import random
from typing import Dict, List

from ..target import construct, mapping_resolver, split_table_line
from .engine import SimResult, Simulation
from .stats import LatencyStats, merged_latency


class MultiHostSimulation(Simulation):
    """``hosts`` copies of the jobs, each copy mapped through its own target; shared port devices."""

    def __init__(self, table_line: str, paths, jobs, *, hosts: int, seed: int = 1, **kw):
        specs = list(jobs)
        # one host is the single-host model: only several hosts lack these (cli's _check_multihost names them)
        if hosts > 1 and any(j.stonewall for j in specs[1:]):
            raise ValueError("stonewall groups are not modelled with several hosts")
        self.nr_hosts = hosts
        super().__init__(table_line, paths, specs * hosts, seed=seed, **kw)
        if hosts > 1 and self.mp.hw_handler_name:
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
                           host=kw.get("host_facts"))
            mp.table_start, mp.table_length = tl.start, tl.length
            if self.blk is not None and self.blk.rq:
                mp.alloc_clone = self.blk.alloc_clone     # its clones take the shared ports' tags too
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

    def _map(self, io) -> bool:
        issued = super()._map(io)
        if issued and io.dev is not None:     # issued to a path (request-based: also from the dm queue)
            self.host_port[io.job.host][self._dev_index[io.dev]] += 1
        return issued


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
