"""The `mpathlab run --conf`, `mpathlab maps` and `mpathlab multipath -t` commands (wired in mpathlab.cli)."""
from __future__ import annotations

import json
import sys

from .conf import ConfError, load_conf, parse_conf, refuse_if_failed
from .paths import load_path_topology
from .profile import get_profile, versions


def _print_conf_messages(conf) -> None:
    # multipath's own words, as it prints them while loading the file
    for w in conf.messages:
        print(w, file=sys.stderr)
    for n in conf.notes:
        print("mpathlab: note: %s" % n, file=sys.stderr)


def _version(args, topo=None) -> str:
    v = getattr(args, "mtools", None) or (topo.mtools if topo is not None else None)
    if v is None:
        return get_profile().version
    try:
        return get_profile(v).version
    except KeyError:
        raise ConfError("--mtools %s: unknown multipath-tools version; known: %s" % (v, ", ".join(versions())))


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


def _load(args, topo=None):
    conf = load_conf(args.conf, _version(args, topo))
    _print_conf_messages(conf)
    refuse_if_failed(conf)
    return conf


@_as_input_error
def cmd_multipath(args) -> int:
    from .showconfig import show_config
    if args.conf:
        conf = _load(args)
    else:
        conf = parse_conf("", "multipath.conf", _version(args))
    sys.stdout.write(show_config(conf))
    return 0


@_as_input_error
def cmd_maps(args) -> int:
    from .run import discover, maps_text
    topo = load_path_topology(args.topology)
    conf = _load(args, topo)
    if getattr(args, "show_paths", None) or getattr(args, "show_maps", None):
        from .showformat import show_maps, show_paths
        maps, _, _ = discover(conf, topo)
        if args.show_paths:
            print(show_paths(maps, args.show_paths))
        if args.show_maps:
            print(show_maps(maps, args.show_maps))
        return 0
    print(maps_text(conf, topo, verbose=args.verbose))
    return 0


@_as_input_error
def run_conf(args, jobs, progress) -> int:
    """run --conf CONF TOPOLOGY JOB: the map from multipath.conf, multipathd in the loop."""
    from ..report import fio_json, run_summary
    from .printer import format_ll
    from .run import daemon_report, simulate_conf
    topo = load_path_topology(args.files[0])
    conf = _load(args, topo)
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
