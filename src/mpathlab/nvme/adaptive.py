"""iopolicy ``adaptive``: PROPOSED, NOT MERGED.

Modelled after Nilay Shroff's "nvme-multipath: introduce adaptive I/O policy"
RFC series on linux-nvme (RFC PATCHv4 2025-11-04 and v5 2025-11-05,
lore 20251105103347.86059-1-nilay@linux.ibm.com; renamed the "latency"
policy in PATCHv6, 2026-05-20).  The code read was a multipath.c carrying the
series under its "adaptive" names (found in the search tool's code index;
its repository is not named there), which aggregates latency per NUMA node
and keeps credits per CPU; the defaults (15 s, shift 3) are the ones the
v4/v5 commit messages give.  What is modelled:

- Sampling: every completion on a path adds its latency (issue on the path
  to completion) to a batch kept per path, per NUMA node of the completing
  CPU and per direction (read/write/other).  Samples of more than 1 s are
  dropped.  A head with a single path takes no samples.
- Smoothing: when a sample arrives at least ``weight_timeout`` (default 15 s,
  the RFC's "every ~15 seconds") after the path's last update, the batch mean
  replaces the smoothed latency if there was none, else enters an EWMA with
  shift ``ewma_shift`` (default 3: 7/8 old, 1/8 new), and the batch restarts.
  The very first sample therefore sets the smoothed latency on its own.
- Weights: right after an update, every path of the head gets score
  1e9 / smoothed latency (0 while it has none; the RFC divides without a
  guard) and weight = score * 64 / total score, at least 1.
- Choice (per CPU): start at the path this CPU used last (first in the list
  at the start); skip paths that are disabled or not optimized/non-optimized
  (ANA optimized and non-optimized are *not* told apart); a path still
  without a weight is used at once (bootstrap); otherwise a path with credit
  left spends one credit and is used; a path out of credit is refilled to its
  weight and the next path in the list is tried.  The credits are per CPU,
  per path and per direction, so each CPU runs its own weighted round-robin.
- Clearing a path's current-path state (failover) also resets its statistics,
  so it bootstraps again.

The weight work runs at once here (the RFC queues it on the completing CPU).
"""
from __future__ import annotations

from ..timing import NSEC_PER_SEC
from .policy import IOPolicy, path_is_disabled, state_is_live
from .registry import register

DEFAULT_WEIGHT_TIMEOUT_NS = 15 * NSEC_PER_SEC
DEFAULT_EWMA_SHIFT = 3


class _Stat:
    """struct nvme_path_aggr_stat: one path, one node, one direction."""
    __slots__ = ("batch", "batch_count", "slat_ns", "last_weight_ts", "weight", "score", "nr_samples",
                 "nr_ignored", "sel")

    def __init__(self):
        self.batch = self.batch_count = self.slat_ns = self.last_weight_ts = 0
        self.weight = self.score = self.nr_samples = self.nr_ignored = self.sel = 0


def op_type(io) -> str:
    r = getattr(io, "is_read", None)
    return "other" if r is None else ("read" if r else "write")


@register
class Adaptive(IOPolicy):
    name = "adaptive"
    origin = ("PROPOSED, NOT MERGED: linux-nvme RFC PATCHv4/v5 'nvme-multipath: introduce adaptive I/O policy' "
              "(N. Shroff, 2025-11)")

    def __init__(self, head, params=None):
        super().__init__(head, params)
        self.weight_timeout_ns = int(self.params.get("weight_timeout_ns", DEFAULT_WEIGHT_TIMEOUT_NS))
        self.ewma_shift = int(self.params.get("ewma_shift", DEFAULT_EWMA_SHIFT))
        self._stats = {}     # (ns, node, op) -> _Stat
        self._credit = {}    # (ns, cpu, op) -> credit
        self._adp_path = {}  # (nshead, cpu) -> ns

    def stat(self, ns, node, op) -> _Stat:
        key = (ns, node, op)
        st = self._stats.get(key)
        if st is None:
            st = self._stats[key] = _Stat()
        return st

    def find_path(self, nshead, cpu, node, io):
        paths = nshead.paths
        if not paths:
            return None
        op = op_type(io)
        ns = self._adp_path.get((nshead, cpu)) or paths[0]
        n = len(paths)
        while True:
            start = ns
            while path_is_disabled(ns) or not state_is_live(ns.ana_state):
                ns = paths[(paths.index(ns) + 1) % n]
                if ns is start:
                    return None
            st = self.stat(ns, node, op)
            if not st.weight:
                break
            key = (ns, cpu, op)
            credit = self._credit.get(key, 0)
            if credit > 0:
                self._credit[key] = credit - 1
                break
            self._credit[key] = st.weight
            ns = paths[(paths.index(ns) + 1) % n]
        st.sel += 1
        self._adp_path[(nshead, cpu)] = ns
        return ns

    def end_request(self, ns, io, latency_ns, cpu):
        nshead = ns.nshead
        if len(nshead.paths) == 1 or latency_ns <= 0:
            return
        node = self.head.host.node_of_cpu(cpu)
        op = op_type(io)
        st = self.stat(ns, node, op)
        if latency_ns > NSEC_PER_SEC:
            st.nr_ignored += 1
            return
        st.batch += latency_ns
        st.batch_count += 1
        st.nr_samples += 1
        now = self.head.clock()
        if now > st.last_weight_ts:
            if now - st.last_weight_ts < self.weight_timeout_ns:
                return
            st.last_weight_ts = now
            batch, count = st.batch, st.batch_count
            st.batch = st.batch_count = 0
            if not batch or not count:
                return
            avg = batch // count
            if not st.slat_ns:
                st.slat_ns = avg
            else:
                st.slat_ns = (st.slat_ns * ((1 << self.ewma_shift) - 1) + avg) >> self.ewma_shift
            self._update_weights(nshead, node, op)

    def _update_weights(self, nshead, node, op) -> None:
        total = 0
        stats = [self.stat(ns, node, op) for ns in nshead.paths]
        for st in stats:
            st.score = NSEC_PER_SEC // st.slat_ns if st.slat_ns else 0
            total += st.score
        if not total:
            return
        for st in stats:
            st.weight = max(1, st.score * 64 // total)

    def clear_current_path(self, ns):
        for key in [k for k in self._stats if k[0] is ns]:
            del self._stats[key]
        for key in [k for k in self._credit if k[0] is ns]:
            del self._credit[key]

    def weights(self, nshead, node=0, op="read"):
        return {ns.ctrl.name: self.stat(ns, node, op).weight for ns in nshead.paths}

    def status(self) -> str:
        parts = []
        for (ns, node, op), st in sorted(self._stats.items(), key=lambda kv: (kv[0][0].ctrl.index, kv[0][1],
                                                                               kv[0][2])):
            if st.nr_samples:
                parts.append("%s/n%d/%s:slat=%d,w=%d" % (ns.ctrl.name, node, op, st.slat_ns, st.weight))
        return " ".join(parts)
