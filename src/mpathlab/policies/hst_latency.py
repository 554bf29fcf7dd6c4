"""hst-latency: historical-service-time fed with each I/O's own latency.

Stock HST (dm-historical-service-time) measures a completion as
``now - max(start, last_finish)``: "pretend the submission happened
serially".  On a path whose device serves many I/Os at once that sample is
the gap between two completions, about service time / outstanding, so the
busier a path is the smaller its EMA gets, and its estimate
``(1 + outstanding) * hst`` stays near one service time however much is
piled on it: nothing pushes load away from a busy path (docs/scenarios.md,
"Why HST herds").

This variant changes one line of the model: the sample is ``now - start``,
the I/O's own latency.  The estimate ``(1 + outstanding) * hst`` then grows
with the load on any kind of device.  Everything else is stock HST and is
inherited unchanged: the fixed-point EMA and its size-dependent weights, the
threshold rule, idle/stale probing, "a stale winner is limited to equal
usage", the 1024-in-flight guard, the arguments and the status lines.

Table: as historical-service-time, ``hst-latency <#args> [<base_weight>
[<threshold_multiplier>]]``.
"""
from __future__ import annotations

from ..kernel import U64
from ..selectors.historical_service_time import (HST_BUCKET_SHIFT, HST_FIXED_1, HST_FIXED_MAX, HST_FIXED_SHIFT,
                                                 HST_WEIGHT_COUNT, HistoricalServiceTime)

_S64_SIGN = 1 << 63


class HstLatency(HistoricalServiceTime):
    name = "hst-latency"
    version = "0.1.0"

    def __init__(self, args=(), *, rng=None, **env):
        super().__init__(args, **env)

    def end_io(self, path, nr_bytes, start_time_ns):
        pi = self._info[path]
        now = self.clock() & U64
        d = (now - (start_time_ns & U64)) & U64
        st = 0 if d & _S64_SIGN else d          # the I/O's own latency, never serialised
        pi.last_finish = now
        pi.outstanding = (pi.outstanding - 1) & U64
        sample = min((st << HST_FIXED_SHIFT) & U64, HST_FIXED_MAX)
        bucket = min(st >> HST_BUCKET_SHIFT, HST_WEIGHT_COUNT - 1)
        weight = self.weights[bucket]
        hst = (((pi.hst * weight) & U64) + sample * (HST_FIXED_1 - weight)) & U64
        pi.hst = ((hst + (1 << (HST_FIXED_SHIFT - 1))) & U64) >> HST_FIXED_SHIFT
        pi.stale_after = (now + (self.valid_count & U64) * (pi.hst >> HST_FIXED_SHIFT)) & U64
