"""dm-ima: what the kernel's IMA subsystem records for a multipath device.

Builds the ``dm_table_load`` and ``dm_device_resume`` buffers (classic
dm-ima, 5.15 onwards), their digests, the ima-buf template hash and the line
``ascii_runtime_measurements`` shows.  The target's part of the table-load
buffer is :meth:`Multipath.status("ima")`, cut to the 2048-byte per-target
buffer the kernel gives it.
"""
from __future__ import annotations

import hashlib
import struct
from typing import Dict, List, Optional, Set

DM_VERSION = "4.50.0"   # the "current" profile's; buffers of a Multipath use its profile's dm_version
DM_IMA_TARGET_DATA_BUF_LEN = 2048
DEFAULT_PCR = 10


def escape(text: str) -> str:
    """Name and uuid escaping: a backslash before \\ ; = and ,."""
    out = []
    for c in text:
        if c in "\\;=,":
            out.append("\\")
        out.append(c)
    return "".join(out)


def device_metadata(name: str, uuid: str, major: int, minor: int, num_targets: int = 1) -> str:
    return "name=%s,uuid=%s,major=%d,minor=%d,minor_count=1,num_targets=%d;" % (
        escape(name), escape(uuid), major, minor, num_targets)


def table_load_buffer(mp, name: str, uuid: str, major: int, minor: int, *, dm_version: Optional[str] = None) -> str:
    """The dm_table_load buffer for a one-target multipath table (dm_version: the target's profile's)."""
    if dm_version is None:
        dm_version = mp.profile.dm_version
    return ("dm_version=%s;" % dm_version + device_metadata(name, uuid, major, minor, 1)
            + "target_index=0,target_begin=%d,target_len=%d," % (mp.table_start, mp.table_length)
            + mp.status("ima", maxlen=DM_IMA_TARGET_DATA_BUF_LEN))


def table_hash(buffers) -> str:
    """The (in)active table hash: sha256 over every measured buffer."""
    h = hashlib.sha256()
    for b in buffers:
        h.update(b.encode())
    return "sha256:" + h.hexdigest()


def device_resume_buffer(name: str, uuid: str, major: int, minor: int, active_table_hash: str,
                         capacity_sectors: int, *, dm_version: str = DM_VERSION) -> str:
    return ("dm_version=%s;" % dm_version + device_metadata(name, uuid, major, minor, 1)
            + "active_table_hash=%s;" % active_table_hash
            + "current_device_capacity=%d;" % capacity_sectors)


def device_remove_buffer(name: str, uuid: str, major: int, minor: int, active_table_hash: str,
                         capacity_sectors: int, *, dm_version: str = DM_VERSION, remove_all: bool = False) -> str:
    """dm_device_remove: the active table's metadata and hash (no inactive table)."""
    return ("dm_version=%s;" % dm_version + "device_active_metadata="
            + device_metadata(name, uuid, major, minor, 1)
            + "active_table_hash=%s,remove_all=%s;" % (active_table_hash, "y" if remove_all else "n")
            + "current_device_capacity=%d;" % capacity_sectors)


class MeasurementLog:
    """ascii_runtime_measurements of one boot: IMA does not add a record whose
    template hash is already in the log, so an identical buffer is measured once."""

    def __init__(self, hash_algo: str = "sha256", pcr: int = DEFAULT_PCR):
        self.hash_algo = hash_algo
        self.pcr = pcr
        self.records: List[dict] = []
        self._seen: Set[str] = set()

    def measure(self, event_name: str, buffer: str):
        """The new record, or None when an identical one was measured before."""
        rec = measurement(event_name, buffer, self.hash_algo, self.pcr)
        if rec["template_hash"] in self._seen:
            return None
        self._seen.add(rec["template_hash"])
        self.records.append(rec)
        return rec


def measurement(event_name: str, buffer: str, hash_algo: str = "sha256", pcr: int = DEFAULT_PCR) -> Dict[str, str]:
    """One ima-buf record: event digest, SHA-1 template hash and the ascii log line."""
    data = buffer.encode()
    digest = hashlib.new(hash_algo, data).digest()
    fields = [hash_algo.encode() + b":\0" + digest, event_name.encode() + b"\0", data]
    tmpl = hashlib.sha1()
    for f in fields:
        tmpl.update(struct.pack("<I", len(f)))
        tmpl.update(f)
    template_hash = tmpl.hexdigest()
    return {
        "event": event_name, "digest": "%s:%s" % (hash_algo, digest.hex()), "template_hash": template_hash,
        "ascii": "%2d %s ima-buf %s:%s %s %s" % (pcr, template_hash, hash_algo, digest.hex(), event_name,
                                                data.hex()),
    }
