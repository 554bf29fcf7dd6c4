"""SCSI path devices: the midlayer's budgets, host tags, device states and error classes (Linux 6.1, 6.12).

A SCSI disk is not a null_blk device underneath.  Before its driver sees a request the midlayer and
blk-mq take, in this order (block/blk-mq.c __blk_mq_try_issue_directly, drivers/scsi/scsi_lib.c):

1. a *driver tag* from the host's tag set.  scsi_mq_setup_tags sizes it ``shost->can_queue`` and
   every LUN behind the host (every path on one HBA port) shares it; with more than one queue
   using it, hctx_may_queue (block/blk-mq.h) lets each take at most max(ceil(can_queue / users), 4).
   The host limit of 6.1 and 6.12 *is* this tag set: scsi_host_queue_ready no longer counts
   host_busy against can_queue, it only checks the blocked states.
2. a *budget token* of the device (scsi_mq_get_budget -> scsi_dev_queue_ready: sbitmap_get on
   ``sdev->budget_map``, sized ``sdev->queue_depth``, the sysfs queue_depth).
3. scsi_queue_rq: the device state (scsi_device_state_check: OFFLINE / TRANSPORT_OFFLINE / DEL ->
   BLK_STS_IOERR, BLOCK -> BLK_STS_RESOURCE, CANCEL (a device being removed) -> BLK_STS_OFFLINE),
   then the LLD.

What a refusal does depends on who issued the request:

request-based dm (dm-rq.c map_request, dm-mpath.c multipath_clone_and_map)
    The clone is allocated with BLK_MQ_REQ_NOWAIT; without an I/O scheduler that takes the driver
    tag (1), and no tag gives DM_MAPIO_REQUEUE.  blk_insert_cloned_request issues it directly with
    bypass_insert: no budget (2) returns BLK_STS_RESOURCE, dm releases the clone
    (multipath_release_clone: the selector's end_io after its start_io) and dm's queue gets
    BLK_STS_RESOURCE (sim/blockqueue.py re-runs it).  An error from scsi_queue_rq (3) completes the
    clone with that status (dm_dispatch_clone_request -> dm_complete_request), and multipath_end_io
    fails the path.  A LUN deleted through sysfs goes to SDEV_CANCEL first (scsi_sysfs.c
    __scsi_remove_device), so the first clone sent to it fails the path that way, before sd_remove's
    del_gendisk marks its queue dying.  A queue that dies with nothing refused before (a null_blk
    device powered off) refuses the allocation itself, and blk_queue_dying sends the request to
    activate_or_offline_path: pg_init_done(SCSI_DH_DEV_OFFLINED) fails the path and the request waits
    DM_MAPIO_DELAY_REQUEUE (100 ms).
bio-based dm (and any submitter of bios)
    blk_mq_submit_bio allocates the request without NOWAIT: no driver tag, the task sleeps on the
    host's tag set (sim/blockqueue.py).  No budget: blk_mq_try_issue_directly inserts the request,
    which keeps its tag and waits in the path's queue; scsi_mq_get_budget counted a restart, and
    the next command of that device to complete runs the queue again (scsi_end_request ->
    scsi_run_queue_async, through kblockd).  Had nothing of the device been in flight, the
    refusal would itself re-run the queue SCSI_QUEUE_DELAY (3 ms) later (blk_mq_delay_run_hw_queues).

Error classes (``ERRORS``): what the LLD reports for a command, what scsi_decide_disposition
(scsi_error.c) does with it, and the block status scsi_result_to_blk_status (scsi_lib.c) gives if
the command is not retried.  dm-mpath sets REQ_FAILFAST_TRANSPORT on its clones, so scsi_noretry_cmd
stops the retries of DID_BUS_BUSY only; DID_ERROR, DID_TRANSPORT_DISRUPTED and retryable sense are
retried on the same device while ``++retries <= allowed`` (sd: SD_MAX_RETRIES, 5), below dm, which
sees only the final status.  blk_path_error (include/linux/blk_types.h, mpathlab.target) then decides
whether dm-mpath fails the path and retries the I/O elsewhere or fio gets the error.

The compiled core (_fastcore.c, section "SCSI paths") mirrors ScsiHost, ScsiDevice.get_budget and
ScsiQueues function for function; what state_check does in each state and the states FAULT_STATES
sets are handed to it as tables, and command_result with an error class set (or a retry counted) is
called from there, so these exist only here.  With several hosts (sim/hosts.py) each host has its own
ScsiDevice per port behind its own ScsiHost (the port's service is shared); the core runs those on the
Python engine.  A change to the others needs its C mirror
(tests/test_fastcore_scsi.py compares the engines run for run).
"""
from __future__ import annotations

