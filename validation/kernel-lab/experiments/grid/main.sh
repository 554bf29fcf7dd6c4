#!/bin/sh
# Guest side of the validation grid (the lab's /init runs it as /exp/main.sh, cwd /out; busybox sh).
# Builds null_blk path devices, puts dm-multipath over them, runs fio on the dm device and records what the
# block layer did.
#
# /exp/topo/<T>.txt : "<label> <completion_nsec> [hw_queue_depth, default 256]" per null_blk path, or
#                     "<label> <ndelay_nsec> <queue_depth> scsi <host> [<can_queue>]" per scsi_debug LUN path:
#                     every scsi line's host is a scsi_debug host (HBA port; paths naming the same host share its
#                     can_queue), all of them one LUN (vpd_use_hostno=0); ndelay and can_queue (max_queue) are
#                     module-wide in scsi_debug, so all scsi lines of a topology must give the same values;
#                     queue_depth is the LUN's sdev queue_depth (sysfs), or
#                     "<label> <completion_nsec> <hw_queue_depth> delay <delay_ms>" per dm-delay path (a null_blk
#                     device <label>n under a dm-delay device <label>: a path whose latency a fault can raise;
#                     bio-based multipath only, request-based dm needs blk-mq paths)
# /exp/runs.txt     : one directive per line
#   TOPO <T>                         tear down the current null_blk paths, build topology T
#   SCHED <name>                     set the I/O scheduler of every path device (none, mq-deadline); TOPO resets it
#   TRACE 1|2|0                      1: count block tracepoints per device (hist triggers) in the following runs;
#                                    2: record every path request's issue and completion and (bio-based) every
#                                    clone's remap onto its path (trace_events.gz: "<seconds> i|c|m <major,minor>
#                                    <sector> <cpu> <flags> <task-pid>", seconds of CLOCK_MONOTONIC; the flags
#                                    are ftrace's irq-info: h in a hardirq, s in a softirq; boots before 12-06
#                                    19:44 UTC wrote the first four fields only)
#   FIO <options...>                 extra fio options for the following runs (FIO alone clears them)
#   FEAT <feature words...>          multipath table features of the following runs, e.g. queue_if_no_path
#   FAULT <name> <step>,<step>,...   fault schedule of the following runs (FAULT alone clears it); a step is
#                                    <ms after fio starts>/<action>[/<label>[/<arg>]], actions: offline, running
#                                    (scsi device state), delete (scsi device), poweroff (null_blk), delay (dm-delay
#                                    path: new delay in ms), fail, reinstate (dmsetup message <path>),
#                                    fail_if_no_path, queue_if_no_path (dmsetup message). A fault run logs every
#                                    I/O's completion (fio clat log, CLOCK_MONOTONIC ms), the steps with their
#                                    CLOCK_MONOTONIC ns in /out/runs/<name>/faults with dmsetup status, the
#                                    paths' stat and SCSI counters after each step; the topology is rebuilt after it
#   RUN <name> <selector> <bio|mq> <iodepth> <runtime_s> [<#selector_args> <args>...]
#   SH <command>
# Per run, /out/runs/<name>/ gets: meta (run, kernel, the current topology's paths), table, stat_before/after
# (paths and dm: "dev <stat fields>"), cpu_before/after (/proc/stat "cpu" lines), queue (scheduler,
# nr_requests, hw tags per device), dbg_before/after (blk-mq debugfs counters), samples (inflight and
# dmsetup status every 2 s during fio), status_end, fio.json, trace_hist when tracing, scsi_before/after
# ("label iorequest_cnt iodone_cnt ioerr_cnt" of each SCSI path, hex as sysfs prints them).
C=/sys/kernel/config/nullb
modprobe null_blk nr_devices=0 || echo "null_blk load failed"
# dm-delay paths: the guest has no /sbin/modprobe for the kernel to load a target type on demand
modprobe dm-delay || echo "dm-delay load failed"
DEVS=""; DM=""; TOPO=none; FIOX=""; SCHEDX=default; TRACE=0; FEATX=""; FAULTX=""; FAULTN=""
TR=/sys/kernel/tracing
mount -t tracefs nodev $TR 2>/dev/null
mount -t debugfs none /sys/kernel/debug 2>/dev/null
EVS="block_rq_issue block_rq_requeue block_rq_insert block_rq_complete block_getrq"
# hist triggers keyed by dev: per-device event counts at little cost (no trace buffer)
trace_on() { for e in $EVS; do echo 'hist:keys=dev' > "$TR/events/block/$e/trigger"; done; }
trace_read() { for e in $EVS; do grep hitcount "$TR/events/block/$e/hist" | sed "s/^/$e /"; done; }
trace_off() { for e in $EVS; do echo '!hist:keys=dev' > "$TR/events/block/$e/trigger"; done; }
# TRACE 2: the issue and completion of every request (the trace buffer, 16 MB per CPU), compacted after the run
EVR="block_rq_issue block_rq_complete block_bio_remap"
# (trace clock "mono": ktime_get_ns's clock, the one HST's stale_after and last completion are kept in)
events_on() { echo mono > "$TR/trace_clock"; echo 16384 > "$TR/buffer_size_kb"; echo > "$TR/trace"; for e in $EVR; do echo 1 > "$TR/events/block/$e/enable"; done; }
events_read() {
  for e in $EVR; do echo 0 > "$TR/events/block/$e/enable"; done
  # "<task> [cpu] flags <seconds>: block_rq_issue: <maj,min> <rwbs> <bytes> () <sector> + <n> [comm]"; complete
  # has no byte count (the sector is the field after "()"); bio-based dm's remap of a clone onto its path (right
  # after the selector chose it): "block_bio_remap: <maj,min> <rwbs> <sector> + <n> <- (<dm maj,min>) <sector>"
  # (which vCPU and context each event ran in: are late timers on the vCPU fio runs on?)
  awk '/block_(rq_issue|rq_complete|bio_remap):/ { for (i = 1; i <= NF; i++) if ($i ~ /^block_/) break
         t = $(i - 1); sub(/:$/, "", t)
         for (k = i - 2; k > 0; k--) if ($k ~ /^\[[0-9]+\]$/) break
         # no [cpu] field found: the line keeps its first four fields only, as hsttrace.py reads either
         ctx = (k > 0) ? " " (substr($k, 2, length($k) - 2) + 0) " " ((k < i - 2) ? $(k + 1) : "-") " " $1 : ""
         if ($i ~ /remap/) { print t, "m", $(i + 1), $(i + 3) ctx; next }
         for (j = i + 1; j <= NF; j++) if ($j == "()") break
         print t, ($i ~ /issue/) ? "i" : "c", $(i + 1), $(j + 1) ctx }' "$TR/trace" | gzip > "$1/trace_events.gz"
  cat "$TR"/per_cpu/cpu*/stats | grep overrun > "$1/trace_overrun"
  echo > "$TR/trace"
}
uname -a > /out/uname.txt
KREL=$(uname -r)

