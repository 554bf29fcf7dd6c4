#!/bin/sh
# Guest side of the capture loop (the lab's /init runs it as /exp/main.sh, cwd /out; busybox sh).
# Per cell: null_blk paths as the topology says, dm-multipath over them, fio on the dm device with
# write_iolog, and mpathlab's capture script run while fio runs (its dump is what the host turns into a
# topology); the paths' stat before and after fio are the kernel's shares.
# /exp/cells.txt: "CELL <name> <topology> <selector> <bio|mq> <iodepth> <runtime_s> <capture_after_s> <capture_s>"
# /exp/topo/<T>.txt: "<label> <completion_nsec> [hw_queue_depth, default 256]" per null_blk path, or
#                   "<label> <ndelay_ns> <queue_depth> scsi <host>" per scsi_debug LUN (one LUN per host).
# The cell's meta lists the paths as built: "<block device> <completion or ndelay ns> <tags or queue_depth> [scsi <host>]".
C=/sys/kernel/config/nullb
modprobe null_blk nr_devices=0 || echo "null_blk load failed"
uname -r > /out/uname.txt
DEVS=""
# DEVS: the paths' block devices (a null_blk path's is its label, a scsi_debug LUN's the sdX the scan made)
down() {
  for b in $DEVS; do [ -d "$C/$b" ] && { echo 0 > "$C/$b/power"; rmdir "$C/$b"; }; done
  [ -d /sys/module/scsi_debug ] && { rmmod scsi_debug || echo "scsi_debug unload failed"; }
  DEVS=""; : > /tmp/built
}
# "<label> <ndelay_ns> <queue_depth> scsi <host>": one scsi_debug LUN per host (ndelay is module-wide, so
# every scsi line of a topology gives the same), its sdev queue_depth set in sysfs
scsi_up() {
  nd=""; nh=0
  while read -r label nsec qd kind host _; do
    [ "$kind" = scsi ] || continue
    nd=$nsec; [ "$host" -lt "$nh" ] || nh=$((host + 1))
  done < "/exp/topo/$1.txt"
  [ -n "$nd" ] || return 0
  modprobe sd_mod || { echo "sd_mod load failed"; return 1; }
  modprobe scsi_debug add_host="$nh" num_tgts=1 max_luns=1 vpd_use_hostno=0 ndelay="$nd" dev_size_mb=64 \
    virtual_gb=2 || { echo "scsi_debug load failed"; return 1; }
}
scsi_block() {  # the sdX of scsi_debug host $1 (the scan is asynchronous)
  n=0; B=""
  while [ -z "$B" ] && [ $n -lt 50 ]; do
    for x in "/sys/bus/pseudo/drivers/scsi_debug/adapter$1"/host*/target*/*/block/*; do [ -e "$x" ] && B=${x##*/}; done
    [ -n "$B" ] || { sleep 0.2; n=$((n + 1)); }
  done
}
up() {
  scsi_up "$1" || return 1
  while read -r label nsec qd kind host _; do
    case "$label" in ''|'#'*) continue;; esac
    if [ "$kind" = scsi ]; then
      scsi_block "$host"
      [ -n "$B" ] || { echo "no block device for scsi host $host"; return 1; }
      echo "$qd" > "/sys/block/$B/device/queue_depth"
      DEVS="$DEVS $B"; echo "$B $nsec $(cat "/sys/block/$B/device/queue_depth") scsi $host" >> /tmp/built
      continue
    fi
    d=$C/$label; mkdir "$d"
    echo 2 > "$d/irqmode"; echo "$nsec" > "$d/completion_nsec"; echo 2048 > "$d/size"
    echo "${qd:-256}" > "$d/hw_queue_depth"; echo 2 > "$d/queue_mode"; echo 1 > "$d/power"
    DEVS="$DEVS $label"; echo "$label $nsec ${qd:-256}" >> /tmp/built
  done < "/exp/topo/$1.txt"
}
snap() { for b in $DEVS; do echo "$b $(cat "/sys/block/$b/dev") $(cat "/sys/block/$b/stat")"; done; }
# "NVME <name> <ana states, one per port> <iopolicy> <iodepth> <runtime_s> <capture_after_s> <capture_s>":
# native NVMe multipath over nvme-loop: one nvmet subsystem exporting a null_blk namespace (1 ms) through
# one loop port per ANA state, the host connected to each (one controller per port); fio on the head.
nvme_cell() {
  name=$1; anas=$2; pol=$3; depth=$4; rt=$5; after=$6; window=$7
  o=/out/cells/$name; mkdir -p "$o"
  for m in nvmet nvme_fabrics nvme_loop; do modprobe $m || { echo "cell $name: modprobe $m failed"; return 1; }; done
  N=klab-capture; CF=/sys/kernel/config/nvmet; S=$CF/subsystems/$N
  d=$C/nvns; mkdir "$d"
  echo 2 > "$d/irqmode"; echo 1000000 > "$d/completion_nsec"; echo 2048 > "$d/size"; echo 1 > "$d/power"
  mkdir "$S"; echo 1 > "$S/attr_allow_any_host"
  mkdir "$S/namespaces/1"; printf /dev/nvns > "$S/namespaces/1/device_path"; echo 1 > "$S/namespaces/1/enable"
  i=1
  for a in $(echo "$anas" | tr ',' ' '); do
    P=$CF/ports/$i; mkdir "$P"; echo loop > "$P/addr_trtype"; echo "$i" > "$P/addr_traddr"
    echo "$a" > "$P/ana_groups/1/ana_state"; ln -s "$S" "$P/subsystems/$N"
    echo "transport=loop,traddr=$i,nqn=$N" > /dev/nvme-fabrics || echo "cell $name: connect port $i failed"
    i=$((i + 1))
  done
  sleep 1
  head=""; for x in /sys/class/nvme-subsystem/*; do
    [ "$(cat "$x/subsysnqn")" = "$N" ] && { echo "$pol" > "$x/iopolicy"; for h in "$x"/nvme*n*; do head=${h##*/}; done; }
  done
  echo "cell=$name kind=nvme iopolicy=$pol ana=$anas iodepth=$depth runtime=$rt head=$head" > "$o/meta"
  set -- --name="$name" --filename="/dev/$head" --ioengine=libaio --direct=1 --rw=randwrite --bs=4k \
      --iodepth="$depth" --runtime="$rt" --time_based --size=512M --randrepeat=0
  echo "$*" > "$o/fio.args"
  fio "$@" --output-format=json --output="$o/fio.json" > "$o/fio.stderr" 2>&1 &
  FP=$!
  sleep "$after"
  sh /exp/capture.sh "$window" > "$o/capture.dump" 2> "$o/capture.stderr"
  wait $FP
  for x in /sys/class/nvme/nvme*; do
    [ "$(cat "$x/subsysnqn")" = "$N" ] && for pth in "$x"/nvme*c*n*; do
      echo "${x##*/} ${pth##*/} $(cat "$pth/ana_state") $(cat "$pth/stat")"; done
  done > "$o/paths_end"
  for x in /sys/class/nvme/nvme*; do [ "$(cat "$x/subsysnqn")" = "$N" ] && echo 1 > "$x/delete_controller"; done
  sleep 1
  for P in "$CF"/ports/*; do rm -f "$P/subsystems/$N"; rmdir "$P"; done
  echo 0 > "$S/namespaces/1/enable"; rmdir "$S/namespaces/1"; rmdir "$S"
  echo 0 > "$d/power"; rmdir "$d"
  echo "cell $name done: $(awk '{printf "%s:%s:%d ", $1, $3, $8}' "$o/paths_end")"
}
while read -r kind name topo sel qmode depth rt after window; do
  if [ "$kind" = NVME ]; then nvme_cell "$name" "$topo" "$sel" "$qmode" "$depth" "$rt" "$after"; continue; fi
  [ "$kind" = CELL ] || continue
  o=/out/cells/$name; mkdir -p "$o"
  : > /tmp/built
  up "$topo" || { echo "cell $name: topology $topo failed"; down; continue; }
  paths=""; n=0
  for b in $DEVS; do paths="$paths $(cat "/sys/block/$b/dev") 1"; n=$((n + 1)); done
  feat="0"; [ "$qmode" = bio ] && feat="2 queue_mode bio"
  dmsetup create mp --table "0 4096 multipath $feat 0 1 1 $sel 0 $n 1$paths" > "$o/create.out" 2>&1 \
    || { echo "cell $name: create failed: $(cat "$o/create.out")"; down; continue; }
  echo "cell=$name topology=$topo selector=$sel queue_mode=$qmode iodepth=$depth runtime=$rt" > "$o/meta"
  cat /tmp/built >> "$o/meta"
  set -- --name="$name" --filename=/dev/mapper/mp --ioengine=libaio --direct=1 --rw=randwrite --bs=4k \
      --iodepth="$depth" --runtime="$rt" --time_based --size=1800M --randrepeat=0
  echo "$*" > "$o/fio.args"
  snap > "$o/stat_before"
  fio "$@" --write_iolog="$o/iolog" --output-format=json --output="$o/fio.json" > "$o/fio.stderr" 2>&1 &
  FP=$!
  sleep "$after"
  sh /exp/capture.sh "$window" > "$o/capture.dump" 2> "$o/capture.stderr"
  wait $FP
  snap > "$o/stat_after"
  dmsetup remove mp
  gzip -9 "$o/iolog"
  echo "cell $name done: $(paste "$o/stat_before" "$o/stat_after" | awk '{printf "%s:%d ", $1, $(NF/2+7)-$7}')"
  down
done < /exp/cells.txt
