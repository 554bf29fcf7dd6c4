"""The one declared boundary between the Python engine and the compiled core (sim/boundary.py): the
C header is generated from it, the C source takes its constants and tuple layouts only from that
header, the core's selector ops table names the declared selectors, and both engines number events
alike. Each check fails on drift."""
import re
from pathlib import Path

from mpathlab.selectors.base import PathSelector
from mpathlab.sim import boundary, fast, loop

SRC = Path(boundary.__file__).resolve().parent.parent
C_SOURCE = (SRC / "_fastcore.c").read_text()


def test_the_header_is_generated_from_the_declaration():
    assert boundary.header_path().read_text() == boundary.header(), (
        "src/mpathlab/_fastcore_boundary.h is stale: run python -m mpathlab.sim.boundary --write")


def test_a_changed_declaration_changes_the_header(monkeypatch):
    # the check above can fail: moving a field or renumbering an event changes the generated text
    before = boundary.header()
    fields = boundary.RECORDS["SelPathState"][1]
    monkeypatch.setitem(boundary.RECORDS, "SelPathState", ("sel_path_state", fields[1:] + fields[:1]))
    assert boundary.header() != before
    monkeypatch.undo()
    monkeypatch.setattr(boundary, "EV_KICK", 99)
    assert "EV_KICK = 99" in boundary.header()


def test_the_core_defines_no_constant_of_the_boundary_itself():
    assert '#include "_fastcore_boundary.h"' in C_SOURCE
    declared = set(re.findall(r"\b([A-Z][A-Z0-9_]+) = \d+", boundary.header()))
    declared |= set(re.findall(r"#define ([A-Z][A-Z0-9_]+) ", boundary.header()))
    redefined = [n for n in declared
                 if re.search(r"(#define %s\b|\b%s\s*=\s*\d)" % (n, n), C_SOURCE)]
    assert redefined == []


def test_no_tuple_layout_is_written_by_hand_in_the_core():
    # every record's format appears in the C source only through its generated macro
    for record, (cname, fields) in boundary.RECORDS.items():
        fmt = boundary._fields_format(fields)
        assert '"%s"' % fmt not in C_SOURCE and '"(%s)"' % fmt not in C_SOURCE, record


def test_both_engines_number_events_alike():
    for name in ("EV_DONE", "EV_ARRIVE", "EV_SUBMIT", "EV_RETRY", "EV_KICK", "EV_FAULT", "EV_MESSAGE",
                 "EV_ERRDONE", "EV_ACTIVATED", "EV_NOPATH_TIMEOUT", "EV_CALL"):
        assert getattr(loop, name) == getattr(boundary, name)
    kinds = [v for k, v in vars(boundary).items() if k.startswith("EV_")]
    assert len(kinds) == len(set(kinds))


def test_the_ops_table_has_one_entry_per_declared_selector():
    table = C_SOURCE[C_SOURCE.index("static const selector_ops_t selector_ops[] = {"):]
    table = table[:table.index("};")]
    entries = dict(re.findall(r"\[(SEL_[A-Z]+)\] = \{\"([a-z-]+)\"", table))
    declared = {k: v for k, v in vars(boundary).items() if k.startswith("SEL_")}
    assert set(entries) == set(declared)
    by_code = {code: name for name, code in boundary.SELECTOR_KINDS.items()}
    for sel, name in entries.items():
        assert by_code.get(declared[sel], "python") == name
    # the core dispatches selectors only through the table: no switch on a selector kind is left
    assert not re.search(r"switch \([^)]*(pg_sel|->sel)\b", C_SOURCE)
    assert not re.search(r"case SEL_", C_SOURCE)


def test_each_kernel_selector_class_runs_in_its_c_implementation_and_a_subclass_does_not():
    from mpathlab import selectors
    for name in ("round-robin", "queue-length", "service-time", "historical-service-time"):
        cls = selectors.get_exact(name)
        ps = cls(("2", "64") if name == "historical-service-time" else ())
        assert fast.core_kind(ps) == boundary.SELECTOR_KINDS[name]

        class Changed(cls):          # a prototype that overrides select_path: its Python must run
            pass
        assert fast.core_kind(Changed(("2", "64") if name == "historical-service-time" else ())) == boundary.SEL_PY
    assert fast.core_kind(PathSelector()) == boundary.SEL_PY


def test_one_historical_service_time_in_c():
    # the core's selector and HSTCore share the comparison, the update and the valid-list move
    for fn in ("hst_compare_vals", "hst_updated", "hst_select_pos", "hst_end", "valid_take"):
        assert len(re.findall(r"^static [^(]*\b%s\(" % fn, C_SOURCE, re.M)) == 1, fn
    hstcore = C_SOURCE[C_SOURCE.index("HSTCore: a selector type"):]
    assert "hst_select_pos(" in hstcore and "hst_end(" in hstcore
    assert "hst_updated(" not in hstcore and "hst_compare_vals(" not in hstcore

