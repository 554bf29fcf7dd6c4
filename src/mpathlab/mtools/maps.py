"""From paths and multipath.conf to maps: blacklist, property selection, grouping and
the table line, as multipath-tools' coalesce_paths / setup_map / assemble_map do.

Behaviour described from libmultipath (blacklist.c, propsel.c, pgpolicies.c,
switchgroup.c, dmparser.c), in our own words:

- Settings for a map are taken from the first layer that sets them: the ``multipaths``
  entry for its wwid, then ``overrides``, then the matching ``devices`` entries (the
  user's, last first, then the built-in hardware table's), then ``defaults``, then the
  internal default (propsel.c's mp_set_mpe / mp_set_ovr / mp_set_hwe / mp_set_conf /
  mp_set_default order).  Per-path settings (prio, path_checker, detect_*) have no
  ``multipaths`` layer, except prio.
- detect_prio (on by default) gives every ALUA path the sysfs prioritizer; detect_checker
  gives it tur; detect_pgpolicy then makes the map group_by_prio (group_by_tpg with
  detect_pgpolicy_use_tpg) when every path's prioritizer is alua or sysfs.  A map of
  ALUA paths gets hardware handler "1 alua" (the kernel attaches scsi_dh_alua; with the
  default retain_attached_hw_handler it is kept); a map with a non-ALUA path drops it.
- Groups are sorted by (non-marginal first, priority descending, enabled paths
  descending), stably (sort_pathgroups); a group's priority is the integer mean of its
  usable paths' defined priorities (path_group_prio_update); the initial group is the
  best usable group (select_path_group).
- The table is "<features> <hwhandler> <#groups> <initial group>" then per group
  "<selector with args> <#paths> 1" and per path "<major:minor> <repeat>", the repeat
  being rr_min_io_rq, times the path's priority with rr_weight priorities (assemble_map).
  queue_if_no_path is added to the features when no_path_retry is queue or a number.
"""
from __future__ import annotations

import re
from typing import Dict, List, Optional, Tuple

from . import pgpolicies, prioritizers
from .conf import Config, ConfError, Entry
from .hwtable import find_hwe, internal_defaults
from .regex import RegexError, posix_search
from .paths import Path
from .prioritizers import PRIO_UNDEF, PrioEnv

# propsel.c origin strings (what `multipath -v3` logs after each setting)
ORIGIN_DEFAULT = "(setting: multipath internal)"
ORIGIN_HWE = "(setting: storage device configuration)"
ORIGIN_MPE = "(setting: multipath.conf multipaths section)"
ORIGIN_CONF = "(setting: multipath.conf defaults/devices section)"
ORIGIN_OVR = "(setting: multipath.conf overrides section)"
ORIGIN_AUTO = "(setting: storage device autodetected)"

# checker states (checkers.h) as multipath -ll names them
UP, DOWN, GHOST, PENDING, DELAYED = "ready", "faulty", "ghost", "i/o pending", "delayed"
USABLE = (UP, GHOST)

DEFAULT_BLIST_DEVNODE = "!^(sd[a-z]|dasd[a-z]|nvme[0-9])"


class MapPath:
    """A path inside a map, with multipathd's per-path state (struct path)."""

    def __init__(self, path: Path, prio_name: str, prio_args: str, checker: str, origins: Dict[str, str]):
        self.path = path
        self.prio_name = prio_name
        self.prio_args = prio_args
        self.prio = prioritizers.create(prio_name)
        self.checker = checker
        self.origins = origins
        self.priority = PRIO_UNDEF
        self.state = UP              # checker state (pp->state)
        self.chkrstate = UP
        self.dmstate = "active"      # what dm status says (A/F)
        self.tick = 0
        self.checkint = 0
        self.pgindex = 0
        # san_path_err bookkeeping (io_err_stat-free part of the marginal logic)
        self.path_failures = 0
        self.forget_count = 0
        self.dis_reinstate_time: Optional[int] = None
        self.marginal = False

    @property
    def name(self) -> str:
        return self.path.name

    # what the grouping policies compare
    @property
    def serial(self) -> str:
        return self.path.serial

    @property
    def node_name(self) -> str:
        return self.path.node_name

    @property
    def tpg(self) -> int:
        return self.path.tpg

    def __repr__(self):
        return "MapPath(%s prio=%d %s)" % (self.name, self.priority, self.state)


