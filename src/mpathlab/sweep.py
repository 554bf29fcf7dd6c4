"""Parameter sweeps on Dask: selectors x iodepths x topology parameters x seeds.

Every combination is one simulation, run as a Dask task (a local cluster by
default, or the scheduler at ``--scheduler ADDRESS``); the rows are written to
a CSV file (or Parquet, if pyarrow is installed and the name ends in
``.parquet``).

Topology parameters are set by dotted keys into the TOML document, e.g.
``--set paths.sdd.service.mean=100us,400us --set multipath.hz=250,1000``.
A multi-host topology (a ``[hosts]`` section, :mod:`mpathlab.multihost`) sweeps
as ``mpathlab hosts`` runs it, so ``--set hosts.count=8,64,256,1000`` sweeps
the number of hosts; its rows add the worst host's p99.
"""
from __future__ import annotations

import copy
import csv
import itertools
import os
from typing import Callable, Dict, List, Optional, Sequence, Tuple

try:
    import tomllib
except ModuleNotFoundError:  # Python < 3.11
    import tomli as tomllib  # type: ignore


class SweepError(ValueError):
    pass


def parse_value(text: str):
    t = text.strip()
    if t.lower() in ("true", "false"):
        return t.lower() == "true"
    try:
        return int(t)
    except ValueError:
        pass
    try:
        return float(t)
    except ValueError:
        return t


def _cell(column: str, text: str):
    """A CSV cell as write_rows wrote it.  Name columns (the selector, the
    engine, a kernel profile) stay text, so "5.10" and "6.1" stay names;
    elsewhere a number only when the text is that number's own spelling
    (Python writes numbers with repr), so nothing else changes on the way."""
    if text == "":
        return None
    if column in ("selector", "engine") or column.endswith("kernel"):
        return text
    v = parse_value(text)
    if isinstance(v, (int, float)) and not isinstance(v, bool) and repr(v) != text:
        return text
    return v


def parse_set(items: Sequence[str]) -> List[Tuple[str, list]]:
    """['paths.sdd.parallelism=1,4'] -> [('paths.sdd.parallelism', [1, 4])]."""
    out = []
    for item in items:
        key, sep, vals = item.partition("=")
        if not sep or not key.strip() or not vals.strip():
            raise SweepError("--set takes KEY=V1,V2,... (e.g. paths.sdd.parallelism=1,4), not %r" % item)
        out.append((key.strip(), [parse_value(v) for v in vals.split(",") if v.strip()]))
    return out


def set_dotted(doc: dict, key: str, value) -> None:
    """Set a dotted key; every table on the way must exist in the topology
    (a --set that named a path the table does not have would add a device)."""
    parts = key.split(".")
    if not all(parts):
        raise SweepError("--set %s: empty part in the dotted key" % key)
    cur = doc
    for i, p in enumerate(parts[:-1]):
        nxt = cur.get(p)
        if nxt is None:
            where = ".".join(parts[:i]) or "the topology"
            have = ", ".join(sorted(k for k, v in cur.items() if isinstance(v, dict))) or "none"
            raise SweepError("--set %s: %s has no table %r (its tables: %s)" % (key, where, p, have))
        if not isinstance(nxt, dict):
            raise SweepError("--set %s: %s is not a table in the topology" % (key, p))
        cur = nxt
    cur[parts[-1]] = value


