"""p2c: power of two choices.

Mitzenmacher, "The Power of Two Choices in Randomized Load Balancing"
(IEEE TPDS 12(10), 2001); the selection step of Finagle's and tower's
balancers.  Draw two distinct valid paths uniformly at random, send the I/O
to the one with the lower load, the first drawn on a tie.

Table: ``p2c <#args> [<metric>]``, metric ``ql`` (default: outstanding I/Os)
or ``delay``: (1 + outstanding) x the path's mean latency, an EWMA of
per-I/O latency with weight 1/8 (a path with no completion yet counts 0, so
it is tried).  The draws come from the simulator's seeded stream.
"""
from __future__ import annotations

from ._common import PolicySelector, SelectorError

EWMA_SHIFT = 3


class PowerOfTwoChoices(PolicySelector):
    name = "p2c"
    version = "0.1.0"
    max_args = 1

    def __init__(self, args=(), **env):
        super().__init__(args, **env)
        self.metric = self.args[0] if self.args else "ql"
        if self.metric not in ("ql", "delay"):
            raise SelectorError("p2c ps: invalid metric", detail="metric must be ql or delay, got %r" % self.metric)

    def load(self, pi) -> float:
        if self.metric == "ql":
            return pi.outstanding
        return (1 + pi.outstanding) * pi.est

    def select_path(self, nr_bytes=0):
        valid = self._valid
        if not valid:
            return None
        if len(valid) == 1:
            return self._choose(valid[0])
        n = len(valid)
        i = self.rng.randrange(n)
        j = self.rng.randrange(n - 1)
        if j >= i:
            j += 1
        a, b = valid[i], valid[j]
        return self._choose(b if self.load(b) < self.load(a) else a)

    def end_io(self, path, nr_bytes, start_time_ns):
        super().end_io(path, nr_bytes, start_time_ns)
        pi = self._info[path]
        lat = max(0, self.clock() - start_time_ns)
        pi.est = lat if pi.samples == 1 else pi.est + (lat - pi.est) / (1 << EWMA_SHIFT)
