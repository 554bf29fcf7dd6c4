"""The NVMe multipath head: an NVMe subsystem's controllers and namespaces, and
the target object the simulator drives (the same surface as the dm target:
``map(io)``, ``end_io(io, error)``, ``message(...)``, ``status(kind)``,
``pgpaths``, ``take_queued()``), so :class:`mpathlab.sim.engine.Simulation`
runs it unchanged through its ``target=`` argument.

Model (drivers/nvme/host/multipath.c and core.c, described in README
"NVMe native multipath"):

- one :class:`Controller` per path (port); it carries the path device model,
  its state (live, resetting, connecting, deleting), its NUMA node (-1 =
  NUMA_NO_NODE), the FPIN ``marginal`` flag and ``nr_active``, the in-flight
  count the queue-depth policy reads, shared by every namespace on it;
- one :class:`NsHead` per namespace (``struct nvme_ns_head``), listing one
  :class:`NsPath` (``struct nvme_ns``) per controller, in controller order, and
  its per-NUMA-node current path;
- ANA: every namespace belongs to an ANA group; each controller reports a
  state per group (optimized, non-optimized, inaccessible, persistent-loss,
  change).
- Submission (``nvme_ns_head_submit_bio``): the policy picks a path; if none,
  the I/O waits on the head's requeue list while some controller is live,
  resetting or connecting, else it fails.
- A path error (``nvme_failover_req``): the path's cached state is cleared,
  the controller goes into error recovery (connecting), the I/O is requeued
  and resubmitted at once.  Non-path errors complete the I/O with the error.
- When a controller comes back, or an ANA change makes a path live, the
  namespace is set live: if the path is optimized every node's current path
  is recomputed, and the requeue list is kicked.
"""
from __future__ import annotations

import collections
from typing import Callable, Dict, List, Optional, Sequence

from ..kernel import EINVAL
from ..target import END_DONE, END_REQUEUE, MAP_KILL, MAP_REMAPPED, MAP_SUBMITTED, MessageError
from ..target.multipath import blk_path_error
from . import registry
from ..sim.host import HostModel
from .policy import (ANA_STATES, CTRL_CONNECTING, CTRL_DEAD, CTRL_DELETING, CTRL_LIVE, CTRL_RESETTING, OPTIMIZED,
                     find_nearest, path_is_optimized, state_is_live)

ANA_ERROR = "ana"      # NVME_SC_ANA_INACCESSIBLE / _PERSISTENT_LOSS / _TRANSITION: a path error


class Controller:
    """struct nvme_ctrl, as far as path selection sees it.  Also the engine's "pgpath"."""

    def __init__(self, name: str, index: int, devt=(0, 0), numa_node: int = -1, marginal: bool = False):
        self.name = name
        self.index = index
        self.devt = tuple(devt)
        self.numa_node = numa_node
        self.marginal = marginal
        self.state = CTRL_LIVE
        self.nr_active = 0
        self.failfast = False     # NVME_CTRL_FAILFAST_EXPIRED
        self.loss_gen = 0         # bumped when the controller changes state: stale timers do nothing

    @property
    def dev(self):       # the engine finds a path's device model through pgpath.dev.devt
        return self

    def __repr__(self):
        return "Controller(%s)" % self.name


class NsPath:
    """struct nvme_ns: one namespace seen through one controller."""

    __slots__ = ("ctrl", "nshead", "ready")

    def __init__(self, ctrl: Controller, nshead: "NsHead"):
        self.ctrl = ctrl
        self.nshead = nshead
        self.ready = True

    @property
    def ana_state(self) -> str:
        return self.nshead.subsys.ana_state(self.nshead.anagrpid, self.ctrl)

    def __repr__(self):
        return "NsPath(n%d via %s)" % (self.nshead.nsid, self.ctrl.name)


