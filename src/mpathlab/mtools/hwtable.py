"""Hardware-table lookup and multipath's internal defaults.

The built-in table itself is the profile's (every device entry the real binary prints,
see profile.py); :func:`mpathlab.mtools.conf.factorize` merges the user's entries into it.
Vendor, product and revision are matched as multipath matches them: POSIX extended
regular expressions, an unanchored search (regex.py).
Keys use multipath.conf keyword names.
"""
from __future__ import annotations

from typing import List, Optional

from .conf import Entry
from .regex import RegexError, posix_search

# the internal defaults (what applies when no layer sets a keyword); detect_pgpolicy exists
# from 0.9.7 on (internal_defaults() turns it off for older profiles)
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

def _search(pattern: Optional[str], value: Optional[str]) -> bool:
    if pattern is None:
        return True
    try:
        return posix_search(pattern, value or "")
    except RegexError:
        return False


def entry_matches(e: Entry, vendor: str, product: str, revision: str) -> bool:
    """hwe_regmatch: every regex the entry has must match (unanchored search)."""
    if not (vendor or product or revision):
        return False
    return (_search(e.get("vendor"), vendor) and _search(e.get("product"), product)
            and _search(e.get("revision"), revision))


def find_hwe(table: List[Entry], vendor: str, product: str, revision: str) -> List[Entry]:
    """All matching entries, the last (user entries) first (find_hwe)."""
    return [e for e in reversed(table) if entry_matches(e, vendor, product, revision)]


def internal_defaults(profile) -> dict:
    d = dict(INTERNAL_DEFAULTS)
    if not profile.accepts("defaults", "detect_pgpolicy"):
        d["detect_pgpolicy"] = False
        d["detect_pgpolicy_use_tpg"] = False
    return d
