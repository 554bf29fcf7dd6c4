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


def require(path_or_command: str, why: str) -> str:
    """The path of a tool or file a test needs (installed by scripts/test-deps.sh).

    Missing on a developer's machine: the test skips.  Missing under CI
    (CI=true): the test fails, so CI cannot pass by skipping what it must run.
    """
    import shutil

    import pytest

    found = path_or_command if os.path.exists(path_or_command) else shutil.which(path_or_command)
    if found:
        return found
    if os.environ.get("CI") == "true":
        pytest.fail("%s is missing under CI: %s" % (path_or_command, why))
    pytest.skip("%s is not installed (%s); scripts/test-deps.sh installs it as root" % (path_or_command, why))
