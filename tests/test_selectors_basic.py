"""round-robin, queue-length and service-time: arguments, selection order, status."""
import pytest

from mpathlab import selectors
from mpathlab.kernel import U64
from mpathlab.selectors import SelectorError
from mpathlab.selectors.service_time import st_compare_load


def mk(name, paths, args=None):
    ps = selectors.create(name, [], clock=lambda: 0)
    for p in paths:
        ps.add_path(p, (args or {}).get(p, []))
    return ps


# ---------------------------------------------------------------- arguments
@pytest.mark.parametrize("name,prefix,maxargs", [
    ("round-robin", "round-robin ps", 1), ("queue-length", "queue-length ps", 1),
    ("service-time", "service-time ps", 2), ("historical-service-time", "historical-service-time ps", 1),
])
def test_argument_errors(name, prefix, maxargs):
    ps = selectors.create(name, [], clock=lambda: 0)
    with pytest.raises(SelectorError) as ei:
        ps.add_path("x", ["1"] * (maxargs + 1))
    assert ei.value.message == prefix + ": incorrect number of arguments"
    with pytest.raises(SelectorError) as ei:
        ps.add_path("x", ["-1"])
    assert ei.value.message == prefix + ": invalid repeat count"


@pytest.mark.parametrize("bad", ["101", "x", "-5", "4294967396"])  # 4294967396 wraps to 100: valid!
def test_st_relative_throughput_range(bad):
    ps = selectors.create("service-time", [])
    if bad == "4294967396":
        ps.add_path("x", ["1", bad])
        assert ps.status("x", "table") == "1 100 "
        return
    with pytest.raises(SelectorError) as ei:
        ps.add_path("x", ["1", bad])
    assert ei.value.message == "service-time ps: invalid relative_throughput value"


@pytest.mark.parametrize("name", ["round-robin", "queue-length", "service-time"])
def test_repeat_count_clamped_to_one_zero_kept(name, caplog):
    caplog.set_level("INFO")
    ps = mk(name, ["a", "b", "c"], {"a": ["100"], "b": ["0"]})
    table = [ps.status(p, "table").split()[0] for p in "abc"]
    assert table == ["1", "0", "1"]
    assert "repeat_count > 1 is deprecated, using 1 instead" in caplog.text


def test_rr_create_ignores_any_args():
    ps = selectors.create("round-robin", ["whatever", "1", "2"])
    assert ps.status(None, "table") == "0 "


# ---------------------------------------------------------------- round-robin
def test_rr_rotation_and_reinstate_to_head():
    ps = mk("round-robin", ["a", "b", "c"])
    assert [ps.select_path() for _ in range(4)] == ["a", "b", "c", "a"]
    ps.fail_path("b")
    assert [ps.select_path() for _ in range(3)] == ["c", "a", "c"]
    # list is now [a, c]; reinstated b goes to the head and is chosen next
    ps.reinstate_path("b")
    assert ps.valid_order() == ["b", "a", "c"]
    assert ps.select_path() == "b"
    ps.fail_path("a"); ps.fail_path("b"); ps.fail_path("c")
    assert ps.select_path() is None


def test_rr_status():
    ps = mk("round-robin", ["a"])
    assert ps.status(None, "info") == "0 "
    assert ps.status("a", "info") == ""
    assert ps.status("a", "table") == "1 "
    assert ps.status("a", "ima") == ""


# ---------------------------------------------------------------- queue-length
def test_ql_early_exit_and_tie_rotation():
    ps = mk("queue-length", ["a", "b", "c"])
    # all idle: first in list wins, moves to tail
    assert ps.select_path() == "a"
    ps.start_io("a", 4096)
    assert ps.valid_order() == ["b", "c", "a"]
    assert ps.select_path() == "b"; ps.start_io("b", 4096)
    assert ps.select_path() == "c"; ps.start_io("c", 4096)
    # all at 1: the first of the minimum in list order ([a, b, c])
    assert ps.select_path() == "a"; ps.start_io("a", 4096)
    # qlen a=2 b=1 c=1, order [b, c, a] -> b
    assert ps.select_path() == "b"
    ps.end_io("c", 4096, 0)
    # c idle: early exit at the first idle path even though it is not first
    assert ps.select_path() == "c"
    assert ps.status("a", "info") == "2 "
    assert ps.status("a", "table") == "1 "


def test_ql_reinstate_goes_to_tail():
    ps = mk("queue-length", ["a", "b", "c"])
    ps.fail_path("a")
    ps.reinstate_path("a")
    assert ps.valid_order() == ["b", "c", "a"]


