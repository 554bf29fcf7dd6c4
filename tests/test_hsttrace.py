"""validation/kernel-lab/hsttrace.py rebuilds historical-service-time's state from a block trace.

A simulated run writes the trace the lab's TRACE 2 would (bio-based: the clone's remap when the selector
has chosen, the completion with the remap time as the I/O's start; request-based: the issue and the
completion), and the selector's own choices are classified as they happen; replaying that trace must
choose the same path every time ("other" never) and put every choice in the same class.
"""
import gzip
import importlib.util
import os

import pytest

from mpathlab.selectors.historical_service_time import HistoricalServiceTime
from mpathlab.sim.devices import PathModel, ServiceTime
from mpathlab.sim.engine import simulate
from mpathlab.sim.host import HostModel
from mpathlab.workload.fio import parse_fio

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location(
    "hsttrace", os.path.join(HERE, "..", "validation", "kernel-lab", "hsttrace.py"))
hsttrace = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(hsttrace)


@pytest.mark.parametrize("mode", ["bio", "mq", "mq-full"])
def test_replayed_trace_rebuilds_the_selectors_choices(tmp_path, monkeypatch, mode):
    """mq-full: the fast path has 2 tags, so many maps find it full; the trace then also has the dm
    device's issue of every map attempt, as the lab's does, and the replay must move the path each failed
    attempt chose to the list's tail as hst_select_path did, or the ties that follow go the other way."""
    labels = ["p0", "p1"]
    live = hsttrace.Tally(labels)
    lines = []
    names = {}
    pending = []
    orig_select = HistoricalServiceTime.select_path
    orig_start = HistoricalServiceTime.start_io
    orig_end = HistoricalServiceTime.end_io

    def select_path(self, nr_bytes=0):
        now = self.select_clock()
        infos = list(self._valid)
        path = orig_select(self, nr_bytes)
        if not names:
            names.update(zip(self._info, labels))
        if pending:                     # the last choice got no start_io: its clone found no tag
            live.failed_maps[pending.pop()[0]] += 1
        if mode == "mq-full":               # its sector: the time, as the path's issue (and completion) give
            lines.append("%.9f i 253,0 %d" % (now / 1e9, now))
        # counted when start_io follows: a request-based choice whose clone got no tag never reaches the trace
        pending[:] = [(names[path], hsttrace.classify(self, infos, self._info[path], now), self._info[path])]
        return path

    def start_io(self, path, nr_bytes):
        now = self.clock()
        live.add(*pending.pop())
        lines.append("%.9f %s 252,%d %d" % (now / 1e9, "m" if mode == "bio" else "i", labels.index(names[path]), now))
        return orig_start(self, path, nr_bytes)

    def end_io(self, path, nr_bytes, start_time_ns):
        lines.append("%.9f c 252,%d %d" % (self.clock() / 1e9, labels.index(names[path]), start_time_ns))
        return orig_end(self, path, nr_bytes, start_time_ns)

    monkeypatch.setattr(HistoricalServiceTime, "select_path", select_path)
    monkeypatch.setattr(HistoricalServiceTime, "start_io", start_io)
    monkeypatch.setattr(HistoricalServiceTime, "end_io", end_io)
    feat = "2 queue_mode bio" if mode == "bio" else "0"
    table = "0 4096 multipath %s 0 1 1 historical-service-time 0 2 1 8:0 1 8:16 1" % feat
    fast_tags = {"hw_queue_depth": 2} if mode == "mq-full" else {}
    paths = [PathModel("p0", (8, 0), ServiceTime(4_000_000), **fast_tags),
             PathModel("p1", (8, 16), ServiceTime(10_000_000), parallelism=4, hw_queue_depth=4, nr_hw_queues=2)]
    jobs = parse_fio("[k]\nioengine=libaio\nrw=randwrite\nbs=4k\niodepth=8\nruntime=2000ms\ntime_based\n").jobs
    simulate(table, paths, jobs, host=HostModel(2, 150_000, 130_000), seed=1, engine="python")
    monkeypatch.undo()
    if pending and mode == "mq-full":
        live.failed_maps[pending.pop()[0]] += 1

    rd = tmp_path / "run"
    rd.mkdir()
    (rd / "meta").write_text("topo=X name=X_hst queue_mode=%s iodepth=8\nX p0 252:0\nX p1 252:1\n%s" % (
        "bio" if mode == "bio" else "mq", "dmdev=253:0\n" if mode == "mq-full" else ""))
    with gzip.open(rd / "trace_events.gz", "wt") as f:
        f.write("\n".join(lines) + "\n")
    _, replayed = hsttrace.replay_kernel(str(rd))
    assert sum(sum(c.values()) for c in live.count.values()) > 1000
    assert all(not replayed.count[lb]["other"] for lb in labels)
    assert replayed.count == live.count
    # the slow path is chosen in more than one way: the classes are not all one
    assert len([k for k in hsttrace.CLASSES if live.count["p1"][k]]) >= 2
    if mode == "mq-full":
        assert sum(live.failed_maps.values()) > 100
        assert replayed.failed_maps == live.failed_maps
        assert replayed.attempts_matched[0] == replayed.attempts_matched[1] == sum(
            sum(c.values()) for c in live.count.values())
    else:
        assert not replayed.failed_maps and not replayed.attempts_matched[1]


