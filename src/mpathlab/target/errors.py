"""Errors raised by the multipath target, carrying the kernel's own strings."""
from __future__ import annotations

import errno as errno_module
import os
from typing import List

from ..kernel import EINVAL


class TargetError(Exception):
    """The constructor rejected a table.  ``message`` is the kernel's ti->error."""

    def __init__(self, message: str, errno: int = EINVAL, detail: str = ""):
        self.message = message
        self.errno = errno
        self.detail = detail
        self.dmesg_lines: List[str] = []     # what the constructor logged before it gave up
        super().__init__(message + (" (%s)" % detail if detail else ""))

    def dmesg(self, device: str = "mpath", target: str = "multipath") -> str:
        """The kernel log line: ``<dev>: <type>: <error> (-E...)``."""
        name = errno_module.errorcode.get(self.errno, str(self.errno))
        return "device-mapper: table: %s: %s: %s (-%s)" % (device, target, self.message, name)


class MessageError(Exception):
    """A ``dmsetup message`` was refused.  ``warning`` is the DMWARN text, if any."""

    def __init__(self, errno: int, warning: str = ""):
        self.errno = errno
        self.warning = warning
        super().__init__(warning or os.strerror(errno))
