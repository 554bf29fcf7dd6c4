"""What crosses between the Python engine and the compiled core (``mpathlab/_fastcore.c``), declared once.

The core's constants (selector kinds, event kinds, service-time distributions, fault actions, the
target's answers and flags) and the layout of every tuple that crosses (a selector's path state, the
target's flags, an event, a fault, latency statistics, an IoGen's counters) are declared here.
``_fastcore_boundary.h`` is generated from this module (``python -m mpathlab.sim.boundary --write``);
tests/test_fastcore_boundary.py fails when the header and this module differ. The bridge
(:mod:`.fast`, :mod:`.fast_gen`) builds and reads the tuples by field name through the records below,
and the C side through the generated ``*_REFS``/``*_VALUES`` macros, so no field is placed by hand.
"""
from __future__ import annotations

import sys
from collections import namedtuple
from pathlib import Path
from typing import Any, Dict, List, Tuple

from ..target.multipath import REQUEUE_DELAY_MS
from .host import WOKEN_LATE_SALT
from .scsi import BLK_MQ_TAG_MIN, FAULT_STATES, SCSI_DEFAULT_DEVICE_BLOCKED

# ---------------------------------------------------------------- constants
# The core's selectors, as struct path_selector_type entries of its ops table (_fastcore.c
# "selector ops"); SEL_PY is any other PathSelector, called through its Python methods.
SEL_RR, SEL_QL, SEL_ST, SEL_HST, SEL_PY, SEL_IOA = range(6)
SELECTOR_KINDS = {"round-robin": SEL_RR, "queue-length": SEL_QL, "service-time": SEL_ST,
                  "historical-service-time": SEL_HST, "io-affinity": SEL_IOA}

# sim/devices.py service-time models
DIST_CONST, DIST_EXP, DIST_LOGNORMAL, DIST_EMPIRICAL = range(4)

# Event kinds, one numbering for both engines (sim/loop.py uses these). EV_CALL is the Python
# engine's generic callback; the core has one kind per part that plugs in through it instead.
(EV_DONE, EV_ARRIVE, EV_SUBMIT, EV_RETRY, EV_KICK, EV_FAULT, EV_MESSAGE, EV_ERRDONE, EV_ACTIVATED,
 EV_NOPATH_TIMEOUT, EV_CALL) = range(11)
EV_WORK, EV_WAKE, EV_CPU, EV_STEAL = range(11, 15)     # the core's EV_CALLs: blockqueue and host
# ... and sim/scsi.py's: a run of a SCSI path's queue (ScsiQueues._run), a command scsi_queue_rq refused
# by the device state (IoPath._scsi_rejected)
EV_SCSI_RUN, EV_SCSI_REJECT = range(15, 17)
# request-based dm's requeue work (blk-mq.c blk_mq_requeue_work on the dm queue): obj = the kick's
# generation, since each kick re-arms the one delayed work (engine: a stale event does nothing)
EV_REQUEUE = 17
# the core's EV_CALLs of an NVMe run (nvme/run.py): _cancel_tagset and _server_free of one path device
EV_NVME_CANCEL, EV_NVME_FREE = range(18, 20)
# a user-space daemon's timer (sim/loop.py daemon_timer: obj indexes the bridge's calls); and what a daemon
# does to a device at once during such a call (IoPath.fail_device / restore_device), applied by the core
# in the order of the events the call scheduled, never queued
EV_DAEMON, EV_DEV_FAIL, EV_DEV_RESTORE = range(20, 23)
# an NVMe head's hold of a lost controller's started requests until its error recovery cancels them
# (nvme/run.py attach: hold_in_flight), applied at once like the device operations above
EV_NVME_HOLD = 23
# the next request of a request-based dm queue's run, dispatch_cost after the one before (BlockLayer._dispatch)
EV_DISPATCH = 24
# the completion's interrupt work is done and fio has the I/O back (Host._interrupt, HostModel.completion_irq);
# a woken tag sleeper's I/O reaches its path's driver (BlockLayer._woken_start, HostModel.woken_issue_ns)
EV_IRQ_END, EV_WOKEN_START = range(25, 27)

# sim/devices.py Fault.action
# sim/devices.py Fault.action, as the core's kinds of fault; every device-state action of sim/scsi.py's
# FAULT_STATES is FAULT_STATE (CoreFault.state: the state it sets, by its index in the run's state list,
# whose refusals are sim/scsi.py's ScsiDevice.state_check's, so a state added there needs no C)
FAULT_KINDS = {"fail": 0, "reinstate": 1, "slow": 2, "error": 3, "state": 4}
FAULT_ACTIONS = dict({a: FAULT_KINDS["state"] for a in FAULT_STATES},
                     **{k: v for k, v in FAULT_KINDS.items() if k != "state"})