def test_timing_of_choices_and_completions(capsys):
    """--timing: gaps between choices, the first choice after completions, each path's completion gap."""
    tally = hsttrace.Tally(["p0", "p1"])
    tally.chose(0, "p0")
    tally.chose(40_000, "p0")           # 40 us after the first
    tally.done("p0", 4_000_000)
    tally.done("p0", 4_100_000)         # p0 completes 100 us apart
    tally.chose(4_300_000, "p0")        # 200 us after the last completion
    tally.chose(4_340_000, "p0")        # no completion since the last choice: not a first choice
    tally.done("p1", 9_000_000)
    tally.chose(9_500_000, "p0")        # 500 us after
    assert tally.after_done_ns == [200_000, 500_000]
    tally.report_timing()
    out = capsys.readouterr().out
    # gaps 40, 40, 4260, 5160 us: the 25th percentile is the first 40, the median the third
    assert "between choices: p25 40 us, median 4260 us, p75 5160 us" in out
    assert "first choice after a completion: median 500 us" in out
    assert "p0   mean gap between completions 100 us, 0% of them within 50 us of the one before" in out
    assert "p1   mean gap" not in out        # one completion: no gap


def test_windows_give_each_paths_share_and_average_through_the_run(capsys):
    """--windows: per window, each path's share of the choices in it and its average at the window's end
    (the last completion's before then; 0 before its first)."""
    tally = hsttrace.Tally(["p0", "p1"])
    for t, lb in ((0, "p0"), (1_000_000, "p0"), (2_000_000, "p0"), (3_000_000, "p1"),      # window 0: 3/4 p0
                  (10_500_000, "p1"), (12_000_000, "p1")):                                  # window 1: all p1
        tally.chose(t, lb)
    tally.done("p0", 4_000_000, 1_500_000 << 10)     # p0 learns 1500 us in window 0 (ns, fixed point)
    tally.done("p1", 11_000_000, 4_000_000 << 10)    # p1 4000 us in window 1
    tally.done("p0", 25_000_000, 900_000 << 10)      # after the last window: not shown
    tally.report_windows(10_000_000)
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "  per 10 ms: each path's share of the choices, and its average at the window's end (us)"
    assert out[1].split() == ["0.000", "s", "p0", "0.75", "1500", "p1", "0.25", "0"]
    assert out[2].split() == ["0.010", "s", "p0", "0.00", "1500", "p1", "1.00", "4000"]
    assert len(out) == 3


def test_completions_in_clumps(capsys):
    """--timing: how many of a path's completions come within 50 us of the one before (a clump)."""
    tally = hsttrace.Tally(["p0"])
    for t in (0, 20_000, 30_000, 1_000_000):     # gaps 20, 10 and 970 us
        tally.done("p0", t)
    tally.chose(1_100_000, "p0")
    tally.chose(1_200_000, "p0")
    tally.report_timing()
    assert "p0   mean gap between completions 333 us, 67% of them within 50 us of the one before" in \
        capsys.readouterr().out


