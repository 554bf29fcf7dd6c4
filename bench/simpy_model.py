"""The benchmark's 4-path iodepth-64 HST model written for SimPy.

Same paths (hst-2020 topology), same workload, same multipath target and
selector objects as the mpathlab engine; only the event machinery differs:
each I/O is a SimPy process, each device a simpy.Resource.
"""
from __future__ import annotations

import os
import random
import time

import simpy

from mpathlab.scenarios import HERE as SCEN
from mpathlab.target import MAP_REMAPPED, MpathIO, construct, split_table_line
from mpathlab.timing import TimeBase
from mpathlab.topology import load_topology


def rate(n_ios: int, iodepth: int = 64, seed: int = 1) -> float:
    topo = load_topology(os.path.join(SCEN, "hst-2020.toml")).with_selector("historical-service-time")
    env = simpy.Environment()
    base = topo.uptime_ns
    ktime = lambda: base + int(env.now)  # noqa: E731
    mp = construct(split_table_line(topo.table).params, resolve_device=topo.resolver(),
                   selector_env={"clock": ktime}, timebase=TimeBase(ktime))
    rng = random.Random(seed)
    models = {p.devt: p for p in topo.paths}
    res = {devt: simpy.Resource(env, capacity=m.parallelism) for devt, m in models.items()}
    samplers = {devt: m.service.sampler(random.Random(rng.getrandbits(64))) for devt, m in models.items()}
    state = {"left": n_ios, "done": 0}

    def io_process():
        io = MpathIO(4096)
        assert mp.map(io) == MAP_REMAPPED
        devt = io.pgpath.dev.devt
        m = models[devt]
        if m.delay_ns:
            yield env.timeout(m.delay_ns)
        with res[devt].request() as req:
            yield req
            yield env.timeout(max(1, int(samplers[devt]())))
        mp.end_io(io)
        state["done"] += 1
        if state["left"] > 0:
            state["left"] -= 1
            env.process(io_process())

    for _ in range(min(iodepth, n_ios)):
        state["left"] -= 1
        env.process(io_process())
    t = time.perf_counter()
    env.run()
    el = time.perf_counter() - t
    assert state["done"] == n_ios
    return n_ios / el
