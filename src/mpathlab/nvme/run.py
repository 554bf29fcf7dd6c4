"""Run a fio job over the NVMe subsystem of a topology (what runner.run_simulation calls for nvme:POLICY),
and what the simulator does for the NVMe transport beyond the dm surface (``attach``)."""
from __future__ import annotations

from typing import Callable, Optional

from ..sim.engine import EV_ARRIVE, EV_CALL, EV_DONE, SimResult, Simulation
from . import registry
from .head import check_iopolicy
from .policy import PolicyError
from .topology import NvmeTopologyError

HOST_ABORTED = "host-aborted"     # NVME_SC_HOST_ABORTED_CMD: a path error, so the request fails over


def run_nvme(topo, jobs, *, policy: Optional[str] = None, seed: Optional[int] = None,
             progress: Optional[Callable[[float], None]] = None, kernel: Optional[str] = None,
             **overrides) -> SimResult:
    """One run of the topology's NVMe subsystem with ``policy`` (default: its iopolicy) as kernel
    ``kernel`` has it (default: the topology's kernel, else "current")."""
    cfg = topo.nvme
    if cfg is None:
        raise NvmeTopologyError("%s has no [nvme] section, so nvme:%s cannot run on it"
                                % (topo.source or "topology", policy or ""))
    if policy and registry.lookup(policy) is None:
        raise NvmeTopologyError("unknown NVMe I/O policy %r; known: %s" % (policy, ", ".join(registry.names())))
    from ..profiles import ProfileError, get_profile
    try:
        profile = get_profile(kernel or topo.kernel)
    except ProfileError as e:
        raise NvmeTopologyError(str(e)) from None
    if policy:
        try:
            check_iopolicy(policy, profile)
        except PolicyError as e:
            raise NvmeTopologyError("nvme:%s: %s" % (policy, e)) from None
    try:
        cfg.check_profile(profile, policy)
    except NvmeTopologyError as e:
        raise NvmeTopologyError("%s: [nvme] %s" % (topo.source or "topology", e)) from None
    kw = {"uptime_ns": topo.uptime_ns, "seed": topo.seed if seed is None else seed, "nr_cpus": topo.nr_cpus,
          "messages": list(cfg.events)}
    if topo.host is not None:
        kw["host"] = topo.host      # the same host model (CPU costs, blocking submitters) as dm runs
    kw.update({k: v for k, v in overrides.items()
               if v is not None and k in ("uptime_ns", "window_ns", "drain_ns", "timeline_points", "engine")})
    sim = Simulation("", cfg.paths, jobs.jobs, progress=progress,
                     target=lambda env: cfg.target(env, policy, profile), **kw)
    attach(sim)
    from ..budget import check_run
    check_run(sim, topo, paths=cfg.paths, messages=cfg.events, events="[nvme] events",
              job_source=jobs.source or "")
    result = sim.run()
    from ..stall import annotate
    annotate(sim, result, cfg.paths, cfg.events)
    result.check_accounting()
    ana_best(result, cfg)
    result.failed_over = dict(sim.mp.failed_over)    # type: ignore[attr-defined]
    return result


def lab_figures(result: SimResult, since_ns: Optional[int] = None, until_ns: Optional[int] = None) -> dict:
    """What a kernel-lab cell measures, from a model run: completed I/Os per controller and their shares,
    the I/Os that failed (what fio counts as errors), and the stall: the longest span after
    ``since_ns`` (default: the first message or event of the run; None when there is none) and before
    ``until_ns`` (default: the end of the run) in which no I/O was dispatched, to window resolution
    (run with window_ns set)."""
    ctrls = {p.get("dev", p["name"]): p["completed"] for p in result.paths}
    total = sum(ctrls.values())
    if since_ns is None and result.messages:
        since_ns = min(t for t, _, _ in result.messages)
    stall = None
    if since_ns is not None and result.window_ns:
        end = result.runtime_ns if until_ns is None else min(until_ns, result.runtime_ns)
        busy = sorted(t for t, counts in result.windows
                      if t + result.window_ns > since_ns and t < end and sum(counts.values()))
        edges = [since_ns] + busy + [end]
        stall = max(max(0, b - a - result.window_ns) for a, b in zip(edges, edges[1:])) if busy else \
            end - since_ns
    return {"controllers": ctrls, "shares": {c: (n / total if total else 0.0) for c, n in ctrls.items()},
            "errors": result.errored, "stall_ns": stall, "submitted": result.submitted,
            "failed_over": dict(getattr(result, "failed_over", {}))}


