#!/usr/bin/env python3
"""Why historical-service-time chose each path: from a kernel run's block trace, or from the model.

    hsttrace.py RUNDIR...            runs recorded with TRACE 2 (grid.py batch tracehst); another selector's
                                     run gives its shares and timing only
    hsttrace.py --model [--seed N] RUNDIR...   the same cells predicted (seed 1 unless given, the cell's
                                     session guest)
    hsttrace.py --timing [--model] RUNDIR...   also when the choices were made (below)
    hsttrace.py --windows MS [--model] RUNDIR...   also each path's share and average per MS milliseconds

The trace gives what dm-historical-service-time is given (dm-ps-historical-service-time.c): request-based,
``start_io`` at the clone's issue and ``end_io`` at its completion with the issue time as start
(``io_start_time_ns``, stamped by blk_mq_start_request); bio-based, ``start_io`` when the clone is remapped
onto its path (``block_bio_remap``, right after ``__multipath_map_bio``) and ``end_io`` at the completion
with that time as start.  Request-based, the dm device's own issue events are the map attempts
(dm_mq_queue_rq starts the dm request, then the target selects): an attempt that issues no clone found its
path without a free tag (the clone's allocation failed, DM_MAPIO_REQUEUE), and the replay moves the path it
would have chosen to the list's tail, as hst_select_path did, so that the ties after it go as in the kernel
(traces before that field was read gave 27% "other" on the 4 ms path of H46 for this reason alone).
Replaying those calls through the selector's own model (mpathlab's
HistoricalServiceTime: the same EMA, stale marks and compare) rebuilds the selector's state at every
choice; each choice is then put in one class:

- estimate: the path with the lowest (1 + in flight) x average, none of them stale;
- probe: an idle path whose stale mark has passed (or every path idle: the stalest);
- equal-usage: the path with the best estimate had gone stale, so the one with fewer in flight won;
- other: the rebuilt state would have chosen another path (the trace's clock or a missed event).

``--timing`` adds when the choices come: the gaps between consecutive choices (bio-based: the fio task's
maps, one I/O per io_submit), how long after the last completion the next choice comes, and each path's
mean gap between completions (what its average learns) and how many of them come within 50 us of the one
before (completions that come in clumps); from a kernel trace also how late each path's
null_blk timer completes (issue to completion, less its completion_nsec) and, bio-based, how long a
submitter asleep in tag allocation takes to issue after the completion that freed a tag, and per path how
often its maps waited for a tag (the kernel: mapped while all of the path's driver tags were out, its
hw_queue_depth in the meta; the model: its task slept in tag allocation), for how long, and how long the
path's oldest request had been out at that map (a path filled in a quick run keeps its task asleep
longer); per path, how its choices split by its in-flight count (0, 1, 2 or more) with both sides of the
compare then, its (1 + in flight) x average against the best other path's (a path chosen again with one
request out sends pairs); from a trace
that records each event's CPU (boots since 12-06 19:44 UTC), which vCPU the late timers were on and
whether the fio task ran on that vCPU while they were overdue (it did: the timer interrupt is held, the
vCPU is not descheduled; docs/validation.md, "Where the timers' lateness comes from").  Where the fio
task maps quickly after the completions, a fast path is refilled before its stale mark passes
(docs/validation.md, "Why the fast or deep path gets less in the model").
"""
from __future__ import annotations

import argparse
import bisect
import collections
import gzip
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "src"))

from mpathlab.selectors.historical_service_time import HistoricalServiceTime  # noqa: E402
from mpathlab.validate import COMPLETION_MODES, TIMER_MODES, WAKE_MODES  # noqa: E402
sys.path.insert(0, HERE)
from grid import kernel_series  # noqa: E402

CLASSES = ("estimate", "probe", "equal-usage", "other")
# a tag sleeper's wake this many us or more after the usual is a late one (Tally.late_wakes): the trace's times
# are whole us, so 1-2 us more is the rounding and the trace's own cost
LATE_WAKE_US = 3
SELECTOR = HistoricalServiceTime.name


