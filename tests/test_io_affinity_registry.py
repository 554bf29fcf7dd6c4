import pytest

from mpathlab import selectors
from mpathlab.selectors import CpuTopology, PathSelector, RegistryError, SelectorError
from mpathlab.selectors import registry


def ioa(nr=8, nodes=None, cpu=0):
    cur = {"cpu": cpu}
    ps = selectors.create("io-affinity", [], cpu=lambda: cur["cpu"], topology=CpuTopology(nr, nodes))
    return ps, cur


def test_ioa_maps_cpu_to_path_and_fallbacks():
    ps, cur = ioa(8, nodes=[0, 0, 0, 0, 1, 1, 1, 1])
    ps.add_path("a", ["03"])      # cpus 0,1
    ps.add_path("b", ["30"])      # cpus 4,5
    assert ps.select_path() == "a"
    cur["cpu"] = 5
    assert ps.select_path() == "b"
    cur["cpu"] = 6                # unmapped, node 1 -> first mapped cpu of node 1 (4) -> b
    assert ps.select_path() == "b"
    assert ps.map_misses == 1
    ps.fail_path("b")             # cpu 5 mapped but failed: no miss, node 1 has no other -> any: a
    cur["cpu"] = 5
    assert ps.select_path() == "a"
    assert ps.map_misses == 1
    ps.fail_path("a")
    assert ps.select_path() is None
    ps.reinstate_path("b")
    assert ps.select_path() == "b"


def test_ioa_status_and_overlap():
    ps, cur = ioa(8)
    ps.add_path("a", ["0f"])
    ps.add_path("b", ["ff"])      # 0-3 taken: only 4-7 mapped, but the mask prints whole
    assert ps.status("a", "table") == "0f "
    assert ps.status("b", "table") == "ff "
    cur["cpu"] = 2
    assert ps.select_path() == "a"
    assert ps.status(None, "table") == "0 "
    assert ps.status("a", "info") == "0 "


def test_ioa_errors():
    ps, cur = ioa(8)
    with pytest.raises(SelectorError) as ei:
        ps.add_path("a", [])
    assert ei.value.message == "io-affinity ps: invalid number of arguments"
    with pytest.raises(SelectorError) as ei:
        ps.add_path("a", ["zz"])
    assert ei.value.message == "io-affinity ps: invalid cpumask"
    with pytest.raises(SelectorError) as ei:
        ps.add_path("a", ["100"])   # bit 8 with nr_cpu_ids 8
    assert ei.value.message == "io-affinity ps: invalid cpumask"
    ps.add_path("a", ["1"])
    with pytest.raises(SelectorError) as ei:
        ps.add_path("b", ["1"])     # cpu 0 already mapped
    assert ei.value.message == "io-affinity ps: No new/valid CPU mapping found"
    with pytest.raises(SelectorError) as ei:
        ps.add_path("c", [""])
    assert ei.value.message == "io-affinity ps: No new/valid CPU mapping found"


def test_ioa_table_width_follows_nr_cpu_ids():
    ps, cur = ioa(40)
    ps.add_path("a", ["3"])
    assert ps.status("a", "table") == "00,00000003 "


# ---------------------------------------------------------------- registry
@pytest.mark.parametrize("alias", ["round-robin", "dm-round-robin", "dm-ps-round-robin"])
def test_lookup_aliases(alias):
    assert selectors.lookup(alias) is selectors.RoundRobin


def test_table_loader_uses_exact_names_only():
    assert selectors.get_exact("dm-round-robin") is None
    assert selectors.get_exact("Round-Robin") is None   # strcmp, case-sensitive


def test_builtin_names_and_versions():
    assert {"round-robin", "queue-length", "service-time", "historical-service-time",
            "io-affinity"} <= set(selectors.names())


def test_duplicate_registration_refused():
    class Dup(PathSelector):
        name = "round-robin"
    with pytest.raises(RegistryError) as ei:
        selectors.register(Dup)
    assert ei.value.errno == 17


def test_unknown_selector():
    with pytest.raises(selectors.UnknownSelectorError):
        selectors.create("no-such-selector")


def test_entry_point_plugin_is_autoloaded(monkeypatch):
    class Fixed(PathSelector):
        """A third-party selector: always the first path."""
        name = "first-path"
        table_args = 0
        info_args = 0

        def __init__(self, args=(), **env):
            super().__init__(args, **env)
            self._valid, self._failed, self._info = [], [], {}

        def add_path(self, path, args=()):
            self._track(path, type("PI", (), {"path": path})())

        def select_path(self, nr_bytes=0):
            return self._valid[0].path if self._valid else None

        def status(self, path, kind="info"):
            return "0 " if path is None else ""

    class EP:
        name = "first-path"

        def load(self):
            return Fixed

    import importlib.metadata as md
    monkeypatch.setattr(md, "entry_points", lambda group=None: [EP()] if group == registry.ENTRY_POINT_GROUP else [])
    registry.reload_entry_points()
    try:
        assert selectors.get_exact("first-path") is Fixed
        assert selectors.lookup("dm-first-path") is Fixed
        from mpathlab.target import construct
        m = construct("0 0 1 1 first-path 0 2 0 8:16 8:32")
        assert m.table() == "0 0 1 1 first-path 0 2 0 8:16 8:32 "
    finally:
        selectors.unregister("first-path")
        registry.reload_entry_points()
