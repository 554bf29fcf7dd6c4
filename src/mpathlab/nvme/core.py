"""The NVMe head in the compiled core: the head's side of the bridge (mpathlab._fastcore, section
"NVMe head"; the dm target's side is sim/fast.py).

The core runs an NVMe run's per-I/O steps itself: the path choice of the numa, round-robin and
queue-depth policies (numa.py, round_robin.py, queue_depth.py and policy.py's find_nearest, function
for function), NvmeHead.driver_start with the cross-node cost, and NvmeHead.end_io of a request that
completes without a status.  Every other step calls the one Python head (:class:`_CoreHead`): a map
that finds no path or of an I/O the head holds (queued, failed over, retried on its path), an end
with a status (the transport's, an injected one, an ANA state that does not answer), the kick of
the requeue list, and every message and timer (ANA changes and log reads, controller loss,
reconnects and deletion, iopolicy writes, marginal flags).  Each call gets the state the core changed
(each controller's nr_active, each head's current paths: NvmeHot) and returns the head's whole state
(NvmeState), so both sides stay one state.  A lost controller's cancellation (run.py _cancel_tagset)
is the core's EV_NVME_CANCEL; the core keeps its heap in the Python engine's array order, so the
cancelled requests come in the same order.

With an error recovery time, a failed device's controller learns of the loss first (the core calls
:meth:`_CoreHead.transport_lost`, as run.py's attach wraps fail_device) and the head's hold of its started
requests is the core's EV_NVME_HOLD, applied at once.

What stays in the Python engine (:func:`refusal` names it): the adaptive and SPDK policies, and an
iopolicy write to one of them; path tags (the block layer's submitted_by_worker).
"""
from __future__ import annotations

import sys

from ..sim import boundary as b
from ..sim import fast
from ..sim.boundary import (EV_CALL, EV_NVME_CANCEL, EV_NVME_HOLD, CoreEvent, NvmeCtrl, NvmeHeadState, NvmeHot, NvmeMapResult, NvmePath,
                            NvmeState, TargetFlags)
from ..target import END_DONE, MAP_REMAPPED, MAP_SUBMITTED, MpathIO
from . import run as nvme_run
from .head import NvmeHead, _Req
from .policy import CTRL_DELETING, CTRL_LIVE, NON_OPTIMIZED, OPTIMIZED, path_is_disabled, state_is_live

_ANA = {OPTIMIZED: b.NVME_ANA_OPTIMIZED, NON_OPTIMIZED: b.NVME_ANA_NON_OPTIMIZED}


class _CoreNvmeIO(MpathIO):
    """The head's view of one of the core's I/Os (NvmeHead.nshead_for reads nsid)."""
    __slots__ = ("cid", "nsid")

    def __init__(self, cid: int, nsid: int, nr_bytes: int):
        MpathIO.__init__(self, nr_bytes)
        self.cid, self.nsid = cid, nsid


