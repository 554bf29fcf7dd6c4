"""io-affinity (dm-io-affinity, Mike Christie 2020).

Each path is given a cpumask; an I/O goes to the path mapped to the CPU that
submits it.  If that CPU has no mapping (counted in map_misses) or its path
has failed, try the CPUs of the same NUMA node, then every mapped CPU, in
ascending order.  There is no load awareness and no start/end accounting.

The submitting CPU and the CPU topology are injected: ``cpu`` is a callable
returning the current CPU id, ``topology`` a :class:`CpuTopology`.
"""
from __future__ import annotations

from typing import Callable, Optional, Sequence

from ..kernel import EINVAL, BitmapParseError, bitmap_parse, bitmap_string
from .base import STATUS_INFO, STATUS_TABLE, PathSelector, SelectorError, check_status_kind


class CpuTopology:
    """nr_cpu_ids and the CPU -> NUMA node map (default: one node)."""

    def __init__(self, nr_cpu_ids: int = 8, node_of: Optional[Sequence[int]] = None):
        if nr_cpu_ids < 1:
            raise ValueError("nr_cpu_ids must be at least 1")
        self.nr_cpu_ids = nr_cpu_ids
        self.node_of = list(node_of) if node_of is not None else [0] * nr_cpu_ids
        if len(self.node_of) != nr_cpu_ids:
            raise ValueError("node_of must name a node for each of the %d CPUs" % nr_cpu_ids)

    def cpus_of_node(self, node: int):
        return [c for c, n in enumerate(self.node_of) if n == node]


class _IOAPath:
    __slots__ = ("path", "cpumask", "failed")

    def __init__(self, path, cpumask):
        self.path = path
        self.cpumask = cpumask
        self.failed = False


class IOAffinity(PathSelector):
    name = "io-affinity"
    version = None  # logs no version line
    table_args = 1
    info_args = 1

    def __init__(self, args=(), *, cpu: Optional[Callable[[], int]] = None,
                 topology: Optional[CpuTopology] = None, **env):
        super().__init__(args, **env)
        self.topology = topology or CpuTopology()
        self._cpu = cpu or (lambda: 0)
        n = self.topology.nr_cpu_ids
        self.path_map = [None] * n   # cpu -> _IOAPath
        self.path_mask = 0           # CPUs that have a mapping
        self.map_misses = 0          # atomic_t
        self._info: dict = {}

    def add_path(self, path, args=()):
        if len(args) != 1:
            raise SelectorError("io-affinity ps: invalid number of arguments")
        n = self.topology.nr_cpu_ids
        try:
            mask = bitmap_parse(args[0], n)
        except BitmapParseError as e:
            # ioa_add_path turns every cpumask_parse failure into -EINVAL.
            raise SelectorError("io-affinity ps: invalid cpumask", errno=EINVAL, detail=str(e)) from None
        if path in self._info:
            raise ValueError("path %r is already in this io-affinity selector" % (path,))
        pi = _IOAPath(path, mask)
        mapped = False
        cpu = 0
        m = mask
        while m:
            if m & 1:
                if cpu >= n:
                    self.dm_warn("Ignoring mapping for CPU %u. Max CPU is %u" % (cpu, n))
                    break
                if self.path_map[cpu] is not None:
                    self.dm_warn("CPU mapping for %u exists. Ignoring." % cpu)
                else:
                    self.path_map[cpu] = pi
                    self.path_mask |= 1 << cpu
                    mapped = True
            m >>= 1
            cpu += 1
        if not mapped:
            raise SelectorError("io-affinity ps: No new/valid CPU mapping found")
        self._info[path] = pi

    def fail_path(self, path):
        self.path_info(path).failed = True

    def reinstate_path(self, path):
        self.path_info(path).failed = False
        return 0

    def select_path(self, nr_bytes=0):
        cpu = self._cpu()
        pm = self.path_map
        pi = pm[cpu] if 0 <= cpu < len(pm) else None
        if pi is not None and not pi.failed:
            return pi.path
        if pi is None:
            self.map_misses += 1
        topo = self.topology
        if 0 <= cpu < topo.nr_cpu_ids:
            for i in topo.cpus_of_node(topo.node_of[cpu]):
                cand = pm[i]
                if cand is not None and not cand.failed:
                    return cand.path
        mask = self.path_mask
        i = 0
        while mask:
            if mask & 1:
                cand = pm[i]
                if cand is not None and not cand.failed:
                    return cand.path
            mask >>= 1
            i += 1
        return None

    def status(self, path, kind="info"):
        kind = check_status_kind(kind)
        if path is None:
            return "0 "
        pi = self.path_info(path)
        if kind == STATUS_INFO:
            return "%d " % self.map_misses
        if kind == STATUS_TABLE:
            return "%s " % bitmap_string(pi.cpumask, self.topology.nr_cpu_ids)
        return ""

    def valid_order(self):
        return [p for p, pi in self._info.items() if not pi.failed]
