"""The kernel lab's fault cells (validation/kernel-lab/results-faults.json) predicted from the topology alone.

A fault cell is a two-path topology, a dm table's features, fio at a fixed rate and a schedule of steps
(a SCSI device set offline, running again or deleted, a null_blk device powered off, dm messages that
fail or reinstate a path or turn queueing off and on, a dm-delay path reloaded with a new delay).  The
model gets the paths (completion time, queue_depth, host, dm-delay's delay), the table, fio's options and
the steps at the times the guest ran them in each repeat (a sysfs write acts as it starts, a dmsetup
message when it returns, ~100 ms later; a reload suspends its dm-delay device from its start to its
end), and nothing measured in the run; it runs once per repeat.  Compared per cell, against the kernel's
mean over its repeats: fio's error count (equal; within 5% when nonzero), the stall of new I/O (from the
return of the fault, the steps the schedule puts at its first instant, to the first completion of an I/O
submitted after it) and the recovery (the last step to the next completion) within 10% or 5 ms, or, where the
kernel's own repeats spread more, within two standard errors of their mean (3 or more repeats, as in the
validation table), and the paths' shares of the completions after the last step within 0.03 where the
kernel completed enough I/O after it.
"""
from __future__ import annotations

import argparse
import functools
import json
import os
import sys
from typing import Dict, List, Optional, Tuple

from .inputs import InputFileError, field_problem, load_lab_cells
from .sim.devices import Fault, PathModel, ServiceTime
from .sim.engine import Simulation
from .sim.scsi import ScsiHostModel
from .sim.host import HostModel
from .validate import calibration_boots, cell_refusal, fit_guest, scsi_path_model, session_of
from .workload.fio import parse_fio

MS = 1_000_000
HERE = os.path.join("validation", "kernel-lab")
GRID_RESULTS = os.path.join(HERE, "results.json")     # the grid's cells, with the guest's calibration runs
SHARE_TOL = 0.03
TIME_TOL_FRAC, TIME_TOL_MS = 0.10, 5.0
ERR_TOL_FRAC = 0.05      # nonzero fio error counts (see _errors_ok)
# shares after the last step are compared over the kernel repeats that completed at least this many
# I/Os after it: below it the binomial noise of a share (sqrt(0.25 / n), 0.035 at 200) is larger than
# the tolerance.  A guest that ran its steps late leaves few (the counters' last snapshot comes after fio
# ended)
MIN_AFTER = 200
# step action -> the device fault it is on its target path
DEVICE_STEPS = {"offline": "offline", "running": "online", "delete": "delete", "poweroff": "poweroff"}
# step action -> the dm message (with the target path's devt when it names one)
MESSAGE_STEPS = {"fail": "fail_path", "reinstate": "reinstate_path", "fail_if_no_path": "fail_if_no_path",
                 "queue_if_no_path": "queue_if_no_path"}


class NotModelled(Exception):
    """A cell with a step or path the comparison does not model (said in the table)."""


def _devt(i: int) -> Tuple[int, int]:
    return (8, 16 * i)


def cell_paths(c: dict) -> List[PathModel]:
    """The cell's paths.  A null_blk path (F2n) takes hw_queue_depth tags from its one hardware queue
    that fio's CPU maps to: to dm that is the budget of a SCSI device of that queue_depth, and its
    powered-off queue dies as a deleted LUN's does (clone allocation fails, blk_queue_dying).  A delay
    path (F2d) is such a device under a dm-delay device whose delay (delay_ms) comes before its tags."""
    hosts: Dict[int, ScsiHostModel] = {}
    out = []
    for i, p in enumerate(c["paths"]):
        svc = ServiceTime(p["completion_ns"])
        kind = p.get("kind") or "null_blk"
        if kind == "scsi":
            out.append(scsi_path_model(p, i, svc, hosts))
        elif kind in ("null_blk", "delay"):
            # delay: a dm-delay device over the null_blk device, its delay ahead of the device's tags
            qd = int(p.get("hw_queue_depth") or 0)
            out.append(PathModel(p["label"], _devt(i), svc, parallelism=qd or 256, queue_depth=qd,
                                 scsi_host=ScsiHostModel("nullb%d" % i),
                                 dm_delay_ns=int(float(p.get("delay_ms") or 0) * MS)))
        else:
            raise NotModelled("%s paths" % kind)
    return out


def _timed_repeats(c: dict) -> List[dict]:
    return [r for r in c.get("repeats") or [] if r.get("step_times_ms")]


