"""The validation commands' terminal output fits 100 columns; the Markdown tables of the docs pages are
what --markdown asks for (one line per cell, as wide as it needs)."""
import contextlib
import io
import json
import os

import pytest

from mpathlab import validate, validate_faults, validate_nvme
from mpathlab.cli import main
from mpathlab.report.text import columns

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FAULTS = os.path.join(ROOT, "tests", "data", "kernel-lab-faults-6.1-stored.json")


def _run(argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(argv)
    return rc, out.getvalue(), err.getvalue()


def _widest(text):
    return max(len(line) for line in text.splitlines())


def test_columns_cut_a_wide_table_into_tables_that_fit():
    head = ["name", "a", "b"]
    rows = ["group one", ["x", "1" * 5, "2" * 6], ["yy", "3", "4"]]
    # by hand: widths 4 | 5 | 6; one table is 4+2+5+2+6 = 19 columns
    assert columns(head, rows, width=19) == ["name  a      b", "group one", "x     11111  222222", "yy    3      4"]
    # at 18 columns b goes into a second table that repeats the kept column and the heading line
    assert columns(head, rows, width=18) == ["name  a", "group one", "x     11111", "yy    3",
                                             "name  b", "group one", "x     222222", "yy    4"]
    assert columns(head, rows, width=None) == columns(head, rows, width=19)


def test_validate_prints_a_terminal_table_and_markdown_when_asked(capsys):
    path = os.path.join(ROOT, validate.DEFAULT_RESULTS)
    if not os.path.exists(path):
        pytest.skip("the kernel lab's results are not in this checkout")
    argv = [path, "--filter", "T4q", "--kernel", "6.1", "--runtime", "1", "--seeds", "2", "--measured"]
    assert validate.main(argv) == 0
    out = capsys.readouterr().out
    assert _widest(out) <= 100, max(out.splitlines(), key=_widest)
    lines = out.splitlines()
    # one heading per topology, then a row per selector, queue mode and depth
    assert lines[0].split()[:3] == ["selector,", "mode,", "depth"]
    assert "6.1 T4q: 3x4ms/4t+1x16ms/4t" in lines
    assert any(line.startswith("  round-robin bio d64 ") for line in lines)
    assert any(line.strip().startswith("diagnostic: range over seeds") for line in lines)
    assert any(line.startswith("guest model kernel 6.1 session") for line in lines)
    assert validate.main(argv[:5] + ["--markdown"]) == 0
    md = capsys.readouterr().out
    assert md.startswith("| kernel | cell |") and _widest(md) > 100


def test_validate_faults_terminal_table_fits_and_keeps_every_cell(capsys):
    assert validate_faults.main([FAULTS]) == 0
    out = capsys.readouterr().out
    assert _widest(out) <= 100, max(out.splitlines(), key=_widest)
    cells = {r["cell"] for r in validate_faults.compare(json.load(open(FAULTS)))}
    for cell in cells:          # each cell under its kernel and fault heading, in each of the tables
        kernel, fault, rest = cell.split(None, 2)
        assert "%s %s" % (kernel, fault) in out.splitlines() and ("  " + rest) in out
    assert validate_faults.main([FAULTS, "--markdown"]) == 0
    md = capsys.readouterr().out
    table = [line for line in md.splitlines() if line.startswith("|")]
    assert md.startswith("| cell | n |") and len(table) == len(cells) + 2
    assert "%d cells within" % len(cells) in md


def test_validate_nvme_terminal_table_fits():
    path = os.path.join(ROOT, validate_nvme.DEFAULT_RESULTS)
    if not os.path.exists(path):
        pytest.skip("the NVMe kernel lab's results are not in this checkout")
    cells = [c for c in validate_nvme.load_cells(path) if c["kernel"] == "6.1" and c["cell"] in ("C1", "A2-rr", "ev-rmport-rr")]
    rows = validate_nvme.compare(cells)
    text = validate_nvme.terminal(rows)
    assert _widest(text) <= 100, max(text.splitlines(), key=_widest)
    # the verdict is in the first table, the failover figures in the second
    first = text.splitlines()[0].split()
    assert first[:4] == ["cell", "n", "max", "diff"] and "within" in first
    assert sum(line.startswith("6.1 ev-rmport-rr") for line in text.splitlines()) == 2
    assert validate_nvme.markdown(rows).startswith("| kernel | cell | n |")


def test_the_engine_note_wraps_at_100_columns():
    import types
    from mpathlab.sim import fast
    err = io.StringIO()
    reason = "SCSI path devices (queue_depth, a host's can_queue) run in the Python engine"
    fast._noted.discard(reason)
    orig = fast.eligible
    fast.eligible = lambda sim: reason
    try:
        assert fast.note_fallback(types.SimpleNamespace(), stream=err) == reason
    finally:
        fast.eligible = orig
        fast._noted.discard(reason)
    lines = err.getvalue().splitlines()
    assert len(lines) == 2 and _widest(err.getvalue()) <= 100
    assert " ".join(l.strip() for l in lines) == "mpathlab: note: this run uses the Python engine (slower): " + reason.strip()
