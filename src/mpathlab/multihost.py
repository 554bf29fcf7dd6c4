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

The engine side is :mod:`mpathlab.sim.hosts`; this module reads ``[hosts]``, runs and
formats.  Faults
other than "slow", dm messages and stonewall groups are refused in multi-host
runs; each host has its own SCSI devices (budget, Scsi_Host tags) on the shared ports; the rest runs in the compiled core where sim/fast.py allows (else on the
Python engine, which the run says once on stderr).
Host 0 keeps the single-host selector stream, so a one-host run is the same
run as ``mpathlab run`` (tested).
"""
from __future__ import annotations

import os
from typing import List, Optional

from .inputs import seed_list
from .units import UnitError, parse_duration_ns
from .topology import Topology, TopologyError, reject_unknown_keys, topology_from_dict
from .sim.hosts import MultiHostResult, MultiHostSimulation

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
        return multihost_from_dict(doc, path)
    except (TopologyError, UnitError) as e:
        msg = str(e)
        key = getattr(e, "key", None)
        line = toml_key_line(text, *key) if key else locate_topology_error(text, msg)
        src = os.path.basename(path)
        if not msg.startswith(src + ":"):
            msg = "%s: %s" % (src, msg)        # the shared [paths.NAME] builder does not name the file
        raise TopologyError(with_line(msg, path, line)) from None


def multihost_from_dict(doc: dict, path: str):
    """(Topology, HostsConfig) from a parsed multi-host topology document (its [hosts] is taken out of DOC);
    PATH names it in messages and its directory resolves relative files."""
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


def run_multihost(topo: Topology, cfg: HostsConfig, jobs, *, selector: Optional[str] = None,
                  seed: Optional[int] = None, progress=None) -> MultiHostResult:
    """progress: called with the run's fraction done, as Simulation calls it."""
    from .runner import parse_selector_spec
    if selector:
        name, args = parse_selector_spec(selector)
        topo = topo.with_selector(name, args)
    kw = topo.sim_kwargs()
    kw.pop("messages", None)
    if seed is not None:
        kw["seed"] = seed
    # the compiled core runs it when fast.eligible allows; otherwise the run says why once on stderr
    sim = MultiHostSimulation(topo.table, topo.paths, jobs.jobs, hosts=cfg.count, window_ns=cfg.window_ns,
                              progress=progress, **kw)
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


def _say(text: str) -> None:
    """Print in lines of at most 100 columns; a continuation line is indented 4 more than its line."""
    from .report.text import wrap
    for line in text.split("\n"):
        print("\n".join(wrap(line, " " * (len(line) - len(line.lstrip()) + 4))))


def cmd_hosts(args, progress=None) -> int:
    """``mpathlab hosts TOPOLOGY JOB``: every selector, every seed; per-port load and tails with intervals.
    progress: the command line's progress bar (called with a label and the fraction of all runs done)."""
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
    seeds = seed_list(args.seeds)
    rows = []
    _say("%s: %d hosts, ports %s; every host runs %s" % (os.path.basename(args.topology), cfg.count,
                                                         ", ".join(p.name for p in topo.paths), os.path.basename(args.job)))
    total = len(sels) * len(seeds)
    for k, sel in enumerate(sels):
        for i, seed in enumerate(seeds):
            done = k * len(seeds) + i
            cb = None if progress is None else (
                lambda f, _l="hosts %d/%d" % (done + 1, total), _d=done: progress(_l, (_d + f) / total))
            if progress is not None:
                progress("hosts %d/%d" % (done + 1, total), done / total)
            r = run_multihost(topo, cfg, jobs, selector=sel, seed=seed, progress=cb)
            if progress is not None:
                progress.done()
            if i == 0:
                _say(format_run(r) + ("   (seed %d)" % seed))
            rows.extend(tail_rows(sel, seed, r))
    base = [b for b in ("historical-service-time", "service-time") if b in sels]
    _say(tail_text(rows, baselines=base))
    if base:
        win = beats(rows, base, 99.0, measure="all hosts")
        _say("p99 of all I/O, interval wholly below %s's: %s" % (" and ".join(base), ", ".join(win) or "none"))
    return 0
