"""Fault studies: what happens to I/O when paths fail, come back or slow down, as on a host.

Each study is a small topology of SCSI paths (sim/scsi.py: each path a LUN behind an HBA port of its
own, queue_depth 32) with scheduled faults, run once per selector.  A fault is what an admin or the
fabric does to a host: a device set offline or deleted in sysfs, a transport that drops the port, a
path that slows, every path lost; reinstatement is the ``reinstate_path`` message multipathd sends
once its checker sees the path again.  ``kernel`` names the kernel functions the study runs through.
For each run the summary gives fio's I/O errors, the stall (from the fault to the next I/O that
completes), the I/O a path failed that dm-mpath retried (on another path, or later), and the paths'
dispatch shares after recovery.  The accounting invariant (submitted = completed + errored + pending,
per-path counts adding up) is checked after every run.
"""
from __future__ import annotations

import copy
from typing import Dict, List, Optional, Sequence, Tuple

from ..units import format_ns
from ..workload.fio import parse_fio
from .devices import Exponential, Fault, PathModel
from .engine import Simulation
from .scsi import ScsiHostModel

MS = 1_000_000
SELECTORS = ("round-robin", "queue-length", "service-time", "historical-service-time")
_PER_PATH_ARGS: Dict[str, Optional[Tuple[int, str]]] = {
    "round-robin": (1, "1"), "queue-length": (1, "1"), "service-time": (2, "1 1"),
    "historical-service-time": (1, "0"), "io-affinity": None}
QUEUE_DEPTH = 32        # the LUN's queue_depth (sdev->queue_depth)
PLAIN_ACTIONS = {"offline": "fail", "delete": "fail", "poweroff": "fail"}
JOB = "[j]\nrw=randwrite\nbs=4k\nioengine=libaio\niodepth=%d\nruntime=%dms\ntime_based\n"


def _table(selector: str, devs: List[str], features: str = "0") -> str:
    per_path = _PER_PATH_ARGS[selector]
    if per_path is None:
        raise ValueError("fault studies do not run %s (it needs CPU masks)" % selector)
    n, arg = per_path
    paths = " ".join("%s %s" % (d, arg) for d in devs)
    return "0 1048576 multipath %s 0 1 1 %s 0 %d %d %s" % (features, selector, len(devs), n, paths)


def _paths(n: int, faults: Dict[int, List[Fault]], service_us: float = 100.0, parallelism: int = 4):
    """N SCSI paths sda, sdb, ...: one LUN each behind a host of its own (can_queue unlimited)."""
    return [PathModel("sd%s" % chr(ord("a") + i), (8, 16 * i), Exponential(service_us * 1000),
                      parallelism=parallelism, faults=faults.get(i, ()), queue_depth=QUEUE_DEPTH,
                      scsi_host=ScsiHostModel("host%d" % i)) for i in range(n)]


