"""group_by_node_name: one group per target node name (the FC/iSCSI target behind the path)."""
from . import group_by_match, register


@register("group_by_node_name")
def group(paths):
    return group_by_match(paths, lambda a, b: a.node_name == b.node_name)