def step_spans_ns(c: dict, rep: Optional[dict] = None) -> List[Tuple[int, int]]:
    """When each step's command started and returned, from fio's start, in repeat REP (None: the mean
    over the repeats): the first step's offset from the first completed write, as the guest measured it
    (``first_step_after_io_ms``; the schedule's when not recorded), plus about one completion time
    from fio's start to that write, then the guest's measured offsets of the steps."""
    steps = c["steps"]
    reps = [rep] if rep is not None else _timed_repeats(c)
    zero = [0.0] * len(steps)
    starts = [r["step_times_ms"] for r in reps]
    ends = [[t + d for t, d in zip(r["step_times_ms"], r.get("step_durations_ms") or zero)] for r in reps]
    firsts = [r.get("first_step_after_io_ms") or steps[0]["at_ms"] for r in reps]

    def mean(offs):
        return [sum(o[i] for o in offs) / len(offs) for i in range(len(steps))]
    if not reps:
        starts = ends = [[st["at_ms"] - steps[0]["at_ms"] for st in steps]]
        firsts = [steps[0]["at_ms"]]
    first = int(sum(firsts) / len(firsts) * MS) + int(c["paths"][0]["completion_ns"])
    return [(first + int(a * MS), first + int(b * MS)) for a, b in zip(mean(starts), mean(ends))]


def fault_steps(c: dict) -> int:
    """How many steps the fault itself is: those the schedule puts at the first step's instant (both paths
    offline).  The guest runs them 2-40 ms apart and reads its clock before each command; I/O that reaches
    a path still up meanwhile is a race of the lab's shell, so new I/O's stall is counted from the return
    of the last of them, as the lab's summary does."""
    steps = c["steps"]
    return sum(1 for st in steps if st["at_ms"] == steps[0]["at_ms"])


def step_times_ns(c: dict, rep: Optional[dict] = None) -> List[int]:
    """When each step took effect.  A sysfs write (the shell's echo, a builtin) acts as it starts: the
    device is offline, or its disk marked dead, before the write returns (a deletion returns after the
    teardown, 30-90 ms later).  A dm message (``dmsetup``, a program) acts at its ioctl, at the end: it
    spends ~100 ms starting under emulation.  A new delay (``delay``) is in force from its resume, at the
    end (cell_run suspends the device from the start)."""
    return [start if st["action"] in DEVICE_STEPS else end
            for st, (start, end) in zip(c["steps"], step_spans_ns(c, rep))]


def _delay_arg_ns(step: dict) -> int:
    """The new delay of a ``delay`` step (its arg, in ms)."""
    try:
        ms = float(step.get("arg"))
    except (TypeError, ValueError):
        ms = -1.0
    if not ms >= 0:
        raise NotModelled("the delay step's arg %r (a delay in ms)" % step.get("arg"))
    return int(ms * MS)


def cell_run(c: dict, seed: int = 1, rep: Optional[dict] = None, with_guest: bool = False):
    """Build and run the model of fault cell C with the step times of repeat REP (None: their mean),
    and (``with_guest``) the guest of the grid's calibration (guest_host); (simulation, completions,
    step times)."""
    paths = cell_paths(c)
    labels = [p["label"] for p in c["paths"]]
    faults: Dict[int, List[Fault]] = {}
    messages = []
    times = step_times_ns(c, rep)
    for st, t, (start, end) in zip(c["steps"], times, step_spans_ns(c, rep)):
        act, target = st["action"], st.get("target")
        i = labels.index(target) if target in labels else None
        if act == "delay" and i is not None and c["paths"][i].get("kind") == "delay":
            # dmsetup suspend, reload with the new delay, resume: the dm-delay device queues new I/O
            # from the start of the step to its end (drivers/md/dm.c __dm_suspend .. __dm_resume)
            faults.setdefault(i, []).extend([Fault(start, "suspend"),
                                             Fault(end, "resume", delay_ns=_delay_arg_ns(st))])
        elif act in DEVICE_STEPS and i is not None:
            faults.setdefault(i, []).append(Fault(t, DEVICE_STEPS[act]))
        elif act in MESSAGE_STEPS:
            msg = MESSAGE_STEPS[act]
            messages.append((t, msg if i is None else "%s %d:%d" % ((msg,) + _devt(i))))
        else:
            raise NotModelled("the step %s" % act)
    for i, fs in faults.items():
        paths[i].faults = sorted(fs, key=lambda f: f.at_ns)
    feats = [w for w in str(c.get("features") or "").split() if w]
    if c["queue_mode"] == "bio":
        feats += ["queue_mode", "bio"]
    table = "0 4096 multipath %d%s 0 1 1 %s 0 %d 1 %s" % (
        len(feats), "".join(" " + w for w in feats), c["selector"], len(paths),
        " ".join("%d:%d 1" % _devt(i) for i in range(len(paths))))
    text = ("[fault-cell]\nioengine=libaio\nrw=randwrite\nbs=4k\niodepth=%d\nruntime=%dms\ntime_based\n"
            "continue_on_error=all\n" % (int(c["iodepth"]), int(float(c["runtime_s"]) * 1000)))
    for opt in str(c.get("fio_options") or "").split():
        text += opt.lstrip("-") + "\n"

    class Watched(Simulation):
        """Keeps (time, path, submitted) of every I/O that completed to fio: the path is known when the
        device ends it (end_io), fio's completion may come later (its CPU reaps it)."""
        ended_on: Dict[int, object] = {}

        def _complete(self, io, error):
            dev = self.ended_on.pop(id(io), None)
            if not error:
                done.append((self.now, labels[self._dev_index[dev]] if dev is not None else None,
                             io.submit_ns))
            super()._complete(io, error)

        def _path_done(self, io, error):
            self.ended_on[id(io)] = io.dev
            super()._path_done(io, error)

    done: List[Tuple[int, Optional[str], int]] = []
    sim = _run(Watched, table, paths, text, messages, seed, guest_host(c, rep) if with_guest else None)
    return sim, done, times


