"""Path topology for the multipath-tools layer: what multipathd discovers about each path.

A topology file for ``--conf`` describes paths, not a table::

    [multipath]                 # simulation settings, as in a table topology (no table)
    seed = 1
    [map]                       # defaults for every path
    wwid = "3600a098038303634722b4d59646c4436"
    size = "1G"                 # map size (bytes with units, or sectors = N)
    vendor = "PURE"
    product = "FlashArray"
    [paths.sda]
    devt = "8:0"
    hcil = "1:0:0:1"            # host:channel:target:lun
    serial = "..."              # VPD 0x80 (default: the wwid)
    node_name = "0x2000..."     # target node name (group_by_node_name)
    alua = "active/optimized"   # ALUA state; absent: the port has no ALUA (TPGS) support
    tpg = 1                     # target port group id
    pref = false                # the port group's preferred bit
    service = "100us"           # device model, as in a table topology
    faults = [ {at = "2s", action = "fail"}, {at = "9s", action = "reinstate"} ]
    alua_changes = [ {at = "20s", state = "standby"} ]

Paths are grouped into maps by wwid.  ``fail`` takes the link down (I/O fails, the
checker sees it) and ``reinstate`` brings it back; multipathd's checker then reinstates
the path in the map, so there is no ``reinstate_after`` here.  ``slow`` faults are
the simulator's own.
"""
from __future__ import annotations

import os
from typing import Dict, List, Optional, Tuple

from ..inputs import load_toml
from ..kernel import parse_devt
from ..sim.devices import PathModel
from ..units import UnitError, parse_duration_ns
from ..topology import TopologyError, parse_faults, path_model

ALUA_STATES = ("active/optimized", "active/non-optimized", "lba-dependent", "standby", "unavailable",
               "offline", "transitioning")
_ALUA_ALIASES = {"optimized": "active/optimized", "non-optimized": "active/non-optimized",
                 "ao": "active/optimized", "ano": "active/non-optimized"}
# states in which the port refuses I/O: scsi_dh_alua's prep_fn fails the request (a path
# error to dm-mpath).  A transitioning port gets the I/O and the SCSI layer retries it
# until the transition ends; that delay is not modelled (the I/O is served).
ALUA_NO_IO = ("standby", "unavailable", "offline")


class Path:
    """One path as multipathd knows it."""

    def __init__(self, name: str, devt: Tuple[int, int], *, wwid: str, hcil: str = "", serial: str = "",
                 vendor: str = "", product: str = "", revision: str = "", node_name: str = "",
                 alua_state: Optional[str] = None, tpg: Optional[int] = None, alua_pref: bool = False,
                 wwn: str = "", model: Optional[PathModel] = None, properties: Optional[List[str]] = None,
                 protocol: str = "scsi:fcp"):
        self.name = name
        self.devt = tuple(devt)
        self.wwid = wwid
        self.hcil = hcil or "#:#:#:#"
        self.serial = serial
        self.vendor = vendor
        self.product = product
        self.revision = revision
        self.node_name = node_name
        self.alua_state = alua_state
        self.tpg = tpg if tpg is not None else -1      # GROUP_ID_UNDEF
        self.alua_pref = alua_pref
        self.wwn = wwn
        self.model = model
        # udev properties the blacklist's property filter sees (a SCSI disk with a WWN has these)
        self.properties = list(properties) if properties is not None else ["ID_SERIAL", "ID_WWN",
                                                                           "SCSI_IDENT_LUN_NAA_REG"]
        self.protocol = protocol       # as multipath names it: scsi:fcp, scsi:iscsi, nvme:tcp, ...
        self.link_down = False       # the transport is down (I/O and the checker fail)
        self.owner: Optional[bool] = None      # the controller owns the LUN (None: from the ALUA state)
        self.preferred: Optional[bool] = None  # the LUN's preferred path (None: as owner)

    @property
    def tpgs(self) -> bool:
        """The port supports ALUA (TPGS != none)."""
        return self.alua_state is not None

    @property
    def dev_t(self) -> str:
        return "%d:%d" % self.devt

    def __repr__(self):
        return "Path(%s)" % self.name


