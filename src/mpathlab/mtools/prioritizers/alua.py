"""alua: the priority from the path's ALUA asymmetric access state, read with REPORT
TARGET PORT GROUPS (prioritizers/alua.c).

active/optimized 50, active/non-optimized 10, lba-dependent 5, standby 1, any other
state 0; a path whose port group has the preferred bit set gets +80, except an
active/optimized one unless ``prio_args`` holds ``exclusive_pref_bit``.  RTPG needs I/O
to the port, so a path whose link is down cannot be asked (an error: the caller keeps
the old priority), and a path without ALUA support is an error too.
"""
from . import Prioritizer, exclusive_pref_arg, register

STATE_PRIO = {"active/optimized": 50, "active/non-optimized": 10, "lba-dependent": 5, "standby": 1}


def alua_prio(state: str, pref: bool, args: str) -> int:
    prio = STATE_PRIO.get(state, 0)
    if pref and (state != "active/optimized" or exclusive_pref_arg(args)):
        prio += 80
    return prio


@register
class Alua(Prioritizer):
    name = "alua"

    def getprio(self, path, args, env):
        if path.alua_state is None or path.link_down:
            return -1
        return alua_prio(path.alua_state, path.alua_pref, args)
