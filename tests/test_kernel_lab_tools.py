"""The kernel lab's tools, checked without booting a kernel (validation/kernel-lab).

- the lab's shell scripts pass shellcheck;
- `grid.py plan` prints the runs.txt the guest gets: topologies that exist, one RUN line per cell and repeat;
- the summariser on raw run folders the lab really produced (tests/data/kernel-lab-runs), against values read
  by hand from their /sys/block/*/stat, /proc/stat and fio files:
  * a run of Debian 6.1 from the second repeat of a batch with two topologies, written by the guest script
    before the double-count fix: its meta lists each path once per build of the topology (twice here), and
    the summariser then counted every path twice (shares summing to 0.5);
  * a bio-based run of Debian 6.12, whose dm device has no scheduler and an empty nr_requests in sysfs.
"""
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from conftest import require

HERE = os.path.dirname(os.path.abspath(__file__))
LAB = os.path.join(HERE, "..", "validation", "kernel-lab")
GRID = os.path.join(LAB, "grid.py")
DATA = os.path.join(HERE, "data", "kernel-lab-runs")
RUN61 = os.path.join(DATA, "6.1-repeated-two-topologies", "runs", "D1-4_hst_bio_d16_r1")
RUN612 = os.path.join(DATA, "6.12-bio-based", "runs", "T4q_st_bio_d64_r0")

from test_kernel_lab_grid import grid  # noqa: E402  (the grid module, loaded from its file once)

SCRIPTS = ["lab/setup.sh", "lab/build-initramfs.sh", "lab/run.sh", "lab/init", "experiments/grid/main.sh"]


def _grid(*args):
    return subprocess.run([sys.executable, GRID] + list(args), capture_output=True, text=True)