def ana_best(result: SimResult, cfg) -> None:
    """Best as the head may spread I/O: per ANA group, each usable controller's share of the usable
    capacity, where usable is optimized (non-optimized only when no controller is optimized for the group;
    inaccessible, persistent-loss and change never), the groups weighted by their namespaces (job clones
    go to the namespaces in turn). The states are those the run starts with. The path column names the
    controller: an NVMe path (nvmeXcYnZ) has no device number of its own."""
    from ..sim.stats import mean_abs_deviation
    ctrl_of = {path: name for name, path, _, _ in cfg.controllers}
    capacity = dict(result.best)        # every path's share of the total capacity, at the job's I/O size
    best = {name: 0.0 for name in capacity}
    total_ns = sum(len(nss) for nss, _ in cfg.ana_groups.values()) or 1
    for nss, states in cfg.ana_groups.values():
        state = {path: states.get(ctrl, "optimized") for path, ctrl in ctrl_of.items()}
        usable = ([p for p, st in state.items() if st == "optimized"]
                  or [p for p, st in state.items() if st == "non-optimized"])
        if not usable:
            continue
        cap = sum(capacity.get(p, 0.0) for p in usable)
        for p in usable:
            best[p] += (capacity.get(p, 0.0) / cap if cap else 1.0 / len(usable)) * len(nss) / total_ns
    result.best = best
    result.mean_deviation = mean_abs_deviation(result.shares, best)
    for p in result.paths:
        p["best"] = best.get(p["name"], 0.0)
        if p["name"] in ctrl_of:
            p["dev"] = ctrl_of[p["name"]]


def attach(sim: Simulation) -> None:
    """Give the NVMe head of ``sim`` the transport's cancellation of a lost controller's requests.  With
    a recovery time, a failed port's controller learns of the loss when it happens (the connection
    closes), and its started requests are held until the cancel."""
    held: dict = {}
    head = sim.mp
    head.cancel_in_flight = lambda ctrl: sim.call_at(sim.now, _cancel_tagset, (sim, sim.dev_of_pgpath[ctrl], held))
    head.hold_in_flight = lambda ctrl: held.setdefault(sim.dev_of_pgpath[ctrl], []).extend(
        _pull_started(sim, sim.dev_of_pgpath[ctrl]))
    if head.timers.recovery_ns > 0:
        ctrl_of = {dev: ctrl for ctrl, dev in sim.dev_of_pgpath.items()}
        fail_device = sim.fail_device

        def fail_and_tell(dev):
            if dev in ctrl_of:
                head.transport_lost(ctrl_of[dev])     # holds what the device had started
            fail_device(dev)
        sim.fail_device = fail_and_tell


def _pull_started(sim, dev) -> list:
    """Every request ``dev`` had started and not yet completed, taken out of the event queue.

    Started requests are those travelling to the device (EV_ARRIVE), waiting in its queue, or being
    served (EV_DONE).  The device itself does not learn of it: a request it is serving keeps its server
    until the service ends (the target finishes the command; the host no longer listens).  Requests
    still waiting for a tag were never started; they fail at queue_rq once they get one
    (NvmeHead.driver_start).  Completions already on a host CPU were received and stand."""
    pulled = []

    def cancel(kind, obj):
        if kind == EV_ARRIVE and obj.dev is dev:
            pulled.append(obj)
            return ()
        if kind == EV_DONE and obj.dev is dev:
            pulled.append(obj)
            return (EV_CALL, (_server_free, (sim, dev)))
        return None
    sim.edit_events(cancel)
    pulled.extend(dev.queue)
    dev.queue.clear()
    return pulled


def _cancel_tagset(arg) -> None:
    """Error recovery has torn down the controller's I/O queues (nvme_cancel_tagset): every request it
    had started and not yet completed (held since the loss, or still under way) completes now with
    HOST_ABORTED_CMD, and the head fails it over."""
    sim, dev, held = arg
    aborted = held.pop(dev, []) + _pull_started(sim, dev)
    for io in sorted(aborted, key=lambda io: io.submit_ns):
        sim.path_done(io, HOST_ABORTED)


def _server_free(arg) -> None:
    """The device ends the service of a cancelled request: its server takes the next one (as EV_DONE does)."""
    sim, dev = arg
    if dev.queue:
        nxt = dev.queue.popleft()
        sim.schedule(sim.now + dev.service_ns(nxt.nr_bytes), EV_DONE, nxt)
    else:
        dev.busy -= 1
