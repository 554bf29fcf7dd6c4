"""multipathd inside the simulation: the checker loop, failback and no_path_retry.

Described from multipathd/main.c (checkerloop, check_path, update_path_state,
update_path, update_mpp_prio, deferred_failback_tick, retry_count_tick,
enable_pathgroups, update_multipath) and libmultipath/structs_vec.c
(enter/leave_recovery_mode), in our own words:

- The loop runs once a second.  First it takes in dm events: a path the kernel failed
  (an I/O error) is marked down; if that leaves no usable path the map enters recovery
  mode, and the path's next check is brought forward to at most polling_interval.
- Each path is checked when its countdown reaches zero.  A state change resets its
  interval to polling_interval; a path that went bad is failed in dm (fail_path), a
  path that came back is reinstated (reinstate_path) and, if that ends recovery mode,
  queue_if_no_path is turned on again.  A healthy path that stays healthy has its
  interval doubled up to max_polling_interval.  A standby (ghost) path is not
  reinstated while the map has no usable path and the port has implicit-only ALUA
  (every ALUA port is modelled as implicit-only: nothing here sends SET TARGET PORT
  GROUPS).  The next check is aligned to a multiple of the interval on the monotonic
  clock.  A "pending" result (ALUA transitioning) is re-checked a second later.
- Then priorities are refreshed (only of the paths checked this round; all of them
  after a path came back or when one of the checked paths changed priority), and if
  the best group (select_path_group) is not the one the kernel will use next: failback immediate switches at once (switch_group),
  followover switches when the path that came back is the first of the best group,
  failback N arms a countdown of N seconds (cancelled when a path fails), manual never.
  When groups are out of priority order, or group_by_prio priorities changed with
  immediate failback, multipathd reloads the map: the paths are regrouped with their
  current priorities and the new table is loaded as dm loads it for multipathd
  (suspend without flush: new I/O is held and I/O on the paths drains; swap; resume).
- Recovery mode (no_path_retry N): retry_tick = N * polling_interval + 1 seconds; each
  loop counts it down and at zero sends fail_if_no_path, so queued I/O fails.
- san_path_err_threshold / forget_rate / recovery_time: a path that failed more than
  threshold times (one failure forgotten per forget_rate good checks) is kept out
  (state "delayed") for recovery_time seconds, unless the map has no usable path.

Link faults and ALUA state changes of the topology are applied here too: a port whose
link is down, or whose ALUA state refuses I/O, fails I/O sent to it.
"""
from __future__ import annotations

from typing import List, Optional, Tuple

from ..target import MAP_SUBMITTED, construct
from ..timing import NSEC_PER_SEC
from .maps import DELAYED, DOWN, GHOST, PENDING, UP, USABLE, Multipath, checker_state, get_prio
from .paths import ALUA_NO_IO, PathTopology
from .prioritizers import PrioEnv

DRAIN_POLL_NS = 50_000                    # how often a pending reload looks whether the in-flight I/O has drained
NO_PROGRESS_STOP_NS = 600 * NSEC_PER_SEC  # no I/O finished for this long: stop looping so the run can end