def test_choices_split_by_in_flight_with_both_sides_of_the_compare(capsys):
    """--timing: per path, its choices by in-flight count and (1 + in flight) x average against the best other
    path's: a path chosen again with one request out is the second of a pair."""
    class Info:
        def __init__(self, outstanding, avg_us):
            self.outstanding, self.hst = outstanding, (avg_us * 1000) << 10   # the kernel's 10-bit fixed point
    shallow, deep = Info(0, 984), Info(13, 155)
    assert hsttrace.weighed([shallow, deep], shallow) == 14 * 155
    assert hsttrace.weighed([shallow], shallow) is None
    tally = hsttrace.Tally(["p0", "p1"])
    tally.add("p0", "estimate", shallow, hsttrace.weighed([shallow, deep], shallow))
    shallow.outstanding = 1
    tally.add("p0", "estimate", shallow, hsttrace.weighed([shallow, deep], shallow))
    tally.add("p0", "estimate", shallow, 1000.0)
    tally.report_weighed()
    out = capsys.readouterr().out
    # 0 in flight once (984 against 14 x 155 = 2170), 1 in flight twice (2 x 984 = 1968; 2170 and 1000: median 1585)
    assert ("p0   chosen with 0 in flight 33% ((1 + n) x average 984 us against the best other path's 2170 us, "
            "medians), 1 in flight 67% ((1 + n) x average 1968 us against the best other path's 1585 us, medians), "
            "2 or more in flight 0%\n") in out
    assert "p1" not in out          # never chosen


def test_timing_is_kept_by_the_kernel_replay(tmp_path):
    rd = tmp_path / "run"
    rd.mkdir()
    (rd / "meta").write_text("topo=X name=X_hst queue_mode=bio iodepth=2\nX p0 252:0\nX p1 252:1\n")
    with gzip.open(rd / "trace_events.gz", "wt") as f:
        # the later traces' lines carry the event's CPU, flags and task: the same replay
        f.write("1.000000 m 252,0 8\n1.000040 m 252,1 16 1 d..1. fio-312\n1.004000 c 252,0 8 0 d.h1. <idle>-0\n"
                "1.004250 m 252,0 24\n")
    _, tally = hsttrace.replay_kernel(str(rd))
    assert tally.choice_ns == [1_000_000_000, 1_000_040_000, 1_004_250_000]
    assert tally.done_ns == {"p0": [1_004_000_000], "p1": []}
    assert tally.after_done_ns == [250_000]


def test_model_replay_of_a_run_it_cannot_replay_is_one_line_and_exit_3(tmp_path, capsys):
    """--model replays historical-service-time runs only: another selector's run (the single-path
    calibration runs use round-robin) is named in one line, the rest still replayed, exit 3."""
    rd = tmp_path / "runs" / "c4-ev_rr_bio_d64_r0"
    rd.mkdir(parents=True)
    (rd / "meta").write_text("topo=c4 name=c4-ev_rr_bio_d64_r0 selector=round-robin queue_mode=bio iodepth=64\n"
                             "kernel=6.1.0-57-amd64\nc4 p0 252:0 completion_nsec=4000000\n")
    assert hsttrace.main(["--model", str(rd)]) == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(rd) in err[0] and "ran round-robin" in err[0]


