#!/usr/bin/env python3
"""Write a multi-host topology (mpathlab hosts; docs/many-hosts.md) with HOSTS hosts over PORTS array ports.

    python scripts/hosts_topology.py 1000 64 > examples/hosts-1000x64.toml

Ports are named as sd disks (sda, sdb, ..., sdaa, ...) with sd's device numbers (16 disks per major: 8, 65-71,
128-135); the first quarter serve in 0.5 ms, the rest in 1 ms (lognormal, sigma 0.5), 16 I/Os at once each.
Every host loads one service-time table over all ports.
"""
import string
import sys

SD_MAJORS = [8, 65, 66, 67, 68, 69, 70, 71] + list(range(128, 136))     # Documentation/admin-guide/devices.txt


def disk_name(k: int) -> str:
    """sd's name of disk k (drivers/scsi/sd.c sd_format_disk_name): sda..sdz, sdaa.., base 26 from a."""
    letters = string.ascii_lowercase
    name = ""
    k += 1
    while k:
        k, r = divmod(k - 1, 26)
        name = letters[r] + name
    return "sd" + name


def topology(hosts: int, ports: int) -> str:
    if not 1 <= ports <= 16 * len(SD_MAJORS):
        raise SystemExit("ports: 1 to %d" % (16 * len(SD_MAJORS)))
    names = [disk_name(k) for k in range(ports)]
    fast = max(1, ports // 4)
    out = ["# %d hosts, each with its own multipath device over the same %d array ports (mpathlab hosts;" % (hosts, ports),
           "# docs/many-hosts.md).  Ports %s..%s serve in 0.5 ms, the rest in 1 ms (lognormal, sigma 0.5), 16 I/Os at"
           % (names[0], names[fast - 1]),
           "# once each, FIFO behind that.  Written by scripts/hosts_topology.py %d %d." % (hosts, ports),
           "[hosts]", "count = %d" % hosts, 'window = "10ms"', "",
           "[multipath]",
           'table = "0 1048576 multipath 0 0 1 1 service-time 0 %d 1 %s"' % (ports, " ".join("%s 1" % n for n in names)),
           'kernel = "6.1"', "seed = 1", ""]
    for k, n in enumerate(names):
        out += ["[paths.%s]" % n, 'devt = "%d:%d"' % (SD_MAJORS[k // 16], (k % 16) * 16),
                'service = { dist = "lognormal", mean = "%s", sigma = 0.5 }' % ("500us" if k < fast else "1ms"),
                "parallelism = 16", ""]
    return "\n".join(out)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    sys.stdout.write(topology(int(sys.argv[1]), int(sys.argv[2])))