class _CoreHead(fast.CoreTarget):
    """The Python head, called by the core for everything but the per-I/O steps.  Controllers are
    known to the core by their path device's index."""

    def __init__(self, sim, ctrls):
        fast.CoreTarget.__init__(self, sim)
        self.head: NvmeHead = sim.mp
        self.ctrls = ctrls                                   # by path device
        self.index = {c: i for i, c in enumerate(ctrls)}
        self.dev_index = {d: i for i, d in enumerate(sim.devices)}
        # every namespace through every controller (a deleted controller's path leaves its head's list,
        # but requests started on it still end through it)
        self.nspath = [[h.path_via(c) for c in ctrls] for h in self.head.nsheads]
        self.nnodes = self.head.host.nr_nodes
        self.policies = [self.head.policy]       # the run's policy objects: the core numbers them
        self.held = {}                           # cid -> _CoreNvmeIO the head holds
        self.c_pg = self.head.priority_groups[0]     # (fast.write_back: no dm selector state to write)
        # run.py attach's hold of a lost controller's started requests: the core's, while it runs
        self.hold_in_flight = self.head.hold_in_flight
        self.head.hold_in_flight = lambda ctrl: self._events.append(
            CoreEvent(t=sim.now, kind=EV_NVME_HOLD, obj=self.index[ctrl]))

    def close(self) -> None:
        fast.CoreTarget.close(self)
        self.head.hold_in_flight = self.hold_in_flight

    def core_event(self, kind, obj):
        if kind == EV_CALL and obj[0] is nvme_run._cancel_tagset:
            return EV_NVME_CANCEL, self.dev_index[obj[1][1]]
        return fast.CoreTarget.core_event(self, kind, obj)

    # -- the state that crosses -------------------------------------------------
    def state(self):
        head = self.head
        pol = head.policy
        if not any(p is pol for p in self.policies):
            self.policies.append(pol)
        gen = next(i for i, p in enumerate(self.policies) if p is pol)
        kind = b.NVME_POLICY_KINDS.get(pol.name, -1)     # another policy: the core refuses it
        ctrls = [NvmeCtrl(io_ok=int(c.state in (CTRL_LIVE, CTRL_DELETING)), live=int(c.state == CTRL_LIVE),
                          marginal=int(head.marginal_aware and c.marginal), nr_active=c.nr_active,
                          injecting=int(bool(c.inject))) for c in self.ctrls]
        heads = [NvmeHeadState(
            paths=[NvmePath(ctrl=self.index[ns.ctrl], ana=_ANA.get(ns.ana_state, b.NVME_ANA_OTHER),
                            disabled=int(path_is_disabled(ns))) for ns in h.paths],
            current=[self._ctrl_of(h.current_path.get(node)) for node in range(self.nnodes)],
            target_live=[int(state_is_live(head.target_ana(h.anagrpid, c))) for c in self.ctrls])
            for h in head.nsheads]
        return NvmeState(policy=kind, policy_gen=gen, counts_active=int(pol.counts_active), ctrls=ctrls, heads=heads)

    def _ctrl_of(self, ns) -> int:
        return -1 if ns is None else self.index[ns.ctrl]

    def enter(self, hot) -> None:
        """The core's NvmeHot into the head."""
        hot = NvmeHot._make(hot)
        for c, n in zip(self.ctrls, hot.nr_active):
            c.nr_active = n
        for h, nsp, cur in zip(self.head.nsheads, self.nspath, hot.current):
            h.current_path.clear()
            h.current_path.update((node, nsp[c]) for node, c in enumerate(cur) if c >= 0)
        if len(self.head._ns_of_job) != sum(h >= 0 for h in hot.job_head):
            heads = self.head.nsheads
            self.head._ns_of_job = {j: heads[h] for j, h in zip(self.sim.jobs, hot.job_head) if h >= 0}
        self.begin_call()

    def flags(self):
        kick_pending, state_changes = self.sim_flags()
        return TargetFlags(nr_valid_paths=self.head.nr_valid_paths, bits=0, queue_if_no_path=0,
                           kick_pending=kick_pending, current_pg=0, active=[True] * len(self.ctrls),
                           state_changes=state_changes)

    def _leave(self, result):
        return result, self.state(), self.flags(), self.take_events()

    # -- the calls from the core --------------------------------------------------
    def map(self, hot, cid, h, nr_bytes, cpu):
        self.enter(hot)
        self.begin_call(cpu)
        io = self.held.pop(cid, None) or _CoreNvmeIO(cid, h + 1, nr_bytes)
        r = self.head.map(io)
        if r == MAP_SUBMITTED:
            self.held[cid] = io
            return self._leave(NvmeMapResult(b.MAP_CODES[r], -1, 0))
        self.head._requeued.discard(io)     # what driver_start does first (the core starts it)
        if r == MAP_REMAPPED:
            return self._leave(NvmeMapResult(b.MAP_CODES[r], self.index[io.pgpath], io.tag.retries))
        return self._leave(NvmeMapResult(b.MAP_CODES[r], -1, 0))

    def end_io(self, hot, cid, h, ctrl, cpu, retries, started, counted, policy_gen, start_ns, err):
        self.enter(hot)
        io = _CoreNvmeIO(cid, h + 1, 0)
        io.pgpath = self.ctrls[ctrl]
        req = io.tag = _Req(self.nspath[h][ctrl], cpu, retries)
        req.started, req.counted, req.start_ns = bool(started), bool(counted), start_ns
        req.policy = self.policies[policy_gen] if started else None
        r = self.head.end_io(io, self.errors[err] if err else None)
        if r == END_DONE:
            return self._leave((b.END_CODES[r], self.error_code(io.error)))
        self.held[cid] = io             # END_REQUEUE: failed over, or retried on its own path
        return self._leave((b.END_CODES[r], 0))

    def kick(self, hot):
        self.enter(hot)
        self.kicked()
        return self._leave([io.cid for io in self.head.take_queued()])

    def message(self, hot, index, run):
        self.enter(hot)
        self.send_message(index, run)
        return self._leave(None)

    def transport_lost(self, hot, ctrl):
        """A fault fails the controller's device with a recovery time (run.py attach: fail_and_tell)."""
        self.enter(hot)
        self.head.transport_lost(self.ctrls[ctrl])
        return self._leave(None)


