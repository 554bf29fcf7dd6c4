"""group_by_tpg: one group per ALUA target port group id."""
from . import group_by_match, register


@register("group_by_tpg")
def group(paths):
    return group_by_match(paths, lambda a, b: a.tpg == b.tpg)