class PathTopology:
    def __init__(self, paths: List[Path], *, size_sectors: int, sim: dict, link_faults: Dict[str, list],
                 alua_changes: Dict[str, list], source: str = "", mtools: Optional[str] = None,
                 wwids: Optional[List[str]] = None):
        self.paths = paths
        self.size_sectors = size_sectors
        self.sim = sim                 # Simulation keyword arguments
        self.link_faults = link_faults  # path name -> [(at_ns, "fail"|"reinstate")]
        self.alua_changes = alua_changes  # path name -> [(at_ns, state, pref or None)]
        self.source = source
        self.mtools = mtools           # multipath-tools version ([multipath] mtools)
        self.wwids = wwids             # the wwids file's WWIDs ([multipath] wwids); None: no file


def norm_alua(v, where: str) -> str:
    s = str(v).strip().lower()
    s = _ALUA_ALIASES.get(s, s)
    if s not in ALUA_STATES:
        raise TopologyError("%s: ALUA state must be one of %s, not %r" % (where, ", ".join(ALUA_STATES), v))
    return s


_SIZE_UNITS = {"": 1, "b": 1, "k": 1024, "kib": 1024, "m": 1024 ** 2, "mib": 1024 ** 2, "g": 1024 ** 3,
               "gib": 1024 ** 3, "t": 1024 ** 4, "tib": 1024 ** 4}


def parse_size_sectors(v, where: str) -> int:
    import re
    if isinstance(v, bool) or not isinstance(v, (int, str)):
        raise TopologyError("%s: size must be like \"1G\" or \"512M\"" % where)
    m = re.fullmatch(r"\s*(\d+)\s*([a-zA-Z]*)\s*", str(v))
    if not m or m.group(2).lower() not in _SIZE_UNITS:
        raise TopologyError("%s: size must be like \"1G\" or \"512M\", not %r" % (where, v))
    b = int(m.group(1)) * _SIZE_UNITS[m.group(2).lower()]
    if b < 512 or b % 512:
        raise TopologyError("%s: size must be a positive multiple of 512 bytes" % where)
    return b // 512


_PATH_KEYS = {"devt", "service", "parallelism", "delay", "per_kib", "faults", "fail_latency", "hcil", "serial",
              "wwid", "vendor", "product", "revision", "node_name", "alua", "tpg", "pref", "wwn", "alua_changes",
              "properties", "protocol", "owner", "preferred"}
_MAP_KEYS = {"wwid", "size", "vendor", "product", "revision", "serial", "node_name"}
_SIM_KEYS = {"hz", "rq_stats", "uptime", "seed", "activation", "queue_if_no_path_timeout_secs", "nr_cpus", "mtools",
             "wwids"}


def _strlist(v, where):
    if v is None:
        return None
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise TopologyError("%s must be a list of strings" % where)
    return v


def _str(v, where):
    if not isinstance(v, (str, int)) or isinstance(v, bool):
        raise TopologyError("%s must be a string" % where)
    return str(v)


def path_topology_from_dict(doc: dict, source: str = "topology", base_dir: str = ".") -> PathTopology:
    try:
        return _from_dict(doc, source, base_dir)
    except (UnitError, TopologyError) as e:
        # every error names the file once: the shared [paths.NAME] builder does not know it
        msg = str(e)
        if isinstance(e, TopologyError) and msg.startswith(source + ":"):
            raise
        raise TopologyError(msg if msg.startswith(source + ":") else "%s: %s" % (source, msg)) from None


