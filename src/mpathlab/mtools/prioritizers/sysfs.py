"""sysfs: the same table as alua, read from the kernel's cached access_state in sysfs
(prioritizers/sysfs.c), so it needs no I/O and works while the link is down.  This is
what detect_prio picks for ALUA paths."""
from . import Prioritizer, register
from .alua import alua_prio


@register
class Sysfs(Prioritizer):
    name = "sysfs"

    def getprio(self, path, args, env):
        if path.alua_state is None:
            return -1
        return alua_prio(path.alua_state, path.alua_pref, args)
