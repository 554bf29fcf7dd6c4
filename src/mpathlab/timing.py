"""Kernel time bases: ktime (ns since boot) and jiffies (HZ ticks).

dm core stamps a bio-based I/O with ``jiffies`` when it enters the device;
``jiffies_to_nsecs`` of that stamp is what a selector without the
high-resolution flag sees as the start time.  That value has 1/HZ
granularity, wraps every 2^32 us, and is *not on the ktime base*: jiffies
start at INITIAL_JIFFIES (five minutes before the 32-bit wrap).  Both effects
are kept because HST's decisions depend on them.
"""
from __future__ import annotations

import time
from typing import Callable

from .kernel import U32

NSEC_PER_SEC = 1_000_000_000
USEC_PER_SEC = 1_000_000
VALID_HZ = (100, 250, 300, 1000)


def initial_jiffies(hz: int) -> int:
    """INITIAL_JIFFIES on a 64-bit kernel: (unsigned long)(unsigned int)(-300*HZ)."""
    return (-300 * hz) & U32


def jiffies_to_usecs(j: int, hz: int) -> int:
    """jiffies_to_usecs(): the result is an unsigned int (32-bit truncation)."""
    if USEC_PER_SEC % hz == 0:
        return ((USEC_PER_SEC // hz) * j) & U32
    # HZ=300: the kernel uses a precomputed multiply/shift; exact division
    # is the same for the values that matter here.
    return ((j * USEC_PER_SEC) // hz) & U32


def jiffies_to_nsecs(j: int, hz: int) -> int:
    return jiffies_to_usecs(j, hz) * 1000


class TimeBase:
    """ktime and jiffies as the multipath core sees them.

    ``ktime_ns`` is a callable giving ns since boot (a simulator's clock, or
    CLOCK_MONOTONIC).  Jiffies are derived from it: a tick every 1/HZ s,
    starting from INITIAL_JIFFIES at boot.  ``coarse_ns`` may supply a
    separate coarse clock (CLOCK_MONOTONIC_COARSE in live mode).
    """

    def __init__(self, ktime_ns: Callable[[], int] = time.monotonic_ns, hz: int = 250,
                 coarse_ns: Callable[[], int] = None):
        if hz not in VALID_HZ:
            raise ValueError("HZ must be one of %s, not %r" % (", ".join(map(str, VALID_HZ)), hz))
        self.ktime_ns = ktime_ns
        self.hz = hz
        self._coarse = coarse_ns or ktime_ns
        self._initial = initial_jiffies(hz)

    def jiffies(self) -> int:
        return self._initial + (self._coarse() * self.hz) // NSEC_PER_SEC

    def jiffies_to_nsecs(self, j: int) -> int:
        return jiffies_to_nsecs(j, self.hz)
