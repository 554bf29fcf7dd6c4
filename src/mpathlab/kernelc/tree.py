"""Extract a kernel tree's drivers/md from a source tarball (Debian's linux-source-X.Y).

Only drivers/md is extracted (that is where dm-ps-*.c and the headers they
include live), into the user's cache directory, once per tarball.
"""
from __future__ import annotations

import os
import shutil
import subprocess

from .build import BuildError, cache_dir

DEFAULT_TARBALL = "/usr/src/linux-source-6.1.tar.xz"


def extract_md(tarball: str = DEFAULT_TARBALL) -> str:
    """The path of drivers/md extracted from ``tarball`` (cached)."""
    try:
        st = os.stat(tarball)
    except OSError as e:
        raise BuildError("cannot read kernel source tarball %s: %s" % (tarball, e.strerror or e)) from None
    name = os.path.basename(tarball).split(".tar")[0]
    dest = os.path.join(cache_dir(), "trees", "%s-%d-%d" % (name, st.st_size, int(st.st_mtime)))
    done = os.path.join(dest, ".complete")
    if not os.path.exists(done):
        if shutil.which("tar") is None:
            raise BuildError("cannot extract %s: no tar command" % tarball)
        tmp = dest + ".tmp%d" % os.getpid()
        os.makedirs(tmp, exist_ok=True)
        proc = subprocess.run(["tar", "-xf", tarball, "-C", tmp, "--wildcards", "*/drivers/md/*"],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            shutil.rmtree(tmp, ignore_errors=True)
            raise BuildError("cannot extract drivers/md from %s: %s" % (tarball, proc.stderr.strip()[:200]))
        if os.path.isdir(dest):
            shutil.rmtree(dest)
        os.replace(tmp, dest)
        with open(done, "w") as f:
            f.write(tarball + "\n")
    for top in sorted(os.listdir(dest)):
        md = os.path.join(dest, top, "drivers", "md")
        if os.path.isdir(md):
            return md
    raise BuildError("%s has no drivers/md" % tarball)