class NsHead:
    """struct nvme_ns_head: one namespace and its paths."""

    def __init__(self, subsys: "NvmeHead", nsid: int, anagrpid: int, controllers: Sequence[Controller]):
        self.subsys = subsys
        self.nsid = nsid
        self.anagrpid = anagrpid
        self.paths: List[NsPath] = [NsPath(c, self) for c in controllers]
        self.current_path: Dict[int, NsPath] = {}
        self.host = subsys.host

    def path_via(self, ctrl: Controller) -> NsPath:
        for ns in self.paths:
            if ns.ctrl is ctrl:
                return ns
        raise KeyError(ctrl.name)


class _Req:
    """What the head keeps of one request on a path (nvme_req flags and start time)."""

    __slots__ = ("ns", "cpu", "start_ns", "counted", "policy", "started")

    def __init__(self, ns, cpu):
        self.ns, self.cpu = ns, cpu
        self.start_ns = 0
        self.counted = False       # NVME_MPATH_CNT_ACTIVE
        self.policy = None         # the policy active when the request started
        self.started = False


class _PG:
    """What the engine's result code reads of a priority group: the selector's name."""

    def __init__(self, head):
        self._head = head
        self.pgpaths = head.controllers

    @property
    def ps(self):
        return self

    @property
    def name(self):
        return "nvme:" + self._head.policy.name


