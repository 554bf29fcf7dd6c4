"""The CLI's log output: kernel messages on stderr as the kernel logs them.

The selectors and the target log what their kernel counterparts print with
DMWARN/DMINFO (``repeat_count > 1 is deprecated, using 1 instead``, ``Failing
path 8:16.``).  The library leaves them to the application's logging; the
command line shows them with the kernel's prefixes (``device-mapper:
multipath round-robin: ...``).

Levels (``-q``, default, ``-v``, ``-vv``):

- quiet: errors only;
- default: warnings, and what the selectors and the target's constructor
  print while a table is loaded, as often as the kernel prints them for one
  load (once per path for a per-path warning); a run constructs the same
  table more than once where the kernel would load it once, so a line
  already shown that many times is not shown again;
- ``-v``: also the target's runtime lines (failovers, reinstatements);
- ``-vv``: debug.
"""
from __future__ import annotations

import logging
import sys
from typing import Dict, List, Optional, Set

ROOT = "mpathlab"
_SELECTOR_PREFIX = "mpathlab.selectors."
_LOAD = "mpathlab.target.load"      # the target constructor's warnings
WIDTH = 100   # mpathlab's own terminal lines fit 100 columns (the kernel's lines are quoted as printed)


def wrap(text: str, indent: str = "    ") -> List[str]:
    """Lines of at most WIDTH columns, broken at spaces; continuation lines indented."""
    import textwrap
    return textwrap.wrap(text, WIDTH, subsequent_indent=indent, break_long_words=True,
                         break_on_hyphens=False) or [""]


def kernel_prefix(logger_name: str) -> str:
    """The dmesg prefix of a logger: its module's DM_MSG_PREFIX."""
    if logger_name.startswith(_SELECTOR_PREFIX):
        return "device-mapper: multipath %s: " % logger_name[len(_SELECTOR_PREFIX):]
    if logger_name == "mpathlab.target" or logger_name.startswith("mpathlab.target."):
        return "device-mapper: multipath: "
    return "mpathlab: "


class KernelFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return kernel_prefix(record.name) + record.getMessage()


class _LevelFilter(logging.Filter):
    def __init__(self, verbosity: int):
        super().__init__()
        self.verbosity = verbosity
        self.seen: Set[tuple] = set()
        self.this_load: Dict[str, int] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        v = self.verbosity
        if record.name == _LOAD and record.levelno == logging.DEBUG:
            self.this_load = {}          # a new table load starts
            return v >= 2
        if v < 0:
            return record.levelno >= logging.ERROR
        if v >= 2:
            return True
        if record.levelno >= logging.WARNING:
            return True
        # load lines first, so -v shows them as often as the default does (not once per rebuild of the table)
        if record.levelno >= logging.INFO and (record.name.startswith(_SELECTOR_PREFIX) or record.name == _LOAD):
            line = record.name + record.getMessage()
            n = self.this_load.get(line, 0)
            self.this_load[line] = n + 1
            if (line, n) in self.seen:
                return False
            self.seen.add((line, n))
            return True
        return v >= 1 and record.levelno >= logging.INFO


_handler: Optional[logging.Handler] = None


def setup(verbosity: int = 0, stream=None) -> logging.Handler:
    """Route mpathlab's loggers to ``stream`` (stderr) at ``verbosity``
    (-1 quiet, 0 default, 1 -v, 2 -vv).  Calling it again replaces the handler."""
    global _handler
    logger = logging.getLogger(ROOT)
    if _handler is not None:
        logger.removeHandler(_handler)
    h = logging.StreamHandler(stream or sys.stderr)
    h.setFormatter(KernelFormatter())
    h.addFilter(_LevelFilter(verbosity))
    logger.addHandler(h)
    logger.setLevel(logging.DEBUG)      # the filter decides; DEBUG also carries the table-load marks
    _handler = h
    return h


def teardown() -> None:
    """Remove the handler :func:`setup` installed (the CLI does, when a command ends)."""
    global _handler
    if _handler is not None:
        logger = logging.getLogger(ROOT)
        logger.removeHandler(_handler)
        logger.setLevel(logging.NOTSET)
        _handler = None
