"""historical-service-time: fixed point, weights, traces of the kernel's decisions."""
import pytest

from conftest import FakeClock
from mpathlab import selectors
from mpathlab.kernel import U64
from mpathlab.selectors import SelectorError
from mpathlab.selectors.historical_service_time import (HST_FIXED_MAX, fixed_ema, fixed_power,
                                                        weights_table)

KERNEL_WEIGHTS_972 = [
    972, 923, 876, 832, 790, 750, 712, 676, 642, 609, 578, 549, 522, 495, 470, 446, 423, 402, 382, 362,
    344, 327, 310, 294, 280, 265, 252, 239, 227, 216, 205, 194, 184, 175, 166, 158, 150, 142, 135, 128, 122,
    115, 110, 104, 99, 94, 89, 84, 80, 76, 72, 69, 65, 62, 59, 56, 53, 50, 48, 45, 43, 41, 39, 0]


def hst(args=(), paths=("a", "b"), t=0):
    clk = FakeClock(t)
    ps = selectors.create("historical-service-time", list(args), clock=clk)
    for p in paths:
        ps.add_path(p, [])
    return ps, clk


def test_weights_table_default_base():
    assert weights_table(972) == KERNEL_WEIGHTS_972


def test_weights_other_bases():
    assert weights_table(512)[:11] == [512, 256, 128, 64, 32, 16, 8, 4, 2, 1, 1]
    assert weights_table(0) == [0] * 64
    for base in (1, 500, 1000, 1023):
        assert weights_table(base)[0] == base and weights_table(base)[63] == 0


def test_fixed_power_rounds_half_up_each_step():
    # 972^2 / 1024 = 922.64 -> 923 ; 972^3: 923*972/1024 = 876.1 -> 876
    assert fixed_power(972, 10, 2) == 923
    assert fixed_power(972, 10, 3) == 876
    assert fixed_power(972, 10, 0) == 1024
    assert fixed_power(1024, 10, 50) == 1024


def test_fixed_ema_and_worked_example():
    # fresh path, one 1 ms sample: bucket 0, weight 972
    assert fixed_ema(1024, 1_000_000 * 1024, 972) == (1024 * 972 + 1_000_000 * 1024 * 52 + 512) >> 10
    ps, clk = hst(paths=("a",))
    ps.start_io("a", 4096)
    clk.t = 1_000_000
    ps.end_io("a", 4096, 0)
    assert ps.path_state("a")[0] == 52_000_972
    # 20 ms sample: 20e6 >> 24 = 1 -> weight 923
    ps.start_io("a", 4096)
    clk.t = 21_000_000
    ps.end_io("a", 4096, 1_000_000)
    assert ps.path_state("a")[0] == 2_066_871_970
    # stale_after = last_finish + valid_count(1) * (hst >> 10)
    assert ps.path_state("a")[2] == 21_000_000 + (2_066_871_970 >> 10)


def test_sample_over_63_buckets_replaces_history():
    ps, clk = hst(paths=("a",))
    ps.start_io("a", 0)
    clk.t = 63 << 24   # bucket 63: weight 0
    ps.end_io("a", 0, 0)
    assert ps.path_state("a")[0] == (63 << 24) * 1024


def test_sample_times_1024_wraps_before_the_clamp():
    ps, clk = hst(paths=("a",))
    st = (1 << 54) + 5            # st*1024 = 2^64 + 5120 -> wraps to 5120
    clk.t = st
    ps.start_io("a", 0)
    ps.end_io("a", 0, 0)
    # bucket 63 (weight 0): hst = (5120*1024 + 512) >> 10 = 5120
    assert ps.path_state("a")[0] == 5120
    ps2, clk2 = hst(paths=("a",))
    clk2.t = (1 << 54) - 1        # no wrap: clamped to HST_FIXED_MAX
    ps2.start_io("a", 0)
    ps2.end_io("a", 0, 0)
    assert ps2.path_state("a")[0] == (HST_FIXED_MAX * 1024 + 512) % 2 ** 64 >> 10


def test_pretend_serial_uses_last_finish():
    ps, clk = hst(paths=("a",))
    for _ in range(2):
        ps.start_io("a", 0)
    clk.t = 1000
    ps.end_io("a", 0, 0)          # st = 1000
    h1 = ps.path_state("a")[0]
    clk.t = 1500
    ps.end_io("a", 0, 0)          # started at 0, but a completion at 1000 came after: st = 500
    assert ps.path_state("a")[0] == fixed_ema(h1, 500 * 1024, 972)
    assert ps.path_state("a")[3] == 1500


