"""The dm I/O path of one run: map through the target, the path's tags and transport, the device,
and end_io (dm-mpath's multipath_clone_and_map / multipath_end_io around the block layer)."""
from __future__ import annotations

import random
from typing import TYPE_CHECKING, Callable, Dict, List, Optional

from ..target import (END_DELAY_REQUEUE, END_DONE, END_REQUEUE, MAP_DELAY_REQUEUE, MAP_KILL, MAP_REMAPPED,
                      MAP_REQUEUE, MpathIO, Multipath)
from ..target.multipath import QUEUE_MODE_RQ
from .boundary import REQUEUE_DELAY_NS
from .devices import PathDevice
from .pathevents import PathEvents
from .loop import (EV_ACTIVATED, EV_ARRIVE, EV_CALL, EV_DONE, EV_ERRDONE, EV_KICK, EV_NOPATH_TIMEOUT,
                   EV_REQUEUE, EV_RETRY)

if TYPE_CHECKING:
    from ..timing import TimeBase
    from .blockqueue import BlockLayer
    from .host import Host
    from .result import SimResult


class SimIO(MpathIO):
    __slots__ = ("job", "submit_ns", "is_read", "dev", "ddir")

    def __init__(self, nr_bytes, job, submit_ns, is_read, ddir=None):
        MpathIO.__init__(self, nr_bytes)
        self.job = job
        self.submit_ns = submit_ns
        self.is_read = is_read
        self.dev = None
        self.ddir = (0 if is_read else 1) if ddir is None else ddir   # 0 read, 1 write, 2 trim


