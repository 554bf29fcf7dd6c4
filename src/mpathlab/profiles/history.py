"""What changed across kernel releases, and where, for everything a user of mpathlab can see.

Each :class:`Behaviour` is one thing that differs between kernels: its value
before the first change listed and, per change, the release that shipped it
and the upstream commit (id where it was pinned down, always the title).
A profile is these behaviours evaluated at one release; docs/kernel-profiles.md's
"Kernel profiles" table is printed from this list too (``mpathlab kernels``),
so the code and the documentation cannot disagree.
"""
from __future__ import annotations

import errno
from typing import Any, List, NamedTuple, Tuple

Version = Tuple[int, int]


class Change(NamedTuple):
    release: Version        # first mainline release with the change
    value: Any
    where: str              # commit id (when pinned down) and title, or the release notes


class Behaviour(NamedTuple):
    key: str
    what: str
    before: Any             # the value before the first listed change
    changes: Tuple[Change, ...]

    def at(self, version: Version) -> Any:
        value = self.before
        for ch in self.changes:
            if version >= ch.release:
                value = ch.value
        return value

    def where_at(self, version: Version) -> str:
        """The change that gave ``version`` its value ("" if none applies)."""
        where = ""
        for ch in self.changes:
            if version >= ch.release:
                where = ch.where
        return where


HISTORY: List[Behaviour] = [
    Behaviour("historical_service_time", "historical-service-time selector exists", False, (
        Change((5, 8), True, "2613eab11996 \"dm mpath: add Historical Service Time Path Selector\""),)),
    Behaviour("io_affinity", "io-affinity selector exists", False, (
        Change((5, 11), True, "\"dm mpath: add IO affinity path selector\" (Mike Christie; id not pinned "
                              "down, linux-next had several)"),)),
    Behaviour("hst_select_clock", "HST select_path's clock", "sched_clock", (
        Change((5, 18), "ktime", "ce40426fdc3c \"dm mpath: only use ktime_get_ns() in historical selector\" "
                                 "(also in 5.10.y/5.15.y stable from April 2022)"),)),
    Behaviour("hr_timer_bio", "bio-based start time from ktime for DM_PS_USE_HR_TIMER selectors", False, (
        Change((5, 19), True, "c06dfd124d46 \"dm mpath: provide high-resolution timer to HST for "
                              "bio-based\""),)),
    Behaviour("repeat_count_clamp", "rr/ql/st: repeat_count > 1 becomes 1 with a deprecation warning",
              False, (
        Change((4, 6), True, "90a4323ccfea \"dm path selector: remove 'repeat_count' return from "
                             ".select_path hook\""),)),
    Behaviour("queue_if_no_path_timeout", "queue_if_no_path_timeout_secs module parameter", False, (
        Change((5, 7), True, "\"dm mpath: Add timeout mechanism for queue_if_no_path\" (Anatol Pomazau, "
                             "2020)"),)),
    Behaviour("ima", "IMA measurement of table loads, resumes and removes (dm-ima)", False, (
        Change((5, 15), True, "91ccbbac1747 \"dm ima: measure data on table load\" and the dm-ima series"),)),
    Behaviour("target_version", "multipath target version (dmsetup targets, IMA target_version)",
              (1, 13, 0), (  # 1.13.0 before: seen on 5.x kernels; not checked on 5.8 itself
        Change((5, 14), (1, 14, 0), "bumped between 5.8 and 5.14 (5.14-rc2 prints v1.14.0; commit not "
                                    "pinned down)"),
        Change((6, 16), (1, 15, 0), "\"dm mpath: Interface for explicit probing of active paths\" "
                                    "(Kevin Wolf, 2025)"),)),
    Behaviour("dm_version", "dm ioctl version (dmsetup version, IMA dm_version)", "4.42.0", (
        Change((5, 10), "4.43.0", "dm-ioctl.h \"-ioctl (2020-10-01)\""),
        Change((5, 11), "4.44.0", "dm-ioctl.h \"-ioctl (2020-12-25)\""),
        Change((5, 13), "4.45.0", "dm-ioctl.h \"-ioctl (2021-03-22)\""),
        Change((5, 17), "4.46.0", "dm-ioctl.h \"-ioctl (2022-01-21)\" (release inferred from the date)"),
        Change((6, 0), "4.47.0", "dm-ioctl.h \"-ioctl (2022-07-28)\""),
        Change((6, 4), "4.48.0", "dm-ioctl.h \"-ioctl (2023-03-01)\" (release inferred from the date)"),
        Change((6, 14), "4.49.0", "dm-ioctl.h \"-ioctl (2025-01-17)\" (release inferred from the date)"),
        Change((6, 16), "4.50.0", "\"dm mpath: Interface for explicit probing of active paths\" "
                                  "(\"-ioctl (2025-04-28)\")"),)),
    Behaviour("missing_path_errno", "errno when a table or message names a path that does not exist",
              errno.ENODEV, (
        Change((6, 5), errno.ENOENT, "d4a28d7defe7 \"dm: remove dm_get_dev_t\" (Christoph Hellwig): the "
                                     "error of lookup_bdev() is passed on"),)),
    Behaviour("message_opens_device", "fail_path/reinstate_path open the named device (no: only parse it; "
              "an unknown major:minor is then -EINVAL with no log line instead of -ENXIO and "
              "\"message: error getting device\")", True, (
        Change((6, 11), False, "\"dm mpath: don't call dm_get_device in multipath_message\" and \"dm: factor "
                               "out helper function from dm_get_device\" (dm_devt_from_path)"),)),
    # NVMe native multipath (drivers/nvme/host/multipath.c, core.c; docs/nvme.md "Per release")
    Behaviour("nvme_queue_depth", "NVMe iopolicy queue-depth exists", False, (
        Change((6, 11), True, "\"nvme-multipath: implement \"queue-depth\" iopolicy\" (Thomas Song, John "
                              "Meneghini)"),)),
    Behaviour("nvme_iopolicy_write_clears", "NVMe: writing the subsystem's iopolicy clears every cached "
              "current path, and writing the same policy again does nothing", False, (
        Change((6, 11), True, "nvme_subsys_iopolicy_update(), added with the queue-depth iopolicy series"),)),
    Behaviour("nvme_available_path_disk_live", "NVMe: nvme_available_path() also requires the head disk "
              "live (NVME_NSHEAD_DISK_LIVE)", False, (
        Change((6, 12), True, "present in 6.12's multipath.c, absent from 6.1's (commit not pinned down)"),)),
    Behaviour("nvme_delayed_removal", "NVMe: delayed_removal_secs on the head disk (queue I/O while no "
              "path exists, remove the head later)", False, (
        Change((6, 16), True, "\"nvme-multipath: introduce delayed removal of the multipath head node\" "
                              "(Nilay Shroff, 2025)"),)),
]

BY_KEY = {b.key: b for b in HISTORY}