def test_start_after_now_gives_zero_sample():
    ps, clk = hst(paths=("a",))
    clk.t = 1000
    ps.start_io("a", 0)
    ps.end_io("a", 0, 5000)       # time_before64(now, start): st = 0
    assert ps.path_state("a")[0] == fixed_ema(1024, 0, 972)


def test_never_used_path_is_probed_when_idle():
    ps, clk = hst()
    clk.t = 1000
    assert ps.select_path() == "a"          # both fresh: tie keeps the first
    ps.start_io("a", 0)
    clk.t = 1_001_000
    ps.end_io("a", 0, 1000)                 # hst_a = 52,000,972
    assert ps.path_state("a")[2] == 1_001_000 + 2 * (52_000_972 >> 10)
    clk.t = 1_002_000
    # list [b, a]; a is idle and fresh, b idle with stale_after 0 -> the most
    # stale idle path wins: b, although a's estimate is known and small.
    assert ps.select_path() == "b"


def test_both_idle_most_stale_wins_regardless_of_now():
    ps, clk = hst()
    for p, (s, e) in {"a": (0, 100_000), "b": (0, 50_000)}.items():
        ps.start_io(p, 0)
        clk.t = e
        ps.end_io(p, 0, s)
    # stale_a = 100000 + 2*(hst_a>>10), stale_b = 50000 + 2*(hst_b>>10): b is staler
    assert ps.path_state("b")[2] < ps.path_state("a")[2]
    clk.t = 60_000
    assert ps.select_path() == "b"


def test_busy_fresh_path_vs_idle_fresh_path_uses_estimates():
    ps, clk = hst()
    clk.t = now = 5 * 10 ** 6
    ia, ib = ps._info["a"], ps._info["b"]
    ia.hst, ia.outstanding, ia.stale_after = 10_000 * 1024, 1, now + 10 ** 6       # fast, busy
    ib.hst, ib.outstanding, ib.stale_after = 1_000_000 * 1024, 0, now + 10 ** 6    # slow, idle
    # an idle *fresh* path does not take the probing branch: (1+1)*10us < 1ms -> a
    assert ps.compare(ib, ia, now) == 1
    assert ps.compare(ia, ib, now) == -1
    assert ps.select_path() == "a"
    assert ps.valid_order() == ["b", "a"]
    # once b is stale (and idle) it is probed even though its estimate is worse
    clk.t = now + 2 * 10 ** 6
    ia.stale_after = clk.t + 10 ** 6
    assert ps.select_path() == "b"


def test_stale_busy_winner_limited_to_equal_usage():
    ps, clk = hst()
    for p in ("a", "b"):
        ps.start_io(p, 0)
        clk.t += 1000
        ps.end_io(p, 0, clk.t - 1000)
    # make a clearly faster, then keep 2 in flight on a and 1 on b
    ps.start_io("a", 0); ps.start_io("a", 0); ps.start_io("b", 0)
    # long after: everything is stale; a's estimate (3*hst_a) vs b's (2*hst_b)
    clk.t += 10 ** 9
    ha, hb = ps.path_state("a")[0], ps.path_state("b")[0]
    # order is [a, b]; the winner by estimate is stale -> out1 - out2 decides
    # compare(b, a): out_b - out_a = 1 - 2 < 0 -> b
    assert ps.compare(ps._info["b"], ps._info["a"], clk.t) < 0
    assert ps.select_path() == "b"
    assert ha and hb


def test_threshold_multiplier_compares_outstanding_only():
    ps, clk = hst(args=["972", "3"])
    ia, ib = ps._info["a"], ps._info["b"]
    ia.hst, ib.hst = 1000, 2999          # within 3x: "too similar"
    ia.outstanding, ib.outstanding = 2, 1
    ia.stale_after = ib.stale_after = 10 ** 12
    assert ps.compare(ib, ia, 0) < 0     # fewer outstanding wins
    ib.hst = 3001                        # over 3x: estimates decide
    # (1+1)*3001 = 6002 vs (1+2)*1000 = 3000 -> a better
    assert ps.compare(ib, ia, 0) > 0