def _from_dict(doc: dict, src: str, base_dir: str) -> PathTopology:
    unknown = set(doc) - {"multipath", "map", "paths", "description"}
    if unknown:
        raise TopologyError("%s: unknown section(s) %s (a --conf topology has [multipath], [map] and "
                            "[paths.NAME])" % (src, ", ".join(sorted(unknown))))
    mp = doc.get("multipath", {})
    if not isinstance(mp, dict):
        raise TopologyError("%s: [multipath] must be a table" % src)
    if "table" in mp:
        raise TopologyError("%s: with --conf the table is built from multipath.conf; remove [multipath] table"
                            % src)
    bad = set(mp) - _SIM_KEYS
    if bad:
        raise TopologyError("%s: [multipath] has unknown key(s) %s" % (src, ", ".join(sorted(bad))))
    sim = _sim_kwargs(mp, src)
    mapd = doc.get("map", {})
    if not isinstance(mapd, dict):
        raise TopologyError("%s: [map] must be a table" % src)
    bad = set(mapd) - _MAP_KEYS
    if bad:
        raise TopologyError("%s: [map] has unknown key(s) %s" % (src, ", ".join(sorted(bad))))
    size = parse_size_sectors(mapd.get("size", "1G"), "%s: [map] size" % src)
    pdoc = doc.get("paths")
    if not isinstance(pdoc, dict) or not pdoc:
        raise TopologyError("%s: needs [paths.NAME] sections, one per path" % src)
    paths: List[Path] = []
    link_faults: Dict[str, list] = {}
    alua_changes: Dict[str, list] = {}
    seen = {}
    for i, (name, p) in enumerate(pdoc.items()):
        where = "%s: paths.%s" % (src, name)
        if not isinstance(p, dict):
            raise TopologyError("%s must be a table" % where)
        bad = set(p) - _PATH_KEYS
        if bad:
            raise TopologyError("%s has unknown key(s) %s" % (where, ", ".join(sorted(bad))))
        devt = parse_devt(str(p.get("devt", "8:%d" % (16 * i))))
        if devt is None:
            raise TopologyError("%s.devt must be \"major:minor\"" % where)
        if devt in seen:
            raise TopologyError("%s: %s and %s have the same devt" % (src, seen[devt], name))
        seen[devt] = name
        faults = parse_faults(p.get("faults", []), where)
        slow, link = [], []
        for f in faults:
            if f.action == "slow":
                slow.append(f)
            elif f.action in ("fail", "reinstate"):
                if f.reinstate_after_ns:
                    raise TopologyError("%s: with --conf multipathd's checker reinstates the path; drop "
                                        "reinstate_after" % where)
                link.append((f.at_ns, f.action))
            else:
                raise TopologyError("%s: fault action must be fail, reinstate or slow, not %r" % (where, f.action))
        # the device keeps only the slow faults; fail/reinstate are the link's, seen by multipathd
        model = path_model(name, devt, p, src, "paths.%s" % name, base_dir, faults=slow)
        wwid = _str(p.get("wwid", mapd.get("wwid", "3600140500000000000000000000000001")), where + ".wwid")
        if not wwid:
            raise TopologyError("%s.wwid must not be empty" % where)
        alua = None
        if "alua" in p:
            alua = norm_alua(p["alua"], where + ".alua")
        tpg = p.get("tpg")
        if tpg is not None and (not isinstance(tpg, int) or isinstance(tpg, bool) or not 0 <= tpg <= 65535):
            raise TopologyError("%s.tpg must be a whole number 0..65535" % where)
        pref = p.get("pref", False)
        if not isinstance(pref, bool):
            raise TopologyError("%s.pref must be true or false" % where)
        hcil = _str(p.get("hcil", "%d:0:0:0" % i), where + ".hcil")
        parts = hcil.split(":")
        if len(parts) != 4 or not all(x.isdigit() for x in parts):
            raise TopologyError("%s.hcil must be \"host:channel:target:lun\", not %r" % (where, hcil))
        path = Path(name, devt, wwid=wwid, hcil=hcil,
                    serial=_str(p.get("serial", mapd.get("serial", wwid)), where + ".serial"),
                    vendor=_str(p.get("vendor", mapd.get("vendor", "")), where + ".vendor"),
                    product=_str(p.get("product", mapd.get("product", "")), where + ".product"),
                    revision=_str(p.get("revision", mapd.get("revision", "")), where + ".revision"),
                    node_name=_str(p.get("node_name", mapd.get("node_name", "")), where + ".node_name"),
                    alua_state=alua, tpg=tpg, alua_pref=pref, wwn=_str(p.get("wwn", ""), where + ".wwn"),
                    model=model, properties=_strlist(p.get("properties"), where + ".properties"),
                    protocol=_str(p.get("protocol", "scsi:fcp"), where + ".protocol"))
        for k in ("owner", "preferred"):
            if k in p and not isinstance(p[k], bool):
                raise TopologyError("%s.%s must be true or false" % (where, k))
        # the controller owns the LUN / this is its preferred path (rdac, emc, hds, ontap prioritizers)
        path.owner = p.get("owner")
        path.preferred = p.get("preferred")
        changes = []
        items = p.get("alua_changes", [])
        if not isinstance(items, list):
            raise TopologyError("%s.alua_changes must be a list of {at=..., state=...}" % where)
        for k, c in enumerate(items):
            w = "%s.alua_changes[%d]" % (where, k)
            if not isinstance(c, dict) or "at" not in c or "state" not in c or set(c) - {"at", "state", "pref"}:
                raise TopologyError("%s must be {at = \"5s\", state = \"standby\"} (pref optional)" % w)
            if alua is None:
                raise TopologyError("%s: the path has no ALUA state (set alua = ...)" % w)
            cp = c.get("pref")
            if cp is not None and not isinstance(cp, bool):
                raise TopologyError("%s.pref must be true or false" % w)
            changes.append((parse_duration_ns(c["at"], w + ".at"), norm_alua(c["state"], w + ".state"), cp))
        paths.append(path)
        link_faults[name] = sorted(link, key=lambda x: x[0])
        alua_changes[name] = sorted(changes, key=lambda x: x[0])
    mtools = mp.get("mtools")
    if mtools is not None and not isinstance(mtools, str):
        raise TopologyError("%s: [multipath] mtools must be a version string like \"0.9.4\"" % src)
    wwids = mp.get("wwids")
    if wwids is not None and (not isinstance(wwids, list) or not all(isinstance(w, str) for w in wwids)):
        raise TopologyError("%s: [multipath] wwids must be a list of WWID strings (the wwids file)" % src)
    return PathTopology(paths, size_sectors=size, sim=sim, link_faults=link_faults, alua_changes=alua_changes,
                        source=src, mtools=mtools, wwids=wwids)


