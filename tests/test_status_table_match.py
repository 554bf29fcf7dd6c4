"""`mpathlab status` names a status line's fields from the table given for
it; a table of another shape (other groups, paths or selector) is refused,
not used to name the fields wrongly.  Every real table/status pair the
kernels printed (tests/data/kernel-captures) still matches."""
import json
import os

import pytest

from mpathlab import cli
from mpathlab.target.status_parse import StatusParseError, explain_dmsetup

CAPTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "kernel-captures")
ST2 = "0 2097152 multipath 2 0 0 0 1 1 A 0 2 2 8:16 A 0 0 1 8:32 A 0 0 1"     # service-time, 2 paths


@pytest.mark.parametrize("table,needle", [
    ("0 2097152 multipath 0 0 1 1 queue-length 0 3 1 252:0 1 252:1 1 252:2 1",
     "group 1 has 2 path(s) in the status, 3 in the table given for it"),
    ("0 2097152 multipath 0 0 1 1 queue-length 0 2 1 252:0 1 252:1 1",
     "group 1: queue-length prints 0 group and 1 per-path status field(s), the status has 0 and 2"),
    ("0 2097152 multipath 0 0 2 1 service-time 0 1 2 252:0 1 1 service-time 0 1 2 252:1 1 1",
     "the status has 1 priority group(s), the table given for it 2"),
])
def test_a_table_of_another_shape_is_refused(capsys, table, needle):
    assert cli.main(["status", "--table", table, ST2]) == 3
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1
    with pytest.raises(StatusParseError):           # the table may also come in the input
        explain_dmsetup("mpatha: %s\nmpatha: %s" % (table, ST2))


def test_the_matching_table_names_the_fields(capsys):
    t = "0 2097152 multipath 0 0 1 1 service-time 0 2 2 252:0 1 1 252:1 1 1"
    assert cli.main(["status", "--table", t, ST2]) == 0
    out = capsys.readouterr().out
    assert "selector service-time <- in use" in out and "in_flight_size=0 relative_throughput=1" in out


@pytest.mark.parametrize("version", ["linux-6.1", "linux-6.12"])
def test_every_captured_table_and_status_pair_matches(version):
    with open(os.path.join(CAPTURES, version, "cases.json")) as f:
        cases = json.load(f)["cases"]
    lines, n = [], 0
    for c in cases:
        pairs = [(c.get("dmsetup_table"), c.get("dmsetup_status"))]
        for s in c.get("steps") or []:
            pairs += [(s.get("dmsetup_table"), s.get(k)) for k in ("dmsetup_status", "dmsetup_status_during_io")]
        for i, (t, st) in enumerate(pairs):
            if t and st:
                name = "mp%s_%d" % (c["id"], i)
                lines += ["%s: %s" % (name, t.strip()), "%s: %s" % (name, st.strip())]
                n += 1
    assert n > 60
    out = explain_dmsetup("\n".join(lines))
    # (a table of no groups, "0 0 0 0", is also a valid status: counted by device name)
    assert len({l.split(" ")[0] for l in out if l.endswith(": multipath status")}) == n
