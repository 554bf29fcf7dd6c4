"""The NVMe lab's reading of the kernel's nvme_complete_rq trace (validation/kernel-lab/nvme/nvmelab.py):
hand-made traces in the guest's compact form, the figures computed by hand."""
import importlib.util
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_spec = importlib.util.spec_from_file_location("nvmelab", os.path.join(ROOT, "validation", "kernel-lab", "nvme",
                                                                       "nvmelab.py"))
nvmelab = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(nvmelab)

TRACE = """\
10.000000 nvme0: qid=1, status=0x0
10.100000 mark KLAB-SYNC
10.300000 nvme1: qid=2, status=0x0
10.596000 nvme0: qid=1, status=0x0
10.600000 mark rmport:1
10.601000 nvme1: qid=2, status=0x0
10.610000 nvme0: qid=1, status=0x371
10.611000 nvme0: qid=0, status=0x0
10.612000 nvme0: qid=2, status=0x370
10.615000 nvme1: qid=2, status=0x0
10.625000 nvme0: qid=0, status=0x0
"""


def _cell(tmp_path, event="rmport:1"):
    d = tmp_path / ("x--r1")
    d.mkdir()
    (d / "map.txt").write_text("1 nvme0 nvme0c0n1\n2 nvme1 nvme0c1n1\n")
    (d / "trace.txt").write_text(TRACE)
    (d / "event.txt").write_text(event + "\n")
    (d / "sync.txt").write_text("1700000000 250000 ")
    (d / "dmesg.event").write_text("[   10.600100] KLAB-EVENT x--r1 rmport:1\n"
                                   "[   10.605100] nvme nvme0: starting error recovery\n"
                                   "[   10.620100] nvme nvme0: Reconnecting in 10 seconds...\n")
    return d


def test_transition_figures(tmp_path):
    d = _cell(tmp_path)
    t = nvmelab.transition(str(d / "trace.txt"), str(d / "map.txt"), "rmport:1", str(d / "dmesg.event"))
    assert t["failed"] == 2 and t["statuses"] == ["0x370", "0x371"]
    assert t["first_failed_ms"] == 10.0 and t["last_failed_ms"] == 12.0
    assert t["resume_ms"] == 15.0                 # nvme1's completion after the last failed one
    # good completions after the event: 1 ms, 15 ms, then none until 1000 ms
    assert t["max_gap_ms"] == 985.0
    # before it (from -450 ms): -300 ms (nvme1), -4 ms (nvme0): the longest gap is -300 .. -4
    assert t["base_gap_ms"] == 296.0
    assert t["last_good_lost_ms"] == 0 and t["admin_lost_ms"] == [11.0, 25.0]
    assert t["dmesg"] == {"recovery_start_ms": 5.0, "recovery_done_ms": 20.0}


def test_event_time_from_the_sync_marker(tmp_path):
    d = _cell(tmp_path)
    # the wall clock at the sync marker plus the trace's 0.5 s from it to the event marker
    ms, name = nvmelab._event_time(str(d))
    assert name == "rmport:1" and abs(ms - (1700000000250.0 + 500.0)) < 1e-6


def test_request_times_per_port(tmp_path):
    (tmp_path / "map.txt").write_text("1 nvme0 nvme0c0n1\n2 nvme1 nvme0c1n1\n")
    (tmp_path / "rq.txt").write_text("".join("nvme0: %d\n" % v for v in range(100, 1100, 100)) + "nvme1: 5000\n")
    out = nvmelab.request_times(str(tmp_path / "rq.txt"), str(tmp_path / "map.txt"))
    assert out["1"] == {"n": 10, "mean": 550.0, "p10": 200, "p50": 600, "p90": 1000, "p99": 1000}
    assert out["2"]["n"] == 1 and out["2"]["p50"] == 5000
