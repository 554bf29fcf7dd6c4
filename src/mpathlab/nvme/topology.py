"""The ``[nvme]`` section of a topology file: an NVMe subsystem over the file's path models.

    [host]                       # the one host model (sim/host.py), as for dm runs
    cpus = 4
    cpu_nodes = [0, 0, 1, 1]     # NUMA node of CPU 0, 1, ... (default: all on node 0)
    node_distance = [[10, 20], [20, 10]]   # default: 10 local, 20 remote
    submit_cost = "2us"          # per-I/O CPU costs, as for dm runs

    [paths.sda]                  # a controller's queues: hw_queue_depth = the I/O queue's depth
    hw_queue_depth = 128         # (nvme-tcp queue_size); nr_hw_queues defaults to [host] cpus for a
                                 # controller (one I/O queue per CPU, as nvme-pci/nvme-tcp allocate them)

    [nvme]
    iopolicy = "numa"            # numa | round-robin | queue-depth | adaptive (proposed) |
                                 # spdk-active-passive | spdk-round-robin | spdk-queue-depth
    namespaces = 1               # namespaces, each reachable through every controller
    cross_node_cost = "0us"      # added to an I/O whose CPU is on another node than its controller
    marginal_aware = true        # proposed FPIN marginal handling (PATCH v8, 2025): marginal = non-optimized
    adaptive_weight_timeout = "15s"   # adaptive: time between weight updates
    adaptive_ewma_shift = 3
    spdk_rr_min_io = 1
    kernel = "6.12"              # the release whose head runs: 6.1, 6.12, current (default: [multipath]
                                 # kernel, else current); --kernel overrides
    ctrl_loss_tmo = "600s"       # reconnect attempts: DIV_ROUND_UP(ctrl_loss_tmo, reconnect_delay), then
    reconnect_delay = "10s"      # the controller is deleted (-1: reconnect forever)
    fast_io_fail_tmo = -1        # queued I/O stops waiting for a lost controller after this (-1: off)
    anatt = "10s"                # the controller's ANATT (nvmet: 10 s); a group in change 2 x ANATT resets it
    ana_log_delay = "0us"        # from an ANA change notice or ANA error to the log re-read
    recovery = "0us"             # from a lost connection to error recovery cancelling its requests
    max_retries = 5              # nvme_core.max_retries: same-path retries of a non-path error
    delayed_removal = "0s"       # the head's delayed_removal_secs (kernel "current" only)
    spdk_retry_count = 3         # SPDK bdev_retry_count (-1: forever)
    spdk_preferred = "nvme1"     # SPDK bdev_nvme_set_preferred_path: this controller's path first

    [nvme.controllers.nvme0]     # one per path, in list order; default: one per [paths.*] entry
    path = "sda"                 # its [paths.*] device model (default: the controller's name)
    numa_node = 0                # -1 = NUMA_NO_NODE (the default)
    marginal = false

    [[nvme.ana_groups]]          # default: one group with every namespace, all optimized
    id = 1
    namespaces = [1]
    state = { nvme0 = "optimized", nvme1 = "non-optimized" }

    [[nvme.events]]              # at given times, like faults
    at = "2s"
    ana = { group = 1, controller = "nvme0", state = "inaccessible" }
    # or: marginal = { controller = "nvme1", value = true }   or: iopolicy = "round-robin"
    # or: error = { controller = "nvme0", status = "internal", count = 2, dnr = false }
    #     (statuses internal and medium are non-path errors; host-path is a path error)
"""
from __future__ import annotations

import copy
from typing import Dict, List, Optional, Sequence, Tuple

from ..units import UnitError, parse_duration_ns
from ..inputs import TopologyError
from . import registry
from ..sim.host import HostModel
from .head import INJECTABLE, Controller, HeadTimers, NvmeHead, check_iopolicy
from .policy import ANA_STATES, PolicyError

_KEYS = {"iopolicy", "namespaces", "cross_node_cost", "marginal_aware",
         "adaptive_weight_timeout", "adaptive_ewma_shift", "spdk_rr_min_io", "ctrl_loss_tmo", "fast_io_fail_tmo", "controllers", "ana_groups",
         "events", "kernel", "reconnect_delay", "anatt", "ana_log_delay", "recovery", "max_retries", "delayed_removal",
         "spdk_retry_count", "spdk_preferred"}
_CTRL_KEYS = {"path", "numa_node", "marginal"}


class NvmeTopologyError(TopologyError):
    pass


