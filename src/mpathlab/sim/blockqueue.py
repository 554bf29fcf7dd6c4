"""The block layer beneath the multipath target: tags and blk-mq queues (Linux 6.1).

A real path device accepts only as many requests as it has tags.  Every
request holds a *driver tag* (``hw_queue_depth`` per hardware queue) while
the driver has it; with an I/O scheduler on the path queue it also holds a
*scheduler tag* (``nr_requests``) from allocation to completion.  What
happens when the tags run out depends on how dm-multipath maps:

request-based (dm-rq.c, dm-mpath.c multipath_clone_and_map)
    The dm device has its own blk-mq queue.  Its dispatch takes the requests
    in turn; for each, the selector chooses a path *first*, then the clone
    is allocated on that path with BLK_MQ_REQ_NOWAIT.  No tag: the map
    returns DM_MAPIO_REQUEUE, start_io is never called, dm_mq_queue_rq
    returns BLK_STS_RESOURCE, and the request goes back to the head of the
    dm queue's dispatch list; the next attempt selects again (round-robin
    has already rotated).  With a scheduler on the path the clone takes a
    scheduler tag, and blk_insert_cloned_request issues it directly, which
    needs a driver tag; without one the clone is released
    (multipath_release_clone calls the selector's end_io after start_io,
    with the clone's io_start_time_ns, which is 0 because the driver never
    started it) and the map is again BLK_STS_RESOURCE.
    When the dispatch stops on BLK_STS_RESOURCE (blk_mq_dispatch_rq_list):
    if the queue is not marked SCHED_RESTART it is re-run at once, else it
    is re-run BLK_MQ_RESOURCE_DELAY (3 ms) later; a run that starts from
    the dispatch list marks SCHED_RESTART, and the mark makes the next
    completion of any dm request re-run the queue (blk_mq_sched_restart).
    So does a submission: at depth 64 fio reaps and submits an I/O or two
    at a time, and io_submit plugs only batches of more than two
    (AIO_PLUG_THRESHOLD), so blk_mq_submit_bio inserts the request into the
    dm queue's scheduler and asks for an asynchronous run
    (blk_mq_sched_insert_request(..., async=true)).  All these runs go
    through one delayed work item per hardware queue (hctx->run_work on
    kblockd), and each request *modifies* its timer (mod_delayed_work), so
    the latest one decides when it runs; it then runs ``work_latency``
    later ([host], the time deferred work waits for a CPU; 0 by default).
    Requests are tried in order (mq-deadline on dm picks by sector, which
    does not change which path a request gets).  Each takes the run
    ``dispatch_cost`` ([host]): the next is mapped that much later, and a
    run asked for meanwhile leaves the requests to the one under way (the
    kernel's runs of one hardware queue do not overlap: they are serialised
    on kblockd's work item, or wait for the dispatch lock).

bio-based (dm.c __map_bio, dm-mpath.c __multipath_map_bio)
    The selector chooses and start_io runs when dm maps the bio; the clone
    bio is then submitted from the submitting task, whose blk_mq_submit_bio
    allocates a request *without* NOWAIT: with no tag the task sleeps until
    one is freed, and every later I/O of that task waits with it, whichever
    path it would go to.  With a scheduler the task needs a scheduler tag;
    the request then waits in the path queue for a driver tag, dispatched
    (in order) when one is freed.  A sleeping task is not woken by the
    first tag freed: the tags are an sbitmap_queue, whose
    sbitmap_queue_wake_up (lib/sbitmap.c) counts the tags freed while
    someone waits and wakes waiters only per ``wake_batch`` of them
    (sbq_calc_wake_batch: an eighth of the depth, 1 to 8; 3 for 24 tags),
    so the task sleeps on a deep path until several of its requests are
    done (tag_wake_batch).

NVMe native multipath (mpathlab.nvme) takes the bio-based way:
nvme_ns_head_submit_bio picks a path and hands the bio to that path's
queue with submit_bio_noacct, still in the submitting task; its request
allocation may sleep for a tag like any bio submitter's (no NOWAIT from
fio's libaio), so a full controller queue holds the task.  The controller's
queue depth is the path's ``hw_queue_depth``, one hardware queue per I/O
queue (nvme-pci/nvme-tcp: one per CPU).

Hardware queues: each of a path's ``nr_hw_queues`` has its own tags (and
scheduler tags); an I/O uses the one of the CPU it is mapped on (its fio
job's CPU, modulo nr_hw_queues, as blk_mq_map_queue maps CPUs to hardware
queues), so one job on one CPU sees ``hw_queue_depth`` tags per path.

Time stamps: blk_mq_start_request stamps io_start_time_ns when the driver
starts a request; in this model a request-based clone that gets its tags is
started in the same instant it is mapped (null_blk starts it in queue_rq),
so the target's stamp at map time is the driver's, and a clone released
before it started passes 0.  Bio-based selectors time from dm's map.
"""
from __future__ import annotations