@functools.lru_cache(maxsize=4)
def _grid_cells(path: str) -> Tuple[dict, ...]:
    try:
        with open(path) as f:
            return tuple(json.load(f))
    except (OSError, ValueError):
        return ()


def guest_host(c: dict, rep: Optional[dict] = None, grid: str = GRID_RESULTS) -> Optional[HostModel]:
    """The guest of the repeat's lab session, as the validation table predicts with it (mpathlab.validate:
    fitted on the calibration boot of the cell's kernel nearest in time to the repeat's boot): fio's CPU
    time per I/O and the timers firing late together, in the stretches they are held.  Without it every
    I/O of a batch fio submits reaches the path at one instant and completes at one instant, which HST reads as zero
    service time ("now - last completion"); with it, HST on two identical paths follows the order of
    its path list more than the kernel does (docs/faults.md), so the table runs without it unless
    asked (``--guest``).  None when the grid's results are not there."""
    cells = list(_grid_cells(grid))
    if not cells:
        return None
    kernel = str(c.get("kernel") or "6.1")
    session = session_of(rep, calibration_boots(cells, kernel)) if rep is not None else ""
    return fit_guest(cells, kernel, session, c.get("queue_mode", "")).host()


def _run(cls, table, paths, text, messages, seed, host=None):
    sim = cls(table, paths, parse_fio(text).jobs, seed=seed, messages=messages, engine="python", host=host)
    sim.result = sim.run()
    sim.result.check_accounting()
    return sim


def metrics(c: dict, seed: int = 1, with_guest: bool = False) -> dict:
    """The model's counterparts of the kernel's metrics, one run per kernel repeat with that repeat's
    step times (a guest under load ran the same schedule hundreds of ms apart), averaged as the kernel's
    repeats are."""
    runs = ([repeat_metrics(c, seed, r, with_guest) for r in _timed_repeats(c)]
            or [repeat_metrics(c, seed, None, with_guest)])

    def mean(vals):
        vals = [v for v in vals if v is not None]
        return sum(vals) / len(vals) if vals else None
    out = {k: mean([m[k] for m in runs]) for k in runs[0] if k != "shares_after"}
    out["fio_errors"] = round(out["fio_errors"])
    out["shares_after"] = {lb: mean([m["shares_after"][lb] for m in runs]) for lb in runs[0]["shares_after"]}
    out["per_repeat"] = runs
    return out


def _completed_after(rep: dict) -> Optional[int]:
    after = [v for v in ((rep.get("completions") or {}).get("after") or {}).values() if v is not None]
    return sum(after) if after else None


