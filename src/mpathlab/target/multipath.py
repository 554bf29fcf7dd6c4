"""The dm-multipath target's runtime state machine (drivers/md/dm-mpath.c).

A :class:`Multipath` holds priority groups of paths, each group with its own
selector instance.  It maps I/O (request-based or bio-based), handles
completion and path errors, failure and reinstatement, group bypass and
switching, queueing when no path is left, the dm messages, suspend/resume,
and produces the INFO, TABLE and IMA status strings.

Construction from a table line lives in :mod:`mpathlab.target.table`.
"""
from __future__ import annotations

import collections
import logging
from typing import Callable, Deque, List, Optional

from ..kernel import EBUSY, EINVAL, parse_devt, parse_u32
from ..timing import TimeBase
from .errors import MessageError

log = logging.getLogger("mpathlab.target")

TARGET_NAME = "multipath"
TARGET_VERSION = (1, 15, 0)   # the "current" profile's; a Multipath prints its profile's target_version
DM_PG_INIT_DELAY_MSECS = 2000
DM_PG_INIT_DELAY_DEFAULT = 0xFFFFFFFF   # "unset"
REQUEUE_DELAY_MS = 100                   # DM_MAPIO_DELAY_REQUEUE

QUEUE_MODE_RQ = "rq"
QUEUE_MODE_BIO = "bio"

# map() results
MAP_REMAPPED = "remapped"
MAP_SUBMITTED = "submitted"          # bio queued inside the target
MAP_REQUEUE = "requeue"
MAP_DELAY_REQUEUE = "delay_requeue"  # request requeued and retried after 100 ms
MAP_KILL = "kill"

# end_io() results
END_DONE = "done"
END_REQUEUE = "requeue"
END_DELAY_REQUEUE = "delay_requeue"
END_INCOMPLETE = "incomplete"        # bio queued inside the target for another path

# Block status codes that blk_path_error() does *not* treat as path errors.
NON_PATH_ERRORS = frozenset(("notsupp", "nospc", "target", "resv_conflict", "nexus", "medium",
                             "protection"))
BLK_STATUSES = frozenset(("ioerr", "transport", "timeout", "resource", "offline", "dev_resource",
                          "zone_resource", "again", "ok")) | NON_PATH_ERRORS

# Hardware handler activation results (SCSI_DH_*)
DH_OK, DH_NOSYS, DH_DEV_TEMP_BUSY, DH_RETRY, DH_IMM_RETRY, DH_RES_TEMP_UNAVAIL, DH_DEV_OFFLINED = (
    "ok", "nosys", "dev_temp_busy", "retry", "imm_retry", "res_temp_unavail", "dev_offlined")


def blk_path_error(status: Optional[str]) -> bool:
    return bool(status) and status != "ok" and status not in NON_PATH_ERRORS


class Device:
    """A path's block device, named "major:minor" in every status string."""

    __slots__ = ("major", "minor", "label")

    def __init__(self, major: int, minor: int, label: str = ""):
        self.major = major
        self.minor = minor
        self.label = label or ("%u:%u" % (major, minor))

    @property
    def name(self) -> str:
        return "%u:%u" % (self.major, self.minor)

    @property
    def devt(self):
        return (self.major, self.minor)

    def __repr__(self):
        return "Device(%s%s)" % (self.name, "" if self.label == self.name else ", %r" % self.label)


class PGPath:
    """One path in one priority group (the selector's key for it)."""

    __slots__ = ("dev", "pg", "is_active", "fail_count", "__weakref__")

    def __init__(self, dev: Device, pg: "PriorityGroup"):
        self.dev = dev
        self.pg = pg
        self.is_active = True
        self.fail_count = 0

    def __repr__(self):
        return "PGPath(%s, pg=%d, %s)" % (self.dev.name, self.pg.pg_num, "A" if self.is_active else "F")


