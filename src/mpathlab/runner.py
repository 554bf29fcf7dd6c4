"""Glue between files on disk and a simulation run (what the CLI calls)."""
from __future__ import annotations

from typing import Callable, Optional

from .sim.engine import SimResult, Simulation
from .workload.fio import FioJobFile, load_fio
from .topology import Topology, load_topology


def parse_selector_spec(spec: str):
    """'historical-service-time:972,2' -> ('historical-service-time', ['972', '2']).

    A C selector is 'c:PATH[@opt...][:ARGS]' (the name keeps its 'c:').
    """
    if spec.startswith("c:"):
        path, _, args = spec[2:].partition(":")
        return "c:" + path.strip(), [a for a in args.split(",") if a] if args else []
    name, _, args = spec.partition(":")
    return name.strip(), [a for a in args.split(",") if a] if args else []


def run_simulation(topo: Topology, jobs: FioJobFile, *, selector: Optional[str] = None,
                   seed: Optional[int] = None, progress: Optional[Callable[[float], None]] = None,
                   **overrides) -> SimResult:
    if (selector or "").startswith("nvme:") or (not selector and not topo.table and topo.nvme is not None):
        from .nvme.run import run_nvme
        return run_nvme(topo, jobs, policy=selector[5:] if selector else None, seed=seed, progress=progress,
                        **overrides)
    if not topo.table:
        from .topology import TopologyError
        raise TopologyError("%s has no [multipath] table for selector %s (NVMe policies are nvme:NAME)"
                            % (topo.source or "topology", selector))
    if selector:
        name, args = parse_selector_spec(selector)
        topo = topo.with_selector(name, args)
    kw = topo.sim_kwargs()
    if seed is not None:
        kw["seed"] = seed
    kw.update({k: v for k, v in overrides.items() if v is not None})
    named = [(max(j.cpus_allowed), j.name) for j in jobs.jobs if j.cpus_allowed]
    if kw.get("nr_cpus") and named and max(named)[0] >= kw["nr_cpus"]:
        from .topology import TopologyError
        cpu, name = max(named)
        raise TopologyError("%s: [multipath] nr_cpus = %d, but job %r of %s runs on CPU %d (cpus_allowed)"
                            % (topo.source or "topology", kw["nr_cpus"], name, jobs.source or "the job file", cpu))
    sim = Simulation(topo.table, topo.paths, jobs.jobs, progress=progress, **kw)
    from .budget import check_run
    check_run(sim, topo, job_source=jobs.source or "")
    result = sim.run()
    from .stall import annotate
    annotate(sim, result, topo.paths, topo.messages)
    result.check_accounting()
    return result


def run_files(topology_path: str, job_path: str, **kw) -> SimResult:
    return run_simulation(load_topology(topology_path), load_fio(job_path), **kw)
