"""The array-scale example (examples/hosts-1000x64.toml) is what scripts/hosts_topology.py writes, and loads."""
import importlib.util
import os

from mpathlab.multihost import load_multihost

ROOT = os.path.join(os.path.dirname(__file__), "..")


def _script():
    spec = importlib.util.spec_from_file_location("hosts_topology", os.path.join(ROOT, "scripts", "hosts_topology.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_disk_names_follow_sd():
    # sd_format_disk_name: a..z, then aa..az, ba.., zz, then aaa (disk 702)
    name = _script().disk_name
    assert [name(k) for k in (0, 25, 26, 27, 51, 52, 63, 701, 702)] == [
        "sda", "sdz", "sdaa", "sdab", "sdaz", "sdba", "sdbl", "sdzz", "sdaaa"]


def test_the_shipped_example_is_the_scripts_output_and_loads():
    with open(os.path.join(ROOT, "examples", "hosts-1000x64.toml")) as f:
        assert f.read() == _script().topology(1000, 64)
    topo, cfg = load_multihost(os.path.join(ROOT, "examples", "hosts-1000x64.toml"))
    assert cfg.count == 1000 and cfg.window_ns == 10 * 10 ** 6
    assert len(topo.paths) == 64 and len({p.devt for p in topo.paths}) == 64
    # 16 disks per sd major (8, then 65..): sdq is the first disk of major 65, sdbl the last of major 67
    devt = {p.name: p.devt for p in topo.paths}
    assert devt["sda"] == (8, 0) and devt["sdp"] == (8, 240) and devt["sdq"] == (65, 0) and devt["sdbl"] == (67, 240)
    fast = [p.name for p in topo.paths if p.service.mean_ns == 500_000]
    assert fast == [p.name for p in topo.paths[:16]]