class FaultStudy:
    def __init__(self, name: str, title: str, build, expect: str, *, fault_ns: int, recovered_ns: Optional[int],
                 end_ns: int, kernel: Sequence[str] = (), path: str = "sdb"):
        self.name = name
        self.title = title
        self.build = build   # selector -> (table, paths, job text, sim kwargs)
        self.expect = expect
        self.fault_ns = fault_ns            # when the fault happens
        self.recovered_ns = recovered_ns    # when every path is back (None: never)
        self.end_ns = end_ns
        self.kernel = tuple(kernel)         # "file: function -> function" of the mechanism
        self.path = path                    # the path the fault is on (its share is followed)

    def build_plain(self, selector: str):
        """The study on plain devices (no budget, no host; offline and delete become a device that fails):
        the engines are compared on it too (tests/test_fastcore.py; the SCSI study itself in
        tests/test_fastcore_scsi.py)."""
        table, paths, job, kw = self.build(selector)
        plain = []
        for pm in paths:
            q = copy.copy(pm)
            q.queue_depth, q.scsi_host = 0, None
            q.faults = [Fault(f.at_ns, PLAIN_ACTIONS.get(f.action, f.action), f.factor, f.reinstate_after_ns)
                        for f in pm.faults]
            plain.append(q)
        return table, plain, job, kw

    def run(self, selector: str, seed: int = 1, kernel=None, progress=None, engine: str = "auto"):
        """progress: called with the run's fraction done, as Simulation calls it.  The run keeps the times
        of the I/Os that completed, and counts the I/O a path failed that dm-mpath took back (requeued
        or held) instead of ending it with the error."""
        table, paths, job, kw = self.build(selector)
        res = Simulation(table, paths, parse_fio(job).jobs, seed=seed, kernel=kernel, engine=engine,
                         progress=progress, record_completions=True, **kw).run()
        res.check_accounting()
        done_at = res.done_at or []
        stall, gap, rec = self.gaps(done_at)
        res.fault = {"stall_ns": stall, "max_gap_ns": gap, "recovery_ns": rec, "retried": res.requeued_errors,
                     "last_done_ns": done_at[-1] if done_at else 0}
        return res

    def gaps(self, done_at: List[int]) -> Tuple[Optional[int], Optional[int], Optional[int]]:
        """From the completion times: the stall (the fault to the next completion), the longest time
        without a completion from the fault on, and the recovery (the path back to the next completion)."""
        after = [t for t in done_at if t > self.fault_ns]
        if not after:
            return None, None, None
        steps = [self.fault_ns] + after
        max_gap = max(b - a for a, b in zip(steps, steps[1:]))
        rec = None
        if self.recovered_ns is not None:
            back = [t for t in after if t >= self.recovered_ns]
            rec = back[0] - self.recovered_ns if back else None
        return after[0] - self.fault_ns, max_gap, rec


def _fail_reinstate(sel, action="fail"):
    faults = {1: [Fault(20 * MS, action), Fault(60 * MS, "reinstate", reinstate_after_ns=0)]}
    return _table(sel, ["sda", "sdb", "sdc", "sdd"]), _paths(4, faults), JOB % (64, 100), {"window_ns": MS}


def _all_lost(sel, features: str, action="offline", runtime_ms=100, back_ms: Optional[int] = 50, depth=64, **kw):
    faults = {i: [Fault(20 * MS, action)] + ([Fault(back_ms * MS, "reinstate")] if back_ms else [])
              for i in range(2)}
    job = JOB % (depth, runtime_ms)
    if "queue_if_no_path" not in features:
        job += "continue_on_error=io\n"
    return _table(sel, ["sda", "sdb"], features), _paths(2, faults), job, dict(kw, window_ns=MS)


def _slow(sel, depth: int):
    faults = {1: [Fault(50 * MS, "slow", factor=20.0)]}
    # windows short enough to time the reaction, long enough to hold a few I/Os
    window = MS // 10 if depth >= 16 else MS
    return _table(sel, ["sda", "sdb", "sdc", "sdd"]), _paths(4, faults), JOB % (depth, 200), {"window_ns": window}


_END_IO = "dm-mpath.c: multipath_end_io -> blk_path_error -> fail_path; dm-rq.c: dm_requeue_original_request"
_HOLD = ("dm-mpath.c: multipath_clone_and_map -> must_push_back_rq -> DM_MAPIO_DELAY_REQUEUE (100 ms), "
         "kicked at once by reinstate_path -> process_queued_io_list -> dm_mq_kick_requeue_list; "
         "bio-based: __multipath_map_bio -> multipath_queue_bio, process_queued_bios on reinstate_path")