def test_timing_measures_timer_lateness_and_the_tag_sleepers_wake(tmp_path, capsys):
    """From the kernel's trace: each completion less its issue and the path's completion_nsec, and
    (bio-based) a clone mapped before its path's last completion and issued after it: its task slept for
    a tag, and woke that long after the completion that freed one."""
    rd = tmp_path / "run"
    rd.mkdir()
    (rd / "meta").write_text("topo=X name=X_hst queue_mode=bio iodepth=2\n"
                             "X p0 252:0 completion_nsec=4000000 hw_queue_depth=1\n")
    with gzip.open(rd / "trace_events.gz", "wt") as f:
        f.write("1.000000 m 252,0 8\n1.000010 i 252,0 8\n"
                "1.000050 m 252,0 16\n"                      # the one tag is taken: the task sleeps
                "1.004100 c 252,0 8\n"                       # 4 ms + 90 us after its issue
                "1.004130 i 252,0 16\n"                      # issued 30 us after the tag came back
                "1.008230 c 252,0 16\n"                      # 4 ms + 100 us
                "1.008300 m 252,0 24\n")
    _, tally = hsttrace.replay_kernel(str(rd))
    assert tally.late_ns == {"p0": [90_000, 100_000]}
    assert tally.tag_wake_ns == [30_000]
    tally.report_timing()
    out = capsys.readouterr().out
    assert "p0   completes late by: median 100 us, p90 100 us, 0% above 300 us" in out
    assert "issued 30 us (median; p25 30, p75 30) after the completion that freed one (1 times)" in out


def test_a_folder_that_is_not_a_traced_run_is_one_line_and_exit_3(tmp_path, capsys):
    """No meta, no trace, a broken line or a cut gzip: the folder and what is wrong, one line each."""
    empty = tmp_path / "empty"
    empty.mkdir()
    untraced = tmp_path / "untraced"
    untraced.mkdir()
    (untraced / "meta").write_text("topo=X name=X_hst queue_mode=bio iodepth=2\nX p0 252:0\n")
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "meta").write_text("topo=X name=X_hst queue_mode=bio iodepth=2\nX p0 252:0\n")
    with gzip.open(broken / "trace_events.gz", "wt") as f:
        f.write("1.000000 m 252,0 8\nsoon m 252,0 16\n")
    cut = tmp_path / "cut"
    cut.mkdir()
    (cut / "meta").write_text("topo=X name=X_hst queue_mode=bio iodepth=2\nX p0 252:0\n")
    with gzip.open(cut / "trace_events.gz", "wt") as f:
        f.write("".join("1.%06d m 252,0 %d\n" % (i, 8 * i) for i in range(5000)))
    (cut / "trace_events.gz").write_bytes((cut / "trace_events.gz").read_bytes()[:200])
    assert hsttrace.main([str(empty), str(untraced), str(broken), str(cut)]) == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 4
    assert err[0].startswith("hsttrace: %s: " % empty) and "meta" in err[0]
    assert err[1].startswith("hsttrace: %s: " % untraced) and "trace_events.gz" in err[1]
    assert err[2] == "hsttrace: %s: trace_events.gz line 2: the time 'soon' is not a number" % broken
    assert err[3].startswith("hsttrace: %s: " % cut)


