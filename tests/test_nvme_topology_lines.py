"""[nvme] errors of a topology file name the option's line, as [paths.*] and
[multipath] errors do (issue 10: "one line naming the file, line (TOML too)
and option"); they named only the file."""
import os

import pytest

from mpathlab.cli import main

EX = os.path.join(os.path.dirname(__file__), "..", "examples")


def _lines():
    with open(os.path.join(EX, "nvme-vs-dm.toml")) as f:
        return f.read()


@pytest.mark.parametrize("old,new,needle,line_of", [
    ("[nvme]\n", "[nvme]\nbogus = 1\n", "[nvme] has unknown key(s) bogus", "bogus = 1"),
    ('iopolicy = "numa"', 'iopolicy = "nope"', "[nvme] iopolicy 'nope' is not one of", 'iopolicy = "nope"'),
    ('cross_node_cost = "5us"', "cross_node_cost = 5", "[nvme] cross_node_cost: 5 has no unit",
     "cross_node_cost = 5"),
    ('path = "sdb"', 'path = "sdz"', "[nvme] controllers.nvme1.path 'sdz' names no [paths.*] model",
     'path = "sdz"'),
    ('path = "sdb"', 'path = "sdb"\nfoo = 2', "[nvme] controllers.nvme1 has unknown key(s) foo", "foo = 2"),
    ("numa_node = 1", "numa_node = 9", "[nvme] controllers.nvme1.numa_node 9", "numa_node = 9"),
])
def test_nvme_errors_name_their_line(tmp_path, capsys, old, new, needle, line_of):
    text = _lines()
    assert old in text
    text = text.replace(old, new, 1)
    line = next(i for i, l in enumerate(text.splitlines(), 1) if l.startswith(line_of))
    topo = tmp_path / "n.toml"
    topo.write_text(text)
    job = tmp_path / "j.fio"
    job.write_text("[j]\nrw=read\nbs=4k\nnumber_ios=10\n")
    assert main(["run", str(topo), str(job)]) == 3
    err = capsys.readouterr().err
    assert "n.toml:%d: %s" % (line, needle) in err and err.count("\n") == 1, err
