"""`mpathlab kernel-selector ...`: build a kernel selector C file, diff it against a Python selector."""
from __future__ import annotations

import argparse
import os

from ..inputs import arg_int
from .build import SHIM_FAULTS

EXIT_DIVERGED = 4


def _features(text):
    try:
        return int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError("must be a number such as 0 or 0x1, not %r" % text) from None


def cmd_build(args) -> int:
    from ..selectors.base import DM_PS_USE_HR_TIMER
    from . import canonical_name, load
    cls = load(args.file, features=args.features, shim_faults=args.shim_fault or [])
    lib = cls.lib
    flags = "DM_PS_USE_HR_TIMER" if cls.features & DM_PS_USE_HR_TIMER else "none"
    print("%s: path selector %s, features 0x%x (%s), table_args %d, info_args %d, io hooks %s"
          % (os.path.abspath(args.file), cls.kernel_name, cls.features, flags, cls.table_args, cls.info_args,
             "yes" if cls.has_io_hooks else "no"))
    print("library: %s%s" % (lib.built.so_path, " (cached)" if lib.built.cached else ""))
    print("use it as: --selector %s" % canonical_name(args.file, args.features, args.shim_fault or []))
    return 0


def cmd_diff(args) -> int:
    from . import load
    from .diff import run_diff
    cls = load(args.c_file, features=args.features, shim_faults=args.shim_fault or [])
    res = run_diff(cls, args.py_name, args.traces, seed=args.seed, max_ops=args.max_ops)
    if res.divergence is None:
        print("%s vs %s: %d traces, 0 divergences" % (cls.kernel_name + " (C)", args.py_name, res.traces))
        return 0
    d = res.divergence
    print("%s (C) vs %s: divergence in trace %d (seed %d); minimal trace (%d of %d operations):"
          % (cls.kernel_name, args.py_name, res.traces - 1, args.seed, len(d.trace.ops), res.original_ops))
    print(d.format("C", "Python"))
    return EXIT_DIVERGED


def cmd_extract(args) -> int:
    from .tree import extract_md
    print(extract_md(args.tarball))
    return 0


def add_parser(sub) -> None:
    ks = sub.add_parser("kernel-selector", help="build a kernel dm-ps-*.c selector and run or diff it",
                        description="Compile a kernel path selector (drivers/md/dm-ps-NAME.c, from any kernel "
                                    "tree, patched or not) against mpathlab's shim into a shared library, "
                                    "use it as --selector c:PATH, or diff it against a Python selector.")
    kss = ks.add_subparsers(dest="kcommand", metavar="SUBCOMMAND")
    kss.required = True

    def common(p):
        p.add_argument("--features", type=_features, default=None,
                       help="build with the type's feature flags replaced by this value, e.g. 0 to drop "
                            "DM_PS_USE_HR_TIMER (default: as the file declares)")
        p.add_argument("--shim-fault", action="append", choices=sorted(SHIM_FAULTS),
                       help="build with a deliberately broken shim (to check that diff catches it; "
                            "default: none)")

    b = kss.add_parser("build", help="compile a dm-ps-*.c file (cached) and show its type")
    b.add_argument("file", help="the selector source, e.g. /usr/src/linux/drivers/md/dm-ps-round-robin.c")
    common(b)
    b.set_defaults(func=cmd_build)

    d = kss.add_parser("diff", help="replay random operation traces through a C and a Python selector",
                       description="Random traces (select, start/end I/O with clock jumps, fail/reinstate, "
                                   "status) through both; prints the first divergence as a minimal trace and "
                                   "exits with status %d, else 0." % EXIT_DIVERGED)
    d.add_argument("c_file", help="the selector source (dm-ps-NAME.c)")
    d.add_argument("py_name", help="the Python selector to compare with, e.g. round-robin")
    d.add_argument("--traces", type=arg_int(1, 10 ** 7), default=1000, help="number of random traces (default: 1000)")
    d.add_argument("--seed", type=arg_int(0, 2 ** 64 - 1), default=1, help="random seed of the traces (default: 1)")
    d.add_argument("--max-ops", type=arg_int(1, 10 ** 6), default=60, help="most operations per trace (default: 60)")
    common(d)
    d.set_defaults(func=cmd_diff)

    x = kss.add_parser("extract", help="extract drivers/md from a kernel source tarball into the cache")
    from .tree import DEFAULT_TARBALL
    x.add_argument("tarball", nargs="?", default=DEFAULT_TARBALL,
                   help="the tarball (default: %s, from Debian's linux-source-6.1)" % DEFAULT_TARBALL)
    x.set_defaults(func=cmd_extract)
