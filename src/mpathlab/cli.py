"""The ``mpathlab`` command line.

    mpathlab run TOPOLOGY.toml JOB.fio [--selector NAME[:ARG,...]] [--json]
    mpathlab run --table "0 LEN multipath ..." JOB.fio [--service ...] [--model DEV,service=...]
    mpathlab run --conf multipath.conf PATHS.toml JOB.fio     (map built as multipath-tools would)
    mpathlab maps --conf multipath.conf PATHS.toml            (table lines and `multipath -ll`)
    mpathlab reproduce [NAME] [--json] | --list
    mpathlab live JOB.fio --path FILE --path FILE [--selector NAME] [--delay FILE=2ms]
    mpathlab sweep TOPOLOGY JOB --selectors A,B --iodepths 1,8,64 [--set KEY=V1,V2] --out t.csv
    mpathlab report TOPOLOGY JOB [--selectors A,B] -o report.html | --sweep t.csv
    mpathlab faults [NAME|all] [--selector NAME] [--json]
    mpathlab selectors
    mpathlab kernels [PROFILE]
    mpathlab table 'TABLE LINE' [--status info|table|ima]
    mpathlab kernel-selector build|diff|extract ...   (the kernel's C selectors, --selector c:PATH)
    dmsetup status | mpathlab status [--table LINE]     (or: mpathlab status 'mpatha: 0 2097152 multipath ...')

Every failure is reported as one line on stderr with a non-zero exit code;
no traceback unless MPATHLAB_DEBUG=1 is set.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import List, Optional

from . import __version__
from .inputs import SEED_MAX, InputError, arg_int, csv_list, seed_list

EXIT_USAGE = 2
EXIT_INPUT = 3
EXIT_MISMATCH = 4
EXIT_MISSING_DEPENDENCY = 5     # an optional package (dask, matplotlib, pyarrow) is not installed
EXIT_SELECTOR = 6               # a C selector (--selector c:FILE) crashed or overran MPATHLAB_C_CALL_BUDGET_MS
EXIT_INTERNAL = 70


class Progress:
    """A one-line progress bar on stderr (only when it is a terminal, or forced)."""

    def __init__(self, enabled: bool, stream=None):
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self._last = 0.0
        self._shown = False

    def __call__(self, label: str, fraction: float) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self._last < 0.1 and fraction < 1.0:
            return
        self._last = now
        width = 30
        filled = int(width * min(1.0, max(0.0, fraction)))
        self.stream.write("\r%-14s [%s%s] %3d%%" % (label[:14], "#" * filled, "." * (width - filled),
                                                     int(fraction * 100)))
        self.stream.flush()
        self._shown = True

    def done(self) -> None:
        if self._shown:
            self.stream.write("\r" + " " * 60 + "\r")
            self.stream.flush()
            self._shown = False


def _progress_enabled(args) -> bool:
    if getattr(args, "no_progress", False) or getattr(args, "quiet", False):
        return False
    if getattr(args, "progress", False):
        return True
    return sys.stderr.isatty()


def cmd_run(args) -> int:
    from .runner import run_simulation
    from .workload.fio import load_fio
    from .topology import load_topology

    if args.conf:
        if args.table or args.selector or len(args.files) != 2:
            raise InputError("with --conf give PATHS.toml and JOB.fio (and no --table or --selector)")
        from .mtools.cli import run_conf
        _check_conf_file(args.conf)
        jobs = load_fio(args.files[1])
        _print_notes(jobs)
        prog = Progress(_progress_enabled(args))
        try:
            return run_conf(args, jobs, lambda f: prog("run", f))
        finally:
            prog.done()
    _check_selector_arg(args.selector, "--selector")
    if args.table:
        if len(args.files) != 1:
            raise InputError("with --table give only the job file, got %d files: %s"
                             % (len(args.files), " ".join(args.files)))
        from .topology import topology_from_table
        topo = topology_from_table(args.table, service=args.service or RUN_TABLE_DEFAULTS["service"],
                                   parallelism=(RUN_TABLE_DEFAULTS["parallelism"] if args.parallelism is None
                                                else args.parallelism),
                                   delay=args.delay or RUN_TABLE_DEFAULTS["delay"], models=args.model or [])
        job_path = args.files[0]
    else:
        given = [o for o, v in (("--service", args.service), ("--parallelism", args.parallelism),
                                ("--delay", args.delay), ("--model", args.model)) if v is not None]
        if given:
            raise InputError("%s only appl%s with --table (a topology file gives each path its model)"
                             % (", ".join(given), "ies" if len(given) == 1 else "y"))
        if len(args.files) != 2:
            raise InputError("run takes one topology file and one job file (or --table LINE and a job file), "
                             "got %d file%s: %s" % (len(args.files), "" if len(args.files) == 1 else "s",
                                                    " ".join(args.files)))
        topo = load_topology(args.files[0])
        job_path = args.files[1]
    topo = _with_kernel(topo, args.kernel, None if args.table else args.files[0])
    jobs = load_fio(job_path)
    _print_notes(jobs)
    prog = Progress(_progress_enabled(args))
    label = (args.selector or "run").split(":")[0]
    overrides = {}
    if args.hz:
        overrides["hz"] = args.hz
    if args.jiffies_start:
        overrides["force_jiffies_start"] = True
    try:
        result = run_simulation(topo, jobs, selector=args.selector, seed=args.seed,
                                progress=lambda f: prog(label, f), **overrides)
    finally:
        prog.done()
    from .workload.fio_logs import write_logs
    for path in write_logs(result):          # write_lat_log & co, named as fio names them
        print("mpathlab: wrote %s" % path, file=sys.stderr)
    _print_result(args, result, jobs)
    return 0


def _with_kernel(topo, kernel, path=None):
    """The topology with --kernel's profile instead of its own (the table, and the [nvme] section of the
    file ``path``, are checked again)."""
    if not kernel:
        return topo
    import copy
    from .profiles import get_profile
    from .topology import validate_table
    profile = get_profile(kernel)
    if topo.nvme is not None and path:
        from .inputs import TopologyError, load_toml, toml_key_line, with_line
        from .nvme.topology import NvmeTopologyError
        try:
            topo.nvme.check_profile(profile)
        except NvmeTopologyError as e:
            line = toml_key_line(load_toml(path)[1], *e.key) if e.key else None
            raise TopologyError(with_line("%s: [nvme] %s (--kernel %s)" % (path, e, kernel), path, line)) from None
    t = copy.copy(topo)
    t.kernel = kernel
    if t.table:                 # an NVMe-only topology has no table (its head checks the kernel when it runs)
        validate_table(t)
    return t


# `run --table`: the device model of every path unless --model changes one
RUN_TABLE_DEFAULTS = {"service": "exponential:100us", "parallelism": 1, "delay": "0"}


def _check_selector_arg(spec: Optional[str], option: str) -> None:
    """A --selector that is given must name a registered selector, an NVMe policy (nvme:NAME) or a C
    selector (c:PATH); an empty one is not ignored."""
    if spec is None:
        return
    from .runner import parse_selector_spec
    name = parse_selector_spec(spec)[0]
    if not spec.strip() or not name:
        raise InputError("%s: empty selector name (give e.g. service-time or historical-service-time:972,2)"
                         % option)
    if spec.startswith("nvme:"):
        from . import nvme
        if nvme.lookup(spec[5:]) is None:
            raise InputError("%s: unknown NVMe I/O policy %r; known: %s" % (option, spec[5:], ", ".join(nvme.names())))
        return
    from . import selectors as _s
    if _s.lookup(name) is None:
        known = [n for n in _s.names() if not n.startswith("c:")]
        raise InputError("%s: unknown path selector %r; known: %s (NVMe policies are nvme:NAME, C selectors "
                         "c:PATH)" % (option, name, ", ".join(known)))


def _print_notes(jobs) -> None:
    for note in jobs.notes:
        print("mpathlab: note: %s" % note, file=sys.stderr)


def _print_result(args, result, jobs) -> None:
    """fio-style JSON with --json, else the per-path table."""
    from .report import fio_json, run_summary
    if args.json or getattr(args, "json_plus", False):
        json.dump(fio_json(result, jobs.global_options, plus=getattr(args, "json_plus", False)), sys.stdout,
                  indent=2)
        sys.stdout.write("\n")
    else:
        print(run_summary(result))


def cmd_reproduce(args) -> int:
    from .scenarios.nvme import NVME_SCENARIOS
    from .scenarios import DEFAULT_SCENARIO, SCENARIOS
    SCENARIOS = dict(SCENARIOS, **NVME_SCENARIOS)

    if args.list:
        for name, sc in SCENARIOS.items():
            _say("%-22s %s" % (name, sc.title), " " * 23)
        return 0
    name = args.name or DEFAULT_SCENARIO
    if name == "all":
        names = list(SCENARIOS)
    elif name in SCENARIOS:
        names = [name]
    else:
        raise InputError("unknown scenario %r; known: %s, all" % (name, ", ".join(SCENARIOS)))
    outcomes = []
    for n in names:
        prog = Progress(_progress_enabled(args))
        try:
            outcomes.append(SCENARIOS[n].run(progress=prog, seed=args.seed))
        finally:
            prog.done()
    if args.json:
        docs = [o.as_json() for o in outcomes]
        json.dump(docs[0] if len(docs) == 1 else docs, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        for i, o in enumerate(outcomes):
            if i:
                print()
            _print_outcome(o)
    return 0 if all(o.within() for o in outcomes) else EXIT_MISMATCH


def _say(text: str, indent: str = "    ") -> None:
    """Print text in lines of at most 100 columns (the terminal views' width)."""
    from .report.text import wrap
    print("\n".join(w for line in text.split("\n") for w in wrap(line, indent)))


def _print_outcome(outcome) -> None:
    from .report import share_table
    if hasattr(outcome, "format"):      # NVMe throughput scenarios (mpathlab.scenarios.nvme)
        for line in outcome.format().splitlines():
            _say(line)
        return
    sc = outcome.scenario
    _say("%s: %s" % (sc.name, sc.title))
    _say("share of I/O per path; in brackets the published value (%s)" % sc.source)
    print(share_table(outcome.columns, sc.rows, sc.published))
    for label, res in outcome.results.items():
        print("%-12s mean deviation from Best %.4f" % (label, res.mean_deviation))
    print("largest difference from the published table: %.3f (%s, tolerance %.2f)"
          % (outcome.max_deviation(), "within" if outcome.within() else "OUTSIDE", sc.tolerance))
    if sc.note:
        _say(sc.note, "")


def cmd_faults(args) -> int:
    from .scenarios.nvme import NVME_STUDIES
    from .sim.faults import SELECTORS, STUDIES, format_row, summarize
    STUDIES = dict(STUDIES, **NVME_STUDIES)

    if args.list or not args.name:
        for name, st in STUDIES.items():
            _say("%-22s %s" % (name, st.title), " " * 23)
        return 0
    names = list(STUDIES) if args.name == "all" else [args.name]
    plan = []           # (study, its selectors), checked before any run
    for name in names:
        st = STUDIES.get(name)
        if st is None:
            raise InputError("unknown fault study %r; known: %s, all" % (name, ", ".join(STUDIES)))
        own = getattr(st, "selectors", None)       # a study of another stack names its own policies
        if own is not None and args.selector is not None and args.selector not in own:
            raise InputError("--selector: %s runs %s, not %r" % (st.name, ", ".join(own), args.selector))
        if own is None:
            _check_selector_arg(args.selector, "--selector")
        plan.append((st, [args.selector] if args.selector is not None else list(own or SELECTORS)))
    out = []
    prog = Progress(_progress_enabled(args))
    total, done = sum(len(sels) for _, sels in plan), 0
    for st, sels in plan:
        if not args.json:
            _say("%s: %s" % (st.name, st.title))
            _say("  expected: %s" % st.expect, "    ")
            for where in getattr(st, "kernel", ()):     # the kernel functions the study runs through
                _say("  kernel: %s" % where, "    ")
        for sel in sels:
            label = "faults %d/%d" % (done + 1, total)
            prog(label, done / total)       # shown while the run works, whichever engine runs it
            res = st.run(sel, seed=args.seed, kernel=args.kernel,
                         progress=lambda f, _l=label, _d=done: prog(_l, (_d + f) / total))
            prog.done()
            done += 1
            d = getattr(st, "summarize", summarize)(st, sel, res)
            out.append(d)
            if not args.json:
                row = getattr(st, "format_row", format_row)(d)
                _say("\n".join("  " + line for line in row.split("\n")), " " * 28)
    if args.json:
        json.dump(out, sys.stdout, indent=2)
        sys.stdout.write("\n")
    return 0


def cmd_live(args) -> int:
    from .live import LiveRun, parse_delays
    from .runner import parse_selector_spec
    from .workload.fio import load_fio

    _check_selector_arg(args.selector, "--selector")
    jobs = load_fio(args.job)
    _print_notes(jobs)
    name, sel_args = parse_selector_spec(args.selector)
    prog = Progress(_progress_enabled(args))
    run = LiveRun(args.path, name, jobs.jobs, selector_args=sel_args, delays=parse_delays(args.delay or []),
                  kernel=args.kernel,
                  hz=args.hz, queue_mode=args.queue_mode, allow_device_writes=args.allow_device_writes,
                  seed=args.seed, progress=lambda f: prog("live", f))
    try:
        result = run.run()
    finally:
        prog.done()
        gone = [] if args.keep_files else run.remove_created()
    _print_result(args, result, jobs)
    if not args.json:
        _say("O_DIRECT: %s" % ", ".join("%s %s" % (p["file"], "yes" if p["direct"] else "no (buffered)")
                                        for p in result.paths))
        if gone:
            _say("removed the files this run created (--keep-files keeps them): %s" % ", ".join(gone))
    return 0


def cmd_sweep(args) -> int:
    from .sweep import parse_set, run_sweep, write_rows

    sels = csv_list(args.selectors, "--selectors")
    for name in sels:
        _check_selector_arg(name, "--selectors")
    if args.workers is not None and args.workers < 1:
        raise InputError("--workers must be at least 1, got %d" % args.workers)
    sets = parse_set(args.set or [])
    if args.kernels:
        # profile names stay strings ("5.10" is not the number 5.1)
        from .profiles import get_profile
        kernels = csv_list(args.kernels, "--kernels")
        for k in kernels:
            get_profile(k)
        sets.append(("multipath.kernel", kernels))
    prog = Progress(_progress_enabled(args))
    try:
        rows = run_sweep(args.topology, args.job, selectors=sels,
                         iodepths=csv_list(args.iodepths, "--iodepths", int),
                         seeds=seed_list(args.seeds), sets=sets,
                         scheduler=args.scheduler, workers=args.workers,
                         progress=lambda f: prog("sweep", f))
    finally:
        prog.done()
    write_rows(rows, args.out)
    print("%d runs written to %s" % (len(rows), args.out))
    from .report.tails import share_text, tail_text
    print(tail_text(rows))
    shares = share_text(rows)
    if shares:
        print(shares)
    return 0


def cmd_report(args) -> int:
    from .report.html import run_report, sweep_report
    from .runner import run_simulation
    from .workload.fio import load_fio
    from .topology import load_topology

    if args.sweep:
        from .sweep import read_rows
        try:
            rows = read_rows(args.sweep)
        except OSError as e:
            raise InputError("cannot read sweep table %s: %s" % (args.sweep, e.strerror or e)) from None
        page = sweep_report(rows, args.title, source=os.path.basename(args.sweep))
    else:
        if not (args.topology and args.job):
            raise InputError("report needs TOPOLOGY and JOB (or --sweep TABLE)")
        topo = _with_kernel(load_topology(args.topology), args.kernel, args.topology)
        jobs = load_fio(args.job)
        prog = Progress(_progress_enabled(args))
        results = {}
        sels = csv_list(args.selectors, "--selectors")
        _check_report_selectors(sels, topo)
        tail_rows = []
        seeds = seed_list(args.seeds) if args.seeds else []
        try:
            for sel in sels:
                results[sel] = run_simulation(topo, jobs, selector=sel, seed=args.seed,
                                              progress=lambda f, _s=sel: prog(_s, f))
                for sd in seeds:   # tails with confidence intervals over seeds
                    from .report.tails import tail_row
                    tail_rows.append(tail_row(sel, sd, run_simulation(topo, jobs, selector=sel, seed=sd)))
        finally:
            prog.done()
        page = run_report(results, args.title or "mpathlab: %s with %s" % (
            os.path.basename(args.topology), os.path.basename(args.job)),
            context=(["nvme: %s" % topo.nvme.describe()] if topo.nvme is not None else []),
            topology=topo, jobs=jobs.jobs, seed=topo.seed if args.seed is None else args.seed, tail_rows=tail_rows)
    with open(args.out, "w") as f:
        f.write(page)
    print("report written to %s" % args.out)
    return 0


def _check_report_selectors(sels, topo) -> None:
    """Each name must be known (_check_selector_arg); dm selectors need the [multipath] table, nvme:POLICY
    the [nvme] section."""
    for sel in sels:
        _check_selector_arg(sel, "--selectors")
        if sel.startswith("nvme:"):
            if topo.nvme is None:
                raise InputError("--selectors %s: %s has no [nvme] section" % (sel, topo.source))
        elif not topo.table:
            raise InputError("--selectors %s: %s has no [multipath] table" % (sel, topo.source))


CONF_DEVICES_ENV = "MPATHLAB_MAX_CONF_DEVICES"
CONF_DEVICES_MAX = 2000     # merging device entries is quadratic: 2,000 take about 1.6 s, 8,000 over 20 s
DM_NAME_MAX = 127           # DM_NAME_LEN (include/uapi/linux/dm-ioctl.h) is 128 with the terminating NUL


def _check_conf_file(path: Optional[str]) -> None:
    """What multipath.conf parsing would take in silence, refused first with the file and line: a file
    that is compressed, binary or holds control characters (read as keywords, its bytes echoed in the
    warnings), more device sections than the budget, a multipaths alias longer than a dm name may be,
    and one alias given to two WWIDs (two maps named alike; multipath keeps only the first)."""
    if not path:
        return
    import re
    from .inputs import read_text
    text = read_text(path, "multipath.conf")
    limit = CONF_DEVICES_MAX
    env = os.environ.get(CONF_DEVICES_ENV)
    if env:
        if not (env.isascii() and env.isdigit()) or len(env) > 9:
            raise InputError("%s=%r: a whole number of device sections" % (CONF_DEVICES_ENV, env[:40]))
        limit = int(env)
    n = 0
    for lineno, line in enumerate(text.splitlines(), 1):
        if re.match(r"\s*device\s*\{", line):
            n += 1
            if n > limit:
                raise InputError("%s:%d: more than %d device sections: merging them is quadratic (2,000 take "
                                 "about 1.6 s); raise %s to read this file" % (path, lineno, limit, CONF_DEVICES_ENV))
    from .mtools.conf import ConfError, load_conf
    try:
        conf = load_conf(path)
    except ConfError:
        return              # multipath.conf's own error, reported by the command itself
    for e in [conf.defaults] + list(conf.devices) + list(conf.multipaths) + ([conf.overrides] if conf.overrides else []):
        s = e.values.get("path_selector")
        text_ps = str(s.value) if s is not None and s.value is not None else ""
        if text_ps.startswith("c:"):
            # a C selector's file is read from the current directory, not from the conf's: say so, with the line
            c_file = text_ps[2:].split()[0].split("@")[0] if text_ps[2:].split() else ""
            if not os.path.isfile(c_file):
                raise InputError("%s:%d: path_selector %r: no C selector file %s (a relative path is read from the "
                                 "current directory, %s)" % (path, s.line, text_ps, c_file or "named",
                                                             os.getcwd()))
    seen = {}
    for e in conf.multipaths:
        s = e.values.get("alias")
        if s is None or s.value is None:
            continue
        alias = str(s.value)
        size = len(alias.encode("utf-8"))
        if size > DM_NAME_MAX:
            raise InputError("%s:%d: alias of %d bytes: a dm device name is at most %d bytes (DM_NAME_LEN); the "
                             "kernel would refuse to create the map" % (path, s.line, size, DM_NAME_MAX))
        wwid = e.get("wwid")
        if alias in seen and seen[alias][0] != wwid:
            raise InputError("%s:%d: alias %r is already the alias of WWID %s (line %d): multipath keeps the first "
                             "and logs an error; give each map its own alias"
                             % (path, s.line, alias, seen[alias][0], seen[alias][1]))
        seen.setdefault(alias, (wwid, s.line))


def cmd_hosts(args) -> int:
    """``mpathlab hosts``: what several hosts cannot run is refused as input first (exit 3)."""
    from . import multihost
    _check_multihost(args.topology, args.job)
    return multihost.cmd_hosts(args, progress=Progress(_progress_enabled(args)))


def _check_multihost(topology: str, job: str) -> None:
    """Hardware handlers, driver tags (hw_queue_depth) and stonewall groups are modelled for one host only:
    with several hosts the run would raise 'not modelled' or, for tags, share one port device's tags among
    all hosts (a real host has its own path device and tags).  Named with their file and line."""
    from .inputs import read_text, toml_key_line
    from .kernel import split_args
    from .multihost import load_multihost
    from .workload.fio import load_fio
    topo, cfg = load_multihost(topology)
    if cfg.count <= 1:
        return
    text = read_text(topology, "topology")
    toks = split_args(topo.table)[3:]
    try:
        nfeat = int(toks[0])
        nhw = int(toks[1 + nfeat])
        hw = toks[2 + nfeat] if nhw else None
    except (IndexError, ValueError):
        hw = None       # the table's own check names the problem when the run loads it
    if hw:
        raise InputError("%s:%s: [multipath] table has hardware handler %r: hardware handlers are not modelled "
                         "with several hosts ([hosts] count = %d)"
                         % (topology, toml_key_line(text, "multipath", "table") or "?", hw, cfg.count))
    for pm in topo.paths:
        if pm.hw_queue_depth:
            raise InputError("%s:%s: paths.%s.hw_queue_depth: driver tags are not modelled with several hosts "
                             "([hosts] count = %d)" % (topology, toml_key_line(text, "paths." + pm.name,
                                                                               "hw_queue_depth") or "?",
                                                      pm.name, cfg.count))
    jobs = load_fio(job)
    for j in jobs.jobs[1:]:
        if j.stonewall:
            raise InputError("%s: job %r: stonewall groups are not modelled with several hosts ([hosts] count = %d "
                             "in %s)" % (job, j.name, cfg.count, os.path.basename(topology)))


def cmd_maps(args) -> int:
    from .mtools.cli import cmd_maps as maps
    _check_conf_file(args.conf)
    return maps(args)


def cmd_multipath(args) -> int:
    from .mtools.cli import cmd_multipath as mp
    _check_conf_file(getattr(args, "conf", None))
    return mp(args)


def cmd_selectors(args) -> int:
    from . import selectors
    for name in selectors.names():
        cls = selectors.lookup(name)
        print("%-24s version %-6s table_args %d info_args %d%s"
              % (name, cls.version or "-", cls.table_args, cls.info_args,
                 "  (high-res start times)" if cls.uses_hr_timer() else ""))
    from . import nvme
    for name in nvme.names():
        _say("%-24s %s" % ("nvme:" + name, nvme.lookup(name).origin), " " * 25)
    return 0


def cmd_kernels(args) -> int:
    from .profiles import PROFILES, get_profile, markdown_table
    if args.name:
        p = get_profile(args.name)
        print("kernel %s%s" % (p.name, " (%s)" % p.description if p.description else ""))
        from .profiles import HISTORY, format_value
        for b in HISTORY:
            where = p.where(b.key) or "(before %d.%d: %s)" % (b.changes[0].release + (b.changes[0].where,))
            print("  %-26s %-12s %s" % (b.key, format_value(p.values[b.key]), where))
        return 0
    if args.markdown:
        print(markdown_table())
    else:       # the same table as blocks of at most 100 columns
        from .profiles import format_value, profile_table_rows
        for b, values, changes in profile_table_rows():
            _say(b.what, "  ")
            _say("    " + "  ".join("%s: %s" % (n, format_value(v)) for n, v in values.items()), "      ")
            for rel, where in changes:
                _say("    changed in %d.%d: %s" % (rel[0], rel[1], where), "      ")
    _say("\nprofiles: %s (default current); any release X.Y from 4.6 evaluates the same history"
         % ", ".join(PROFILES))
    return 0


def cmd_fio_options(args) -> int:
    from .workload import fio_options
    if args.name:
        o = fio_options.lookup(args.name)
        if o is None:
            raise InputError("unknown fio option %r" % args.name)
        print("%s: %s" % (o.cls, fio_options.describe(o)))
    else:
        print(fio_options.markdown() if args.markdown else fio_options.listing())
    return 0


def cmd_table(args) -> int:
    from .inputs import check_text
    from .target import construct, parse, table_line
    line = check_text(" ".join(args.line), "argument", "table line", InputError)
    rows = [r for r in line.splitlines() if r.strip()]
    if len(rows) > 1:
        raise InputError("table: one table line expected, got %d lines (to read a whole `dmsetup table` listing "
                         "use: mpathlab status)" % len(rows))
    from .target.table import strip_device_name
    line = strip_device_name(line)          # `dmsetup table` prints "mpatha: 0 2097152 multipath ..."
    first = line.split()
    kw = {"kernel": args.kernel, "host": _host_from_args(args)}
    if len(first) >= 3 and first[2] == "multipath":
        m = parse(line, **kw)
        if args.status == "table":
            print(table_line(m))
            return 0
    else:
        m = construct(line, **kw)
    print(m.status(args.status))
    return 0


def _host_from_args(args):
    """--device DEVT=KIND (repeatable) and --nr-cpus: the host facts the kernel checks, or None."""
    from .kernel import parse_devt
    from .profiles import DeviceFact, Host
    if not args.device and not args.nr_cpus:
        return None
    facts = []
    for item in args.device or []:
        devt_s, _, kind = item.partition("=")
        devt = parse_devt(devt_s)
        if devt is None:
            raise InputError("--device %s: use MAJOR:MINOR=KIND, e.g. 8:16=scsi" % item)
        facts.append(DeviceFact(devt, kind))
    if not args.device:
        raise InputError("--nr-cpus needs the host's devices too (--device MAJOR:MINOR=KIND, repeated)")
    return Host(facts, args.nr_cpus)
def cmd_status(args) -> int:
    from .target.status_parse import explain_dmsetup
    if args.text and args.text != ["-"]:
        # one quoted argument per line, or an unquoted line split by the shell
        text = "\n".join(args.text) if any(" " in t.strip() for t in args.text) else " ".join(args.text)
        source = "argument"
    else:
        if sys.stdin is None or sys.stdin.isatty():
            raise InputError("status: give the lines as arguments, or pipe them in: dmsetup status | mpathlab status")
        text, source = _read_text_stdin(), "stdin"
    from .inputs import check_text
    check_text(text, source, "dmsetup output", InputError)
    table = None
    if args.table:
        table = check_text(args.table, "--table", "table line", InputError)
    out = explain_dmsetup(text, source=source, kind=args.kind, table=table, as_json=args.json)
    if args.json:
        json.dump(out, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        for line in out:    # within 100 columns, continuation lines under the line's own indentation
            _say(line, " " * (len(line) - len(line.lstrip()) + 4))
    return 0


def _read_text_stdin() -> str:
    from .inputs import binary_problem
    data = sys.stdin.buffer.read() if hasattr(sys.stdin, "buffer") else sys.stdin.read().encode()
    bad = binary_problem(data, "dmsetup output")
    if bad and "NUL" not in bad[1]:     # a NUL is found with its column by check_text
        raise InputError("stdin:%d: %s" % bad)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError("stdin:%d: byte %d is not UTF-8 text (0x%02x)"
                         % (data.count(b"\n", 0, e.start) + 1, e.start, data[e.start])) from None


def _parent(*options) -> argparse.ArgumentParser:
    """An argparse parent parser holding OPTIONS, each a (flags, keywords) pair."""
    parent = argparse.ArgumentParser(add_help=False)
    for flags, kw in options:
        parent.add_argument(*flags, **kw)
    return parent


# Options several commands share, declared once; a command takes them with parents=[...].
PROGRESS = _parent((("--progress",), dict(action="store_true",
                                          help="always show the progress bar (default: on a terminal)")),
                   (("--no-progress",), dict(action="store_true", help="never show the progress bar")))
KERNEL_HELP = "kernel profile: 5.8, 5.15, 6.1, 6.12, current or X.Y (default: %s)"
KERNEL = _parent((("--kernel",), dict(help=KERNEL_HELP % "current")))
KERNEL_OF_TOPOLOGY = _parent((("--kernel",), dict(help=KERNEL_HELP % "the topology's kernel, else current")))
SEED_OF_TOPOLOGY = _parent((("--seed",), dict(type=arg_int(0, SEED_MAX), help="random seed (default: the topology's)")))
SEED_1 = _parent((("--seed",), dict(type=arg_int(0, SEED_MAX), default=1, help="random seed (default: %(default)s)")))


def _json(what: str) -> argparse.ArgumentParser:
    return _parent((("--json",), dict(action="store_true", help="print %s" % what)))


class _Parser(argparse.ArgumentParser):
    """argparse, except that an argument with whitespace in it is text (a pasted `dmsetup status`
    line, possibly several), never an unknown option: argparse itself only says so for a space, so
    "-1<newline>0" would be refused as an option."""

    def _parse_optional(self, arg_string):
        found = super()._parse_optional(arg_string)
        # (action, option, ...) before Python 3.12.3, a list of such tuples since
        first = found[0] if isinstance(found, list) and found else found
        if first is not None and first[0] is None and any(c.isspace() for c in arg_string):
            return None
        return found


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="mpathlab", description=(
        "Linux dm-multipath path selectors in Python: simulate how each selector spreads I/O over "
        "asymmetric paths, driven by fio job files."))
    p.add_argument("--version", action="version", version="mpathlab %s" % __version__)
    p.add_argument("-v", "--verbose", action="count", default=0,
                   help="more log output: -v also the target's runtime kernel lines (failovers), -vv debug "
                        "(default: warnings and the kernel lines printed while a table is loaded)")
    p.add_argument("-q", "--quiet", action="store_true", help="log errors only (no kernel warnings)")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    r = sub.add_parser("run", help="simulate a fio job over a topology",
                       parents=[_json("fio-style JSON instead of a table (default: off)"), SEED_OF_TOPOLOGY,
                                KERNEL_OF_TOPOLOGY, PROGRESS],
                       description="Simulate a fio job file over the multipath topology of a TOML file.")
    r.add_argument("files", nargs="+", metavar="TOPOLOGY.toml JOB.fio",
                   help="a topology file (the dm table line and a model per path) and a fio job file; "
                        "with --table only the job file; '-' reads the job file from standard input "
                        "(`mpathlab fio-options` lists the job options)")
    r.add_argument("--table", help="a `dmsetup table` line to use instead of a topology file (default: none)")
    r.add_argument("--conf", metavar="multipath.conf",
                   help="build the map from this multipath.conf and a path topology (serials, ALUA states, "
                        "device models), with multipathd's checker loop running (default: none)")
    r.add_argument("--mtools", metavar="VERSION",
                   help="with --conf: multipath-tools version (0.9.4 or 0.14.3; default: the topology's "
                        "[multipath] mtools, else 0.14.3)")
    r.add_argument("--map", help="with --conf: the map (alias or wwid) to simulate when there are several "
                                 "(default: the only one)")
    r.add_argument("--service", help="with --table: every path's service time (400us, exponential:400us, "
                                     "lognormal:400us:0.5; default: %s)" % RUN_TABLE_DEFAULTS["service"])
    r.add_argument("--parallelism", type=arg_int(-2 ** 31, 2 ** 31), help="with --table: servers per device (default: %d)"
                   % RUN_TABLE_DEFAULTS["parallelism"])
    r.add_argument("--delay", help="with --table: fixed added delay per path (default: %s)"
                   % RUN_TABLE_DEFAULTS["delay"])
    r.add_argument("--model", action="append", metavar="DEV,service=...,parallelism=N,delay=...,hw_queue_depth=N",
                   help="with --table: a different model for one path (repeatable; default: none); "
                        "hw_queue_depth: the path's driver tags (default unlimited)")
    r.add_argument("--selector", help="use this selector in every priority group, e.g. "
                                      "historical-service-time or historical-service-time:972,2; or "
                                      "nvme:POLICY to run the topology's [nvme] subsystem with that I/O policy "
                                      "(default: the table's)")
    r.add_argument("--json-plus", action="store_true",
                   help="fio json+: JSON with clat_ns latency bins (default: off)")
    r.add_argument("--hz", type=arg_int(100, 1000), choices=(100, 250, 300, 1000),
                   help="kernel HZ for jiffies (default: the topology's, else 250)")
    r.add_argument("--jiffies-start", action="store_true",
                   help="bio-based: ignore DM_PS_USE_HR_TIMER, as kernels before 5.19 did")
    r.set_defaults(func=cmd_run)

    rp = sub.add_parser("reproduce", help="run a shipped scenario and compare it with the seed's table",
                        parents=[_json("the columns as JSON (default: a table)"), PROGRESS])
    rp.add_argument("name", nargs="?", help="scenario name or 'all' (default: hst-2020-depth1); see --list")
    rp.add_argument("--list", action="store_true", help="list the shipped scenarios")
    rp.add_argument("--seed", type=arg_int(0, SEED_MAX), help="override the scenario's random seed (default: the scenario's)")
    rp.set_defaults(func=cmd_reproduce)

    lv = sub.add_parser("live", help="drive real I/O to files or block devices through a selector",
                        parents=[KERNEL, _json("fio-style JSON (default: a table)"), PROGRESS],
                        description="Real I/O (threads doing pread/pwrite, O_DIRECT where allowed) to "
                                    "files or block devices, one per path, through the multipath target "
                                    "and selector code, with real clocks.")
    lv.add_argument("job", help="fio job file")
    lv.add_argument("--path", action="append", required=True,
                    help="a file or block device; repeat per path, each a different one (required, no default)")
    lv.add_argument("--selector", default="historical-service-time",
                    help="selector[:arg,...] (default: %(default)s)")
    lv.add_argument("--delay", action="append", metavar="PATH=DURATION",
                    help="added delay before each I/O on that path (asymmetric paths on one disk; "
                         "default: none)")
    lv.add_argument("--hz", type=arg_int(100, 1000), default=250, choices=(100, 250, 300, 1000),
                    help="kernel HZ of the jiffies clock (default: %(default)s)")
    lv.add_argument("--queue-mode", choices=("rq", "bio"), default="rq",
                    help="request-based or bio-based target (default: %(default)s)")
    lv.add_argument("--allow-device-writes", action="store_true",
                    help="allow a job with writes on a block device (destroys its data; default: off)")
    lv.add_argument("--seed", type=arg_int(0, SEED_MAX), default=1, help="random seed of the offsets (default: %(default)s)")
    lv.add_argument("--keep-files", action="store_true",
                    help="keep the files the run created (default: remove them; existing files always stay)")
    lv.set_defaults(func=cmd_live)

    sw = sub.add_parser("sweep", help="run a grid of simulations on Dask and write a CSV/Parquet table",
                        parents=[PROGRESS],
                        description="Selectors x iodepths x topology parameters x seeds, one simulation per "
                                    "point, run on Dask (a local cluster unless --scheduler is given).")
    sw.add_argument("topology", help="topology file (TOML)")
    sw.add_argument("job", help="fio job file")
    sw.add_argument("--selectors", default="service-time,historical-service-time",
                    help="comma-separated selectors (default: %(default)s)")
    sw.add_argument("--iodepths", default="1,8,64", help="comma-separated iodepths (default: %(default)s)")
    sw.add_argument("--seeds", default="1", help="comma-separated random seeds (default: %(default)s)")
    sw.add_argument("--set", action="append", metavar="KEY=V1,V2",
                    help="topology parameter to vary, a dotted key into an existing table: "
                         "paths.sdd.service.mean=100us,400us (repeatable; default: none)")
    sw.add_argument("--kernels", metavar="A,B", help="kernel profiles to sweep over, e.g. 5.15,6.1 "
                    "(default: the topology's kernel, else current)")
    sw.add_argument("--scheduler", help="address of a Dask scheduler (default: start a local cluster)")
    sw.add_argument("--workers", type=arg_int(-2 ** 31, 1024), default=2,
                    help="local cluster worker processes, at least 1 (default: %(default)s)")
    sw.add_argument("--out", default="sweep.csv",
                    help="output table (.csv, or .parquet with pyarrow; default: %(default)s)")
    sw.set_defaults(func=cmd_sweep)

    rep = sub.add_parser("report", help="write an HTML report with plots for selectors on a topology, or a sweep",
                         parents=[KERNEL_OF_TOPOLOGY, PROGRESS])
    rep.add_argument("topology", nargs="?", help="topology file (TOML) for a run report")
    rep.add_argument("job", nargs="?", help="fio job file for a run report")
    rep.add_argument("--selectors", default="round-robin,queue-length,service-time,historical-service-time",
                     help="the policies to compare, one run each: dm selectors and NVMe policies (nvme:numa, "
                          "nvme:queue-depth, ...) on the same paths (default: %(default)s)")
    rep.add_argument("--sweep", metavar="TABLE",
                     help="report on a table written by mpathlab sweep instead (.csv, or .parquet with pyarrow; "
                          "default: none)")
    rep.add_argument("--seed", type=arg_int(0, SEED_MAX), help="random seed of every run (default: the topology's)")
    rep.add_argument("--seeds", metavar="A,B,...", help="also run every selector once per seed and report "
                     "p50/p99/p99.9/p99.99 with 95%% t-intervals over the seeds (default: none)")
    rep.add_argument("--title", help="page title (default: the files, or what the sweep varied)")
    rep.add_argument("-o", "--out", default="report.html", help="output HTML file (default: %(default)s)")
    rep.set_defaults(func=cmd_report)

    mh = sub.add_parser("hosts", help="many hosts, one array: per-port load over time and per-host tails",
                        parents=[PROGRESS],
                        description="A multi-host topology (a topology file plus [hosts] count = N): every host "
                                    "loads the table (own selector state) and runs JOB; its paths share the "
                                    "array ports. See docs/many-hosts.md.")
    mh.add_argument("topology", help="multi-host topology file (TOML with a [hosts] section)")
    mh.add_argument("job", help="fio job file, run by every host")
    mh.add_argument("--selectors", default="historical-service-time,service-time,queue-length",
                    help="selectors to compare (separate with ';' when one has args: 'p2c:delay;sed'); "
                         "default: historical-service-time,service-time,queue-length")
    mh.add_argument("--seeds", default="1,2,3,4,5,6,7,8,9,10",
                    help="seeds; tails get 95%% t-intervals over them (default: 1,...,10)")
    mh.set_defaults(func=cmd_hosts)

    f = sub.add_parser("faults", help="run the fault studies (path failure, all paths down, slow path)",
                       parents=[_json("the results as JSON (default: a table)"), SEED_1, KERNEL, PROGRESS])
    f.add_argument("name", nargs="?", help="study name, or 'all'; without one, the list")
    f.add_argument("--list", action="store_true", help="list the studies")
    f.add_argument("--selector", help="run only this selector (default: round-robin, queue-length, service-time "
                                       "and historical-service-time)")
    f.set_defaults(func=cmd_faults)

    k = sub.add_parser("kernels", help="the kernel profiles and where each behaviour changed upstream")
    k.add_argument("name", nargs="?", help="one profile (5.8, 5.15, 6.1, 6.12, current or X.Y); "
                   "default: the table of all")
    k.add_argument("--markdown", action="store_true", help="print the table as Markdown, one wide line per "
                   "behaviour, as docs/kernel-profiles.md has it (default: blocks of at most 100 columns)")
    k.set_defaults(func=cmd_kernels)
    mp_ = sub.add_parser("maps", help="build maps from multipath.conf and a path topology; print the table "
                                      "lines and the `multipath -ll` view",
                         description="Discover maps as multipath-tools would: blacklist, settings by "
                                     "precedence, prioritizers, grouping, and the table assemble_map builds.")
    mp_.add_argument("topology", metavar="PATHS.toml", help="a path topology ([map], [paths.NAME] sections)")
    mp_.add_argument("--conf", required=True, metavar="multipath.conf",
                     help="the multipath.conf to apply (required, no default)")
    mp_.add_argument("-v", "--verbose", action="store_true",
                     help="also print every setting with where it came from, as multipath -v3 does (default: off)")
    mp_.add_argument("--show-paths", metavar="FMT",
                     help="print `multipathd show paths format FMT` instead (wildcards %%d %%D %%i %%w %%t %%T %%o "
                          "%%s %%c %%p %%S %%z %%m %%P %%0; default: the table lines and the -ll view)")
    mp_.add_argument("--show-maps", metavar="FMT",
                     help="print `multipathd show maps format FMT` instead (wildcards %%n %%w %%d %%F %%Q %%N %%t "
                          "%%S %%f %%h %%s %%v %%p %%e; default: the table lines and the -ll view)")
    mp_.add_argument("--mtools", metavar="VERSION",
                     help="multipath-tools version whose parser, built-in hardware table and defaults apply "
                          "(0.9.4 or 0.14.3; default: the topology's [multipath] mtools, else 0.14.3)")
    mp_.set_defaults(func=cmd_maps)
    mt_ = sub.add_parser("multipath", help="multipath-tools' own commands over mpathlab's model: "
                                           "`multipath -t` (the merged configuration)",
                         description="Print what `multipath -t` prints for a multipath.conf: the merged "
                                     "configuration on stdout, multipath's warnings on stderr.")
    mt_.add_argument("-t", dest="show_config", action="store_true", required=True,
                     help="print the merged configuration (the built-in one without --conf; required: the only "
                          "mode so far)")
    mt_.add_argument("--conf", metavar="multipath.conf", help="the configuration file (default: none)")
    mt_.add_argument("--mtools", metavar="VERSION", help="multipath-tools version: 0.9.4 or 0.14.3 "
                                                         "(default: 0.14.3)")
    mt_.set_defaults(func=cmd_multipath)

    cap = sub.add_parser("capture", help="snapshot this host's dm-multipath maps and paths into topology files "
                                          "(read-only; or from a dump of the shipped shell script)",
                         description="Read every dm-multipath map (dmsetup, sysfs), each path's queue, kind and "
                                     "service time over a window, NVMe subsystems, the kernel and CPUs, and write "
                                     "a topology file that run/report/sweep take. What could not be read is "
                                     "written as comments.")
    cap.add_argument("--seconds", type=float, default=5.0,
                     help="the window the paths' service times are measured over (default: %(default)s)")
    cap.add_argument("--root", default="/", help="read a root directory other than / (a fixture tree; dmsetup "
                                                  "is then not run) (default: /)")
    cap.add_argument("--from", dest="dump", metavar="DUMP",
                     help="read the output of the capture script (see --print-script) instead of this host (default: none)")
    cap.add_argument("--conf", metavar="multipath.conf", help="the host's multipath.conf, kept in the file "
                                                              "(default: /etc/multipath.conf when readable)")
    cap.add_argument("--map", help="write only this map or NVMe subsystem (default: every one)")
    cap.add_argument("-o", "--output", help="the topology file (one map), or a directory for several "
                                            "(default: standard output)")
    cap.add_argument("--print-script", action="store_true",
                     help="print the shell script that collects a dump on a host without Python "
                          "(sh capture.sh SECONDS > host.dump)")
    cap.set_defaults(func=cmd_capture)

    for name, (module, what) in VALIDATIONS.items():
        va = sub.add_parser(name, add_help=False, help="%s (python -m mpathlab.%s)" % (what, module))
        va.add_argument("args", nargs=argparse.REMAINDER,
                        help="the arguments of python -m mpathlab.%s (--help)" % module)
        va.set_defaults(func=cmd_validate, command=name)

    s = sub.add_parser("selectors", help="list the registered path selectors")
    s.set_defaults(func=cmd_selectors)

    fo = sub.add_parser("fio-options", help="list the fio job-file options: modelled, accepted without "
                        "effect, refused")
    fo.add_argument("name", nargs="?", help="show one option")
    fo.add_argument("--markdown", action="store_true", help="the list of docs/formats.md (Markdown)")
    fo.set_defaults(func=cmd_fio_options)

    t = sub.add_parser("table", help="parse a multipath table and print its canonical form or status",
                       parents=[KERNEL],
                       description="Parse a multipath table (a full '0 LEN multipath ...' line or only "
                                   "the target's parameters) as the kernel would.")
    t.add_argument("line", nargs="+", help="the table line")
    t.add_argument("--status", choices=("table", "info", "ima"), default="table",
                   help="what to print: the canonical table, or the INFO or IMA status (default: %(default)s)")
    t.add_argument("--device", action="append", metavar="MAJOR:MINOR=KIND",
                   help="a block device that exists on the host and what it is (scsi, nvme, null_blk, ...); "
                        "repeat per device; when given, any other device is refused as the kernel does "
                        "(default: every device exists and takes a hardware handler)")
    t.add_argument("--nr-cpus", type=arg_int(1, 8192), help="the host's nr_cpu_ids, for io-affinity masks "
                   "(default: 8; needs --device)")
    t.set_defaults(func=cmd_table)

    from .kernelc.cli import add_parser as add_kernel_selector_parser
    add_kernel_selector_parser(sub)

    st = sub.add_parser("status", help="explain `dmsetup status` / `dmsetup table` output in words",
                        parents=[_json("the parsed lines as JSON (default: words)")],
                        description="Explain multipath lines of `dmsetup status` or `dmsetup table` output "
                                    "(one or many lines, with or without 'name: ' prefixes; other targets are "
                                    "skipped): priority groups, the group in use, each path's state and fail "
                                    "count, and the selector's fields by name.")
    st.add_argument("text", nargs="*", metavar="LINE",
                    help="status or table lines (default: read standard input; '-' also reads it)")
    st.add_argument("--kind", choices=("auto", "status", "table"), default="auto",
                    help="what the lines are (default: auto, a line that is not a valid status is read as a "
                         "table)")
    st.add_argument("--table", metavar="LINE",
                    help="the device's table line, to name the selectors of status lines exactly (default: "
                         "guessed from the number of fields, or from table lines in the input)")
    st.set_defaults(func=cmd_status)

    # -v/-q on every command too (mpathlab run -v ...), not only before it
    for sp in sub.choices.values():
        if "-v" in sp._option_string_actions:
            continue        # the command has its own -v (maps: show where each setting came from)
        sp.add_argument("-v", "--verbose", action="count", default=argparse.SUPPRESS,
                        help="more log output: -v also the target's runtime kernel lines, -vv debug")
        sp.add_argument("-q", "--quiet", action="store_true", default=argparse.SUPPRESS,
                        help="log errors only (no kernel warnings)")
    return p


def _known_errors():
    from .selectors import RegistryError, SelectorError, UnknownSelectorError
    from .sim.devices import UnitError
    from .target import MessageError, StatusParseError, TargetError
    from .workload.fio import FioError
    from .topology import TopologyError
    from .nvme.policy import PolicyError
    from .live import LiveError
    from .report.html import ReportError
    from .sweep import SweepError
    from .profiles import HostError, ProfileError
    from .inputs import InputFileError
    from .budget import BudgetError
    return (BudgetError, HostError, ProfileError, PolicyError, LiveError, ReportError, SweepError, FioError, TopologyError,
            TargetError, MessageError, SelectorError, RegistryError,
            UnknownSelectorError, UnitError, InputError, OSError, StatusParseError, InputFileError)


def cmd_capture(args) -> int:
    from . import __version__, capture
    if args.print_script:
        sys.stdout.write(capture.script_text())
        return 0
    if not 0 <= args.seconds <= 3600:
        raise InputError("--seconds must be from 0 to 3600, got %g" % args.seconds)
    conf = None
    if args.conf:
        from .inputs import decode_text
        try:
            with open(args.conf, "rb") as f:
                conf = (args.conf, decode_text(f.read(), args.conf, "multipath.conf"))
        except OSError as e:
            raise InputError("--conf %s: cannot read: %s" % (args.conf, e.strerror or e)) from None
    if not args.dump and not os.path.isdir(args.root):
        raise InputError("--root %s: not a directory" % args.root)
    src = capture.read_dump(args.dump) if args.dump else capture.RootSource(args.root)
    if args.dump and not src.complete:
        print("mpathlab capture: warning: %s has no '@@ end' line: the script did not finish, its window may be "
              "missing" % args.dump, file=sys.stderr)
    cap = capture.collect(src, args.seconds, conf)
    # one file per dm-multipath map and per NVMe subsystem with controllers
    files = [(m.name, capture.write_topology(cap, m, __version__)) for m in cap.maps
             if args.map in (None, m.name)]
    files += [(s["name"], capture.write_nvme_topology(cap, s, __version__)) for s in cap.nvme
              if s["controllers"] and args.map in (None, s["name"])]
    # a value the dump holds but no kernel gives (a damaged or edited dump) is refused here, before any file is
    # written, rather than in the run that reads the file
    from .topology import topology_from_text
    for name, text in files:
        try:
            topology_from_text(text, "%s.toml" % name.replace("/", "_"))
        except _known_errors() as e:
            raise InputError("%s: the topology captured for %s is not one mpathlab runs (a value no kernel gives?): "
                             "%s" % (cap.source, name, e)) from None
    print(capture.summary(cap), file=sys.stderr)
    if not files:
        why = "; ".join(cap.notes[:2])
        print("mpathlab capture: no dm-multipath map or NVMe subsystem%s on %s: nothing written%s" % (
            " named %s" % args.map if args.map else "", cap.source, " (%s)" % why if why else ""), file=sys.stderr)
        return 0
    if len(files) > 1:
        if not args.output or not os.path.isdir(args.output):
            raise InputError("%d maps and subsystems (%s): choose one with --map NAME, or give -o DIRECTORY for "
                             "one file each" % (len(files), ", ".join(n for n, _ in files)))
    elif not args.output:
        sys.stdout.write(files[0][1])
        return 0
    for name, text in files:
        path = os.path.join(args.output, "%s.toml" % name.replace("/", "_")) if os.path.isdir(args.output) \
            else args.output
        with open(path, "w") as f:
            f.write(text)
        print("wrote %s" % path, file=sys.stderr)
    return 0


# the validation commands: each is its module's own command line (python -m mpathlab.MODULE), options included
VALIDATIONS = {
    "validate": ("validate", "the simulator against the kernel lab's results"),
    "validate-nvme": ("validate_nvme", "the NVMe model against the NVMe kernel lab"),
    "validate-faults": ("validate_faults", "the fault model against the kernel lab's fault cells"),
}


def cmd_validate(args) -> int:
    import importlib
    return importlib.import_module("." + VALIDATIONS[args.command][0], __package__).main(args.args)


MESSAGE_WORD_MAX = 200


def shorten_message(msg: str) -> str:
    """One line; a word of the input echoed whole (a table of 38,000 characters) is cut to its start,
    so the problem, which follows it, stays readable."""
    words = msg.replace("\n", " ").split(" ")
    return " ".join(w if len(w) <= MESSAGE_WORD_MAX else "%s...(%d characters)" % (w[:MESSAGE_WORD_MAX], len(w))
                    for w in words)


def main(argv: Optional[List[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    debug = os.environ.get("MPATHLAB_DEBUG") == "1"
    if argv[:1] and argv[0] in VALIDATIONS:
        return _dispatch(argparse.Namespace(command=argv[0], args=argv[1:], func=cmd_validate), debug)
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help()
        return EXIT_USAGE
    from . import klog
    klog.setup(-1 if getattr(args, "quiet", False) else getattr(args, "verbose", 0) or 0)
    try:
        return _dispatch(args, debug)
    finally:
        klog.teardown()


def reader_gone() -> int:
    """The reader of stdout (head, less) stopped reading: nothing more to say, and nothing left for
    the interpreter to flush into the closed pipe at exit.  The exit status to return (0)."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError):
        pass        # stdout is not a file (a test's capture)
    return 0


def _dispatch(args, debug: bool) -> int:
    from .inputs import MissingDependency
    try:
        return args.func(args)
    except KeyboardInterrupt:
        print("mpathlab: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return reader_gone()
    except MissingDependency as e:
        if debug:
            raise
        print("mpathlab: error: %s" % e, file=sys.stderr)
        return EXIT_MISSING_DEPENDENCY
    except _known_errors() as e:
        if debug:
            raise
        msg = str(e) or e.__class__.__name__
        print("mpathlab: error: %s" % shorten_message(msg), file=sys.stderr)
        return EXIT_INPUT
    except Exception as e:  # never a traceback for a user
        if debug:
            raise
        if isinstance(e, ValueError) and "integer string conversion" in str(e):
            # a value with thousands of digits read by a parser that has no bound of its own
            print("mpathlab: error: a number of more than 4300 digits in the input; no value needs that many",
                  file=sys.stderr)
            return EXIT_INPUT
        print("mpathlab: internal error: %s: %s (set MPATHLAB_DEBUG=1 for a traceback)"
              % (e.__class__.__name__, e), file=sys.stderr)
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
