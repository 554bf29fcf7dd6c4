#!/bin/sh
# Guest side of the blktrace recording (the lab's /init runs it as /exp/main.sh, cwd /out; busybox sh).
# dm-multipath (request-based, round-robin) over two scsi_debug LUNs; fio runs a slow mixed-size randrw on
# the dm device with write_iolog while blktrace records the dm device and the first LUN. The per-CPU files,
# blkparse's text and fio's iolog come back: the same I/Os as the kernel saw them and as fio issued them.
uname -r > /out/uname.txt
mount -t debugfs debugfs /sys/kernel/debug || echo "debugfs mount failed"
modprobe sd_mod || echo "sd_mod load failed"
modprobe scsi_debug add_host=2 num_tgts=1 max_luns=1 vpd_use_hostno=0 ndelay=200000 dev_size_mb=64 \
  virtual_gb=2 || echo "scsi_debug load failed"
DEVS=""
for h in 0 1; do
  B=""; n=0
  while [ -z "$B" ] && [ $n -lt 50 ]; do
    for x in "/sys/bus/pseudo/drivers/scsi_debug/adapter$h"/host*/target*/*/block/*; do [ -e "$x" ] && B=${x##*/}; done
    [ -n "$B" ] || { sleep 0.2; n=$((n + 1)); }
  done
  DEVS="$DEVS $B"
done
set -- $DEVS
echo "paths: $* ($(cat /sys/block/$1/dev) $(cat /sys/block/$2/dev))"
dmsetup create mp --table "0 4194304 multipath 0 0 1 1 round-robin 0 2 1 $(cat /sys/block/$1/dev) 1 $(cat /sys/block/$2/dev) 1" \
  || { echo "dmsetup create failed"; exit 1; }
DM=$(basename "$(readlink -f /dev/mapper/mp)")
[ -b "/dev/$DM" ] || DM=dm-0
dmsetup table > /out/table.txt
echo "dm=$DM first_path=$1 second_path=$2" > /out/meta
mkdir -p /out/bt
blktrace -d "/dev/$DM" -d "/dev/$1" -D /out/bt -w 4 > /out/blktrace.out 2>&1 &
BT=$!
sleep 1
fio --name=bt --filename=/dev/mapper/mp --ioengine=libaio --direct=1 --rw=randrw --bssplit=4k/50:16k/30:64k/20 \
  --iodepth=4 --rate_iops=50 --runtime=2 --time_based --size=64M --randrepeat=0 --write_iolog=/out/fio.iolog \
  --output-format=json --output=/out/fio.json > /out/fio.stderr 2>&1
wait $BT
cat /out/blktrace.out
cd /out/bt && for d in "$DM" "$1"; do blkparse -i "$d" > "$d.txt" 2> "$d.blkparse.err"; done
ls -l /out/bt
dmsetup remove mp
