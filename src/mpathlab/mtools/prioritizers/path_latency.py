"""path_latency: a priority from the measured read latency (prioritizers/path_latency.c).

``prio_args`` is "io_num=N base_num=B" (20 <= N <= 200, 1.1 <= B <= 10; otherwise both
fall back to 100 and 10**(1/4)).  N reads of one block are timed in whole
microseconds; the mean of log_B(latency) (reads of 0 us add nothing but still count
in N) gives prio = log_B(100 s) - mean, clamped to [0, log_B(100 s) - log_B(1 us)],
truncated to an int.  Here each read's latency is drawn from the path's simulated
device model (its fixed delay plus a service time for 4 KiB), from the simulation's
seeded stream.
"""
import math

from . import Prioritizer, register

MAX_AVG_LATENCY_US = 100000000.0
MIN_AVG_LATENCY_US = 1.0
DEF_IO_NUM = 100
DEF_BASE_NUM = 1.77827941004


def parse_args(args: str):
    io_num = base = None
    words = (args or "").split()
    for w in words[:2]:
        if w.startswith("io_num=") and len(w) > 7:
            try:
                io_num = int(w[7:])
            except ValueError:
                return DEF_IO_NUM, DEF_BASE_NUM
        elif w.startswith("base_num=") and len(w) > 9:
            try:
                base = float(w[9:])
            except ValueError:
                return DEF_IO_NUM, DEF_BASE_NUM
    if io_num is None or base is None or not 20 <= io_num <= 200 or not 1.1 <= base <= 10:
        return DEF_IO_NUM, DEF_BASE_NUM
    return io_num, base


def prio_from_latencies_us(lat_us, base: float) -> int:
    """The prioritizer's arithmetic on N latencies in whole us."""
    lg_base = math.log(base)
    lg_max = math.log(MAX_AVG_LATENCY_US) / lg_base
    lg_min = math.log(MIN_AVG_LATENCY_US) / lg_base
    total = 0.0
    for d in lat_us:
        if d == 0:
            continue
        total += math.log(d) / lg_base
    avg = total / len(lat_us)
    if avg > lg_max:
        return 0
    if avg <= lg_min:
        return int(lg_max - lg_min)
    if avg >= lg_max:
        return 0
    return int(lg_max - avg)


@register
class PathLatency(Prioritizer):
    name = "path_latency"

    def getprio(self, path, args, env):
        if path.link_down or env.read_latency_ns is None:
            return -1
        io_num, base = parse_args(args)
        lat = [int(env.read_latency_ns(path)) // 1000 for _ in range(io_num)]
        return prio_from_latencies_us(lat, base)