def test_late_timers_and_the_vcpu_fio_ran_on(tmp_path, capsys):
    """With each event's CPU in the trace: a timer is armed on the vCPU its request was issued on; for
    each completion more than 500 us overdue, did the fio task run on that vCPU meanwhile (the timer
    interrupt held while the vCPU runs), only on the other one, or not at all?"""
    rd = tmp_path / "run"
    rd.mkdir()
    (rd / "meta").write_text("topo=X name=X_hst queue_mode=bio iodepth=4\nX p0 252:0 completion_nsec=1000000\n")
    lines = [
        "1.000000 m 252,0 8 0 d..1. fio-300", "1.000010 i 252,0 8 0 d..1. fio-300",      # due 1.001010
        "1.000020 m 252,0 16 0 d..1. fio-300", "1.000030 i 252,0 16 0 d..1. fio-300",    # due 1.001030
        "1.000040 m 252,0 24 0 d..1. fio-300", "1.000050 i 252,0 24 0 d..1. fio-300",    # due 1.001050
        "1.001100 c 252,0 24 0 d.h1. <idle>-0",          # on time (50 us)
        "1.001500 m 252,0 32 0 d..1. fio-300",           # fio on vCPU 0 while sector 8's timer is overdue
        "1.001510 i 252,0 32 0 d..1. fio-300",
        "1.001900 c 252,0 8 0 d.h1. fio-300",            # 890 us late: fio ran on its vCPU meanwhile
        "1.002200 m 252,0 40 1 d..1. fio-300",           # fio moves to vCPU 1: sector 40's timer armed there
        "1.002210 i 252,0 40 1 d..1. fio-300",           # due 1.003210
        "1.002600 c 252,0 16 0 d.h1. <idle>-0",          # 1570 us late: fio ran on vCPU 0 at 1.0015 meanwhile
        "1.002650 c 252,0 32 0 d.h1. <idle>-0",          # due 1.002510: on time (fio was on vCPU 1 then)
        "1.003500 m 252,0 48 0 d..1. fio-300",           # fio back on vCPU 0 while sector 40's is overdue
        "1.003510 i 252,0 48 0 d..1. fio-300",           # due 1.004510
        "1.004000 c 252,0 40 1 d.h1. <idle>-0",          # 790 us late: fio only on the other vCPU meanwhile
        "1.004600 c 252,0 48 0 d.h1. <idle>-0",          # on time
    ]
    with gzip.open(rd / "trace_events.gz", "wt") as f:
        f.write("\n".join(lines) + "\n")
    _, tally = hsttrace.replay_kernel(str(rd))
    assert sorted(tally.timers)[:2] == [(1_001_010_000, 1_001_900_000, 0), (1_001_030_000, 1_002_600_000, 0)]
    tally.report_timing()
    out = capsys.readouterr().out
    # five of the six timers were armed on the vCPU fio was on at their due time (sector 32's was not)
    assert "timers armed on the vCPU fio ran on when they were due: 83.3%" in out
    assert "3 completions more than 500 us late: fio ran on that timer's vCPU meanwhile in 67%, only on the " \
           "other in 33%, not at all in 0%" in out
    # a CPU column that is not a number is named with its line
    with gzip.open(rd / "trace_events.gz", "wt") as f:
        f.write(lines[0] + "\n1.000010 i 252,0 8 cpu0 d..1. fio-300\n")
    with pytest.raises(ValueError, match="line 2: the CPU 'cpu0' is not a number"):
        hsttrace.replay_kernel(str(rd))


def test_maps_that_waited_for_a_tag(tmp_path, capsys):
    """Bio-based: a map onto a path whose driver tags were all out waited for a tag; per path, how often
    and how long (map to issue).  A completion between a map and its issue on a path with a free tag is
    an interrupt during the submission, not a wait."""
    rd = tmp_path / "run"
    rd.mkdir()
    (rd / "meta").write_text("topo=X name=X_hst queue_mode=bio iodepth=2\n"
                             "X p0 252:0 completion_nsec=1000000 hw_queue_depth=2\n")
    with gzip.open(rd / "trace_events.gz", "wt") as f:
        f.write("1.000000 m 252,0 8\n1.000010 i 252,0 8\n"         # a tag at once
                "1.000100 m 252,0 16\n1.000110 i 252,0 16\n"       # the second tag
                "1.000200 m 252,0 24\n1.001000 c 252,0 8\n1.001050 i 252,0 24\n"   # both out: waited 850 us
                "1.001500 c 252,0 16\n"
                "1.002000 m 252,0 32\n1.002003 c 252,0 24\n1.002006 i 252,0 32\n")  # one out: no wait
    _, tally = hsttrace.replay_kernel(str(rd))
    assert tally.maps["p0"] == 4 and tally.tag_waits["p0"] == [850_000]
    # at the map that waited, the path's oldest request out (8) had been issued 190 us before
    assert tally.tag_wait_oldest["p0"] == [190_000]
    tally.report_timing()
    assert ("p0   its maps waited for a tag 25% of the time (850 us on average when they did; the path's oldest "
            "request had been out 190 us then, median)") in capsys.readouterr().out


