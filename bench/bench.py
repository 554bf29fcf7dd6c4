#!/usr/bin/env python3
"""mpathlab benchmark: run by hand, prints ratios measured in one run on one machine (rates per CPU-second
of the benchmark's process, so other work on the machine changes them little).

    python bench/bench.py            # full run (a few minutes)
    python bench/bench.py --quick    # smaller counts

Measures
  1. simulated I/Os per second for the 4-path iodepth-64 HST scenario (hst-2020
     topology), with the compiled core and with the pure-Python engine;
  2. the same model written for SimPy (bench/simpy_model.py; `pip install simpy`);
  3. a bare heapq event loop popping and pushing the same number of events (the floor);
  4. select_path + start_io + end_io per I/O for each selector at 2, 8 and 32 paths;
  5. peak memory (max RSS of a fresh process) for 1M and 10M I/O runs;
  6. every shipped scenario, every fault study (sim/faults.py), a 10-path run, a Python
     plug-in selector (examples/my_selector.py), a bssplit + rate_iops job (IoGen) and NVMe runs
     (examples/nvme-vs-dm.toml, an NVMe failover study) and multipathd's loop (run --conf,
     examples/mtools), each in both engines: simulated I/Os per
     second, and the core's rate as a ratio to the Python engine and to the bare heapq floor
     (the heapq loop's rate for that run's events per I/O), with multi-host runs (mpathlab hosts:
     hosts-8x4 with HST and with a Python policy, 64 hosts x 16 ports);
  7. `mpathlab hosts` at scale in a fresh process: 1,000 hosts x 64 ports for 10 and 2 simulated
     seconds (and, without --quick, 250 x 64 and 1,000 x 16): wall and CPU time, peak RSS.
    python bench/bench.py --quick --only "mpathlab hosts"    # just the multi-host rows and 7.
Targets: >= 20x SimPy, within 2x of the bare heapq loop, HST < 2 us per I/O
at 8 paths, memory flat in the number of I/Os; every shipped scenario and fault
study >= 2 M I/Os per second in the core, a Python plug-in selector >= 3x the Python engine,
the 4-path HST scenario (1.) >= 6 M/s.  NVMe runs (numa, queue-depth, a controller-loss study),
multipathd's loop (run --conf) and a multi-host run >= 2 M/s in the core; the 1,000 x 64 run's memory
flat in the number of I/Os.
"""
from __future__ import annotations

import argparse
import heapq
import itertools
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "src"))
sys.path.insert(0, HERE)

from mpathlab import selectors  # noqa: E402
from mpathlab.scenarios import HERE as SCEN  # noqa: E402
from mpathlab.sim import fast  # noqa: E402
from mpathlab.sim.engine import Simulation  # noqa: E402
from mpathlab.workload.fio import parse_fio  # noqa: E402
from mpathlab.topology import load_topology  # noqa: E402

# Rates are per CPU-second of this (single-threaded) process: on a quiet machine that is the wall time, and
# on a busy one (other jobs on the same cores) it still measures the simulator, not the scheduler.
cpu_clock = time.process_time


def scenario(n_ios: int):
    topo = load_topology(os.path.join(SCEN, "hst-2020.toml")).with_selector("historical-service-time")
    # size= as well: as in fio, number_ios only ends a job early, and without size= the job covers the
    # device (512 MiB here, 131072 I/Os)
    jobs = parse_fio("[j]\nrw=randwrite\nbs=4k\niodepth=64\nsize=%d\nnumber_ios=%d\n" % (n_ios * 4096, n_ios)).jobs
    kw = topo.sim_kwargs()
    kw.pop("sched_clock_offset_ns")      # the fixed (ktime) HST
    return topo, jobs, kw


def sim_rate(n_ios: int, engine: str):
    topo, jobs, kw = scenario(n_ios)
    sim = Simulation(topo.table, topo.paths, jobs, engine=engine, **kw)
    t = cpu_clock()
    res = sim.run()
    el = cpu_clock() - t
    res.check_accounting()
    return n_ios / el, res.events, res


