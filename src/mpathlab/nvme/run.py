"""Run a fio job over the NVMe subsystem of a topology (what runner.run_simulation calls for nvme:POLICY)."""
from __future__ import annotations

from typing import Callable, Optional

from ..sim.engine import SimResult, Simulation
from . import registry
from .topology import NvmeTopologyError


def run_nvme(topo, jobs, *, policy: Optional[str] = None, seed: Optional[int] = None,
             progress: Optional[Callable[[float], None]] = None, **overrides) -> SimResult:
    cfg = topo.nvme
    if cfg is None:
        raise NvmeTopologyError("%s has no [nvme] section, so nvme:%s cannot run on it"
                                % (topo.source or "topology", policy or ""))
    if policy and registry.lookup(policy) is None:
        raise NvmeTopologyError("unknown NVMe I/O policy %r; known: %s" % (policy, ", ".join(registry.names())))
    kw = {"uptime_ns": topo.uptime_ns, "seed": topo.seed if seed is None else seed, "nr_cpus": topo.nr_cpus,
          "messages": list(cfg.events)}
    kw.update({k: v for k, v in overrides.items()
               if v is not None and k in ("uptime_ns", "window_ns", "drain_ns", "timeline_points", "engine")})
    sim = Simulation("", cfg.paths, jobs.jobs, progress=progress,
                     target=lambda env: cfg.target(env, policy), **kw)
    result = sim.run()
    result.check_accounting()
    return result