class PathGroup:
    def __init__(self, paths: List[MapPath]):
        self.paths = paths
        self.priority = 0
        self.enabled_paths = 0
        self.marginal = False
        self.status = "enabled"

    def update_prio(self) -> None:
        """path_group_prio_update: integer mean of the defined priorities of usable paths."""
        total = defined = enabled = marginal = 0
        for pp in self.paths:
            if pp.marginal:
                marginal += 1
            if pp.state in USABLE:
                if pp.priority != PRIO_UNDEF:
                    defined += 1
                    total += pp.priority
                enabled += 1
        self.enabled_paths = enabled
        if defined:
            self.priority = int(total / defined)   # C integer division (priorities are >= 0)
        elif enabled:
            self.priority = PRIO_UNDEF
        else:
            self.priority = 0
        self.marginal = bool(self.paths) and marginal == len(self.paths)


def sort_groups(groups: List[PathGroup]) -> List[PathGroup]:
    """sort_pathgroups: a stable sort, non-marginal first, then priority and enabled
    paths, both descending."""
    for g in groups:
        g.update_prio()
    return sorted(groups, key=lambda g: (g.marginal, -g.priority, -g.enabled_paths))


def select_path_group(groups: List[PathGroup]) -> int:
    """select_path_group: the 1-based best group: the first non-marginal group with
    usable paths, then any with a higher priority, or equal priority and more usable
    paths; 1 when no group has a usable path."""
    normal = False
    max_prio = 0
    best = 1
    max_enabled = 1
    for i, g in enumerate(groups):
        if not g.paths:
            continue
        g.update_prio()
        if g.marginal and normal:
            continue
        if g.enabled_paths:
            if not g.marginal and not normal:
                normal = True
                max_prio, max_enabled, best = g.priority, g.enabled_paths, i + 1
            elif g.priority > max_prio:
                max_prio, max_enabled, best = g.priority, g.enabled_paths, i + 1
            elif g.priority == max_prio and g.enabled_paths > max_enabled:
                max_enabled, best = g.enabled_paths, i + 1
    return best


def add_feature(features: str, feat: str) -> str:
    """add_feature: append a feature (count updated) unless it is already there."""
    words = features.split()
    fw = feat.split()
    for i in range(1, len(words) - len(fw) + 1):
        if words[i:i + len(fw)] == fw:
            return features
    count = int(words[0]) + len(fw)
    return " ".join([str(count)] + words[1:] + fw)


def remove_feature(features: str, feat: str) -> str:
    words = features.split()
    fw = feat.split()
    for i in range(1, len(words) - len(fw) + 1):
        if words[i:i + len(fw)] == fw:
            rest = words[1:i] + words[i + len(fw):]
            return " ".join([str(int(words[0]) - len(fw))] + rest)
    return features


class Multipath:
    """One map as multipathd holds it (struct multipath)."""

    def __init__(self, wwid: str, alias: str, paths: List[MapPath], size_sectors: int):
        self.wwid = wwid
        self.alias = alias
        self.paths = paths
        self.size_sectors = size_sectors
        self.settings: Dict[str, object] = {}
        self.origins: Dict[str, str] = {}
        self.groups: List[PathGroup] = []
        self.bestpg = 1
        self.nextpg = 1
        self.in_recovery = False
        self.retry_tick = 0
        self.failback_tick = 0
        self.dm_minor = 0

    # the settings the table and the daemon use
    @property
    def selector(self) -> str:
        return self.settings["path_selector"]

    @property
    def pgpolicy(self) -> str:
        return self.settings["path_grouping_policy"]

    @property
    def no_path_retry(self):
        return self.settings["no_path_retry"]

    @property
    def failback(self):
        return self.settings["failback"]

    def group(self, policy: Optional[str] = None) -> None:
        """group_paths + sort_pathgroups + select_path_group."""
        fn = pgpolicies.lookup(policy or self.pgpolicy)
        self.groups = sort_groups([PathGroup(g) for g in fn(self.paths)])
        for i, g in enumerate(self.groups):
            for pp in g.paths:
                pp.pgindex = i + 1
        self.bestpg = select_path_group(self.groups) if self.groups else 0
        self.nextpg = self.bestpg

    def features(self) -> str:
        feats = self.settings["features"]
        npr = self.no_path_retry
        if npr == "queue":
            feats = add_feature(feats, "queue_if_no_path")
        elif isinstance(npr, int):
            # no queueing once no_path_retry has run out with no usable path
            if not (self.in_recovery and self.retry_tick == 0 and not self.active_paths()):
                feats = add_feature(feats, "queue_if_no_path")
        return feats

    def active_paths(self) -> int:
        return sum(1 for pp in self.paths if pp.state in USABLE)

    def repeat(self, pp: MapPath) -> int:
        minio = self.settings["rr_min_io_rq"]
        if self.settings["rr_weight"] == "priorities" and pp.priority > 0:
            return minio * pp.priority
        return minio

    def table_params(self) -> str:
        """assemble_map."""
        parts = ["%s %s %d %d" % (self.features(), self.settings["hardware_handler"], len(self.groups),
                                  self.bestpg if self.groups else 0)]
        for g in self.groups:
            parts.append("%s %d 1" % (self.selector, len(g.paths)))
            for pp in g.paths:
                parts.append("%s %d" % (pp.path.dev_t, self.repeat(pp)))
        return " ".join(parts)

    def table_line(self) -> str:
        return "0 %d multipath %s" % (self.size_sectors, self.table_params())

    def vendor_product(self) -> str:
        for g in self.groups:
            for pp in g.paths:
                if pp.path.vendor and pp.path.product:
                    return "%s,%s" % (pp.path.vendor, pp.path.product)
        return "##,##"


