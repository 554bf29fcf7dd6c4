"""The built-in hardware table (a few common arrays) and multipath's internal defaults.

The values are those of multipath-tools' libmultipath/hwtable.c and defaults.h (0.14),
restated as data: only entries whose prioritizer and checker mpathlab models are
included (arrays using the ontap, emc, rdac or hds prioritizers are left out).
Keys use multipath.conf keyword names.
"""
from __future__ import annotations

import re
from typing import List, Optional

from .conf import Entry

# defaults.h
INTERNAL_DEFAULTS = {
    "path_selector": "service-time 0",
    "path_grouping_policy": "failover",
    "features": "0",
    "hardware_handler": "0",
    "prio": "const",
    "prio_args": "",
    "rr_weight": "uniform",
    "rr_min_io_rq": 1,
    "rr_min_io": 1000,
    "failback": "manual",
    "no_path_retry": None,          # NO_PATH_RETRY_UNDEF: neither queue nor fail is forced
    "path_checker": "tur",
    "detect_prio": True,
    "detect_checker": True,
    "detect_pgpolicy": True,
    "detect_pgpolicy_use_tpg": False,
    "user_friendly_names": False,
    "alias_prefix": "mpath",
    "san_path_err_threshold": None,
    "san_path_err_forget_rate": None,
    "san_path_err_recovery_time": None,
    "marginal_path_err_sample_time": None,
    "marginal_path_err_rate_threshold": None,
    "marginal_path_err_recheck_gap_time": None,
    "marginal_path_double_failed_time": None,
}

def _e(**kw) -> Entry:
    e = Entry("builtin")
    for k, v in kw.items():
        e.set(k, v)
    return e


BUILTIN: List[Entry] = [
    _e(vendor="APPLE", product="Xserve RAID", path_grouping_policy="multibus"),
    # HPE 3PAR / Primera / Alletra 9000
    _e(vendor="3PARdata", product="VV", path_grouping_policy="group_by_prio", failback="immediate",
       prio="alua", no_path_retry=18),
    # Dell SC Series (Compellent)
    _e(vendor="COMPELNT", product="Compellent Vol", path_grouping_policy="group_by_prio", failback="immediate",
       no_path_retry="queue"),
    # Dell PowerStore
    _e(vendor="DellEMC", product="PowerStore", path_grouping_policy="group_by_prio", prio="alua",
       failback="immediate", no_path_retry=3),
    # Dell EqualLogic PS Series
    _e(vendor="EQLOGIC", product="100E-00", path_grouping_policy="multibus", no_path_retry=30),
    # IBM Storwize / SVC / FlashSystem
    _e(vendor="IBM", product="^2145", no_path_retry="queue", path_grouping_policy="group_by_prio",
       failback="immediate", prio="alua"),
    # Linux-IO target
    _e(vendor="(LIO-ORG|SUSE)", product=".*", path_grouping_policy="group_by_prio", failback="immediate",
       no_path_retry=12, prio="alua", path_checker="directio", detect_checker=False),
    # Pure FlashArray
    _e(vendor="PURE", product="FlashArray", path_grouping_policy="group_by_prio", failback="immediate",
       prio="alua", detect_prio=False),
]


def _search(pattern: Optional[str], value: Optional[str]) -> bool:
    if pattern is None or value is None:
        return True
    try:
        return re.search(pattern, value) is not None
    except re.error:
        return False


def entry_matches(e: Entry, vendor: str, product: str, revision: str) -> bool:
    """hwe_regmatch: every regex the entry has must match (unanchored search)."""
    if not (vendor or product or revision):
        return False
    return (_search(e.get("vendor"), vendor) and _search(e.get("product"), product)
            and _search(e.get("revision"), revision))


def _same_strings(a: Entry, b: Entry) -> bool:
    return all(a.get(k) == b.get(k) for k in ("vendor", "product", "revision"))


def merged_table(user: List[Entry], warnings: Optional[list] = None) -> List[Entry]:
    """The built-in table with the user's device entries appended; an entry whose
    vendor/product/revision strings equal a later one's is merged into the later one,
    which keeps its own values and takes the earlier one's for the keys it lacks
    (factorize_hwtable / merge_hwe)."""
    table = list(BUILTIN) + [_copy(e) for e in user]     # the merge must not change the parsed config
    n_builtin = len(BUILTIN)
    out: List[Entry] = []
    for i, e in enumerate(table):
        later = next((f for f in table[max(i + 1, n_builtin):] if _same_strings(f, e)), None)
        if later is None:
            out.append(e)
            continue
        if i >= n_builtin and warnings is not None:
            warnings.append("duplicate device section for %s:%s:%s (line %d)"
                            % (e.get("vendor"), e.get("product"), e.get("revision"), e.line))
        for k, s in e.values.items():
            if k not in later.values:
                later.values[k] = s
    return out


def _copy(e: Entry) -> Entry:
    c = Entry(e.kind, e.line)
    c.values = dict(e.values)
    return c


def find_hwe(table: List[Entry], vendor: str, product: str, revision: str) -> List[Entry]:
    """All matching entries, the last (user entries) first (find_hwe)."""
    return [e for e in reversed(table) if entry_matches(e, vendor, product, revision)]
