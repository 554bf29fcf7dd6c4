"""Adaptive vs queue-depth on the nvme-latency-rfc scenario with the block layer's controller queues and
with a tail on the throttled path: the numbers in README "NVMe native multipath" (issue 12, point (c)).

    .venv/bin/python scripts/nvme_rfc_variants.py          # about 10 minutes on one idle core

Nothing here tunes a policy: every variant changes only the topology or the fio job of the shipped scenario.
"""
import copy
import os
import sys

try:
    import tomllib
except ImportError:                       # Python < 3.11
    import tomli as tomllib

from mpathlab.nvme.run import run_nvme
from mpathlab.scenarios.nvme import HERE, bandwidth_mib
from mpathlab.workload.fio import parse_fio
from mpathlab.topology import topology_from_dict

POLICIES = ("numa", "round-robin", "queue-depth", "adaptive")
with open(os.path.join(HERE, "nvme-latency-rfc.toml"), "rb") as f:
    BASE = tomllib.load(f)
with open(os.path.join(HERE, "nvme-latency-rfc.fio")) as f:
    FIO = f.read()


def queues(depth, nr_hw_queues=None):
    def mod(d):
        for p in d["paths"].values():
            p["hw_queue_depth"] = depth
            if nr_hw_queues:
                p["nr_hw_queues"] = nr_hw_queues
    return mod


def fio(iodepth, runtime="30s"):
    return FIO.replace("iodepth=6", "iodepth=%d" % iodepth).replace("runtime=30s", "runtime=" + runtime)


def slow_tail(service):
    def mod(d):
        s = d["paths"]["slow"]
        s.update(delay="0us", service=service, parallelism=1000)
    return mod


def bandwidth_cap(d):
    d["paths"]["slow"].update(service="1250us", parallelism=1)     # 64 KiB per 1.25 ms: 50 MiB/s


VARIANTS = [
    ("as shipped (iodepth 6 x 4 jobs, no tag limit)", None, fio(6), (1,)),
    ("per-CPU queues of 128 (nvme-tcp queue_size)", queues(128), fio(6), (1,)),
    ("iodepth 64, per-CPU queues of 128", queues(128), fio(64, "10s"), (1,)),
    ("iodepth 64, one I/O queue of 128 per controller", queues(128, 1), fio(64, "10s"), (1,)),
    ("iodepth 128, one I/O queue of 128 per controller", queues(128, 1), fio(128, "10s"), (1,)),
    ("iodepth 256, per-CPU queues of 128", queues(128), fio(256, "10s"), (1,)),
    ("iodepth 256, per-CPU queues of 32", queues(32), fio(256, "10s"), (1, 2, 3)),
    ("iodepth 256, no tag limit", None, fio(256, "10s"), (1,)),
    ("slow path exponential, mean 30.1 ms", slow_tail({"dist": "exponential", "mean": "30100us"}), fio(6),
     (1, 2, 3, 4, 5)),
    ("slow path lognormal sigma 1, mean 30.1 ms", slow_tail({"dist": "lognormal", "mean": "30100us", "sigma": 1.0}),
     fio(6), (1,)),
    ("slow path 30 ms + a 50 MiB/s bandwidth cap", bandwidth_cap, fio(6), (1,)),
]


def main():
    print("%-50s %s  adaptive/queue-depth" % ("variant (MiB/s, mean over seeds)", " ".join("%12s" % p for p in POLICIES)))
    for name, mod, job, seeds in VARIANTS:
        d = copy.deepcopy(BASE)
        if mod:
            mod(d)
        topo = topology_from_dict(d, name)
        jobs = parse_fio(job)
        mib = {p: sum(bandwidth_mib(run_nvme(topo, jobs, policy=p, seed=s)) for s in seeds) / len(seeds)
               for p in POLICIES}
        print("%-50s %s  %.2f" % (name, " ".join("%12.1f" % mib[p] for p in POLICIES),
                                  mib["adaptive"] / mib["queue-depth"]), flush=True)


if __name__ == "__main__":
    sys.exit(main())