class Multipathd:
    # it acts on the run only through the Simulation's daemon hooks (daemon_timer, send_message,
    # fail_device, restore_device, its counters, a table reload), which the compiled core mirrors:
    # its timers run as calls back into this object (sim/fast.py _Target.daemon)
    in_compiled_core = True

    def __init__(self, mp: Multipath, checkint: int, max_checkint: int, *, env: Optional[PrioEnv] = None,
                 topology: Optional[PathTopology] = None):
        self.mp = mp
        self.table = mp.table_line()     # the table loaded when the daemon starts
        self.checkint = checkint
        self.max_checkint = max_checkint
        if max_checkint % checkint == 0:
            self.adjust_int = max_checkint
        else:
            a = checkint
            while 2 * a < max_checkint:
                a *= 2
            self.adjust_int = a * max_checkint
        self.env = env or PrioEnv()
        self.topology = topology
        self.log: List[Tuple[int, str]] = []
        self.sim = None
        self.stopped = False
        self.loops = 0
        self.checks: List[Tuple[int, str, str]] = []    # (time, path, checker result) per check
        self._held = None            # I/O held while a reload waits for the drain
        self._progress = (0, 0)      # (I/Os finished, when that count last changed)
        self._pending_groups = None
        self._pending_bestpg = 1
        self.tables: List[Tuple[int, str]] = [(0, self.table)]   # every table loaded, with its time

    # -- wiring -------------------------------------------------------------------------
    def attach(self, sim) -> None:
        self.sim = sim
        self.target = sim.mp
        devs = {d.model.name: d for d in sim.devices}
        self.dev = {pp.name: devs[pp.name] for pp in self.mp.paths}
        self.pgpath = {}
        for pgpath in self.target.pgpaths:
            self.pgpath[pgpath.dev.devt] = pgpath
        for pp in self.mp.paths:
            pp.checkint = self.checkint
            pp.tick = 1
            self._apply_io_state(pp)
            if pp.state not in USABLE and self.pgpath[pp.path.devt].is_active:
                # a map is loaded with the paths multipathd found unusable already failed
                sim.send_message("fail_path %s" % pp.path.dev_t)
        topo = self.topology
        if topo is not None:
            for pp in self.mp.paths:
                for at, action in topo.link_faults.get(pp.name, ()):
                    sim.daemon_timer(at, lambda pp=pp, a=action: self._link(pp, a == "fail"), keeps_alive=True)
                for at, state, pref in topo.alua_changes.get(pp.name, ()):
                    sim.daemon_timer(at, lambda pp=pp, s=state, p=pref: self._alua(pp, s, p), keeps_alive=True)
        sim.daemon_timer(0, self.loop, keeps_alive=True)

    def note(self, text: str) -> None:
        self.log.append((self.sim.now if self.sim else 0, text))

    def _apply_io_state(self, pp) -> None:
        """The device fails I/O while its link is down or its ALUA state refuses I/O."""
        p = pp.path
        refuse = p.link_down or (p.alua_state in ALUA_NO_IO)
        dev = self.dev[pp.name]
        if refuse and not dev.offline:
            self.sim.fail_device(dev)
        elif not refuse and dev.offline:
            self.sim.restore_device(dev)

    def _link(self, pp, down: bool) -> None:
        pp.path.link_down = down
        self.note("%s: link %s" % (pp.name, "down" if down else "up"))
        self._apply_io_state(pp)

    def _alua(self, pp, state: str, pref) -> None:
        pp.path.alua_state = state
        if pref is not None:
            pp.path.alua_pref = pref
        self.note("%s: ALUA state %s" % (pp.name, state))
        self._apply_io_state(pp)

    def _message(self, text: str) -> None:
        self.note(text)
        self.sim.send_message(text)

    # -- helpers --------------------------------------------------------------------------
    def nextpg(self) -> int:
        """The 'next group' multipathd reads from the dm status (the target's own status number:
        next_pg, else current_pg, else 1)."""
        return self.target.status_pg_num()

    def enter_recovery_mode(self) -> None:
        mp = self.mp
        if mp.in_recovery or not isinstance(mp.no_path_retry, int):
            return
        mp.in_recovery = True
        mp.retry_tick = mp.no_path_retry * self.checkint + 1
        self.note("entering recovery mode: max_retries=%d" % mp.no_path_retry)

    def leave_recovery_mode(self) -> None:
        mp = self.mp
        was = mp.in_recovery
        mp.in_recovery = False
        mp.retry_tick = 0
        if was and (mp.no_path_retry == "queue" or isinstance(mp.no_path_retry, int)):
            self._message("queue_if_no_path")
            self.note("recovered to normal mode")

    def update_queue_mode_del_path(self) -> None:
        if self.mp.active_paths() == 0:
            self.enter_recovery_mode()

    def update_queue_mode_add_path(self) -> None:
        if self.mp.active_paths() > 0:
            self.leave_recovery_mode()

    def fail_path(self, pp, del_active: bool) -> None:
        self._message("fail_path %s" % pp.path.dev_t)
        pp.dmstate = "failed"
        if del_active:
            self.update_queue_mode_del_path()

    def reinstate_path(self, pp) -> None:
        if self.sim.send_message("reinstate_path %s" % pp.path.dev_t):
            self.note("reinstate_path %s (%s)" % (pp.path.dev_t, pp.name))
            pp.dmstate = "active"
            self.update_queue_mode_add_path()

    # -- the loop -------------------------------------------------------------------------
    def loop(self) -> None:
        sim = self.sim
        mp = self.mp
        self.loops += 1
        start_secs = sim.timebase.ktime_ns() // NSEC_PER_SEC      # CLOCK_MONOTONIC seconds
        self.update_multipath()
        prio_update = None          # None, "normal", "new_path"
        checked = set()
        new_up = set()
        for pp in mp.paths:
            if pp.tick:
                pp.tick -= 1
            if pp.tick:
                continue
            r = self.update_path_state(pp)
            if r == "skipped":
                continue
            checked.add(pp)
            if r == "new_up":
                new_up.add(pp)
            if r in ("reinstated", "new_up"):
                prio_update = "new_path"
            elif pp.state in USABLE and prio_update is None:
                prio_update = "normal"
            self.schedule_next(pp, start_secs)
        self.update_mpp_prio(prio_update, checked, new_up)
        self.deferred_failback_tick()
        self.enable_pathgroups(checked)
        self.retry_count_tick()
        self._reschedule()

    def _reschedule(self) -> None:
        sim = self.sim
        mp = self.mp
        if sim.workload_done():
            self.stopped = True
            return
        done = sim.result.completed + sim.result.errored
        if done != self._progress[0]:
            self._progress = (done, sim.now)
        elif sim.now - self._progress[1] >= NO_PROGRESS_STOP_NS:
            # e.g. a standby path reinstated and failed again forever with queueing on:
            # multipathd would go on; the simulation has to end somewhere
            self.note("no I/O finished for %d s: multipathd stops, the run ends as stalled"
                      % (NO_PROGRESS_STOP_NS // NSEC_PER_SEC))
            self.stopped = True
            return
        # something the next loops will do by themselves: end queueing, fail back, or
        # reinstate a path whose checker already reports it usable
        alive = mp.retry_tick > 0 or mp.failback_tick > 0 or any(
            checker_state(pp.path, pp.checker) in USABLE and (pp.state not in USABLE or pp.dmstate == "failed")
            for pp in mp.paths)
        if not alive and not sim.pending_state_changes and not self.target.nr_valid_paths:
            # no usable path and nothing pending that could bring one back or end the
            # queueing: stop, so the engine can report the run as stalled
            self.stopped = True
            return
        # the loop keeps the run alive: it takes in dm events, so a path failure after
        # this point is answered (recovery mode, reinstatement) before any stall check
        sim.daemon_timer(sim.now + NSEC_PER_SEC, self.loop, keeps_alive=True)

    def update_multipath(self) -> None:
        """Take in dm events: paths the kernel failed on an I/O error."""
        for pp in self.mp.paths:
            active = self.pgpath[pp.path.devt].is_active
            if active:
                pp.dmstate = "active"
                continue
            if pp.dmstate == "active":
                pp.dmstate = "failed"
                if pp.state != DOWN:
                    old = pp.state
                    self.note("%s: mark as failed (dm event)" % pp.name)
                    pp.state = DOWN
                    if old in USABLE:
                        self.update_queue_mode_del_path()
                    if pp.tick > self.checkint:
                        pp.tick = self.checkint

    def update_path_state(self, pp) -> str:
        mp = self.mp
        newstate = checker_state(pp.path, pp.checker)
        self.checks.append((self.sim.now, pp.name, newstate))
        if newstate == PENDING:
            pp.tick = 1
            return "skipped"
        if newstate not in USABLE and pp.state == DELAYED:
            pp.state = newstate
            pp.checkint = self.checkint
            return "checked"
        if newstate in USABLE and self._san_path_check_enabled():
            if self._check_path_reinstate_state(pp):
                if pp.state != DELAYED:
                    self.note("%s: path is now marginal (san_path_err), delaying reinstatement" % pp.name)
                pp.state = DELAYED
                return "checked"
        disable_reinstate = newstate == GHOST and mp.active_paths() == 0  # implicit-only ALUA ports
        oldchkr = pp.chkrstate
        pp.chkrstate = newstate
        if newstate != pp.state:
            old = pp.state
            pp.state = newstate
            self.note("%s: checker %s" % (pp.name, newstate))
            pp.checkint = self.checkint
            if newstate not in USABLE:
                self.fail_path(pp, old in USABLE)
                mp.failback_tick = 0
                return "checked"
            if not disable_reinstate:
                self.reinstate_path(pp)
            if oldchkr not in USABLE:
                return "new_up"
            return "reinstated"
        if newstate in USABLE:
            if pp.dmstate == "failed" and not disable_reinstate:
                self.reinstate_path(pp)
            elif pp.checkint != self.max_checkint:
                pp.checkint = 2 * pp.checkint if pp.checkint < self.max_checkint // 2 else self.max_checkint
        else:
            if pp.dmstate == "active":
                self.fail_path(pp, False)
            pp.checkint = self.checkint
        return "checked"

    def schedule_next(self, pp, start_secs: int) -> None:
        """update_path: next check after checkint, aligned so that checks of this map fall
        on multiples of the interval (the map's goal index is 0: it is the only map)."""
        if pp.tick:
            return
        pp.tick = pp.checkint
        if pp.tick == 1:
            return
        next_idx = (start_secs + pp.tick) % self.adjust_int
        if (0 - next_idx) % pp.checkint != 0:
            pp.tick -= 1

    def _san_path_check_enabled(self) -> bool:
        s = self.mp.settings
        return bool(s["san_path_err_threshold"] and s["san_path_err_forget_rate"]
                    and s["san_path_err_recovery_time"])

    def _check_path_reinstate_state(self, pp) -> bool:
        """True: keep the path out (check_path_reinstate_state)."""
        s = self.mp.settings
        now = self.sim.timebase.ktime_ns() // NSEC_PER_SEC
        if pp.dis_reinstate_time is not None:
            if self.mp.active_paths() == 0:
                self.note("%s: reinstating path early" % pp.name)
                return self._reset_san(pp)
            if pp.state not in USABLE and pp.state != DELAYED:
                pp.forget_count = s["san_path_err_forget_rate"]
                pp.dis_reinstate_time = now
            if now - pp.dis_reinstate_time > s["san_path_err_recovery_time"]:
                self.note("%s: reinstate the path after err recovery time" % pp.name)
                return self._reset_san(pp)
            return True
        if pp.state in USABLE and pp.path_failures > 0:
            if pp.forget_count > 0:
                pp.forget_count -= 1
            else:
                pp.path_failures -= 1
                pp.forget_count = s["san_path_err_forget_rate"]
            return False
        if pp.state != DOWN:
            return False
        if pp.path_failures == 0:
            pp.forget_count = s["san_path_err_forget_rate"]
        pp.path_failures += 1
        if pp.path_failures > s["san_path_err_threshold"]:
            pp.dis_reinstate_time = now
            return True
        return False

    @staticmethod
    def _reset_san(pp) -> bool:
        pp.path_failures = 0
        pp.dis_reinstate_time = None
        pp.forget_count = 0
        return False

    # -- priorities and failback -----------------------------------------------------------
    def update_mpp_prio(self, prio_update, checked, new_up) -> None:
        mp = self.mp
        if prio_update is None:
            return
        changed = False
        skipped = []
        for pp in mp.paths:
            if pp.state not in USABLE:
                continue
            if prio_update != "new_path" and pp not in checked:
                skipped.append(pp)
                continue
            changed |= self._refresh_prio(pp)
        if changed:
            # update_prio: when a priority changed, the paths skipped above are read too
            for pp in skipped:
                self._refresh_prio(pp)
        if changed and mp.pgpolicy == "group_by_prio" and mp.failback == "immediate":
            self.reload("path priorities changed")
            return
        need, need_reload = self.need_switch_pathgroup()
        if not need:
            return
        fb = mp.failback
        if isinstance(fb, int) and (prio_update == "new_path" or mp.failback_tick <= 0):
            mp.failback_tick = fb + 1
        elif fb == "immediate" or (prio_update == "new_path" and self.followover_should_failback(new_up)):
            if need_reload:
                self.reload("path groups out of order")
            else:
                self.switch_pathgroup()

    def _refresh_prio(self, pp) -> bool:
        old = pp.priority
        get_prio(pp, self.env)
        if pp.priority != old:
            self.note("%s: prio changed %d -> %d" % (pp.name, old, pp.priority))
            return True
        return False

    def need_switch_pathgroup(self) -> Tuple[bool, bool]:
        from .maps import select_path_group
        mp = self.mp
        if len(mp.groups) < 2:
            return False, False
        best = select_path_group(mp.groups)
        if mp.failback == "manual":
            return False, False
        mp.bestpg = best
        need_reload = not self.path_groups_in_order()
        return need_reload or best != self.nextpg(), need_reload

    def path_groups_in_order(self) -> bool:
        last = None
        seen_marginal = False
        for g in self.mp.groups:
            if seen_marginal and not g.marginal:
                return False
            if not g.paths or g.priority == -1:
                continue
            if g.marginal and not seen_marginal:
                seen_marginal = True
                last = g.priority
                continue
            if last is not None and g.priority > last:
                return False
            last = g.priority
        return True

    def followover_should_failback(self, new_up) -> bool:
        mp = self.mp
        if mp.failback != "followover" or not mp.bestpg:
            return False
        for pp in new_up:
            if pp.pgindex != mp.bestpg:
                continue
            g = mp.groups[pp.pgindex - 1]
            if all(o is pp or o.chkrstate == DOWN for o in g.paths):
                return True
        return False

    def switch_pathgroup(self) -> None:
        if self.mp.bestpg != self.nextpg():
            self._message("switch_group %d" % self.mp.bestpg)

    def reload(self, why: str) -> None:
        """reload_and_sync_map: regroup the paths with their current priorities and load
        the new table.  The load is what dm does for multipathd: suspend without flushing
        (new I/O is held, I/O already on a path is waited for), swap the table, resume
        (the held I/O and any I/O queued in the old table go to the new one)."""
        from .maps import PathGroup, select_path_group, sort_groups
        from . import pgpolicies
        mp = self.mp
        fn = pgpolicies.lookup(mp.pgpolicy)
        groups = sort_groups([PathGroup(g) for g in fn(mp.paths)])
        self.note("reload (%s)" % why)
        self._pending_groups = groups
        self._pending_bestpg = select_path_group(groups)
        if self._held is not None:
            return                   # a reload is already waiting for the drain
        self._held = []
        held = self._held

        def hold(io, _held=held):
            # the mapped device is suspended: dm core keeps the I/O until resume
            _held.append(io)
            return MAP_SUBMITTED
        self.target.map = hold       # an instance attribute: gone when the table is swapped
        self.sim.daemon_timer(self.sim.now, self._finish_reload, keeps_alive=True)

    def _finish_reload(self) -> None:
        sim = self.sim
        t = self.target
        if any(d.in_flight for d in sim.devices) or t.pg_init_in_progress:
            sim.daemon_timer(sim.now + DRAIN_POLL_NS, self._finish_reload, keeps_alive=True)
            return
        mp = self.mp
        mp.groups = self._pending_groups
        for i, g in enumerate(mp.groups, 1):
            for pp in g.paths:
                pp.pgindex = i
        mp.bestpg = self._pending_bestpg
        params = mp.table_params()
        devs = {pp.path.dev_t: pp.path.devt for pp in mp.paths}
        fresh = construct(params, resolve_device=lambda tok: devs[tok], selector_env=sim.selector_env,
                          timebase=t.timebase, rq_stats=t.rq_stats, force_jiffies_start=t.force_jiffies_start,
                          activate=t.activate, on_kick=t.on_kick, set_timer=t.set_timer,
                          queue_if_no_path_timeout_secs=t.queue_if_no_path_timeout_secs, kernel=sim.kernel)
        fresh.table_start, fresh.table_length = t.table_start, t.table_length
        fresh.device_name = t.device_name
        queued = list(t.queued_bios) + self._held
        # The engine and the I/O know the mapped device, not the table: keep the object,
        # replace its state with the new table's (which drops the holding map()).
        t.__dict__ = fresh.__dict__
        self._held = None
        by_devt = {d.model.devt: d for d in sim.devices}
        self.pgpath = {}
        for pgpath in t.pgpaths:
            sim.dev_of_pgpath[pgpath] = by_devt[pgpath.dev.devt]
            self.pgpath[pgpath.dev.devt] = pgpath
        self.table = mp.table_line()
        self.tables.append((sim.now, self.table))
        self.note("loaded %s" % params)
        # sync_map_state: the new table has every path active; fail those that are not usable
        for pp in mp.paths:
            if pp.state in USABLE:
                pp.dmstate = "active"
            else:
                self._message("fail_path %s" % pp.path.dev_t)
                pp.dmstate = "failed"
        if queued:
            t.queued_bios.extend(queued)
            t.kick()

    def deferred_failback_tick(self) -> None:
        mp = self.mp
        if not isinstance(mp.failback, int) or mp.failback_tick <= 0:
            return
        mp.failback_tick -= 1
        if mp.failback_tick == 0:
            need, need_reload = self.need_switch_pathgroup()
            if need:
                if need_reload:
                    self.reload("deferred failback")
                else:
                    self.switch_pathgroup()

    def enable_pathgroups(self, checked) -> None:
        for i, g in enumerate(self.mp.groups, 1):
            if not self.target.priority_groups[i - 1].bypassed:
                continue
            if any(pp.state == UP and pp in checked for pp in g.paths):
                self._message("enable_group %d" % i)

    def retry_count_tick(self) -> None:
        mp = self.mp
        if mp.retry_tick <= 0:
            return
        mp.retry_tick -= 1
        if mp.retry_tick == 0:
            self._message("fail_if_no_path")
            self.note("disable queueing")
