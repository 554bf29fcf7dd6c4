"""The capture loop's host side (validation/kernel-lab/capture/loop.py) on the committed lab boots: every
cell's captured topology, simulated, against the kernel; the committed results are what it computes."""
import importlib.util
import json
import os

import pytest

ROOT = os.path.join(os.path.dirname(__file__), "..")
HERE = os.path.join(ROOT, "validation", "kernel-lab", "capture")


def load_loop():
    spec = importlib.util.spec_from_file_location("capture_loop", os.path.join(HERE, "loop.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def committed():
    with open(os.path.join(HERE, "results.json")) as f:
        return json.load(f)


def test_fio_args_become_the_same_job():
    loop = load_loop()
    job = loop.fio_job("--name=x --filename=/dev/mapper/mp --ioengine=libaio --direct=1 --rw=randwrite --bs=4k "
                       "--iodepth=16 --runtime=5 --time_based --size=1800M --randrepeat=0")
    assert job.splitlines() == ["[captured]", "ioengine=libaio", "direct=1", "rw=randwrite", "bs=4k", "iodepth=16",
                                "runtime=5", "time_based", "size=1800M", "randrepeat=0"]


def test_kernel_shares_count_sectors(tmp_path):
    """A path's I/O count holds refused issues; its sectors do not (hand-made counters)."""
    loop = load_loop()
    (tmp_path / "stat_before").write_text("sda 8:0 0 0 0 0 100 0 800 0 0 0 0\nsdb 8:16 0 0 0 0 0 0 0 0 0 0 0\n")
    (tmp_path / "stat_after").write_text("sda 8:0 0 0 0 0 5100 0 8800 0 0 0 0\nsdb 8:16 0 0 0 0 3000 0 24000 0 0 0 0\n")
    assert loop.kernel_shares(str(tmp_path)) == {"sda": 0.25, "sdb": 0.75}


def test_committed_results_are_what_the_loop_computes(committed):
    loop = load_loop()
    from mpathlab.validate import Guest
    boots = sorted({r["boot"] for r in committed})
    for r in committed:
        cell_dir = os.path.join(HERE, "runs", r["boot"], "cells", r["cell"])
        # the guest model as fitted when the results were written (the lab's calibration cells grow)
        guest = Guest(r["kernel_series"], *r["guest_ns"], fitted_on=[])
        again = loop.run_cell(cell_dir, guest, False)
        assert again["kernel"] == pytest.approx(r["kernel"])
        assert again["predicted"] == pytest.approx(r["predicted"], abs=1e-9)
    assert len(boots) >= 2


@pytest.mark.parametrize("results", ["results.json", "results-trace.json"])
def test_at_least_six_captured_cells_within_tolerance_on_each_kernel(results):
    with open(os.path.join(HERE, results)) as f:
        rows = json.load(f)
    for series in ("6.1", "6.12"):
        dm = [r for r in rows if r["kernel_series"] == series and r["queue_mode"] != "nvme"]
        assert sum(r["within"] for r in dm) >= 6, series
        for r in dm:
            assert r["within"] == (abs(r["diff"]) <= 0.03 + 1e-12)
            assert sum(r["kernel"].values()) > 0 and r["predicted"]