def weighed(infos, chosen):
    """The lowest (1 + in flight) x average (us) among the paths other than CHOSEN (None: no other path)."""
    return min(((1 + pi.outstanding) * (pi.hst >> 10) / 1000 for pi in infos if pi is not chosen), default=None)


def best_of(sel, infos, now):
    """The path record hst_select_path picks among ``infos`` (in list order) at ``now``."""
    best = infos[0]
    for pi in infos[1:]:
        if sel.compare(pi, best, now) < 0:
            best = pi
    return best


def classify(sel, infos, chosen, now):
    """The class of choosing ``chosen`` among ``infos`` (the selector's path records, in list order)."""
    if best_of(sel, infos, now) is not chosen:
        return "other"
    if all(not pi.outstanding for pi in infos) or (not chosen.outstanding and chosen.stale_after < now):
        return "probe"
    est = min(infos, key=lambda pi: (1 + pi.outstanding) * pi.hst)
    if est is not chosen and est.stale_after < now:
        return "equal-usage"
    return "estimate"


class Tally:
    """Choices per path and class, and each path's state when it was chosen."""

    def __init__(self, labels):
        self.labels = labels
        self.count = {lb: collections.Counter() for lb in labels}
        self.out = {lb: [] for lb in labels}
        # per path and in-flight count when chosen (0, 1, 2 = 2 or more): its (1 + in flight) x average and the
        # best other path's, in us (--timing)
        self.weighed = {lb: ([], [], []) for lb in labels}
        self.avg_us = {lb: [] for lb in labels}
        self.choice_ns = []                         # --timing: when each choice was made
        self.choice_label = []                      # and of which path (--windows)
        self.learnt = []                            # (time, path, its average after) at each completion
        self.done_ns = {lb: [] for lb in labels}    # and each path's completions
        self.after_done_ns = []                     # a choice's delay after the last completion before it
        self._last_done = None
        self.late_ns = {lb: [] for lb in labels}    # (kernel) issue to completion less the completion time
        self.tag_wake_ns = []                       # (kernel, bio) a tag's release to its sleeper's issue
        self.tag_waits = {lb: [] for lb in labels}  # (bio) per path, how long each map that slept for a tag waited
        self.tag_wait_oldest = {lb: [] for lb in labels}  # and how long its path's oldest request had been out then
        self.maps = collections.Counter()           # (bio) and its maps
        # (request-based) per path, the maps that found it without a free tag (the clone's allocation failed,
        # DM_MAPIO_REQUEUE): the selector chose it and moved it to its list's tail, and no I/O went to it
        self.failed_maps = collections.Counter()
        self.attempts_matched = [0, 0]              # (kernel) the replay chose the path the clone went to / all
        self.fio_cpu = []                           # (kernel, with CPUs) (time, vCPU) of the fio task's events
        self.timers = []                            # and (due, fired, vCPU it was armed on) of each completion

    def chose(self, now, label):
        self.choice_label.append(label)
        if self._last_done is not None:
            self.after_done_ns.append(now - self._last_done)
            self._last_done = None
        self.choice_ns.append(now)

    def done(self, label, now, hst=None):
        """A completion on LABEL; HST: the path's average (fixed point) after it."""
        if hst is not None:
            self.learnt.append((now, label, (hst >> 10) / 1000))
        self.done_ns[label].append(now)
        self._last_done = now

    def late_wakes(self):
        """The tag sleepers' late wakes: (the usual whole us from the freeing completion to the issue, the share of
        wakes LATE_WAKE_US or more after it, their median us beyond it); validate's WAKE_MODES "late" takes
        the share and the excess measured so."""
        us = [w // 1000 for w in self.tag_wake_ns]
        usual = collections.Counter(us).most_common(1)[0][0]
        late = sorted(u - usual for u in us if u >= usual + LATE_WAKE_US)
        return usual, len(late) / len(us), late[len(late) // 2] if late else 0

    def gaps_by_completions(self, most=2):
        """The time between consecutive choices by how many completions (of any path) came between them,
        0 to ``most``: the fio task's CPU time per map, and what each completion's interrupt adds to it."""
        done = sorted(t for d in self.done_ns.values() for t in d)
        out = collections.defaultdict(list)
        for a, b in zip(self.choice_ns, self.choice_ns[1:]):
            n = bisect.bisect_right(done, b) - bisect.bisect_right(done, a)
            if n <= most:
                out[n].append(b - a)
        return dict(out)

    def report_timing(self, weighed=True):
        """WEIGHED: also the compare's two sides per in-flight count (historical-service-time runs only)."""
        gaps = sorted(b - a for a, b in zip(self.choice_ns, self.choice_ns[1:]))
        after = sorted(self.after_done_ns)
        if not gaps or not after:
            return
        pct = lambda v, q: v[min(len(v) - 1, int(q * len(v)))] / 1e3
        print("  between choices: p25 %.0f us, median %.0f us, p75 %.0f us; first choice after a completion: "
              "median %.0f us" % (pct(gaps, .25), pct(gaps, .5), pct(gaps, .75), pct(after, .5)))
        by_done = self.gaps_by_completions()
        if by_done:
            print("  between choices with 0, 1, 2 completions between them: %s" % "; ".join(
                "%d: median %.1f us (%d)" % (k, statistics.median(v) / 1e3, len(v)) for k, v in sorted(by_done.items())))
        for lb in self.labels:
            d = self.done_ns[lb]
            if len(d) > 1:
                print("  %-4s mean gap between completions %.0f us, %.0f%% of them within 50 us of the one before" % (
                    lb, (d[-1] - d[0]) / (len(d) - 1) / 1e3,
                    100 * sum(b - a < 50_000 for a, b in zip(d, d[1:])) / (len(d) - 1)))
            late = sorted(self.late_ns[lb])
            if late:
                print("  %-4s completes late by: median %.0f us, p90 %.0f us, %.0f%% above 300 us" % (
                    lb, pct(late, .5), pct(late, .9), 100 * sum(v > 300_000 for v in late) / len(late)))
        wake = sorted(self.tag_wake_ns)
        if wake:
            usual, share, excess = self.late_wakes()
            print("  a submitter asleep for a tag: issued %.0f us (median; p25 %.0f, p75 %.0f) after the completion "
                  "that freed one (%d times); %.1f%% of them %d us or more after the usual %d us (by a median %.0f us "
                  "more)" % (pct(wake, .5), pct(wake, .25), pct(wake, .75), len(wake), 100 * share, LATE_WAKE_US,
                             usual, excess))
        for lb in self.labels:
            if self.maps[lb]:
                waits = self.tag_waits[lb]
                oldest = self.tag_wait_oldest[lb]
                print("  %-4s its maps waited for a tag %.0f%% of the time (%.0f us on average when they did%s)" % (
                    lb, 100 * len(waits) / self.maps[lb], statistics.mean(waits) / 1e3 if waits else 0,
                    "; the path's oldest request had been out %.0f us then, median" % (
                        statistics.median(oldest) / 1e3) if oldest else ""))
        failed = sum(self.failed_maps.values())
        if failed:
            print("  maps that found their path without a free tag (requeued, chosen again later): %d, %s" % (
                failed, ", ".join("%s %d" % (lb, self.failed_maps[lb]) for lb in self.labels)))
        ok, all_ = self.attempts_matched
        if all_:
            print("  the replayed selector chose the path the clone went to in %.1f%% of the maps" % (100 * ok / all_))
        if weighed:
            self.report_weighed()
        if self.timers and self.fio_cpu:
            self.report_timer_cpus()

    def report_windows(self, window_ns):
        """Per window of WINDOW_NS from the first choice: each path's share of the choices in it and its
        average at the window's end (HST's state drifts, or cycles between regimes, within one run)."""
        if not self.choice_ns:
            return
        t0 = self.choice_ns[0]
        counts = collections.defaultdict(collections.Counter)
        for t, lb in zip(self.choice_ns, self.choice_label):
            counts[(t - t0) // window_ns][lb] += 1
        avg = {lb: 0.0 for lb in self.labels}
        learnt = iter(self.learnt)
        nxt = next(learnt, None)
        print("  per %g ms: each path's share of the choices, and its average at the window's end (us)" % (
            window_ns / 1e6))
        for k in range(max(counts) + 1):
            end = t0 + (k + 1) * window_ns
            while nxt is not None and nxt[0] < end:
                avg[nxt[1]] = nxt[2]
                nxt = next(learnt, None)
            n = sum(counts[k].values()) or 1
            print("  %8.3f s  %s" % ((k * window_ns) / 1e9, "  ".join(
                "%s %.2f %5.0f" % (lb, counts[k][lb] / n, avg[lb]) for lb in self.labels)))

    def report_timer_cpus(self, late_ns=500_000):
        """Were the timers on fio's vCPU, and did fio run there while one was more than LATE_NS overdue?"""
        when = [t for t, _ in self.fio_cpu]
        on_fio = ran_there = ran_elsewhere = idle = late = 0
        for due, fired, cpu in self.timers:
            k = bisect.bisect_right(when, due) - 1
            on_fio += k >= 0 and self.fio_cpu[k][1] == cpu
            if fired - due > late_ns:
                late += 1
                # fio's events well inside the overdue stretch (50 us margins)
                inside = [c for _, c in self.fio_cpu[bisect.bisect_right(when, due + 50_000):
                                                     bisect.bisect_left(when, fired - 50_000)]]
                if cpu in inside:
                    ran_there += 1
                elif inside:
                    ran_elsewhere += 1
                else:
                    idle += 1
        print("  timers armed on the vCPU fio ran on when they were due: %.1f%%" % (100 * on_fio / len(self.timers)))
        if late:
            print("  %d completions more than %d us late: fio ran on that timer's vCPU meanwhile in %.0f%%, only on "
                  "the other in %.0f%%, not at all in %.0f%%" % (late, late_ns // 1000, 100 * ran_there / late,
                                                                100 * ran_elsewhere / late, 100 * idle / late))

    def add(self, label, klass, pi, other_us=None):
        """A choice of LABEL (its path record PI before start_io); OTHER_US: the lowest (1 + in flight) x
        average of the other paths then (weighed())."""
        self.count[label][klass] += 1
        self.out[label].append(pi.outstanding)
        self.avg_us[label].append((pi.hst >> 10) / 1000)
        if other_us is not None:
            self.weighed[label][min(pi.outstanding, 2)].append(((1 + pi.outstanding) * (pi.hst >> 10) / 1000,
                                                                other_us))

    def report_weighed(self):
        """Per path, how its choices split by its in-flight count, and the compare's two sides then."""
        for lb in self.labels:
            n = sum(len(w) for w in self.weighed[lb])
            if not n:
                continue
            print("  %-4s chosen with %s" % (lb, ", ".join(
                "%s in flight %.0f%%%s" % (("0", "1", "2 or more")[k], 100 * len(w) / n,
                                           " ((1 + n) x average %.0f us against the best other path's %.0f us, "
                                           "medians)" % (statistics.median(a for a, _ in w),
                                                         statistics.median(b for _, b in w)) if w else "")
                for k, w in enumerate(self.weighed[lb]))))

    def report(self, title, classes=True):
        """Per path its share of the choices and its in-flight count when chosen; with CLASSES (a
        historical-service-time run) also the classes of its choices and its average."""
        total = sum(sum(c.values()) for c in self.count.values()) or 1
        print(title)
        for lb in self.labels:
            c = self.count[lb]
            n = sum(c.values())
            if not n:
                print("  %-4s share 0.000" % lb)
                continue
            if not classes:
                print("  %-4s share %.3f  in flight when chosen %.1f" % (lb, n / total, statistics.mean(self.out[lb])))
                continue
            print("  %-4s share %.3f  %s  in flight when chosen %.1f  average %.0f us (median)" % (
                lb, n / total, "  ".join("%s %.2f" % (k, c[k] / n) for k in CLASSES),
                statistics.mean(self.out[lb]), statistics.median(self.avg_us[lb])))


def read_meta(rd):
    meta, paths = {}, []
    for line in open(os.path.join(rd, "meta")):
        w = line.split()
        if w and "=" in w[0]:
            for kv in w:
                k, _, v = kv.partition("=")
                meta[k] = v
        elif len(w) >= 3 and ":" in w[2]:
            paths.append((w[1], w[2].replace(":", ",")))
            for kv in w[3:]:
                k, _, v = kv.partition("=")
                if k in ("completion_nsec", "hw_queue_depth"):
                    meta[k + " " + w[1]] = v
    return meta, paths


def series_of(meta):
    """The kernel series a run's meta names ("6.1", "6.12"); runs from before meta named it ran on 6.1."""
    return kernel_series(meta.get("kernel")) or "6.1"


def replay_kernel(rd):
    meta, paths = read_meta(rd)
    labels = [lb for lb, _ in paths]
    dev_label = {dev: lb for lb, dev in paths}
    bio = meta.get("queue_mode") == "bio"
    clock = [0]
    sel = HistoricalServiceTime(clock=lambda: clock[0])
    for lb in labels:
        sel.add_path(lb)
    tally = Tally(labels)
    label_of = {pi: lb for lb, pi in sel._info.items()}

    def to_tail(pi):
        """hst_select_path moves the path it chose to its list's end (least preferred on ties)."""
        sel._valid.remove(pi)
        sel._valid.append(pi)

    def failed_map(pi):
        """The path chosen though no clone went to it: moved all the same."""
        to_tail(pi)
        tally.failed_maps[label_of[pi]] += 1

    started = collections.defaultdict(collections.deque)   # (label, sector) -> start times
    issued = collections.defaultdict(collections.deque)    # (label, sector) -> issue times
    issued_cpu = collections.defaultdict(collections.deque)  # and the vCPUs they were issued on
    mapped = {}                                             # (label, sector) -> its last map (bio)
    out_since = {lb: {} for lb in labels}                   # label -> sector -> issue time, while in flight
    oldest_at_map = {}                                      # (label, sector) -> its path's oldest issue then
    last_done = {}                                          # label -> its last completion
    completion = {lb: int(meta.get("completion_nsec " + lb, -1)) for lb in labels}
    # a path's driver tags (the lab's meta gives every path's; without, it is never taken as full)
    tags = {lb: int(meta.get("hw_queue_depth " + lb, sys.maxsize)) for lb in labels}
    # request-based: every issue of a dm request is one map attempt (dm_mq_queue_rq starts it, then the target
    # selects); one that issues no clone on a path found no tag there.  Traced before the path's issue event.
    dm_dev = (meta.get("dmdev") or "").replace(":", ",") if not bio else ""
    attempt = None                                          # (sector, the path record the replay chose) of the last
    with gzip.open(os.path.join(rd, "trace_events.gz"), "rt") as f:
        for lineno, line in enumerate(f, 1):
            w = line.split()
            # since 12-06 19:44 UTC also CPU FLAGS TASK: the event's vCPU and context (report_timer_cpus)
            if len(w) not in (4, 7):
                raise ValueError("trace_events.gz line %d: not TIME EVENT DEVICE SECTOR [CPU FLAGS TASK]: %r" % (
                    lineno, line.strip()))
            t, ev, dev, sector = w[:4]
            lb = dev_label.get(dev)
            if lb is None and not (dev == dm_dev and ev == "i"):
                continue
            try:
                now = int(round(float(t) * 1e9))
            except ValueError:
                raise ValueError("trace_events.gz line %d: the time %r is not a number" % (lineno, t)) from None
            if lb is None:                      # a map attempt of the dm queue
                clock[0] = now
                if attempt is not None:
                    failed_map(attempt[1])
                attempt = (sector, best_of(sel, list(sel._valid), now))
                continue
            if len(w) == 7 and not w[4].isdigit():
                raise ValueError("trace_events.gz line %d: the CPU %r is not a number" % (lineno, w[4]))
            cpu = int(w[4]) if len(w) == 7 else None
            clock[0] = now
            if cpu is not None and w[6].startswith("fio-"):
                tally.fio_cpu.append((now, cpu))
            if ev == "i":
                issued[(lb, sector)].append(now)
                issued_cpu[(lb, sector)].append(cpu)
                m, full = mapped.pop((lb, sector), (None, False))
                oldest = oldest_at_map.pop((lb, sector), None)
                out_since[lb][sector] = now
                # mapped while every driver tag of its path was out: its task slept until a completion freed one
                # (a completion between a map and its issue alone is an interrupt during the submission)
                if bio and full:
                    tally.tag_wake_ns.append(now - last_done[lb])   # it waited for a completion on its path
                    tally.tag_waits[lb].append(now - m)
                    if oldest is not None:
                        tally.tag_wait_oldest[lb].append(m - oldest)
            elif ev == "m":
                mapped[(lb, sector)] = (now, len(out_since[lb]) >= tags[lb])
                if out_since[lb]:
                    oldest_at_map[(lb, sector)] = min(out_since[lb].values())
                tally.maps[lb] += 1
            if ev == "c":
                last_done[lb] = now
                out_since[lb].pop(sector, None)
                if issued[(lb, sector)] and completion[lb] >= 0:
                    due = issued[(lb, sector)].popleft() + completion[lb]
                    tally.late_ns[lb].append(now - due)
                    armed_on = issued_cpu[(lb, sector)].popleft()      # null_queue_rq arms it where it issues
                    if armed_on is not None:
                        tally.timers.append((due, now, armed_on))
            if ev == ("m" if bio else "i"):
                infos = list(sel._valid)
                chosen = sel._info[lb]
                if attempt is not None and attempt[0] == sector:
                    tally.attempts_matched[0] += attempt[1] is chosen
                    tally.attempts_matched[1] += 1
                    attempt = None
                tally.add(lb, classify(sel, infos, chosen, now), chosen, weighed(infos, chosen))
                tally.chose(now, lb)
                to_tail(chosen)
                sel.start_io(lb, 4096)
                started[(lb, sector)].append(now)
            elif ev == "c" and started[(lb, sector)]:
                sel.end_io(lb, 4096, started[(lb, sector)].popleft())
                tally.done(lb, now, sel._info[lb].hst)
    if attempt is not None:
        failed_map(attempt[1])
    return meta, tally


def replay_model(rd, seed=1, timers=None, completion=None, wakes=None):
    """The cell of RUNDIR predicted as validate does (the guest of the run's session; seed 1 is validate's)."""
    from mpathlab import validate as V
    meta, paths = read_meta(rd)
    labels = [lb for lb, _ in paths]
    # a run of the deterministic lab (grid.py --icount) is predicted from that lab's cells and calibration
    icount = os.sep + "runs-icount" + os.sep in os.path.abspath(rd)
    cells = json.load(open(os.path.join(HERE, "results-icount.json" if icount else "results.json")))
    kernel = series_of(meta)
    topo = meta["topo"]
    if meta.get("selector") != SELECTOR:
        raise LookupError("--model replays historical-service-time runs; this one ran %s" % (
            meta.get("selector") or "no selector named in its meta"))
    want = "%s historical-service-time %s d%s" % (topo, meta["queue_mode"], meta["iodepth"])
    cell = next((c for c in cells if V.cell_key(c) == want and str(c.get("kernel") or "6.1") == kernel), None)
    if cell is None:
        raise LookupError("no cell %s of kernel %s in %s (grid.py collect%s gathers it)" % (
            want, kernel, "results-icount.json" if icount else "results.json", " --icount" if icount else ""))
    stamp = os.path.basename(os.path.dirname(os.path.dirname(os.path.abspath(rd)))).rsplit("-", 1)[-1]
    up = os.path.join(rd, "uptime")      # the guest's uptime at the run's start: the nearer calibration of its boot
    boot = {"host_load": {"utc_start": stamp},
            "guest_uptime_s": float(open(up).read().split()[0]) if os.path.exists(up) else 0.0}
    guest = V.fit_guest(cells, kernel, V.session_of(boot, V.calibration_boots(cells, kernel)), meta["queue_mode"],
                        timers, completion, wakes)
    tally = Tally(labels)
    order = {}
    pending = []
    orig_select, orig_start = HistoricalServiceTime.select_path, HistoricalServiceTime.start_io
    orig_end = HistoricalServiceTime.end_io
    from mpathlab.sim.blockqueue import BlockLayer
    from mpathlab.sim.iopath import IoPath
    orig_bl = BlockLayer.start, BlockLayer._sleep, BlockLayer._wake, BlockLayer.complete
    orig_driver_start = IoPath._start
    asleep = {}
    out_since = {lb: {} for lb in labels}      # label -> I/O -> when the driver got it, while in flight

    def driver_start(self, io, dev):
        out_since[dev.model.name][id(io)] = self.now
        return orig_driver_start(self, io, dev)

    def bl_complete(self, io, dev):
        out_since[dev.model.name].pop(id(io), None)
        return orig_bl[3](self, io, dev)

    def bl_start(self, io, dev):
        if not self.rq:
            tally.maps[dev.model.name] += 1
        return orig_bl[0](self, io, dev)

    def bl_sleep(self, q, io):
        lb = io.dev.model.name
        asleep[id(io)] = (self.sim.now, lb)
        if out_since[lb]:
            tally.tag_wait_oldest[lb].append(self.sim.now - min(out_since[lb].values()))
        return orig_bl[1](self, q, io)

    def bl_wake(self, io):
        since, lb = asleep.pop(id(io))
        tally.tag_waits[lb].append(self.sim.now - since)
        return orig_bl[2](self, io)

    def select_path(self, nr_bytes=0):
        now = self.select_clock()
        infos = list(self._valid)
        path = orig_select(self, nr_bytes)
        chosen = self._info[path]
        if not order:
            order.update(zip(self._info, labels))     # add_path ran in table order
        if pending:                                   # the last choice's clone got no tag (no start_io)
            tally.failed_maps[pending[0][0]] += 1
        # counted at start_io, as the trace counts: a request-based choice whose clone got no tag is not
        pending[:] = [(order[path], classify(self, infos, chosen, now), chosen, weighed(infos, chosen))]
        return path

    def start_io(self, path, nr_bytes):
        label = pending[0][0]
        tally.add(*pending.pop())
        tally.chose(self.clock(), label)
        return orig_start(self, path, nr_bytes)

    def end_io(self, path, nr_bytes, start_time_ns):
        ret = orig_end(self, path, nr_bytes, start_time_ns)
        tally.done(order[path], self.clock(), self._info[path].hst)
        return ret

    HistoricalServiceTime.select_path, HistoricalServiceTime.start_io = select_path, start_io
    HistoricalServiceTime.end_io = end_io
    BlockLayer.start, BlockLayer._sleep, BlockLayer._wake, BlockLayer.complete = bl_start, bl_sleep, bl_wake, bl_complete
    IoPath._start = driver_start
    try:
        V.simulate(V.table_line(cell), V.path_models(cell, guest),
                   V.parse_fio("[k]\nioengine=libaio\nrw=randwrite\nbs=4k\niodepth=%d\nruntime=8000ms\n"
                               "time_based\n" % int(cell["iodepth"])).jobs,
                   host=guest.host(), seed=seed, engine="python")
    finally:
        HistoricalServiceTime.select_path, HistoricalServiceTime.start_io = orig_select, orig_start
        HistoricalServiceTime.end_io = orig_end
        BlockLayer.start, BlockLayer._sleep, BlockLayer._wake, BlockLayer.complete = orig_bl
        IoPath._start = orig_driver_start
    return meta, tally, guest


def late_wakes_by_kernel(rundirs):
    """Per kernel series, over the traced bio runs among RUNDIRS with tag sleepers: (runs, the median run's share
    of late wakes, the median run's median excess in us) (Tally.late_wakes; runs without a late wake count for
    the share only)."""
    per = collections.defaultdict(list)
    for rd in rundirs:
        meta, tally = replay_kernel(rd)
        if tally.tag_wake_ns:
            per[series_of(meta)].append(tally.late_wakes())
    return {k: (len(v), statistics.median(share for _, share, _ in v),
                statistics.median([excess for _, share, excess in v if share] or [0]))
            for k, v in sorted(per.items())}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("rundir", nargs="+")
    ap.add_argument("--model", action="store_true", help="the model's choices for the same cells")
    ap.add_argument("--timing", action="store_true", help="also when the choices and completions came")
    ap.add_argument("--windows", type=float, metavar="MS", help="also each path's share and average per "
                    "window of MS milliseconds through the run (a regime that drifts or cycles)")
    ap.add_argument("--seed", type=int, help="with --model: the simulator's seed (default 1, the seed of the "
                    "asserted prediction; others show the regimes it can settle in)")
    ap.add_argument("--timers", choices=TIMER_MODES, help="with --model: how the guest's timer lateness enters "
                    "the model (validate --timers; default: the lab's own)")
    ap.add_argument("--completion", choices=COMPLETION_MODES, help="with --model: where a completion's CPU time "
                    "goes (validate --completion; default: the lab's own)")
    ap.add_argument("--late-wakes", action="store_true", help="only the late wakes of tag sleepers over all the "
                    "runs given, per kernel: the median run's share and excess (validate --wakes late takes them)")
    ap.add_argument("--wakes", choices=WAKE_MODES, help="with --model: how a task asleep for a tag comes back "
                    "(validate --wakes; default: the lab's own)")
    a = ap.parse_args(argv)
    for opt, given in (("--seed", a.seed is not None), ("--timers", a.timers), ("--completion", a.completion),
                       ("--wakes", a.wakes)):
        if given and not a.model:
            print("hsttrace: %s goes with --model (a kernel trace has none)" % opt, file=sys.stderr)
            return 3
    if a.windows is not None and not a.windows > 0:
        print("hsttrace: --windows takes a positive number of milliseconds, not %g" % a.windows, file=sys.stderr)
        return 3
    seed = 1 if a.seed is None else a.seed
    if a.late_wakes:
        if a.model:
            print("hsttrace: --late-wakes measures kernel traces (without --model)", file=sys.stderr)
            return 3
        try:
            for kernel, (runs, share, excess) in late_wakes_by_kernel(a.rundir).items():
                print("%s: %d traced runs with tag sleepers; the median run has %.1f%% of its wakes %d us or more "
                      "late, by a median %.0f us" % (kernel, runs, 100 * share, LATE_WAKE_US, excess))
        except (LookupError, OSError, ValueError, EOFError) as e:
            print("hsttrace: %s" % e, file=sys.stderr)
            return 3
        return 0
    failed = 0
    for rd in a.rundir:
        try:
            if a.model:
                meta, tally, guest = replay_model(rd, seed, a.timers, a.completion, a.wakes)
                title = "model %s%s%s%s%s (%s)" % (meta["name"], "" if seed == 1 else " seed %d" % seed,
                                                   " timers %s" % a.timers if a.timers else "",
                                                   " completion %s" % a.completion if a.completion else "",
                                                   " wakes %s" % a.wakes if a.wakes else "", guest.describe())
            else:
                meta, tally = replay_kernel(rd)
                title = "kernel %s %s" % (meta.get("kernel", ""), meta.get("name", os.path.basename(rd)))
        except (LookupError, OSError, ValueError, EOFError) as e:
            # a folder that is not a traced run (TRACE 2): no meta, no trace_events.gz, or a broken line
            print("hsttrace: %s: %s" % (rd, e), file=sys.stderr)
            failed += 1
            continue
        # another selector's trace (a service-time miss traced): its shares and timing, not HST's classes
        hst = meta.get("selector", SELECTOR) == SELECTOR
        if not hst:
            title += " (%s: the classes and averages are %s's, left out)" % (meta["selector"], SELECTOR)
        tally.report(title, classes=hst)
        if a.timing:
            tally.report_timing(weighed=hst)
        if a.windows:
            tally.report_windows(max(1, int(a.windows * 1e6)))
    return 3 if failed else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:
        from mpathlab.cli import reader_gone
        sys.exit(reader_gone())