def _int(v, what, lo=None, hi=None):
    if not isinstance(v, int) or isinstance(v, bool) or (lo is not None and v < lo) or (hi is not None and v > hi):
        rng = "" if lo is None else " from %d%s" % (lo, "" if hi is None else " to %d" % hi)
        raise NvmeTopologyError("%s must be a whole number%s" % (what, rng))
    return v


class NvmeConfig:
    """What the [nvme] section says; ``target(env, iopolicy)`` builds a head for one run."""

    def __init__(self, paths, controllers: List[Tuple[str, str, int, bool]], *, iopolicy="numa", namespaces=1,
                 ana_groups: Optional[Dict[int, Tuple[List[int], Dict[str, str]]]] = None,
                 events: Sequence[Tuple[int, str]] = (), host: Optional[HostModel] = None,
                 cross_node_cost_ns: int = 0, marginal_aware=True,
                 policy_params: Optional[dict] = None, ctrl_loss_tmo_ns: int = 600 * 10 ** 9,
                 fast_io_fail_tmo_ns: int = -1, per_cpu_queues=(), kernel: Optional[str] = None,
                 timers: Optional[HeadTimers] = None):
        self.kernel = kernel              # the [nvme] kernel key (None: the topology's)
        self.timers = timers or HeadTimers()
        self.ctrl_loss_tmo_ns = ctrl_loss_tmo_ns
        self.fast_io_fail_tmo_ns = fast_io_fail_tmo_ns
        by_name = {p.name: p for p in paths}
        self.controllers = controllers
        self.host = host or HostModel()
        self.cross_node_cost_ns = cross_node_cost_ns
        # A controller has one I/O queue per CPU (nvme_tcp/nvme-pci nr_io_queues = online CPUs): a path
        # model that does not set nr_hw_queues gets one hardware queue per [host] CPU.
        self.paths = []
        for _, path, _, _ in controllers:
            pm = by_name[path]
            if path in per_cpu_queues and pm.nr_hw_queues != self.host.cpus:
                pm = copy.copy(pm)
                pm.nr_hw_queues = self.host.cpus
            self.paths.append(pm)
        self.iopolicy = iopolicy
        self.namespaces = namespaces
        self.ana_groups = ana_groups or {1: (list(range(1, namespaces + 1)), {})}
        self.events = list(events)
        self.marginal_aware = marginal_aware
        self.policy_params = dict(policy_params or {})

    def describe(self) -> str:
        return "%d controller(s) %s, %d namespace(s), iopolicy %s, ANA groups %s" % (
            len(self.controllers), ", ".join("%s(path %s%s)" % (n, p, ", node %d" % nn if nn >= 0 else "")
                                             for n, p, nn, _ in self.controllers),
            self.namespaces, self.iopolicy, "; ".join("%d: %s" % (g, st or "all optimized")
                                                      for g, (_, st) in self.ana_groups.items()))

    def check_profile(self, profile, iopolicy: Optional[str] = None) -> None:
        """What the release refuses: a policy it does not offer (also in iopolicy events), delayed
        removal before it existed.  Raises NvmeTopologyError naming the [nvme] key.  ``iopolicy``: the
        policy a run uses instead of the file's (checked by the caller)."""
        checks = [] if iopolicy else [("iopolicy", self.iopolicy, ("nvme", "iopolicy"))]
        checks += [("events[%d].iopolicy" % i, msg.split()[1], ("nvme.events", "iopolicy", i))
                   for i, (_, msg) in enumerate(self.events) if msg.startswith("iopolicy ")]
        for what, name, key in checks:
            try:
                check_iopolicy(name, profile)
            except PolicyError as e:
                raise NvmeTopologyError("%s: %s" % (what, e), key=key) from None
        if self.timers.delayed_removal_ns and not profile.nvme_delayed_removal:
            raise NvmeTopologyError("delayed_removal: kernel %s has no delayed_removal_secs (added in 6.16: kernel "
                                    "\"current\")" % profile.name, key=("nvme", "delayed_removal"))

    def target(self, env: dict, iopolicy: Optional[str] = None, profile=None) -> NvmeHead:
        ctrls = [Controller(name, i, pm.devt, numa, marg)
                 for i, ((name, _, numa, marg), pm) in enumerate(zip(self.controllers, self.paths))]
        group_of = {ns: g for g, (nss, _) in self.ana_groups.items() for ns in nss}
        return NvmeHead(ctrls, iopolicy=iopolicy or self.iopolicy, policy_params=self.policy_params,
                        namespaces=self.namespaces, ana_group_of_ns=group_of,
                        ana={g: st for g, (_, st) in self.ana_groups.items()}, host=self.host,
                        cross_node_cost_ns=self.cross_node_cost_ns,
                        marginal_aware=self.marginal_aware, clock=env.get("clock", lambda: 0),
                        cpu=env.get("cpu", lambda: 0), on_kick=env.get("on_kick"), schedule=env.get("schedule"),
                        ctrl_loss_tmo_ns=self.ctrl_loss_tmo_ns, fast_io_fail_tmo_ns=self.fast_io_fail_tmo_ns,
                        profile=profile, timers=self.timers)


