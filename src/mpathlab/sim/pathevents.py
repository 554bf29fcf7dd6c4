"""What happens to a run's paths from outside the I/O path: faults (a device failing, slowing, a SCSI
device's state or error class, a dm-delay device suspended and resumed), dm messages (``dmsetup message``,
multipathd's reinstate) and a daemon's device operations."""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Optional

from ..stall import TARGET_TIMER_STOP_NS
from ..target import MessageError, Multipath
from .devices import PathDevice
from .loop import EV_ERRDONE, EV_MESSAGE, EventLoop
from .scsi import FAULT_STATES, SDEV_RUNNING

if TYPE_CHECKING:
    from .blockqueue import BlockLayer
    from .result import SimResult


class TargetTimer(str):
    """The text of a message a target scheduled for itself (the NVMe head's ANATT, reconnect and retry
    timers), as opposed to the topology's or multipathd's messages."""
    __slots__ = ()


class PathEvents(EventLoop):
    """Faults and messages of one run (set up by Simulation.__init__)."""

    mp: Multipath
    result: "SimResult"
    blk: Optional["BlockLayer"]
    workload_done: "Callable[[], bool]"
    _timer_progress = (-1, 0)    # (I/Os ended, when that count last changed), read at a target's timers

    def _fault(self, dev: PathDevice, fault) -> None:
        self._state_changes -= 1
        if fault.action == "fail":
            self.fail_device(dev)
        elif fault.action == "reinstate":
            dev.offline = False
            if dev.scsi is not None:
                self.blk.scsi.set_state(dev, "running")     # type: ignore[union-attr]
            # multipathd's path checker notices and reinstates the path
            self._schedule_message(fault.reinstate_after_ns, "reinstate_path %s" % dev.model.devname)
        elif fault.action == "slow":
            dev.slow_factor = fault.factor
        elif fault.action == "suspend":
            self.dm_suspend(dev)
        elif fault.action == "resume":
            self.dm_resume(dev, fault.delay_ns)
        else:
            self.scsi_fault(dev, fault)

    def scsi_fault(self, dev: PathDevice, fault) -> None:
        """A fault of a SCSI path's device (sim/scsi.py): its state, or an error class on every
        every_nth command.  null_blk-like devices take offline/delete as a device that fails."""
        if fault.action == "error":
            for sd in dev.scsi_of_host:     # the port's LUN errs for every host
                sd.error = fault.error or None
                sd.every_nth = fault.every_nth
            return
        state = FAULT_STATES[fault.action]
        if dev.scsi is None:
            if state == SDEV_RUNNING:
                dev.offline = False
            else:
                self.fail_device(dev)
            return
        self.blk.scsi.set_state(dev, state)     # type: ignore[union-attr]

    def _to_device(self, io, dev: PathDevice) -> None:
        """Submit IO to DEV's device (sim/iopath.py)."""
        raise NotImplementedError

    def _dm_submit(self, io, dev: PathDevice) -> None:
        """IO reaches the dm-delay device over DEV.  Suspended, dm core holds it for resume (drivers/md/dm.c
        dm_submit_bio queues bios while DMF_BLOCK_IO_FOR_SUSPEND is set); else dm-delay's delay_map puts it
        on its delay list, or passes it straight on when the delay is 0."""
        if dev.dm_suspended:
            dev.dm_held.append(io)
        elif dev.dm_delay_ns:
            due = self.now + dev.dm_delay_ns
            dev.dm_delayed[io] = due
            self.call_at(due, self._dm_delay_expired, (io, dev, due))
        else:
            self._to_device(io, dev)

    def _dm_delay_expired(self, item) -> None:
        io, dev, due = item
        if dev.dm_delayed.get(io) == due:       # not flushed by a suspend since
            del dev.dm_delayed[io]
            self._to_device(io, dev)

    def dm_suspend(self, dev: PathDevice) -> None:
        """``dmsetup suspend`` of the dm-delay device: its presuspend (delay_presuspend) submits every
        delayed I/O to the device at once; then dm core holds new I/O until resume.  I/O already in the
        device completes (dm_wait_for_completion waits for it)."""
        dev.dm_suspended = True
        delayed = list(dev.dm_delayed)
        dev.dm_delayed.clear()
        for io in delayed:
            self._to_device(io, dev)

    def dm_resume(self, dev: PathDevice, delay_ns: Optional[int]) -> None:
        """``dmsetup resume`` after a reload: the new table's delay (None: unchanged) applies, and the I/O
        dm core held goes through it in its order (dm_queue_flush, then dm_wq_work)."""
        dev.dm_suspended = False
        if delay_ns is not None:
            dev.dm_delay_ns = delay_ns
        held, dev.dm_held = dev.dm_held, []
        for io in held:
            self._dm_submit(io, dev)

    def _schedule_message(self, delay_ns: int, text: str) -> None:
        """A dm message later: the topology's [[messages]], multipathd's reinstate after a fault, a target's own
        timer (NVMe ctrl_loss_tmo).  It can bring a path back, so it counts as a pending state change."""
        self._push(self.now + delay_ns, EV_MESSAGE, text)
        self._state_changes += 1

    def _schedule_target_timer(self, delay_ns: int, text: str) -> None:
        """A target's own timer (the ``schedule`` a target is given)."""
        self._schedule_message(delay_ns, TargetTimer(text))

    def _message(self, text: str) -> None:
        self._state_changes -= 1
        if isinstance(text, TargetTimer) and self._target_timers_stop():
            return
        self.send_message(text)

    def _target_timers_stop(self) -> bool:
        """A target's timer does nothing once the workload is done (the kernel's would run on, unseen), nor
        once no I/O has ended for TARGET_TIMER_STOP_NS (the run ends stalled, saying why); the progress
        is read at each timer, in both engines (the core sends its counts with each message)."""
        done = self.result.completed + self.result.errored
        if done != self._timer_progress[0]:
            self._timer_progress = (done, self.now)
        if self.workload_done():
            return True
        if self.now - self._timer_progress[1] < TARGET_TIMER_STOP_NS:
            return False
        if self.result.timers_stopped_ns is None:
            self.result.timers_stopped_ns = self.now
        return True

    def send_message(self, text: str) -> bool:
        """A dm message (``dmsetup message``) now; recorded in the result."""
        try:
            self.mp.message(*text.split())
            self.result.messages.append((self.now, text, "ok"))
            return True
        except MessageError as e:
            self.result.messages.append((self.now, text, "error: %s" % (e.warning or e)))
            return False

    def fail_device(self, dev: PathDevice) -> None:
        """The device stops answering: waiting I/O fails at once, I/O being served
        fails when it ends, new I/O fails after its fail latency."""
        dev.offline = True
        while dev.queue:
            self._push(self.now + dev.model.fail_latency_ns, EV_ERRDONE, dev.queue.popleft())

    def restore_device(self, dev: PathDevice) -> None:
        """The device answers again (nothing is reinstated in the target)."""
        dev.offline = False