from collections import deque

from .boundary import BLK_MQ_RESOURCE_DELAY_NS
from .scsi import ScsiQueues


# include/linux/sbitmap.h
SBQ_WAIT_QUEUES = 8
SBQ_WAKE_BATCH = 8
BITS_PER_LONG_SHIFT = 6
KYBER_ASYNC_PERCENT = 75


def sbitmap_shift(depth: int) -> int:
    """include/linux/sbitmap.h sbitmap_calculate_shift: log2 of a word's bits, 64 halved while four
    words would not fit in ``depth`` (from a depth of 4)."""
    shift = BITS_PER_LONG_SHIFT
    if depth >= 4:
        while (4 << shift) > depth:
            shift -= 1
    return shift


def sbq_wake_batch(depth: int, min_shallow_depth: int = 0) -> int:
    """lib/sbitmap.c sbq_calc_wake_batch for a bitmap of ``depth`` bits whose words are allocated
    from no deeper than ``min_shallow_depth`` (0: the whole word)."""
    shift = sbitmap_shift(depth)
    shallow = min(1 << shift, min_shallow_depth) if min_shallow_depth else 1 << shift
    bits = (depth >> shift) * shallow + min(depth & ((1 << shift) - 1), shallow)
    return min(max(bits // SBQ_WAIT_QUEUES, 1), SBQ_WAKE_BATCH)


def tag_wake_batch(model) -> int:
    """How many tags of one hardware queue must be freed before a task sleeping for one wakes: of
    the scheduler tags when the path has a scheduler (mq-deadline and bfq allocate them from a
    shallow depth of 1, kyber of 75% of a word: sbitmap_queue_min_shallow_depth), else of the
    driver tags; 1 without a tag limit."""
    if model.hctx_sched_tags:
        depth = model.hctx_sched_tags
        if model.scheduler == "kyber":
            return sbq_wake_batch(depth, max((1 << sbitmap_shift(depth)) * KYBER_ASYNC_PERCENT // 100, 1))
        return sbq_wake_batch(depth, 1)
    return sbq_wake_batch(model.hctx_tags) if model.hctx_tags else 1


def request_based(mp) -> bool:
    """The target maps requests from a dm queue of its own (dm-rq), not bios (bio-based dm, NVMe)."""
    return mp.queue_mode not in ("bio", "nvme")


class Hctx:
    """One hardware queue of a path device: its tags and what waits for them."""

    __slots__ = ("nr_tags", "nr_sched_tags", "tags_used", "sched_tags_used", "dispatch", "sleepers",
                 "wake_batch", "freed_while_waited")

    def __init__(self, model):
        self.nr_tags = model.hctx_tags              # 0 = unlimited
        self.nr_sched_tags = model.hctx_sched_tags  # 0 = no scheduler
        self.tags_used = 0
        self.sched_tags_used = 0
        self.dispatch = deque()     # bio-based: requests holding a scheduler tag, waiting for a driver tag
        self.sleepers = deque()     # bio-based: I/Os whose submitting task sleeps in tag allocation
        self.wake_batch = tag_wake_batch(model)
        self.freed_while_waited = 0     # sbitmap_queue's completion_cnt - wakeup_cnt

    def batch_done(self) -> bool:
        """A tag is freed while a task sleeps for one: whether that completes a wake batch."""
        self.freed_while_waited += 1
        if self.freed_while_waited < self.wake_batch:
            return False
        self.freed_while_waited -= self.wake_batch
        return True

    def get_tag(self) -> bool:
        if self.nr_tags and self.tags_used >= self.nr_tags:
            return False
        self.tags_used += 1
        return True

    def get_sched_tag(self) -> bool:
        if self.nr_sched_tags and self.sched_tags_used >= self.nr_sched_tags:
            return False
        self.sched_tags_used += 1
        return True


class BlockLayer:
    """Tags of every path device, and the dm device's own queue when request-based."""

    RESOURCE_DELAY_NS = BLK_MQ_RESOURCE_DELAY_NS

    def __init__(self, sim):
        self.sim = sim
        # NVMe multipath is bio-based too: nvme_ns_head_submit_bio picks the path and resubmits the bio
        # to that path's queue from the submitting task (mpathlab.nvme)
        self.rq = request_based(sim.mp)
        self.queues = {d: [Hctx(d.model) for _ in range(d.model.nr_hw_queues)] for d in sim.devices}
        # the dm device's hardware queue (request-based)
        self.waiting = deque()      # dm requests not yet mapped (elevator + hctx->dispatch)
        self.stalled = False        # the head came back with BLK_STS_RESOURCE (it is on hctx->dispatch)
        self.sched_restart = False  # BLK_MQ_S_SCHED_RESTART
        self.work_gen = 0           # hctx->run_work: a newer request supersedes the pending one
        self.work_latency = sim.host.model.work_latency_ns if sim.host is not None else 0
        self.dispatch_ns = sim.host.model.dispatch_ns if sim.host is not None else 0
        self.woken_issue = sim.host.model.woken_issue_ns if sim.host is not None else 0
        self.woken = 0              # woken tag sleepers so far (HostModel.woken_late draws by it)
        self.dispatching = False    # a run is between two requests (dispatch_cost apart)
        self.resource_stalls = 0    # BLK_STS_RESOURCE returns of dm_mq_queue_rq
        if self.rq:
            sim.mp.alloc_clone = self.alloc_clone
        # NVMe: a bio the head's requeue work resubmits sleeps in that kworker, not in the fio task
        self._by_worker = getattr(sim.mp, "submitted_by_worker", None)
        self._worker_sleepers: set = set()
        # SCSI paths: host tags and device budgets instead of the path's own tags (sim/scsi.py)
        self.scsi = ScsiQueues(self) if any(d.model.is_scsi for d in sim.devices) else None

    # -- request-based ------------------------------------------------------
    def insert(self, io) -> None:
        """A dm request enters the dm queue (submission or requeue); the queue runs."""
        self.waiting.append(io)
        self._mod_work(0)

    def _mod_work(self, delay_ns: int) -> None:
        """kblockd_mod_delayed_work_on(hctx->run_work, delay): the run_work runs delay (plus
        the work latency) from now, whatever was asked before."""
        self.work_gen += 1
        self.sim.call_at(self.sim.now + delay_ns + self.work_latency, self._work, self.work_gen)

    def _work(self, gen) -> None:
        if gen == self.work_gen:
            self._run()

    def _run(self) -> None:
        """blk_mq_sched_dispatch_requests on the dm queue: map requests in turn until one gets
        BLK_STS_RESOURCE."""
        if self.stalled:
            self.sched_restart = True   # dispatching from hctx->dispatch
        if not self.dispatching:
            self._dispatch(None)

    def _dispatch(self, _) -> None:
        """Map the waiting requests in order, one per dispatch_cost, until one gets BLK_STS_RESOURCE."""
        self.dispatching = False
        waiting = self.waiting
        while waiting:
            io = waiting.popleft()
            if not self.sim._map(io):
                waiting.appendleft(io)
                self.stalled = True
                self.resource_stalls += 1
                self._mod_work(0 if not self.sched_restart else BLK_MQ_RESOURCE_DELAY_NS)
                return
            if self.dispatch_ns and waiting:
                self.dispatching = True
                self.sim.call_at(self.sim.now + self.dispatch_ns, self._dispatch, None)
                return
        self.stalled = False

    def _hctx(self, dev, io) -> Hctx:
        """The hardware queue of ``dev`` for the CPU ``io`` is mapped on."""
        hw = self.queues[dev]
        return hw[io.job.cpu % len(hw)]

    def alloc_clone(self, pgpath, io) -> bool:
        """blk_mq_alloc_request(path queue, BLK_MQ_REQ_NOWAIT) in multipath_clone_and_map (None: the
        path's queue is dying)."""
        dev = self.sim.dev_of_pgpath[pgpath]
        if dev.scsi is not None:
            return self.scsi.alloc_clone(io, dev)
        q = self._hctx(dev, io)
        return q.get_sched_tag() if q.nr_sched_tags else q.get_tag()

    def issue_directly(self, io, dev) -> bool:
        """blk_insert_cloned_request -> blk_mq_request_issue_directly: a clone holding a scheduler
        tag still needs a driver tag.  Without one the clone is released before it started."""
        if dev.scsi is not None:
            return self.scsi.issue_directly(io, dev)
        q = self._hctx(dev, io)
        if not q.nr_sched_tags or q.get_tag():
            return True
        io.start_time_ns = 0            # never started: io_start_time_ns stays 0
        self.sim._target_of(io).release_clone(io)   # the selector's end_io, after its start_io
        q.sched_tags_used -= 1
        return False

    # -- bio-based ----------------------------------------------------------
    def start(self, io, dev) -> bool:
        """The mapped I/O reaches the path queue.  True: the driver starts it now."""
        if self.rq:
            return True
        if dev.scsi is not None:
            return self.scsi.start(io, dev)
        q = self._hctx(dev, io)
        if q.nr_sched_tags:
            if not q.get_sched_tag():
                self._sleep(q, io)
                return False
            if q.dispatch or not q.get_tag():
                q.dispatch.append(io)   # in the elevator until a driver tag is free
                return False
            return True
        if not q.get_tag():
            self._sleep(q, io)
            return False
        return True

    def _sleep(self, q, io) -> None:
        if self._by_worker is not None and self._by_worker(io):
            self._worker_sleepers.add(io)
        else:
            io.job.blocked = True
        q.sleepers.append(io)

    def _wake(self, io) -> None:
        if io in self._worker_sleepers:
            self._worker_sleepers.discard(io)
            return
        job = io.job
        job.blocked = False
        self.sim._submit_more(job)

    # -- completion ---------------------------------------------------------
    def complete(self, io, dev) -> None:
        """The request on ``dev`` is freed: its tags go back, and whatever waits for them moves."""
        q = self._hctx(dev, io)
        sim = self.sim
        if dev.scsi is not None:
            self.scsi.complete(io, dev)
        if self.rq:
            if dev.scsi is None:
                q.tags_used -= 1
                if q.nr_sched_tags:
                    q.sched_tags_used -= 1
            # the dm request is freed too: blk_mq_sched_restart re-runs a marked queue
            if self.sched_restart:
                self.sched_restart = False
                if self.waiting:
                    self._mod_work(0)
            return
        if dev.scsi is not None:
            return
        if q.nr_sched_tags:
            q.sched_tags_used -= 1
            q.tags_used -= 1
            if q.dispatch:                      # the path queue runs: next request gets the driver tag
                q.tags_used += 1
                sim._start(q.dispatch.popleft(), dev)
        else:
            q.tags_used -= 1
        if q.sleepers and q.batch_done():
            self._wake_batch(q, dev)

    def _wake_batch(self, q, dev) -> None:
        """Up to a batch of the tasks asleep on ``q`` get the tag they sleep for (the scheduler's, then
        a driver tag or the elevator; else a driver tag) and their I/O goes on."""
        sim = self.sim
        for _ in range(min(q.wake_batch, len(q.sleepers))):
            if not (q.get_sched_tag() if q.nr_sched_tags else q.get_tag()):
                break
            nxt = q.sleepers.popleft()
            at = sim.now + self.woken_issue         # when the woken task goes on
            if q.nr_sched_tags and (q.dispatch or not q.get_tag()):
                q.dispatch.append(nxt)
            elif self.woken_issue:
                self.woken += 1
                at += sim.host.model.woken_late(self.woken, sim.seed)
                sim.call_at(at, self._woken_start, (nxt, dev))
            else:
                sim._start(nxt, dev)
            sim.call_at(at, self._wake, nxt)

    def _woken_start(self, item) -> None:
        """A task woken with its tag issues its I/O (HostModel.woken_issue after the freeing completion)."""
        self.sim._start(*item)

    def drain(self) -> int:
        """I/O held here when a run is cut short (counted as pending), dropped."""
        n = len(self.waiting)
        self.waiting.clear()
        for hw in self.queues.values():
            for q in hw:
                n += len(q.dispatch) + len(q.sleepers)
                q.dispatch.clear()
                q.sleepers.clear()
        self._worker_sleepers.clear()
        if self.scsi is not None:
            n += self.scsi.drain()
        return n