def test_ql_unbalanced_end_io_goes_negative():
    ps = mk("queue-length", ["a"])
    ps.end_io("a", 0, 0)
    assert ps.status("a", "info") == "-1 "


# ---------------------------------------------------------------- service-time
def test_st_prefers_least_bytes_in_flight():
    ps = mk("service-time", ["a", "b"])
    assert ps.select_path(4096) == "a"; ps.start_io("a", 8192)
    assert ps.select_path(4096) == "b"; ps.start_io("b", 4096)
    # a=8192 b=4096, order [a, b] -> b
    assert ps.select_path(4096) == "b"
    assert ps.status("a", "info") == "8192 1 "
    assert ps.status("a", "table") == "1 1 "


def test_st_relative_throughput_weighs_estimate():
    ps = mk("service-time", ["slow", "fast"], {"slow": ["1", "1"], "fast": ["1", "4"]})
    # both empty and rt differ: rt2 - rt1 decides -> fast (higher throughput)
    assert ps.select_path(4096) == "fast"
    ps.start_io("fast", 4096 * 3)
    # slow: (0+4096)*4 = 16384 vs fast: (12288+4096)*1 = 16384 -> equal -> rt decides -> fast
    assert ps.select_path(4096) == "fast"
    ps.start_io("fast", 4096)
    # fast now 16384: (16384+4096)=20480 > 16384 -> slow
    assert ps.select_path(4096) == "slow"


def test_st_zero_throughput_path_only_as_last_resort():
    ps = mk("service-time", ["z", "p"], {"z": ["1", "0"], "p": ["1", "1"]})
    ps.start_io("p", 1 << 20)
    assert ps.select_path(4096) == "p"
    ps.fail_path("p")
    assert ps.select_path(4096) == "z"


def test_st_in_flight_is_32bit_signed_and_wraps():
    ps = mk("service-time", ["a", "b"])
    ps.start_io("a", 2 ** 31)
    assert ps.status("a", "info") == "-2147483648 1 "


def test_st_compare_difference_overflows_int():
    ps = mk("service-time", ["a", "b"])
    ps.end_io("a", 4096, 0)                 # unbalanced: a = -4096
    ps.start_io("b", 2 ** 31 - 4096)        # b = INT_MAX - 4095
    # compare(b, a) = (int)(u64)(sz_b - sz_a) = (int)2^31 = INT_MIN < 0:
    # b, with 2 GiB in flight, beats a.
    assert ps.select_path(4096) == "b"


class _P:
    def __init__(self, sz, rt):
        self.in_flight_size, self.relative_throughput = sz, rt


def test_st_compare_int_truncation_flips_sign():
    a, b = _P(2 ** 25, 1), _P(0, 64)
    # st1 = 2^25 * 64 = 2^31, st2 = 0: b is really better, but (int)2^31 < 0.
    assert st_compare_load(a, b, 0) == -(2 ** 31)
    # one step less and the sign is right
    assert st_compare_load(_P(2 ** 25 - 1, 1), b, 0) == (2 ** 25 - 1) * 64


def test_st_compare_equal_sizes_use_throughput():
    assert st_compare_load(_P(100, 1), _P(100, 2), 4096) == 1      # rt2 - rt1
    assert st_compare_load(_P(0, 0), _P(999, 3), 4096) == 3        # zero rt loses
    assert st_compare_load(_P(5, 7), _P(0, 7), 0) == 5             # equal rt: sz1 - sz2


def test_st_compare_shift_guard():
    big = U64 >> 7  # ST_MAX_INFLIGHT_SIZE
    # incoming pushes both sizes over the limit: both are shifted right by 7
    sz1 = ((1 + big) & U64) >> 7
    sz2 = ((0 + big) & U64) >> 7
    st1, st2 = sz1 * 1, sz2 * 2
    diff = (st1 - st2) & U64 & 0xFFFFFFFF
    expect = diff - 2 ** 32 if diff >> 31 else diff
    assert st_compare_load(_P(1, 2), _P(0, 1), big) == expect


def test_st_reinstate_to_tail_and_fail_all():
    ps = mk("service-time", ["a", "b"])
    ps.fail_path("a")
    assert ps.select_path(0) == "b"
    ps.fail_path("b")
    assert ps.select_path(0) is None
    ps.reinstate_path("a")
    assert ps.valid_order() == ["a"]