# a path's block device: its label for null_blk, the sdX that scsi_debug made for a scsi path (/tmp/blk.<label>)
# (sets BLK without a subshell: the sampler calls it while fio runs)
blk() { BLK=$1; if [ -f "/tmp/blk.$1" ]; then read -r BLK < "/tmp/blk.$1"; fi; }
topo_down() {
  for b in $DEVS; do
    if [ -f "/tmp/delay.$b" ]; then
      dmsetup remove "$b"; echo 0 > "$C/${b}n/power"; rmdir "$C/${b}n"; rm "/tmp/delay.$b" "/tmp/blk.$b"
    elif [ -f "/tmp/blk.$b" ]; then rm "/tmp/blk.$b" "/tmp/scsi.$b"
    else echo 0 > "$C/$b/power"; rmdir "$C/$b"; fi
  done
  if [ -d /sys/module/scsi_debug ]; then rmmod scsi_debug || echo "scsi_debug unload failed"; fi
  DEVS=""
  : > /tmp/paths_now
}
# the scsi lines of a topology: one scsi_debug load with as many hosts as named and as many targets per host as
# the busiest one; then label -> sdX of adapter<host>, target <k-th path of that host>
scsi_up() {
  nd=""; cq=""; nh=0; nt=0; : > /tmp/scsi_lines; : > /tmp/scsi_lines.k
  while read -r label nsec qd kind host canq; do
    [ "$kind" = scsi ] || continue
    [ -z "$nd" ] || [ "$nd" = "$nsec" ] || { echo "topology $1: scsi paths with different ndelay"; return 1; }
    [ -z "$cq" ] || [ "$cq" = "${canq:-192}" ] || { echo "topology $1: scsi paths with different can_queue"; return 1; }
    nd=$nsec; cq=${canq:-192}
    [ "$host" -lt "$nh" ] || nh=$((host + 1))
    k=$(grep -c " scsi $host\$" /tmp/scsi_lines)
    echo "$label $host $k" >> /tmp/scsi_lines.k
    echo "$label scsi $host" >> /tmp/scsi_lines
    [ "$k" -lt "$nt" ] || nt=$((k + 1))
  done < "/exp/topo/$1.txt"
  [ -n "$nd" ] || return 0
  # no udev in the guest: sd (the disk driver the scanned LUNs bind to) is loaded by hand
  modprobe sd_mod || { echo "sd_mod load failed"; return 1; }
  modprobe scsi_debug add_host="$nh" num_tgts="$nt" max_luns=1 vpd_use_hostno=0 ndelay="$nd" max_queue="$cq" \
    dev_size_mb=64 virtual_gb=2 || { echo "scsi_debug load failed"; return 1; }
  # the hosts took can_queue from max_queue; 6.1 also checks max_queue against one command array shared by all
  # hosts (TASK SET FULL beyond it), so it is raised to scsi_debug's maximum once they exist (6.12 refuses the
  # change with hosts present and keeps the limit per host's tag set alone)
  echo 192 > /sys/bus/pseudo/drivers/scsi_debug/max_queue 2>/dev/null || true
  while read -r label host k; do
    b=""; n=0
    while [ -z "$b" ] && [ $n -lt 50 ]; do   # the SCSI scan is asynchronous
      for x in "/sys/bus/pseudo/drivers/scsi_debug/adapter$host"/host*/target*:"$k"/*:"$k":0/block/*; do
        [ -e "$x" ] && b=${x##*/}
      done
      [ -n "$b" ] || { sleep 0.2; n=$((n + 1)); }
    done
    [ -n "$b" ] || { echo "topology $1: no block device for $label (host $host, target $k)"; return 1; }
    echo "$b" > "/tmp/blk.$label"; : > "/tmp/scsi.$label"
  done < /tmp/scsi_lines.k
  rm -f /tmp/scsi_lines /tmp/scsi_lines.k
}
# every build of a topology is logged in /out/paths_map.txt; the current one alone is in /tmp/paths_now
topo_up() {
  TOPO=$1
  rm -f /tmp/scsi_lines /tmp/scsi_lines.k
  scsi_up "$1" || return 1
  while read -r label nsec qd kind host _; do
    case "$label" in ''|'#'*) continue;; esac
    if [ "$kind" = scsi ]; then
      b=$(cat "/tmp/blk.$label"); sd=/sys/block/$b/device
      echo "$qd" > "$sd/queue_depth"
      # sd gives a single-queue LUN mq-deadline; the paths here run without a scheduler, as null_blk's do
      # (request-based dm issues its clones directly anyway; SCHED after TOPO changes it)
      echo none > "/sys/block/$b/queue/scheduler"
      DEVS="$DEVS $label"
      for sh_ in "/sys/bus/pseudo/drivers/scsi_debug/adapter$host"/host*; do break; done
      echo "$TOPO $label $(cat "/sys/block/$b/dev") completion_nsec=$(cat /sys/module/scsi_debug/parameters/ndelay)" \
           "hw_queue_depth=$(cat "$sd/queue_depth") submit_queues=1 kind=scsi host=$host" \
           "can_queue=$(cat "/sys/class/scsi_host/${sh_##*/}/can_queue") block=$b" \
           "driver_max_queue=$(cat /sys/bus/pseudo/drivers/scsi_debug/max_queue)" >> /tmp/paths_now
      continue
    fi
    if [ "$kind" = delay ]; then   # "host" is the dm-delay device's delay in ms here
      d=$C/${label}n; mkdir "$d"
      echo 2 > "$d/irqmode"; echo "$nsec" > "$d/completion_nsec"; echo 2048 > "$d/size"
      echo "$qd" > "$d/hw_queue_depth"; echo 2 > "$d/queue_mode"; echo 1 > "$d/power"
      dmsetup create "$label" --table "0 $(blockdev --getsz "/dev/${label}n") delay /dev/${label}n 0 $host" \
        || { echo "topology $1: dm-delay $label failed"; return 1; }
      echo "dm-$(dmsetup info -c --noheadings -o minor "$label" | tr -d ' ')" > "/tmp/blk.$label"
      echo "$host" > "/tmp/delay.$label"
      DEVS="$DEVS $label"
      echo "$TOPO $label $(cat "/sys/block/$(cat "/tmp/blk.$label")/dev") completion_nsec=$(cat "$d/completion_nsec")" \
           "hw_queue_depth=$(cat "$d/hw_queue_depth") submit_queues=$(cat "$d/submit_queues") kind=delay" \
           "delay_ms=$host" >> /tmp/paths_now
      continue
    fi
    [ -n "$qd" ] || qd=256
    d=$C/$label; mkdir "$d"
    echo 2 > "$d/irqmode"; echo "$nsec" > "$d/completion_nsec"; echo 2048 > "$d/size"
    echo "$qd" > "$d/hw_queue_depth"; echo 2 > "$d/queue_mode"; echo 1 > "$d/power"
    DEVS="$DEVS $label"
    echo "$TOPO $label $(cat "/sys/block/$label/dev") completion_nsec=$(cat "$d/completion_nsec")" \
         "hw_queue_depth=$(cat "$d/hw_queue_depth") submit_queues=$(cat "$d/submit_queues")" >> /tmp/paths_now
  done < "/exp/topo/$1.txt"
  cat /tmp/paths_now >> /out/paths_map.txt
}
# "dev f1..f17" for every path and the dm device
# (a path deleted or powered off by a fault has no stat file: its line is left out)
snap() { for b in $DEVS $DM; do blk "$b"; [ -f "/sys/block/$BLK/stat" ] && echo "$b $(cat "/sys/block/$BLK/stat")"; done; }
# SCSI paths' midlayer counters: commands sent to the LLD, completed, completed with an error
scsicnt() {
  for b in $DEVS; do
    [ -f "/tmp/scsi.$b" ] || continue
    blk "$b"; sd=/sys/block/$BLK/device
    [ -f "$sd/iodone_cnt" ] && echo "$b $(cat "$sd/iorequest_cnt") $(cat "$sd/iodone_cnt") $(cat "$sd/ioerr_cnt")"
  done
}
# CLOCK_MONOTONIC in ns (ktime_get: /proc/timer_list's third line) into MONO, without a fork (busybox date
# has no %N)
mono_ns() { { read -r _; read -r _; read -r _ _ MONO _; } < /proc/timer_list; }
# runs a fault schedule ($2) against the paths while fio runs; the schedule's clock starts at the first write
# the dm device completes (fio takes a second or more to start under emulation). Steps of the same time run
# back to back, then dmsetup status; the paths' stat lines and SCSI counters are taken once shortly before the
# first step (PRE) and once after the last (POST): what a path deleted or powered off had done stays in PRE.
faulter() {
  blk "$DM"; n=0
  while [ $n -lt 2000 ]; do
    read -r _ _ _ _ w _ < "/sys/block/$BLK/stat"
    [ "$w" -gt 0 ] && break
    usleep 5000; n=$((n + 1))
  done
  mono_ns; t0=$MONO
  steps=$(echo "$2" | tr ',' ' ')
  # shellcheck disable=SC2086  # one word per step
  set -- $steps
  echo "T0 $t0"
  # PRE 100 ms before the first step (reading the counters takes tens of ms under emulation)
  mono_ns; w=$(( (t0 + ${1%%/*} * 1000000 - 100000000 - MONO) / 1000 ))
  [ "$w" -le 0 ] || usleep "$w"
  mono_ns; echo "PRE $MONO"; snap | sed 's/^/D /'; scsicnt | sed 's/^/C /'
  while [ $# -gt 0 ]; do
    step=$1; shift
    at=${step%%/*}; r=${step#*/}; act=${r%%/*}; r=${r#"$act"}; r=${r#/}; tgt=${r%%/*}; arg=${r#"$tgt"}; arg=${arg#/}
    mono_ns; w=$(( (t0 + at * 1000000 - MONO) / 1000 ))
    [ "$w" -le 0 ] || usleep "$w"
    [ -z "$tgt" ] || blk "$tgt"
    mono_ns; a=$MONO
    case $act in
      offline|running) echo "$act" > "/sys/block/$BLK/device/state";;
      delete) echo 1 > "/sys/block/$BLK/device/delete";;
      poweroff) echo 0 > "$C/$tgt/power";;
      delay) dmsetup suspend "$tgt" && dmsetup reload "$tgt" --table \
               "0 $(blockdev --getsz "/dev/${tgt}n") delay /dev/${tgt}n 0 $arg" && dmsetup resume "$tgt";;
      fail|reinstate) dmsetup message mp 0 "${act}_path" "$(cat "/tmp/dev.$tgt")";;
      fail_if_no_path|queue_if_no_path) dmsetup message mp 0 "$act";;
      *) false;;
    esac
    rc=$?
    mono_ns
    echo "STEP $a $MONO $at $act ${tgt:--} ${arg:--} rc=$rc"
    # the status once the steps of this time are done
    [ $# -gt 0 ] && [ "${1%%/*}" = "$at" ] || echo "S $(dmsetup status mp)"
  done
  mono_ns; echo "POST $MONO"; snap | sed 's/^/D /'; scsicnt | sed 's/^/C /'
} >> "$1/faults" 2>&1
# blk-mq debugfs counters: per hw queue runs, requests queued, dispatch batch histogram; per sw queue (CPU)
# requests dispatched/completed. "file value value ..." per line.
dbg() {
  for b in $DEVS $DM; do
    blk "$b"; k=/sys/kernel/debug/block/$BLK
    for f in "$k"/hctx*/run "$k"/hctx*/queued "$k"/hctx*/dispatched "$k"/hctx*/cpu*/dispatched \
             "$k"/hctx*/cpu*/completed; do
      [ -f "$f" ] && echo "$b/${f#"$k"/} $(tr '\n\t' '  ' < "$f")"
    done
  done
}
# a bio-based dm device has no scheduler and (6.12) no nr_requests value: those fields are then empty
queueinfo() {
  for b in $DEVS $DM; do
    blk "$b"; d=$BLK; q=/sys/block/$d/queue
    nhw=0; for h in "/sys/block/$d/mq"/*; do [ -d "$h" ] && nhw=$((nhw + 1)); done
    echo "$b scheduler=[$(sed 's/.*\[\(.*\)\].*/\1/' "$q/scheduler" 2>/dev/null)]" \
         "nr_requests=$(cat "$q/nr_requests" 2>/dev/null) nr_hw_queues=$nhw" \
         "hw_tags=$(cat "/sys/block/$d/mq/0/nr_tags" 2>/dev/null)" \
         "hw_reserved=$(cat "/sys/block/$d/mq/0/nr_reserved_tags" 2>/dev/null)" \
         "max_sectors_kb=$(cat "$q/max_sectors_kb") nomerges=$(cat "$q/nomerges") rq_affinity=$(cat "$q/rq_affinity")"
  done
}
sampler() {  # $1 = run dir, $2 = runtime; samples every 2 s while fio runs
  n=0
  while [ $n -lt $(( ($2 - 1) / 2 )) ]; do
    sleep 2; n=$((n + 1))
    echo "T $(cut -d' ' -f1 /proc/uptime)"
    for b in $DEVS $DM; do blk "$b"; echo "I $b $(cat "/sys/block/$BLK/inflight")"; done
    echo "S $(dmsetup status mp)"
  done > "$1/samples"
}

while read -r kind name sel qmode depth rt rest; do
  case "$kind" in
    TOPO) topo_down; topo_up "$name"; SCHEDX=default; continue;;
    SCHED) for b in $DEVS; do blk "$b"; echo "$name" > "/sys/block/$BLK/queue/scheduler"; done; SCHEDX=$name; continue;;
    TRACE) TRACE=$name; continue;;
    FEAT) FEATX=$(echo "$name $sel $qmode $depth $rt $rest" | tr -s ' ' | sed 's/^ //; s/ $//'); continue;;
    FAULT) FAULTN=$name; FAULTX=$sel; continue;;
    FIO) FIOX=$(echo "$name $sel $qmode $depth $rt $rest" | tr -s ' ' | sed 's/^ //; s/ $//'); continue;;
    SH) sh -c "$name $sel $qmode $depth $rt $rest" >> /out/sh.log 2>&1; echo "SH rc=$?" >> /out/sh.log; continue;;
    RUN) ;;
    *) continue;;
  esac
  o=/out/runs/$name; mkdir -p "$o"
  sargs=${rest:-0}
  paths=""; N=0; first=""
  for b in $DEVS; do
    blk "$b"; cat "/sys/block/$BLK/dev" > "/tmp/dev.$b"
    paths="$paths $(cat "/sys/block/$BLK/dev") 1"; N=$((N + 1)); first=${first:-$BLK}
  done
  fw="$FEATX"; [ "$qmode" = bio ] && fw="$fw queue_mode bio"
  # shellcheck disable=SC2086  # the feature words are counted one by one
  set -- $fw; feat="$# $fw"
  T="0 $(blockdev --getsz "/dev/$first") multipath $feat 0 1 1 $sel $sargs $N 1$paths"
  {
    echo "topo=$TOPO name=$name selector=$sel queue_mode=$qmode iodepth=$depth runtime=$rt selector_args=$sargs path_scheduler=$SCHEDX"
    echo "fio_extra=$FIOX"
    echo "features=$FEATX"
    echo "fault=$FAULTN $FAULTX"
    echo "trace=$TRACE"
    echo "kernel=$KREL"
    cat /tmp/paths_now
  } > "$o/meta"
  DM=""
  dmsetup create mp --table "$T" > "$o/create.out" 2>&1 || { echo "create failed: $(cat "$o/create.out")"; continue; }
  DM=dm-$(dmsetup info -c --noheadings -o minor mp | tr -d ' ')
  { echo "dm=$DM"; echo "dmdev=$(cat "/sys/block/$DM/dev")"; } >> "$o/meta"
  dmsetup table mp > "$o/table"
  queueinfo > "$o/queue"
  snap > "$o/stat_before"; grep '^cpu' /proc/stat > "$o/cpu_before"; dbg > "$o/dbg_before"; scsicnt > "$o/scsi_before"
  t0=$(cut -d' ' -f1 /proc/uptime)
  [ "$TRACE" = 1 ] && trace_on
  [ "$TRACE" = 2 ] && events_on
  sampler "$o" "$rt" &
  SP=$!
  FL=""; FP=""; WP=""
  if [ -n "$FAULTX" ]; then
    # I/O errors go to the serial console, which is slow under emulation: errors only to the kernel log
    echo 1 > /proc/sys/kernel/printk
    # every I/O's completion time on CLOCK_MONOTONIC (clock id 1), the clock of the fault steps
    FL="--write_lat_log=$o/io --log_avg_msec=0 --log_alternate_epoch=1 --log_alternate_epoch_clock_id=1"
    FL="$FL --clocksource=clock_gettime --continue_on_error=all"
    faulter "$o" "$FAULTX" &
    FP=$!
    # a schedule that leaves I/O queued with no path must not hang the boot: stop queueing after the run
    (sleep $((rt + 15)); dmsetup message mp 0 fail_if_no_path) > /dev/null 2>&1 &
    WP=$!
  fi
  # shellcheck disable=SC2086  # FIOX holds several fio options
  fio --name="$name" --filename=/dev/mapper/mp --ioengine=libaio --direct=1 --rw=randwrite --bs=4k \
      --iodepth="$depth" --runtime="$rt" --time_based --size=1800M --randrepeat=0 \
      --group_reporting $FIOX $FL --output-format=json --output="$o/fio.json" > "$o/fio.stderr" 2>&1
  t1=$(cut -d' ' -f1 /proc/uptime)
  [ -z "$FP" ] || wait "$FP"
  [ -z "$WP" ] || { kill "$WP" 2>/dev/null; echo 4 > /proc/sys/kernel/printk; }
  [ "$TRACE" = 1 ] && { trace_read > "$o/trace_hist"; trace_off; }
  [ "$TRACE" = 2 ] && events_read "$o"
  snap > "$o/stat_after"; grep '^cpu' /proc/stat > "$o/cpu_after"; dbg > "$o/dbg_after"; scsicnt > "$o/scsi_after"
  wait $SP
  dmsetup status mp > "$o/status_end"
  dmsetup remove mp
  echo "$t0 $t1" > "$o/uptime"
  echo "run $name done ($t0 -> $t1): $(paste "$o/stat_before" "$o/stat_after" | awk '{printf "%s:%d ", $1, $(NF/2+6)-$6}')"
  DM=""
  # a fault leaves paths offline, deleted or powered off: the next run gets the topology afresh
  if [ -n "$FAULTX" ]; then topo_down; topo_up "$TOPO"; fi
done < /exp/runs.txt
topo_down
dmesg | tail -n 50 > /out/dmesg_tail.txt
