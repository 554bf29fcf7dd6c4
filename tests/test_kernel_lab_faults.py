"""validation/kernel-lab/grid.py: SCSI paths and path faults in the kernel lab, checked without booting.

- the planner's fault batch: every fault's schedule, table features and topology, reset after the batch;
- `dmsetup status` of a multipath target parsed into per-path state and fail count (real status lines);
- the fault summariser on a run folder built by hand the way the guest writes it (faults file with
  CLOCK_MONOTONIC step times, fio's per-I/O completion log, SCSI counters), expectations computed here;
- collect puts fault runs into results-faults.json, not into results.json.
"""
import json
import os

from test_kernel_lab_grid import grid  # the grid module, loaded from its file once
from test_kernel_lab_tools import _grid, _parse_plan


def test_plan_of_the_fault_batch():
    r = _grid("plan", "faults", "--rep", "2")
    assert r.returncode == 0, r.stderr
    lines = _parse_plan(r.stdout)["faults"]
    runs = [l.split() for l in lines if l.startswith("RUN ")]
    per_rep = sum(3 * len(modes) for _, _, _, modes in grid.FAULTS.values())
    assert per_rep >= 24 and len(runs) == 2 * per_rep
    assert all(r[5] == str(grid.FAULT_RUNTIME) for r in runs)
    # each run follows the FAULT line of its own fault, the FEAT line (if any) of that fault, and its topology
    fault = feat = topo = None
    for l in lines:
        f = l.split()
        if f[0] == "FAULT":
            fault = f[1] if len(f) > 1 else None
            if fault:
                assert f[2] == grid.FAULTS[fault][2]
        elif f[0] == "FEAT":
            feat = " ".join(f[1:])
        elif f[0] == "TOPO":
            topo = f[1]
        elif f[0] == "RUN":
            t, name = f[1].split("_")[0].split("-")
            assert name == fault and t == topo == grid.FAULTS[fault][0]
            assert (feat or "") == grid.FAULTS[fault][1]
            assert f[2] in ("round-robin", "service-time", "historical-service-time")
            assert f[3] in grid.FAULTS[fault][3]
    # the batch ends by clearing its variant: a batch run after it in the same boot runs plain
    assert lines[-3:] == ["FIO ", "TRACE 0", "FAULT "] and feat == ""
    # the queueing faults are the ones with queue_if_no_path in the table
    assert {n for n, v in grid.FAULTS.items() if v[1]} == {"allq", "npr"}


def test_fault_topologies():
    rows = {t: [x.split() for x in open(os.path.join(grid.EXP, "topo", t + ".txt"))] for t in ("F2", "F2n", "F2d")}
    # two paths alike (2 ms, 8 deep) on three kinds of device: SCSI LUNs on their own hosts, null_blk, dm-delay
    assert [(x[1], x[2], x[3:]) for x in rows["F2"]] == [("2000000", "8", ["scsi", "0"]), ("2000000", "8", ["scsi", "1"])]
    assert [x[1:] for x in rows["F2n"]] == [["2000000", "8"]] * 2
    assert [x[1:] for x in rows["F2d"]] == [["2000000", "8", "delay", "0"]] * 2


def test_mpath_status_paths():
    # round-robin, three paths (no per-path selector status), two failed once
    st = "0 4194304 multipath 2 0 0 0 1 1 A 0 3 0 8:0 F 1 8:16 A 0 8:32 F 1"
    paths, queue_io = grid.mpath_status_paths(st)
    assert [(p["dev"], p["state"], p["fail_count"]) for p in paths] == [("8:0", "F", 1), ("8:16", "A", 0),
                                                                         ("8:32", "F", 1)]
    assert queue_io == 0
    # service-time prints two values per path (in-flight size, relative throughput); the group disabled
    st = "0 4096 multipath 2 1 0 0 1 1 E 0 2 2 8:0 F 2 0 1 8:16 F 1 4096 1"
    paths, queue_io = grid.mpath_status_paths(st)
    assert [(p["dev"], p["state"], p["fail_count"]) for p in paths] == [("8:0", "F", 2), ("8:16", "F", 1)]
    assert queue_io == 1
    assert grid.mpath_status_paths("0 4096 linear") == ([], None)