def heapq_rate(n_events: int) -> float:
    """Pop and push n_events tuples shaped like the engine's, nothing else."""
    heap = []
    seq = itertools.count()
    for i in range(64):
        heapq.heappush(heap, (i, next(seq), 0, i))
    pop, push = heapq.heappop, heapq.heappush
    t = cpu_clock()
    for _ in range(n_events):
        tm, _, kind, obj = pop(heap)
        push(heap, (tm + 100 + (obj & 7), next(seq), kind, obj))
    return n_events / (cpu_clock() - t)


def selector_cost(name: str, npaths: int, n: int = 100_000, accelerated: bool = False) -> float:
    clock = [10 ** 9]
    ps = selectors.create(name, [], clock=lambda: clock[0], accelerated=accelerated,
                          topology=selectors.CpuTopology(max(8, npaths)))
    paths = ["p%d" % i for i in range(npaths)]
    for i, p in enumerate(paths):
        ps.add_path(p, ["%x" % (1 << i)] if name == "io-affinity" else [])
    depth = 2 * npaths
    ring = [None] * depth
    sel, start, end = ps.select_path, ps.start_io, ps.end_io
    t = cpu_clock()
    for i in range(n):
        clock[0] += 1000
        k = i % depth
        old = ring[k]
        if old is not None:
            end(old[0], 4096, old[1])
        p = sel(4096)
        start(p, 4096)
        ring[k] = (p, clock[0])
    return (cpu_clock() - t) / n * 1e6


def _study(study, selector: str, engine: str):
    table, paths, job, kw = study.build(selector)
    return Simulation(table, paths, parse_fio(job).jobs, engine=engine, **kw)


