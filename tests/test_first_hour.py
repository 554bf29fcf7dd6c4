"""What a new user meets first: dmsetup's own output accepted as printed, output that explains itself,
terminal output that fits, the example configuration as documented."""
import contextlib
import io
import os

from mpathlab.cli import main
from mpathlab.target import parse

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
JOB = os.path.join(ROOT, "examples", "randwrite.fio")
LINE = "0 2097152 multipath 0 0 1 1 round-robin 0 2 0 8:16 8:32"


def _run(argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(argv)
    return rc, out.getvalue(), err.getvalue()


def test_dmsetup_table_name_prefix_is_accepted_where_a_table_line_is():
    # `dmsetup table` prints "mpatha: 0 2097152 multipath ..." (the status command already took it)
    assert _run(["table", "mpatha: " + LINE]) == _run(["table", LINE])
    assert parse("mpatha: " + LINE).table() == parse(LINE).table()
    rc, out, err = _run(["run", "--no-progress", "--table", "mpatha: " + LINE, JOB])
    assert rc == 0, err
    assert "8:16" in out and "8:32" in out
    # a major:minor followed by ':' is not a name; the kernel's error for it stays
    rc, _, err = _run(["table", "8:16: " + LINE])
    assert rc == 3 and "invalid number of feature args" in err
