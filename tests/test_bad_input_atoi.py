"""inputs.c_atoi is glibc's atoi, checked against the C library itself (ctypes), for the values a
weightedpath prio_args or any atoi-read field may hold: 2^64, thousands of digits, signs, Unicode digits."""
import ctypes
import ctypes.util

import pytest
from hypothesis import given, settings, strategies as st

from mpathlab.inputs import c_atoi

libc = ctypes.CDLL(ctypes.util.find_library("c"))
libc.atoi.argtypes = [ctypes.c_char_p]
libc.atoi.restype = ctypes.c_int


@pytest.mark.parametrize("text,value", [
    ("18446744073709551616", -1), ("9223372036854775807", -1), ("9223372036854775808", -1),
    ("-9223372036854775809", 0), ("4294967296", 0), ("4294967297", 1), ("2147483648", -2147483648),
    ("  +17xyz", 17), ("\u0663", 0), ("1_0", 1), ("", 0), ("-", 0), ("9" * 5000, -1),
])
def test_c_atoi_examples(text, value):
    assert c_atoi(text) == value
    assert libc.atoi(text.encode()) == value


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.integers(-2 ** 70, 2 ** 70).map(str),
                 st.text(alphabet=" \t+-0123456789x\u0661", max_size=30)))
def test_c_atoi_matches_glibc(text):
    assert c_atoi(text) == libc.atoi(text.encode())
