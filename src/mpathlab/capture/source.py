"""Where a capture reads from: a root directory (``/`` on the host itself, or a fixture tree) or the dump
that the shipped shell script (capture.sh) wrote on a host without Python.

Both answer the same questions with host paths ("/sys/block/sda/stat"): a file's text, a directory's
entries, a link's target, a command's output, and the counters at the start and the end of the window
(``counters``). ``None`` means "could not be read"; the collector says so in the topology file.
"""
from __future__ import annotations

import os
import subprocess
import time
from typing import Dict, List, Optional, Tuple

from ..inputs import InputFileError, binary_problem, decode_text

DUMP_MAGIC = "@@ mpathlab-capture-dump 1"
DUMP_KINDS = ("file", "missing", "dir", "link", "cmd", "rc", "snap", "sample", "seconds", "end")


class Source:
    """The interface the collector reads through."""

    name = ""
    live = False          # True when time passes between the two counter snapshots (collector sleeps)

    def read(self, path: str) -> Optional[str]:
        raise NotImplementedError

    def listdir(self, path: str) -> Optional[List[str]]:
        raise NotImplementedError

    def readlink(self, path: str) -> Optional[str]:
        raise NotImplementedError

    def command(self, argv: List[str]) -> Optional[Tuple[int, str]]:
        """(exit status, output) of a command run on the host, or None when it was not run."""
        raise NotImplementedError

    def counters(self, k: int, paths: List[str]) -> Tuple[Optional[float], Dict[str, Optional[str]]]:
        """Snapshot ``k`` (0 = start, 1 = end of the window): (uptime in s, {path: text})."""
        raise NotImplementedError

    def window(self) -> Optional[float]:
        """The window the source's counters span, when the source fixes it (a dump)."""
        return None

    def samples(self) -> List[Tuple[float, Dict[str, Tuple[int, int]]]]:
        """Requests in flight in each device's driver (``inflight``), sampled during the window: a
        dump's; a live source is sampled by the collector itself."""
        return []


class RootSource(Source):
    """A directory laid out as a host's root. Commands (dmsetup) run only when the root is "/": a
    fixture tree or another root's /sys is not what dmsetup on this host would answer."""

    def __init__(self, root: str = "/"):
        self.root = os.path.abspath(root)
        self.name = root
        self.live = self.root == "/"

    def _p(self, path: str) -> str:
        return os.path.join(self.root, path.lstrip("/"))

    def read(self, path: str) -> Optional[str]:
        try:
            with open(self._p(path), "rb") as f:
                data = f.read(1 << 20)
        except OSError:
            return None
        return data.decode("utf-8", "replace")

    def read_gzip(self, path: str) -> Optional[str]:
        """A gzip-compressed file's text (/proc/config.gz)."""
        import gzip
        try:
            with gzip.open(self._p(path), "rb") as f:
                return f.read(1 << 22).decode("utf-8", "replace")
        except (OSError, EOFError):
            return None

    def listdir(self, path: str) -> Optional[List[str]]:
        try:
            return sorted(os.listdir(self._p(path)))
        except OSError:
            return None

    def readlink(self, path: str) -> Optional[str]:
        try:
            return os.readlink(self._p(path))
        except OSError:
            return None

    def command(self, argv: List[str]) -> Optional[Tuple[int, str]]:
        if not self.live:
            return None
        try:
            p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=30)
        except (OSError, subprocess.SubprocessError):
            return 127, ""
        return p.returncode, p.stdout.decode("utf-8", "replace")

    def counters(self, k: int, paths: List[str]) -> Tuple[Optional[float], Dict[str, Optional[str]]]:
        up = self.read("/proc/uptime")
        t: Optional[float] = None
        if up and up.split():
            try:
                t = float(up.split()[0])
            except ValueError:
                t = None
        if t is None and self.live:
            t = time.monotonic()
        return t, {p: self.read(p) for p in paths}


