"""What a Python user expects: a licence, typed public API checked by mypy, one
version, --help with defaults, and README examples that run as written."""
import argparse
import contextlib
import importlib.util
import io
import os
import re
import shlex
import subprocess
import sys

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python < 3.11
    import tomli as tomllib

import mpathlab
from mpathlab import cli

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))


def test_licence_is_the_mit_text_pyproject_declares():
    with open(os.path.join(ROOT, "LICENSE")) as f:
        text = f.read()
    assert text.startswith("MIT License") and "Copyright (c) 2026 the mpathlab authors" in text
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        proj = tomllib.load(f)
    assert proj["project"]["license"] == {"text": "MIT"}
    assert "License :: OSI Approved :: MIT License" in proj["project"]["classifiers"]


def test_one_version_source_and_package_metadata():
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        proj = tomllib.load(f)
    assert "version" not in proj["project"] and "version" in proj["project"]["dynamic"]
    assert proj["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "mpathlab.__version__"}
    assert re.fullmatch(r"\d+\.\d+\.\d+", mpathlab.__version__)
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        cli.main(["--version"])
    assert out.getvalue().strip() == "mpathlab %s" % mpathlab.__version__
    assert proj["project"]["urls"] and "Typing :: Typed" in proj["project"]["classifiers"]
    assert os.path.exists(os.path.join(ROOT, "src", "mpathlab", "py.typed"))
    assert "py.typed" in proj["tool"]["setuptools"]["package-data"]["mpathlab"]


def test_mypy_is_clean_on_the_public_api():
    if importlib.util.find_spec("mypy") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("mypy is missing under CI (it is in the test extra)")
        pytest.skip("mypy not installed (pip install -e .[test])")
    p = subprocess.run([sys.executable, "-m", "mypy", "--no-error-summary", "--cache-dir",
                        os.path.join(ROOT, ".mypy_cache"), "-p", "mpathlab.selectors", "-p", "mpathlab.target",
                        "-p", "mpathlab.sim"], cwd=os.path.join(ROOT, "src"), capture_output=True, text=True,
                       timeout=600)
    errors = [l for l in p.stdout.splitlines() if ": error:" in l]
    assert p.returncode == 0 and not errors, p.stdout[-3000:] + p.stderr[-1000:]


def _options(parser, name="mpathlab"):
    for a in parser._actions:
        if isinstance(a, argparse._SubParsersAction):
            for n, sp in a.choices.items():
                yield from _options(sp, n)
        elif not isinstance(a, (argparse._HelpAction, argparse._VersionAction)):
            yield name, a


def test_every_option_has_help_and_every_value_option_its_default():
    missing = []
    for cmd, a in _options(cli.build_parser()):
        if not a.help:
            missing.append("%s %s: no help" % (cmd, a.option_strings or a.dest))
        elif a.option_strings and a.nargs != 0 and "default" not in a.help:
            missing.append("%s %s: help does not say the default" % (cmd, a.option_strings))
    assert not missing, missing


def _readme_commands():
    with open(os.path.join(ROOT, "README.md")) as f:
        text = f.read()
    cmds = []
    for block in re.findall(r"```sh\n(.*?)```", text, re.S):
        joined = re.sub(r"\\\n\s*", " ", block)
        for line in joined.splitlines():
            line = line.strip()
            if line.startswith("./mpathlab "):
                cmds.append(shlex.split(line, comments=True)[1:])
    return cmds


OUTPUTS = {"--out", "-o"}


def test_readme_examples_only_name_files_the_repository_ships():
    cmds = _readme_commands()
    assert len(cmds) >= 15
    for argv in cmds:
        for i, tok in enumerate(argv):
            if i and argv[i - 1] in OUTPUTS or argv[i - 1:i] == ["--sweep"]:
                continue            # written by the command (or by the sweep example before it)
            if tok.endswith((".toml", ".fio")) or tok.startswith("examples/"):
                assert os.path.exists(os.path.join(ROOT, tok)), (argv, tok)


def _cheap(argv):
    cmd = argv[0]
    if any("$" in tok for tok in argv):
        return False        # needs the shell (a variable set by an earlier line)
    if cmd in ("table", "selectors", "status", "run"):
        return True
    return cmd == "reproduce" and "--list" in argv


def test_cheap_readme_examples_run_as_written(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    ran = 0
    for argv in _readme_commands():
        if not _cheap(argv):
            continue
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = cli.main(argv + (["--no-progress"] if argv[0] == "run" else []))
        assert rc == 0, (argv, err.getvalue())
        assert out.getvalue().strip(), argv
        ran += 1
    assert ran >= 9
