"""``dmsetup create / table / status / message / remove`` of one multipath device, as a given kernel
release on a given host answers them: the bytes dmsetup prints, the kernel log lines, the errno of a
refusal and the IMA records.  This is what the kernel captures are compared with.

>>> from mpathlab.profiles import Host
>>> from mpathlab.target.dmsetup import DmDevice
>>> d = DmDevice(kernel="6.1", host=Host.null_blk(8, nr_cpu_ids=2))
>>> d.create("0 2097152 multipath 0 0 1 1 round-robin 0 2 1 252:0 1 252:1 1").ok
True
>>> d.status()
'0 2097152 multipath 2 1 0 0 1 1 E 0 2 0 252:0 A 0 252:1 A 0 \\n'
"""
from __future__ import annotations

import errno as errno_module
from typing import Any, List, Optional

from ..profiles import get_profile
from . import MessageError, TargetError, parse, table_line
from . import ima as dm_ima


class Outcome:
    """What one dmsetup command left behind."""

    def __init__(self, ok: bool, errno: int = 0, error: Optional[str] = None, dmesg=(), ima=()):
        self.ok = ok
        self.errno = errno                  # positive errno of a refusal
        self.error = error                  # the kernel's error line for a refused table
        self.dmesg: List[str] = list(dmesg)  # kernel log lines, audit lines left out
        self.ima: List[dict] = list(ima)     # IMA records added

    @property
    def strerror(self) -> str:
        return errno_module.errorcode.get(self.errno, "") if self.errno else ""


class DmDevice:
    def __init__(self, name: str = "mp", major: int = 253, minor: int = 0, uuid: str = "", *, kernel=None,
                 host=None, ima_log: Optional[dm_ima.MeasurementLog] = None, **target_kwargs):
        self.name, self.major, self.minor, self.uuid = name, major, minor, uuid
        self.profile = get_profile(kernel)
        self.host = host
        self.ima_log = ima_log if ima_log is not None else dm_ima.MeasurementLog()
        self.target_kwargs = target_kwargs
        self.mp: Any = None             # the loaded table's Multipath, after create()
        self._active_hash: Any = None

    @property
    def devno(self) -> str:
        return "%d:%d" % (self.major, self.minor)

    def _measure(self, event: str, buf: str, out: list) -> None:
        if self.profile.ima:
            rec = self.ima_log.measure(event, buf)
            if rec is not None:
                out.append(rec)

    def create(self, line: str) -> Outcome:
        """Load the table and resume the device (dmsetup create NAME --table LINE)."""
        try:
            mp = parse(line, kernel=self.profile, host=self.host, **self.target_kwargs)
        except TargetError as e:
            dmesg = list(getattr(e, "dmesg_lines", []))
            return Outcome(False, e.errno, e.dmesg(self.devno), dmesg + [
                e.dmesg(self.devno), "device-mapper: ioctl: error adding target to table"])
        mp.device_name = self.devno
        self.mp = mp
        dmesg = list(mp.dmesg)
        mp.dmesg.clear()
        records: List[dict] = []
        if self.profile.ima:
            load = dm_ima.table_load_buffer(mp, self.name, self.uuid, self.major, self.minor)
            self._measure("dm_table_load", load, records)
            self._active_hash = dm_ima.table_hash([load])
            self._measure("dm_device_resume", dm_ima.device_resume_buffer(
                self.name, self.uuid, self.major, self.minor, self._active_hash, mp.table_length,
                dm_version=self.profile.dm_version), records)
        return Outcome(True, dmesg=dmesg, ima=records)

    def table(self) -> str:
        return table_line(self.mp) + "\n"

    def status(self) -> str:
        return "%d %d multipath %s\n" % (self.mp.table_start, self.mp.table_length, self.mp.status("info"))

    def message(self, text: str) -> Outcome:
        """dmsetup message NAME 0 TEXT (dmsetup splits TEXT at white space)."""
        try:
            self.mp.message(*text.split())
            ok, err = True, 0
        except MessageError as e:
            ok, err = False, e.errno
        dmesg = list(self.mp.dmesg)
        self.mp.dmesg.clear()
        return Outcome(ok, err, dmesg=dmesg)

    def remove(self) -> Outcome:
        records: List[dict] = []
        if self.profile.ima and self.mp is not None:
            self._measure("dm_device_remove", dm_ima.device_remove_buffer(
                self.name, self.uuid, self.major, self.minor, self._active_hash, self.mp.table_length,
                dm_version=self.profile.dm_version), records)
        self.mp = None
        return Outcome(True, ima=records)