SCSI_RESULT_RETRY = -1   # ScsiCmd.result: the midlayer retries the command (else a JOB_ERRORS index, 0 good)

# The Python target's answers (target/multipath.py MAP_*/END_* strings), as the core codes them
MAP_CODES = {"remapped": 0, "submitted": 1, "requeue": 2, "delay_requeue": 3, "kill": 4}
END_CODES = {"done": 0, "requeue": 1, "delay_requeue": 2, "incomplete": 3}

# Job errors by index (_Target.errors starts with these; the target may add more)
NVME_HOST_ABORTED = "host-aborted"     # NVME_SC_HOST_ABORTED_CMD: nvme/run.py's cancellation of a lost controller
JOB_ERRORS = (None, "ioerr", "transport", "resource", NVME_HOST_ABORTED)

# TargetFlags.bits: the target's state, as far as the core may act without calling it
TARGET_SIMPLE = 1        # map is the current group's select_path + start_io
TARGET_KILL = 2          # no path and no queueing: map fails every I/O and changes nothing
TARGET_REQUEUE = 4       # request-based, no path, queueing: every map is DM_MAPIO_DELAY_REQUEUE
TARGET_END_REQUEUE = 8   # request-based end_io with an error on a failed path: requeue
TARGET_END_FAIL = 16     # ... or fail the I/O with the error
TARGET_QUEUE_BIO = 32    # bio-based, no path, queue_if_no_path: map holds the bio in the target (only)

# The NVMe head (nvme/head.py) in the core: the I/O policies whose per-I/O path choice is in C
# (nvme/numa.py, round_robin.py, queue_depth.py); any other policy runs the run in the Python engine
NVME_POLICY_KINDS = {"numa": 0, "round-robin": 1, "queue-depth": 2}
NVME_ANA_OPTIMIZED, NVME_ANA_NON_OPTIMIZED, NVME_ANA_OTHER = range(3)   # NsPath.ana_state as the policies read it
NVME_LOCAL_DISTANCE = 10       # nvme/policy.py LOCAL_DISTANCE

# times both engines use (sim/iopath.py, sim/jobrules.py, sim/blockqueue.py take them from here)
REQUEUE_DELAY_NS = REQUEUE_DELAY_MS * 1_000_000       # DM_MAPIO_DELAY_REQUEUE
# A job with continue_on_error resubmits after an immediately failed I/O no sooner than this: the
# syscall round trip of a failed I/O.  It also keeps simulated time moving when every I/O fails at once.
RESUBMIT_AFTER_ERROR_NS = 10_000
BLK_MQ_RESOURCE_DELAY_NS = 3 * 1_000_000     # blk-mq.c BLK_MQ_RESOURCE_DELAY (3 ms)
HST_WEIGHTS = 64         # historical-service-time's weight table (HST_WEIGHT_COUNT)

# ---------------------------------------------------------------- records
# Each record is a tuple on the Python side (a namedtuple) and a struct on the C side. A field is
# (name, Py_BuildValue/PyArg_ParseTuple code) or (name, code, count) for a fixed-size array.
_C_TYPES = {"i": "int", "L": "long long", "K": "unsigned long long", "d": "double", "O": "PyObject *"}