class PriorityGroup:
    __slots__ = ("pg_num", "pgpaths", "ps", "bypassed")

    def __init__(self, ps, pg_num: int = 0):
        self.pg_num = pg_num
        self.pgpaths: List[PGPath] = []
        self.ps = ps
        self.bypassed = False

    @property
    def nr_pgpaths(self) -> int:
        return len(self.pgpaths)


class MpathIO:
    """Per-I/O target data (struct dm_mpath_io plus what dm core keeps)."""

    __slots__ = ("nr_bytes", "pgpath", "start_time_ns", "dm_start_jiffies", "error", "mapped_once",
                 "tag")

    def __init__(self, nr_bytes: int, dm_start_jiffies: Optional[int] = None, tag=None):
        self.nr_bytes = nr_bytes
        self.pgpath: Optional[PGPath] = None
        self.start_time_ns = 0
        self.dm_start_jiffies = dm_start_jiffies
        self.error: Optional[str] = None
        self.mapped_once = False
        self.tag = tag


def _immediate_activation(mp: "Multipath", pgpath: PGPath, delay_ms: int) -> None:
    """Default hardware-handler model: activation succeeds at once."""
    mp.pg_init_done(pgpath, DH_OK)


class Multipath:
    """State of one multipath target.  Build it with :func:`mpathlab.target.parse`."""

    def __init__(self, timebase: Optional[TimeBase] = None, *, rq_stats: bool = True,
                 force_jiffies_start: Optional[bool] = None, kernel=None, host=None,
                 activate: Optional[Callable[["Multipath", PGPath, int], None]] = None,
                 on_kick: Optional[Callable[["Multipath"], None]] = None,
                 queue_if_no_path_timeout_secs: int = 0,
                 set_timer: Optional[Callable[["Multipath", Optional[int]], None]] = None):
        self.timebase = timebase or TimeBase()
        # QUEUE_FLAG_STATS on the path queues: without it blk-mq leaves the
        # clone's io_start_time_ns at 0 and request-based HST sees start 0.
        self.rq_stats = rq_stats
        # The kernel release modelled (mpathlab.profiles) and the host facts
        # the kernel checks (which devices exist, what they are); None = no
        # facts given, every device exists.
        from ..profiles import get_profile
        self.profile = get_profile(kernel)
        self.host = host
        # Kernels before 5.19 ignore DM_PS_USE_HR_TIMER; an explicit
        # True/False overrides the profile.
        self.force_jiffies_start = (not self.profile.hr_timer_bio if force_jiffies_start is None
                                    else bool(force_jiffies_start))
        self.activate = activate or _immediate_activation
        self.on_kick = on_kick

        self.queue_mode = QUEUE_MODE_RQ
        # Request-based: allocates the clone on the chosen path (the
        # simulator's tags, sim/blockqueue.py); None = a tag is always free.
        self.alloc_clone: Optional[Callable[[PGPath, MpathIO], Optional[bool]]] = None
        self.queue_io = False
        self.queue_if_no_path_flag = False
        self.saved_queue_if_no_path = False
        self.retain_attached_hw_handler = False
        self.pg_init_disabled = False
        self.pg_init_required = False
        self.pg_init_delay_retry = False

        self.hw_handler_name: Optional[str] = None
        self.hw_handler_params: Optional[str] = None
        self.pg_init_retries = 0
        self.pg_init_delay_msecs = DM_PG_INIT_DELAY_DEFAULT
        self.pg_init_in_progress = 0
        self.pg_init_count = 0

        self.priority_groups: List[PriorityGroup] = []
        self.nr_priority_groups = 0
        self.nr_valid_paths = 0
        self.current_pg: Optional[PriorityGroup] = None
        self.current_pgpath: Optional[PGPath] = None
        self.next_pg: Optional[PriorityGroup] = None

        self.queued_bios: Deque[MpathIO] = collections.deque()
        self.suspended = False
        self.is_suspending = False
        self._noflush = False
        # The dm_multipath module parameter (default 0 = never time out).
        # set_timer(mp, delay_ns) arms the no-path timer, set_timer(mp, None)
        # disarms it; when it fires the owner calls nopath_timeout().
        if queue_if_no_path_timeout_secs and not self.profile.queue_if_no_path_timeout:
            from ..profiles import ProfileError
            raise ProfileError("kernel %s has no queue_if_no_path_timeout_secs (added in 5.7)" % self.profile.name)
        self.queue_if_no_path_timeout_secs = queue_if_no_path_timeout_secs
        self.set_timer = set_timer
        self.nopath_timer_armed = False
        self.event_nr = 0
        self.uevents: Deque[dict] = collections.deque(maxlen=1000)
        self.dmesg: Deque[str] = collections.deque(maxlen=1000)
        self.device_name = "mpath"
        self.table_start = 0
        self.table_length = 0

    # ------------------------------------------------------------------
    # logging and events
    def _warn(self, text: str) -> None:
        # The kernel's DMWARN/DMERR lines: kept in .dmesg, logged at INFO so a
        # library user is not flooded on stderr by routine failovers.
        self.dmesg.append("device-mapper: multipath: " + text)
        log.info(text)

    def _table_event(self) -> None:
        self.event_nr += 1

    def kick(self) -> None:
        """Queued I/O may now make progress (process_queued_bios / run queue)."""
        if self.on_kick is not None:
            self.on_kick(self)

    @property
    def pgpaths(self) -> List[PGPath]:
        return [p for pg in self.priority_groups for p in pg.pgpaths]

    def noflush_suspending(self) -> bool:
        """dm_noflush_suspending(): a suspend without flush is in progress."""
        return self.is_suspending and self._noflush

    # ------------------------------------------------------------------
    # queue_if_no_path
    def set_queue_if_no_path(self, enable: bool, save_old: bool) -> None:
        if save_old:
            if not self.queue_if_no_path_flag and self.saved_queue_if_no_path:
                self._warn("%s: QIFNP disabled but saved as enabled, saving again loses state, not saving!"
                           % self.device_name)
            else:
                self.saved_queue_if_no_path = self.queue_if_no_path_flag
        elif not enable and self.saved_queue_if_no_path:
            self.saved_queue_if_no_path = False
        self.queue_if_no_path_flag = enable
        if not enable:
            self.kick()

    # ------------------------------------------------------------------
    # path selection
    def _switch_pg(self, pg: PriorityGroup) -> None:
        self.current_pg = pg
        if self.hw_handler_name:
            self.pg_init_required = True
            self.queue_io = True
        else:
            self.pg_init_required = False
            self.queue_io = False
        self.pg_init_count = 0

    def _choose_path_in_pg(self, pg: PriorityGroup, nr_bytes: int) -> Optional[PGPath]:
        path = pg.ps.select_path(nr_bytes)
        if path is None:
            return None
        if self.current_pg is not pg:
            self.current_pgpath = path
            self._switch_pg(pg)
        return path

    def choose_pgpath(self, nr_bytes: int) -> Optional[PGPath]:
        if not self.nr_valid_paths:
            self.queue_io = False
            self.current_pgpath = None
            self.current_pg = None
            return None
        if self.current_pg is not None:
            p = self._choose_path_in_pg(self.current_pg, nr_bytes)
            if p is not None:
                return p
        if self.next_pg is not None:
            pg = self.next_pg
            self.next_pg = None
            p = self._choose_path_in_pg(pg, nr_bytes)
            if p is not None:
                return p
        for want_bypassed in (False, True):
            for pg in self.priority_groups:
                if pg.bypassed != want_bypassed:
                    continue
                p = self._choose_path_in_pg(pg, nr_bytes)
                if p is not None:
                    if want_bypassed:
                        self.pg_init_delay_retry = True
                    return p
        self.current_pgpath = None
        self.current_pg = None
        return None

    # ------------------------------------------------------------------
    # mapping
    def map(self, io: MpathIO) -> str:
        """Map one I/O.  On MAP_REMAPPED io.pgpath is set and start_io was called."""
        if self.queue_mode == QUEUE_MODE_BIO:
            return self._map_bio(io)
        return self._map_rq(io)

    def _map_rq(self, io: MpathIO) -> str:
        p = self.current_pgpath
        if p is None or not self.queue_io:
            p = self.choose_pgpath(io.nr_bytes)
        if p is None:
            if self.queue_if_no_path_flag or self.noflush_suspending():
                return MAP_DELAY_REQUEUE
            return MAP_KILL
        if self.queue_io or self.pg_init_required:
            self.pg_init_all_paths()
            return MAP_DELAY_REQUEUE
        io.pgpath = p
        got = True if self.alloc_clone is None else self.alloc_clone(p, io)
        if not got:
            # blk_mq_alloc_request(BLK_MQ_REQ_NOWAIT) on the path found no
            # tag: DM_MAPIO_REQUEUE, and start_io is never called.
            io.pgpath = None
            if got is None:
                # the path's queue is dying (its disk deleted): activate_or_offline_path gives
                # pg_init_done SCSI_DH_DEV_OFFLINED, which fails the path; DM_MAPIO_DELAY_REQUEUE
                self.pg_init_in_progress += 1
                self.pg_init_done(p, DH_DEV_OFFLINED)
                return MAP_DELAY_REQUEUE
            return MAP_REQUEUE
        # blk_mq_start_request() stamps the clone only with stats enabled.
        io.start_time_ns = self.timebase.ktime_ns() if self.rq_stats else 0
        ps = p.pg.ps
        if ps.has_io_hooks:
            ps.start_io(p, io.nr_bytes)
        return MAP_REMAPPED

    def _map_bio(self, io: MpathIO) -> str:
        if not io.mapped_once:
            io.mapped_once = True
            io.start_time_ns = 0
            if io.dm_start_jiffies is None:
                io.dm_start_jiffies = self.timebase.jiffies()
        io.pgpath = None
        p = self.current_pgpath
        if p is None or not self.queue_io:
            p = self.choose_pgpath(io.nr_bytes)
        if p is None:
            if self.queue_if_no_path_flag:
                self._queue_bio(io)
                return MAP_SUBMITTED
            if self.noflush_suspending():
                return MAP_REQUEUE
            return MAP_KILL
        if self.queue_io or self.pg_init_required:
            self._queue_bio(io)
            self.pg_init_all_paths()
            return MAP_SUBMITTED
        io.pgpath = p
        ps = p.pg.ps
        if ps.uses_hr_timer() and not self.force_jiffies_start:
            io.start_time_ns = self.timebase.ktime_ns()
        if ps.has_io_hooks:
            ps.start_io(p, io.nr_bytes)
        return MAP_REMAPPED

    def queue_bio(self, io: MpathIO) -> None:
        """Hold a bio in the target until a kick, as map does with no path and queue_if_no_path
        (multipath_queue_bio); the compiled core hands over the bios it mapped in that state."""
        self._queue_bio(io)

    def _queue_bio(self, io: MpathIO) -> None:
        self.queued_bios.append(io)
        # The kernel kicks the worker at once when QUEUE_IO is clear.  With
        # no valid path that would re-map and re-queue forever; the
        # simulation instead re-runs the queue on state changes that can
        # help (reinstate, fail_if_no_path, pg_init done, timeout).

    def take_queued(self) -> List[MpathIO]:
        """Hand the internally queued bios back for re-mapping (the worker)."""
        items = list(self.queued_bios)
        self.queued_bios.clear()
        return items

    def _end_start_time(self, io: MpathIO) -> int:
        if self.queue_mode == QUEUE_MODE_BIO:
            if io.start_time_ns:
                return io.start_time_ns
            return self.timebase.jiffies_to_nsecs(io.dm_start_jiffies or 0)
        return io.start_time_ns

    def end_io(self, io: MpathIO, error: Optional[str] = None) -> str:
        """Completion of a mapped I/O with block status ``error`` (None = OK)."""
        p = io.pgpath
        if error == "ok":
            error = None
        r = END_DONE
        if error and blk_path_error(error):
            if self.queue_mode == QUEUE_MODE_BIO:
                if p is not None:
                    self.fail_path(p)
                if not self.nr_valid_paths and not self.queue_if_no_path_flag:
                    if self.noflush_suspending():
                        r = END_REQUEUE
                    else:
                        io.error = "ioerr"
                else:
                    self._queue_bio(io)
                    r = END_INCOMPLETE
            else:
                r = END_DELAY_REQUEUE if error == "resource" else END_REQUEUE
                if p is not None:
                    self.fail_path(p)
                if not self.nr_valid_paths and not (self.queue_if_no_path_flag or self.noflush_suspending()):
                    r = END_DONE
                    io.error = error
        elif error:
            io.error = error
        if p is not None:
            ps = p.pg.ps
            if ps.has_io_hooks:
                ps.end_io(p, io.nr_bytes, self._end_start_time(io))
        if r == END_INCOMPLETE and self.nr_valid_paths:
            self.kick()
        return r

    def release_clone(self, io: MpathIO) -> None:
        """Undo a request-based mapping that never reached the device."""
        p = io.pgpath
        if p is not None and p.pg.ps.has_io_hooks:
            p.pg.ps.end_io(p, io.nr_bytes, io.start_time_ns)
        io.pgpath = None

    # ------------------------------------------------------------------
    # queue_if_no_path timeout
    def enable_nopath_timeout(self) -> None:
        """Arm (or re-arm) the timer iff timeout > 0, no valid path, QIFNP set."""
        if (self.queue_if_no_path_timeout_secs > 0 and not self.nr_valid_paths
                and self.queue_if_no_path_flag):
            self.nopath_timer_armed = True
            if self.set_timer is not None:
                self.set_timer(self, self.queue_if_no_path_timeout_secs * 1_000_000_000)

    def disable_nopath_timeout(self) -> None:
        if self.nopath_timer_armed:
            self.nopath_timer_armed = False
            if self.set_timer is not None:
                self.set_timer(self, None)

    def nopath_timeout(self) -> None:
        """The timer fired: stop queueing, so queued I/O is failed."""
        if not self.nopath_timer_armed:
            return
        self.nopath_timer_armed = False
        self._warn("queue_if_no_path timeout on %s, failing queued IO" % self.device_name)
        self.set_queue_if_no_path(False, False)

    # ------------------------------------------------------------------
    # failure and reinstatement
    def fail_path(self, pgpath: PGPath) -> int:
        if not pgpath.is_active:
            return 0
        self._warn("%s: Failing path %s." % (self.device_name, pgpath.dev.name))
        pgpath.pg.ps.fail_path(pgpath)
        pgpath.is_active = False
        pgpath.fail_count += 1
        self.nr_valid_paths -= 1
        if pgpath is self.current_pgpath:
            self.current_pgpath = None
        self.uevents.append({"DM_ACTION": "PATH_FAILED", "DM_PATH": pgpath.dev.name,
                             "DM_NR_VALID_PATHS": self.nr_valid_paths})
        self._table_event()
        self.enable_nopath_timeout()
        return 0

    def reinstate_path(self, pgpath: PGPath) -> int:
        if pgpath.is_active:
            return 0
        self._warn("%s: Reinstating path %s." % (self.device_name, pgpath.dev.name))
        r = pgpath.pg.ps.reinstate_path(pgpath)
        if r:
            return r
        pgpath.is_active = True
        self.nr_valid_paths += 1
        run_queue = False
        if self.nr_valid_paths == 1:
            self.current_pgpath = None
            run_queue = True
        elif self.hw_handler_name and pgpath.pg is self.current_pg:
            self.pg_init_in_progress += 1
            self.activate(self, pgpath, 0)
        self.uevents.append({"DM_ACTION": "PATH_REINSTATED", "DM_PATH": pgpath.dev.name,
                             "DM_NR_VALID_PATHS": self.nr_valid_paths})
        self._table_event()
        self.disable_nopath_timeout()
        if run_queue:
            self.kick()
        return 0

    def _action_dev(self, devt, action) -> int:
        r = -EINVAL
        for pgpath in self.pgpaths:
            if pgpath.dev.devt == devt:
                r = action(pgpath)
        return r

    # ------------------------------------------------------------------
    # groups
    def _bypass_pg(self, pg: PriorityGroup, bypassed: bool) -> None:
        pg.bypassed = bypassed
        self.current_pgpath = None
        self.current_pg = None
        self._table_event()

    def _pg_from_arg(self, arg: str, what: str) -> PriorityGroup:
        n = parse_u32(arg)
        if n is None or not n or n > self.nr_priority_groups:
            self._warn("invalid PG number supplied to %s" % what)
            raise MessageError(EINVAL, "invalid PG number supplied to %s" % what)
        return self.priority_groups[n - 1]

    def switch_pg_num(self, arg: str) -> None:
        pg = self._pg_from_arg(arg, "switch_pg_num")
        for other in self.priority_groups:
            other.bypassed = False
        self.current_pgpath = None
        self.current_pg = None
        self.next_pg = pg
        self._table_event()

    # ------------------------------------------------------------------
    # pg_init (hardware handler activation)
    def pg_init_all_paths(self) -> bool:
        if self.pg_init_in_progress or self.pg_init_disabled:
            return False
        self.pg_init_count += 1
        self.pg_init_required = False
        if self.current_pg is None:
            return False
        delay = 0
        if self.pg_init_delay_retry:
            delay = (self.pg_init_delay_msecs if self.pg_init_delay_msecs != DM_PG_INIT_DELAY_DEFAULT
                     else DM_PG_INIT_DELAY_MSECS)
        started = [p for p in self.current_pg.pgpaths if p.is_active]
        self.pg_init_in_progress += len(started)
        for p in started:
            self.activate(self, p, delay)
        return bool(started)

    def pg_init_done(self, pgpath: PGPath, result: str) -> None:
        pg = pgpath.pg
        delay_retry = False
        errors: Optional[str] = result
        if result == DH_OK:
            errors = None
        elif result == DH_NOSYS:
            if not self.hw_handler_name:
                errors = None
            else:
                self._warn("Could not failover the device: Handler scsi_dh_%s Error %s."
                           % (self.hw_handler_name, result))
                self.fail_path(pgpath)
        elif result == DH_DEV_TEMP_BUSY:
            self._bypass_pg(pg, True)
        elif result in (DH_RETRY, DH_IMM_RETRY, DH_RES_TEMP_UNAVAIL):
            if result == DH_RETRY:
                delay_retry = True
            if self.pg_init_count <= self.pg_init_retries and not self.pg_init_disabled:
                self.pg_init_required = True
            else:
                self.fail_path(pgpath)
            errors = None
        else:
            self.fail_path(pgpath)

        if errors:
            if pgpath is self.current_pgpath:
                self._warn("Could not failover device. Error %s." % errors)
                self.current_pgpath = None
                self.current_pg = None
        elif not self.pg_init_required:
            pg.bypassed = False

        self.pg_init_in_progress -= 1
        if self.pg_init_in_progress > 0:
            return
        if self.pg_init_required:
            self.pg_init_delay_retry = delay_retry
            if self.pg_init_all_paths():
                return
        self.queue_io = False
        self.kick()

    # ------------------------------------------------------------------
    # messages
    def message(self, *argv: str) -> int:
        """``dmsetup message <dev> 0 <argv...>``.  Raises MessageError on refusal."""
        if len(argv) == 1 and " " in argv[0]:
            argv = tuple(argv[0].split())
        if self.suspended:
            raise MessageError(EBUSY)
        argc = len(argv)
        if argc == 1:
            word = argv[0].lower()
            if word == "queue_if_no_path":
                self.set_queue_if_no_path(True, False)
                self.enable_nopath_timeout()
                return 0
            if word == "fail_if_no_path":
                self.set_queue_if_no_path(False, False)
                self.disable_nopath_timeout()
                return 0
        if argc != 2:
            text = "Invalid multipath message arguments. Expected 2 arguments, got %d." % argc
            self._warn(text)
            raise MessageError(EINVAL, text)
        cmd = argv[0].lower()
        if cmd in ("disable_group", "enable_group"):
            pg = self._pg_from_arg(argv[1], "bypass_pg")
            self._bypass_pg(pg, cmd == "disable_group")
            return 0
        if cmd == "switch_group":
            self.switch_pg_num(argv[1])
            return 0
        if cmd == "reinstate_path":
            action = self.reinstate_path
        elif cmd == "fail_path":
            action = self.fail_path
        else:
            text = "Unrecognised multipath message received: %s" % argv[0]
            self._warn(text)
            raise MessageError(EINVAL, text)
        devt = self._devt_from_name(argv[1])
        # 6.1 opens the device (dm_get_device); 6.11 and later only parse
        # it (dm_devt_from_path), so an unknown major:minor is plain EINVAL.
        from ..profiles.environment import get_device_errno
        err = get_device_errno(argv[1], devt, self.host, self.profile.missing_path_errno,
                               open_device=self.profile.message_opens_device)
        if err:
            text = "message: error getting device %s" % argv[1]
            self._warn(text)
            raise MessageError(err, text)
        if devt is None:
            devt = self.host.lookup_name(argv[1])
        r = self._action_dev(devt, action)
        if r < 0:
            raise MessageError(-r)
        return r

    def _devt_from_name(self, name: str):
        devt = parse_devt(name)
        if devt is not None:
            return devt
        for p in self.pgpaths:
            if p.dev.label == name:
                return p.dev.devt
        return None

    # ------------------------------------------------------------------
    # suspend / resume
    def presuspend(self, noflush: bool = False) -> None:
        self.is_suspending = True
        self._noflush = noflush
        if self.queue_mode == QUEUE_MODE_BIO or not noflush:
            self.set_queue_if_no_path(False, True)

    def postsuspend(self) -> None:
        self.suspended = True

    def suspend(self, noflush: bool = False) -> None:
        self.presuspend(noflush)
        self.postsuspend()

    def resume(self) -> None:
        self.suspended = False
        self.is_suspending = False
        self._noflush = False
        if self.saved_queue_if_no_path:
            self.queue_if_no_path_flag = True
            self.saved_queue_if_no_path = False

    # ------------------------------------------------------------------
    # status
    def status_pg_num(self) -> int:
        """The group number status prints: the one the target will switch to first, else the current one
        (as the kernel's status does); multipathd and `multipath -ll` read it too."""
        if self.next_pg is not None:
            return self.next_pg.pg_num
        if self.current_pg is not None:
            return self.current_pg.pg_num
        return 1 if self.nr_priority_groups else 0

    def pg_state(self, pg: PriorityGroup) -> str:
        """A group's state letter in status: D bypassed, A current, E enabled."""
        if pg.bypassed:
            return "D"
        if pg is self.current_pg:
            return "A"
        return "E"

    def status(self, kind: str = "info", maxlen: Optional[int] = None) -> str:
        """The target's params as ``dmsetup status`` / ``table`` / IMA print them.

        With ``maxlen`` the text is cut as the kernel's emitter cuts it into a
        buffer of that size (at most maxlen - 1 characters): dm-ima gives the
        target 2048 bytes, so a longer IMA string loses its end, ";" included.
        """
        kind = str(kind).lower()
        if kind == "info":
            text = self._status_info()
        elif kind == "table":
            text = self._status_table()
        elif kind == "ima":
            text = self._status_ima()
        else:
            raise ValueError("status kind must be info, table or ima, not %r" % kind)
        if maxlen is not None:
            text = text[:max(0, maxlen - 1)]
        return text

    def table(self) -> str:
        return self._status_table()

    def _status_info(self) -> str:
        out = ["2 %u %u " % (int(self.queue_io), self.pg_init_count), "0 ",
               "%u %u " % (self.nr_priority_groups, self.status_pg_num())]
        for pg in self.priority_groups:
            ps = pg.ps
            out.append("%s " % self.pg_state(pg))
            out.append(ps.status(None, "info"))
            out.append("%u %u " % (pg.nr_pgpaths, ps.info_args))
            for p in pg.pgpaths:
                out.append("%s %s %u " % (p.dev.name, "A" if p.is_active else "F", p.fail_count))
                out.append(ps.status(p, "info"))
        return "".join(out)

    def features_table(self) -> str:
        bio = self.queue_mode != QUEUE_MODE_RQ
        n = (int(self.queue_if_no_path_flag) + 2 * (self.pg_init_retries > 0)
             + 2 * (self.pg_init_delay_msecs != DM_PG_INIT_DELAY_DEFAULT)
             + int(self.retain_attached_hw_handler) + 2 * bio)
        out = ["%u " % n]
        if self.queue_if_no_path_flag:
            out.append("queue_if_no_path ")
        if self.pg_init_retries:
            out.append("pg_init_retries %u " % self.pg_init_retries)
        if self.pg_init_delay_msecs != DM_PG_INIT_DELAY_DEFAULT:
            out.append("pg_init_delay_msecs %u " % self.pg_init_delay_msecs)
        if self.retain_attached_hw_handler:
            out.append("retain_attached_hw_handler ")
        if bio:
            out.append("queue_mode bio ")
        return "".join(out)

    def _status_table(self) -> str:
        out = [self.features_table()]
        out.append("1 %s " % self.hw_handler_name if self.hw_handler_name else "0 ")
        out.append("%u %u " % (self.nr_priority_groups, self.status_pg_num()))
        for pg in self.priority_groups:
            ps = pg.ps
            out.append("%s " % ps.name)
            out.append(ps.status(None, "table"))
            out.append("%u %u " % (pg.nr_pgpaths, ps.table_args))
            for p in pg.pgpaths:
                out.append("%s " % p.dev.name)
                out.append(ps.status(p, "table"))
        return "".join(out)

    def _status_ima(self) -> str:
        if not self.profile.ima:
            from ..profiles import ProfileError
            raise ProfileError("kernel %s has no IMA status (dm-ima arrived in 5.15)" % self.profile.name)
        out = ["target_name=%s,target_version=%u.%u.%u" % ((TARGET_NAME,) + tuple(self.profile.target_version)),
               ",nr_priority_groups=%u" % self.nr_priority_groups]
        for i, pg in enumerate(self.priority_groups):
            out.append(",pg_state_%d=%s" % (i, self.pg_state(pg)))
            out.append(",nr_pgpaths_%d=%u" % (i, pg.nr_pgpaths))
            out.append(",path_selector_name_%d=%s" % (i, pg.ps.name))
            for j, p in enumerate(pg.pgpaths):
                out.append(",path_name_%d_%d=%s,is_active_%d_%d=%s,fail_count_%d_%d=%u"
                           % (i, j, p.dev.name, i, j, "A" if p.is_active else "F", i, j, p.fail_count))
                out.append(",path_selector_status_%d_%d=" % (i, j))
                out.append(pg.ps.status(p, "ima"))
        out.append(";")
        return "".join(out)
