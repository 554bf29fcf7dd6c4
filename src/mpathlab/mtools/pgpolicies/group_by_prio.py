"""group_by_prio: one group per path priority value."""
from . import group_by_match, register


@register("group_by_prio")
def group(paths):
    return group_by_match(paths, lambda a, b: a.priority == b.priority)