RECORDS: Dict[str, Tuple[str, List[tuple]]] = {
    # one path of a selector whose state the core holds (copied to the Python selector and back
    # around each call into the target)
    "SelPathState": ("sel_path_state", [
        ("qlen", "i"), ("in_flight_size", "i"), ("hst", "K"), ("outstanding", "K"),
        ("stale_after", "K"), ("last_finish", "K"), ("valid_count", "i")]),
    # what the target tells the core after each call (state_changes: the change since the call)
    "TargetFlags": ("target_flags", [
        ("nr_valid_paths", "i"), ("bits", "i"), ("queue_if_no_path", "i"), ("kick_pending", "i"),
        ("current_pg", "i"), ("active", "O"), ("state_changes", "L")]),
    # an event the target scheduled, or one Simulation.__init__ scheduled
    "CoreEvent": ("core_event", [("t", "L"), ("kind", "i"), ("obj", "L")]),
    # a fault of a path (obj of EV_FAULT indexes the list of these)
    "CoreFault": ("core_fault", [
        ("path", "i"), ("action", "i"), ("factor", "d"), ("reinstate_after_ns", "L"), ("message", "i"),
        ("state", "i")]),
    # a SCSI command's end for sim/scsi.py ScsiDevice.command_result, called back for an error class or a
    # pending retry: the device's counters in, its disposition (SCSI_RESULT_RETRY, or a JOB_ERRORS index)
    # and counters out; python: the next command needs the callback too
    "ScsiCmd": ("scsi_cmd", [
        ("result", "i"), ("nr_cmds", "L"), ("iodone_cnt", "L"), ("device_blocked", "L"), ("python", "i")]),
    # sim/stats.py LatencyStats: n, min, max, mean, Welford's m2, the histogram {bucket: count}
    "LatState": ("lat_state", [
        ("n", "L"), ("min", "L"), ("max", "L"), ("mean", "d"), ("m2", "d"), ("hist", "O")]),
    # sim/arrival.py IoGen's counters (-1 for None); its random stream crosses as getstate() words
    "GenState": ("gen_state", [
        ("bytes_left", "L"), ("ios_left", "L"), ("issued_bytes", "L", 3), ("next_ns", "d", 3),
        ("last_poisson", "d", 3), ("pending_d", "i"), ("pending_n", "L"), ("batch", "L"),
        ("think_until", "L"), ("trim_next_write", "L"), ("writing_done", "i"), ("done", "i"),
        ("rate_sleep", "L"), ("rate_wake", "L")]),
    # the NVMe head's state the core changes per I/O, sent to the Python head before each call into it:
    # each controller's nr_active (by path device), each namespace head's current path per NUMA node
    # (a path device, -1 none; the heads in nsid order), each job's head (NvmeHead.nshead_for: an index,
    # -1 before the job's first I/O)
    "NvmeHot": ("nvme_hot", [("nr_active", "O"), ("current", "O"), ("job_head", "O")]),
    # the Python head's state after a call: the policy in force (NVME_POLICY_KINDS; policy_gen numbers
    # each policy object the run had; counts_active: IOPolicy.counts_active), per controller (NvmeCtrl) and per head (NvmeHeadState)
    "NvmeState": ("nvme_state", [("policy", "i"), ("policy_gen", "i"), ("counts_active", "i"), ("ctrls", "O"), ("heads", "O")]),
    # one controller (by path device): io_ok: live or deleting (queue_rq takes requests); live; marginal
    # as the policies count it (marginal_aware and the FPIN flag); injecting: statuses queued by `error`
    "NvmeCtrl": ("nvme_ctrl", [("io_ok", "i"), ("live", "i"), ("marginal", "i"), ("nr_active", "i"),
                               ("injecting", "i")]),
    # one namespace head: its paths in list order (NvmePath), the current path per node (a path device,
    # -1 none), and per path device whether the array's ANA state of the head's group is live there
    "NvmeHeadState": ("nvme_head_state", [("paths", "O"), ("current", "O"), ("target_live", "O")]),
    # one path of a head: its controller (path device), ana (NVME_ANA_*), disabled (path_is_disabled)
    "NvmePath": ("nvme_path", [("ctrl", "i"), ("ana", "i"), ("disabled", "i")]),
    # the run's counters Python reads at a timer (multipathd: workload_done, the progress stop, pending
    # state changes, the drain before a reload; a target's own timers: when to stop them), sent with each
    # daemon call and each message: the Simulation's result counts and pending state changes, each
    # job's (JobRunState) and each device's (DevRunState)
    "RunState": ("run_state", [("completed", "L"), ("errored", "L"), ("state_changes", "L"),
                               ("jobs", "O"), ("devices", "O")]),
    "JobRunState": ("job_run_state", [("inflight", "L"), ("stopped", "i"), ("remaining", "L")]),
    "DevRunState": ("dev_run_state", [("in_flight", "L"), ("offline", "i")]),
    # the priority groups after a daemon reloaded the table (the dm target's fresh state): each group's
    # SEL_*, each path's group and relative throughput (by path device), HST's weights and threshold
    "CoreGroups": ("core_groups", [("pg_selectors", "O"), ("pg", "O"), ("rt", "O"), ("weights", "O"),
                                   ("threshold", "K")]),
    # what NvmeHead.map answered: a MAP_CODES code, the controller (path device) of MAP_REMAPPED and the
    # request's same-path retries (_Req.retries)
    "NvmeMapResult": ("nvme_map_result", [("code", "i"), ("ctrl", "i"), ("retries", "i")]),
}


def _record(name: str) -> Any:
    """The Python side of a record: a namedtuple of its fields (typed Any: built from RECORDS)."""
    return namedtuple(name, [f[0] for f in RECORDS[name][1]])  # type: ignore[misc]