@pytest.mark.parametrize("thr,h1,h2,over", [
    (0, 5, 5, True), (0, 0, 0, False), (1, 5, 5, False), (1, 5, 6, True), (2, 5, 10, False), (2, 5, 11, True),
])
def test_threshold_semantics(thr, h1, h2, over):
    ps, clk = hst(args=["972", str(thr)])
    ia, ib = ps._info["a"], ps._info["b"]
    ia.hst, ib.hst = h1, h2
    ia.outstanding, ib.outstanding = 1, 3    # not over: out1 - out2 < 0 for a
    ia.stale_after = ib.stale_after = 10 ** 12
    r = ps.compare(ia, ib, 0)
    if not over:
        assert r < 0
    else:
        # over: (1+1)*h1 vs (1+3)*h2 ; with h1 <= h2 a wins too, so check b vs a
        assert ps.compare(ib, ia, 0) == (1 if 4 * h2 > 2 * h1 else -1)


def test_overflow_guard_shifts_at_1024_outstanding():
    ps, clk = hst()
    ia, ib = ps._info["a"], ps._info["b"]
    ia.hst, ib.hst = 2047, 1024
    ia.outstanding, ib.outstanding = 1024, 2048
    ia.stale_after = ib.stale_after = 10 ** 12
    # shifted: 2047>>10 = 1, 1024>>10 = 1 -> (1+1024)*1 < (1+2048)*1 -> a
    assert ps.compare(ib, ia, 0) > 0
    ia.outstanding = 1023
    ib.outstanding = 1023 - 1
    ia.hst, ib.hst = 1025, 2048
    # below the guard: (1+1023)*1025 = 1049600 vs (1+1022)*2048 = 2095104 -> a
    assert ps.compare(ib, ia, 0) > 0


def test_equal_outstanding_compares_hst_only():
    ps, clk = hst()
    ia, ib = ps._info["a"], ps._info["b"]
    ia.hst, ib.hst = 3000, 2000
    ia.outstanding = ib.outstanding = 4
    ia.stale_after = ib.stale_after = 10 ** 12
    assert ps.compare(ib, ia, 0) == -1


def test_create_errors_have_no_kernel_string():
    for args in (["1024"], ["x"], ["1", "2", "3"], ["972", "-1"]):
        with pytest.raises(SelectorError) as ei:
            selectors.create("historical-service-time", args)
        assert ei.value.message is None
        assert "path selector constructor failed" in str(ei.value)
    # no upper bound on threshold_multiplier; values wrap like %u
    ps = selectors.create("historical-service-time", ["0", "4294967296"])
    assert ps.status(None, "table") == "2 0 0 "


def test_status_strings_and_hr_timer_flag():
    ps, clk = hst(args=["900", "7"])
    assert ps.status(None, "info") == "2 900 7 "
    assert ps.status(None, "table") == "2 900 7 "
    assert ps.status("a", "info") == "1024 0 0 "
    assert ps.status("a", "table") == "0 "
    assert ps.status("a", "ima") == ""
    assert type(ps).uses_hr_timer()
    assert not selectors.lookup("service-time").uses_hr_timer()


def test_repeat_count_not_clamped_not_printed():
    ps, clk = hst(paths=())
    ps.add_path("a", ["1000"])
    assert ps.status("a", "table") == "0 "


def test_valid_count_follows_fail_and_reinstate():
    ps, clk = hst(paths=("a", "b", "c"))
    ps.fail_path("b")
    assert ps.valid_count == 2
    ps.start_io("a", 0)
    clk.t = 10_000
    ps.end_io("a", 0, 0)
    assert ps.path_state("a")[2] == 10_000 + 2 * (ps.path_state("a")[0] >> 10)
    ps.reinstate_path("b")
    assert ps.valid_count == 3 and ps.valid_order()[-1] == "b"
    ps.fail_path("a"); ps.fail_path("b"); ps.fail_path("c")
    assert ps.select_path() is None


def test_outstanding_wraps_u64_on_unbalanced_end():
    ps, clk = hst(paths=("a",))
    ps.end_io("a", 0, 0)
    assert ps.path_state("a")[1] == U64


def test_select_rotates_only_the_winner_to_the_tail():
    import random
    rnd = random.Random(7)
    for _ in range(500):
        n = rnd.randint(2, 6)
        ps, clk = hst(args=["972", str(rnd.choice([0, 1, 2, 5]))], paths=[str(i) for i in range(n)])
        clk.t = rnd.randint(0, 10 ** 6)
        for pi in ps._valid:
            pi.hst = rnd.choice([0, 1024, rnd.randint(0, 2 ** 40)])
            pi.outstanding = rnd.choice([0, 0, 1, 2, rnd.randint(0, 3000)])
            pi.stale_after = rnd.choice([0, rnd.randint(0, 2 * 10 ** 6)])
        before = ps.valid_order()
        chosen = ps.select_path()
        assert ps.valid_order() == [p for p in before if p != chosen] + [chosen]
