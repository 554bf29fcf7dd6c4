"""`mpathlab capture`: snapshot a running host's dm-multipath maps and paths into topology files.

``collect`` reads a host through a ``Source`` (a root directory, "/" by default, or the dump of the shipped
shell script, capture.sh, for hosts without Python); ``write_topology`` writes one map as a topology file.
"""
import os

from .collect import Capture, MapCapture, PathCapture, collect
from .source import DumpSource, RootSource, Source, read_dump
from .writer import summary, write_nvme_topology, write_topology

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "capture.sh")


def script_text() -> str:
    """The shell script that collects a dump (`mpathlab capture --print-script`)."""
    with open(SCRIPT) as f:
        return f.read()


__all__ = ["Capture", "MapCapture", "PathCapture", "collect", "DumpSource", "RootSource", "Source", "read_dump",
           "summary", "write_topology", "write_nvme_topology", "script_text", "SCRIPT"]
