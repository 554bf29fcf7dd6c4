"""The dm-multipath target: table grammar, runtime state, messages, status."""
from .errors import MessageError, TargetError
from .multipath import (END_DELAY_REQUEUE, END_DONE, END_INCOMPLETE, END_REQUEUE, MAP_DELAY_REQUEUE,
                        MAP_KILL, MAP_REMAPPED, MAP_REQUEUE, MAP_SUBMITTED, QUEUE_MODE_BIO, QUEUE_MODE_RQ,
                        TARGET_VERSION, Device, Multipath, MpathIO, PGPath, PriorityGroup, blk_path_error)
from .status_parse import StatusParseError, parse_status_info
from .table import (construct, default_device_resolver, mapping_resolver, parse, split_table_line,
                    table_line)

__all__ = [
    "END_DELAY_REQUEUE", "END_DONE", "END_INCOMPLETE", "END_REQUEUE", "MAP_DELAY_REQUEUE", "MAP_KILL",
    "MAP_REMAPPED", "MAP_REQUEUE", "MAP_SUBMITTED", "QUEUE_MODE_BIO", "QUEUE_MODE_RQ", "TARGET_VERSION",
    "Device", "MessageError", "Multipath", "MpathIO", "PGPath", "PriorityGroup", "TargetError",
    "blk_path_error", "construct", "default_device_resolver", "mapping_resolver", "parse",
    "split_table_line", "table_line", "StatusParseError", "parse_status_info",
]
