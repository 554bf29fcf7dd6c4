"""Helpers of the tests/test_bad_input_*.py files: run the CLI in-process and read its one error line."""
import io
import os
import sys

from mpathlab import cli

ROOT = os.path.join(os.path.dirname(__file__), "..")
EXAMPLES = os.path.join(ROOT, "examples")
ASYM = os.path.join(EXAMPLES, "asymmetric.toml")
PREFIX = "mpathlab: error: "


def one_error(capsys, argv, code=3, stdin=None):
    """The problem of a refused input: exit ``code``, one line on stderr, no traceback, no raw control bytes."""
    if stdin is not None:
        old = sys.stdin
        sys.stdin = io.TextIOWrapper(io.BytesIO(stdin))
    try:
        rc = cli.main(argv)
    finally:
        if stdin is not None:
            sys.stdin = old
    out = capsys.readouterr()
    lines = out.err.strip().splitlines()
    assert rc == code, (argv[:3], rc, out.err[:500])
    assert len(lines) == 1 and lines[0].startswith(PREFIX), lines[:3]
    assert "Traceback" not in out.err and "internal error" not in out.err
    assert not any(c in out.err for c in "\x00\x1b\x07"), "a control character echoed to the terminal"
    return lines[0][len(PREFIX):]


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_bytes(text if isinstance(text, bytes) else text.encode())
    return str(p)


JOB = "[j]\nrw=randwrite\nbs=4k\nnumber_ios=50\n"
TOPO = ('[multipath]\ntable = "0 8 multipath 0 0 1 1 round-robin 0 2 1 sdb 1 sdc 1"\n'
        '[paths.sdb]\ndevt = "8:16"\nservice = "100us"\n[paths.sdc]\ndevt = "8:32"\nservice = "100us"\n')