from collections import deque
from typing import Dict, NamedTuple, Optional

SCSI_QUEUE_DELAY_NS = 3 * 1_000_000    # scsi_lib.c SCSI_QUEUE_DELAY (3 ms)
SD_MAX_RETRIES = 5                     # drivers/scsi/sd.h: scmd->allowed for disk I/O
BLK_MQ_TAG_MIN = 4                     # hctx_may_queue: "Allow at least some tags"
SCSI_DEFAULT_DEVICE_BLOCKED = 3        # include/scsi/scsi_device.h: sdev->max_device_blocked

# sdev_state (include/scsi/scsi_device.h) as far as I/O sees it
SDEV_RUNNING, SDEV_OFFLINE, SDEV_TRANSPORT_OFFLINE, SDEV_BLOCK, SDEV_DEL, SDEV_CANCEL = (
    "running", "offline", "transport-offline", "blocked", "deleted", "cancel")
# the state each device-state fault sets: sysfs state, a sysfs delete (which cancels the device first:
# scsi_sysfs.c __scsi_remove_device), a powered-off disk whose queue dies at once, a rescan; on a
# null_blk-like device any but running is a device that fails
FAULT_STATES = {"offline": SDEV_OFFLINE, "delete": SDEV_CANCEL, "poweroff": SDEV_DEL, "online": SDEV_RUNNING}


class ScsiError(NamedTuple):
    """One class of command failure: the LLD's result, scsi_decide_disposition's answer, the status."""
    result: str            # what the LLD sets in scmd->result (host byte / SAM status / sense)
    retried: bool          # NEEDS_RETRY (maybe_retry) with dm's REQ_FAILFAST_TRANSPORT set
    status: str            # scsi_result_to_blk_status when it ends (retries used up, or SUCCESS)
    where: str             # scsi_error.c / scsi_lib.c function that decides


ERRORS: Dict[str, ScsiError] = {
    "no_connect": ScsiError("DID_NO_CONNECT", False, "ioerr", "scsi_decide_disposition: SUCCESS"),
    "transport_failfast": ScsiError("DID_TRANSPORT_FAILFAST", False, "transport",
                                    "scsi_decide_disposition: SUCCESS; scsi_result_to_blk_status"),
    "transport_disrupted": ScsiError("DID_TRANSPORT_DISRUPTED", True, "ioerr",
                                     "scsi_decide_disposition: maybe_retry"),
    "did_error": ScsiError("DID_ERROR", True, "ioerr",
                           "scsi_decide_disposition: maybe_retry (scsi_noretry_cmd needs FAILFAST_DRIVER)"),
    "bus_busy": ScsiError("DID_BUS_BUSY", False, "ioerr",
                          "scsi_noretry_cmd: REQ_FAILFAST_TRANSPORT stops the retry"),
    "unit_attention": ScsiError("CHECK CONDITION, UNIT ATTENTION 29/00", True, "ioerr",
                                "scsi_check_sense: NEEDS_RETRY"),
    "aborted_command": ScsiError("CHECK CONDITION, ABORTED COMMAND", True, "ioerr",
                                 "scsi_check_sense: NEEDS_RETRY"),
    "medium": ScsiError("CHECK CONDITION, MEDIUM ERROR 11/00", False, "medium",
                        "scsi_check_sense: SCSIML_STAT_MED_ERROR"),
    "illegal_request": ScsiError("CHECK CONDITION, ILLEGAL REQUEST 24/00", False, "target",
                                 "scsi_check_sense: SCSIML_STAT_TGT_FAILURE"),
    # BLK_STS_NEXUS before 6.5, BLK_STS_RESV_CONFLICT since; neither is a path error
    "reservation_conflict": ScsiError("RESERVATION CONFLICT", False, "resv_conflict",
                                      "scsi_result_to_blk_status: SCSIML_STAT_RESV_CONFLICT"),
    "space_allocation": ScsiError("CHECK CONDITION, DATA PROTECT 27/07", False, "nospc",
                                  "scsi_check_sense: SCSIML_STAT_NOSPC"),
}