def _stat(dev, sectors):
    f = [0] * 17
    f[4], f[6] = sectors // 8, sectors
    return "%s %s\n" % (dev, " ".join(map(str, f)))


def make_fault_run(root, name="F2-allq_rr_mq_d16_r0"):
    """Two SCSI paths; both go offline at 6000.4 ms (CLOCK_MONOTONIC) and are back (running, reinstated) by
    7000.5 ms. fio completed one I/O per ms from 5000 to 5999 and from 7003 to 7999; the first after the fault
    waited 1005 ms (queued with no path)."""
    boot = os.path.join(root, "boot")
    rd = os.path.join(boot, "runs", name)
    os.makedirs(rd)
    json.dump({"before": ["1.0"] * 3, "after": ["1.0"] * 3, "others_cpus": 0.5, "kernel_append": ""},
              open(os.path.join(boot, "host_load.json"), "w"))
    with open(os.path.join(rd, "meta"), "w") as m:
        m.write("topo=F2 name=%s selector=round-robin queue_mode=mq iodepth=16 runtime=4 selector_args=0 "
                "path_scheduler=default\n" % name)
        m.write("fio_extra=--rate_iops=600\nfeatures=queue_if_no_path\n")
        m.write("fault=allq 1000/offline/p0,1000/offline/p1,2000/running/p0,2000/running/p1,"
                "2000/reinstate/p0,2000/reinstate/p1\n")
        m.write("trace=0\nkernel=6.1.0-57-amd64\n")
        for i, l in enumerate(("p0", "p1")):
            m.write("F2 %s 8:%d completion_nsec=2000000 hw_queue_depth=8 submit_queues=1 kind=scsi host=%d "
                    "can_queue=192 block=sd%s driver_max_queue=192\n" % (l, 16 * i, i, "ab"[i]))
        m.write("dm=dm-0\ndmdev=254:0\n")
    open(os.path.join(rd, "stat_before"), "w").write(_stat("p0", 800) + _stat("p1", 800) + _stat("dm-0", 0))
    # sectors: p0 also accounts 3 requests it ended offline (never dispatched), which dm-mpath sent to p1
    open(os.path.join(rd, "stat_after"), "w").write(
        _stat("p0", 800 + 8 * 1001) + _stat("p1", 800 + 8 * 999) + _stat("dm-0", 8 * 1997))
    # SCSI counters (hex): iorequest, iodone, ioerr
    open(os.path.join(rd, "scsi_before"), "w").write("p0 0x10 0x10 0x0\np1 0x10 0x10 0x0\n")
    open(os.path.join(rd, "scsi_after"), "w").write("p0 0x3f6 0x3f6 0x0\np1 0x3fe 0x3fe 0x1\n")
    steps = [(6000400000, 6000900000, 1000, "offline", "p0"), (6000900000, 6001300000, 1000, "offline", "p1"),
             (7000000000, 7000100000, 2000, "running", "p0"), (7000100000, 7000200000, 2000, "running", "p1"),
             (7000200000, 7000350000, 2000, "reinstate", "p0"), (7000350000, 7000500000, 2000, "reinstate", "p1")]
    with open(os.path.join(rd, "faults"), "w") as f:
        # the schedule's zero: the dm device's first completed write at 5000 ms
        f.write("T0 5000000000\nPRE 5900400000\n")
        # before the first step: 500 and 500 done; after the last: nothing more, but p0's sectors also
        # account 3 requests it ended offline (never dispatched), which dm-mpath queued and sent on later
        f.write("D " + _stat("p0", 800 + 8 * 500) + "D " + _stat("p1", 800 + 8 * 500))
        f.write("C p0 0x%x 0x%x 0x0\nC p1 0x%x 0x%x 0x0\n" % (16 + 500, 16 + 500, 16 + 500, 16 + 500))
        for i, (a, b, at, act, tgt) in enumerate(steps):
            f.write("STEP %d %d %d %s %s - rc=0\n" % (a, b, at, act, tgt))
            if i in (1, 5):   # the status once the steps of a time are done
                f.write("S 0 4194304 multipath 2 %d 0 0 1 1 A 0 2 0 8:0 %s 1 8:16 %s 1\n"
                        % (16 if i == 1 else 0, "F" if i == 1 else "A", "F" if i == 1 else "A"))
        f.write("POST 7000600000\n")
        f.write("D " + _stat("p0", 800 + 8 * 503) + "D " + _stat("p1", 800 + 8 * 500))
        f.write("C p0 0x%x 0x%x 0x0\nC p1 0x%x 0x%x 0x0\n" % (16 + 500, 16 + 500, 16 + 500, 16 + 500))
    with open(os.path.join(rd, "io_clat.1.log"), "w") as f:
        for t in range(5000, 6000):
            f.write("%d, 2100000, 1, 4096, 0, 0\n" % t)
        f.write("7003, 1005000000, 1, 4096, 0, 0\n")
        for t in range(7004, 8000):
            f.write("%d, 2200000, 1, 4096, 0, 0\n" % t)
    for w, v in (("before", (10, 20, 300)), ("after", (60, 120, 1300))):
        open(os.path.join(rd, "cpu_" + w), "w").write("cpu  %d 0 %d %d 0 0 0 0 0 0\n" % v)
    open(os.path.join(rd, "uptime"), "w").write("10.0 14.0\n")
    open(os.path.join(rd, "table"), "w").write("0 4194304 multipath 1 queue_if_no_path 0 1 1 round-robin 0 2 1 "
                                               "8:0 1 8:16 1\n")
    open(os.path.join(rd, "status_end"), "w").write("0 4194304 multipath 2 0 0 0 1 1 A 0 2 0 8:0 A 1 8:16 A 1\n")
    with open(os.path.join(rd, "queue"), "w") as f:
        for l in ("p0", "p1"):
            f.write("%s scheduler=[mq-deadline] nr_requests=16 nr_hw_queues=1 hw_tags=192 hw_reserved=0\n" % l)
        f.write("dm-0 scheduler=[mq-deadline] nr_requests=256 nr_hw_queues=1 hw_tags=2048 hw_reserved=0\n")
    json.dump({"fio": {"iops": 499.0, "total_ios": 1997, "total_err": 0, "clat_mean_us": 2600.0}},
              open(os.path.join(rd, "summary.json"), "w"))
    return boot, rd