def test_another_selectors_trace_gives_shares_and_timing_without_hsts_classes(tmp_path, capsys):
    """A traced service-time run: the choices per path and when they came, not historical-service-time's
    classes, averages or compare sides (they would describe a selector that did not run)."""
    rd = tmp_path / "H90-ev_st_bio_d64_r0"
    rd.mkdir()
    (rd / "meta").write_text("topo=X name=H90-ev_st_bio_d64_r0 selector=service-time queue_mode=bio iodepth=2\n"
                             "X p0 252:0 completion_nsec=1000000\nX p1 252:1 completion_nsec=1000000\n")
    with gzip.open(rd / "trace_events.gz", "wt") as f:
        f.write("1.000000 m 252,0 8\n1.000010 i 252,0 8\n1.000020 m 252,1 16\n1.000030 i 252,1 16\n"
                "1.001010 c 252,0 8\n1.001020 m 252,0 24\n1.001030 i 252,0 24\n")
    assert hsttrace.main(["--timing", str(rd)]) == 0
    out = capsys.readouterr().out
    assert "(service-time: the classes and averages are historical-service-time's, left out)" in out
    assert "  p0   share 0.667  in flight when chosen 0.0\n" in out and "  p1   share 0.333" in out
    assert "estimate" not in out and "chosen with" not in out and "between choices" in out


def test_seed_goes_with_the_model_only(capsys):
    assert hsttrace.main(["--seed", "2", "any-run"]) == 3
    err = capsys.readouterr().err
    assert err == "hsttrace: --seed goes with --model (a kernel trace has none)\n"
    assert hsttrace.main(["--timers", "jitter", "any-run"]) == 3
    assert capsys.readouterr().err == "hsttrace: --timers goes with --model (a kernel trace has none)\n"
    assert hsttrace.main(["--completion", "interrupt", "any-run"]) == 3
    assert capsys.readouterr().err == "hsttrace: --completion goes with --model (a kernel trace has none)\n"


def test_windows_must_be_a_positive_length(capsys):
    for bad in ("0", "-5"):
        assert hsttrace.main(["--windows", bad, "any-run"]) == 3
        assert capsys.readouterr().err == ("hsttrace: --windows takes a positive number of milliseconds, not %g\n"
                                           % float(bad))


def test_model_replay_takes_the_seed(monkeypatch, tmp_path):
    """--model --seed N runs the prediction with seed N (validate's own is seed 1)."""
    seen = []
    monkeypatch.setattr(hsttrace, "replay_model", lambda rd, seed=1, timers=None, completion=None, wakes=None:
                        seen.append((seed, timers, completion, wakes)) or (_ for _ in ()).throw(LookupError("stop")))
    assert hsttrace.main(["--model", "--seed", "2", str(tmp_path)]) == 3
    assert hsttrace.main(["--model", str(tmp_path)]) == 3
    # --timers, --completion and --wakes: the guest's, as validate's options of those names (default: the lab's own)
    assert hsttrace.main(["--model", "--timers", "jitter", str(tmp_path)]) == 3
    assert hsttrace.main(["--model", "--timers", "constant", "--completion", "interrupt", str(tmp_path)]) == 3
    assert hsttrace.main(["--model", "--wakes", "late", str(tmp_path)]) == 3
    assert seen == [(2, None, None, None), (1, None, None, None), (1, "jitter", None, None),
                    (1, "constant", "interrupt", None), (1, None, None, "late")]


def test_model_replay_with_the_jitter_places_the_lateness_per_completion():
    """--model --timers jitter: the replayed guest has no held stretches, and on H72 bio (a 1-tag 10 ms path
    the kernel starves) the model's regime moves with it, as validate --timers jitter shows."""
    rd = os.path.join(HERE, "..", "validation", "kernel-lab", "runs-icount", "traceicount5-6.1-20261207T064755",
                      "runs", "H72-ev_hst_bio_d24_r0")
    if not os.path.exists(os.path.join(rd, "trace_events.gz")):
        pytest.skip("the traced H72 run is not in this checkout")
    _, held, guest = hsttrace.replay_model(rd, 1, "stretches")
    _, jitter, jguest = hsttrace.replay_model(rd, 1, "jitter")
    assert guest.timers == "stretches" and guest.host().timer_away_ns > 0
    assert jguest.timers == "jitter" and jguest.host().timer_away_ns == 0
    assert sum(held.count["p0"].values()) != sum(jitter.count["p0"].values())


