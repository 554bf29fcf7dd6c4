"""A C selector that crashes or never returns: one line on stderr naming the selector and the call,
exit 6 (EXIT_SELECTOR), instead of exit 139 with nothing said or a hang.  The selector is the kernel's
round-robin (extracted from linux-source-6.1 at test time) with one line of rr_select_path changed."""
import os
import subprocess
import sys
import time

import pytest

from conftest import require

ROOT = os.path.join(os.path.dirname(__file__), "..")
HOOK = "spin_lock_irqsave(&s->lock, flags);\n\tif (!list_empty(&s->valid_paths)) {"


@pytest.fixture(scope="module")
def rr_source():
    tarball = require("/usr/src/linux-source-6.1.tar.xz", "the kernel's selector sources (linux-source-6.1)")
    require("cc", "a C compiler builds the kernel selectors")
    from mpathlab.kernelc.tree import extract_md
    with open(os.path.join(extract_md(tarball), "dm-ps-round-robin.c")) as f:
        text = f.read()
    assert text.count(HOOK) == 1
    return text


def _broken(tmp_path, rr_source, inject, name="dm-ps-round-robin.c"):
    d = tmp_path / "src"
    d.mkdir(exist_ok=True)
    (d / name).write_text(rr_source.replace(HOOK, inject + "\n\t" + HOOK))
    return str(d / name)


def _run(tmp_path, c_file, budget=None, timeout=120):
    job = tmp_path / "j.fio"
    job.write_text("[j]\nrw=randread\nbs=4k\nnumber_ios=20\n")
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "src"))
    env.pop("MPATHLAB_DEBUG", None)
    if budget is not None:
        env["MPATHLAB_C_CALL_BUDGET_MS"] = budget
    t = time.monotonic()
    p = subprocess.run([sys.executable, "-m", "mpathlab", "run", "--table",
                        "0 8 multipath 0 0 1 1 round-robin 0 2 1 8:16 1 8:32 1", str(job),
                        "--selector", "c:" + c_file], capture_output=True, text=True, timeout=timeout, env=env)
    return p, time.monotonic() - t


@pytest.mark.parametrize("inject,what", [
    ("*(volatile int *)0 = 1;", "crashed (SIGSEGV) in its select_path call"),
    ("BUG();", "crashed (SIGABRT, BUG() at "),
])
def test_a_crashing_c_selector_is_named_with_its_call(tmp_path, rr_source, inject, what):
    c_file = _broken(tmp_path, rr_source, inject)
    p, _ = _run(tmp_path, c_file)
    assert p.returncode == 6, (p.returncode, p.stderr[-500:])
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in p.stderr, lines
    assert lines[0].startswith("mpathlab: error: C selector round-robin (%s)" % c_file)
    assert what in lines[0] and lines[0].endswith("in its select_path call")


def test_a_c_selector_that_never_returns_is_stopped_by_the_call_budget(tmp_path, rr_source):
    c_file = _broken(tmp_path, rr_source, "for (;;) cpu_relax();" if "cpu_relax" in rr_source
                     else "for (volatile int i = 1; i; ) ;")
    p, took = _run(tmp_path, c_file, budget="300")
    assert p.returncode == 6, (p.returncode, p.stderr[-500:])
    assert p.stderr.strip() == ("mpathlab: error: C selector round-robin (%s) did not return from its "
                                "select_path call within 300 ms (MPATHLAB_C_CALL_BUDGET_MS)" % c_file)
    assert took < 60


def test_a_bad_call_budget_is_an_input_error(tmp_path, rr_source):
    p, _ = _run(tmp_path, _broken(tmp_path, rr_source, ""), budget="\u0663")
    assert p.returncode == 3 and p.stderr.count("\n") == 1
    assert "MPATHLAB_C_CALL_BUDGET_MS=" in p.stderr and "a whole number of milliseconds" in p.stderr


def test_the_unchanged_selector_runs_under_the_guard(tmp_path, rr_source):
    p, _ = _run(tmp_path, _broken(tmp_path, rr_source, ""), budget="2000")
    assert p.returncode == 0, p.stderr[-500:]
    assert "I/O: 1 completed, 0 errored, 0 pending" in p.stdout
