"""The multipath-tools layer: multipath.conf, the built-in hardware table, path
grouping policies, prioritizers, map assembly, multipathd's checker loop and the
``multipath -ll`` view.  Described from opensvc/multipath-tools (libmultipath,
multipathd), written anew.

    conf = load_conf("multipath.conf")
    topo = load_path_topology("paths.toml")
    maps, blacklisted = build_maps(conf, topo.paths, size_sectors=topo.size_sectors)
    maps[0].table_line()       # '0 2097152 multipath 1 queue_if_no_path 1 alua 2 1 service-time 0 2 1 ...'
"""
from .conf import ConfError, Config, load_conf, parse_conf
from .maps import Multipath, build_maps, check_map
from .paths import Path, PathTopology, load_path_topology, path_topology_from_dict

__all__ = ["ConfError", "Config", "load_conf", "parse_conf", "Multipath", "build_maps", "check_map", "Path",
           "PathTopology", "load_path_topology", "path_topology_from_dict"]
