"""weightedpath: the priority given to the path in prio_args (prioritizers/weightedpath.c).

``prio_args`` is a match kind, ``hbtl``, ``devname``, ``serial`` or ``wwn``, then pairs
of (regex, priority); the first regex that matches the path's H:C:T:L, device name,
serial or "host_wwnn:host_wwpn:tgt_wwnn:tgt_wwpn" gives the priority (glibc atoi of it: ASCII digits, saturating);
no match, or an unknown kind, gives 0.  Regexes are POSIX extended, searched (not anchored) as
regexec does, in linear time.
"""
from ...inputs import c_atoi
from ..regex import RegexError, compile_posix
from . import Prioritizer, register


@register
class WeightedPath(Prioritizer):
    name = "weightedpath"

    def getprio(self, path, args, env):
        words = (args or "").split()
        if not words:
            return 0
        kind = words[0]
        if kind == "hbtl":
            subject = path.hcil
        elif kind == "devname":
            subject = path.name
        elif kind == "serial":
            subject = path.serial
        elif kind == "wwn":
            subject = path.wwn
        else:
            return 0
        rest = words[1:]
        for i in range(0, len(rest) - 1, 2):
            try:
                if compile_posix(rest[i]).search(subject):
                    return c_atoi(rest[i + 1])
            except RegexError:
                continue   # regcomp failed: the pair is skipped
        return 0