# -- blacklist -------------------------------------------------------------------------
def _search(pattern: str, value: str) -> bool:
    try:
        return posix_search(pattern, value or "")
    except RegexError:
        return False


def _match(regexes, value: str) -> Optional[str]:
    for r in regexes:
        neg = r.startswith("!")
        hit = _search(r[1:] if neg else r, value)
        if hit != neg:
            return r
    return None


def _match_device(entries, vendor: str, product: str) -> Optional[str]:
    for v, p in entries:
        if (v is None or _search(v, vendor)) and (p is None or _search(p, product)):
            return "%s:%s" % (v, p)
    return None


def _builtin_bl(conf: Config, name: str, kind: str) -> list:
    prof = conf.profile
    items = prof.blacklist if name == "blacklist" else prof.exceptions
    return [v for k, v in items if k == kind]


def blacklisted(conf: Config, path: Path, table: Optional[List[Entry]] = None) -> Optional[str]:
    """Why the path is blacklisted, or None: the devnode, device, wwid, property and protocol
    filters in turn, an exception beating the blacklist within each filter (the built-in
    blacklist and exceptions of the version included).  Device entries with a
    product_blacklist add (vendor, product_blacklist) to the device blacklist.  With
    property exceptions (built in: SCSI_IDENT_ or ID_WWN), a path none of whose udev
    properties matches one is blacklisted ("missing property")."""
    bl, ex = conf.blacklist, conf.exceptions
    if not _match(ex.devnode + _builtin_bl(conf, "exceptions", "devnode"), path.name):
        r = _match(bl.devnode + _builtin_bl(conf, "blacklist", "devnode"), path.name)
        if r:
            return "devnode \"%s\"" % r
    if not _match_device(list(ex.device) + _builtin_bl(conf, "exceptions", "device"), path.vendor, path.product):
        devs = list(bl.device) + _builtin_bl(conf, "blacklist", "device") + [
            (e.get("vendor"), e.get("product_blacklist")) for e in (table or conf.hwtable)
            if e.has("product_blacklist")]
        r = _match_device(devs, path.vendor, path.product)
        if r:
            return "device %s" % r
    if not _match(ex.wwid, path.wwid):
        r = _match(bl.wwid, path.wwid)
        if r:
            return "wwid \"%s\"" % r
    # udev properties in their order: the first that an exception or a blacklist entry names decides
    exprops = ex.property + _builtin_bl(conf, "exceptions", "property")
    for prop in path.properties:
        if _match(exprops, prop):
            break
        r = _match(bl.property, prop)
        if r:
            return "property \"%s\"" % r
    else:
        if exprops:
            return "missing property"
    if not _match(ex.protocol, path.protocol):
        r = _match(bl.protocol, path.protocol)
        if r:
            return "protocol \"%s\"" % r
    return None


