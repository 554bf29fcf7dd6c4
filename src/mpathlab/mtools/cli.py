"""The `mpathlab run --conf` and `mpathlab maps` commands (wired in mpathlab.cli)."""
from __future__ import annotations

import json
import sys

from .conf import ConfError, load_conf
from .paths import load_path_topology


def _print_conf_messages(conf) -> None:
    for w in conf.warnings:
        print("mpathlab: multipath.conf: %s" % w, file=sys.stderr)
    for n in conf.notes:
        print("mpathlab: note: %s" % n, file=sys.stderr)


def _as_input_error(fn):
    """A multipath.conf error leaves the CLI as its other input errors do (one line, exit 3)."""
    def wrapper(*a, **kw):
        from ..inputs import InputError
        try:
            return fn(*a, **kw)
        except ConfError as e:
            raise InputError(str(e)) from None
    wrapper.__doc__ = fn.__doc__
    return wrapper


@_as_input_error
def cmd_maps(args) -> int:
    from .run import maps_text
    conf = load_conf(args.conf)
    _print_conf_messages(conf)
    topo = load_path_topology(args.topology)
    print(maps_text(conf, topo, verbose=args.verbose))
    return 0


@_as_input_error
def run_conf(args, jobs, progress) -> int:
    """run --conf CONF TOPOLOGY JOB: the map from multipath.conf, multipathd in the loop."""
    from ..report import fio_json, run_summary
    from .printer import format_ll
    from .run import daemon_report, simulate_conf
    conf = load_conf(args.conf)
    _print_conf_messages(conf)
    topo = load_path_topology(args.files[0])
    overrides = {}
    if args.hz:
        overrides["hz"] = args.hz
    res, d, mp = simulate_conf(conf, topo, jobs.jobs, seed=args.seed, map_name=args.map or "",
                               progress=progress, **overrides)
    if args.json or args.json_plus:
        doc = fio_json(res, jobs.global_options, plus=args.json_plus)
        doc["multipathd"] = {"map": mp.alias, "wwid": mp.wwid, "table": d.tables[0][1],
                             "tables": [{"time_ns": t, "table": tb} for t, tb in d.tables],
                             "events": [{"time_ns": t, "event": e} for t, e in d.log],
                             "ll": format_ll(d.mp, d.target)}
        json.dump(doc, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print("map %s: %s" % (mp.alias, d.tables[0][1]))
        print(run_summary(res))
        print(daemon_report(d, d.target))
    return 0
