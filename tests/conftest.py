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


def require_module(module: str, why: str):
    """The imported Python module a test needs (a test dependency: pip install -e ".[test]").

    As require(): missing on a developer's machine, the test skips; missing
    under CI (CI=true), it fails.
    """
    import importlib

    import pytest

    try:
        return importlib.import_module(module)
    except ImportError as e:
        if os.environ.get("CI") == "true":
            pytest.fail("Python module %s is missing under CI: %s (%s)" % (module, why, e))
        pytest.skip("Python module %s is not installed (%s); pip install -e \".[test]\" installs it" % (module, why))
