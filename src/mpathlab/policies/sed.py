"""sed: shortest expected delay, with each path's service rate learned online.

The queueing rule "join the server where the job would finish first"
(SED; Whitt, "Deciding which queue to join", Oper. Res. Letters 1986; LVS's
``sed`` scheduler uses (active + 1) / weight with a static weight).  Here the
weight is learned and the rule is size-aware: a path's rate is an EWMA (weight
2^-shift) of per-I/O transfer rates nr_bytes / latency, in bytes/s, and the
expected delay of an I/O of nr_bytes on a path is

    (in_flight_size + nr_bytes) / rate

the time to move what is already in flight plus this I/O at the learned rate.
The path with the smallest expected delay wins; ties go to the first in list
order, and the winner moves to the tail.  A path with no completion yet has
no rate and is chosen first (so every path gets measured); so is an idle path
that is stale by HST's rule (nothing completed for number-of-valid-paths x
its mean latency), so a rate that turned pessimistic gets measured again.

Why per-I/O rates and not completed bytes per unit of busy time: on a device
that serves many I/Os at once the busy-time throughput grows with the load
put on it, so a loaded path looks fast and draws more load; that is HST's
herding (docs/scenarios.md, "Why HST herds"), and this policy is built to avoid it.

Table: ``sed <#args> [<shift>]``, shift 0-16, default 3 (weight 1/8).
INFO status per path: outstanding, rate in bytes/s.
"""
from __future__ import annotations

from ._common import PolicySelector, parse_u32_arg

NS_PER_S = 1_000_000_000


class ShortestExpectedDelay(PolicySelector):
    name = "sed"
    version = "0.1.0"
    max_args = 1

    def __init__(self, args=(), **env):
        super().__init__(args, **env)
        self.shift = parse_u32_arg(self.name, "shift", self.args[0], 0, 16) if self.args else 3

    def expected_delay_ns(self, pi, nr_bytes: int, now: int) -> float:
        if pi.est <= 0 or self.is_stale(pi, now):
            return -1.0  # never measured, or due for a probe: try it first
        return (pi.in_flight_size + nr_bytes) * NS_PER_S / pi.est

    def select_path(self, nr_bytes=0):
        valid = self._valid
        if not valid:
            return None
        now = self.clock()
        best = valid[0]
        best_d = self.expected_delay_ns(best, nr_bytes, now)
        for pi in valid[1:]:
            d = self.expected_delay_ns(pi, nr_bytes, now)
            if d < best_d:
                best, best_d = pi, d
        return self._choose(best)

    def end_io(self, path, nr_bytes, start_time_ns):
        super().end_io(path, nr_bytes, start_time_ns)
        pi = self._info[path]
        lat = max(1, self.clock() - start_time_ns)
        rate = nr_bytes * NS_PER_S / lat
        pi.est = rate if pi.samples == 1 else pi.est + (rate - pi.est) / (1 << self.shift)