@pytest.mark.parametrize("script", SCRIPTS)
def test_lab_scripts_pass_shellcheck(script):
    sc = require("shellcheck", "the kernel lab's shell scripts are checked with it")
    r = subprocess.run([sc, "-x", os.path.join(LAB, script)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout


def test_lab_scripts_name_no_machine_paths():
    # a user's checkout: the lab goes to KLAB_DIR or the temp folder, never to a folder of this machine
    for f in SCRIPTS + ["grid.py", "README.md", "lab/oot/Makefile"]:
        text = open(os.path.join(LAB, f)).read()
        assert "/work/" not in text and "shared/kernel-lab" not in text, f


# ------------------------------------------------------------------ the planner
def _parse_plan(text):
    """{batch: [lines]} from `grid.py plan` output."""
    out, cur = {}, None
    for line in text.splitlines():
        if line.startswith("# "):
            cur = line[2:]
            out[cur] = []
        elif line:
            out[cur].append(line)
    return out


def test_plan_of_the_heldout_batch_is_its_cells_per_repeat():
    r = _grid("plan", "heldout", "--rep", "2", "--runtime", "8")
    assert r.returncode == 0, r.stderr
    lines = _parse_plan(r.stdout)["heldout"]
    runs = [l for l in lines if l.startswith("RUN ")]
    topos = [l.split()[1] for l in lines if l.startswith("TOPO ")]
    # 21 cells, twice; every topology built again in the second repeat (six topologies, two repeats)
    assert len(runs) == 42
    assert topos == ["H1", "H2", "H3", "H4", "H5", "H6"] * 2
    assert lines[:4] == ["TOPO H1", "RUN H1_ql_mq_d24_r0 queue-length mq 24 8",
                         "RUN H1_ql_bio_d24_r0 queue-length bio 24 8",
                         "RUN H1_st_mq_d24_r0 service-time mq 24 8"]
    assert "RUN H6_hst_bio_d8_r1 historical-service-time bio 8 8" == runs[-1]
    names = [l.split()[1] for l in runs]
    assert len(set(names)) == len(names)
    # each RUN sits after the TOPO of its own topology
    cur = None
    for l in lines:
        f = l.split()
        if f[0] == "TOPO":
            cur = f[1]
        elif f[0] == "RUN":
            assert f[1].split("_")[0] == cur


def test_every_batch_names_topology_files_that_parse():
    r = _grid("plan")
    assert r.returncode == 0, r.stderr
    plans = _parse_plan(r.stdout)
    assert set(plans) == set(grid.BATCHES)
    sels = {"round-robin", "queue-length", "service-time", "historical-service-time"}
    for batch, lines in plans.items():
        for l in lines:
            f = l.split()
            if f[0] == "TOPO":
                rows = [x.split() for x in open(os.path.join(LAB, "experiments", "grid", "topo", f[1] + ".txt"))
                        if x.strip()]
                # null_blk: label nsec [depth]; scsi_debug: label nsec queue_depth scsi host [can_queue];
                # dm-delay over null_blk: label nsec depth delay ms
                assert rows and all(len(x) in (2, 3) or (len(x) in (5, 6) and x[3] == "scsi" and x[4].isdigit())
                                    or (len(x) == 5 and x[3] == "delay" and x[4].isdigit()) for x in rows), f[1]
                assert all(x[1].isdigit() for x in rows) and all(int(x[2]) >= 1 for x in rows if len(x) >= 3)
                scsi = [x for x in rows if len(x) >= 5 and x[3] == "scsi"]
                # scsi_debug's ndelay and max_queue are module parameters: one value per topology
                assert len({x[1] for x in scsi}) <= 1 and len({(x[5:] or ["192"])[0] for x in scsi}) <= 1, f[1]
            elif f[0] == "RUN":
                # the plan's runtime, or a fault variant's own (its schedule needs 4 s)
                assert f[2] in sels and f[3] in ("mq", "bio") and int(f[4]) >= 1, (batch, l)
                assert f[5] == "8" or (f[5] == str(grid.FAULT_RUNTIME) and "-" in f[1].split("_")[0]), (batch, l)
            else:
                assert f[0] in ("FIO", "TRACE", "SCHED", "FEAT", "FAULT"), (batch, l)


def test_class_batches_keep_the_completion_time_and_vary_the_depth():
    # the same-latency / different-depth class: every path of a D topology completes in the same time, the
    # queue depths differ; the plan covers hst, st and ql in both modes
    cells = grid.BATCHES["depth2"] + grid.BATCHES["depthN"]
    assert len(cells) >= 24
    for topo in {c[0] for c in cells}:
        rows = [x.split() for x in open(os.path.join(LAB, "experiments", "grid", "topo", topo + ".txt"))]
        assert len({r[1] for r in rows}) == 1 and len({r[2] for r in rows}) == len(rows), topo
        assert 4_000_000 <= int(rows[0][1]) <= 10_000_000
    assert {(c[1], c[2]) for c in cells} >= {(s, m) for s in ("hst", "st", "ql") for m in ("mq", "bio")}


def test_draw_held_out_is_seeded_and_keeps_the_class():
    a = grid.draw_held_out(2026120745, 81)
    assert a == grid.draw_held_out(2026120745, 81) and a != grid.draw_held_out(2026120746, 81)
    assert [d[0] for d in a] == ["H%d" % n for n in range(81, 91)]
    for i, (name, paths, sel, depth) in enumerate(a):
        ns, tags = [p[0] for p in paths], [p[1] for p in paths]
        if i < 7:       # the class: one completion time, 2-4 paths, every queue depth different
            assert 2 <= len(paths) <= 4 and len(set(ns)) == 1 and len(set(tags)) == len(tags), name
        else:
            assert 2 <= len(paths) <= 3 and len(set(ns)) == len(ns), name
        assert sel in ("ql", "st") and depth in grid.DRAW_DEPTHS
    assert grid.topology_text([(4000000, None), (4000000, 32)]) == "p0 4000000\np1 4000000 32\n"


@pytest.mark.parametrize("batch,seed,first", [("heldout10", 2026120745, 81), ("heldout11", 2026120746, 91)])
def test_drawn_held_out_sets_are_the_draw_their_comments_name(batch, seed, first):
    # the committed topo files and batch are what `grid.py draw SEED FIRST` gives
    drawn = grid.draw_held_out(seed, first)
    assert grid.BATCHES[batch] == grid._held_out(*[(n, sel, d) for n, _, sel, d in drawn])
    for name, paths, _, _ in drawn:
        assert open(os.path.join(LAB, "experiments", "grid", "topo", name + ".txt")).read() == grid.topology_text(paths)


def test_draw_refuses_to_overwrite_a_topology(tmp_path):
    r = _grid("draw", "1", "81")
    assert r.returncode == 3 and r.stderr.strip().count("\n") == 0 and "H81" in r.stderr
    r = _grid("draw", "1", "81", "--dry-run", "--count", "2", "--of-class", "1")
    assert r.returncode == 0 and r.stdout.count("# H8") == 2 and "_held_out((" in r.stdout
    r = _grid("draw", "1", "81", "--dry-run", "--count", "2", "--of-class", "3")
    assert r.returncode == 3


def test_unknown_batch_is_one_line_and_exit_3():
    r = _grid("plan", "T4q", "nosuch")
    assert r.returncode == 3
    assert r.stderr.strip().count("\n") == 0 and "nosuch" in r.stderr


# ------------------------------------------------------------------ the summariser on stored raw runs
def test_repeated_two_topology_run_counts_each_path_once():
    meta = open(os.path.join(RUN61, "meta")).read()
    assert meta.count("D1-4 p0 ") == 2           # the guest logged both builds of the topology
    s = grid.summarise_run(RUN61)
    assert [p["label"] for p in s["paths"]] == ["p0", "p1"]
    assert s["paths"][0] == {"label": "p0", "completion_ns": 5000000, "hw_queue_depth": 1, "submit_queues": 1}
    # stat files, sectors written (field 6): p0 0 -> 4120 (515 writes of 4k), p1 0 -> 16024 (2003)
    assert s["devices"]["p0"]["writes"] == 515 and s["devices"]["p1"]["writes"] == 2003
    assert s["writes_total"] == 2518
    assert s["shares"] == {"p0": round(515 / 2518, 4), "p1": round(2003 / 2518, 4)}
    assert abs(sum(s["shares"].values()) - 1.0) < 1e-3
    # write ticks / writes: both paths complete in about their 5 ms plus the emulation's cost
    assert s["devices"]["p0"]["mean_write_ms"] == round(2719 / 515, 3)
    assert s["devices"]["p1"]["mean_write_ms"] == round(10535 / 2003, 3)
    # time in queue / run time (27.09 -> 30.98 s): the dm device had 16044 ms of in-flight time
    assert s["devices"]["dm-0"]["mean_inflight"] == round(16044 / ((30.98 - 27.09) * 1e3), 3)
    # fio.json: 837.658 IOPS, 2518 I/Os (as many as the paths completed)
    assert s["fio"]["iops"] == 837.7 and s["fio"]["total_ios"] == 2518
    # submission latency (slat_ns): mean 1148829 ns, stddev 1918735 ns
    assert s["fio"]["slat_mean_us"] == 1148.8 and s["fio"]["slat_stddev_us"] == 1918.7
    # /proc/stat "cpu": user+nice 236 -> 278, system 1247 -> 1333, idle+iowait 2317 -> 2883, softirq 170 -> 186
    busy = (278 - 236) + (1333 - 1247) + (186 - 170)
    assert s["guest_cpu"]["busy_frac_of_2cpus"] == round(busy / (busy + 2883 - 2317), 3)
    assert s["kernel"] == "6.1" and s["kernel_release"] == "6.1.0-57-amd64"   # from the boot's uname.txt
    assert s["samples"]["path_inflight"] == {"p0": [1], "p1": [4]} and s["samples"]["dm_inflight"] == [6]


def test_bio_based_612_run_has_no_dm_scheduler_or_nr_requests():
    s = grid.summarise_run(RUN612)
    assert s["queue"]["dm-0"]["nr_requests"] is None and s["queue"]["dm-0"]["scheduler"] is None
    assert s["queue"]["p3"] == {"scheduler": "none", "nr_requests": 4, "nr_hw_queues": 2, "hw_tags": 4}
    # sectors written: p0 16616 -> 28528, p1 16608 -> 28520, p2 16624 -> 28528, p3 5440 -> 11032
    w = {"p0": (28528 - 16616) // 8, "p1": (28520 - 16608) // 8, "p2": (28528 - 16624) // 8,
         "p3": (11032 - 5440) // 8}
    assert w == {"p0": 1489, "p1": 1489, "p2": 1488, "p3": 699}
    assert s["writes_total"] == sum(w.values())
    assert s["shares"] == {k: round(v / sum(w.values()), 4) for k, v in w.items()}
    assert s["kernel"] == "6.12" and s["kernel_release"] == "6.12.118+deb12-amd64"   # the run's meta
    assert s["fio"] == {}                        # its fio.json was dropped when the boot was summarised


def test_collect_keys_cells_by_kernel(tmp_path, monkeypatch):
    runs = tmp_path / "runs"
    for d in ("6.1-repeated-two-topologies", "6.12-bio-based"):
        shutil.copytree(os.path.join(DATA, d), runs / d)
        json.dump({"before": ["0.5", "0.5", "0.5"], "others_cpus": 0.1, "kernel_append": ""},
                  open(runs / d / "host_load.json", "w"))
        grid.finish_batch(str(runs / d))
    # the 6.12 run again, as if it were a 6.1 run of the same cell: it must stay a separate cell
    twin = runs / "6.1-twin" / "runs" / "T4q_st_bio_d64_r0"
    shutil.copytree(runs / "6.12-bio-based" / "runs" / "T4q_st_bio_d64_r0", twin)
    meta = open(twin / "meta").read().replace("kernel=6.12.118+deb12-amd64", "kernel=6.1.0-57-amd64")
    open(twin / "meta", "w").write(meta)
    shutil.copy(runs / "6.12-bio-based" / "host_load.json", runs / "6.1-twin")
    grid.finish_batch(str(runs / "6.1-twin"))
    monkeypatch.setattr(grid, "RUNS", str(runs))
    monkeypatch.setattr(grid, "HERE", str(tmp_path))
    cells = grid.collect()
    keys = [(c["kernel"], c["topology"], c["queue_mode"], c["iodepth"], c["selector"], c["n"]) for c in cells]
    assert keys == [("6.1", "T4q", "bio", 64, "service-time", 1), ("6.1", "D1-4", "bio", 16,
                    "historical-service-time", 1), ("6.12", "T4q", "bio", 64, "service-time", 1)]
    d14 = cells[1]
    assert d14["mean_share"] == {"p0": 0.2045, "p1": 0.7955}
    assert d14["repeats"][0]["kernel_release"] == "6.1.0-57-amd64"
    assert [g["hw_queue_depth"] for g in d14["groups"]] == [1, 4]
    assert json.load(open(tmp_path / "results.json")) == cells
    # the README block: one section per kernel series
    block = grid.readme_block(cells)
    assert re.findall(r"^### (\S+): ", block, flags=re.M) == ["6.1", "6.1", "6.12"]


def test_summarise_cli_refuses_a_folder_that_is_not_a_run(tmp_path):
    r = _grid("summarise", str(tmp_path))
    assert r.returncode == 3 and "meta" in r.stderr and r.stderr.count("\n") == 1
    r = _grid("summarise", RUN612)
    assert r.returncode == 0 and json.loads(r.stdout)["shares"]["p3"] == round(699 / 5165, 4)


def _cell(kernel, n, means, sds, topo="D1-4"):
    paths = [{"label": "p0", "completion_ns": 5000000, "hw_queue_depth": 1},
             {"label": "p1", "completion_ns": 5000000, "hw_queue_depth": 4}]
    return {"kernel": kernel, "topology": topo, "queue_mode": "mq", "iodepth": 16, "selector": "queue-length",
            "selector_args": "0", "n": n, "paths": paths,
            "groups": [{"labels": [p["label"]], "completion_ns": 5000000, "hw_queue_depth": p["hw_queue_depth"],
                        "mean_share_per_path": m, "stddev_share_per_path": sd}
                       for p, m, sd in zip(paths, means, sds)]}


def test_kernel_differences_against_two_standard_errors():
    cells = [_cell("6.1", 3, [0.30, 0.70], [0.01, 0.01]), _cell("6.12", 3, [0.25, 0.75], [0.02, 0.02]),
             _cell("6.1", 3, [0.30, 0.70], [0.03, 0.03], topo="D2-8"),
             _cell("6.12", 3, [0.32, 0.68], [0.03, 0.03], topo="D2-8"),
             _cell("6.1", 2, [0.5, 0.5], [0.0, 0.0], topo="c4x2")]          # on one kernel only: no row
    rows = grid.kernel_differences(cells)
    assert [r["cell"] for r in rows] == ["D1-4 mq d16 ql", "D2-8 mq d16 ql"]
    # D1-4: 0.05 apart, 2 * sqrt(0.01^2/3 + 0.02^2/3) = 0.0258 -> beyond the noise
    assert rows[0]["diff"] == -0.05 and rows[0]["bound"] == round(2 * (0.0005 / 3) ** 0.5, 4)
    assert rows[0]["beyond_noise"] is True and rows[0]["n"] == (3, 3)
    # D2-8: 0.02 apart, bound 2 * sqrt(2 * 0.03^2 / 3) = 0.049 -> within
    assert abs(rows[1]["diff"]) == 0.02 and rows[1]["beyond_noise"] is False
    assert "| D1-4 mq d16 ql | 3, 3 | 5ms/1t | -0.050 | 0.026 | yes |" in grid.differences_markdown(rows)


def _boot_cell(boots, topo="D1-4"):
    """A cell whose repeats ran in the boots given as {boot: [p0's share of each repeat]}."""
    paths = [{"label": "p0", "completion_ns": 5000000, "hw_queue_depth": 1},
             {"label": "p1", "completion_ns": 5000000, "hw_queue_depth": 4}]
    reps = [{"run": "%s/%s_r%d" % (b, topo, i), "shares": {"p0": x, "p1": round(1 - x, 4)}}
            for b, xs in boots.items() for i, x in enumerate(xs)]
    return {"kernel": "6.1", "topology": topo, "queue_mode": "bio", "iodepth": 16, "selector": "queue-length",
            "paths": paths, "repeats": reps,
            "groups": [{"labels": [p["label"]], "completion_ns": 5000000, "hw_queue_depth": p["hw_queue_depth"]}
                       for p in paths]}


def test_boot_spread_is_a_one_way_analysis_of_variance_by_boot():
    cells = [_boot_cell({"A": [0.2, 0.4], "B": [0.5, 0.7]}),
             _boot_cell({"A": [0.3, 0.3, 0.3]}, topo="D2-8"),                  # one boot: no row
             _boot_cell({"A": [0.3, 0.3], "B": [0.3]}, topo="D3-8"),           # the same share throughout: no row
             _boot_cell({"A": [0.1], "B": [0.3]}, topo="D4-8")]                # one repeat per boot: no F
    rows, pooled = grid.boot_spread(cells)
    assert [r["cell"] for r in rows] == ["6.1 D1-4 bio d16 ql", "6.1 D4-8 bio d16 ql"]
    # means 0.3 and 0.6 about 0.45: SSB = 2 x 0.15^2 x 2 = 0.09 (1 df); SSW = 4 x 0.1^2 = 0.04 (2 df); F = 4.5
    d14 = rows[0]
    assert d14["group"] == "5ms/1t" and d14["n"] == [2, 2] and d14["boot_means"] == [0.3, 0.6]
    assert (d14["df_between"], d14["df_within"]) == (1, 2) and d14["f"] == 4.5
    assert rows[1]["f"] is None and rows[1]["df_within"] == 0
    assert pooled == 4.5        # only cells with repeats within a boot are pooled
    md = grid.boot_spread_markdown(rows, pooled)
    assert "| 6.1 D1-4 bio d16 ql | 5ms/1t | 2, 2 | 0.300, 0.600 | 4.50 |" in md
    assert "1 cells whose repeats within a boot differ: F above 1 in 1, above 4 in 1" in md


def test_independent_f_counts_follow_the_f_distribution():
    # one row, two boots of two repeats: F(1, 2) = t^2 with 2 degrees of freedom, P(|t| > x) = 1 - x / sqrt(2 + x^2):
    # P(F > 1) = 1 - 1/sqrt(3) = 0.423, P(F > 4) = 1 - 2/sqrt(6) = 0.184
    a1, a4 = grid.independent_f_counts([{"n": [2, 2], "df_between": 1, "df_within": 2}], draws=20000)
    assert abs(a1 - (1 - 3 ** -0.5)) < 0.02 and abs(a4 - (1 - 2 / 6 ** 0.5)) < 0.02
    assert grid.independent_f_counts([{"n": [1, 1], "df_between": 1, "df_within": 0}]) == (0, 0)


@pytest.mark.parametrize("cmd,last", [("boots", "pooled, F = "), ("compare", "|")])
def test_boots_and_compare_read_the_collected_cells(tmp_path, monkeypatch, cmd, last):
    before = os.path.getmtime(os.path.join(LAB, "results-icount.json"))
    r = _grid(cmd, "--icount")
    assert r.returncode == 0 and last in r.stdout.splitlines()[-1]
    assert os.path.getmtime(os.path.join(LAB, "results-icount.json")) == before     # nothing rewritten
    monkeypatch.setattr(grid, "HERE", str(tmp_path))
    monkeypatch.setattr(sys, "argv", ["grid.py", cmd])
    with pytest.raises(SystemExit) as e:
        grid.main()
    assert e.value.code == 3


def test_model_differences_beside_the_kernels():
    cells = [_cell("6.1", 3, [0.30, 0.70], [0.01, 0.01]), _cell("6.12", 3, [0.25, 0.75], [0.02, 0.02]),
             _cell("6.1", 3, [0.30, 0.70], [0.03, 0.03], topo="D2-8"),
             _cell("6.12", 3, [0.32, 0.68], [0.03, 0.03], topo="D2-8")]
    for c in cells:
        c["groups"][0]["labels"], c["groups"][1]["labels"] = ["p0"], ["p1"]
    rows = grid.kernel_differences(cells)
    assert rows[0]["key"] == "D1-4 queue-length mq d16" and rows[0]["labels"] == ["p0"]
    # the model: D1-4's p0 0.31 on 6.1 and 0.27 on 6.12 (-0.04 against the kernels' -0.05: reproduced);
    # D2-8 the same on both kernels (0 against +0.02: not the same sign)
    predicted = [{"kernel_series": k, "cell": cell, "sim_paths": {"p0": p0, "p1": 1 - p0}}
                 for k, cell, p0 in (("6.1", "D1-4 queue-length mq d16", 0.31), ("6.12", "D1-4 queue-length mq d16", 0.27),
                                     ("6.1", "D2-8 queue-length mq d16", 0.3), ("6.12", "D2-8 queue-length mq d16", 0.3))]
    rows = grid.model_differences(rows, predicted)
    assert (rows[0]["model_diff"], rows[0]["reproduced"]) == (-0.04, True)
    assert (rows[1]["model_diff"], rows[1]["reproduced"]) == (0.0, False)
    md = grid.differences_markdown(rows)
    assert "| D1-4 mq d16 ql | 3, 3 | 5ms/1t | -0.050 | 0.026 | yes | -0.040 |" in md
    assert md.endswith("beyond the noise: 1 cells, the model's difference of the same sign and within 0.03 in 1; "
                       "of the 1 that differ by 0.03 or more, in 1")
    assert "model" not in grid.differences_markdown(grid.kernel_differences(cells))


def test_run_with_runs_dir_keeps_the_boot_out_of_runs_and_results(tmp_path, monkeypatch, capsys):
    # held-out runs go to a folder of the user's choosing, unseen: no results.json rebuilt, no shares printed.
    # run.sh is replaced by a stand-in that "boots" by copying a stored 6.12 boot into OUTDIR.
    lab = tmp_path / "klab"
    lab.mkdir()
    (lab / "kernel-release").write_text("6.12.118+deb12-amd64\n")
    seen = {}

    def fake_run(argv, env):
        exp, out = argv[1], argv[2]
        seen["plan"] = open(os.path.join(exp, "runs.txt")).read()
        seen["klab"] = env["KLAB_DIR"]
        for f in os.listdir(os.path.join(DATA, "6.12-bio-based")):
            src = os.path.join(DATA, "6.12-bio-based", f)
            if f != "host_load.json":
                (shutil.copytree if os.path.isdir(src) else shutil.copy)(src, os.path.join(out, f))
        return subprocess.CompletedProcess(argv, 0)

    repo_runs, here, sealed = tmp_path / "runs", tmp_path / "here", tmp_path / "sealed"
    repo_runs.mkdir(); here.mkdir()
    monkeypatch.setattr(grid, "RUNS", str(repo_runs))
    monkeypatch.setattr(grid, "HERE", str(here))
    monkeypatch.setattr(grid.subprocess, "run", fake_run)
    monkeypatch.setenv("KLAB_DIR", str(lab))
    monkeypatch.setattr(sys, "argv", ["grid.py", "run", "heldout", "--rep", "2", "--runs-dir", str(sealed)])
    grid.main()
    assert seen["klab"] == str(lab) and seen["plan"] == grid.runs_txt("heldout", 2, 8)
    boots = os.listdir(sealed)
    assert len(boots) == 1 and re.fullmatch(r"heldout-6\.12-\d{8}T\d{6}", boots[0])
    s = json.load(open(sealed / boots[0] / "runs" / "T4q_st_bio_d64_r0" / "summary.json"))
    assert s["batch"] == boots[0] and s["shares"]["p3"] == round(699 / 5165, 4)
    assert os.listdir(repo_runs) == [] and os.listdir(here) == []     # nothing in runs/, no results.json
    printed = capsys.readouterr().out
    assert printed.strip() == "grid.py: 1 runs summarised in %s" % (sealed / boots[0]) and "p3=" not in printed


def test_icount_run_boots_the_deterministic_lab_and_keeps_its_own_results(tmp_path, monkeypatch):
    # --icount: run.sh gets KLAB_ACCEL=icount and one vCPU, the boot goes to runs-icount/, its host_load.json
    # names the lab's kind and the guest's vCPUs (the prediction's guest takes them), and collect writes
    # results-icount.json (TABLE-icount.md on `collect --icount`), leaving the emulated lab's results.json alone
    lab = tmp_path / "klab"
    lab.mkdir()
    (lab / "kernel-release").write_text("6.12.118+deb12-amd64\n")
    seen = {}

    def fake_run(argv, env):
        out = argv[2]
        seen["env"] = {k: env.get(k) for k in ("KLAB_ACCEL", "KLAB_SMP")}
        for f in os.listdir(os.path.join(DATA, "6.12-bio-based")):
            src = os.path.join(DATA, "6.12-bio-based", f)
            if f != "host_load.json":
                (shutil.copytree if os.path.isdir(src) else shutil.copy)(src, os.path.join(out, f))
        return subprocess.CompletedProcess(argv, 0)

    here = tmp_path / "here"
    here.mkdir()
    (here / "results.json").write_text("[]")
    for name, value in (("RUNS", str(here / "runs")), ("HERE", str(here)), ("RESULTS", "results.json"),
                        ("FAULT_RESULTS", "results-faults.json"), ("TABLE", "TABLE.md")):
        monkeypatch.setattr(grid, name, value)     # restored after the test: main() repoints them
    monkeypatch.setattr(grid.subprocess, "run", fake_run)
    monkeypatch.setenv("KLAB_DIR", str(lab))
    monkeypatch.delenv("KLAB_SMP", raising=False)
    monkeypatch.setattr(sys, "argv", ["grid.py", "run", "smoke", "--icount"])
    grid.main()
    assert seen["env"] == {"KLAB_ACCEL": "icount", "KLAB_SMP": "1"}
    boots = os.listdir(here / "runs-icount")
    assert len(boots) == 1 and not (here / "runs").exists()
    load = json.load(open(here / "runs-icount" / boots[0] / "host_load.json"))
    assert load["accel"] == "icount" and load["guest_cpus"] == 1
    s = json.load(open(here / "runs-icount" / boots[0] / "runs" / "T4q_st_bio_d64_r0" / "summary.json"))
    assert s["host_load"]["guest_cpus"] == 1
    assert json.load(open(here / "results.json")) == []
    assert sorted(os.listdir(here)) == ["results-icount.json", "results.json", "runs-icount"]


def test_run_records_the_emulated_labs_kind_and_vcpus(tmp_path, monkeypatch):
    lab = tmp_path / "klab"
    lab.mkdir()
    (lab / "kernel-release").write_text("6.1.0-57-amd64\n")
    monkeypatch.setattr(grid.subprocess, "run", lambda argv, env: subprocess.CompletedProcess(argv, 0))
    monkeypatch.setenv("KLAB_DIR", str(lab))
    monkeypatch.delenv("KLAB_ACCEL", raising=False)
    monkeypatch.setenv("KLAB_SMP", "4")
    monkeypatch.setattr(sys, "argv", ["grid.py", "run", "smoke", "--runs-dir", str(tmp_path / "out")])
    grid.main()
    (boot,) = os.listdir(tmp_path / "out")
    load = json.load(open(tmp_path / "out" / boot / "host_load.json"))
    assert load["accel"] == "tcg" and load["guest_cpus"] == 4


def test_finish_batch_of_a_boot_that_wrote_no_runs(tmp_path):
    # a guest that never reached /init leaves no runs/ folder: nothing to summarise, no traceback
    (tmp_path / "console.log").write_text("no init\n")
    grid.finish_batch(str(tmp_path))
    assert sorted(os.listdir(tmp_path)) == ["console.log"]


def test_plan_of_the_scsi_batch_and_its_topologies():
    r = _grid("plan", "scsi", "--rep", "2")
    assert r.returncode == 0, r.stderr
    lines = _parse_plan(r.stdout)["scsi"]
    assert [l for l in lines if l.startswith("TOPO ")] == ["TOPO S1", "TOPO S2"] * 2
    # all four selectors x bio/mq on both topologies, twice
    runs = [l.split() for l in lines if l.startswith("RUN ")]
    assert len(runs) == 32
    assert {(r[1].split("_")[0], r[2], r[3]) for r in runs} == {
        (t, s, m) for t in ("S1", "S2") for s in grid.SEL.values() for m in ("mq", "bio")}
    rows = {t: [x.split() for x in open(os.path.join(LAB, "experiments", "grid", "topo", t + ".txt"))]
            for t in ("S1", "S2")}
    # S1: the same-latency/different-depth class on SCSI, one path per host, queue_depth 2 and 8
    assert [(x[2], x[4]) for x in rows["S1"]] == [("2", "0"), ("8", "1")] and len({x[1] for x in rows["S1"]}) == 1
    # S2: two of the three paths behind host 0, whose can_queue (4) is what they share
    assert [x[4] for x in rows["S2"]] == ["0", "0", "1"] and {x[5] for x in rows["S2"]} == {"4"}


def test_scsi_paths_keep_kind_host_and_can_queue(tmp_path, monkeypatch):
    # the guest's path line of a scsi_debug LUN carries kind/host/can_queue/block; the summary and the cell keep
    # them (null_blk paths stay as they were). The stored 6.12 run with its path lines written the scsi way.
    runs = tmp_path / "runs"
    shutil.copytree(os.path.join(DATA, "6.12-bio-based"), runs / "b")
    rd = runs / "b" / "runs" / "T4q_st_bio_d64_r0"
    meta = open(rd / "meta").read()
    for i in range(4):
        meta = meta.replace("T4q p%d 252:%d" % (i, i), "T4q p%d 8:%d" % (i, 16 * i))   # sd majors
    meta = re.sub(r"(T4q p(\d) .*submit_queues=1)",
                  lambda m: m.group(1) + " kind=scsi host=%d can_queue=4 block=sd%s" % (int(m.group(2)) // 2,
                                                                                       "abcd"[int(m.group(2))]),
                  meta)
    open(rd / "meta", "w").write(meta)
    s = grid.summarise_run(str(rd))
    assert s["paths"][2] == {"label": "p2", "completion_ns": 4000000, "hw_queue_depth": 4, "submit_queues": 1,
                             "kind": "scsi", "host": 1, "can_queue": 4, "block": "sdc"}
    assert s["shares"] == grid.summarise_run(RUN612)["shares"]      # the stat lines are keyed by label
    grid.finish_batch(str(runs / "b"))
    monkeypatch.setattr(grid, "RUNS", str(runs))
    monkeypatch.setattr(grid, "HERE", str(tmp_path))
    (cell,) = grid.collect()
    assert [(p["host"], p["can_queue"], p["kind"]) for p in cell["paths"]] == [(0, 4, "scsi"), (0, 4, "scsi"),
                                                                               (1, 4, "scsi"), (1, 4, "scsi")]


def _spread_cell(topo, tags, repeats):
    paths = [{"label": "p%d" % i, "completion_ns": 2_000_000, "hw_queue_depth": t} for i, t in enumerate(tags)]
    return {"topology": topo, "selector": "historical-service-time", "queue_mode": "bio", "iodepth": 16,
            "paths": paths, "repeats": [{"shares": dict(zip(("p0", "p1"), r))} for r in repeats]}


def test_spread_counts_equivalent_paths_by_rank():
    """grid.py spread: two identical paths that swap their shares from repeat to repeat do not spread (ranked,
    the larger is 0.8 every time); two paths of different tags whose shares move by 0.1 do, and the same swap
    between paths of different tags too."""
    swap = _spread_cell("H1", [4, 4], [(0.8, 0.2), (0.2, 0.8), (0.8, 0.2)])
    moves = _spread_cell("H2", [2, 8], [(0.3, 0.7), (0.4, 0.6), (0.5, 0.5)])
    steady = _spread_cell("H3", [2, 8], [(0.3, 0.7), (0.31, 0.69), (0.3, 0.7)])
    outside = _spread_cell("H9", [2, 8], [(0.3, 0.7), (0.4, 0.6), (0.5, 0.5)])
    found = grid.spread_cells([swap, moves, steady, outside], 1, 5)
    assert [key for key, _ in found] == [("H2", "hst", "bio", 16)]
    assert found[0][1] == pytest.approx(0.1)
    # by label the swap would have counted (0.8 and 0.2 alternate: standard deviation 0.35)
    by_label = _spread_cell("H1", [4, 8], [(0.8, 0.2), (0.2, 0.8), (0.8, 0.2)])
    assert grid.spread_cells([by_label], 1, 5)[0][1] == pytest.approx(0.3464, abs=1e-4)


def test_spread_prints_the_batch_entry():
    require(os.path.join(LAB, "results-icount.json"), "the deterministic lab's results")
    out = _grid("spread", "101", "120", "--icount")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    assert lines[-1].startswith("_cells(") or lines[-1] == "(none spread)"
    assert all(l.startswith("# H") and "standard deviation" in l for l in lines[:-1])
