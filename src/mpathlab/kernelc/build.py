"""Build a kernel path-selector source file (dm-ps-*.c) into a shared library.

The C file is read from wherever the user keeps it (a kernel tree, a patched
copy); nothing of it is stored in mpathlab.  It is compiled unmodified
against mpathlab's own shim headers (``shim/``) with the flags Kbuild uses
that change semantics, together with the shim runtime, into one shared
library per selector (their static names repeat), cached under the user's
cache directory by a hash of everything that went into it.

Quoted includes (``"dm-path-selector.h"``, ``"dm.h"``, ``"dm-mpath.h"``)
resolve beside the C file first, as in the kernel build, so a kernel tree's
own headers are used; ``shim/fallback`` supplies them for a file kept
outside a tree.  ``<linux/...>`` headers are generated into the build
directory and all lead to the shim.
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from typing import Iterable, List, Optional, Sequence

from ..kernel import EINVAL
from ..selectors.registry import RegistryError

HERE = os.path.dirname(os.path.abspath(__file__))
SHIM = os.path.join(HERE, "shim")
FALLBACK = os.path.join(SHIM, "fallback")

# Kbuild flags that change what C code means; everything else is ours.
KBUILD_SEMANTIC_FLAGS = ("-fno-strict-overflow", "-fno-strict-aliasing", "-Wno-pointer-sign")
CFLAGS = ("-shared", "-fPIC", "-pthread", "-O2", "-std=gnu11", "-fvisibility=hidden", "-fno-common",
          "-Wall", "-Wno-unused-function", "-Wno-unused-variable", "-Wno-unused-but-set-variable",
          "-Wno-declaration-after-statement") + KBUILD_SEMANTIC_FLAGS

# <linux/NAME> headers a selector may include; each one leads to the shim.
LINUX_HEADERS = (
    "atomic", "backing-dev", "bio", "bitmap", "bitops", "blk-mq", "blkdev", "bug", "compiler", "completion",
    "cpu", "cpumask", "ctype", "delay", "device-mapper", "export", "fs", "gfp", "hdreg", "init", "jiffies",
    "kernel", "kobject", "ktime", "limits", "list", "log2", "math64", "minmax", "module", "moduleparam",
    "mutex", "numa", "percpu", "printk", "rcupdate", "refcount", "sched", "sched/clock", "slab", "smp",
    "spinlock", "string", "time", "timekeeping", "topology", "types",
)

# Deliberate shim faults (build option), so tests can show a broken shim is caught.
SHIM_FAULTS = {
    "list_move_tail_to_head": "MPL_SHIM_FAULT_LIST_MOVE_TAIL_TO_HEAD",
}

_INCLUDE_RE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


class BuildError(RegistryError):
    """The C file could not be read, compiled or loaded (one line; the full log is kept)."""

    def __init__(self, message: str):
        super().__init__(message, EINVAL)


def cache_dir() -> str:
    """Where built selectors are kept: $MPATHLAB_CACHE_DIR, else $XDG_CACHE_HOME/mpathlab, else ~/.cache/mpathlab."""
    base = os.environ.get("MPATHLAB_CACHE_DIR")
    if not base:
        xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        base = os.path.join(xdg, "mpathlab")
    return base


def compiler() -> str:
    return os.environ.get("CC") or "cc"


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise BuildError("cannot read %s: %s" % (path, e.strerror or e)) from None


def _quoted_closure(c_file: str) -> List[str]:
    """Headers beside the C file reached through quoted includes (part of the cache key)."""
    d = os.path.dirname(c_file)
    seen: List[str] = []
    todo = [c_file]
    while todo:
        text = _read(todo.pop()).decode("latin-1")
        for name in _INCLUDE_RE.findall(text):
            p = os.path.normpath(os.path.join(d, name))
            if os.path.isfile(p) and p not in seen:
                seen.append(p)
                todo.append(p)
    return sorted(seen)


def _shim_files() -> List[str]:
    out = []
    for root, _, files in os.walk(SHIM):
        out.extend(os.path.join(root, f) for f in files if f.endswith((".h", ".c")))
    return sorted(out)


class Built:
    """A built selector library: its path, the C file, and the options used."""

    def __init__(self, so_path: str, c_file: str, features: Optional[int], shim_faults: Sequence[str],
                 cached: bool):
        self.so_path = so_path
        self.c_file = c_file
        self.features = features
        self.shim_faults = tuple(shim_faults)
        self.cached = cached

    def __repr__(self):
        return "Built(%r from %r)" % (self.so_path, self.c_file)


def _options_defines(features: Optional[int], shim_faults: Iterable[str]) -> List[str]:
    defs = []
    if features is not None:
        if not 0 <= int(features) <= 0xFFFFFFFF:
            raise BuildError("features must be an unsigned 32-bit value, not %r" % (features,))
        defs.append("-DMPL_FEATURES_OVERRIDE=%du" % int(features))
    for f in shim_faults:
        if f not in SHIM_FAULTS:
            raise BuildError("unknown shim fault %r (known: %s)" % (f, ", ".join(sorted(SHIM_FAULTS))))
        defs.append("-D%s=1" % SHIM_FAULTS[f])
    return sorted(defs)


def build(c_file: str, *, features: Optional[int] = None, shim_faults: Sequence[str] = (),
          force: bool = False) -> Built:
    """Compile ``c_file`` (cached); returns a :class:`Built`.

    ``features`` replaces the type's feature flags after module_init (e.g. 0
    turns off DM_PS_USE_HR_TIMER, like HST before the flag existed) without
    touching the file.  ``shim_faults`` names deliberate shim bugs for tests.
    """
    c_file = os.path.abspath(c_file)
    if not c_file.endswith(".c"):
        raise BuildError("%s: a selector source must be a .c file" % c_file)
    src = _read(c_file)
    defines = _options_defines(features, shim_faults)
    cc = compiler()
    h = hashlib.sha256()
    h.update(("mpathlab-kernelc-1\0%s\0%s\0%s\0" % (cc, " ".join(CFLAGS), " ".join(defines))).encode())
    h.update(src)
    for p in _quoted_closure(c_file) + _shim_files():
        h.update(p.encode() + b"\0" + _read(p) + b"\0")
    key = h.hexdigest()[:20]
    stem = os.path.basename(c_file)[:-2]
    out_dir = os.path.join(cache_dir(), "kernelc")
    so_path = os.path.join(out_dir, "%s-%s.so" % (stem, key))
    if os.path.exists(so_path) and not force:
        return Built(so_path, c_file, features, shim_faults, cached=True)
    if shutil.which(cc) is None:
        raise BuildError("no C compiler: %r not found (set CC)" % cc)
    os.makedirs(out_dir, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="mpathlab-kc-") as tmp:
        inc = os.path.join(tmp, "include")
        for name in LINUX_HEADERS:
            p = os.path.join(inc, "linux", name + ".h")
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "w") as f:
                f.write("/* generated by mpathlab: <linux/%s.h> is the shim */\n#include \"mpl_dm.h\"\n" % name)
        # libc's <errno.h> includes <linux/errno.h>: hand it the real one.
        with open(os.path.join(inc, "linux", "errno.h"), "w") as f:
            f.write("/* generated by mpathlab */\n#include_next <linux/errno.h>\n"
                    "#ifndef ENOTSUPP\n#define ENOTSUPP 524\n#endif\n")
        tmp_so = os.path.join(out_dir, ".%s-%s.%d.so" % (stem, key, os.getpid()))
        cmd = [cc, *CFLAGS, "-I", inc, "-I", SHIM, "-iquote", os.path.dirname(c_file), "-iquote", FALLBACK,
               *defines, c_file, os.path.join(SHIM, "mpl_runtime.c"), "-o", tmp_so]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise BuildError("%s: compiler failed to run: %s" % (c_file, e)) from None
        log_path = os.path.join(out_dir, "%s-%s.log" % (stem, key))
        with open(log_path, "w") as f:
            f.write(" ".join(cmd) + "\n" + proc.stdout + proc.stderr)
        if proc.returncode != 0:
            first = next((ln for ln in proc.stderr.splitlines() if ": error:" in ln or "fatal error" in ln),
                         (proc.stderr.strip().splitlines() or ["exit status %d" % proc.returncode])[0])
            raise BuildError("%s (full compiler log: %s)" % (first.strip(), log_path))
        os.replace(tmp_so, so_path)
    return Built(so_path, c_file, features, shim_faults, cached=False)