SelPathState = _record("SelPathState")
TargetFlags = _record("TargetFlags")
CoreEvent = _record("CoreEvent")
CoreFault = _record("CoreFault")
LatState = _record("LatState")
ScsiCmd = _record("ScsiCmd")
GenState = _record("GenState")
NvmeHot = _record("NvmeHot")
NvmeState = _record("NvmeState")
NvmeCtrl = _record("NvmeCtrl")
NvmeHeadState = _record("NvmeHeadState")
NvmePath = _record("NvmePath")
NvmeMapResult = _record("NvmeMapResult")
RunState = _record("RunState")
JobRunState = _record("JobRunState")
DevRunState = _record("DevRunState")
CoreGroups = _record("CoreGroups")


# ---------------------------------------------------------------- the C header
HEADER = "_fastcore_boundary.h"


def _enum(names: Dict[str, int]) -> str:
    return "enum { %s };" % ", ".join("%s = %d" % kv for kv in names.items())


def _fields_format(fields) -> str:
    return "".join(f[1] if len(f) == 2 else "(" + f[1] * f[2] + ")" for f in fields)


def _refs(fields, ref: bool) -> str:
    amp = "&" if ref else ""
    out = []
    for f in fields:
        if len(f) == 2:
            out.append("%s(r)%s%s" % (amp, "->" if ref else ".", f[0]))
        else:
            out.extend("%s(r)%s%s[%d]" % (amp, "->" if ref else ".", f[0], k) for k in range(f[2]))
    return ", ".join(out)


def header() -> str:
    """The text of _fastcore_boundary.h."""
    g = globals()
    lines = ["/* Generated by `python -m mpathlab.sim.boundary --write` from src/mpathlab/sim/boundary.py:",
             "   edit that module, not this file (tests/test_fastcore_boundary.py checks they agree). */",
             "#ifndef MPATHLAB_FASTCORE_BOUNDARY_H", "#define MPATHLAB_FASTCORE_BOUNDARY_H", ""]
    for prefix in ("SEL_", "DIST_", "EV_"):
        lines.append(_enum({k: v for k, v in g.items() if k.startswith(prefix) and isinstance(v, int)}))
    lines.append(_enum({"FAULT_" + k.upper(): v for k, v in FAULT_KINDS.items()}))
    lines.append(_enum({"MAP_" + k.upper(): v for k, v in MAP_CODES.items()}))
    lines.append(_enum({"END_" + k.upper(): v for k, v in END_CODES.items()}))
    lines.append(_enum({"ERR_" + str(e).upper().replace("-", "_"): i for i, e in enumerate(JOB_ERRORS) if e}))
    lines.append(_enum({k: v for k, v in g.items() if k.startswith("TARGET_") and isinstance(v, int)}))
    lines.append(_enum({"NVME_POLICY_" + k.upper().replace("-", "_"): v for k, v in NVME_POLICY_KINDS.items()}))
    lines.append(_enum({k: v for k, v in g.items() if k.startswith("NVME_ANA_") and isinstance(v, int)}))
    lines.append("#define NVME_LOCAL_DISTANCE %d" % NVME_LOCAL_DISTANCE)
    for name in ("REQUEUE_DELAY_NS", "RESUBMIT_AFTER_ERROR_NS", "BLK_MQ_RESOURCE_DELAY_NS"):
        lines.append("#define %s %dLL" % (name, g[name]))
    lines.append("#define HST_WEIGHTS %d" % HST_WEIGHTS)
    lines.append("#define WOKEN_LATE_SALT 0x%XULL" % WOKEN_LATE_SALT)     # HostModel.woken_late's hash
    for name in ("BLK_MQ_TAG_MIN", "SCSI_DEFAULT_DEVICE_BLOCKED", "SCSI_RESULT_RETRY"):
        lines.append("#define %s %d" % (name, g[name]))
    for record, (cname, fields) in RECORDS.items():
        up = cname.upper()
        lines += ["", "/* %s (sim/boundary.py) */" % record, "typedef struct {"]
        for f in fields:
            ctype = _C_TYPES[f[1]]
            sep = "" if ctype.endswith("*") else " "
            lines.append("    %s%s%s%s;" % (ctype, sep, f[0], "[%d]" % f[2] if len(f) == 3 else ""))
        lines += ["} %s_t;" % cname,
                  '#define %s_FIELDS "%s"' % (up, _fields_format(fields)),
                  '#define %s_FORMAT "(%s)"' % (up, _fields_format(fields)),
                  "#define %s_REFS(r) %s" % (up, _refs(fields, True)),
                  "#define %s_VALUES(r) %s" % (up, _refs(fields, False))]
    lines += ["", "#endif", ""]
    return "\n".join(lines)


def header_path() -> Path:
    return Path(__file__).resolve().parent.parent / HEADER


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        header_path().write_text(header())
    else:
        sys.stdout.write(header())
