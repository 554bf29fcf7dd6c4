"""Facts about the host that the kernel checks and a model must be told, not guess.

- which block devices exist (``dm_get_device`` opens the path: a major:minor
  with no device behind it is -ENXIO, a name that resolves to nothing is
  -ENODEV or -ENOENT depending on the release);
- what each device is (``scsi``, ``nvme``, ``null_blk``, ...): a hardware
  handler (``1 alua``) attaches only to SCSI devices, anything else is
  refused with "error attaching hardware handler" (-ENODEV);
- how many CPUs the host has (``nr_cpu_ids``): io-affinity parses and prints
  its masks with that width.

Without a :class:`Host` mpathlab assumes every device exists and takes any
handler, as before.
"""
from __future__ import annotations

import errno
from typing import Dict, Iterable, NamedTuple, Optional, Tuple

from ..kernel import MAJOR_MAX, MINOR_MAX, parse_u32

DEVICE_KINDS = ("scsi", "nvme", "null_blk", "loop", "virtio", "dm", "md", "other")
# Handlers scsi_dh can load (scsi_dh_alua, scsi_dh_emc, scsi_dh_hp_sw, scsi_dh_rdac).
SCSI_DH_HANDLERS = ("alua", "emc", "hp_sw", "rdac")


class HostError(ValueError):
    pass


class DeviceFact(NamedTuple):
    devt: Tuple[int, int]
    kind: str = ""          # one of DEVICE_KINDS; "" = not said (no handler check)
    name: str = ""          # e.g. "sdb", "nullb0"; "/dev/NAME" resolves to it too


def split_devt(token: str) -> Optional[Tuple[int, int]]:
    """``sscanf(path, "%u:%u%c") == 2``: the two numbers as parsed (u32), before the MKDEV check."""
    if ":" not in token:
        return None
    maj_s, _, min_s = token.partition(":")
    major, minor = parse_u32(maj_s), parse_u32(min_s)
    if major is None or minor is None:
        return None
    return major, minor


def devt_overflows(devt: Tuple[int, int]) -> bool:
    """MKDEV() cannot hold it: dm_get_device returns -EOVERFLOW."""
    return devt[0] > MAJOR_MAX or devt[1] > MINOR_MAX


class Host:
    """The block devices that exist and the CPU count (see the module docstring)."""

    def __init__(self, devices: Iterable[DeviceFact] = (), nr_cpu_ids: Optional[int] = None):
        self.devices: Dict[Tuple[int, int], DeviceFact] = {}
        self.names: Dict[str, Tuple[int, int]] = {}
        for d in devices:
            if d.kind and d.kind not in DEVICE_KINDS:
                raise HostError("device %u:%u: kind must be one of %s, not %r"
                                % (d.devt[0], d.devt[1], ", ".join(DEVICE_KINDS), d.kind))
            if d.devt in self.devices:
                raise HostError("device %u:%u is listed twice" % d.devt)
            self.devices[d.devt] = d
            if d.name:
                self.names[d.name] = d.devt
        if nr_cpu_ids is not None and not 1 <= nr_cpu_ids <= 8192:
            raise HostError("nr_cpu_ids must be from 1 to 8192, not %r" % (nr_cpu_ids,))
        self.nr_cpu_ids = nr_cpu_ids

    @classmethod
    def null_blk(cls, count: int = 8, nr_cpu_ids: Optional[int] = None, major: int = 252) -> "Host":
        """null_blk devices nullb0..N-1 = MAJOR:0..N-1 (the kernel captures' VM)."""
        return cls([DeviceFact((major, i), "null_blk", "nullb%d" % i) for i in range(count)], nr_cpu_ids)

    def lookup_name(self, token: str) -> Optional[Tuple[int, int]]:
        name = token[5:] if token.startswith("/dev/") else token
        return self.names.get(name)

    def kind(self, devt: Tuple[int, int]) -> Optional[str]:
        d = self.devices.get(devt)
        return d.kind if d is not None else None


def get_device_errno(token: str, resolved: Optional[Tuple[int, int]], host: Optional[Host],
                     missing_path_errno: int, open_device: bool = True) -> int:
    """0 if ``dm_get_device`` (or, with open_device=False, ``dm_devt_from_path``) succeeds, else its -errno.

    ``resolved`` is what the caller's name resolver made of ``token`` (None if nothing).
    """
    raw = split_devt(token)
    if raw is not None:
        if devt_overflows(raw):
            return errno.EOVERFLOW
        devt = raw
    else:
        devt = resolved if resolved is not None else (host.lookup_name(token) if host else None)
        if devt is None:
            return missing_path_errno
    if open_device and host is not None and devt not in host.devices:
        return errno.ENXIO   # blkdev_get_by_dev: no such device
    return 0


def attach_hw_handler_errno(host: Optional[Host], devt: Tuple[int, int], handler: str) -> int:
    """scsi_dh_attach(): -ENODEV on a non-SCSI device, -EINVAL for a handler scsi_dh does not have."""
    if host is None:
        return 0
    kind = host.kind(devt)
    if not kind:
        return 0
    if kind != "scsi":
        return errno.ENODEV
    if handler not in SCSI_DH_HANDLERS:
        return errno.EINVAL
    return 0