class ScsiHostModel:
    """One SCSI host (an HBA port, an iSCSI session): ``can_queue`` driver tags shared by its LUNs."""

    def __init__(self, name: str, can_queue: int = 0):
        if can_queue < 0:
            raise ValueError("scsi host %s: can_queue must be positive" % name)
        self.name = name
        self.can_queue = int(can_queue)     # 0 = unlimited


class ScsiHost:
    """A host's tag set at run time (blk_mq_tag_set of scsi_mq_setup_tags, one hardware queue)."""

    __slots__ = ("model", "tags_used", "active", "sleepers")

    def __init__(self, model: ScsiHostModel):
        self.model = model
        self.tags_used = 0
        # queues marked BLK_MQ_S_TAG_ACTIVE (blk_mq_tag_busy on their first tag).  The kernel clears
        # the mark when a queue idles through a request timeout; in a run every path stays active.
        self.active: set = set()
        self.sleepers: deque = deque()      # bio-based tasks asleep in blk_mq_get_tag, FIFO

    def may_queue(self, sdev: "ScsiDevice") -> bool:
        """hctx_may_queue: a shared tag set lets each active queue hold its fair share."""
        users = len(self.active)
        cq = self.model.can_queue
        if users <= 1 or not cq or cq == 1:
            return True
        depth = max((cq + users - 1) // users, BLK_MQ_TAG_MIN)
        return sdev.tags_held < depth

    def get_tag(self, sdev: "ScsiDevice") -> bool:
        self.active.add(sdev)
        cq = self.model.can_queue
        if (cq and self.tags_used >= cq) or not self.may_queue(sdev):
            return False
        self.tags_used += 1
        sdev.tags_held += 1
        return True

    def put_tag(self, sdev: "ScsiDevice") -> None:
        self.tags_used -= 1
        sdev.tags_held -= 1


class ScsiDevice:
    """The scsi_device of one path: budget (queue_depth), state, injected errors, retries."""

    __slots__ = ("host", "queue_depth", "device_busy", "tags_held", "state", "restarts", "budget_wait",
                 "device_blocked", "run_pending", "error", "every_nth", "nr_cmds", "retries", "iodone_cnt",
                 "ioerr_cnt", "rejected")

    def __init__(self, host: ScsiHost, queue_depth: int):
        self.host = host
        self.queue_depth = queue_depth      # 0 = unlimited
        self.device_busy = 0                # budget tokens held (scsi_device_busy)
        self.tags_held = 0                  # this queue's driver tags of the host's set
        self.state = SDEV_RUNNING
        self.restarts = 0                   # sdev->restarts: refused budgets since the last run
        # requests holding a driver tag in the path's own queue, waiting for a budget: bio-based
        # requests refused one, and commands the midlayer retries (both modes)
        self.budget_wait: deque = deque()
        self.device_blocked = 0             # sdev->device_blocked: set by a retry, counted down
        self.run_pending = False            # a run of the path's queue is scheduled
        self.error: Optional[str] = None    # an injected error class (ERRORS), on every_nth commands
        self.every_nth = 0
        self.nr_cmds = 0                    # commands the LLD has been given
        self.retries: Dict[object, int] = {}    # scmd->retries of commands the midlayer retries
        self.iodone_cnt = 0                 # /sys/.../device/iodone_cnt: commands completed (any status)
        self.ioerr_cnt = 0
        self.rejected = 0                   # scsi_queue_rq refusals by state (IOERR)

    def get_budget(self) -> bool:
        """scsi_mq_get_budget -> scsi_dev_queue_ready: a token of sdev->budget_map, or a counted restart.
        A blocked device (a command was retried) refuses while others are in flight, and counts
        device_blocked down by one per attempt when none is."""
        if self.queue_depth and self.device_busy >= self.queue_depth:
            self.restarts += 1
            return False
        if self.device_blocked:
            if self.device_busy or self.device_blocked > 1:
                if not self.device_busy:
                    self.device_blocked -= 1
                self.restarts += 1
                return False
            self.device_blocked = 0         # "unblocking device at zero depth"
        self.device_busy += 1
        return True

    def put_budget(self) -> None:
        self.device_busy -= 1

    def state_check(self) -> Optional[str]:
        """scsi_device_state_check in scsi_queue_rq: the status a command gets before the LLD sees
        it (None: the LLD takes it)."""
        if self.state in (SDEV_OFFLINE, SDEV_TRANSPORT_OFFLINE, SDEV_DEL):
            self.rejected += 1
            return "ioerr"
        if self.state == SDEV_CANCEL:       # any other state that is not fully online
            self.rejected += 1
            return "offline"
        if self.state == SDEV_BLOCK:
            return "resource"
        return None

    def command_result(self, io) -> Optional[str]:
        """The LLD finished IO: None (good), "retry" (the midlayer requeues it on this device), or the
        block status dm's end_io gets.  An injected class hits every every_nth command."""
        self.iodone_cnt += 1
        self.nr_cmds += 1
        if self.error is None or not self.every_nth or self.nr_cmds % self.every_nth:
            self.retries.pop(io, None)
            return None
        self.ioerr_cnt += 1
        cls = ERRORS[self.error]
        if cls.retried:
            n = self.retries.get(io, 0) + 1
            if n <= SD_MAX_RETRIES:        # scsi_cmd_retry_allowed: ++retries <= allowed
                self.retries[io] = n
                # scsi_queue_insert(SCSI_MLQUEUE_EH_RETRY): scsi_set_blocked, the budget goes back
                self.device_blocked = SCSI_DEFAULT_DEVICE_BLOCKED
                return "retry"
        self.retries.pop(io, None)
        return cls.status


class ScsiQueues:
    """The SCSI paths' queues in a run: the hooks sim/blockqueue.py's BlockLayer calls for a path whose
    device is SCSI (``dev.scsi`` set), in both dm modes."""

    def __init__(self, blk):
        self.blk = blk
        self.sim = blk.sim
        # Every host of a multi-host run (sim/hosts.py) has its own scsi_device per port behind its own
        # Scsi_Host (budget and tags per host); only the port's service is shared.  Host 0's is dev.scsi.
        self.hosts: list = []
        for _ in range(getattr(self.sim, "nr_hosts", 1)):
            hosts: Dict[int, ScsiHost] = {}
            for d in self.sim.devices:
                m = d.model
                if m.scsi_host is not None:
                    host = hosts.setdefault(id(m.scsi_host), ScsiHost(m.scsi_host))
                    d.scsi_of_host.append(ScsiDevice(host, m.queue_depth))
                    d.scsi = d.scsi_of_host[0]
            self.hosts.extend(hosts.values())

    @staticmethod
    def sdev(io, dev) -> ScsiDevice:
        """The scsi_device of DEV on the host that issued IO."""
        return dev.scsi_of_host[io.job.host]

    # -- request-based: multipath_clone_and_map and blk_insert_cloned_request ------------------
    def alloc_clone(self, io, dev) -> Optional[bool]:
        """blk_mq_alloc_request(NOWAIT) on the path: a host tag; None when the queue is dying."""
        sd = self.sdev(io, dev)
        if sd.state == SDEV_DEL:
            return None
        return sd.host.get_tag(sd)

    def issue_directly(self, io, dev) -> bool:
        """__blk_mq_try_issue_directly(bypass_insert): the device's budget, or BLK_STS_RESOURCE and the
        clone released (its tag back, the selector's end_io)."""
        sd = self.sdev(io, dev)
        if sd.get_budget():
            return True
        io.start_time_ns = 0
        self.sim._target_of(io).release_clone(io)
        sd.host.put_tag(sd)
        return False

    # -- bio-based: blk_mq_submit_bio -----------------------------------------------------------
    def start(self, io, dev) -> bool:
        """A tag (the task sleeps on the host's tag set without one), then a budget (without one the
        request waits in the path's queue).  True: the driver starts it now."""
        sd = self.sdev(io, dev)
        if not sd.host.get_tag(sd):
            io.job.blocked = True
            sd.host.sleepers.append((io, dev))
            return False
        return self._issue(io, dev)

    def _issue(self, io, dev) -> bool:
        sd = self.sdev(io, dev)
        if sd.budget_wait or not sd.get_budget():
            sd.budget_wait.append(io)   # behind what already waits (dispatch_busy: inserted, FIFO)
            return False
        return True

    # -- completion, retries, queue runs -------------------------------------------------------
    def complete(self, io, dev) -> None:
        """scsi_end_request: the budget and the tag go back; a refused budget re-runs the path's queue
        (scsi_run_queue_async); the tag wakes a task asleep on the host's tag set."""
        sd = self.sdev(io, dev)
        sd.put_budget()
        host = sd.host
        host.put_tag(sd)
        if sd.budget_wait:
            sd.restarts = 0
            self._schedule_run(dev, sd, 0)
        for i, (nxt, ndev) in enumerate(host.sleepers):
            if host.get_tag(self.sdev(nxt, ndev)):
                del host.sleepers[i]
                if self._issue(nxt, ndev):
                    self.sim._start(nxt, ndev)
                self.sim.call_at(self.sim.now, self.blk._wake, nxt)
                break

    def retry(self, io, dev) -> None:
        """scsi_queue_insert(SCSI_MLQUEUE_EH_RETRY): the device is blocked (device_blocked = 3), the
        budget goes back, the request is requeued into the path's queue with a kick."""
        sd = self.sdev(io, dev)
        sd.put_budget()
        sd.budget_wait.append(io)
        self._schedule_run(dev, sd, 0)

    def _schedule_run(self, dev, sd: ScsiDevice, delay_ns: int) -> None:
        if not sd.run_pending:
            sd.run_pending = True
            self.sim.call_at(self.sim.now + delay_ns + self.blk.work_latency, self._run, (dev, sd))

    def _run(self, item) -> None:
        """A run of the path's queue (kblockd): waiting requests get budgets in order.  With nothing of
        the device in flight to run it again, blk_mq_dispatch_rq_list re-runs it: at once the first
        time, then after BLK_MQ_RESOURCE_DELAY (so a retried command waits out device_blocked)."""
        dev, sd = item
        sd.run_pending = False
        wait = sd.budget_wait
        while wait and sd.get_budget():
            self.sim._start(wait.popleft(), dev)
        if wait and not sd.device_busy:
            first = sd.device_blocked >= SCSI_DEFAULT_DEVICE_BLOCKED - 1
            self._schedule_run(dev, sd, 0 if first else self.blk.RESOURCE_DELAY_NS)

    def set_state(self, dev, state: str) -> None:
        """The device's state changes (sysfs state, delete, transport); back to running, what waits
        in its queue is dispatched."""
        for sd in dev.scsi_of_host:
            sd.state = state
            if state == SDEV_RUNNING and sd.budget_wait:
                self._schedule_run(dev, sd, 0)

    def drain(self) -> int:
        n = 0
        for d in self.sim.devices:
            for sd in d.scsi_of_host:
                n += len(sd.budget_wait)
                sd.budget_wait.clear()
        for h in self.hosts:
            n += len(h.sleepers)
            h.sleepers.clear()
        return n
