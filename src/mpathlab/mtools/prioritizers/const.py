"""const: every path gets priority 1 (prioritizers/const.c)."""
from . import Prioritizer, register


@register
class Const(Prioritizer):
    name = "const"

    def getprio(self, path, args, env):
        return 1
