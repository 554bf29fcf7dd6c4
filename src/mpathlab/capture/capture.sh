#!/bin/sh
# mpathlab's capture script: collects, read-only, what `mpathlab capture --from DUMP` turns into a topology
# file, on a host without Python (a POSIX shell and busybox are enough). Root is not needed; what cannot be
# read is recorded as such.
#   sh capture.sh [SECONDS] > host.dump     (SECONDS: the window for the paths' service times, default 5)
# Dump format: "@@ <kind> <args>" headers, each followed by its content lines, every one prefixed by "|".
S=${1:-5}
case "$S" in ''|*[!0-9]*) echo "usage: capture.sh [SECONDS] (a whole number of seconds)" >&2; exit 2;; esac

# Files and directories are read with shell builtins only: on a busy host (or an emulated guest) every fork
# costs the I/O being measured CPU time.
f() {  # a file's text, or "missing"
  if [ -f "$1" ] && [ -r "$1" ]; then
    echo "@@ file $1"
    while IFS= read -r line || [ -n "$line" ]; do printf '|%s\n' "$line"; done < "$1"
  else echo "@@ missing $1"; fi
}
d() {  # a directory's entries
  [ -d "$1" ] || return 0
  echo "@@ dir $1"
  for e in "$1"/* "$1"/.[!.]*; do
    if [ -e "$e" ] || [ -L "$e" ]; then printf '|%s\n' "${e##*/}"; fi
  done
}
l() {  # where a symbolic link points
  if [ -L "$1" ]; then echo "@@ link $1 $(readlink "$1")"; fi
}
c() {  # a command's output (stdout and stderr) and exit status; 127 when it is not installed
  echo "@@ cmd $*"
  if command -v "$1" > /dev/null 2>&1; then
    out=$("$@" 2>&1); rc=$?
    [ -z "$out" ] || printf '%s\n' "$out" | awk '{print "|" $0}'
  else rc=127; fi
  echo "@@ rc $rc"
}
snap() {  # the counters the service times are computed from
  read -r up _ < /proc/uptime
  echo "@@ snap $1 $up"
  for b in /sys/block/* /sys/class/nvme-subsystem/*/nvme*/nvme*c*n*; do
    if [ -e "$b/stat" ]; then f "$b/stat"; f "$b/inflight"; fi
  done
  f /proc/diskstats
}

echo "@@ mpathlab-capture-dump 1"
echo "@@ seconds $S"
f /proc/sys/kernel/osrelease
f /sys/devices/system/cpu/online
f /proc/devices
f /etc/multipath.conf
f "/boot/config-$(uname -r)"
if [ -r /proc/config.gz ]; then c sh -c "zcat /proc/config.gz | grep '^CONFIG_HZ='"; fi
c dmsetup table
c dmsetup status
d /sys/block
for b in /sys/block/*; do
  l "$b"
  for x in dev size ro queue/scheduler queue/nr_requests queue/rotational queue/logical_block_size \
           queue/max_sectors_kb dm/name dm/uuid device/queue_depth device/vendor device/model device/state; do
    [ -e "$b/$x" ] && f "$b/$x"
  done
  l "$b/device/driver"
  d "$b/slaves"
  d "$b/mq"
  for h in "$b"/mq/*; do [ -d "$h" ] && f "$h/nr_tags"; done
done
d /sys/class/nvme-subsystem
for s in /sys/class/nvme-subsystem/*; do
  [ -d "$s" ] || continue
  d "$s"
  f "$s/iopolicy"; f "$s/subsysnqn"
  for ctl in "$s"/nvme*; do
    case "${ctl##*/}" in nvme*n*) continue;; esac     # controllers only (nvme0), namespaces are nvme0n1
    d "$ctl"; f "$ctl/state"; f "$ctl/transport"; f "$ctl/address"; f "$ctl/numa_node"; f "$ctl/queue_count"
    f "$ctl/sqsize"
    for p in "$ctl"/nvme*c*n*; do [ -d "$p" ] && f "$p/ana_state" && f "$p/ana_grpid" && f "$p/dev"; done
  done
done
snap 0
# requests in the drivers ten times a second: a path's time per request by Little's law, where its stat ticks
# also hold time spent in its I/O scheduler (bio-based dm over a path with a scheduler)
T=0.1; sleep "$T" 2> /dev/null || T=1
n=0
while [ "$n" -lt "$S" ]; do
  k=0
  while [ "$k" -lt 10 ]; do
    [ "$T" = 1 ] && [ "$k" -gt 0 ] && break
    sleep "$T"
    read -r up _ < /proc/uptime
    echo "@@ sample $up"
    for b in /sys/block/* /sys/class/nvme-subsystem/*/nvme*/nvme*c*n*; do
      if [ -r "$b/inflight" ]; then read -r r w < "$b/inflight"; printf '|%s %s %s\n' "${b##*/}" "$r" "$w"; fi
    done
    k=$((k + 1))
  done
  n=$((n + 1))
done
snap 1
echo "@@ end"
