"""Shipped NVMe scenarios: the latency-policy RFC's table, and NVMe failover studies.

``NVME_SCENARIOS`` join ``mpathlab reproduce``; ``NVME_STUDIES`` join ``mpathlab faults``.
"""
from __future__ import annotations

import os
from typing import Callable, Dict, List, Optional

from ..workload.fio import load_fio, parse_fio
from ..topology import load_topology, topology_from_dict
from ..nvme.run import run_nvme

HERE = os.path.dirname(os.path.abspath(__file__))
MS = 1_000_000
MiB = 1024 * 1024
# Each policy's throughput relative to numa's must be within this fraction of the published ratio,
# and the four policies must come out in the published order.
RATIO_TOLERANCE = 0.25


def bandwidth_mib(res) -> float:
    """Read+write MiB/s over the run, as fio reports it for the group."""
    secs = res.runtime_ns / 1e9 if res.runtime_ns else 0.0
    total = sum(j.bytes_read + j.bytes_written for j in res.jobs)
    return total / MiB / secs if secs else 0.0


class ThroughputScenario:
    """A published table of MiB/s per policy; compared by ratios to the first column, and by order."""

    def __init__(self, name: str, title: str, topology: str, job: str, published: Dict[str, float], source: str,
                 tolerance: float = RATIO_TOLERANCE):
        self.name = name
        self.title = title
        self.topology = os.path.join(HERE, topology)
        self.job = os.path.join(HERE, job)
        self.published = published
        self.source = source
        self.tolerance = tolerance

    def run(self, progress: Optional[Callable[[str, float], None]] = None, seed: Optional[int] = None):
        topo = load_topology(self.topology)
        jobs = load_fio(self.job)
        results = {}
        for pol in self.published:
            cb = (lambda f, _p=pol: progress(_p, f)) if progress else None
            results[pol] = run_nvme(topo, jobs, policy=pol, seed=seed, progress=cb)
        return ThroughputOutcome(self, {p: bandwidth_mib(r) for p, r in results.items()}, results)


class ThroughputOutcome:
    def __init__(self, scenario: ThroughputScenario, mib: Dict[str, float], results):
        self.scenario = scenario
        self.mib = mib
        self.results = results

    def ratios(self) -> Dict[str, float]:
        base = next(iter(self.mib.values()))
        return {p: v / base for p, v in self.mib.items()}

    def published_ratios(self) -> Dict[str, float]:
        base = next(iter(self.scenario.published.values()))
        return {p: v / base for p, v in self.scenario.published.items()}

    def deviations(self) -> Dict[str, float]:
        """Relative difference of each ratio from the published one."""
        pub = self.published_ratios()
        return {p: r / pub[p] - 1.0 for p, r in self.ratios().items()}

    def max_deviation(self) -> float:
        return max(abs(v) for v in self.deviations().values())

    def in_order(self) -> bool:
        want = sorted(self.scenario.published, key=self.scenario.published.get)
        return sorted(self.mib, key=self.mib.get) == want

    def within(self, tol: Optional[float] = None) -> bool:
        tol = self.scenario.tolerance if tol is None or tol < self.scenario.tolerance else tol
        return self.in_order() and self.max_deviation() <= tol + 1e-12

    def as_json(self) -> dict:
        return {"scenario": self.scenario.name, "mib_s": {p: round(v, 3) for p, v in self.mib.items()},
                "published_mib_s": self.scenario.published,
                "ratio_to_first": {p: round(v, 4) for p, v in self.ratios().items()},
                "published_ratio_to_first": {p: round(v, 4) for p, v in self.published_ratios().items()},
                "in_order": self.in_order(), "max_ratio_deviation": round(self.max_deviation(), 4),
                "tolerance": self.scenario.tolerance}

    def format(self) -> str:
        sc = self.scenario
        lines = ["%s: %s" % (sc.name, sc.title),
                 "MiB/s per iopolicy; in brackets the published value (%s)" % sc.source]
        pub_r = self.published_ratios()
        dev = self.deviations()
        lines.append("| iopolicy | MiB/s | ratio to %s | published ratio | difference |" % next(iter(sc.published)))
        lines.append("|---|---|---|---|---|")
        for p, v in self.mib.items():
            lines.append("| %s | %.1f (%g) | %.2f | %.2f | %+.0f%% |" % (p, v, sc.published[p], self.ratios()[p],
                                                                     pub_r[p], 100 * dev[p]))
        lines.append("order %s; largest ratio difference %.0f%% (tolerance %.0f%%): %s"
                     % ("as published" if self.in_order() else "DIFFERS from the published one",
                        100 * self.max_deviation(), 100 * sc.tolerance, "within" if self.within() else "OUTSIDE"))
        return "\n".join(lines)


NVME_SCENARIOS: Dict[str, ThroughputScenario] = {s.name: s for s in [
    ThroughputScenario(
        "nvme-latency-rfc",
        "NVMe/TCP, 2 paths, one throttled by ~30 ms, fio random reads (adaptive = proposed, not merged)",
        "nvme-latency-rfc.toml", "nvme-latency-rfc.fio",
        {"numa": 50.0, "round-robin": 105.0, "queue-depth": 230.0, "adaptive": 350.0},
        "linux-nvme RFC PATCHv4/v5 0/N 'nvme-multipath: introduce adaptive I/O policy', 2025-11"),
    ThroughputScenario(
        "nvme-latency-rfc-write",
        "the same, WRITE row: fio random writes (adaptive = proposed, not merged)",
        "nvme-latency-rfc.toml", "nvme-latency-rfc-write.fio",
        {"numa": 65.9, "round-robin": 125.0, "queue-depth": 385.0, "adaptive": 446.0},
        "linux-nvme RFC PATCHv4/v5 0/N 'nvme-multipath: introduce adaptive I/O policy', 2025-11"),
]}