# -- property selection -----------------------------------------------------------------
class Selector:
    """The configuration layers for one map (and its paths)."""

    def __init__(self, conf: Config, table: List[Entry]):
        self.conf = conf
        self.table = table
        self.internal = internal_defaults(conf.profile)

    def mpe(self, wwid: str) -> Optional[Entry]:
        # duplicates were merged when the file was read (conf.merge_multipaths)
        return next((e for e in self.conf.multipaths if e.get("wwid") == wwid), None)

    def hwes(self, path: Path) -> List[Entry]:
        return find_hwe(self.table, path.vendor, path.product, path.revision)

    def pick(self, key: str, layers) -> Tuple[object, str]:
        for entry, origin in layers:
            if entry is not None and entry.has(key):
                return entry.get(key), origin
        return self.internal[key], ORIGIN_DEFAULT

    def map_layers(self, mpe, hwes):
        return [(mpe, ORIGIN_MPE), (self.conf.overrides, ORIGIN_OVR)] + [(h, ORIGIN_HWE) for h in hwes] + [
            (self.conf.defaults, ORIGIN_CONF)]

    def path_layers(self, hwes):
        return [(self.conf.overrides, ORIGIN_OVR)] + [(h, ORIGIN_HWE) for h in hwes] + [
            (self.conf.defaults, ORIGIN_CONF)]

    def path_settings(self, path: Path, mpe) -> Tuple[str, str, str, Dict[str, str]]:
        hwes = self.hwes(path)
        origins = {}
        detect_prio, origins["detect_prio"] = self.pick("detect_prio", self.path_layers(hwes))
        prio = args = None
        if detect_prio and path.tpgs:
            # detect_prio: the kernel's cached access_state is readable, so sysfs
            prio, args, origins["prio"] = "sysfs", "", ORIGIN_AUTO
        else:
            for entry, origin in [(mpe, ORIGIN_MPE), (self.conf.overrides, ORIGIN_OVR)]:
                if entry is not None and entry.has("prio"):
                    prio, args, origins["prio"] = entry.get("prio"), entry.get("prio_args", ""), origin
                    break
            if prio is None:
                # set_prio_from_vec: the name from the first entry that has one, the
                # args from the first that has args
                names = [h.get("prio") for h in hwes if h.has("prio")]
                if names:
                    prio = names[0]
                    hargs = [h.get("prio_args") for h in hwes if h.has("prio_args")]
                    args = hargs[0] if hargs else ""
                    origins["prio"] = ORIGIN_HWE
            if prio is None and self.conf.defaults.has("prio"):
                prio, args, origins["prio"] = self.conf.defaults.get("prio"), self.conf.defaults.get(
                    "prio_args", ""), ORIGIN_CONF
            if prio is None:
                prio, args, origins["prio"] = "const", "", ORIGIN_DEFAULT
        if prio == "alua" and not path.tpgs:
            prio, args, origins["prio"] = "const", "", "(setting: emergency fallback - alua failed)"
        detect_checker, origins["detect_checker"] = self.pick("detect_checker", self.path_layers(hwes))
        if detect_checker and path.tpgs:
            checker, origins["path_checker"] = "tur", ORIGIN_AUTO
        else:
            checker, origins["path_checker"] = self.pick("path_checker", self.path_layers(hwes))
        return prio, args or "", checker, origins


def checker_state(path: Path, checker: str) -> str:
    """What the path checker reports for the simulated path.

    A dead link fails every checker.  tur reports a standby port as ghost and a
    transitioning one as pending, other inaccessible ALUA states as faulty
    (checkers/tur.c reads the NOT READY sense); directio and readsector0 read a block,
    which fails on any port that refuses I/O.  none always reports ready."""
    if checker == "none":
        return UP
    if path.link_down:
        return DOWN
    st = path.alua_state
    if checker in ("rdac", "hp_sw", "emc_clariion"):
        # these read the controller's ownership: a passive (standby or non-owner) path is ghost
        from .prioritizers.array import owner
        if st in ("unavailable", "offline"):
            return DOWN
        if st == "standby" or not owner(path):
            return GHOST
        return UP
    if st is None or st in ("active/optimized", "active/non-optimized", "lba-dependent"):
        return UP
    if checker == "tur":
        if st == "standby":
            return GHOST
        if st == "transitioning":
            return PENDING
        return DOWN
    return DOWN


