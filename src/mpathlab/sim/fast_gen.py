"""The compiled core's side of :class:`~mpathlab.sim.arrival.IoGen` (used by :mod:`.fast`).

The core runs IoGen's mixed sizes (``bssplit``, ``bsrange``, ``bs_unaligned``, different
read/write/trim sizes), trims (``trim``, ``randtrim``, ``trimwrite`` and their mixes) and
open-loop arrivals (``rate``, ``rate_iops``, ``rate_process`` linear and poisson,
``thinktime`` with ``thinktime_blocks`` and either ``thinktime_blocks_type``) in C,
function for function as arrival.py does them (_fastcore.c, "IoGen").  What else IoGen
does stays in Python, and :func:`fallback` names it.

The generator's state crosses as it is: its random stream as ``random.getstate()`` words
(so the seeding exists only in arrival.py) and its counters in one tuple
(:func:`state`), read back into the same IoGen after the run (:func:`set_state`).
"""
from __future__ import annotations

from typing import Optional

from .arrival import IoGen
from .boundary import GenState

# _fastcore.c: JobSpec.ddir_mode (read, write and trim are the direction they issue)
_DDIR_MODE = {"read": 0, "write": 1, "trim": 2, "mix": 3, "trimwrite": 4}
# the core keeps sizes, rates and times in 64-bit integers and a rate's bytes in doubles
_SIZE_MAX = 0x7FFFFFFF          # what the C selectors' in-flight byte counters hold (as for bs)
_EXACT = 1 << 53                # an int that converts to a double exactly
_TIME_MAX = 1 << 62


def fallback(job) -> str:
    """'' when the core can run this job's generator, else why not."""
    g: IoGen = job.gen
    s = g.spec
    if job.burner:
        return "cpuio burners need the Python engine"
    if g.verify:
        return "verify needs the Python engine"
    if s.flow:
        return "flow (fio's flow control) needs the Python engine"
    if s.latency_target_ns:
        return "latency_target needs the Python engine"
    if 0 < s.iodepth_low < s.iodepth:
        return "iodepth_low (draining to the low-water mark) needs the Python engine"
    if s.rate_process not in ("linear", "poisson"):
        return "rate_process=%s needs the Python engine" % s.rate_process
    if s.bssplit_rwt is not None and any(not 1 <= len(ch) <= 64 for ch in s.bssplit_rwt):
        return "bssplit lists of more than 64 sizes need the Python engine"
    if any(size > _SIZE_MAX for d in s.ddirs for size, _ in s.sizes_of(d)):
        return "block sizes of 2 GiB and more need the Python engine"
    if any(b >= _EXACT for b in g.bps) or s.thinktime_ns >= _TIME_MAX or (
            g.bytes_left is not None and g.bytes_left >= _TIME_MAX) or (
            g.ios_left is not None and g.ios_left >= _TIME_MAX):
        return "rates of 2^53 bytes/s, think times of 2^62 ns or sizes of 2^62 bytes and more need the Python engine"
    return ""


def state(g: IoGen) -> GenState:
    """IoGen's counters as _fastcore.c's gen_state_in reads them (None as -1)."""
    def opt(v: Optional[int]) -> int:
        return -1 if v is None else v
    pd, pn = g.pending if g.pending is not None else (-1, 0)
    return GenState(bytes_left=opt(g.bytes_left), ios_left=opt(g.ios_left), issued_bytes=tuple(g.issued_bytes),
                    next_ns=tuple(g.next_ns), last_poisson=tuple(g.last_poisson), pending_d=pd, pending_n=pn,
                    batch=g.batch, think_until=opt(g.think_until), trim_next_write=opt(g.trim_next_write),
                    writing_done=int(g.writing_done), done=int(g.done), rate_sleep=opt(g.rate_sleep),
                    rate_wake=opt(g.rate_wake))


def set_state(g: IoGen, out) -> None:
    """The core's final generator state (gen_state_out: a GenState and the stream's words) into the IoGen."""
    st, words = GenState._make(out[0]), out[1]

    def opt(v: int) -> Optional[int]:
        return None if v < 0 else v
    g.bytes_left, g.ios_left = opt(st.bytes_left), opt(st.ios_left)
    g.issued_bytes, g.next_ns, g.last_poisson = list(st.issued_bytes), list(st.next_ns), list(st.last_poisson)
    g.pending = None if st.pending_d < 0 else (st.pending_d, st.pending_n)
    g.batch, g.think_until, g.trim_next_write = st.batch, opt(st.think_until), opt(st.trim_next_write)
    g.writing_done, g.done = bool(st.writing_done), bool(st.done)
    g.rate_sleep, g.rate_wake = opt(st.rate_sleep), opt(st.rate_wake)
    g.rng.setstate((3, words, None))


def config(job) -> Optional[dict]:
    """The generator of one job as _fastcore.c's gen_load reads it (None: the plain closed loop)."""
    g: Optional[IoGen] = job.gen
    if g is None:
        return None
    s = g.spec
    version, words, _ = g.rng.getstate()        # IoGen.rng: random.Random(seed ^ 0x5EED)
    assert version == 3 and len(words) == 625
    split = None
    if s.bssplit_rwt is not None:
        # the total of each list as Python sums it (IoGen._size draws rng.random() * this)
        split = ([[(size, float(w)) for size, w in ch] for ch in s.bssplit_rwt],
                 [float(sum(w for _, w in ch)) for ch in s.bssplit_rwt])
    return {
        "ddir_mode": _DDIR_MODE[s.ddir_mode],
        # IoGen._size: bssplit first, then bsrange, else bs (SIZES_* in _fastcore.c)
        "sizes": 2 if s.bssplit_rwt is not None else 1 if s.bsrange_rwt is not None else 0,
        "bs_rwt": tuple(s.bs_rwt), "bsrange_rwt": None if s.bsrange_rwt is None else tuple(
            tuple(r) for r in s.bsrange_rwt),
        "bssplit_rwt": split, "bs_unaligned": int(bool(s.bs_unaligned)),
        "poisson": int(s.rate_process == "poisson"), "think_issue": int(s.thinktime_blocks_type == "issue"),
        "thinktime_ns": s.thinktime_ns, "thinktime_blocks": s.thinktime_blocks,
        "bps": tuple(g.bps), "minbs": tuple(g.minbs),
        "state": state(g), "rng": words,
    }
