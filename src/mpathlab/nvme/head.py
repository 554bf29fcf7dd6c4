"""The NVMe multipath head: an NVMe subsystem's controllers and namespaces, and
the target object the simulator drives (the same surface as the dm target:
``map(io)``, ``end_io(io, error)``, ``message(...)``, ``status(kind)``,
``pgpaths``, ``take_queued()``), so :class:`mpathlab.sim.engine.Simulation`
runs it unchanged through its ``target=`` argument.

Model (drivers/nvme/host/multipath.c and core.c, described in docs/nvme.md):

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
- Completion (``nvme_decide_disposition``): DNR or used-up retries complete
  with the error, a path error fails over (the path's cached state is
  cleared, the I/O requeued and resubmitted at once), any other error is
  retried on the same path.  Only a lost transport starts error recovery
  (reconnect attempts, ``ctrl_loss_tmo`` counted in them, deletion).
- ANA: the host's view changes only when a controller's whole ANA log is
  read (after a change notice or an ANA error, which marks the path
  ANA_PENDING until then); live namespaces run ``nvme_mpath_set_live``.
- Per release (``profile``): see docs/nvme.md "Per release".
"""
from __future__ import annotations

import collections
from typing import Callable, Dict, List, Optional, Sequence

from ..kernel import EINVAL
from ..target import END_DONE, END_REQUEUE, MAP_KILL, MAP_REMAPPED, MAP_SUBMITTED, MessageError
from ..timing import NSEC_PER_SEC
from . import registry
from ..sim.host import HostModel
from .policy import (ANA_STATES, CHANGE, CTRL_CONNECTING, CTRL_DEAD, CTRL_DELETING, CTRL_LIVE, CTRL_RESETTING,
                     OPTIMIZED, PolicyError, find_nearest, path_is_optimized, state_is_live)

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
        self.link_up = True       # whether a connect attempt would succeed (the port answers)
        self.nr_reconnects = 0    # ctrl->nr_reconnects: failed attempts since the loss
        self.anatt_gen = 0        # the ANATT timer armed last (mod_timer re-arms, del_timer cancels)
        self.recovering = False   # lost, its error recovery work not yet through the cancel
        self.inject: collections.deque = collections.deque()   # statuses the next completions return

    @property
    def dev(self):       # the engine finds a path's device model through pgpath.dev.devt
        return self

    def __repr__(self):
        return "Controller(%s)" % self.name


class NsPath:
    """struct nvme_ns: one namespace seen through one controller.  ``ana_state`` is the host's view
    (ns->ana_state, updated only when the controller's ANA log is read); the array's own state is
    the head's ``target_ana``."""

    __slots__ = ("ctrl", "nshead", "ready", "ana_state", "ana_pending")

    def __init__(self, ctrl: Controller, nshead: "NsHead", ana_state: str = OPTIMIZED):
        self.ctrl = ctrl
        self.nshead = nshead
        self.ready = True
        self.ana_state = ana_state
        self.ana_pending = False      # NVME_NS_ANA_PENDING: an ANA error seen, the log not yet re-read

    def __repr__(self):
        return "NsPath(n%d via %s)" % (self.nshead.nsid, self.ctrl.name)


class NsHead:
    """struct nvme_ns_head: one namespace and its paths (a deleted controller's path leaves the list)."""

    def __init__(self, subsys: "NvmeHead", nsid: int, anagrpid: int, controllers: Sequence[Controller]):
        self.subsys = subsys
        self.nsid = nsid
        self.anagrpid = anagrpid
        self.paths: List[NsPath] = [NsPath(c, self, subsys.target_ana(anagrpid, c)) for c in controllers]
        self.current_path: Dict[int, NsPath] = {}
        self.host = subsys.host
        # NVME_NSHEAD_DISK_LIVE: set by the first nvme_mpath_set_live (a path in a live ANA state)
        self.disk_live = any(state_is_live(ns.ana_state) for ns in self.paths)
        self.removal_pending = False  # current: the last path is gone, delayed_removal_secs running

    def path_via(self, ctrl: Controller) -> Optional[NsPath]:
        for ns in self.paths:
            if ns.ctrl is ctrl:
                return ns
        return None