def refusal(sim) -> str:
    """'' when the core can run this NVMe simulation, else why not (fast.eligible asks)."""
    head = sim.mp
    if head.policy.name not in b.NVME_POLICY_KINDS:
        return "the NVMe I/O policy %s runs in the Python engine" % head.policy.name
    for text in fast.scheduled_messages(sim):
        argv = text.split()
        if argv[:1] == ["iopolicy"] and len(argv) == 2 and argv[1] not in b.NVME_POLICY_KINDS:
            return "an iopolicy write to %s (that policy runs in the Python engine)" % argv[1]
    if sim.blk is not None:
        return "path tags of an NVMe run (hw_queue_depth, nr_requests, SCSI paths) need the Python engine"
    host = head.host
    if any(not 0 <= host.node_of_cpu(j.cpu) < host.nr_nodes for j in sim.jobs) or any(
            c.numa_node >= host.nr_nodes for c in head.controllers):
        return "a CPU or controller on a NUMA node the host does not have"
    if any(len(h.paths) != len(head.controllers) for h in head.nsheads):
        return "every namespace must start with a path through every controller"
    return ""


def run(sim) -> bool:
    """Run the NVMe simulation SIM in the core (fast.try_run_fast calls this once refusal() is '')."""
    head: NvmeHead = sim.mp
    devices = sim.devices
    ctrl_of = {sim.dev_of_pgpath[c]: c for c in head.controllers}
    ctrls = [ctrl_of[d] for d in devices]
    bridge = _CoreHead(sim, ctrls)
    host = head.host
    ncpu = max([j.cpu for j in sim.jobs], default=0) + 1
    cfg = fast.run_config(sim)
    cfg.update({
        # the head chooses the path: no dm selector runs (the core's Python-selector slot, never called)
        "selector": b.SEL_PY, "pg_selectors": [b.SEL_PY], "order": [], "bio": 0, "rq_stats": 0, "use_hr": 0,
        "scsi": None,
        "weights": [0] * b.HST_WEIGHTS, "threshold": 0,
        "paths": [dict(fast.device_config(sim, d), rt=1, hst=0, outstanding=0, stale_after=0, last_finish=0,
                       valid_count=0, pg=0) for d in devices],
    })
    cfg.update(fast.initial_events(sim, bridge))
    job_index = {j: i for i, j in enumerate(sim.jobs)}
    job_head = [-1] * len(sim.jobs)
    for job, h in head._ns_of_job.items():
        job_head[job_index[job]] = head.nsheads.index(h)
    cfg.update({"target": bridge, "target_flags": bridge.flags(), "nvme": {
        "nheads": len(head.nsheads), "nnodes": host.nr_nodes, "marginal_aware": int(head.marginal_aware),
        "cross_node_cost": head.cross_node_cost_ns, "nassigned": len(head._ns_of_job),
        "recovery": int(head.timers.recovery_ns > 0),
        "node_of_cpu": [host.node_of_cpu(c) for c in range(ncpu)],
        "numa_node": [c.numa_node for c in ctrls],
        "distance": [host.distance(n, c.numa_node) if c.numa_node >= 0 else b.NVME_LOCAL_DISTANCE
                     for n in range(host.nr_nodes) for c in ctrls],
        "job_head": job_head, "state": bridge.state()}})
    try:
        out = fast.simulate(cfg)
    finally:
        bridge.close()
    out["target"] = bridge
    bridge.enter(out["nvme"])
    fast.write_back(sim, out, {i: (c, None) for i, c in enumerate(ctrls)})
    return True


fast.register_target(NvmeHead, sys.modules[__name__])
