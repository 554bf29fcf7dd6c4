"""failover: one path per group (one_path_per_group)."""
from . import register


@register("failover")
def group(paths):
    return [[p] for p in paths]