class IoPath(PathEvents):
    """Map, dispatch, transport, service and completion of one I/O; faults and dm messages."""

    # set up by Simulation.__init__
    mp: Multipath
    paths: list
    result: "SimResult"
    host: Optional["Host"]
    blk: Optional["BlockLayer"]
    timebase: "TimeBase"
    window_ns: int
    _windows: Dict[int, List[int]]
    activation_ns: int
    _timer_gen: int
    _timer_pending: bool
    _kick_pending: bool
    _requeue_list: list
    _requeue_gen: int
    _extra_delay: Optional[Callable]
    _driver_start: Optional[Callable]
    seed: int

    def _complete(self, io: SimIO, error: Optional[str]) -> None:
        """The I/O is done for its job (fio's side: JobRules)."""
        raise NotImplementedError

    def _init_devices(self, master: random.Random) -> None:
        """A device per path model (seeded from MASTER in path order) and the table's paths onto them."""
        devs_by_devt = {}
        self.devices: List[PathDevice] = []
        for pm in self.paths:
            d = PathDevice(pm, master.getrandbits(64))
            devs_by_devt[pm.devt] = d
            self.devices.append(d)
        self._dev_index = {d: i for i, d in enumerate(self.devices)}
        self.dev_of_pgpath = {}
        for pgpath in self.mp.pgpaths:
            dev = devs_by_devt.get(pgpath.dev.devt)
            if dev is None:
                raise ValueError("table path %s has no device model in the topology" % pgpath.dev.name)
            self.dev_of_pgpath[pgpath] = dev

    def _target_of(self, io) -> Multipath:
        """The multipath target an I/O goes through: the one table of this host
        (mpathlab.multihost gives every host its own)."""
        return self.mp

    def _on_kick(self, mp) -> None:
        """dm-mpath's process_queued_io_list: request-based, it kicks the dm queue's requeue list now
        (dm_mq_kick_requeue_list), in the caller's context, so a DM_MAPIO_DELAY_REQUEUE returned after it
        (pg_init_done inside clone_and_map) still re-arms the work to 100 ms; bio-based, the target's
        queued bios are re-mapped (EV_KICK)."""
        if mp.queue_mode == QUEUE_MODE_RQ:
            self._kick_requeue(0)
        if not self._kick_pending:
            self._kick_pending = True
            self._push(self.now, EV_KICK, None)

    def _requeue(self, io: SimIO, delay_ns: int) -> None:
        """dm-rq.c dm_requeue_original_request: the request goes on the dm queue's requeue list and the
        list's one delayed work is kicked with the delay (0, or 100 ms for DM_MAPIO_DELAY_REQUEUE)."""
        self._requeue_list.append(io)
        self._kick_requeue(delay_ns)

    def _kick_requeue(self, delay_ns: int) -> None:
        """blk_mq_delay_kick_requeue_list: a mod_delayed_work, so the latest kick decides when every
        listed request runs (an immediate requeue or a kick runs those waiting their 100 ms too)."""
        self._requeue_gen += 1
        self._push(self.now + delay_ns, EV_REQUEUE, self._requeue_gen)

    def _run_requeue_list(self) -> None:
        """blk_mq_requeue_work: every listed request goes back into the dm queue, which runs."""
        items, self._requeue_list = self._requeue_list, []
        for io in items:
            self._dispatch(io)

    def _set_timer(self, mp, delay_ns) -> None:
        """mod_timer / del_timer for the queue_if_no_path timeout."""
        if self._timer_pending:
            self._state_changes -= 1
            self._timer_pending = False
        self._timer_gen += 1
        if delay_ns is not None:
            self._push(self.now + delay_ns, EV_NOPATH_TIMEOUT, self._timer_gen)
            self._state_changes += 1
            self._timer_pending = True

    def _nopath_timeout(self, gen: int) -> None:
        """The queue_if_no_path timer fired (unless re-armed or deleted since)."""
        if gen == self._timer_gen and self._timer_pending:
            self._timer_pending = False
            self._state_changes -= 1
            self.mp.nopath_timeout()

    def _activate(self, mp, pgpath, delay_ms: int) -> None:
        self._push(self.now + delay_ms * 1_000_000 + self.activation_ns, EV_ACTIVATED, pgpath)

    def _dispatch(self, io: SimIO) -> None:
        if self.blk is not None and self.blk.rq:
            self.blk.insert(io)     # dm's own blk-mq queue maps it when it runs
        else:
            self._map(io)

    def _map(self, io: SimIO) -> bool:
        """Map one I/O and issue it; False when a request-based clone found no tag (BLK_STS_RESOURCE)."""
        self._cur_cpu = io.job.cpu
        r = self._target_of(io).map(io)
        if r == MAP_REMAPPED:
            dev = self.dev_of_pgpath[io.pgpath]  # type: ignore[index]  # map() set pgpath
            blk = self.blk
            if blk is not None and blk.rq and not blk.issue_directly(io, dev):
                return False
            io.dev = dev
            dev.dispatched += 1
            if self.window_ns:
                w = self._windows.get(self.now // self.window_ns)
                if w is None:
                    w = self._windows[self.now // self.window_ns] = [0] * len(self.devices)
                w[self._dev_index[dev]] += 1
            dev.in_flight += 1
            if dev.in_flight > dev.peak_in_flight:
                dev.peak_in_flight = dev.in_flight
            if dev.dm_delay_ns or dev.dm_suspended:
                self._dm_submit(io, dev)       # a dm-delay device over the device (sim/pathevents.py)
            else:
                self._to_device(io, dev)
        elif r == MAP_DELAY_REQUEUE:      # request-based only
            self._requeue(io, REQUEUE_DELAY_NS)
        elif r == MAP_REQUEUE:
            if self.blk is not None and self.blk.rq:
                return False    # no tag for the clone
            # back to dm core at once; 1 us keeps a persistent requeue (noflush
            # suspend) from spinning at one instant
            self._push(self.now + 1000, EV_RETRY, io)
        elif r == MAP_KILL:
            self._complete(io, "ioerr")
        # MAP_SUBMITTED: queued inside the target until a kick
        return True

    def _to_device(self, io: SimIO, dev: PathDevice) -> None:
        """The I/O is submitted to the path's device: its tags, then the driver."""
        if self.blk is None or self.blk.start(io, dev):   # bio-based: False while it waits for a tag
            self._start(io, dev)

    def _start(self, io: SimIO, dev: PathDevice) -> None:
        """The driver has the request: it travels the path's delay to the device."""
        if self._driver_start is not None and not self._driver_start(io):
            self._push(self.now, EV_ERRDONE, io)
            return
        sd = dev.scsi and dev.scsi_of_host[io.job.host]     # the issuing host's scsi_device
        if sd is not None and sd.state != "running":
            status = sd.state_check()       # scsi_queue_rq refuses it before the LLD: completed at once
            if status is not None:
                self.call_at(self.now, self._scsi_rejected, (io, status))
                return
        delay = dev.model.delay_ns
        if self._extra_delay is not None:       # a per-I/O transport cost the target asks for (NVMe)
            delay += self._extra_delay(io)
        if dev.offline:
            self._push(self.now + dev.model.fail_latency_ns, EV_ERRDONE, io)
        elif delay:
            self._push(self.now + delay, EV_ARRIVE, io)
        else:
            self._arrive(io)

    def _arrive(self, io: SimIO) -> None:
        dev = io.dev
        if dev.offline:
            self._push(self.now + dev.model.fail_latency_ns, EV_ERRDONE, io)
            return
        if dev.busy < dev.model.parallelism:
            dev.busy += 1
            self._push(self._fires(self.now + dev.service_ns(io.nr_bytes)), EV_DONE, io)
        else:
            dev.queue.append(io)

    def _fires(self, due: int) -> int:
        """When a device completion due at ``due`` happens (the host's timers, HostModel.timer_fires)."""
        return due if self.host is None else self.host.model.timer_fires(due, self.seed)

    def _scsi_rejected(self, item) -> None:
        self._path_done(*item)

    def _path_done(self, io: SimIO, error: Optional[str]) -> None:
        dev = io.dev
        sd = dev.scsi and dev.scsi_of_host[io.job.host]
        if sd is not None and error is None:
            error = sd.command_result(io)   # the midlayer's disposition of what the LLD returned
            if error == "retry":            # below dm: the command goes round the device again
                self.blk.scsi.retry(io, dev)    # type: ignore[union-attr]  # SCSI paths have a block layer
                return
        dev.in_flight -= 1
        io.dev = None
        r = self._target_of(io).end_io(io, error)
        if self.blk is not None:
            self.blk.complete(io, dev)
        if error:
            dev.errors += 1
            if r != END_DONE:       # dm-mpath took the I/O back (another path, or later)
                self.result.requeued_errors += 1
        if r == END_DONE:
            if io.error:
                self._complete(io, io.error)
            else:
                dev.completed += 1
                dev.lat.add(self.now - io.submit_ns)
                self._reap(io)
        elif r == END_REQUEUE:
            if self.mp.queue_mode == QUEUE_MODE_RQ:
                self._requeue(io, 0)
            else:       # bio-based (a noflush suspend): back to dm core
                self._push(self.now, EV_RETRY, io)
        elif r == END_DELAY_REQUEUE:      # request-based only
            self._requeue(io, REQUEUE_DELAY_NS)

    def _reap(self, io: SimIO) -> None:
        """dm has ended IO without an error: fio reaps it, after its completion's CPU time on a host."""
        if self.host is not None and self.host.model.complete_ns:
            self.host.reap(io)
        else:
            self._complete(io, None)

    def path_done(self, io: SimIO, error: Optional[str]) -> None:
        """A path ends I/O IO (ERROR None, or a blk_status name): dm's end_io and what follows."""
        self._path_done(io, error)

    def _snapshot_in_flight(self) -> None:
        self.result.timeline.append((self.now, {d.model.name: d.in_flight for d in self.devices}))

    def _drain_pending(self, heap) -> int:
        """Count the I/O still under way when the run is cut short, and drop it."""
        n = 0
        # an I/O scsi_queue_rq refused by the device's state is still dm's until it completes; one a woken
        # task is about to issue, or whose completion's interrupt work is under way, is pending too
        held: List[Callable] = [self._scsi_rejected]
        if self.blk is not None:
            held.append(self.blk._woken_start)
        if self.host is not None:
            held.append(self.host._reaped)
        # and of those, an I/O dm has ended whose interrupt work is under way: fio has not reaped it (a reap on a
        # CPU: Host.drain)
        reaped = self.host._reaped if self.host is not None else None
        for _, _, kind, obj in heap:
            if kind in (EV_DONE, EV_ARRIVE, EV_RETRY, EV_ERRDONE) or (kind == EV_CALL and obj[0] in held):
                n += 1
                self.result.pending_reap += kind == EV_CALL and obj[0] == reaped
        heap.clear()
        n += len(self._requeue_list)
        self._requeue_list.clear()
        if self.blk is not None:
            n += self.blk.drain()
        if self.host is not None:
            n += self.host.drain()
        for d in self.devices:
            n += len(d.queue) + len(d.dm_delayed) + len(d.dm_held)
            d.queue.clear()
            d.dm_delayed.clear()
            d.dm_held.clear()
            d.in_flight = 0
        return n
