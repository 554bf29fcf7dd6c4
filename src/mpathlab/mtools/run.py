"""Running a fio job over a map built from multipath.conf, with multipathd in the loop,
and the `maps` view (table lines and `multipath -ll`) without simulating."""
from __future__ import annotations

import random
from typing import Callable, Dict, List, Optional

from ..topology import TopologyError
from .conf import Config
from .daemon import Multipathd
from .maps import Multipath, build_maps, check_map, map_target
from .paths import PathTopology
from .printer import format_ll
from .prioritizers import PrioEnv


def prio_env(topo: PathTopology, seed: int) -> PrioEnv:
    """Prioritizers draw from the run's seed; path_latency times reads on each path's
    device model (its fixed delay + one 4 KiB service time)."""
    samplers: Dict[str, Callable] = {}
    master = random.Random(seed ^ 0x5EED)

    def read_latency_ns(path) -> float:
        m = path.model
        if path.name not in samplers:
            samplers[path.name] = m.service.sampler(random.Random(master.getrandbits(64)))
        return m.delay_ns + samplers[path.name]() + m.ns_per_kib * 4

    return PrioEnv(seed, read_latency_ns)


def discover(conf: Config, topo: PathTopology, seed: Optional[int] = None):
    env = prio_env(topo, topo.sim.get("seed", 1) if seed is None else seed)
    maps, dropped = build_maps(conf, topo.paths, size_sectors=topo.size_sectors, env=env, wwids=topo.wwids)
    for mp in maps:
        check_map(mp, "%s: " % conf.source)
    return maps, dropped, env


def loaded_target(mp: Multipath, first_io: bool = True):
    """The kernel's view of a freshly loaded map; with first_io, after one I/O has
    chosen the group (udev probes every new map), which is what -ll normally shows."""
    t = map_target(mp)
    for pp in mp.paths:
        if pp.state not in ("ready", "ghost"):
            t.message("fail_path", pp.path.dev_t)
    if first_io:
        t.choose_pgpath(4096)
    return t


def settings_lines(mp: Multipath) -> List[str]:
    """Each setting with where it came from, as `multipath -v3` logs them (propsel.c)."""
    out = []
    for key in ("path_grouping_policy", "path_selector", "features", "hardware_handler", "rr_weight",
                "rr_min_io_rq", "failback", "no_path_retry", "alias"):
        val = mp.alias if key == "alias" else mp.settings.get(key)
        if val is None:
            val = "undef"
        out.append("%s: %s = %s %s" % (mp.alias, key, val, mp.origins.get(key, "")))
    for pp in mp.paths:
        out.append("%s: prio = %s %s" % (pp.name, pp.prio_name, pp.origins.get("prio", "")))
        out.append("%s: prio args = \"%s\" %s" % (pp.name, pp.prio_args, pp.origins.get("prio", "")))
        out.append("%s: path_checker = %s %s" % (pp.name, pp.checker, pp.origins.get("path_checker", "")))
    return out


def maps_text(conf: Config, topo: PathTopology, verbose: bool = False) -> str:
    maps, dropped, _ = discover(conf, topo)
    out = []
    for p, why in dropped:
        out.append("%s: %s" % (p.name, why))
    if verbose:
        for mp in maps:
            out.extend(settings_lines(mp))
    for mp in maps:
        out.append("table: %s" % mp.table_line())
    for mp in maps:
        out.append("")
        out.append(format_ll(mp, loaded_target(mp)))
    return "\n".join(out)


def simulate_conf(conf: Config, topo: PathTopology, jobs, *, seed: Optional[int] = None, map_name: str = "",
                  progress=None, **overrides):
    """Build the map, simulate the jobs on it with multipathd running; returns
    (SimResult, Multipathd, map)."""
    from ..sim.engine import Simulation
    maps, dropped, env = discover(conf, topo, seed)
    if not maps:
        raise TopologyError("%s: no map: %s" % (topo.source, "; ".join(
            "%s %s" % (p.name, why) for p, why in dropped) or "no paths"))
    if map_name:
        chosen = [m for m in maps if map_name in (m.alias, m.wwid)]
        if not chosen:
            raise TopologyError("--map %s: no such map (maps: %s)" % (map_name, ", ".join(m.alias for m in maps)))
        mp = chosen[0]
    elif len(maps) > 1:
        raise TopologyError("%s: %d maps (%s); choose one with --map" % (
            topo.source, len(maps), ", ".join(m.alias for m in maps)))
    else:
        mp = maps[0]
    kw = dict(topo.sim)
    if seed is not None:
        kw["seed"] = seed
    kw.update(overrides)
    sim = Simulation(mp.table_line(), [pp.path.model for pp in mp.paths], jobs, progress=progress, **kw)
    d = Multipathd(mp, conf.checkint(), conf.max_checkint(), env=env, topology=topo)
    sim.add_daemon(d)
    res = sim.run()
    return res, d, mp


def daemon_report(d: Multipathd, sim_target) -> str:
    lines = ["multipathd (polling_interval %ds, max %ds): %d loops" % (d.checkint, d.max_checkint, d.loops)]
    for t, text in d.log:
        lines.append("  %10.3fs  %s" % (t / 1e9, text))
    lines.append("")
    lines.append(format_ll(d.mp, sim_target))
    return "\n".join(lines)