STUDIES: Dict[str, FaultStudy] = {s.name: s for s in [
    FaultStudy("path-fail-reinstate", "4 paths at iodepth 64; sdb's transport drops at 20 ms, "
               "reinstated at 60 ms", _fail_reinstate,
               "in-flight I/O on sdb ends with a transport error and is requeued to other paths; no job sees "
               "an error", fault_ns=20 * MS, recovered_ns=60 * MS, end_ns=100 * MS,
               kernel=("scsi_lib.c: scsi_result_to_blk_status (DID_TRANSPORT_FAILFAST -> BLK_STS_TRANSPORT)",
                       _END_IO)),
    FaultStudy("path-offline", "4 paths at iodepth 64; sdb set offline at 20 ms (sysfs state), back and "
               "reinstated at 60 ms", lambda s: _fail_reinstate(s, "offline"),
               "commands already with sdb complete; the next clone sent to it is refused at once, sdb "
               "fails and the I/O moves on; no job sees an error", fault_ns=20 * MS, recovered_ns=60 * MS,
               end_ns=100 * MS,
               kernel=("scsi_sysfs.c: store_state_field -> scsi_device_set_state(SDEV_OFFLINE)",
                       "scsi_lib.c: scsi_queue_rq -> scsi_device_state_check (BLK_STS_IOERR)",
                       "dm-rq.c: dm_dispatch_clone_request -> dm_complete_request", _END_IO)),
    FaultStudy("path-delete", "4 paths at iodepth 64; sdb deleted at 20 ms, back and reinstated at 60 ms",
               lambda s: _fail_reinstate(s, "delete"),
               "the LUN is cancelled before its disk goes: the next clone sent to it is refused with "
               "BLK_STS_OFFLINE, sdb fails and the I/O moves on; no job sees an error", fault_ns=20 * MS,
               recovered_ns=60 * MS, end_ns=100 * MS,
               kernel=("scsi_sysfs.c: sdev_store_delete -> __scsi_remove_device -> "
                       "scsi_device_set_state(SDEV_CANCEL), then sd_remove -> del_gendisk",
                       "scsi_lib.c: scsi_queue_rq -> scsi_device_state_check (BLK_STS_OFFLINE)", _END_IO)),
    FaultStudy("path-poweroff", "4 paths at iodepth 64; sdb's disk goes at 20 ms with its queue dying at once "
               "(a null_blk device powered off), back and reinstated at 60 ms",
               lambda s: _fail_reinstate(s, "poweroff"),
               "the clone allocation on the dying queue fails: sdb is failed through pg_init_done and that "
               "request waits 100 ms; no job sees an error", fault_ns=20 * MS, recovered_ns=60 * MS,
               end_ns=100 * MS,
               kernel=("null_blk main.c: power 0 -> null_del_dev -> del_gendisk (the queue is dying)",
                       "dm-mpath.c: multipath_clone_and_map -> activate_or_offline_path -> "
                       "pg_init_done(SCSI_DH_DEV_OFFLINED) -> fail_path; DM_MAPIO_DELAY_REQUEUE")),
    FaultStudy("all-fail-queue", "2 paths, queue_if_no_path; both set offline at 20 ms, reinstated at 50 ms",
               lambda s: _all_lost(s, "1 queue_if_no_path"),
               "I/O queues (requeued every 100 ms), resumes at the reinstatement (the requeue list is kicked)", fault_ns=20 * MS,
               recovered_ns=50 * MS, end_ns=100 * MS, kernel=(_END_IO, _HOLD), path="sda"),
    FaultStudy("all-fail-queue-bio", "as all-fail-queue, bio-based: bios wait inside the target",
               lambda s: _all_lost(s, "3 queue_if_no_path queue_mode bio"),
               "bios queue in the target and are re-mapped when a path returns", fault_ns=20 * MS,
               recovered_ns=50 * MS, end_ns=100 * MS, kernel=(_END_IO, _HOLD), path="sda"),
    FaultStudy("all-fail-timeout", "2 paths, queue_if_no_path, queue_if_no_path_timeout_secs 1; both set "
               "offline at 20 ms for good",
               lambda s: _all_lost(s, "1 queue_if_no_path", runtime_ms=1100, back_ms=None,
                                   queue_if_no_path_timeout_secs=1),
               "I/O queues for the 1 s timeout, then the queued I/O fails and fio stops at its first error",
               fault_ns=20 * MS, recovered_ns=None, end_ns=1100 * MS, path="sda",
               kernel=(_HOLD, "dm-mpath.c: enable_nopath_timeout (armed by the last fail_path) -> "
                              "queue_if_no_path_timeout_work -> queue_if_no_path(m, false, ...)")),
    # iodepth 4 and a 10 ms outage: fio with continue_on_error resubmits every failed I/O 10 us later,
    # so each 10 us of the outage costs a full queue of errors
    FaultStudy("all-fail-error", "2 paths at iodepth 4, no queue_if_no_path; both set offline at 20 ms, "
               "reinstated at 30 ms", lambda s: _all_lost(s, "0", back_ms=30, depth=4),
               "I/O fails with EIO while no path is left (counted as errors)", fault_ns=20 * MS,
               recovered_ns=30 * MS, end_ns=100 * MS, path="sda",
               kernel=(_END_IO, "dm-mpath.c: multipath_clone_and_map -> dm_report_EIO, DM_MAPIO_KILL")),
    FaultStudy("slow-path-20x", "4 paths at iodepth 64; sdb becomes 20x slower at 50 ms",
               lambda s: _slow(s, 64), "queues build on sdb: every load-aware selector moves I/O off it",
               fault_ns=50 * MS, recovered_ns=None, end_ns=200 * MS,
               kernel=("dm-ps-queue-length.c / dm-ps-service-time.c / dm-ps-historical-service-time.c: "
                       "select_path",)),
    FaultStudy("slow-path-20x-depth1", "4 paths at iodepth 1; sdb becomes 20x slower at 50 ms",
               lambda s: _slow(s, 1), "no queue builds at depth 1: only HST, which measures service time, "
                                      "moves I/O off sdb", fault_ns=50 * MS, recovered_ns=None, end_ns=200 * MS,
               kernel=("dm-ps-historical-service-time.c: hst_select_path, hst_fill_compare",)),
]}