def _sim_kwargs(mp: dict, src: str) -> dict:
    from ..timing import VALID_HZ
    out = {}
    hz = mp.get("hz", 250)
    if hz not in VALID_HZ:
        raise TopologyError("%s: hz must be one of %s" % (src, ", ".join(map(str, VALID_HZ))))
    out["hz"] = hz
    if "rq_stats" in mp:
        if not isinstance(mp["rq_stats"], bool):
            raise TopologyError("%s: [multipath] rq_stats must be true or false" % src)
        out["rq_stats"] = mp["rq_stats"]
    seed = mp.get("seed", 1)
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise TopologyError("%s: [multipath] seed must be an integer" % src)
    out["seed"] = seed
    out["uptime_ns"] = parse_duration_ns(mp.get("uptime", "1h"), "uptime")
    out["activation_ns"] = parse_duration_ns(mp.get("activation", 0), "activation")
    qto = mp.get("queue_if_no_path_timeout_secs", 0)
    if not isinstance(qto, int) or isinstance(qto, bool) or qto < 0:
        raise TopologyError("%s: [multipath] queue_if_no_path_timeout_secs must be a whole number >= 0" % src)
    out["queue_if_no_path_timeout_secs"] = qto
    ncpu = mp.get("nr_cpus")
    if ncpu is not None:
        if not isinstance(ncpu, int) or isinstance(ncpu, bool) or not 1 <= ncpu <= 4096:
            raise TopologyError("%s: [multipath] nr_cpus must be a whole number from 1 to 4096" % src)
        out["nr_cpus"] = ncpu
    return out


def load_path_topology(path: str) -> PathTopology:
    # read as every topology file is (inputs.load_toml): binary, non-UTF-8 and TOML errors as FILE:LINE
    doc, text = load_toml(path, "topology")
    try:
        return path_topology_from_dict(doc, os.path.basename(path), os.path.dirname(os.path.abspath(path)))
    except TopologyError as e:
        # the line of the option the message names, as load_topology does for dm topologies
        from ..inputs import locate_topology_error, with_line
        raise TopologyError(with_line(str(e), path, locate_topology_error(text, str(e)))) from None