# ------------------------------------------------------------------ failover studies
STUDY_POLICIES = ("numa", "round-robin", "queue-depth", "adaptive", "spdk-active-passive", "spdk-round-robin",
                  "spdk-queue-depth")


def _paths_doc(names: List[str]) -> dict:
    return {n: {"devt": "259:%d" % i, "service": {"dist": "exponential", "mean": "100us"}, "parallelism": 4}
            for i, n in enumerate(names)}


class NvmeStudy:
    """A failover study on an NVMe subsystem, run once per policy (``mpathlab faults``)."""

    selectors = STUDY_POLICIES

    def __init__(self, name: str, title: str, nvme: dict, paths: List[str], expect: str, phases, extra_paths=None):
        self.name = name
        self.title = title
        self.nvme = nvme
        self.path_names = paths
        self.expect = expect
        self.phases = phases          # [(label, t0_ms, t1_ms)] for the share table
        self.extra_paths = extra_paths or {}

    def topology(self):
        paths = _paths_doc(self.path_names)
        for n, extra in self.extra_paths.items():
            paths[n].update(extra)
        return topology_from_dict({"paths": paths, "nvme": self.nvme}, self.name)

    def run(self, selector: str, seed: int = 1, kernel=None, progress=None):
        # kernel: the dm profile; the NVMe model has no per-release differences yet
        job = parse_fio("[j]\nrw=randread\nbs=4k\nioengine=libaio\niodepth=32\nnumjobs=2\nruntime=150ms\ntime_based\n")
        return run_nvme(self.topology(), job, policy=selector, seed=seed, window_ns=MS, progress=progress)

    def summarize(self, study, selector: str, res) -> dict:
        d = {"study": self.name, "selector": selector, "submitted": res.submitted, "completed": res.completed,
             "errored": res.errored, "pending": res.pending,
             "path_errors": {p["name"]: p["errors"] for p in res.paths}, "shares": {}}
        for label, t0, t1 in self.phases:
            d["shares"][label] = {p: round(res.share_in_window(p, t0 * MS, t1 * MS), 4) for p in self.path_names}
        return d

    @staticmethod
    def format_row(d: dict) -> str:
        s = "%-20s completed %6d errored %3d pending %3d " % (d["selector"], d["completed"], d["errored"],
                                                              d["pending"])
        return s + "  ".join("%s: %s" % (lab, "/".join("%.2f" % v for v in sh.values()))
                             for lab, sh in d["shares"].items())


NVME_STUDIES: Dict[str, NvmeStudy] = {s.name: s for s in [
    NvmeStudy("nvme-ana-failover",
              "2 controllers; ANA group 1 optimized via c0, non-optimized via c1; at 50 ms c0 goes to change, "
              "at 60 ms c0 becomes inaccessible and c1 optimized",
              {"iopolicy": "numa", "namespaces": 2,
               "ana_groups": [{"id": 1, "namespaces": [1, 2], "state": {"c0": "optimized", "c1": "non-optimized"}}],
               "events": [{"at": "50ms", "ana": {"group": 1, "controller": "c0", "state": "change"}},
                          {"at": "60ms", "ana": {"group": 1, "controller": "c1", "state": "optimized"}},
                          {"at": "60ms", "ana": {"group": 1, "controller": "c0", "state": "inaccessible"}}]},
              ["c0", "c1"],
              "all I/O on c0 while it is optimized, on c1 (then non-optimized, the only live state) during the "
              "change, on c1 after; no I/O fails (in-flight I/O on c0 completes)",
              [("before", 10, 50), ("change", 51, 60), ("after", 70, 150)]),
    NvmeStudy("nvme-marginal-path",
              "3 controllers, all optimized; c1 is flagged marginal (FPIN link integrity) at 50 ms",
              {"iopolicy": "numa", "events": [{"at": "50ms", "marginal": {"controller": "c1", "value": True}}]},
              ["c0", "c1", "c2"],
              "with the proposed marginal handling, numa, round-robin and queue-depth stop using c1 while "
              "healthy paths exist; adaptive and SPDK do not look at the flag",
              [("before", 10, 50), ("after", 60, 150)]),
    NvmeStudy("nvme-controller-loss",
              "2 controllers; c0's link fails at 30 ms (I/O errors, controller reconnecting every 5 ms), its "
              "port answers again at 81 ms, so the attempt at 85 ms connects",
              {"iopolicy": "numa", "reconnect_delay": "5ms"}, ["c0", "c1"],
              "failed I/O is requeued on the head and resubmitted on c1; nothing fails; c0 is used again after "
              "it reconnects (numa: only if it is the nearest optimized path again)",
              [("before", 5, 30), ("lost", 35, 80), ("after", 100, 150)],
              extra_paths={"c0": {"faults": [{"at": "30ms", "action": "fail"},
                                             {"at": "80ms", "action": "reinstate", "reinstate_after": "1ms"}]}}),
]}