def parse_nvme(doc: dict, paths, src: str, host: Optional[HostModel] = None,
               path_docs: Optional[dict] = None, kernel: Optional[str] = None) -> NvmeConfig:
    """``host``: the topology's [host] (None: one CPU on node 0); ``path_docs``: the raw [paths.*] tables,
    to tell which set nr_hw_queues themselves; ``kernel``: the [multipath] kernel key, if any."""
    try:
        cfg = _parse(doc, paths, src, host or HostModel(), path_docs or {})
        if cfg.kernel is not None and kernel is not None and cfg.kernel != kernel:
            raise NvmeTopologyError("kernel %r differs from [multipath] kernel %r (one host, one kernel)"
                                    % (cfg.kernel, kernel), key=("nvme", "kernel"))
        from ..profiles import get_profile
        cfg.check_profile(get_profile(cfg.kernel or kernel))
        return cfg
    except (NvmeTopologyError, UnitError) as e:
        raise NvmeTopologyError("%s: [nvme] %s" % (src, e), key=getattr(e, "key", None)) from None


def _parse(doc: dict, paths, src: str, host: HostModel, path_docs: dict) -> NvmeConfig:
    if not isinstance(doc, dict):
        raise NvmeTopologyError("must be a table")
    moved = {"cpu_nodes", "node_distance"} & set(doc)
    if moved:
        raise NvmeTopologyError("%s belongs in [host] now (one CPU-to-node map for every stack)"
                                % " and ".join(sorted(moved)), key=("nvme", sorted(moved)[0]))
    bad = set(doc) - _KEYS
    if bad:
        raise NvmeTopologyError("has unknown key(s) %s" % ", ".join(sorted(bad)))
    pol = str(doc.get("iopolicy", "numa"))
    if registry.lookup(pol) is None:
        raise NvmeTopologyError("iopolicy %r is not one of %s" % (pol, ", ".join(registry.names())))
    nns = _int(doc.get("namespaces", 1), "namespaces", 1, 1024)
    path_names = [p.name for p in paths]
    cdoc = doc.get("controllers")
    controllers = []
    if cdoc is None:
        controllers = [(n, n, -1, False) for n in path_names]
    else:
        if not isinstance(cdoc, dict) or not cdoc:
            raise NvmeTopologyError("controllers must be [nvme.controllers.NAME] tables")
        used = {}
        for name, c in cdoc.items():
            if not isinstance(c, dict):
                raise NvmeTopologyError("controllers.%s must be a table" % name)
            bad = set(c) - _CTRL_KEYS
            if bad:
                raise NvmeTopologyError("controllers.%s has unknown key(s) %s" % (name, ", ".join(sorted(bad))))
            path = str(c.get("path", name))
            if path not in path_names:
                raise NvmeTopologyError("controllers.%s.path %r names no [paths.*] model" % (name, path))
            if path in used:
                raise NvmeTopologyError("controllers %s and %s use the same path %s" % (used[path], name, path))
            used[path] = name
            numa = _int(c.get("numa_node", -1), "controllers.%s.numa_node" % name, -1, 1023)
            marg = c.get("marginal", False)
            if not isinstance(marg, bool):
                raise NvmeTopologyError("controllers.%s.marginal must be true or false" % name)
            controllers.append((name, path, numa, marg))
    cnames = [c[0] for c in controllers]
    for c in controllers:
        if c[2] >= host.nr_nodes:
            raise NvmeTopologyError("controllers.%s.numa_node %d: the host has node(s) 0 to %d ([host] cpu_nodes, "
                                    "node_distance)" % (c[0], c[2], host.nr_nodes - 1),
                                    key=("nvme.controllers.%s" % c[0], "numa_node"))
    cross = parse_duration_ns(doc.get("cross_node_cost", 0), "cross_node_cost")
    ma = doc.get("marginal_aware", True)
    if not isinstance(ma, bool):
        raise NvmeTopologyError("marginal_aware must be true or false")
    params = {"weight_timeout_ns": parse_duration_ns(doc.get("adaptive_weight_timeout", "15s"),
                                                     "adaptive_weight_timeout"),
              "ewma_shift": _int(doc.get("adaptive_ewma_shift", 3), "adaptive_ewma_shift", 0, 16),
              "rr_min_io": _int(doc.get("spdk_rr_min_io", 1), "spdk_rr_min_io", 1, 1 << 20)}
    tmo = {}
    for key, default in (("ctrl_loss_tmo", "600s"), ("fast_io_fail_tmo", -1)):
        v = doc.get(key, default)
        tmo[key] = -1 if v == -1 and not isinstance(v, bool) else parse_duration_ns(v, key)
    kernel = doc.get("kernel")
    if kernel is not None:
        from ..profiles import ProfileError, get_profile
        if not isinstance(kernel, str):
            raise NvmeTopologyError("kernel must be a string, e.g. kernel = \"6.12\"", key=("nvme", "kernel"))
        try:
            get_profile(kernel)
        except ProfileError as e:
            raise NvmeTopologyError("kernel: %s" % e, key=("nvme", "kernel")) from None
    timers = _timers(doc, tmo["ctrl_loss_tmo"], cnames)
    if doc.get("spdk_preferred") is not None:
        params["preferred"] = doc["spdk_preferred"]
    groups: Dict[int, Tuple[List[int], Dict[str, str]]] = {}
    gdoc = doc.get("ana_groups")
    if gdoc is not None:
        if not isinstance(gdoc, list):
            raise NvmeTopologyError("ana_groups must be [[nvme.ana_groups]] tables")
        seen_ns = {}
        for i, g in enumerate(gdoc):
            w = "ana_groups[%d]" % i
            if not isinstance(g, dict) or "id" not in g:
                raise NvmeTopologyError("%s needs an id" % w)
            bad = set(g) - {"id", "namespaces", "state"}
            if bad:
                raise NvmeTopologyError("%s has unknown key(s) %s" % (w, ", ".join(sorted(bad))))
            gid = _int(g["id"], w + ".id", 1, 2 ** 32 - 1)
            if gid in groups:
                raise NvmeTopologyError("%s: group %d given twice" % (w, gid))
            nss = g.get("namespaces", list(range(1, nns + 1)))
            if not isinstance(nss, list):
                raise NvmeTopologyError("%s.namespaces must be a list of namespace ids" % w)
            for n in nss:
                _int(n, w + ".namespaces", 1, nns)
                if n in seen_ns:
                    raise NvmeTopologyError("namespace %d is in ANA groups %d and %d" % (n, seen_ns[n], gid))
                seen_ns[n] = gid
            groups[gid] = (list(nss), _ana_states(g.get("state", {}), cnames, w + ".state"))
        # every namespace reports its ANA group (ANAGRPID, Identify Namespace): one left out would
        # otherwise take group 1's states without a word
        orphans = [n for n in range(1, nns + 1) if n not in seen_ns]
        if orphans:
            raise NvmeTopologyError("ana_groups[%d]: namespace(s) %s of namespaces = %d are in no ANA group; list each "
                                    "namespace in one [[nvme.ana_groups]]"
                                    % (len(gdoc) - 1, ", ".join(map(str, orphans)), nns))
    events = []
    if not isinstance(doc.get("events", []), list):
        raise NvmeTopologyError("events must be [[nvme.events]] tables")
    for i, e in enumerate(doc.get("events", [])):
        w = "events[%d]" % i
        if not isinstance(e, dict) or "at" not in e:
            raise NvmeTopologyError("%s needs at" % w)
        bad = set(e) - {"at", "ana", "marginal", "iopolicy", "error"}
        kinds = set(e) - {"at"}
        if bad or len(kinds) != 1:
            raise NvmeTopologyError("%s needs exactly one of ana, marginal, iopolicy, error beside at" % w)
        at = parse_duration_ns(e["at"], "%s.at" % w)
        if "ana" in e:
            a = e["ana"]
            if (not isinstance(a, dict) or set(a) != {"group", "controller", "state"}
                    or not isinstance(a["controller"], str)):
                raise NvmeTopologyError("%s.ana must be {group=N, controller=NAME, state=...}" % w)
            gid = _int(a["group"], w + ".ana.group", 1)
            if gid not in groups and not (gdoc is None and gid == 1):
                raise NvmeTopologyError("%s.ana.group %d is not an ANA group" % (w, gid))
            st = _ana_states({a["controller"]: a["state"]}, cnames, w + ".ana")
            events.append((at, "ana %d %s %s" % (gid, a["controller"], st[a["controller"]])))
        elif "marginal" in e:
            m = e["marginal"]
            if (not isinstance(m, dict) or set(m) != {"controller", "value"} or not isinstance(m["controller"], str)
                    or m["controller"] not in cnames
                    or not isinstance(m["value"], bool)):
                raise NvmeTopologyError("%s.marginal must be {controller=NAME, value=true|false}" % w)
            events.append((at, "marginal %s %d" % (m["controller"], int(m["value"]))))
        elif "error" in e:
            x = e["error"]
            if (not isinstance(x, dict) or not {"controller", "status"} <= set(x) <= {"controller", "status", "count",
                                                                                      "dnr"}
                    or not isinstance(x["controller"], str) or x["controller"] not in cnames
                    or not isinstance(x["status"], str) or x["status"] not in INJECTABLE
                    or not isinstance(x.get("dnr", False), bool)):
                raise NvmeTopologyError("%s.error must be {controller=NAME, status=%s, count=N, dnr=true|false}"
                                        % (w, "|".join(sorted(INJECTABLE))))
            count = _int(x.get("count", 1), w + ".error.count", 1, 1 << 20)
            events.append((at, "error %s %s %d %d" % (x["controller"], x["status"], count, int(x.get("dnr", False)))))
        else:
            if registry.lookup(str(e["iopolicy"])) is None:
                raise NvmeTopologyError("%s.iopolicy %r is not an NVMe I/O policy" % (w, e["iopolicy"]))
            events.append((at, "iopolicy %s" % e["iopolicy"]))
    return NvmeConfig(paths, controllers, iopolicy=pol, namespaces=nns, ana_groups=groups or None,
                      events=events, host=host, cross_node_cost_ns=cross, marginal_aware=ma, policy_params=params,
                      ctrl_loss_tmo_ns=tmo["ctrl_loss_tmo"], fast_io_fail_tmo_ns=tmo["fast_io_fail_tmo"],
                      kernel=kernel, timers=timers,
                      per_cpu_queues={p for p in path_names
                                      if not (isinstance(path_docs.get(p), dict) and "nr_hw_queues" in path_docs[p])})