class NvmeHead:
    """An NVMe subsystem with its namespaces: the target object for the simulator."""

    stack = "nvme"
    queue_mode = "nvme"          # bio-based, but no dm jiffies stamps
    hw_handler_name = None
    queue_if_no_path_flag = False

    def __init__(self, controllers: Sequence[Controller], *, iopolicy: str = "numa",
                 policy_params: Optional[dict] = None, namespaces: int = 1,
                 ana_group_of_ns: Optional[Dict[int, int]] = None,
                 ana: Optional[Dict[int, Dict[str, str]]] = None, host: Optional[HostModel] = None,
                 cross_node_cost_ns: int = 0,
                 marginal_aware: bool = True, clock: Callable[[], int] = lambda: 0,
                 cpu: Callable[[], int] = lambda: 0, on_kick: Optional[Callable] = None,
                 schedule: Optional[Callable[[int, str], None]] = None, ctrl_loss_tmo_ns: int = -1,
                 fast_io_fail_tmo_ns: int = -1):
        self.controllers = list(controllers)
        self.by_name = {c.name: c for c in self.controllers}
        self.host = host or HostModel()     # the CPUs' NUMA nodes and distances (sim/host.py)
        self.cross_node_cost_ns = int(cross_node_cost_ns)
        self.clock = clock
        self._cpu = cpu
        self._on_kick = on_kick
        self._schedule = schedule
        self.ctrl_loss_tmo_ns = ctrl_loss_tmo_ns      # < 0: reconnect forever
        self.fast_io_fail_tmo_ns = fast_io_fail_tmo_ns
        self.marginal_aware = marginal_aware
        self.policy_params = dict(policy_params or {})
        groups = ana_group_of_ns or {}
        self._ana: Dict[tuple, str] = {}
        for grp, states in (ana or {}).items():
            for cname, st in states.items():
                self._ana[(grp, self.by_name[cname])] = st
        self.nsheads = [NsHead(self, nsid, groups.get(nsid, 1), self.controllers)
                        for nsid in range(1, namespaces + 1)]
        self.policy = registry.create(iopolicy, self, self.policy_params)
        self.queued_bios = collections.deque()
        # bios the head's requeue work resubmits (failed over, or waiting for a path) until the driver
        # starts them: the kworker, not the fio task, is what sleeps when such a bio finds no tag
        self._requeued: set = set()
        # set by the simulation (mpathlab.nvme.run.attach): cancel the requests started on a controller
        self.cancel_in_flight: Optional[Callable[[Controller], None]] = None
        self._ns_of_job = {}
        self.pgpaths = self.controllers
        self.priority_groups = [_PG(self)]

    # -- ANA --------------------------------------------------------------
    def ana_state(self, grp: int, ctrl: Controller) -> str:
        return self._ana.get((grp, ctrl), OPTIMIZED)

    # -- what the engine reads ----------------------------------------------
    @property
    def nr_valid_paths(self) -> int:
        return sum(1 for c in self.controllers if c.state == CTRL_LIVE)

    def nshead_for(self, io) -> NsHead:
        nsid = getattr(io, "nsid", None)
        if nsid is not None:
            return self.nsheads[nsid - 1]
        job = getattr(io, "job", None)
        h = self._ns_of_job.get(job)
        if h is None:
            # job clones are spread over the namespaces in the order they first submit
            h = self._ns_of_job[job] = self.nsheads[len(self._ns_of_job) % len(self.nsheads)]
        return h

    def map(self, io) -> str:
        cpu = self._cpu()
        node = self.host.node_of_cpu(cpu)
        nshead = self.nshead_for(io)
        ns = self.policy.find_path(nshead, cpu, node, io)
        if ns is not None:
            # chosen now; counted and timed when the driver starts it (driver_start)
            io.pgpath = ns.ctrl
            io.tag = _Req(ns, cpu)
            return MAP_REMAPPED
        if self.available_path(nshead):
            self.queued_bios.append(io)
            return MAP_SUBMITTED
        self._requeued.discard(io)
        return MAP_KILL

    def submitted_by_worker(self, io) -> bool:
        """True when ``io`` is being resubmitted by the head's requeue work (nvme_requeue_work on
        kblockd) rather than by the task that first submitted it (sim/blockqueue.py asks this before
        putting a submitter to sleep for a tag)."""
        return io in self._requeued

    def available_path(self, nshead: NsHead) -> bool:
        return any(ns.ctrl.state in (CTRL_LIVE, CTRL_RESETTING, CTRL_CONNECTING) and not ns.ctrl.failfast
                   for ns in nshead.paths)

    def extra_delay_ns(self, io) -> int:
        """The cross-node cost: the submitting CPU's node is not the controller's."""
        req = io.tag
        c = req.ns.ctrl
        if c.numa_node >= 0 and self.cross_node_cost_ns and self.host.node_of_cpu(req.cpu) != c.numa_node:
            return self.cross_node_cost_ns
        return 0

    def driver_start(self, io) -> bool:
        """The request has its tag and the transport's queue_rq runs (called by the engine).

        queue_rq first checks the controller (nvme_check_ready): one that is not live (a fabrics
        controller being deleted still is) fails a multipath request at once with a host path
        error (nvme_fail_nonready_command), which fails it over: False.  Else nvme_start_request
        marks it started: the queue-depth policy counts it in ctrl->nr_active (only while that
        policy is active: NVME_MPATH_CNT_ACTIVE), and the policy's start accounting and the
        latency clock begin here, so time spent waiting for a tag is not path latency.
        """
        req = io.tag
        ns = req.ns
        ctrl = ns.ctrl
        self._requeued.discard(io)
        if ctrl.state != CTRL_LIVE and ctrl.state != CTRL_DELETING:
            return False
        policy = self.policy
        req.started = True
        req.policy = policy
        req.counted = policy.counts_active
        if req.counted:
            ctrl.nr_active += 1
        policy.start_request(ns, io, req.cpu)
        req.start_ns = self.clock()
        io.start_time_ns = req.start_ns
        return True

    def end_io(self, io, error: Optional[str] = None) -> str:
        """A request on a path ended (nvme_complete_rq): complete it, or fail it over.

        Failover (nvme_failover_req) on a path error: the path stops being any node's current
        path, the bio goes back to the head's requeue list and the requeue work resubmits it
        through the policy at once (here: END_REQUEUE, which the engine retries now).  Path
        errors are a lost transport ("transport"), a request cancelled by error recovery
        (HOST_ABORTED_CMD, see cancel_in_flight) or a controller that was not live at queue_rq,
        and the ANA statuses: a command that completes while its namespace's ANA group is
        inaccessible, persistent-loss or change on that controller returns that status
        (the controller answers with the state it has when it completes the command; assumed,
        the spec lets an array finish commands it already had).  An ANA error does not reset
        the controller (it is alive, only not serving this namespace; the kernel re-reads the
        ANA log); any other path error starts the transport's error recovery.
        """
        req = io.tag
        io.tag = None
        ns = req.ns
        ctrl = ns.ctrl
        if req.started:
            if req.counted and ctrl.nr_active > 0:
                ctrl.nr_active -= 1
            # the policy that started the request accounts for its end (after an
            # iopolicy switch the new policy never saw it)
            req.policy.end_request(ns, io, self.clock() - req.start_ns, req.cpu)
        if not error and not state_is_live(ns.ana_state):
            error = ANA_ERROR
        if error and blk_path_error(error):
            self.clear_current_path(ns)
            if error != ANA_ERROR and ctrl.state == CTRL_LIVE:
                self._lose(ctrl)                  # the transport's error recovery
            self._requeued.add(io)
            io.pgpath = None
            return END_REQUEUE
        if error:
            io.error = error
        return END_DONE

    def take_queued(self) -> list:
        items = list(self.queued_bios)
        self.queued_bios.clear()
        self._requeued.update(items)
        return items

    def kick(self) -> None:
        if self.queued_bios and self._on_kick is not None:
            self._on_kick(self)

    # -- state changes ---------------------------------------------------------
    def clear_current_path(self, ns: NsPath) -> None:
        h = ns.nshead
        for node in [n for n, p in h.current_path.items() if p is ns]:
            del h.current_path[node]
        self.policy.clear_current_path(ns)

    def _set_live(self, ns: NsPath) -> None:
        """nvme_mpath_set_live: recompute every node's current path if ns is optimized."""
        if ns.ctrl.state == CTRL_LIVE and state_is_live(ns.ana_state):
            if path_is_optimized(ns, self.marginal_aware):
                use_distance = self.policy.name == "numa"
                for node in range(self.host.nr_nodes):
                    find_nearest(ns.nshead, node, use_distance, self.marginal_aware)

    def set_ana(self, grp: int, ctrl: Controller, state: str) -> None:
        self._ana[(grp, ctrl)] = state
        for h in self.nsheads:
            if h.anagrpid == grp:
                self._set_live(h.path_via(ctrl))
                self.policy.paths_changed(h)
        self.kick()

    def _lose(self, ctrl: Controller) -> None:
        """Link lost: reconnecting; arm ctrl_loss_tmo and fast_io_fail_tmo.  The transport's error
        recovery tears down the I/O queues and cancels every request the controller has started
        (nvme_cancel_tagset: HOST_ABORTED_CMD, a path error, so each fails over)."""
        ctrl.state = CTRL_CONNECTING
        ctrl.loss_gen += 1
        if self.cancel_in_flight is not None:
            self.cancel_in_flight(ctrl)
        if self._schedule is not None:
            if self.fast_io_fail_tmo_ns >= 0:
                self._schedule(self.fast_io_fail_tmo_ns, "fast_io_fail_expired %s %d" % (ctrl.name, ctrl.loss_gen))
            if self.ctrl_loss_tmo_ns >= 0:
                self._schedule(self.ctrl_loss_tmo_ns, "ctrl_loss_expired %s %d" % (ctrl.name, ctrl.loss_gen))

    def set_ctrl_state(self, ctrl: Controller, state: str) -> None:
        if state == CTRL_CONNECTING and ctrl.state == CTRL_LIVE:
            self._lose(ctrl)
        ctrl.loss_gen += state == CTRL_LIVE
        ctrl.failfast = ctrl.failfast and state != CTRL_LIVE
        ctrl.state = state
        for h in self.nsheads:
            ns = h.path_via(ctrl)
            if state == CTRL_LIVE:
                self._set_live(ns)
            else:
                self.clear_current_path(ns)
            self.policy.paths_changed(h)
        self.kick()

    def set_iopolicy(self, name: str) -> None:
        """nvme_subsys_iopolicy_update: new policy, every cached path cleared."""
        self.policy = registry.create(name, self, self.policy_params)
        for h in self.nsheads:
            h.current_path.clear()
        self.kick()

    def _ctrl(self, token: str) -> Controller:
        c = self.by_name.get(token)
        if c is None:
            for cand in self.controllers:
                if "%d:%d" % cand.devt == token:
                    return cand
            raise MessageError(EINVAL, "nvme: no controller %s" % token)
        return c

    def message(self, *argv: str) -> None:
        """Run-time events, scheduled like dm messages:

        ``ana GROUP CTRL STATE``, ``marginal CTRL 0|1``, ``iopolicy NAME``,
        ``fail_path CTRL`` / ``reinstate_path CTRL`` (controller lost / live again;
        a device ``reinstate`` fault sends the latter with the path's name).
        """
        if not argv:
            raise MessageError(EINVAL, "nvme: empty message")
        cmd = argv[0]
        if cmd == "ana" and len(argv) == 4:
            try:
                grp = int(argv[1])
            except ValueError:
                raise MessageError(EINVAL, "nvme: ANA group must be a number") from None
            if argv[3] not in ANA_STATES:
                raise MessageError(EINVAL, "nvme: unknown ANA state %s" % argv[3])
            self.set_ana(grp, self._ctrl(argv[2]), argv[3])
        elif cmd == "marginal" and len(argv) == 3 and argv[2] in ("0", "1"):
            c = self._ctrl(argv[1])
            # no cached path is cleared: numa re-checks the flag on every I/O, round-robin on every walk
            c.marginal = argv[2] == "1"
            self.kick()
        elif cmd == "iopolicy" and len(argv) == 2:
            if registry.lookup(argv[1]) is None:
                raise MessageError(EINVAL, "nvme: unknown iopolicy %s" % argv[1])
            self.set_iopolicy(argv[1])
        elif cmd == "fail_path" and len(argv) == 2:
            self.set_ctrl_state(self._ctrl(argv[1]), CTRL_CONNECTING)
        elif cmd == "reinstate_path" and len(argv) == 2:
            c = self._ctrl(argv[1])
            if c.state == CTRL_DEAD:
                raise MessageError(EINVAL, "nvme: controller %s was deleted (ctrl_loss_tmo)" % c.name)
            self.set_ctrl_state(c, CTRL_LIVE)
        elif cmd in ("ctrl_loss_expired", "fast_io_fail_expired") and len(argv) == 3:
            c = self._ctrl(argv[1])
            if c.state == CTRL_CONNECTING and str(c.loss_gen) == argv[2]:
                if cmd == "fast_io_fail_expired":
                    c.failfast = True          # queued I/O no longer waits for this controller
                    self.kick()
                else:
                    self.set_ctrl_state(c, CTRL_DEAD)   # deleted: its paths leave the heads
        else:
            raise MessageError(EINVAL, "nvme: unrecognised message %s" % " ".join(argv))

    # -- status ------------------------------------------------------------------
    def status(self, kind: str = "info") -> str:
        """A one-line summary in the spirit of `nvme list-subsys` (there is no dmsetup status)."""
        parts = ["iopolicy=%s" % self.policy.name]
        for c in self.controllers:
            states = ",".join(self.ana_state(g, c) for g in sorted({h.anagrpid for h in self.nsheads}))
            parts.append("%s:%s:%s%s:nr_active=%d" % (c.name, c.state, states, ":marginal" if c.marginal else "",
                                                       c.nr_active))
        if kind == "info":
            extra = self.policy.status()
            if extra:
                parts.append(extra)
        return " ".join(parts)
