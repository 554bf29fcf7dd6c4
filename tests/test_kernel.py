import pytest

from mpathlab.kernel import (EINVAL, EOVERFLOW, BitmapParseError, bitmap_parse, bitmap_string,
                             parse_devt, parse_u32, s32, s64, split_args, time_after64, time_before64)
from mpathlab.timing import TimeBase, initial_jiffies, jiffies_to_nsecs


@pytest.mark.parametrize("tok,val", [
    ("0", 0), ("42", 42), ("007", 7), (" 5", 5), ("\t9", 9),
    ("4294967295", 4294967295), ("4294967296", 0), ("4294967297", 1),
    ("18446744073709551617", 1),  # wraps mod 2^64 first, then to u32
])
def test_parse_u32_valid(tok, val):
    assert parse_u32(tok) == val


@pytest.mark.parametrize("tok", ["", " ", "-1", "+1", "0x10", "1a", "1 ", "1.0", "١", None])
def test_parse_u32_invalid(tok):
    assert parse_u32(tok) is None


def test_split_args_whitespace_and_escapes():
    assert split_args("  a  b\tc\n") == ["a", "b", "c"]
    assert split_args("a\\ b c") == ["a b", "c"]
    assert split_args("a\\\\b") == ["a\\b"]
    assert split_args("trail\\") == ["trail\\"]
    # NBSP is kernel whitespace (Latin-1 ctype table)
    assert split_args("a\xa0b") == ["a", "b"]
    assert split_args("") == []


def test_parse_devt():
    assert parse_devt("8:16") == (8, 16)
    assert parse_devt("253:0") == (253, 0)
    assert parse_devt("4096:0") is None          # major overflows 12 bits
    assert parse_devt("8:1048576") is None       # minor overflows 20 bits
    assert parse_devt("8:16x") is None
    assert parse_devt("sda") is None


def test_sign_helpers():
    assert s64(2 ** 64 - 1) == -1
    assert s64(2 ** 63) == -(2 ** 63)
    assert s32(2 ** 31) == -(2 ** 31)
    assert s32(2 ** 32 + 5) == 5
    assert time_after64(10, 5) and not time_after64(5, 10)
    # wrap-safe: 1 is "after" 2^64-1
    assert time_after64(1, 2 ** 64 - 1)
    assert time_before64(2 ** 64 - 1, 1)


@pytest.mark.parametrize("text,nbits,mask", [
    ("0f", 8, 0x0F), ("f0", 8, 0xF0), ("", 8, 0), ("1", 4, 1),
    ("1,00000000", 64, 1 << 32), ("ff,,1", 64, (0xFF << 32) | 1), ("3\n", 8, 3),
    ("1 2", 64, (1 << 32) | 2),   # whitespace separates chunks like a comma
])
def test_bitmap_parse(text, nbits, mask):
    assert bitmap_parse(text, nbits) == mask


@pytest.mark.parametrize("text,nbits,err", [
    ("g", 8, EINVAL), ("0x1", 8, EINVAL), ("1ff", 8, EOVERFLOW), ("123456789", 64, EOVERFLOW),
    ("1,0", 8, EOVERFLOW), ("10", 4, EOVERFLOW),
])
def test_bitmap_parse_errors(text, nbits, err):
    with pytest.raises(BitmapParseError) as ei:
        bitmap_parse(text, nbits)
    assert ei.value.errno == err


@pytest.mark.parametrize("nbits,out", [(4, "3"), (8, "03"), (16, "0003"), (32, "00000003"),
                                       (40, "00,00000003"), (64, "00000000,00000003")])
def test_bitmap_string_examples(nbits, out):
    assert bitmap_string(0b11, nbits) == out


def test_jiffies_base_is_not_ktime():
    # HZ=250: INITIAL_JIFFIES = 2^32 - 75000; jiffies_to_usecs truncates to u32,
    # so the derived ns are (uptime - 300 s) mod 2^32 us.
    assert initial_jiffies(250) == 2 ** 32 - 75000
    t = [3600 * 10 ** 9]
    tb = TimeBase(lambda: t[0], hz=250)
    j = tb.jiffies()
    assert j == 2 ** 32 - 75000 + 3600 * 250
    assert tb.jiffies_to_nsecs(j) == (3600 - 300) * 10 ** 9
    # 1/HZ granularity: 3.9 ms later is the same jiffy
    t[0] += 3_900_000
    assert tb.jiffies() == j
    t[0] += 200_000
    assert tb.jiffies() == j + 1
    assert jiffies_to_nsecs(1, 1000) == 1_000_000


def test_timebase_rejects_bad_hz():
    with pytest.raises(ValueError, match="HZ must be one of"):
        TimeBase(hz=123)