def test_fault_summary_of_a_hand_built_run(tmp_path):
    boot, rd = make_fault_run(str(tmp_path))
    s = grid.summarise_run(rd)
    f = s["fault"]
    assert f["name"] == "allq" and [st["action"] for st in f["steps"]][:2] == ["offline", "offline"]
    assert f["step_times_ms"] == [0.0, 0.5, 999.6, 999.7, 999.8, 999.95]
    assert f["first_step_after_io_ms"] == 1000.4 and f["snapshot_times_ms"] == [-100.0, 1000.2]
    assert f["status_after_steps"] == ["0 4194304 multipath 2 16 0 0 1 1 A 0 2 0 8:0 F 1 8:16 F 1",
                                       "0 4194304 multipath 2 0 0 0 1 1 A 0 2 0 8:0 A 1 8:16 A 1"]
    # first completion after 6000.4 ms is at 7003 ms; the last step ended at 7000.5 ms
    assert f["stall_ms"] == round(7003 - 6000.4, 1) == 1002.6
    assert f["recovery_ms"] == 2.5
    # the 7003 ms completion was issued at 5998 ms (1005 ms before), before the fault; the next, at 7004 ms
    # after 2.2 ms, was issued after it.  Both offline steps are scheduled at 1000 ms: one fault, whole when
    # the second returned (6001.3 ms), and new I/O's stall is counted from there
    assert f["stall_new_io_ms"] == round(7004 - 6001.3, 1)
    assert f["max_gap_ms"] == 1002.6
    assert f["max_lat_after_fault_ms"] == 1005.0
    assert f["iops"] == {"before": round(1000 / (6000.4 - 5000) * 1e3, 1), "during": 0.0,
                         "after": round(997 / (7999 - 7000.5) * 1e3, 1)}
    # per path from the SCSI counters (iodone - ioerr): 500 each before (the PRE block's C lines: 516 - 16),
    # none while offline, then p0 1014 - 516 = 498 and p1 (1022 - 1) - 516 = 505 after
    assert f["completions"] == {"before": {"p0": 500, "p1": 500}, "during": {"p0": 0, "p1": 0},
                                "after": {"p0": 498, "p1": 505}}
    assert f["shares_after"] == {"p0": round(498 / 1003, 4), "p1": round(505 / 1003, 4)}
    assert f["path_errors"] == {"p0": 0, "p1": 1}
    assert f["end_paths"] == {"p0": {"state": "A", "fail_count": 1}, "p1": {"state": "A", "fail_count": 1}}
    assert f["fio_errors"] == 0 and f["fio_total_ios"] == 1997
    assert s["scsi"] == {"p0": {"iorequest": 1014 - 16, "iodone": 1014 - 16, "ioerr": 0},
                         "p1": {"iorequest": 1022 - 16, "iodone": 1022 - 16, "ioerr": 1}}
    # shares count sectors: 1001 and 999 (p0's 3 requests ended offline included), against fio's 1997
    assert s["completed_vs_fio"] == {"paths": 2000, "fio": 1997, "difference": 3}
    assert s["features"] == "queue_if_no_path"