def get_prio(pp: MapPath, env: PrioEnv) -> None:
    """pathinfo(DI_PRIO) / get_prio: refresh the priority unless the checker says down
    and a priority is known; an error keeps the old value (link down) or makes it
    undefined."""
    if pp.state == DOWN and pp.priority != PRIO_UNDEF:
        return
    p = pp.prio.getprio(pp.path, pp.prio_args, env)
    if p < 0:
        if not pp.path.link_down:
            pp.priority = PRIO_UNDEF
        return
    pp.priority = p


def find_multipaths_mode(conf: Config) -> str:
    """The find_multipaths setting (strict by default in 0.9.4 and 0.14.3; yes/no read as on/off)."""
    v = conf.defaults.get("find_multipaths")
    if v is None:
        v = conf.profile.default_value("find_multipaths") or "strict"
    return {"yes": "on", "no": "off"}.get(v, v)


def should_multipath(mode: str, wwid: str, n_paths: int, wwids: Optional[List[str]]) -> Optional[str]:
    """None when paths of this WWID become a map, else why not.

    - off, greedy: every path that is not blacklisted;
    - strict: only a WWID in the wwids file;
    - on (yes), smart: a WWID in the wwids file or seen on two or more paths (smart waits
      find_multipaths_timeout for a second path before giving a single one up; the map
      assembled at discovery is the same).
    ``wwids`` None means the topology names no wwids file: every WWID counts as known
    (the state of a host whose maps were set up before)."""
    known = wwids is None or wwid in wwids
    if mode in ("off", "greedy") or known:
        return None
    if mode == "strict":
        return "find_multipaths strict: WWID %s is not in the wwids file" % wwid
    if n_paths >= 2:
        return None
    return "find_multipaths %s: one path and WWID %s is not in the wwids file" % (mode, wwid)


def build_maps(conf: Config, paths: List[Path], *, size_sectors: int = 2097152,
               env: Optional[PrioEnv] = None, wwids: Optional[List[str]] = None
               ) -> Tuple[List[Multipath], List[Tuple[Path, str]]]:
    """Discover: filter the blacklist, apply find_multipaths (with the topology's wwids
    file), group paths into maps by wwid, select every setting, check and prioritise the
    paths, group them and pick the initial group.
    Returns (maps, [(path left alone, reason), ...])."""
    env = env or PrioEnv()
    sel = Selector(conf, conf.hwtable)
    kept, dropped = [], []
    for p in paths:
        why = blacklisted(conf, p, sel.table)
        if why:
            dropped.append((p, "blacklisted by " + why))
        else:
            kept.append(p)
    by_wwid: Dict[str, List[Path]] = {}
    for p in kept:
        by_wwid.setdefault(p.wwid, []).append(p)
    mode = find_multipaths_mode(conf)
    for wwid in list(by_wwid):
        why = should_multipath(mode, wwid, len(by_wwid[wwid]), wwids)
        if why:
            dropped.extend((p, why) for p in by_wwid.pop(wwid))
    maps = []
    used_aliases = set()
    for n, (wwid, ps) in enumerate(by_wwid.items()):
        mpe = sel.mpe(wwid)
        mpaths = []
        for p in ps:
            prio, args, checker, origins = sel.path_settings(p, mpe)
            pp = MapPath(p, prio, args, checker, origins)
            pp.state = pp.chkrstate = checker_state(p, checker)
            pp.dmstate = "active" if pp.state in USABLE else "failed"
            mpaths.append(pp)
        for pp in mpaths:
            get_prio(pp, env)
        hwes = sel.hwes(ps[0])
        mp = Multipath(wwid, "", mpaths, size_sectors)
        mp.dm_minor = n
        layers = sel.map_layers(mpe, hwes)
        for key in ("path_selector", "rr_weight", "failback", "rr_min_io_rq", "no_path_retry", "features",
                    "san_path_err_threshold", "san_path_err_forget_rate", "san_path_err_recovery_time",
                    "user_friendly_names", "alias_prefix"):
            mp.settings[key], mp.origins[key] = sel.pick(key, layers if key != "alias_prefix" else layers[1:])
        _select_features(mp, conf)
        _select_pgpolicy(mp, sel, mpe, hwes)
        _select_hwhandler(mp, sel, hwes)
        mp.alias = _alias(mp, mpe, n, used_aliases)
        used_aliases.add(mp.alias)
        mp.group()
        maps.append(mp)
    return maps, dropped


