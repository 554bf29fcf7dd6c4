import os
import sys

# Tests run against the source tree even when the package is not installed.
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))


class FakeClock:
    """A settable ktime for selector traces."""

    def __init__(self, t=0):
        self.t = t

    def __call__(self):
        return self.t
