"""validation/kernel-lab/grid.py: the kernel-lab run summaries the simulator is validated against.

A run folder is built by hand the way the guest script writes it, so the expectations are computed here:
shares come from sectors written (6.1 accounts a failed clone issue as a finished write), failed attempts
are the difference, and a cell's mean/stddev are over its repeats.
"""
import importlib.util
import json
import os

from hypothesis import given, settings, strategies as st

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location(
    "kernel_lab_grid", os.path.join(HERE, "..", "validation", "kernel-lab", "grid.py"))
grid = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(grid)


def _stat_line(dev, writes, sectors, ticks=0, tiq=0):
    # /sys/block/X/stat: 17 fields; 4 writes, 6 sectors written, 7 write ticks, 10 time in queue
    f = [0] * 17
    f[4], f[6], f[7], f[10] = writes, sectors, ticks, tiq
    return "%s %s\n" % (dev, " ".join(map(str, f)))


def make_run(root, name, counts, accounted=None, sched="default", fio_extra="", topo="T2", iodepth=64,
             fio=None, others=0.5):
    """counts: {label: completed 4k writes}; accounted: {label: writes field} (default = counts)."""
    accounted = accounted or counts
    boot = os.path.join(root, "boot-" + name)
    rd = os.path.join(boot, "runs", name)
    os.makedirs(rd)
    json.dump({"before": ["1.0", "1.0", "1.0"], "after": ["1.0", "1.0", "1.0"], "others_cpus": others,
               "kernel_append": ""}, open(os.path.join(boot, "host_load.json"), "w"))
    labels = list(counts)
    with open(os.path.join(rd, "meta"), "w") as m:
        m.write("topo=%s name=%s selector=round-robin queue_mode=mq iodepth=%d runtime=8 selector_args=0 "
                "path_scheduler=%s\n" % (topo, name, iodepth, sched))
        m.write("fio_extra=%s\n" % fio_extra)
        for i, l in enumerate(labels):
            m.write("%s %s 252:%d completion_nsec=4000000 hw_queue_depth=4 submit_queues=2\n" % (topo, l, i))
        m.write("dm=dm-0\n")
    with open(os.path.join(rd, "stat_before"), "w") as f:
        for l in labels + ["dm-0"]:
            f.write(_stat_line(l, 100, 800))
    total = sum(counts.values())
    with open(os.path.join(rd, "stat_after"), "w") as f:
        for l in labels:
            f.write(_stat_line(l, 100 + accounted[l], 800 + 8 * counts[l], ticks=4 * accounted[l], tiq=8000))
        f.write(_stat_line("dm-0", 100 + total, 800 + 8 * total, tiq=400000))
    for w in ("before", "after"):
        open(os.path.join(rd, "cpu_" + w), "w").write(
            "cpu  %d 0 %d %d 0 0 0 0 0 0\n" % ((10, 20, 300) if w == "before" else (60, 120, 1300)))
    open(os.path.join(rd, "uptime"), "w").write("10.0 18.0\n")
    open(os.path.join(rd, "table"), "w").write("0 4096 multipath 0 0 1 1 round-robin 0 2 1 252:0 1 252:1 1\n")
    open(os.path.join(rd, "status_end"), "w").write("0 4096 multipath 2 0 0 0 1 1 A 0 2 0 252:0 A 0 252:1 A 0\n")
    with open(os.path.join(rd, "queue"), "w") as f:
        for l in labels:
            f.write("%s scheduler=[none] nr_requests=4 nr_hw_queues=2 hw_tags=4 hw_reserved=0\n" % l)
        f.write("dm-0 scheduler=[mq-deadline] nr_requests=256 nr_hw_queues=1 hw_tags=2048 hw_reserved=0\n")
    fio = fio or {"iops": 1000.0, "clat_mean_us": 4000.0, "clat_p99_us": 9000.0, "slat_mean_us": 50.0}
    json.dump({"fio": fio}, open(os.path.join(rd, "summary.json"), "w"))   # as after fio.json was dropped
    grid.finish_batch(boot)
    return rd


def test_shares_count_sectors_not_failed_issue_attempts(tmp_path):
    # 300 and 100 real completions; the writes field also counts 200 and 50 failed direct issues
    rd = make_run(str(tmp_path), "r", {"p0": 300, "p1": 100}, accounted={"p0": 500, "p1": 150})
    s = json.load(open(os.path.join(rd, "summary.json")))
    assert s["shares"] == {"p0": 0.75, "p1": 0.25}
    assert s["devices"]["p0"]["failed_issue_attempts"] == 200
    assert s["devices"]["p1"]["failed_issue_attempts"] == 50
    assert s["writes_total"] == 400
    # guest CPU: busy (50+100 ticks) of 150+1000 ticks, 1.5 s busy over 400 I/Os
    assert s["guest_cpu"]["busy_frac_of_2cpus"] == round(150 / 1150, 3)
    assert s["guest_cpu"]["busy_ms_per_io"] == round(1500 / 400, 3)
    # mean in-flight = time in queue (ms) / run time (ms)
    assert s["devices"]["dm-0"]["mean_inflight"] == 50.0
    assert s["fio"]["iops"] == 1000.0


