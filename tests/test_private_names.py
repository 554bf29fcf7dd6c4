"""No module reaches into another package's private names (``x._name``, ``from pkg import _name``).

A package is a subpackage of mpathlab (``mpathlab.sim``) or a top-level module (``mpathlab.runner``).
A private name is one a package defines with a leading underscore: a module-level name, a method, or an
attribute it assigns (``self._x = ...``). Reading such a name from another package is refused; the owner
gives it a public name instead.
"""
from __future__ import annotations

import ast
import os
import sys
from collections import defaultdict

import pytest

SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")


def is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def package_of(module: str) -> str:
    return ".".join(module.split(".")[:2])


def modules():
    for dirpath, _dirs, files in os.walk(os.path.join(SRC, "mpathlab")):
        for f in sorted(files):
            if f.endswith(".py"):
                path = os.path.join(dirpath, f)
                rel = os.path.relpath(path, SRC)[:-3].replace(os.sep, ".")
                is_pkg = rel.endswith(".__init__")
                yield path, (rel[:-len(".__init__")] if is_pkg else rel), is_pkg


def imported_module(node: ast.ImportFrom, module: str, is_pkg: bool) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".")
    if not is_pkg:
        base = base[:-1]
    base = base[:len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def scan():
    """(definitions: package -> private names, uses: [(package, where, name, kind)])."""
    defined = defaultdict(set)
    uses = []
    for path, module, is_pkg in modules():
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        pkg = package_of(module)
        where = "%s:%%d" % os.path.relpath(path, SRC)
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and is_private(node.name):
                defined[pkg].add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and is_private(node.id):
                defined[pkg].add(node.id)
            elif isinstance(node, ast.Attribute) and is_private(node.attr):
                if isinstance(node.ctx, ast.Store):
                    defined[pkg].add(node.attr)
                elif not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
                    uses.append((pkg, where % node.lineno, node.attr, ast.unparse(node)))
            elif isinstance(node, ast.ImportFrom):
                src = imported_module(node, module, is_pkg)
                for a in node.names:
                    if is_private(a.name) and src.startswith("mpathlab.") and package_of(src) != pkg:
                        uses.append((pkg, where % node.lineno, a.name, "from %s import %s" % (src, a.name)))
    return defined, uses


def cross_package_uses():
    defined, uses = scan()
    out = []
    for pkg, where, name, text in uses:
        owners = {p for p, names in defined.items() if name in names}
        if text.startswith("from ") or (owners and pkg not in owners):
            out.append("%s: %s (private to %s)" % (where, text, ", ".join(sorted(owners)) or "?"))
    return out


def test_no_private_names_across_packages():
    assert cross_package_uses() == []


def test_the_scan_sees_a_reach_across(tmp_path, monkeypatch):
    # the check can fail: a module of another package reading a simulator-private attribute
    pkg = tmp_path / "mpathlab"
    (pkg / "sim").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sim" / "__init__.py").write_text("class Simulation:\n    def __init__(self):\n        self._heap = []\n")
    (pkg / "nvme.py").write_text("def f(sim):\n    return sim._heap\n")
    (pkg / "runner.py").write_text("from .sim import _x\n")
    monkeypatch.setattr(sys.modules[__name__], "SRC", str(tmp_path))
    found = cross_package_uses()
    assert any("sim._heap (private to mpathlab.sim)" in f for f in found), found
    assert any("from mpathlab.sim import _x" in f for f in found), found
