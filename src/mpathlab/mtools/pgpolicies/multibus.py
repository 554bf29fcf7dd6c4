"""multibus: every path in one group (one_group)."""
from . import register


@register("multibus")
def group(paths):
    return [list(paths)] if paths else []
