"""What happens to a run's paths from outside the I/O path: faults (a device failing, slowing, a SCSI
device's state or error class), dm messages (``dmsetup message``, multipathd's reinstate) and a daemon's
device operations."""
from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from ..target import MessageError, Multipath
from .devices import PathDevice
from .loop import EV_ERRDONE, EV_MESSAGE, EventLoop
from .scsi import FAULT_STATES, SDEV_RUNNING

if TYPE_CHECKING:
    from .blockqueue import BlockLayer
    from .result import SimResult


class PathEvents(EventLoop):
    """Faults and messages of one run (set up by Simulation.__init__)."""

    mp: Multipath
    result: "SimResult"
    blk: Optional["BlockLayer"]

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

    def _schedule_message(self, delay_ns: int, text: str) -> None:
        """A dm message later: the topology's [[messages]], multipathd's reinstate after a fault, a target's own
        timer (NVMe ctrl_loss_tmo).  It can bring a path back, so it counts as a pending state change."""
        self._push(self.now + delay_ns, EV_MESSAGE, text)
        self._state_changes += 1

    def _message(self, text: str) -> None:
        self._state_changes -= 1
        self.send_message(text)

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