def _stored_trace(batch, run):
    """A traced run among the deterministic lab's stored runs; the test is skipped where the checkout lacks it."""
    rd = os.path.join(HERE, "..", "validation", "kernel-lab", "runs-icount", batch, "runs", run)
    if not os.path.exists(os.path.join(rd, "trace_events.gz")):
        pytest.skip("the traced %s is not in this checkout" % run)
    return rd


def _shares(tally):
    """Each path's share of a replay's choices."""
    counts = {lb: sum(tally.count[lb].values()) for lb in tally.labels}
    return {lb: n / sum(counts.values()) for lb, n in counts.items()}


def test_the_guest_with_interrupts_replays_the_kernels_h72_cycle():
    """H72 bio (10 ms paths of 1, 24 and 48 tags): the kernel's trace gives the 1-tag path 0.152, chosen 68% by
    estimate and 32% for equal usage.  The deterministic lab's guest (completions as interrupt work, timers
    late by the same) replays that (docs/validation.md, "The sixteenth held-out set"); the guest before it
    gave the path a third of that."""
    rd = _stored_trace("traceicount5-6.1-20261207T064755", "H72-ev_hst_bio_d24_r0")

    def p0(tally):
        return _shares(tally)["p0"], tally.count["p0"]["equal-usage"] / sum(tally.count["p0"].values())
    _, kernel = hsttrace.replay_kernel(rd)
    _, now, guest = hsttrace.replay_model(rd, 1)
    _, before, _ = hsttrace.replay_model(rd, 1, "stretches", "queued")
    assert guest.completion == "interrupt" and guest.timers == "constant"
    (k_share, k_equal), (share, equal) = p0(kernel), p0(now)
    assert abs(share - k_share) < 0.03 and abs(equal - k_equal) < 0.05
    assert p0(before)[0] < k_share / 2


def test_late_wakes_move_the_traced_h4_as_the_kernel_moved():
    """H4 bio on 6.1 (4 ms of 8 tags, 8 ms of 2, 12 ms of 16): the traced kernel run holds the 8 ms cycle for six
    seconds, then moves to the 4 ms path for good, 0.759 of the run.  With late wakes (the deterministic lab's
    guest since the seventeenth held-out set) the model moves too; with every wake prompt it never does
    (docs/validation.md, "The seventeenth held-out set")."""
    rd = _stored_trace("tracehst-6.1-20261206T234638", "H4-ev_hst_bio_d32_r0")
    _, kernel = hsttrace.replay_kernel(rd)
    _, late, guest = hsttrace.replay_model(rd, 1)
    _, prompt, _ = hsttrace.replay_model(rd, 1, wakes="prompt")
    assert guest.wakes == "late"
    assert all(abs(_shares(late)[lb] - k) < 0.01 for lb, k in _shares(kernel).items())     # 0.758 0.192 0.050
    assert abs(_shares(prompt)["p0"] - 0.556) < 0.01                                    # the 8 ms cycle throughout