def test_collect_mean_and_sample_stddev_over_repeats(tmp_path, monkeypatch):
    monkeypatch.setattr(grid, "RUNS", str(tmp_path))
    monkeypatch.setattr(grid, "HERE", str(tmp_path))
    make_run(str(tmp_path), "a", {"p0": 300, "p1": 100}, fio={"iops": 900.0, "clat_mean_us": 1.0})
    make_run(str(tmp_path), "b", {"p0": 200, "p1": 200}, fio={"iops": 1100.0, "clat_mean_us": 1.0,
                                                           "slat_stddev_us": 31.5})
    make_run(str(tmp_path), "c", {"p0": 100, "p1": 100}, sched="mq-deadline")
    cells = grid.collect()
    plain = [c for c in cells if c["topology"] == "T2"]
    assert len(plain) == 1 and plain[0]["n"] == 2
    c = plain[0]
    assert c["mean_share"] == {"p0": 0.625, "p1": 0.375}
    # sample stddev of (0.75, 0.5) = 0.1768
    assert c["stddev_share"]["p0"] == 0.1768
    assert c["mean_fio_iops"] == 1000.0
    # slat's spread is kept per repeat where fio.json gave it (runs summarised before it was read have none)
    assert [r.get("slat_stddev_us") for r in c["repeats"]] == [None, 31.5]
    assert "slat_stddev_us" not in c["repeats"][0]
    variant = [c for c in cells if c["topology"] == "T2/sched=mq-deadline"]
    assert len(variant) == 1 and variant[0]["n"] == 1 and variant[0]["stddev_share"]["p0"] is None
    assert json.load(open(os.path.join(str(tmp_path), "results.json"))) == cells


def test_variant_names():
    assert grid.variant_name("default", "") == ""
    assert grid.variant_name("none", "") == ""
    assert grid.variant_name("mq-deadline", "--numjobs=2", "idle=poll") == "sched=mq-deadline,numjobs=2,idle=poll"


def test_runs_txt_restores_the_path_scheduler_after_a_variant(monkeypatch):
    monkeypatch.setitem(grid.BATCHES, "t", [{"sched": "mq-deadline", "tag": "-s"}, ("T4q", "rr", "mq", 64),
                                            {"fio": "--numjobs=2", "tag": "-n"}, ("T4q", "st", "bio", 32)])
    lines = grid.runs_txt("t", 1, 8).split("\n")
    assert lines[:5] == ["FIO ", "TRACE 0", "TOPO T4q", "SCHED mq-deadline", "RUN T4q-s_rr_mq_d64_r0 round-robin mq 64 8"]
    assert lines[5:9] == ["FIO --numjobs=2", "TRACE 0", "SCHED none", "RUN T4q-n_st_bio_d32_r0 service-time bio 32 8"]


def test_a_batch_named_again_in_a_boot_runs_with_the_next_repeat_numbers():
    """`grid.py run calib BATCH calib`: the second calibration gets repeat numbers of its own, so every run
    of the boot has its own folder and results.json counts both calibrations as repeats of one cell."""
    plan = grid.boot_plan(["calib", "heldout", "calib"], 2, 8)
    names = [l.split()[1] for l in plan.splitlines() if l.startswith("RUN ")]
    assert len(names) == len(set(names))
    calib = [n for n in names if n.startswith("c0_rr_mq_d64")]
    assert calib == ["c0_rr_mq_d64_r0", "c0_rr_mq_d64_r1", "c0_rr_mq_d64_r2", "c0_rr_mq_d64_r3"]
    # the last two come after every held-out run
    assert names.index("c0_rr_mq_d64_r2") > max(i for i, n in enumerate(names) if n.startswith("H"))
    # one batch alone: the plan is the batch's own
    assert grid.boot_plan(["heldout"], 2, 8) == grid.runs_txt("heldout", 2, 8)


def test_trace_hist_maps_kernel_dev_numbers_to_names(tmp_path):
    # hist trigger output keys dev_t as major << 20 | minor
    p = tmp_path / "trace_hist"
    p.write_text("block_rq_issue { dev:  %d } hitcount:  1234\n"
                 "block_rq_issue { dev:  %d } hitcount:  99\n"
                 "block_rq_complete { dev:  %d } hitcount:  77\n" % ((254 << 20) | 0, (252 << 20) | 3, (252 << 20) | 3))
    t = grid._trace(str(tmp_path), {"252:3": "p3", "254:0": "dm-0"})
    assert t == {"block_rq_issue": {"dm-0": 1234, "p3": 99}, "block_rq_complete": {"p3": 77}}


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=5000), min_size=2, max_size=6),
       st.lists(st.integers(min_value=0, max_value=500), min_size=6, max_size=6))
def test_shares_sum_to_one_and_follow_completions(tmp_path_factory, counts, extra):
    labels = ["p%d" % i for i in range(len(counts))]
    done = dict(zip(labels, counts))
    acc = {l: done[l] + extra[i] for i, l in enumerate(labels)}
    rd = make_run(str(tmp_path_factory.mktemp("h")), "r", done, accounted=acc)
    s = json.load(open(os.path.join(rd, "summary.json")))
    total = sum(counts) or 1
    for i, l in enumerate(labels):
        # the summary keeps 4 decimals: off by at most half of the last one (18/320 = 0.05625 is kept as 0.0563;
        # the float difference is a hair above 5e-5)
        assert abs(s["shares"][l] - done[l] / total) <= 5e-5 + 1e-12
        assert s["devices"][l]["failed_issue_attempts"] == extra[i]
    if sum(counts):
        assert abs(sum(s["shares"].values()) - 1.0) < 1e-3