def _plugin_selector():
    """examples/my_selector.py, registered as a third party would."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("my_selector", os.path.join(HERE, "..", "examples",
                                                                             "my_selector.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    if selectors.get_exact(mod.ShortestQueueTail.name) is None:
        selectors.register(mod.ShortestQueueTail)
    return mod.ShortestQueueTail.name


def core_configs(n_ios: int):
    """(label, build(engine) -> Simulation) for every configuration that runs in the compiled core
    (built as mpathlab.runner.run_simulation builds them; only run() is timed)."""
    from mpathlab.scenarios import SCENARIOS
    from mpathlab.sim.devices import Exponential, PathModel
    from mpathlab.sim.faults import STUDIES
    from mpathlab.workload.fio import load_fio
    cfgs = []
    for sc in SCENARIOS.values():
        for col in sc.columns:
            cfgs.append(("scenario %s [%s]" % (sc.name, col.label),
                         lambda eng, sc=sc, col=col: _scenario_sim(sc, col, eng)))
    for name, st in STUDIES.items():
        cfgs.append(("fault study %s [HST]" % name, lambda eng, st=st: _study(st, "historical-service-time", eng)))
    ten = [PathModel("sd%s" % chr(97 + i), (8, 16 * i), Exponential(100_000 * (1 + i % 3)), parallelism=8)
           for i in range(10)]
    table10 = ("0 2097152 multipath 0 0 1 1 historical-service-time 0 10 1 "
               + " ".join("sd%s 0" % chr(97 + i) for i in range(10)))
    job = "[j]\nrw=randwrite\nbs=4k\niodepth=64\nnumber_ios=%d\n" % n_ios
    cfgs.append(("10 paths, HST, iodepth 64",
                 lambda eng: Simulation(table10, ten, parse_fio(job).jobs, engine=eng)))
    plug = _plugin_selector()
    cfgs.append(("Python plug-in selector (%s), 4 paths" % plug, lambda eng: _scenario_with(plug, n_ios, eng)))
    cfgs.append(("bssplit + rate_iops (sim/arrival.py IoGen), HST, 4 paths", lambda eng: _generator_sim(n_ios, eng)))
    for pol in ("numa", "queue-depth"):
        cfgs.append(("NVMe %s, 2 controllers, 2 namespaces" % pol, lambda eng, pol=pol: _nvme_sim(pol, n_ios, eng)))
    from mpathlab.scenarios.nvme import NVME_STUDIES
    cfgs.append(("NVMe study nvme-controller-loss [round-robin]",
                 lambda eng: _nvme_study(NVME_STUDIES["nvme-controller-loss"], "round-robin", n_ios, eng)))
    cfgs.append(("run --conf: multipathd, ALUA map (examples/mtools)", lambda eng: _daemon_sim(eng)))
    for sel, label in (("historical-service-time", "HST"), ("prequal", "prequal, Python")):
        cfgs.append(("mpathlab hosts: hosts-8x4 (8 hosts x 4 ports) [%s]" % label,
                     lambda eng, sel=sel: _hosts_sim(sel, 8, None, n_ios, eng)))
    cfgs.append(("mpathlab hosts: 64 hosts x 16 ports, iodepth 8 [ST]",
                 lambda eng: _hosts_sim("service-time", 64, 16, n_ios, eng)))
    return cfgs


def _daemon_sim(engine: str):
    """`mpathlab run --conf examples/mtools/multipath.conf examples/mtools/alua-paths.toml` with multipathd's
    loop (as mtools/run.py simulate_conf builds it): 80 simulated seconds, so the link loss at 10 s, its
    return at 40 s and the ALUA change at 70 s (three table reloads) are in the run; iodepth 4."""
    from mpathlab.mtools.conf import parse_conf
    from mpathlab.mtools.daemon import Multipathd
    from mpathlab.mtools.paths import load_path_topology
    from mpathlab.mtools.run import discover
    ex = os.path.join(HERE, "..", "examples", "mtools")
    with open(os.path.join(ex, "multipath.conf")) as f:
        conf = parse_conf(f.read())
    topo = load_path_topology(os.path.join(ex, "alua-paths.toml"))
    maps, _, env = discover(conf, topo)
    mp = maps[0]
    jobs = parse_fio("[j]\nrw=randread\nbs=4k\nioengine=libaio\niodepth=4\nruntime=80s\ntime_based\n").jobs
    sim = Simulation(mp.table_line(), [pp.path.model for pp in mp.paths], jobs, engine=engine, **topo.sim)
    sim.add_daemon(Multipathd(mp, conf.checkint(), conf.max_checkint(), env=env, topology=topo))
    return sim


def _nvme_sim(policy: str, n_ios: int, engine: str):
    """examples/nvme-vs-dm.toml as `mpathlab run --selector nvme:POLICY` builds it (nvme/run.py)."""
    from mpathlab.nvme.run import nvme_simulation
    topo = load_topology(os.path.join(HERE, "..", "examples", "nvme-vs-dm.toml"))
    jobs = parse_fio("[j]\nrw=randread\nbs=4k\nioengine=libaio\niodepth=32\nnumjobs=4\nnumber_ios=%d\n"
                     % (n_ios // 4))
    return nvme_simulation(topo, jobs, policy=policy, engine=engine)


def _nvme_study(study, policy: str, n_ios: int, engine: str):
    """An NVMe failover study (scenarios/nvme.py): a controller's link fails and comes back, with the run
    stretched to about n_ios I/Os (about 75 k I/Os per simulated second at iodepth 2 x 32)."""
    from mpathlab.nvme.run import nvme_simulation
    job = parse_fio("[j]\nrw=randread\nbs=4k\nioengine=libaio\niodepth=32\nnumjobs=2\nruntime=%dms\ntime_based\n"
                    % max(150, n_ios // 75))
    return nvme_simulation(study.topology(), job, policy=policy, engine=engine, window_ns=10 ** 6)


def _hosts_sim(selector: str, hosts: int, ports, n_ios: int, engine: str):
    """A multi-host run (mpathlab.multihost) on the shipped hosts-8x4 topology, or on PORTS copies of its
    port pB; every host's job is that scenario's job, sized so that all hosts together do about n_ios."""
    import copy
    from mpathlab.multihost import MultiHostSimulation, load_multihost
    from mpathlab.sim.devices import PathModel
    topo, cfg = load_multihost(os.path.join(SCEN, "hosts-8x4.toml"))
    depth = 4
    if ports:
        pb = topo.paths[1]
        paths = [PathModel("p%d" % i, (8, 16 * i), pb.service, parallelism=pb.parallelism) for i in range(ports)]
        table = ("0 1048576 multipath 0 0 1 1 service-time 0 %d 1 " % ports
                 + " ".join("p%d 1" % i for i in range(ports)))
        topo = copy.copy(topo)
        topo.table, topo.paths = table, paths
        depth = 8
    topo = topo.with_selector(selector)
    kw = topo.sim_kwargs()
    kw.pop("messages", None)
    jobs = parse_fio("[host]\nrw=randread\nbs=4k\nioengine=libaio\niodepth=%d\nnumber_ios=%d\n"
                     % (depth, max(1, n_ios // hosts))).jobs
    return MultiHostSimulation(topo.table, topo.paths, jobs, hosts=hosts, window_ns=cfg.window_ns, engine=engine, **kw)


def _generator_sim(n_ios: int, engine: str):
    """A job with an IoGen (sim/arrival.py): mixed sizes drawn by bssplit, submissions paced by rate_iops."""
    topo, _, kw = scenario(n_ios)
    # rate_iops paces the bytes (rate_iops x the smallest size, as fio): the two clones complete about
    # 18 k I/Os per simulated second on this topology, so the runtime gives about n_ios I/Os
    jobs = parse_fio("[j]\nrw=randrw\nrwmixread=70\nbssplit=4k/60:16k/25:64k/10:256k/5\nrate_iops=40000\n"
                     "iodepth=64\nnumjobs=2\nruntime=%dms\ntime_based\n" % max(100, n_ios // 18)).jobs
    return Simulation(topo.table, topo.paths, jobs, engine=engine, **kw)


def _scenario_with(selector: str, n_ios: int, engine: str):
    topo, jobs, kw = scenario(n_ios)
    topo = topo.with_selector(selector, [])
    return Simulation(topo.table, topo.paths, jobs, engine=engine, **kw)


def _scenario_sim(sc, col, engine: str):
    from mpathlab.runner import parse_selector_spec
    from mpathlab.workload.fio import load_fio
    name, args = parse_selector_spec(col.selector)
    topo = load_topology(sc.topology).with_selector(name, args)
    kw = dict(topo.sim_kwargs(), **{k: v for k, v in col.overrides.items() if v is not None})
    return Simulation(topo.table, topo.paths, load_fio(sc.job).jobs, engine=engine, **kw)


def core_table(n_ios: int, heap_events_per_s: float, only: str = "") -> dict:
    out = {}
    print("%-58s %11s %11s %8s %8s  %s" % ("configuration", "core IO/s", "Python IO/s", "x Python", "x heapq",
                                           "engine"))
    for label, run in core_configs(n_ios):
        if only not in label:
            continue
        rates = {}
        res = None
        for eng in ("compiled", "python"):
            sim = run(eng)
            t = cpu_clock()
            try:
                res = sim.run()
            except ValueError:          # the core refuses it: eligible() says why
                rates[eng] = None
                continue
            rates[eng] = res.completed / (cpu_clock() - t)
            if eng == "compiled":
                events_per_io = res.events / max(1, res.completed)
        core, py = rates["compiled"], rates["python"]
        floor = heap_events_per_s / events_per_io if core else None
        out[label] = {"compiled_ios_per_s": core, "python_ios_per_s": py,
                      "ratio_vs_python": core / py if core and py else None,
                      "ratio_vs_heapq": core / floor if core and floor else None}
        print("%-58s %11s %11.0f %8s %8s  %s" % (
            label[:58], "%.0f" % core if core else "-", py, "%.1fx" % (core / py) if core else "-",
            "%.2fx" % (core / floor) if core else "-", "compiled" if core else "falls back"))
    return out


def hosts_at_scale(hosts: int, ports: int, runtime: str, tmp: str) -> dict:
    """`mpathlab hosts` (service-time, one seed) on scripts/hosts_topology.py's topology of HOSTS x PORTS with
    every host at iodepth 8 for RUNTIME, in a fresh process: its wall and CPU time (the CPU time is the figure
    that holds on a loaded machine), peak RSS and I/O count."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("hosts_topology", os.path.join(HERE, "..", "scripts",
                                                                                 "hosts_topology.py"))
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)  # type: ignore[union-attr]
    topo = os.path.join(tmp, "hosts-%dx%d.toml" % (hosts, ports))
    with open(topo, "w") as f:
        f.write(gen.topology(hosts, ports))
    job = os.path.join(tmp, "hosts-%s.fio" % runtime)
    with open(job, "w") as f:
        f.write("[host]\nioengine=libaio\nrw=randread\nbs=4k\niodepth=8\nruntime=%s\ntime_based\n" % runtime)
    cmd = [sys.executable, "-m", "mpathlab", "hosts", topo, job, "--selectors", "service-time", "--seeds", "1",
           "--no-progress"]
    t = time.perf_counter()
    src = os.path.join(HERE, "..", "src")
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=dict(os.environ, PYTHONPATH=src))
    out = p.stdout.read()   # type: ignore[union-attr]
    _, status, usage = os.wait4(p.pid, 0)
    el = time.perf_counter() - t
    if status:
        raise RuntimeError("mpathlab hosts failed: %s" % " ".join(cmd))
    ios = int(out.split("service-time: ", 1)[1].split(" I/Os", 1)[0])
    return {"hosts": hosts, "ports": ports, "runtime": runtime, "ios": ios, "seconds": el,
            "cpu_seconds": usage.ru_utime + usage.ru_stime, "peak_rss_kib": usage.ru_maxrss}


