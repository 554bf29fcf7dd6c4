"""group_by_serial: one group per SCSI serial number (VPD page 0x80)."""
from . import group_by_match, register


@register("group_by_serial")
def group(paths):
    return group_by_match(paths, lambda a, b: a.serial == b.serial)
