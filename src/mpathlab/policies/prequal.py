"""prequal: the hot-cold rule of Prequal.

Wydrowski, Kleinberg, Rumble, Archer, "Load is not what you should balance:
Introducing Prequal", NSDI 2024.  Prequal probes servers for requests in
flight (RIF) and estimated latency, calls a server *hot* when its RIF is above
the Q_RIF quantile of the RIF values it has seen recently, and picks the
lowest-latency cold server, or the lowest-RIF one if all are hot.

Here a host knows its own paths, so the "probe" of a path is its local state:
RIF = the path's outstanding I/Os, latency = an EWMA (weight 2^-shift) of its
per-I/O latency (a path with no completion yet counts 0, so it is tried; so
does an idle path that is stale by HST's rule, nothing completed for
number-of-valid-paths x its mean latency: Prequal's probes keep refreshing
servers it does not pick, and this keeps a local estimate from going stale).
The quantile is taken over the last ``window`` RIF values seen (each
selection records every valid path's RIF after choosing), nearest rank:
the value at position ceil(q * n) - 1 of the sorted window.  Before anything
is recorded every path is cold.  Ties: lower RIF, then list order; the winner
moves to the tail.

Table: ``prequal <#args> [<q_rif_percent> [<shift> [<window>]]]``, defaults
80, 3, 64.
"""
from __future__ import annotations

import math
from collections import deque

from ._common import PolicySelector, parse_u32_arg


class Prequal(PolicySelector):
    name = "prequal"
    version = "0.1.0"
    max_args = 3

    def __init__(self, args=(), **env):
        super().__init__(args, **env)
        a = self.args
        self.q_rif = parse_u32_arg(self.name, "q_rif_percent", a[0], 0, 100) if len(a) > 0 else 80
        self.shift = parse_u32_arg(self.name, "shift", a[1], 0, 16) if len(a) > 1 else 3
        self.window = parse_u32_arg(self.name, "window", a[2], 1, 1 << 20) if len(a) > 2 else 64
        self.recent = deque(maxlen=self.window)

    def threshold(self):
        """The Q_RIF quantile of the recent RIF values (None: nothing seen yet)."""
        if not self.recent:
            return None
        s = sorted(self.recent)
        return s[max(0, math.ceil(self.q_rif / 100.0 * len(s)) - 1)]

    def select_path(self, nr_bytes=0):
        valid = self._valid
        if not valid:
            return None
        thr = self.threshold()
        now = self.clock()
        cold = [pi for pi in valid if thr is None or pi.outstanding <= thr]
        if cold:
            best = min(cold, key=lambda pi: (0.0 if self.is_stale(pi, now) else pi.est, pi.outstanding))
        else:
            best = min(valid, key=lambda pi: pi.outstanding)
        path = self._choose(best)
        self.recent.extend(pi.outstanding for pi in valid)
        return path

    def end_io(self, path, nr_bytes, start_time_ns):
        super().end_io(path, nr_bytes, start_time_ns)
        pi = self._info[path]
        lat = max(0, self.clock() - start_time_ns)
        pi.est = lat if pi.samples == 1 else pi.est + (lat - pi.est) / (1 << self.shift)