def _select_features(mp: Multipath, conf: Config) -> None:
    """select_features + reconcile_features_with_options: queue_if_no_path in the
    features becomes no_path_retry queue when nothing else set no_path_retry, and is
    dropped from the features either way (it is re-added from no_path_retry)."""
    feats = mp.settings["features"]
    words = feats.split()[1:]
    if "queue_if_no_path" in words:
        if mp.settings["no_path_retry"] is None:
            mp.settings["no_path_retry"] = "queue"
            mp.origins["no_path_retry"] = "(inherited setting from feature 'queue_if_no_path')"
        feats = remove_feature(feats, "queue_if_no_path")
    if "retain_attached_hw_handler" in feats.split()[1:]:
        feats = remove_feature(feats, "retain_attached_hw_handler")
    mp.settings["features"] = feats


def _select_pgpolicy(mp: Multipath, sel: Selector, mpe, hwes) -> None:
    detect, _ = sel.pick("detect_pgpolicy", sel.path_layers(hwes))
    use_tpg, _ = sel.pick("detect_pgpolicy_use_tpg", sel.path_layers(hwes))
    all_alua = bool(mp.paths) and all(pp.prio_name in ("alua", "sysfs") for pp in mp.paths)
    if detect and all_alua:
        mp.settings["path_grouping_policy"] = "group_by_tpg" if use_tpg else "group_by_prio"
        mp.origins["path_grouping_policy"] = ORIGIN_AUTO
        return
    pol, origin = sel.pick("path_grouping_policy", sel.map_layers(mpe, hwes))
    if pol == "group_by_tpg" and not all_alua:
        pol, origin = "failover", "(setting: emergency fallback - not all paths use alua prio)"
    mp.settings["path_grouping_policy"], mp.origins["path_grouping_policy"] = pol, origin


def _select_hwhandler(mp: Multipath, sel: Selector, hwes) -> None:
    all_tpgs = bool(mp.paths) and all(pp.path.tpgs for pp in mp.paths)
    if any(pp.path.tpgs for pp in mp.paths):
        # scsi_dh_alua attaches itself to ALUA ports; retain_attached_hw_handler keeps it
        hw, origin = "1 alua", "(setting: retained by kernel driver)"
    else:
        hw, origin = sel.pick("hardware_handler", [(h, ORIGIN_HWE) for h in hwes])
    if all_tpgs and hw == "0" and origin == ORIGIN_DEFAULT:
        hw, origin = "1 alua", "(setting: autodetected from TPGS)"
    elif not all_tpgs and hw == "1 alua":
        hw, origin = "0", "(setting: autodetected from TPGS)"
    mp.settings["hardware_handler"], mp.origins["hardware_handler"] = hw, origin


def _friendly(n: int) -> str:
    """mpatha ... mpathz, mpathaa, ... (the bindings file's numbering)."""
    s = ""
    n += 1
    while n:
        n, r = divmod(n - 1, 26)
        s = chr(ord("a") + r) + s
    return s


def _alias(mp: Multipath, mpe, n: int, used) -> str:
    if mpe is not None and mpe.has("alias"):
        mp.origins["alias"] = ORIGIN_MPE
        return mpe.get("alias")
    if mp.settings["user_friendly_names"]:
        mp.origins["alias"] = "(setting: user_friendly_name)"
        i = n
        while mp.settings["alias_prefix"] + _friendly(i) in used:
            i += 1
        return mp.settings["alias_prefix"] + _friendly(i)
    mp.origins["alias"] = "(setting: default to WWID)"
    return mp.wwid


def map_target(mp: Multipath):
    """The kernel target built from the map's table, its devices resolved by the paths' dev_t."""
    from ..target import construct, mapping_resolver
    return construct(mp.table_params(),
                     resolve_device=mapping_resolver({pp.path.dev_t: pp.path.devt for pp in mp.paths}))


def check_map(mp: Multipath, where: str = "") -> None:
    """Construct the assembled table once with the kernel target, so a setting the
    kernel would refuse (a selector argument, a feature) is reported up front."""
    from ..target import TargetError
    try:
        map_target(mp)
    except TargetError as e:
        raise ConfError("%smap %s: the kernel would refuse the table \"%s\": %s"
                        % (where, mp.alias, mp.table_params(), e)) from None
