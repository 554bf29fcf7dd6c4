"""peak-ewma: Peak-EWMA latency x (outstanding + 1).

The load metric of Twitter's Finagle (PeakEwma.scala), Linkerd and tower
(tower/src/load/peak_ewma.rs): each path keeps a latency estimate ``est``
(ns) and the time it was last updated.

- a completion with latency ``rtt`` above the estimate sets ``est = rtt`` at
  once (fast rise: the worst recent latency counts);
- a lower ``rtt`` pulls it down with a weight that depends on the time since
  the last update: ``w = exp(-elapsed / decay)``, ``est = est*w + rtt*(1-w)``
  (time-decayed fall);
- reading a path's load first decays its estimate toward 0 the same way (an
  update with rtt 0), as tower's ``load()`` does, so a path that stopped
  answering fast is tried again after a while;
- load = est x (outstanding + 1); a new path starts at ``default_rtt``.

Selection: with ``choices`` = 2 (default, as tower's and Linkerd's balancers
use it) two distinct valid paths are drawn from the seeded stream and only
those two loads are read; the lower wins, the first drawn on a tie.  With
``choices`` = 0 every valid path is read and the lowest load wins (ties: list
order, the winner moves to the tail).

Table: ``peak-ewma <#args> [<decay_us> [<default_rtt_us> [<choices>]]]``,
defaults 10000 us (10 ms: Finagle's and Linkerd's 10 s decay is meant for
RPCs, storage latencies are ~1000x shorter), 1000 us, 2.
"""
from __future__ import annotations

import math

from ._common import PolicySelector, SelectorError, parse_u32_arg


class PeakEwma(PolicySelector):
    name = "peak-ewma"
    version = "0.1.0"
    max_args = 3

    def __init__(self, args=(), **env):
        super().__init__(args, **env)
        a = self.args
        self.decay_ns = parse_u32_arg(self.name, "decay_us", a[0], 1) * 1000 if len(a) > 0 else 10_000_000
        self.default_rtt_ns = parse_u32_arg(self.name, "default_rtt_us", a[1], 1) * 1000 if len(a) > 1 else 1_000_000
        self.choices = parse_u32_arg(self.name, "choices", a[2]) if len(a) > 2 else 2
        if self.choices not in (0, 2):
            raise SelectorError("peak-ewma ps: invalid choices", detail="choices must be 0 or 2")

    def add_path(self, path, args=()):
        super().add_path(path, args)
        pi = self._info[path]
        pi.est = float(self.default_rtt_ns)
        pi.est_at = self.clock()

    def _update(self, pi, rtt: float, now: int) -> None:
        if pi.est < rtt:
            pi.est = rtt
        else:
            w = math.exp(-max(0, now - pi.est_at) / self.decay_ns)
            pi.est = pi.est * w + rtt * (1.0 - w)
        pi.est_at = now

    def load(self, pi, now: int) -> float:
        self._update(pi, 0.0, now)
        return pi.est * (pi.outstanding + 1)

    def select_path(self, nr_bytes=0):
        valid = self._valid
        if not valid:
            return None
        now = self.clock()
        if self.choices == 2 and len(valid) > 1:
            n = len(valid)
            i = self.rng.randrange(n)
            j = self.rng.randrange(n - 1)
            if j >= i:
                j += 1
            a, b = valid[i], valid[j]
            return self._choose(b if self.load(b, now) < self.load(a, now) else a)
        best = valid[0]
        best_l = self.load(best, now)
        for pi in valid[1:]:
            l = self.load(pi, now)
            if l < best_l:
                best, best_l = pi, l
        return self._choose(best)

    def end_io(self, path, nr_bytes, start_time_ns):
        super().end_io(path, nr_bytes, start_time_ns)
        now = self.clock()
        self._update(self._info[path], float(max(0, now - start_time_ns)), now)