def _shares_compared(c: dict, m: dict) -> Tuple[Dict[str, float], Dict[str, float], bool]:
    """The kernel's and the model's shares after the last step, over the kernel repeats that completed
    MIN_AFTER or more I/Os after it (each repeat against the model's run with its step times), and
    whether any did.  A guest that ran its steps late took the counters' last snapshot after fio ended:
    such a repeat has a handful of completions, whose share is noise."""
    reps = _timed_repeats(c)
    counted = [i for i, r in enumerate(reps) if (_completed_after(r) or 0) >= MIN_AFTER]
    if not reps or len(m.get("per_repeat") or []) != len(reps):
        k = c.get("mean_shares_after") or {}
        after = [v for v in ((c.get("mean_completions") or {}).get("after") or {}).values() if v is not None]
        return k, m["shares_after"], not after or sum(after) >= MIN_AFTER

    def mean_of(dicts):
        labels = [lb for lb in dicts[0]]
        return {lb: sum(d.get(lb) or 0.0 for d in dicts) / len(dicts) for lb in labels}
    if not counted:
        return c.get("mean_shares_after") or {}, m["shares_after"], False
    return (mean_of([reps[i]["shares_after"] for i in counted]),
            mean_of([m["per_repeat"][i]["shares_after"] for i in counted]), True)


def repeat_metrics(c: dict, seed: int = 1, rep: Optional[dict] = None, with_guest: bool = False) -> dict:
    """The model's counterparts of the kernel's metrics (validation/kernel-lab/grid.py fault_summary),
    from the same instants: fio's errors; the stall (the first step's start to the next completed I/O)
    and the stall of new I/O (to the first completion of an I/O submitted at or after it); the recovery
    (the last step's return to the next completion); the longest gap; the requests a path ended without
    completing them (retried by dm-mpath, or failed); the shares of the completions after the last step."""
    sim, done, times = cell_run(c, seed, rep, with_guest)
    res = sim.result
    spans = step_spans_ns(c, rep)
    first, last = spans[0][0], spans[-1][1]
    whole = spans[fault_steps(c) - 1][1]
    after = [t for t, _, _ in done if t >= first]
    new = [t for t, _, sub in done if sub >= whole]
    rec = [t for t, _, _ in done if t >= last]
    gaps = [first] + after
    tail = [p for t, p, _ in done if t >= last]
    labels = [p["label"] for p in c["paths"]]
    return {"fio_errors": res.errored, "fio_total_ios": res.submitted,
            "stall_ms": (after[0] - first) / MS if after else None,
            "stall_new_io_ms": (new[0] - whole) / MS if new else None,
            "recovery_ms": (rec[0] - last) / MS if rec else None,
            "max_gap_ms": max(b - a for a, b in zip(gaps, gaps[1:])) / MS if after else None,
            "refused": sum(d.errors for d in sim.devices),
            "shares_after": {lb: (tail.count(lb) / len(tail) if tail else None) for lb in labels}}


def _time_ok(model: Optional[float], kernel: Optional[float], c: Optional[dict] = None,
             key: str = "") -> Optional[str]:
    """"yes": within TIME_TOL_FRAC or TIME_TOL_MS of the kernel's mean; "noise": further, but within two
    standard errors of that mean over 3 or more repeats that have it (a guest that stalls fio for 30-100 ms
    in one repeat); "no" otherwise; None where neither side has a value."""
    if model is None or kernel is None:
        return None if model is None and kernel is None else "no"
    diff = abs(model - kernel)
    if diff <= max(TIME_TOL_FRAC * kernel, TIME_TOL_MS):
        return "yes"
    n = sum(1 for r in (c or {}).get("repeats") or [] if r.get(key) is not None)
    sd = (c or {}).get("stddev_" + key)
    return "noise" if sd is not None and n >= 3 and diff <= 2 * sd / n ** 0.5 else "no"


def _errors_ok(model: int, c: dict) -> bool:
    """None in every repeat: none in the model either.  Otherwise the count is fio's rate times a window
    whose ends the guest's step commands set, to a few tens of ms: within ERR_TOL_FRAC of the mean."""
    reps = [r.get("fio_errors") for r in c.get("repeats") or [] if r.get("fio_errors") is not None]
    mean = c.get("mean_fio_errors")
    if mean is None:
        return model == 0 if not reps else False
    if not any(reps):
        return model == 0
    return abs(model - mean) <= ERR_TOL_FRAC * mean


SELECTOR_ABBR = {"round-robin": "rr", "queue-length": "ql", "service-time": "st", "historical-service-time": "hst"}