def hosts_section(quick: bool) -> list:
    print("\n== mpathlab hosts at scale (service-time, one seed, iodepth 8 per host; a fresh process each)")
    import tempfile
    rows = []
    # the headline run; 2 s of it (memory flat in the I/O count); a quarter of the hosts, of the ports
    sizes = [(1000, 64, "10s"), (1000, 64, "2s")] + ([] if quick else [(250, 64, "10s"), (1000, 16, "10s")])
    with tempfile.TemporaryDirectory() as tmp:
        for h, p, rt in sizes:
            r = hosts_at_scale(h, p, rt, tmp)
            rows.append(r)
            print("%5d hosts x %2d ports, %4s: %9d I/Os in %5.1f s wall, %5.1f s CPU (%.2f M I/Os per CPU-second), "
                  "peak RSS %4d MiB" % (h, p, rt, r["ios"], r["seconds"], r["cpu_seconds"],
                                        r["ios"] / r["cpu_seconds"] / 1e6, r["peak_rss_kib"] // 1024))
    return rows


def rss_of_run(n_ios: int, engine: str) -> int:
    code = ("import sys,resource; sys.path.insert(0,%r); sys.path.insert(0,%r); import bench; "
            "bench.sim_rate(%d, %r); print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)"
            % (os.path.join(HERE, "..", "src"), HERE, n_ios, engine))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return int(out.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--only", metavar="TEXT", help="only the core runs whose label contains TEXT (with 'hosts': "
                                                     "and the runs at scale), e.g. --only 'mpathlab hosts'")
    a = ap.parse_args()
    n_fast = 200_000 if a.quick else 1_000_000
    n_py = 50_000 if a.quick else 200_000
    n_simpy = 20_000 if a.quick else 100_000
    out = {}
    if a.only:
        print("== the runs in the core whose label contains %r (one run; rates in simulated I/Os per second)" % a.only)
        out["core_runs"] = core_table(n_py, heapq_rate(n_py * 4), a.only)
        if "hosts" in a.only:
            out["hosts_at_scale"] = hosts_section(a.quick)
        if a.json:
            print(json.dumps(out, indent=2))
        return

    print("== simulator: 4 paths, iodepth 64, historical-service-time, 4k randwrite")
    if fast.available():
        r_fast, ev_fast, _ = sim_rate(n_fast, "compiled")
        out["compiled_ios_per_s"] = r_fast
        print("compiled core     %12.0f IOs/s  (%d IOs, %.2f events/IO)" % (r_fast, n_fast, ev_fast / n_fast))
    else:
        r_fast = None
        print("compiled core     not built (python setup.py build_ext --inplace)")
    r_py, ev_py, _ = sim_rate(n_py, "python")
    out["python_ios_per_s"] = r_py
    print("pure Python       %12.0f IOs/s  (%d IOs)" % (r_py, n_py))
    events_per_io = ev_py / n_py

    try:
        import simpy_model
        r_simpy = simpy_model.rate(n_simpy)
        out["simpy_ios_per_s"] = r_simpy
        print("SimPy model       %12.0f IOs/s  (%d IOs)" % (r_simpy, n_simpy))
    except ImportError:
        r_simpy = None
        print("SimPy model       skipped (pip install simpy)")

    n_ev = int(n_py * events_per_io)
    r_heap = heapq_rate(n_ev) / events_per_io
    out["heapq_floor_ios_per_s"] = r_heap
    print("bare heapq loop   %12.0f IOs/s  (%d events = the engine's events for %d IOs)" % (r_heap, n_ev, n_py))
    best = r_fast or r_py
    if r_simpy:
        print("ratio vs SimPy:        compiled %.1fx, pure Python %.1fx   (target >= 20x)"
              % ((r_fast or 0) / r_simpy, r_py / r_simpy))
    print("ratio vs heapq floor:  compiled %.2fx, pure Python %.2fx   (target >= 0.5x, i.e. within 2x)"
          % ((r_fast or 0) / r_heap, r_py / r_heap))
    out["ratio_vs_simpy"] = best / r_simpy if r_simpy else None
    out["ratio_vs_heapq"] = best / r_heap

    print("\n== select_path + start_io + end_io, us per I/O (pure Python reference)")
    out["selector_us"] = {}
    names = ["round-robin", "queue-length", "service-time", "historical-service-time", "io-affinity"]
    print("%-28s %8s %8s %8s" % ("selector", "2", "8", "32"))
    for name in names:
        row = [selector_cost(name, n) for n in (2, 8, 32)]
        out["selector_us"][name] = row
        print("%-28s %8.2f %8.2f %8.2f" % ((name,) + tuple(row)))
    from mpathlab.selectors import accelerated
    if accelerated.available():
        row = [selector_cost("historical-service-time", n, accelerated=True) for n in (2, 8, 32)]
        out["selector_us"]["historical-service-time (accelerated)"] = row
        print("%-28s %8.2f %8.2f %8.2f   (target < 2 us at 8)" % (("hst, accelerated",) + tuple(row)))

    print("\n== every run in the core (one run; rates in simulated I/Os per second)")
    out["core_runs"] = core_table(n_py, heapq_rate(n_py * 4))

    out["hosts_at_scale"] = hosts_section(a.quick)

    print("\n== peak memory (max RSS of a fresh process)")
    eng = "compiled" if fast.available() else "python"
    small, large = (100_000, 1_000_000) if a.quick else (1_000_000, 10_000_000)
    rs, rl = rss_of_run(small, eng), rss_of_run(large, eng)
    out["rss_kib"] = {str(small): rs, str(large): rl}
    print("%s engine: %d IOs -> %d KiB, %d IOs -> %d KiB (x%.2f for 10x the I/Os)"
          % (eng, small, rs, large, rl, rl / rs))
    if eng != "python":
        ps_, pl_ = (20_000, 200_000) if a.quick else (100_000, 1_000_000)
        rps, rpl = rss_of_run(ps_, "python"), rss_of_run(pl_, "python")
        out["rss_kib_python"] = {str(ps_): rps, str(pl_): rpl}
        print("python engine: %d IOs -> %d KiB, %d IOs -> %d KiB (x%.2f for 10x the I/Os)"
              % (ps_, rps, pl_, rpl, rpl / rps))
    if a.json:
        print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
