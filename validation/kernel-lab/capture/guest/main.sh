#!/bin/sh
# Guest side of the capture loop (the lab's /init runs it as /exp/main.sh, cwd /out; busybox sh).
# Per cell: null_blk paths as the topology says, dm-multipath over them, fio on the dm device with
# write_iolog, and mpathlab's capture script run while fio runs (its dump is what the host turns into a
# topology); the paths' stat before and after fio are the kernel's shares.
# /exp/cells.txt: "CELL <name> <topology> <selector> <bio|mq> <iodepth> <runtime_s> <capture_after_s> <capture_s>"
# /exp/topo/<T>.txt: "<label> <completion_nsec> [hw_queue_depth, default 256]" per null_blk path.
C=/sys/kernel/config/nullb
modprobe null_blk nr_devices=0 || echo "null_blk load failed"
uname -r > /out/uname.txt
DEVS=""
down() { for b in $DEVS; do echo 0 > "$C/$b/power"; rmdir "$C/$b"; done; DEVS=""; }
up() {
  while read -r label nsec qd _; do
    case "$label" in ''|'#'*) continue;; esac
    d=$C/$label; mkdir "$d"
    echo 2 > "$d/irqmode"; echo "$nsec" > "$d/completion_nsec"; echo 2048 > "$d/size"
    echo "${qd:-256}" > "$d/hw_queue_depth"; echo 2 > "$d/queue_mode"; echo 1 > "$d/power"
    DEVS="$DEVS $label"
  done < "/exp/topo/$1.txt"
}
snap() { for b in $DEVS; do echo "$b $(cat "/sys/block/$b/dev") $(cat "/sys/block/$b/stat")"; done; }
while read -r kind name topo sel qmode depth rt after window; do
  [ "$kind" = CELL ] || continue
  o=/out/cells/$name; mkdir -p "$o"
  up "$topo"
  paths=""; n=0
  for b in $DEVS; do paths="$paths $(cat "/sys/block/$b/dev") 1"; n=$((n + 1)); done
  feat="0"; [ "$qmode" = bio ] && feat="2 queue_mode bio"
  dmsetup create mp --table "0 4096 multipath $feat 0 1 1 $sel 0 $n 1$paths" > "$o/create.out" 2>&1 \
    || { echo "cell $name: create failed: $(cat "$o/create.out")"; down; continue; }
  echo "cell=$name topology=$topo selector=$sel queue_mode=$qmode iodepth=$depth runtime=$rt" > "$o/meta"
  cat "/exp/topo/$topo.txt" >> "$o/meta"
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