def _fault_row(c: dict, seed: int, with_guest: bool) -> dict:
    """One fault cell against the model: per check True/False (None where neither side has a value)."""
    row = {"cell": "%s %s %s %s" % (c["kernel"], c["fault"], SELECTOR_ABBR.get(c["selector"], c["selector"]),
                                     c["queue_mode"]),
           "n": c.get("n", len(c.get("repeats") or []))}
    try:
        m = metrics(c, seed, with_guest)
    except NotModelled as e:
        row["not_modelled"] = str(e)
        return row
    k = {key: c.get("mean_" + key) for key in ("fio_errors", "stall_ms", "stall_new_io_ms", "recovery_ms",
                                               "max_gap_ms")}
    refused = [v for v in (c.get("mean_refused") or {}).values() if v is not None]
    k["refused"] = sum(refused) if refused else None
    # the stall of new I/O where the kernel's completion log gave it (runs before it was kept: any I/O)
    stall_key = "stall_new_io_ms" if k["stall_new_io_ms"] is not None else "stall_ms"
    times = {"stall": _time_ok(m[stall_key], k[stall_key], c, stall_key),
             "recovery": _time_ok(m["recovery_ms"], k["recovery_ms"], c, "recovery_ms")}
    checks = {"errors": _errors_ok(m["fio_errors"], c)}
    checks.update({name: None if v is None else v != "no" for name, v in times.items()})
    row["noise"] = [name for name, v in times.items() if v == "noise"]
    # requests a path ended without writing them (retried or failed) are shown, not checked: the
    # kernel's count (accounted in the path's stat, no sectors written) is one request or a batch up
    # to the queue depth sent before the first refusal's completion ran fail_path on 6.1, and on 6.12
    # it also counts requests of faults that refuse none (fail_path by message); the model refuses one
    after = [v for v in ((c.get("mean_completions") or {}).get("after") or {}).values() if v is not None]
    k["completions_after"] = sum(after) if after else None
    k["shares_after"], m["shares_after"], enough = _shares_compared(c, m)
    sh = [abs((m["shares_after"].get(lb) or 0.0) - v) for lb, v in k["shares_after"].items() if v is not None]
    checks["shares"] = (max(sh) <= SHARE_TOL) if sh and enough else None
    row.update({"kernel": k, "model": m, "checks": checks, "stall_kind": stall_key,
                "within": all(v is not False for v in checks.values())})
    return row


def compare(cells: List[dict], seed: int = 1, with_guest: bool = False, source_name: str = "results") -> List[dict]:
    """Every fault cell against the model (_fault_row); a cell the model cannot take is refused naming
    ``source_name`` and the cell."""
    rows = []
    for c in cells:
        # a cell of a results file grid.py did not write: refused naming the file and the cell
        with cell_refusal(source_name, " ".join(str(c.get(k)) for k in ("kernel", "fault", "selector", "queue_mode"))):
            rows.append(_fault_row(c, seed, with_guest))
    return rows


def _fmt(v, f="%.1f") -> str:
    return "-" if v is None else f % v


def _pair(k, m, f="%.1f") -> str:
    return "%s/%s" % (_fmt(k, f), _fmt(m, f))


def _shares(r: dict, lb: Optional[str]) -> str:
    if not lb:
        return "-"
    text = _pair(r["kernel"]["shares_after"].get(lb), r["model"]["shares_after"].get(lb), "%.2f")
    return text if r["checks"]["shares"] is not None else "(%s)" % text


SHORT = {"errors": "err", "stall": "stall", "recovery": "rec", "shares": "shares"}
HEAD = ["cell", "n", "fio errors", "stall ms", "recovery ms", "refused", "p0 share after", "within"]


def _cells(r: dict) -> List[str]:
    """A row's figures as printed, kernel/model in each, in the order of HEAD."""
    if "not_modelled" in r:
        return [r["cell"], str(r["n"]), "not modelled: %s" % r["not_modelled"]] + [""] * 5
    k, m = r["kernel"], r["model"]
    sk = r["stall_kind"]
    lb = next(iter(k["shares_after"]), None)
    bad = [SHORT[n] for n, ok in r["checks"].items() if ok is False]
    return [r["cell"], str(r["n"]), _pair(k["fio_errors"], m["fio_errors"], "%.0f"),
            _pair(k[sk], m[sk]) + ("" if sk == "stall_new_io_ms" else "*"),
            _pair(k["recovery_ms"], m["recovery_ms"]), _pair(k["refused"], m["refused"], "%.0f"),
            _shares(r, lb), ("~ " + ", ".join(SHORT[n] for n in r["noise"]) if r["noise"] else "yes")
            if r["within"] else "no: " + ", ".join(bad)]


