"""docs/selector-walkthrough.md runs as written: steps 1-4 (write, register, run, compare a toy selector) in
this process, and step 5 (the same selector at C speed, three places edited) in a copy of the source tree
whose core is rebuilt, run for run against the Python engine."""
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from mpathlab import selectors
from mpathlab.sim import fast

ROOT = Path(__file__).resolve().parent.parent
DOC = (ROOT / "docs" / "selector-walkthrough.md").read_text()
PY_STEPS, C_STEP = DOC.split("## 5.")


def blocks(text, lang):
    return [textwrap.dedent(b) for b in re.findall(r"```%s\n(.*?)```" % lang, text, re.S)]


def test_write_register_run_compare():
    ns: dict = {}
    try:
        exec(compile("\n".join(blocks(PY_STEPS, "python")), "selector-walkthrough.md", "exec"), ns)
        toy = ns["toy"]
        assert toy.engine == ("compiled" if fast.available() else "python")
    finally:
        if selectors.is_registered("fewest-bytes"):
            selectors.unregister("fewest-bytes")


def test_step_five_names_three_places():
    py, c = blocks(C_STEP, "python"), blocks(C_STEP, "c")
    assert len(py) == 2 and len(c) == 2
    assert "SEL_FEWEST_BYTES" in py[0] and "core_selector" in py[1]
    places = set(re.findall(r"\*\*([^*]+)\*\*", C_STEP))
    assert len(places) == 3


@pytest.mark.slow
@pytest.mark.skipif(not fast.available() or shutil.which("cc") is None, reason="needs the core and a C compiler")
def test_at_c_speed_in_three_places(tmp_path):
    tree = tmp_path / "tree"
    shutil.copytree(ROOT / "src", tree / "src", ignore=shutil.ignore_patterns("*.so", "__pycache__", "*.egg-info"))
    for f in ("setup.py", "pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / f, tree / f)
    boundary_py, class_py = blocks(C_STEP, "python")
    c_funcs, c_entry = blocks(C_STEP, "c")
    # 1. the boundary, after the line the page names; then the header is generated
    b = tree / "src/mpathlab/sim/boundary.py"
    anchor = "SEL_RR, SEL_QL, SEL_ST, SEL_HST, SEL_PY, SEL_IOA = range(6)\n"
    text = b.read_text()
    kinds = text.index("SELECTOR_KINDS = {")
    kinds_end = text.index("}\n", kinds) + 2
    assert anchor in text
    b.write_text(text[:kinds_end] + boundary_py + text[kinds_end:])
    env = dict(os.environ, PYTHONPATH=str(tree / "src"))
    subprocess.run([sys.executable, "-m", "mpathlab.sim.boundary", "--write"], cwd=tree, env=env, check=True)
    assert "SEL_FEWEST_BYTES = 6" in (tree / "src/mpathlab/_fastcore_boundary.h").read_text()
    # 2. the core: the functions before the ops table, the entry in it
    c = tree / "src/mpathlab/_fastcore.c"
    text = c.read_text()
    table = "static const selector_ops_t selector_ops[] = {\n"
    assert table in text
    text = text.replace(table, c_funcs + "\n" + table + c_entry)
    c.write_text(text)
    subprocess.run(["nice", "-n", "19", sys.executable, "setup.py", "-q", "build_ext", "--inplace"], cwd=tree,
                   env=env, check=True, capture_output=True)
    # 3. the class declares its C implementation; both engines run it, run for run the same
    toy = blocks(PY_STEPS, "python")
    script = "\n".join(toy[:2]) + "\n" + class_py + textwrap.dedent("""
        from mpathlab.sim import Exponential, PathModel, fast
        from mpathlab.sim.engine import Simulation
        from mpathlab.workload.fio import parse_fio
        paths = [PathModel("fast", (8, 16), Exponential(100_000)), PathModel("slow", (8, 32), Exponential(200_000))]
        job = parse_fio("[j]\\nrw=randread\\nbs=4k\\nioengine=libaio\\niodepth=16\\nnumber_ios=20000\\n").jobs
        table = "0 2097152 multipath 0 0 1 1 fewest-bytes 0 2 1 8:16 1 8:32 1"
        sim = Simulation(table, paths, job, seed=7)
        assert fast.core_kind(sim.mp.priority_groups[0].ps) == 6
        c = sim.run()
        p = Simulation(table, paths, job, seed=7, engine="python").run()
        assert c.engine == "compiled" and p.engine == "python"
        assert c.shares == p.shares and c.status_info == p.status_info
        assert c.jobs[0].read_lat.hist == p.jobs[0].read_lat.hist and c.events == p.events
        class Changed(FewestBytes):
            name = "fewest-bytes-changed"
        assert fast.core_kind(Changed()) == fast.SEL_PY
        print("ok", c.shares)
    """)
    r = subprocess.run([sys.executable, "-c", script], cwd=tree, env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.startswith("ok ")