class DumpSource(Source):
    """What capture.sh printed: ``@@ KIND ARGS`` headers, each followed by its content lines, every
    content line prefixed with ``|``."""

    def __init__(self, text: str, name: str):
        self.name = name
        self.files: Dict[str, str] = {}
        self.missing: set = set()
        self.dirs: Dict[str, List[str]] = {}
        self.links: Dict[str, str] = {}
        self.commands: Dict[str, Tuple[int, str]] = {}
        self.snaps: Dict[int, Tuple[float, Dict[str, str], set]] = {}
        self.seconds: Optional[float] = None
        self.inflight_samples: List[Tuple[float, Dict[str, Tuple[int, int]]]] = []
        self.complete = False
        self._parse(text)

    def _parse(self, text: str) -> None:
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        if not lines or lines[0].rstrip("\r") != DUMP_MAGIC:
            raise InputFileError("%s:1: not a capture dump (the first line must be %r; write one with "
                                 "`mpathlab capture --print-script > capture.sh; sh capture.sh 5 > host.dump`)"
                                 % (self.name, DUMP_MAGIC))
        # the open section: (kind, argument, its content lines, the header's line number)
        open_kind, open_arg, cur, open_no = "", "", None, 0
        snap: Optional[int] = None
        for no, raw in enumerate(lines[1:], start=2):
            line = raw.rstrip("\r")
            if line.startswith("|"):
                if cur is None:
                    raise InputFileError("%s:%d: a content line (|...) outside a file, dir or cmd section"
                                         % (self.name, no))
                cur.append(line[1:])
                continue
            if not line.startswith("@@ "):
                raise InputFileError("%s:%d: expected a '@@ KIND ...' header or a '|' content line, got %s"
                                     % (self.name, no, _show(line)))
            kind, _, arg = line[3:].partition(" ")
            if kind not in DUMP_KINDS:
                raise InputFileError("%s:%d: unknown section kind %s (known: %s)"
                                     % (self.name, no, _show(kind), ", ".join(DUMP_KINDS)))
            if self.complete:
                raise InputFileError("%s:%d: '@@ %s' after '@@ end'" % (self.name, no, kind))
            if kind != "end" and not arg:
                raise InputFileError("%s:%d: '@@ %s' needs an argument" % (self.name, no, kind))
            if open_kind == "file":
                text_ = "\n".join(cur) + ("\n" if cur else "")
                (self.files if snap is None else self.snaps[snap][1])[open_arg] = text_
            elif open_kind == "sample":
                self._sample(open_arg, cur, open_no)
            elif open_kind == "cmd" and kind != "rc":
                raise InputFileError("%s:%d: '@@ cmd %s' has no '@@ rc N' line after its output"
                                     % (self.name, open_no, open_arg))
            if kind == "rc":
                if open_kind != "cmd":
                    raise InputFileError("%s:%d: '@@ rc' without a '@@ cmd' before it" % (self.name, no))
                if not arg.isdigit() or int(arg) > 255:
                    raise InputFileError("%s:%d: '@@ rc' must be an exit status 0-255, got %s"
                                         % (self.name, no, _show(arg)))
                self.commands[open_arg] = (int(arg), "\n".join(cur) + ("\n" if cur else ""))
            open_kind, open_arg, cur, open_no = kind, arg, None, no
            if kind in ("file", "dir", "cmd", "sample"):
                cur = []
                if kind == "dir":
                    self.dirs[arg] = cur
            elif kind == "missing":
                (self.snaps[snap][2] if snap is not None else self.missing).add(arg)
            elif kind == "link":
                path, _, target = arg.partition(" ")
                self.links[path] = target
            elif kind == "snap":
                k, _, up = arg.partition(" ")
                if k != str(len(self.snaps)) or len(self.snaps) >= 2:
                    raise InputFileError("%s:%d: '@@ snap' must be 0, then 1, got %s" % (self.name, no, _show(k)))
                snap = int(k)
                self.snaps[snap] = (_number(up, self.name, no, "uptime"), {}, set())
            elif kind == "seconds":
                self.seconds = _number(arg, self.name, no, "seconds")
            elif kind == "end":
                self.complete = True
        if open_kind == "file":
            (self.files if snap is None else self.snaps[snap][1])[open_arg] = "\n".join(cur) + ("\n" if cur else "")
        elif open_kind == "sample":
            self._sample(open_arg, cur, open_no)
        elif open_kind == "cmd":
            raise InputFileError("%s:%d: '@@ cmd %s' has no '@@ rc N' line after its output"
                                 % (self.name, open_no, open_arg))

    def _sample(self, arg: str, lines: List[str], no: int) -> None:
        t = _number(arg, self.name, no, "sample uptime")
        counts = {}
        for i, line in enumerate(lines, 1):
            parts = line.split()
            if len(parts) != 3 or not parts[1].isdigit() or not parts[2].isdigit():
                raise InputFileError("%s:%d: a sample line is '|<device> <reads> <writes>', got %s"
                                     % (self.name, no + i, _show(line)))
            counts[parts[0]] = (int(parts[1]), int(parts[2]))
        self.inflight_samples.append((t, counts))

    def samples(self) -> List[Tuple[float, Dict[str, Tuple[int, int]]]]:
        return list(self.inflight_samples)

    def read(self, path: str) -> Optional[str]:
        if path in self.files:
            return self.files[path]
        if 0 in self.snaps and path in self.snaps[0][1]:
            return self.snaps[0][1][path]
        return None

    def listdir(self, path: str) -> Optional[List[str]]:
        d = self.dirs.get(path)
        return None if d is None else sorted(d)

    def readlink(self, path: str) -> Optional[str]:
        return self.links.get(path)

    def command(self, argv: List[str]) -> Optional[Tuple[int, str]]:
        return self.commands.get(" ".join(argv))

    def counters(self, k: int, paths: List[str]) -> Tuple[Optional[float], Dict[str, Optional[str]]]:
        if k not in self.snaps:
            return None, {p: None for p in paths}
        t, files, _ = self.snaps[k]
        return t, {p: files.get(p) for p in paths}

    def window(self) -> Optional[float]:
        if 0 in self.snaps and 1 in self.snaps:
            return self.snaps[1][0] - self.snaps[0][0]
        return None


def _show(s: str, limit: int = 40) -> str:
    return repr(s) if len(s) <= limit else "%r... (%d characters)" % (s[:limit], len(s))


def _number(s: str, name: str, no: int, what: str) -> float:
    try:
        v = float(s)
    except ValueError:
        v = float("nan")
    if not 0 <= v < 1e12:      # also false for NaN
        raise InputFileError("%s:%d: %s must be a non-negative number, got %s" % (name, no, what, _show(s)))
    return v


def read_dump(path: str) -> DumpSource:
    """A dump file as a source; a problem is one line naming the file and line (InputFileError)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise InputFileError("%s: cannot read: %s" % (path, e.strerror or e)) from None
    bad = binary_problem(data, "capture dump")
    if bad:
        raise InputFileError("%s:%d: %s" % (path, bad[0], bad[1]))
    return DumpSource(decode_text(data, path, "capture dump"), path)