def _timers(doc: dict, ctrl_loss_tmo_ns: int, cnames) -> HeadTimers:
    """reconnect_delay, anatt, ana_log_delay, recovery, max_retries, delayed_removal, spdk_retry_count."""
    delay = parse_duration_ns(doc.get("reconnect_delay", "10s"), "reconnect_delay")
    if delay <= 0:
        raise NvmeTopologyError("reconnect_delay must be above 0 (the kernel refuses 0)", key=("nvme", "reconnect_delay"))
    src = doc.get("spdk_retry_count", 3)
    spdk = -1 if src == -1 and not isinstance(src, bool) else _int(src, "spdk_retry_count", 0, 1 << 20)
    pref = doc.get("spdk_preferred")
    if pref is not None and pref not in cnames:
        raise NvmeTopologyError("spdk_preferred %r is not a controller (%s)" % (pref, ", ".join(cnames)),
                                key=("nvme", "spdk_preferred"))
    return HeadTimers(reconnect_delay_ns=delay, anatt_ns=parse_duration_ns(doc.get("anatt", "10s"), "anatt"),
                      ana_log_delay_ns=parse_duration_ns(doc.get("ana_log_delay", 0), "ana_log_delay"),
                      max_retries=_int(doc.get("max_retries", 5), "max_retries", 0, 255),
                      delayed_removal_ns=parse_duration_ns(doc.get("delayed_removal", 0), "delayed_removal"),
                      spdk_retry_count=spdk,
                      recovery_ns=parse_duration_ns(doc.get("recovery", 0), "recovery"))


def _ana_states(d, cnames, where) -> Dict[str, str]:
    if not isinstance(d, dict):
        raise NvmeTopologyError("%s must be {CONTROLLER = \"optimized\", ...}" % where)
    out = {}
    for c, st in d.items():
        if not isinstance(st, str):
            raise NvmeTopologyError("%s: the state of %s must be a string" % (where, c))
        if c not in cnames:
            raise NvmeTopologyError("%s names %r, which is not a controller" % (where, c))
        if st not in ANA_STATES:
            raise NvmeTopologyError("%s: %r is not an ANA state (%s)" % (where, st, ", ".join(ANA_STATES)))
        out[c] = st
    return out
