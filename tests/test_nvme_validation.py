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
    # queue-depth over nvme-loop: the target's work runs in a kworker on the other vCPU while fio submits
    # the next I/O, so the first controller still holds a request at about a third of the choices; the
    # model's guest (CPU time per I/O before the head, one FIFO CPU per job) has it idle at every choice
    ("6.12", "L2-qd"): "kernel 0.647 / 0.353, model 1.000 / 0.000",
    # queue-depth over ports delayed 4 and 12 ms: the model spreads by the nominal netem delays
    # (0.733 / 0.267); the kernel's 0.669 / 0.331 says the realised delays are closer than 1 : 3 under TCG
    ("6.12", "A2-qd"): "kernel 0.669 / 0.331, model 0.733 / 0.267",
    # numa through port 1 going non-optimized on 6.1: a non-optimized port still serves I/O, and the host
    # keeps sending to it until its ANA log work has run (150-200 I/Os, ~0.2 s, between the snapshots
    # around the event); the model switches at the event
    ("6.1", "ev-ana-nonopt-numa"): "kernel 0.621 / 0.379, model 0.582 / 0.418 (with the traced ANA log read)",
    # numa through a removed port, traced (2 repeats, 0.714 and 0.624 on port 1): after the event both agree
    # (0 / 1); the overall share is 0.1 off, far more than the 14-34 ms port 1 kept completing after the
    # unlink; not explained yet (the untraced ev-rmport-numa is within 0.013)
    ("6.12", "tr-rmport-numa"): "kernel 0.669 / 0.331, model 0.568 / 0.432",
    # the same in 6.1's traced numa cells: the kernel has 0.04 more on port 1 than the model (the round-robin
    # traced cells agree within 0.01, so the event's time in fio's run is not the whole story)
    ("6.1", "tr-rmport-numa"): "kernel 0.629 / 0.371, model 0.591 / 0.409",
    ("6.1", "tr-ana-inacc-numa"): "kernel 0.612 / 0.388, model 0.571 / 0.429",
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
    assert err.startswith("mpathlab: error: %s:2: not JSON" % bad) and "\n" not in err


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


def test_recovery_and_ana_log_read_come_from_the_single_port_traced_cells():
    # C1-rmport: the last request cancelled (HOST_ABORTED) per repeat, the median; C1-ana-nonopt: the first
    # admin completion after the change (the Get Log Page; the AER's completion is not traced), the median
    cells = [{"kernel": "6.1", "cell": "C1", "transport": "tcp", "repeats": [{"fio_iops": 1000.0}]},
             {"kernel": "6.1", "cell": "C1-rmport", "transport": "tcp",
              "repeats": [{"transition": {"last_failed_ms": 9.0}}, {"transition": {"last_failed_ms": 30.0}},
                          {"transition": {"last_failed_ms": 12.5}}]},
             {"kernel": "6.1", "cell": "C1-ana-nonopt", "transport": "tcp",
              "repeats": [{"transition": {"admin_lost_ms": [40.0, 41.0]}},
                          {"transition": {"admin_lost_ms": [60.0, 61.0]}},
                          {"transition": {"admin_lost_ms": []}}]}]
    g = vn.fit_guests(cells)[("6.1", "tcp")]
    assert g.recovery_ns == 12_500_000
    assert g.ana_log_ns == 60_000_000        # the median of 40 and 60 (the third repeat saw no log read)
    cell = {"cell": "ev", "delays_us": [0, 0], "ana": ["optimized"] * 2, "iopolicy": "numa",
            "event": "rmport:1", "event_at_s": 2}
    nv = vn.cell_topology(cell, g)["nvme"]
    assert nv["recovery"] == "12500000ns" and nv["ana_log_delay"] == "60000000ns"
    assert "C1-rmport" in g.describe() and "error recovery 12.5 ms" in g.describe()


def test_the_stall_agrees_within_the_kernels_repeats_and_its_own_noise():
    c = {"event": "rmport:1"}
    trs = [{"failed": 8, "max_gap_ms": 20.0, "base_gap_ms": 3.0, "last_failed_ms": 18.0, "resume_ms": 19.0},
           {"failed": 6, "max_gap_ms": 30.0, "base_gap_ms": 5.0, "last_failed_ms": 28.0, "resume_ms": 29.5}]
    row = vn.transition_row(c, trs, {"stall_ms": 34.0, "stalls_ms": [16.0, 34.0],
                                     "failed_over": [{"1": 16}, {"1": 16}]})
    assert row["stall_ok"] and row["model_failed"] == [16, 16] and row["kernel_failed"] == [8, 6]
    # 14 is below 20 - 5 (the shortest kernel stall less the largest fio-alone gap): outside
    row = vn.transition_row(c, trs, {"stall_ms": 14.0, "stalls_ms": [14.0], "failed_over": [{"1": 16}]})
    assert not row["stall_ok"]