def run_point(doc: dict, source: str, base_dir: str, job_text: str, point: dict) -> dict:
    """One sweep point (runs on a Dask worker): returns a flat result row."""
    from .runner import run_simulation
    from .workload.fio import parse_fio
    from .topology import topology_from_dict

    d = copy.deepcopy(doc)
    for key, value in point.get("set", {}).items():
        set_dotted(d, key, value)
    jobs = parse_fio(job_text, source="job")
    for j in jobs.jobs:
        j.set_iodepth(point["iodepth"])     # as if the file said it (a synchronous engine: 1 in flight)
    extra = {}
    if "hosts" in d:
        from .multihost import multihost_from_dict, run_multihost
        topo, cfg = multihost_from_dict(d, os.path.join(base_dir, source))
        mh = run_multihost(topo, cfg, jobs, selector=point["selector"], seed=point["seed"])
        res = mh.result
        extra["lat_p99_worst_host_ns"] = max(mh.host_percentile(99.0))
    else:
        topo = topology_from_dict(d, source, base_dir)
        res = run_simulation(topo, jobs, selector=point["selector"], seed=point["seed"])
    from .sim.stats import merged_latency
    lat = merged_latency(res.jobs)
    pct = lat.percentiles((50.0, 99.0, 99.9, 99.99))
    row = {"selector": point["selector"], "iodepth": point["iodepth"], "seed": point["seed"]}
    for key, value in point.get("set", {}).items():
        row[key] = value
    row.update({"mean_deviation": res.mean_deviation, "completed": res.completed, "errored": res.errored,
                "iops": res.completed / (res.runtime_ns / 1e9) if res.runtime_ns else 0.0,
                "lat_mean_ns": lat.mean, "lat_p50_ns": pct["50.000000"], "lat_p99_ns": pct["99.000000"],
                "lat_p999_ns": pct["99.900000"], "lat_p9999_ns": pct["99.990000"],
                "engine": res.engine}, **extra)
    for name, share in res.shares.items():
        row["share_" + name] = share
        row["best_" + name] = res.best[name]
    return row


def points(selectors: Sequence[str], iodepths: Sequence[int], seeds: Sequence[int],
           sets: Sequence[Tuple[str, list]]) -> List[dict]:
    keys = [k for k, _ in sets]
    out = []
    for combo in itertools.product(*[v for _, v in sets]) if sets else [()]:
        for sel, depth, seed in itertools.product(selectors, iodepths, seeds):
            out.append({"selector": sel, "iodepth": depth, "seed": seed, "set": dict(zip(keys, combo))})
    return out


def _ensure_importable_by_workers() -> None:
    """Local worker processes must import mpathlab even from a plain checkout."""
    pkg_parent = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    pp = os.environ.get("PYTHONPATH", "")
    if pkg_parent not in pp.split(os.pathsep):
        os.environ["PYTHONPATH"] = pkg_parent + (os.pathsep + pp if pp else "")


def run_sweep(topology_path: str, job_path: str, *, selectors: Sequence[str], iodepths: Sequence[int],
              seeds: Sequence[int], sets: Sequence[Tuple[str, list]] = (), scheduler: Optional[str] = None,
              workers: int = 2, processes: bool = True,
              progress: Optional[Callable[[float], None]] = None) -> List[dict]:
    if not scheduler and (isinstance(workers, bool) or not isinstance(workers, int) or not 1 <= workers <= 1024):
        raise SweepError("--workers must be a whole number from 1 to 1024, got %r" % (workers,))
    from .workload.fio import load_fio
    from .topology import load_topology
    from .inputs import load_toml, read_text
    from .multihost import load_multihost, multihost_from_dict

    doc, _ = load_toml(topology_path, "topology")
    hosts = "hosts" in doc
    (load_multihost if hosts else load_topology)(topology_path)   # validate before starting anything
    load_fio(job_path)
    job_text = read_text(job_path, "fio job file")
    pts = points(selectors, iodepths, seeds, sets)
    if not pts:
        raise SweepError("the sweep has no points")
    source = os.path.basename(topology_path)
    base_dir = os.path.dirname(os.path.abspath(topology_path))
    # Every parameter combination must make a valid topology: find out here,
    # with a clear message, not in a worker.
    from .topology import topology_from_dict
    seen = set()
    for p in pts:
        key = tuple(sorted((k, str(v)) for k, v in p["set"].items()))
        if key in seen:
            continue
        seen.add(key)
        d = copy.deepcopy(doc)
        for k, v in p["set"].items():
            set_dotted(d, k, v)
        where = "%s with %s" % (source, ", ".join("%s=%s" % kv for kv in key) or "no --set")
        if hosts:
            multihost_from_dict(d, os.path.join(base_dir, where))
        else:
            topology_from_dict(d, where, base_dir)
    from .inputs import require_module
    require_module("dask.distributed", "dask[distributed]", "a sweep",
                   "pip install 'dask[distributed]' (or pip install -e .[sweep])")
    from dask.distributed import Client, LocalCluster, as_completed
    cluster = None
    if scheduler:
        client = Client(scheduler)
    else:
        _ensure_importable_by_workers()
        import logging
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=processes,
                               dashboard_address=":0", silence_logs=logging.ERROR)
        client = Client(cluster)
    try:
        futures = [client.submit(run_point, doc, source, base_dir, job_text, p, pure=False) for p in pts]
        rows = []
        for i, fut in enumerate(as_completed(futures), 1):
            rows.append(fut.result())
            if progress:
                progress(i / len(futures))
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    key = lambda r: (list(selectors).index(r["selector"]), r["iodepth"], r["seed"],  # noqa: E731
                     tuple(str(r.get(k)) for k, _ in sets))
    rows.sort(key=key)
    return rows