class _Req:
    """What the head keeps of one request on a path (nvme_req flags, retries and start time)."""

    __slots__ = ("ns", "cpu", "start_ns", "counted", "policy", "started", "retries")

    def __init__(self, ns, cpu, retries: int = 0):
        self.ns, self.cpu = ns, cpu
        self.start_ns = 0
        self.counted = False       # NVME_MPATH_CNT_ACTIVE
        self.policy = None         # the policy active when the request started
        self.started = False
        self.retries = retries     # nvme_req(req)->retries: same-path retries of a non-path error


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
    """An NVMe subsystem with its namespaces: the target object for the simulator.

    ``profile`` (mpathlab.profiles) says which release's head this is; ``timers`` holds the fabrics
    and ANA times (:class:`HeadTimers`)."""

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
                 fast_io_fail_tmo_ns: int = -1, profile=None, timers: Optional["HeadTimers"] = None):
        from ..profiles import get_profile
        self.profile = get_profile(profile)
        self.timers = timers or HeadTimers()
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
        self._ana: Dict[tuple, str] = {}        # the array's ANA state per (group, controller)
        for grp, states in (ana or {}).items():
            for cname, st in states.items():
                self._ana[(grp, self.by_name[cname])] = st
        self.ana_groups = sorted(set(groups.values()) | set((ana or {}).keys()) | {1})
        self.nsheads = [NsHead(self, nsid, groups.get(nsid, 1), self.controllers)
                        for nsid in range(1, namespaces + 1)]
        check_iopolicy(iopolicy, self.profile)
        self.policy = registry.create(iopolicy, self, self.policy_params)
        self.queued_bios = collections.deque()
        # bios the head's requeue work resubmits (failed over, or waiting for a path) until the driver
        # starts them: the kworker, not the fio task, is what sleeps when such a bio finds no tag
        self._requeued: set = set()
        self._retry_on: Dict[object, _Req] = {}   # a non-path error's request, requeued on its own path
        self._spdk_retries: Dict[object, int] = {}     # SPDK bio->retry_count
        self._spdk_waiting: list = []           # SPDK: (number, bio) retried after 1 s (-ENXIO)
        self._spdk_seq = 0
        self.failed_over: Dict[str, int] = {}     # requests failed over, per controller they left
        # set by the simulation (mpathlab.nvme.run.attach): cancel the requests started on a controller,
        # and keep them from completing until then (a lost connection delivers nothing)
        self.cancel_in_flight: Optional[Callable[[Controller], None]] = None
        self.hold_in_flight: Optional[Callable[[Controller], None]] = None
        self._ns_of_job = {}
        self.pgpaths = self.controllers
        self.priority_groups = [_PG(self)]

    # -- ANA --------------------------------------------------------------
    def target_ana(self, grp: int, ctrl: Controller) -> str:
        """The ANA state the array reports for ``grp`` on ``ctrl`` (what a log read or a command sees)."""
        return self._ana.get((grp, ctrl), OPTIMIZED)

    def ana_state(self, grp: int, ctrl: Controller) -> str:
        """The host's view of ``grp`` through ``ctrl`` (its namespaces' ns->ana_state)."""
        for h in self.nsheads:
            if h.anagrpid == grp:
                ns = h.path_via(ctrl)
                if ns is not None:
                    return ns.ana_state
        return self.target_ana(grp, ctrl)

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
        req = self._retry_on.pop(io, None)
        if req is not None:
            # nvme_retry_req: blk_mq_requeue_request puts the same request back on its own queue
            io.pgpath = req.ns.ctrl
            io.tag = _Req(req.ns, cpu, req.retries)
            return MAP_REMAPPED
        node = self.host.node_of_cpu(cpu)
        nshead = self.nshead_for(io)
        ns = self.policy.find_path(nshead, cpu, node, io)
        if ns is not None:
            # chosen now; counted and timed when the driver starts it (driver_start)
            io.pgpath = ns.ctrl
            io.tag = _Req(ns, cpu)
            return MAP_REMAPPED
        if getattr(self.policy, "spdk", False):
            return self._spdk_no_path(io, nshead)
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
        """nvme_available_path: some controller of the head is live, resetting or connecting (and has
        not passed fast_io_fail_tmo); since 6.12 only while the head disk is live; in releases with
        delayed removal, also while the removal of a head without paths is pending."""
        if self.profile.nvme_available_path_disk_live and not nshead.disk_live:
            return False
        if any(ns.ctrl.state in (CTRL_LIVE, CTRL_RESETTING, CTRL_CONNECTING) and not ns.ctrl.failfast
               for ns in nshead.paths):
            return True
        return nshead.removal_pending

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
        """A request on a path ended (nvme_complete_rq, nvme_decide_disposition): complete it, retry
        it on the same path, or fail it over.

        The status: the path's error if any; else an injected status (``error`` events); else, when
        the array's ANA state of the namespace's group on this controller is inaccessible,
        persistent-loss or change, that ANA status (the controller answers with the state it has
        when it completes the command; assumed, the spec lets an array finish commands it already
        had).  Then, as 6.1 core.c:347-368 and 6.12 decide it: DNR, or nvme_max_retries (5) same-path
        retries used up, completes with the error; a path error fails over (nvme_failover_req: the
        path stops being any node's current path, an ANA error sets NVME_NS_ANA_PENDING and queues
        the controller's ANA log re-read, the bio goes to the head's requeue list and is resubmitted
        through the policy at once: END_REQUEUE); any other error is retried on the same path
        (nvme_retry_req).  Only a lost transport ("transport": the device is gone) starts the
        transport's error recovery; a request that error recovery cancelled (HOST_ABORTED_CMD), one
        refused at queue_rq, an ANA error and a returned host path error only fail over.
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
        dnr = False
        if not error and ctrl.inject and req.started:
            error, dnr = ctrl.inject.popleft()
        if not error and not state_is_live(self.target_ana(ns.nshead.anagrpid, ctrl)):
            error = ANA_ERROR
        if not error:
            return END_DONE
        if getattr(req.policy or self.policy, "spdk", False):
            return self._spdk_end_io(io, req, error, dnr)
        if dnr or req.retries >= self.timers.max_retries:
            io.error = error
            return END_DONE
        if nvme_path_error(error):
            self.failed_over[ctrl.name] = self.failed_over.get(ctrl.name, 0) + 1
            self.clear_current_path(ns)
            if error == ANA_ERROR:
                ns.ana_pending = True
                self._queue_ana_work(ctrl)
            elif error == TRANSPORT_ERROR and ctrl.state == CTRL_LIVE:
                ctrl.link_up = False              # the device is gone: connects fail until it returns
                self._lose(ctrl)                  # the transport's error recovery
            self._requeued.add(io)
            io.pgpath = None
            return END_REQUEUE
        self._retry_on[io] = _Req(ns, req.cpu, req.retries + 1)
        return END_REQUEUE

    def take_queued(self) -> list:
        items = list(self.queued_bios)
        self.queued_bios.clear()
        self._requeued.update(items)
        return items

    def kick(self) -> None:
        if self.queued_bios and self._on_kick is not None:
            self._on_kick(self)

    # -- SPDK's bdev_nvme (policies with ``spdk = True``) ------------------------
    def _spdk_may_become_available(self, nshead: NsHead) -> bool:
        """any_io_path_may_become_available: a path whose qpair is connected, or whose controller has
        not failed (deleted, or past fast_io_fail)."""
        return any(ns.ctrl.state == CTRL_LIVE or not (ns.ctrl.state == CTRL_DEAD or ns.ctrl.failfast)
                   for ns in nshead.paths)

    def _spdk_no_path(self, io, nshead: NsHead) -> str:
        """bdev_nvme_io_complete(-ENXIO): while bio->retry_count < bdev_retry_count (-1: always) and a path
        may become available, the I/O is retried 1 s later; else it fails.  The -ENXIO retry itself
        does not count (only non-path NVMe errors raise retry_count)."""
        limit = self.timers.spdk_retry_count
        if (limit == -1 or self._spdk_retries.get(io, 0) < limit) and self._spdk_may_become_available(nshead):
            self.policy.paths_changed_channel(nshead, self._cpu())
            self._spdk_seq += 1
            self._spdk_waiting.append((self._spdk_seq, io))
            if self._schedule is not None:
                self._schedule(SPDK_NO_PATH_RETRY_NS, "spdk_retry %d" % self._spdk_seq)
            return MAP_SUBMITTED
        self._spdk_retries.pop(io, None)
        return MAP_KILL

    def _spdk_end_io(self, io, req: _Req, error: str, dnr: bool) -> str:
        """bdev_nvme_io_complete_nvme_status: DNR or retry_count >= bdev_retry_count completes with the
        error; a path error (or a path no longer available) clears the channel's cached path and
        retries at once through the selector while a path may become available; any other error
        counts one retry and is retried on the same path."""
        ns = req.ns
        count = self._spdk_retries.get(io, 0)
        limit = self.timers.spdk_retry_count
        if dnr or (limit != -1 and count >= limit):
            self._spdk_retries.pop(io, None)
            io.error = error
            return END_DONE
        if nvme_path_error(error) or ns.ctrl.state != CTRL_LIVE:
            if getattr(self.policy, "spdk", False):    # (the policy may have changed since it started)
                self.policy.paths_changed_channel(ns.nshead, req.cpu)
            if error == ANA_ERROR:
                self._queue_ana_work(ns.ctrl)
            elif error == TRANSPORT_ERROR and ns.ctrl.state == CTRL_LIVE:
                ns.ctrl.link_up = False
                self._lose(ns.ctrl)
            if not self._spdk_may_become_available(ns.nshead):
                self._spdk_retries.pop(io, None)
                io.error = error
                return END_DONE
            io.pgpath = None
            return END_REQUEUE
        self._spdk_retries[io] = count + 1
        self._retry_on[io] = _Req(ns, req.cpu, req.retries + 1)
        return END_REQUEUE

    # -- state changes ---------------------------------------------------------
    def clear_current_path(self, ns: NsPath) -> None:
        """nvme_mpath_clear_current_path: ``ns`` stops being any node's current path."""
        h = ns.nshead
        for node in [n for n, p in h.current_path.items() if p is ns]:
            del h.current_path[node]
        self.policy.clear_current_path(ns)

    def _clear_ctrl_paths(self, ctrl: Controller) -> None:
        """nvme_mpath_clear_ctrl_paths: clear each of the controller's namespaces and kick."""
        for h in self.nsheads:
            ns = h.path_via(ctrl)
            if ns is not None:
                self.clear_current_path(ns)
                self.policy.paths_changed(h)
        self.kick()

    def _revalidate(self, ctrl: Controller) -> None:
        """The scan after a (re)connect revalidates each namespace (nvme_update_ns_info ->
        nvme_mpath_revalidate_paths): every node's current path of each head it reaches is cleared."""
        for h in self.nsheads:
            if h.path_via(ctrl) is not None:
                h.current_path.clear()
                self.policy.paths_changed(h)
        self.kick()

    def _set_live(self, ns: NsPath) -> None:
        """nvme_mpath_set_live: the head disk is live; if ns is optimized, every node's current path is
        recomputed (__nvme_find_path per node); the requeue list is kicked."""
        h = ns.nshead
        h.disk_live = True
        if path_is_optimized(ns, self.marginal_aware):
            use_distance = self.policy.name == "numa"
            for node in range(self.host.nr_nodes):
                find_nearest(h, node, use_distance, self.marginal_aware)
        self.policy.paths_changed(h)

    def read_ana_log(self, ctrl: Controller) -> None:
        """nvme_read_ana_log (the ANA work, after an ANA change notice or an ANA error): the whole log
        of the controller is read; every namespace of every group takes the group's state, loses
        ANA_PENDING, and runs nvme_mpath_set_live when the state is live and the controller live
        (nvme_update_ns_ana_state).  Groups in change arm the ANATT timer (2 x ANATT), none cancel it."""
        if ctrl.state != CTRL_LIVE:
            return                        # nvme_ana_work returns for a controller that is not live
        self._parse_ana_log(ctrl)
        self.kick()

    def _parse_ana_log(self, ctrl: Controller) -> None:
        nr_change_groups = 0
        for grp in self.ana_groups:
            state = self.target_ana(grp, ctrl)
            nr_change_groups += state == CHANGE
            for h in self.nsheads:
                ns = h.path_via(ctrl) if h.anagrpid == grp else None
                if ns is None:
                    continue
                ns.ana_state = state
                ns.ana_pending = False
                if state_is_live(state) and ctrl.state == CTRL_LIVE:
                    self._set_live(ns)
                else:
                    self.policy.paths_changed(h)
        ctrl.anatt_gen += 1               # mod_timer re-arms, del_timer cancels: the old one is stale
        if nr_change_groups and self._schedule is not None:
            self._schedule(2 * self.timers.anatt_ns, "anatt_timeout %s %d" % (ctrl.name, ctrl.anatt_gen))

    def _queue_ana_work(self, ctrl: Controller) -> None:
        if self._schedule is None:
            self.read_ana_log(ctrl)
        else:
            self._schedule(self.timers.ana_log_delay_ns, "ana_log %s" % ctrl.name)

    def set_ana(self, grp: int, ctrl: Controller, state: str) -> None:
        """The array changes the group's state on ``ctrl`` and sends an ANA change notice: the host
        re-reads that controller's whole log (queued work; at once without a simulation)."""
        self._ana[(grp, ctrl)] = state
        if grp not in self.ana_groups:
            self.ana_groups = sorted(self.ana_groups + [grp])
        self._queue_ana_work(ctrl)

    def _lose(self, ctrl: Controller) -> None:
        """Link lost: error recovery tears down the queues and cancels every request the controller has
        started (nvme_cancel_tagset: HOST_ABORTED_CMD, a path error, so each fails over); the
        controller is connecting; fast_io_fail_tmo starts, and reconnect attempts follow
        (nvme_tcp_reconnect_or_remove).

        With a recovery time (``HeadTimers.recovery_ns``) the steps take time as in the kernel:
        nvme_tcp_error_recovery sets RESETTING at once (the path is no longer chosen and queue_rq
        refuses it, so new I/O goes elsewhere), while the started requests wait until the queued
        error recovery work (6.1 and 6.12 tcp.c nvme_tcp_error_recovery_work: stop keep-alive, flush
        the AEN work, quiesce the admin and I/O queues, stop each queue's socket and wait for its
        send memory to drain, then nvme_cancel_tagset) cancels them; only then does the controller
        go to CONNECTING."""
        ctrl.loss_gen += 1
        ctrl.nr_reconnects = 0
        if self.timers.recovery_ns > 0 and self._schedule is not None:
            ctrl.state = CTRL_RESETTING
            ctrl.recovering = True
            if self.hold_in_flight is not None:
                self.hold_in_flight(ctrl)
            self._schedule(self.timers.recovery_ns, "recovery_done %s %d" % (ctrl.name, ctrl.loss_gen))
            return
        self._recovered(ctrl)

    def _recovered(self, ctrl: Controller) -> None:
        """The error recovery work's cancel, then CONNECTING and the reconnect rules."""
        ctrl.state = CTRL_CONNECTING
        ctrl.recovering = False
        if self.cancel_in_flight is not None:
            self.cancel_in_flight(ctrl)
        if self._schedule is not None and self.fast_io_fail_tmo_ns >= 0:
            self._schedule(self.fast_io_fail_tmo_ns, "fast_io_fail_expired %s %d" % (ctrl.name, ctrl.loss_gen))
        self._reconnect_or_remove(ctrl)

    def transport_lost(self, ctrl: Controller) -> None:
        """The connection closed under a live controller (the target deleted it: nvme_tcp_state_change
        sees the socket leave ESTABLISHED and starts error recovery, before any request fails)."""
        if ctrl.state == CTRL_LIVE:
            ctrl.link_up = False
            self._lose(ctrl)
            for h in self.nsheads:
                self.policy.paths_changed(h)
            self.kick()

    def max_reconnects(self) -> int:
        """opts->max_reconnects = DIV_ROUND_UP(ctrl_loss_tmo, reconnect_delay); -1 reconnects forever
        (6.1 fabrics.c:940-944, 6.12 fabrics.c:1075-1079)."""
        if self.ctrl_loss_tmo_ns < 0:
            return -1
        d = self.timers.reconnect_delay_ns
        return -(-self.ctrl_loss_tmo_ns // d)

    def _reconnect_or_remove(self, ctrl: Controller) -> None:
        """nvmf_should_reconnect: another attempt reconnect_delay later while nr_reconnects <
        max_reconnects, else the controller is deleted."""
        mx = self.max_reconnects()
        if mx == -1 or ctrl.nr_reconnects < mx:
            if self._schedule is not None:
                self._schedule(self.timers.reconnect_delay_ns, "reconnect %s %d" % (ctrl.name, ctrl.loss_gen))
        else:
            self._delete(ctrl)

    def _reconnect_attempt(self, ctrl: Controller) -> None:
        """nvme_tcp_reconnect_ctrl_work: ++nr_reconnects; the connect succeeds if the port answers."""
        ctrl.nr_reconnects += 1
        if ctrl.link_up:
            self._connected(ctrl)
        else:
            self._reconnect_or_remove(ctrl)

    def _connected(self, ctrl: Controller) -> None:
        """The controller is live again (nvme_change_ctrl_state kicks the requeue lists), then
        nvme_start_ctrl: the ANA log (read while connecting) is applied (nvme_mpath_update: set_live
        for every live namespace) and the scan revalidates each namespace, clearing every current
        path of its heads."""
        ctrl.state = CTRL_LIVE
        ctrl.loss_gen += 1
        ctrl.nr_reconnects = 0
        ctrl.failfast = False
        self._parse_ana_log(ctrl)
        self._revalidate(ctrl)

    def _reset(self, ctrl: Controller) -> None:
        """nvme_reset_ctrl (the ANATT timeout): teardown cancels the started requests (they fail over),
        then the controller connects again at once (nvme_reset_ctrl_work), or on failure counts an
        attempt and follows the reconnect rules."""
        if ctrl.state != CTRL_LIVE:
            return
        ctrl.state = CTRL_RESETTING
        ctrl.loss_gen += 1
        if self.cancel_in_flight is not None:
            self.cancel_in_flight(ctrl)
        ctrl.state = CTRL_CONNECTING
        if ctrl.link_up:
            self._connected(ctrl)
        else:
            ctrl.nr_reconnects = 1
            self._reconnect_or_remove(ctrl)

    def _delete(self, ctrl: Controller) -> None:
        """nvme_delete_ctrl -> nvme_remove_namespaces: the controller's paths are cleared, then each
        leaves its head's list (nvme_ns_remove).  A head left without paths shuts its disk down
        (queued I/O fails), unless delayed_removal_secs is set (releases with delayed removal): then
        it queues I/O until the removal work runs."""
        self._clear_ctrl_paths(ctrl)
        ctrl.state = CTRL_DEAD
        ctrl.loss_gen += 1
        for h in self.nsheads:
            ns = h.path_via(ctrl)
            if ns is None:
                continue
            self.clear_current_path(ns)
            h.paths.remove(ns)
            if not h.paths:
                if self.profile.nvme_delayed_removal and self.timers.delayed_removal_ns > 0:
                    h.removal_pending = True
                    if self._schedule is not None:
                        self._schedule(self.timers.delayed_removal_ns, "remove_head %d" % h.nsid)
                else:
                    h.disk_live = False
            self.policy.paths_changed(h)
        self.kick()

    def set_ctrl_state(self, ctrl: Controller, state: str) -> None:
        """fail_path / reinstate_path / deletion.  Losing a controller does not itself clear any
        current path: only the failover of its cancelled requests does (nvme_failover_req)."""
        if state == CTRL_CONNECTING:
            ctrl.link_up = False
            if ctrl.state == CTRL_LIVE:
                self._lose(ctrl)
        elif state == CTRL_LIVE:
            ctrl.link_up = True
            if ctrl.state != CTRL_LIVE and (self._schedule is None or (ctrl.state == CTRL_RESETTING
                                                                      and not ctrl.recovering)):
                self._connected(ctrl)     # without a simulation there are no attempt timers
        elif state == CTRL_DEAD:
            self._delete(ctrl)
        for h in self.nsheads:
            self.policy.paths_changed(h)
        self.kick()

    def set_iopolicy(self, name: str) -> None:
        """A write to the subsystem's iopolicy.  6.1 (nvme_subsys_iopolicy_store) only stores it: cached
        current paths stay.  Since 6.11 (nvme_subsys_iopolicy_update) writing the policy in force
        does nothing, and a new one clears every controller's paths."""
        check_iopolicy(name, self.profile)
        if name == self.policy.name:
            return
        self.policy = registry.create(name, self, self.policy_params)
        if self.profile.nvme_iopolicy_write_clears:
            for c in self.controllers:
                self._clear_ctrl_paths(c)
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

        ``ana GROUP CTRL STATE`` (the array changes a state and notifies), ``marginal CTRL 0|1``,
        ``iopolicy NAME``, ``fail_path CTRL`` / ``reinstate_path CTRL`` (the controller's port stops /
        starts answering; a device ``reinstate`` fault sends the latter with the path's name),
        ``error CTRL STATUS COUNT DNR`` (the controller's next COUNT completions return STATUS),
        ``spdk_preferred CTRL``; and the head's own timers (``ana_log``, ``anatt_timeout``,
        ``reconnect``, ``recovery_done``, ``fast_io_fail_expired``, ``remove_head``, ``spdk_retry``).
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
            try:
                self.set_iopolicy(argv[1])
            except PolicyError as e:
                raise MessageError(EINVAL, "nvme: %s" % e) from None
        elif cmd == "fail_path" and len(argv) == 2:
            self.set_ctrl_state(self._ctrl(argv[1]), CTRL_CONNECTING)
        elif cmd == "reinstate_path" and len(argv) == 2:
            c = self._ctrl(argv[1])
            if c.state == CTRL_DEAD:
                raise MessageError(EINVAL, "nvme: controller %s was deleted (ctrl_loss_tmo)" % c.name)
            self.set_ctrl_state(c, CTRL_LIVE)
        elif cmd == "error" and len(argv) == 5 and argv[2] in INJECTABLE and argv[3].isdigit():
            c = self._ctrl(argv[1])
            c.inject.extend([(argv[2], argv[4] == "1")] * int(argv[3]))
        elif cmd == "spdk_preferred" and len(argv) == 2:
            c = self._ctrl(argv[1])
            if not getattr(self.policy, "spdk", False):
                raise MessageError(EINVAL, "nvme: spdk_preferred needs an SPDK policy, not %s" % self.policy.name)
            self.policy.set_preferred(c)
        elif cmd == "ana_log" and len(argv) == 2:
            self.read_ana_log(self._ctrl(argv[1]))
        elif cmd == "anatt_timeout" and len(argv) == 3:
            c = self._ctrl(argv[1])
            if str(c.anatt_gen) == argv[2]:
                self._reset(c)
        elif cmd == "recovery_done" and len(argv) == 3:
            c = self._ctrl(argv[1])
            if c.recovering and str(c.loss_gen) == argv[2]:
                self._recovered(c)
                self.kick()
        elif cmd in ("reconnect", "ctrl_loss_expired", "fast_io_fail_expired") and len(argv) == 3:
            c = self._ctrl(argv[1])
            if c.state == CTRL_CONNECTING and str(c.loss_gen) == argv[2]:
                if cmd == "fast_io_fail_expired":
                    c.failfast = True          # queued I/O no longer waits for this controller
                    self.kick()
                elif cmd == "reconnect":
                    self._reconnect_attempt(c)
                else:
                    self._delete(c)
        elif cmd == "remove_head" and len(argv) == 2:
            h = self.nsheads[int(argv[1]) - 1]
            if h.removal_pending and not h.paths:
                h.removal_pending = False
                h.disk_live = False           # nvme_remove_head: the head disk goes, queued I/O fails
                self.kick()
        elif cmd == "spdk_retry" and len(argv) == 2:
            for item in [item for item in self._spdk_waiting if str(item[0]) == argv[1]]:
                self._spdk_waiting.remove(item)
                self.queued_bios.append(item[1])
            self.kick()
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


class HeadTimers:
    """The fabrics, ANA and retry settings the head runs with (kernel defaults)."""

    def __init__(self, reconnect_delay_ns: int = 10 * NSEC_PER_SEC, anatt_ns: int = 10 * NSEC_PER_SEC,
                 ana_log_delay_ns: int = 0, max_retries: int = 5, delayed_removal_ns: int = 0,
                 spdk_retry_count: int = 3, recovery_ns: int = 0):
        self.reconnect_delay_ns = reconnect_delay_ns   # NVMF_DEF_RECONNECT_DELAY, 10 s
        self.anatt_ns = anatt_ns                       # Identify ANATT; nvmet reports 10 s
        self.ana_log_delay_ns = ana_log_delay_ns       # from an ANA notice or error to the log read
        self.max_retries = max_retries                 # nvme_core.max_retries, 5
        self.delayed_removal_ns = delayed_removal_ns   # the head's delayed_removal_secs, 0 = off
        self.spdk_retry_count = spdk_retry_count       # SPDK bdev_retry_count, 3; -1 = forever
        self.recovery_ns = recovery_ns                 # from a lost connection to the cancel; 0: at once


def check_iopolicy(name: str, profile) -> None:
    """The policies a release offers: queue-depth only since 6.11 (the sysfs write is -EINVAL before)."""
    if registry.lookup(name) is None:
        raise PolicyError("unknown NVMe I/O policy %r; known: %s" % (name, ", ".join(registry.names())))
    if name == "queue-depth" and not profile.nvme_queue_depth:
        raise PolicyError("kernel %s has no iopolicy queue-depth (added in 6.11; %s offers numa and round-robin)"
                          % (profile.name, profile.name))


def nvme_path_error(status: str) -> bool:
    """nvme_is_path_error: ANA and host path statuses, and the lost transport's aborts."""
    return status not in NON_PATH_STATUSES


SPDK_NO_PATH_RETRY_NS = NSEC_PER_SEC          # bdev_nvme_queue_retry_io(nbdev_ch, bio, 1000ULL)
HOST_PATH_ERROR = "host-path"                 # NVME_SC_HOST_PATH_ERROR returned by the array
TRANSPORT_ERROR = "transport"                 # the device is gone: only this starts error recovery
NON_PATH_STATUSES = frozenset(("internal", "medium"))
INJECTABLE = NON_PATH_STATUSES | {HOST_PATH_ERROR}