def test_finish_batch_keeps_the_fault_summary_and_drops_the_per_io_log(tmp_path, monkeypatch):
    boot, rd = make_fault_run(str(tmp_path / "runs"))
    grid.finish_batch(boot)
    assert not os.path.exists(os.path.join(rd, "io_clat.1.log"))
    first = json.load(open(os.path.join(rd, "summary.json")))["fault"]
    # summarised again without the log: the stored fault summary is kept, not recomputed from nothing
    assert grid.summarise_run(rd)["fault"] == first
    monkeypatch.setattr(grid, "RUNS", str(tmp_path / "runs"))
    monkeypatch.setattr(grid, "HERE", str(tmp_path))
    assert grid.collect() == []                     # a fault run is not a share cell
    (cell,) = json.load(open(tmp_path / "results-faults.json"))
    assert (cell["kernel"], cell["topology"], cell["fault"], cell["selector"], cell["n"]) == (
        "6.1", "F2", "allq", "round-robin", 1)
    assert cell["features"] == "queue_if_no_path" and cell["fio_options"] == "--rate_iops=600"
    assert cell["mean_stall_ms"] == 1002.6 and cell["stddev_stall_ms"] is None and cell["mean_fio_errors"] == 0
    assert cell["paths"][1] == {"label": "p1", "completion_ns": 2000000, "hw_queue_depth": 8, "submit_queues": 1,
                                "kind": "scsi", "host": 1, "can_queue": 192, "driver_max_queue": 192}
    assert cell["mean_completions"]["after"] == {"p0": 498, "p1": 505}


TRIAL = os.path.join(os.path.dirname(grid.HERE), "kernel-lab", "scsi-trial", "scsi-6.1-20261204T160836", "runs")


def test_scsi_trial_completions_add_up_to_fios_total():
    # Debian 6.1, S1 (queue_depth 2 and 8 behind two scsi_debug hosts), raw stat files as the guest wrote
    # them: completed writes per path (sectors) add up to what fio counted, while the 2-deep LUN's writes
    # field in request-based runs also counts every refused direct issue of a clone (4x-5x its completions)
    runs = sorted(r for r in os.listdir(TRIAL) if r.startswith("S1_"))
    assert len(runs) == 6
    for r in runs:
        s = grid.summarise_run(os.path.join(TRIAL, r))
        c = s["completed_vs_fio"]
        assert c["fio"] == s["fio"]["total_ios"] and c["paths"] == s["writes_total"]
        assert abs(c["difference"]) <= s["iodepth"], r
        assert s["paths"][0]["kind"] == "scsi" and s["paths"][0]["hw_queue_depth"] == 2
        p0 = s["devices"]["p0"]
        if s["queue_mode"] == "mq":
            assert p0["failed_issue_attempts"] > 2 * p0["writes"], r
        else:
            assert abs(p0["failed_issue_attempts"]) <= 2, r


def test_faults_table_row(tmp_path, monkeypatch):
    boot, rd = make_fault_run(str(tmp_path / "runs"))
    grid.finish_batch(boot)
    monkeypatch.setattr(grid, "RUNS", str(tmp_path / "runs"))
    monkeypatch.setattr(grid, "HERE", str(tmp_path))
    grid.collect()
    rows = grid.faults_markdown(json.load(open(tmp_path / "results-faults.json"))).splitlines()
    assert len(rows) == 3
    # n = 1: no stddev; errors, stall, recovery, longest gap and slowest I/O as in the summary above
    assert rows[2].startswith("| 6.1 | allq | F2 | mq | rr | 1 | 0.0 | 1002.6 | 1002.7 | 2.5 | 1002.6 | 1005.0 | p0=0.4")
    assert rows[2].endswith("| p0=1 p1=1 |")


