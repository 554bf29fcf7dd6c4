"""The NVMe model against the NVMe kernel lab (validation/kernel-lab/nvme/results-nvme.json): every cell's
per-controller shares (and, for event cells, the shares after the event) within 0.03 of the kernel's mean,
with fio's error count equal, except the known misses listed here; a known miss that starts passing fails
the test, so the list stays true."""
import json
import os

import pytest

from mpathlab import validate_nvme as vn
from mpathlab.topology import topology_from_dict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, vn.DEFAULT_RESULTS)

# (kernel series, cell): why the model misses it (docs/validation-nvme.md)
KNOWN_MISSES = {
}


def _cells():
    with open(RESULTS) as f:
        return json.load(f)


def test_guest_is_one_over_iops_of_the_single_port_cell():
    cells = [{"kernel": "6.12", "cell": "C1", "repeats": [{"fio_iops": 1000.0}, {"fio_iops": 500.0},
                                                          {"fio_iops": 800.0}]}]
    g = vn.fit_guests(cells)[("6.12", "tcp")]
    assert g.cpu_ns == 1_250_000        # the median of 1 ms, 1.25 ms and 2 ms
    h = g.host()
    assert h["submit_cost"] == "1250000ns" and h["complete_cost"] == "0ns"


def test_cell_topology_puts_the_event_on_the_named_port():
    guest = vn.NvmeGuest("6.12", "tcp", 1_000_000, ["C1"])
    cell = {"cell": "ev", "delays_us": [0, 3000], "ana": ["optimized", "non-optimized"], "iopolicy": "numa",
            "event": "rmport:2", "event_at_s": 2, "mean_event_at_fio_s": 1.5}
    doc = vn.cell_topology(cell, guest)
    assert "faults" not in doc["paths"]["p1"]
    assert doc["paths"]["p2"]["faults"] == [{"at": "1500000000ns", "action": "fail"}]
    assert doc["paths"]["p2"]["service"]["mean"] == "3000000ns"
    assert doc["nvme"]["ana_groups"][0]["state"] == {"c1": "optimized", "c2": "non-optimized"}
    topology_from_dict(doc, "cell")          # a topology the reader accepts
    cell = dict(cell, event="ana:1:inaccessible", mean_event_at_fio_s=None)
    doc = vn.cell_topology(cell, guest)
    assert doc["nvme"]["events"] == [{"at": "2000000000ns",
                                      "ana": {"group": 1, "controller": "c1", "state": "inaccessible"}}]


def test_bad_results_file_is_one_line_and_exit_3(tmp_path, capsys):
    bad = tmp_path / "r.json"
    bad.write_text("[\n{oops\n")
    assert vn.main([str(bad)]) == 3
    err = capsys.readouterr().err.strip()
    assert err.startswith(str(bad) + ": line 2:") and "\n" not in err


@pytest.mark.slow
def test_every_lab_cell_within_tolerance_or_a_known_miss():
    rows = vn.compare(_cells())
    assert len(rows) >= 8
    by_key = {(r["kernel"], r["cell"]): r for r in rows}
    unexpected = [k for k, r in by_key.items() if not r["ok"] and k not in KNOWN_MISSES]
    now_passing = [k for k in KNOWN_MISSES if k in by_key and by_key[k]["ok"]]
    assert not unexpected, "cells off by more than %.2f or with other error counts: %s" % (
        vn.TOLERANCE, ["%s %s: %.3f" % (k + (by_key[k]["max_diff"],)) for k in unexpected])
    assert not now_passing, "known misses that now pass (take them off the list): %s" % now_passing
    assert all(k in by_key for k in KNOWN_MISSES), "known misses with no lab cell"