def write_rows(rows: List[dict], path: str) -> None:
    cols: List[str] = []
    for r in rows:
        for k in r:
            if k not in cols:
                cols.append(k)
    if path.endswith(".parquet"):
        from .inputs import require_module
        pa = require_module("pyarrow", "pyarrow", "writing Parquet", "pip install pyarrow; or give a .csv name")
        import pyarrow.parquet as pq
        table = pa.table({c: [r.get(c) for r in rows] for c in cols})
        pq.write_table(table, path)
        return
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols)
        w.writeheader()
        for r in rows:
            w.writerow(r)


# The columns a sweep report reads (mpathlab sweep writes them all).
REPORT_COLUMNS = ("selector", "iodepth", "mean_deviation", "lat_p99_ns")


def read_rows(path: str) -> List[Dict[str, object]]:
    """A sweep table written by ``mpathlab sweep`` (.csv, or .parquet with
    pyarrow), checked: the columns a report needs, numbers where numbers
    belong; problems name the file, the line and the column."""
    if path.endswith(".parquet"):
        from .inputs import require_module
        require_module("pyarrow", "pyarrow", "reading Parquet", "pip install pyarrow; or use the .csv table")
        import pyarrow.parquet as pq
        try:
            rows = pq.read_table(path).to_pylist()
        except OSError:
            raise
        except Exception as e:      # pyarrow's own errors for a file that is not Parquet
            raise SweepError("%s: not a Parquet table (%s)" % (path, str(e).splitlines()[0] if str(e) else e)) from None
        header = list(rows[0]) if rows else []
        lines = range(1, len(rows) + 1)
    else:
        import io
        from .inputs import read_text
        text = read_text(path, "sweep table")
        reader = csv.reader(io.StringIO(text, newline=""))
        try:
            table = list(reader)
        except csv.Error as e:
            raise SweepError("%s:%d: not a CSV table: %s" % (path, reader.line_num, e)) from None
        if not table or not any(table[0]):
            raise SweepError("%s: empty: a sweep table has a header line and a line per run" % path)
        header = [h.strip() for h in table[0]]
        dup = sorted({h for h in header if header.count(h) > 1})
        if dup:
            raise SweepError("%s:1: column %s appears twice in the header" % (path, ", ".join(dup)))
        rows = []
        lines = []
        for no, rec in enumerate(table[1:], 2):
            if not any(f.strip() for f in rec):
                continue
            if len(rec) != len(header):
                raise SweepError("%s:%d: %d fields, the header has %d" % (path, no, len(rec), len(header)))
            rows.append({k: _cell(k, v) for k, v in zip(header, rec)})
            lines.append(no)
    missing = [c for c in REPORT_COLUMNS if c not in header]
    if missing:
        raise SweepError("%s:1: missing column(s) %s; is this a table written by mpathlab sweep? (it needs %s)"
                         % (path, ", ".join(missing), ", ".join(REPORT_COLUMNS)))
    if not rows:
        raise SweepError("%s: no runs in the table (only a header)" % path)
    for no, r in zip(lines, rows):
        if not isinstance(r["selector"], str) or not r["selector"]:
            raise SweepError("%s:%s: column selector: expected a selector name, got %r" % (path, no, r["selector"]))
        d = r["iodepth"]
        if isinstance(d, bool) or not isinstance(d, int) or not 1 <= d <= 1 << 20:
            raise SweepError("%s:%s: column iodepth: expected a whole number from 1, got %r" % (path, no, d))
        for c in ("mean_deviation", "lat_p99_ns"):
            v = r[c]
            if isinstance(v, bool) or not isinstance(v, (int, float)) or v != v or v in (float("inf"), float("-inf")) \
                    or v < 0:
                raise SweepError("%s:%s: column %s: expected a number >= 0, got %r" % (path, no, c, v))
    return rows
