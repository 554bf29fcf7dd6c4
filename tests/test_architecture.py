"""The layer contracts of pyproject.toml [tool.importlinter], checked with import-linter."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LINT = shutil.which("lint-imports", path=os.path.dirname(sys.executable)) or shutil.which("lint-imports")

pytestmark = pytest.mark.skipif(LINT is None, reason="import-linter is in the test extras")


def lint(src: str):
    env = dict(os.environ, PYTHONPATH=src)
    return subprocess.run([LINT, "--config", os.path.join(ROOT, "pyproject.toml"), "--no-cache"],
                          cwd=src, env=env, capture_output=True, text=True)


def test_contracts_kept():
    r = lint(os.path.join(ROOT, "src"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "2 kept, 0 broken" in r.stdout


def copy_package(tmp_path):
    dst = tmp_path / "src"
    shutil.copytree(os.path.join(ROOT, "src", "mpathlab"), dst / "mpathlab",
                    ignore=shutil.ignore_patterns("*.so", "__pycache__", "shim"))
    return dst


def append(path, line):
    with open(path, "a") as f:
        f.write("\n" + line + "\n")


def test_upward_import_breaks_layers(tmp_path):
    # the simulator reaching up to the run assembly (as sim/multihost.py once did)
    src = copy_package(tmp_path)
    append(src / "mpathlab" / "sim" / "engine.py", "from ..runner import run_simulation  # noqa")
    r = lint(str(src))
    assert r.returncode != 0
    assert "mpathlab.sim.engine -> mpathlab.runner" in r.stdout


def test_cycle_between_siblings_breaks(tmp_path):
    # a cycle inside one layer: two assembly modules importing each other
    src = copy_package(tmp_path)
    append(src / "mpathlab" / "topology.py", "from . import sweep  # noqa")
    append(src / "mpathlab" / "sweep.py", "from . import topology  # noqa")
    r = lint(str(src))
    assert r.returncode != 0
    assert "No import cycles between subpackages BROKEN" in r.stdout