def _summary(rows: List[dict]) -> List[str]:
    n_ok = sum(1 for r in rows if r.get("within"))
    n_noise = sum(1 for r in rows if r.get("within") and r.get("noise"))
    out = ["%d of %d cells within (%d by ~): fio errors equal (within %d%% when nonzero), the stall of new" % (
        n_ok, len(rows), n_noise, round(ERR_TOL_FRAC * 100)),
           "I/O (from the fault's return: both paths' when both go) and the recovery within %d%% or %g ms,"
           % (round(TIME_TOL_FRAC * 100), TIME_TOL_MS),
           "shares within %g over the repeats where the kernel completed %d or more I/Os after the last step"
           % (SHARE_TOL, MIN_AFTER),
           "(in brackets: none did, not checked); ~: a time within two standard errors of the kernel's",
           "mean over 3 or more repeats."]
    if any(r.get("stall_kind") == "stall_ms" for r in rows):
        out.append("* stall of any I/O: the kernel's run kept no completion log to time new I/O by.")
    return out


def markdown(rows: List[dict]) -> str:
    """One row per cell, kernel/model in each column, at most 100 characters wide."""
    out = ["| " + " | ".join(HEAD) + " |", "|" + "---|" * len(HEAD)]
    out += ["| " + " | ".join(_cells(r)) + " |" for r in rows]
    return "\n".join(out + [""] + _summary(rows))


def terminal(rows: List[dict]) -> str:
    """The table within 100 columns: a heading line per kernel and fault, then its cells."""
    from .report.text import columns
    out: List[object] = []
    seen = None
    for r in rows:
        kernel, fault, rest = (r["cell"].split(None, 2) + ["", ""])[:3]
        if (kernel, fault) != seen:
            seen = (kernel, fault)
            out.append("%s %s" % (kernel, fault))
        c = _cells(r)
        out.append(["  " + rest, c[1], c[7]] + c[2:7])     # the verdict first
    head = ["selector, mode, depth", HEAD[1], HEAD[7]] + HEAD[2:7]
    return "\n".join(columns(head, out) + [""] + _summary(rows))


REQUIRED = ("kernel", "fault", "selector", "queue_mode", "iodepth", "runtime_s", "steps", "paths")


def cell_problem(c: dict) -> str:
    """What makes C not a fault cell as grid.py collect writes it ("" when nothing)."""
    missing = [k for k in REQUIRED if k not in c]
    if missing:
        return "no %s" % missing[0]
    if not isinstance(c["steps"], list) or not c["steps"] or not isinstance(c["paths"], list) \
            or not all(isinstance(x, dict) for x in c["steps"] + c["paths"]):
        return "steps and paths must be non-empty lists of objects"
    return field_problem(c, _TYPED_FIELDS, {"iodepth": (1, 65536), "runtime_s": (0, 86400)})


# the fields the comparison reads as text or numbers: (name, type, required)
_TYPED_FIELDS = tuple((k, str, True) for k in ("kernel", "fault", "selector", "queue_mode")) + (
    ("iodepth", int, True), ("runtime_s", (int, float), True), ("n", int, False),
    ("features", str, False), ("fio_options", str, False)) + tuple(
    ("mean_" + k, (int, float), False) for k in ("fio_errors", "stall_ms", "stall_new_io_ms", "recovery_ms",
                                                "max_gap_ms", "max_lat_after_fault_ms", "fio_total_ios")) + tuple(
    (k, dict, False) for k in ("mean_completions", "mean_refused", "mean_shares_after"))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="mpathlab validate-faults", description=__doc__.split("\n")[0])
    ap.add_argument("results", nargs="?", default=os.path.join(HERE, "results-faults.json"))
    ap.add_argument("--json", action="store_true", help="the rows as JSON")
    ap.add_argument("--guest", action="store_true",
                    help="give the model the guest of the grid's calibration (CPU per I/O, late timers; "
                         "validation/kernel-lab/results.json), as the validation table does (default: off)")
    ap.add_argument("--markdown", action="store_true",
                    help="the table as Markdown, one line per cell, as docs/faults.md shows it")
    args = ap.parse_args(argv)
    try:
        cells = load_lab_cells(args.results, "fault results", cell_problem)
        rows = compare(cells, with_guest=args.guest, source_name=args.results)
    except InputFileError as e:
        sys.stderr.write("mpathlab: error: %s\n" % e)
        return 3
    if args.json:
        json.dump(rows, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        print(markdown(rows) if args.markdown else terminal(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