STORED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "kernel-lab-runs", "6.1-scsi-faults", "runs")


def test_stored_61_host_limit_run():
    # Debian 6.1, S2: p0 and p1 behind scsi_debug host 0 (can_queue 4), p2 on host 1; the driver's max_queue
    # raised to 192 after the hosts were made, so no command was refused by the driver (no path failed)
    s = grid.summarise_run(os.path.join(STORED, "S2_rr_mq_d32_r0"))
    assert [(p["host"], p["can_queue"], p["driver_max_queue"]) for p in s["paths"]] == [(0, 4, 192), (0, 4, 192),
                                                                                         (1, 4, 192)]
    assert {l: s["queue"][l]["hw_tags"] for l in ("p0", "p1", "p2")} == {"p0": 4, "p1": 4, "p2": 4}
    assert [p["state"] for p in grid.mpath_status_paths(s["status_end"])[0]] == ["A", "A", "A"]
    # iodone_cnt (0x2e -> 0xeed, 0xb39, 0x1920) = sectors / 8 per path, and their sum = fio's total
    assert {l: v["iodone"] for l, v in s["scsi"].items()} == {"p0": 0xeed - 0x2e, "p1": 0xb39 - 0x2e,
                                                              "p2": 0x1920 - 0x2e}
    # sectors / 8 against iodone_cnt: equal on p0 and p2, 2 apart on p1 (2829 against 2827) in this run
    assert [s["devices"][l]["writes"] - s["scsi"][l]["iodone"] for l in ("p0", "p1", "p2")] == [0, 2, 0]
    assert s["completed_vs_fio"] == {"paths": 12990, "fio": 12990, "difference": 0}


def test_stored_61_deleted_path_keeps_its_counts_from_before_the_delete():
    rd = os.path.join(STORED, "F2-delete_st_mq_d16_r0")
    assert "p0" not in open(os.path.join(rd, "stat_after")).read()      # sda was gone at the end
    f = grid.summarise_run(rd)["fault"]
    # iodone - ioerr: p0 0x2e-1 -> PRE 0x52-1 (36), then gone; p1 0x2e-1 -> PRE 0x64-1 (54) -> POST 0x1f8-1
    # (404) -> end 0x85b-1 (1635)
    assert f["completions"] == {"before": {"p0": 36, "p1": 54}, "during": {"p0": 0, "p1": 404},
                                "after": {"p0": 0, "p1": 1635}}
    assert f["end_paths"] == {"p0": {"state": "F", "fail_count": 1}, "p1": {"state": "A", "fail_count": 0}}
    assert f["fio_errors"] == 0 and [st["action"] for st in f["steps"]] == ["delete"]
    # the per-I/O log was dropped when the boot was summarised: its metrics stay those of the summary
    assert f["stall_ms"] == 6.1 and f["max_gap_ms"] == 11


def test_stored_61_no_path_retry_run():
    # both paths offline with queue_if_no_path, fail_if_no_path 500 ms later (no_path_retry's end), paths back
    # and reinstated 1.5 s after the fault: fio saw errors only from the fail_if_no_path message on
    f = grid.summarise_run(os.path.join(STORED, "F2-npr_rr_mq_d16_r0"))["fault"]
    assert [st["action"] for st in f["steps"]] == ["offline", "offline", "fail_if_no_path", "running", "running",
                                                   "reinstate", "reinstate", "queue_if_no_path"]
    assert f["step_times_ms"][2] == round((31868583110 - 31373420500) / 1e6, 2)
    assert f["fio_errors"] == 994 and f["fio_total_ios"] == 2399
    assert f["end_paths"] == {"p0": {"state": "A", "fail_count": 1}, "p1": {"state": "A", "fail_count": 1}}
    assert f["status_after_steps"][0].split()[-6:] == ["8:0", "F", "1", "8:16", "F", "1"]