def test_a_reader_that_stops_early_gets_no_traceback():
    """`hsttrace.py RUN | head`: the reader closes the pipe before the report is written; the script
    ends quietly (exit 0), as the mpathlab command does."""
    import subprocess
    import sys
    run = os.path.join(HERE, "..", "validation", "kernel-lab", "runs-icount", "traceicount8-6.1-20261207T180858",
                       "runs", "H24-ev_hst_bio_d16_r0")
    p = subprocess.Popen([sys.executable, os.path.join(HERE, "..", "validation", "kernel-lab", "hsttrace.py"),
                          "--timing", run], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdout.close()
    err = p.stderr.read().decode()
    assert p.wait() == 0, err
    assert "Traceback" not in err and "Broken" not in err, err


def test_gaps_between_choices_by_completions_between_them(capsys):
    """The fio task's CPU time per map and what a completion's interrupt adds: choices 12 us apart with no
    completion between them, 16 us with one, 19 us with two; three completions between are left out."""
    tally = hsttrace.Tally(["p0"])
    t = 0
    for n, gap in ((0, 12_000), (1, 16_000), (0, 12_000), (2, 19_000), (3, 40_000), (1, 15_000)):
        tally.chose(t, "p0")
        for k in range(n):
            tally.done("p0", t + (k + 1) * 1_000)
        t += gap
    tally.chose(t, "p0")
    assert tally.gaps_by_completions() == {0: [12_000, 12_000], 1: [16_000, 15_000], 2: [19_000]}
    tally.report_timing()
    assert ("between choices with 0, 1, 2 completions between them: 0: median 12.0 us (2); 1: median 15.5 us (2); "
            "2: median 19.0 us (1)") in capsys.readouterr().out


@pytest.mark.parametrize("run", ["tracecalib-6.1-20261207T190118", "tracecalib-6.12-20261207T221319"])
def test_single_path_calibration_traces_give_the_interrupts_share(run, capsys):
    """validate.IRQ_SHARE comes from these runs (docs/validation.md, "The sixteenth held-out set"): on one
    1 ms path at depth 64, maps 12-13 us apart with no completion between them and 16 us with one."""
    rd = os.path.join(HERE, "..", "validation", "kernel-lab", "runs-icount", run, "runs", "c1-ev_rr_bio_d64_r0")
    if not os.path.exists(os.path.join(rd, "trace_events.gz")):
        pytest.skip("the lab's stored traces are not in this checkout")
    assert hsttrace.main(["--timing", rd]) == 0
    line = next(ln for ln in capsys.readouterr().out.splitlines() if "completions between them" in ln)
    none, one = (float(line.split("%d: median " % k)[1].split()[0]) for k in (0, 1))
    assert 12 <= none <= 13 and one == 16


def test_late_wakes_counted_against_the_usual():
    """Tally.late_wakes: the usual whole us from a freeing completion to the sleeper's issue, and the wakes
    LATE_WAKE_US or more after it (7 and 8 us are the usual and its rounding; 10 and 22 us are late)."""
    tally = hsttrace.Tally(["p0"])
    tally.tag_wake_ns = [7_200] * 90 + [8_100] * 6 + [10_300] * 3 + [22_000]
    usual, share, excess = tally.late_wakes()
    assert (usual, share, excess) == (7, 0.04, 3)


def test_late_wakes_measured_on_the_labs_traces_are_the_models(capsys):
    """validate.LATE_WAKES comes from the deterministic lab's traced bio runs made before the seventeenth held-out
    set (12-06 and 12-07; hsttrace.py --late-wakes): per kernel the median run's share of late wakes (to 0.1%)
    and their median excess (to 1 us)."""
    from mpathlab import validate
    lab = os.path.join(HERE, "..", "validation", "kernel-lab")
    runs = sorted(os.path.join(lab, "runs-icount", b, "runs", r)
                  for b in os.listdir(os.path.join(lab, "runs-icount"))
                  if b.startswith("trace") and b.split("-")[-1][:8] in ("20261206", "20261207")
                  for r in os.listdir(os.path.join(lab, "runs-icount", b, "runs")) if "_bio_" in r and "_rr_" not in r)
    if not runs or not all(os.path.exists(os.path.join(r, "trace_events.gz")) for r in runs):
        pytest.skip("the lab's stored traces are not in this checkout")
    measured = hsttrace.late_wakes_by_kernel(runs)
    assert {k: (n, round(share, 3), int(excess * 1000)) for k, (n, share, excess) in measured.items()} == {
        "6.1": (22, validate.LATE_WAKES["6.1"][0], validate.LATE_WAKES["6.1"][1]),
        "6.12": (10, validate.LATE_WAKES["6.12"][0], validate.LATE_WAKES["6.12"][1])}
    h4 = [r for r in runs if "tracehst-6.1-" in r and "H4-ev_hst_bio" in r]
    assert hsttrace.main(["--late-wakes"] + h4) == 0
    assert capsys.readouterr().out == ("6.1: 1 traced runs with tag sleepers; the median run has 3.2% of its wakes "
                                       "3 us or more late, by a median 3 us\n")