def summarize(study: FaultStudy, selector: str, res) -> dict:
    d = {"study": study.name, "selector": selector, "submitted": res.submitted, "completed": res.completed,
         "errored": res.errored, "pending": res.pending, "stall_ns": res.fault.get("stall_ns"),
         "max_gap_ns": res.fault.get("max_gap_ns"), "recovery_ns": res.fault.get("recovery_ns"),
         "retried": res.fault.get("retried") or 0,
         "path_errors": {p["name"]: p["errors"] for p in res.paths}}
    if study.recovered_ns is not None:
        # shares once the path is back: from 10 ms after recovery (the reinstate_path) to the last
        # completion (held I/O may end after the runtime)
        t0 = study.recovered_ns + 10 * MS
        t1 = max(study.end_ns, (res.fault.get("last_done_ns") or 0) + 1)
        d["shares_after"] = {p["name"]: round(res.share_in_window(p["name"], t0, t1), 4) for p in res.paths}
    if study.name.startswith("slow-path-20x"):
        before = res.share_in_window("sdb", 10 * MS, 50 * MS)
        after = res.share_in_window("sdb", 150 * MS, 200 * MS)
        react = res.reaction_ns("sdb", 50 * MS, before / 2)
        d.update({"sdb_share_before": round(before, 4), "sdb_share_after": round(after, 4),
                  "reaction_ns": react})
    return d


def format_row(d: dict) -> str:
    s = "%-24s submitted %6d  completed %6d  errored %5d  pending %3d" % (
        d["selector"], d["submitted"], d["completed"], d["errored"], d["pending"])
    stall = d.get("stall_ns")
    # on lines of their own: the rows stay within the terminal views' 100 columns
    gap, rec = d.get("max_gap_ns"), d.get("recovery_ns")
    s += "\n%-24s stall %s, longest gap %s%s, path errors retried %d" % (
        "", format_ns(stall) if stall is not None else "to the end", format_ns(gap) if gap is not None else "-",
        ", recovery %s" % format_ns(rec) if rec is not None else "", d.get("retried", 0))
    if "shares_after" in d:
        s += "\n%-24s shares after recovery: %s" % ("", " ".join(
            "%s %.3f" % kv for kv in sorted(d["shares_after"].items())))
    if "reaction_ns" in d:
        r = d["reaction_ns"]
        s += "\n%-24s sdb share %.3f -> %.3f, halved after %s" % ("",
            d["sdb_share_before"], d["sdb_share_after"], format_ns(r) if r is not None else "never")
    return s
