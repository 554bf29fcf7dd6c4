"""Parse ``dmsetup status`` (INFO) output of a multipath target.

The INFO format is self-describing: every variable-length part is preceded
by its count, so a status line can be read without knowing the selectors.

    2 <queue_io> <pg_init_count> <#hw status> <hw status>*
    <#groups> <current group>
    ( <A|D|E> <#ps status> <ps status>* <#paths> <#ps per-path fields>
      ( <dev> <A|F> <fail_count> <field>* )* )*
"""
from __future__ import annotations

from typing import List


class StatusParseError(ValueError):
    pass


class _Tokens:
    def __init__(self, text: str):
        self.t = text.split()
        self.i = 0

    def next(self, what: str) -> str:
        if self.i >= len(self.t):
            raise StatusParseError("status ends early: expected %s" % what)
        v = self.t[self.i]
        self.i += 1
        return v

    def num(self, what: str) -> int:
        v = self.next(what)
        if not v.lstrip("-").isdigit():
            raise StatusParseError("expected a number for %s, got %r" % (what, v))
        return int(v)

    def take(self, n: int, what: str) -> List[str]:
        return [self.next(what) for _ in range(n)]


def parse_status_info(text: str) -> dict:
    """Return {"features": [...], "hw": [...], "nr_groups", "current_group", "groups": [...]}."""
    tk = _Tokens(text)
    nfeat = tk.num("feature count")
    features = tk.take(nfeat, "feature")
    nhw = tk.num("hardware handler status count")
    hw = tk.take(nhw, "hardware handler status")
    ngroups = tk.num("group count")
    current = tk.num("current group")
    groups = []
    for g in range(ngroups):
        state = tk.next("group state")
        if state not in ("A", "D", "E"):
            raise StatusParseError("group %d: state must be A, D or E, got %r" % (g + 1, state))
        nps = tk.num("selector status count")
        ps_status = tk.take(nps, "selector status")
        npaths = tk.num("path count")
        nfields = tk.num("per-path selector field count")
        paths = []
        for _ in range(npaths):
            dev = tk.next("path device")
            act = tk.next("path state")
            if act not in ("A", "F"):
                raise StatusParseError("path %s: state must be A or F, got %r" % (dev, act))
            fail_count = tk.num("fail count")
            paths.append({"dev": dev, "active": act == "A", "fail_count": fail_count,
                          "selector": tk.take(nfields, "selector field")})
        groups.append({"state": state, "selector_status": ps_status, "paths": paths})
    if tk.i != len(tk.t):
        raise StatusParseError("trailing tokens after the last group: %r" % tk.t[tk.i:])
    return {"features": features, "hw": hw, "nr_groups": ngroups, "current_group": current,
            "groups": groups}
