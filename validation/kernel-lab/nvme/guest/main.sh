#!/bin/sh
# Guest side of the NVMe lab (busybox sh, run as /exp/main.sh with cwd /out by the lab's /init).
# For each line of /exp/cells.txt:
#   NAME TRANSPORT DELAYS_US ANA_STATES IOPOLICY IODEPTH RUNTIME_S EVENT EVENT_AT_S [OPTS]
# (DELAYS_US and ANA_STATES comma-separated, one per port; EVENT none | ana:PORT:STATE | rmport:PORT;
# OPTS comma-separated: trace = the transition is timed from the kernel's nvme_complete_rq tracepoint and
# nothing but fio runs in the guest from half a second before the event to 1.5 s after it;
# ffail0 = connect with fast_io_fail_tmo=0; reqtrace = each I/O's time from the driver's command setup to
# its completion, per controller (nvme_setup_cmd to nvme_complete_rq), over the whole run)
# it builds one nvmet subsystem with a null_blk namespace exported through one port per path, connects
# the host to every port (native multipath: one head, one controller per port), delays the commands
# sent to a port by its netem delay (TCP only), runs fio on the head and writes /out/cells/NAME/.
export PATH=/bin:/sbin
# (/bin/tc by its path: busybox sh runs its own tc applet before a tc in PATH)
CFG=/sys/kernel/config/nvmet
NQN=klab-nvme
modprobe null_blk nr_devices=1 irqmode=0 queue_mode=2 hw_queue_depth=1024 gb=16 bs=4096 || echo "KLAB: null_blk FAILED"
for m in nvme_core nvme_fabrics nvmet nvmet_tcp nvme_tcp nvme_loop sch_prio sch_netem cls_u32; do
  modprobe $m 2>/dev/null || echo "KLAB: modprobe $m: not available"
done
ip link set lo up
TR=/sys/kernel/tracing
mount -t tracefs nodev $TR 2>/dev/null || echo "KLAB: tracefs not mounted"
echo "nvme_core.multipath=$(cat /sys/module/nvme_core/parameters/multipath)" > /out/kernel.txt
uname -r >> /out/kernel.txt

# controllers (nvmeN) of our subsystem, in instance order
our_ctrls() {
  for c in /sys/class/nvme/nvme*; do
    [ -e "$c/subsysnqn" ] && [ "$(cat $c/subsysnqn)" = "$NQN" ] && basename $c
  done
}

port_of_ctrl() {   # TRANSPORT CTRL -> the port number the controller connected to
  a=$(cat /sys/class/nvme/$2/address)
  if [ "$1" = tcp ]; then echo "$a" | sed -n 's/.*trsvcid=44\([0-9][0-9]\).*/\1/p' | sed 's/^0//'
  else echo "$a" | sed -n 's/.*traddr=\([0-9]*\).*/\1/p'; fi
}

snap() {   # FILE: uptime, then per port: port ctrl pathdisk reads_completed sectors_read state ana_state
  { cat /proc/uptime
    while read port ctrl disk; do
      st=$(cat /sys/class/nvme/$ctrl/state 2>/dev/null || echo gone)
      ana=$(cat /sys/class/nvme/$ctrl/$disk/ana_state 2>/dev/null || echo -)
      set -- $(cat /sys/class/nvme/$ctrl/$disk/stat 2>/dev/null || echo 0 0 0)
      echo "$port $ctrl $disk $1 $3 $st $ana"
    done < map.txt; } > "$1"
}

reads_done() {   # reads completed on every path so far
  while read port ctrl disk; do cat /sys/class/nvme/$ctrl/$disk/stat 2>/dev/null || echo 0; done < map.txt \
    | awk '{ n += $1 } END { print n }'
}

teardown() {
  for c in $(our_ctrls); do echo 1 > /sys/class/nvme/$c/delete_controller 2>/dev/null; done
  sleep 1
  /bin/tc qdisc del dev lo root 2>/dev/null
  for p in $CFG/ports/*; do
    [ -d "$p" ] || continue
    rm -f $p/subsystems/$NQN 2>/dev/null
    rmdir $p 2>/dev/null || echo "KLAB: rmdir $p failed"
  done
  if [ -d $CFG/subsystems/$NQN ]; then
    echo 0 > $CFG/subsystems/$NQN/namespaces/1/enable
    rmdir $CFG/subsystems/$NQN/namespaces/1
    rmdir $CFG/subsystems/$NQN
  fi
}

mkdir -p /out/cells
while read name transport delays anas iopolicy iodepth runtime event event_at opts; do
  case "$name" in ''|\#*) continue;; esac
  D=/out/cells/$name; mkdir -p $D; cd $D
  echo "== cell $name $transport $delays $anas $iopolicy d$iodepth ${runtime}s $event@$event_at"
  S=$CFG/subsystems/$NQN
  mkdir $S && echo 1 > $S/attr_allow_any_host
  mkdir $S/namespaces/1 && echo -n /dev/nullb0 > $S/namespaces/1/device_path && echo 1 > $S/namespaces/1/enable
  n=$(echo $delays | tr ',' ' ' | wc -w)
  if [ "$transport" = tcp ] && [ "$delays" != "$(echo $delays | sed 's/[1-9]//g')" ]; then
    pm="0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0"
    /bin/tc qdisc add dev lo root handle 1: prio bands $((n + 1)) priomap $pm || echo "KLAB: tc prio FAILED"
  fi
  i=1
  for d in $(echo $delays | tr ',' ' '); do
    ana=$(echo $anas | cut -d, -f$i)
    P=$CFG/ports/$i; mkdir $P
    if [ "$transport" = tcp ]; then
      echo tcp > $P/addr_trtype; echo ipv4 > $P/addr_adrfam; echo 127.0.0.1 > $P/addr_traddr
      echo $((4400 + i)) > $P/addr_trsvcid
      if [ "$d" != 0 ]; then
        /bin/tc qdisc add dev lo parent 1:$((i + 1)) handle $((i + 10)): netem delay ${d}us limit 10000 \
          || echo "KLAB: netem FAILED"
        /bin/tc filter add dev lo parent 1: protocol ip prio 1 u32 match ip dport $((4400 + i)) 0xffff \
          flowid 1:$((i + 1)) || echo "KLAB: filter FAILED"
      fi
    else
      echo loop > $P/addr_trtype; echo $i > $P/addr_traddr
    fi
    echo $ana > $P/ana_groups/1/ana_state
    ln -s $S $P/subsystems/$NQN
    i=$((i + 1))
  done
  i=1
  for d in $(echo $delays | tr ',' ' '); do
    if [ "$transport" = tcp ]; then o="transport=tcp,traddr=127.0.0.1,trsvcid=$((4400 + i)),nqn=$NQN"
    else o="transport=loop,traddr=$i,nqn=$NQN"; fi
    case ",$opts," in *,ffail0,*) o="$o,fast_io_fail_tmo=0";; esac
    echo "$o" > /dev/nvme-fabrics || echo "KLAB: connect $o FAILED"
    i=$((i + 1))
  done
  sleep 1
  : > map.txt
  for c in $(our_ctrls); do
    disk=$(ls /sys/class/nvme/$c | grep -E '^nvme[0-9]+c[0-9]+n1$' | head -n 1)
    echo "$(port_of_ctrl $transport $c) $c $disk" >> map.txt
  done
  sort -n map.txt -o map.txt
  SUB=$(ls -d /sys/class/nvme-subsystem/nvme-subsys* | while read s; do
          [ "$(cat $s/subsysnqn)" = "$NQN" ] && basename $s; done)
  HEAD=$(ls /sys/class/nvme-subsystem/$SUB | grep -E '^nvme[0-9]+n1$' | head -n 1)
  echo $iopolicy > /sys/class/nvme-subsystem/$SUB/iopolicy || echo "KLAB: iopolicy $iopolicy FAILED"
  echo "head=$HEAD subsys=$SUB iopolicy=$(cat /sys/class/nvme-subsystem/$SUB/iopolicy)" > head.txt
  cat map.txt >> head.txt
  snap stat.pre
  lat=""
  tracing=""
  case ",$opts," in *,trace,*) [ -w $TR/trace_marker ] && tracing=1;; esac
  reqtrace=""
  case ",$opts," in *,reqtrace,*) [ -w $TR/trace_marker ] && reqtrace=1;; esac
  if [ -n "$tracing$reqtrace" ]; then
    echo 0 > $TR/tracing_on; echo 16384 > $TR/buffer_size_kb; echo > $TR/trace
    echo 1 > $TR/events/nvme/nvme_complete_rq/enable
    [ -n "$reqtrace" ] && echo 1 > $TR/events/nvme/nvme_setup_cmd/enable
    echo 1 > $TR/tracing_on
  fi
  if [ "$event" != none ]; then
    lat="--write_lat_log=lat --log_avg_msec=0 --log_unix_epoch=1"
    # the event comes EVENT_AT seconds after fio's first I/O completed (fio takes a second or two to
    # start under TCG): polled on the paths' read counts
    ( r0=$(reads_done)
      while [ "$(reads_done)" = "$r0" ]; do sleep 0.05; done
      if [ -n "$tracing" ]; then
        # the snapshot, the clock and the sleep (forks) end half a second before the event; the marker
        # ties the tracing clock to the wall clock, which fio's log uses
        sleep $(awk -v a=$event_at 'BEGIN { print a - 0.5 }')
        snap stat.ev
        adjtimex | sed -n 's/.*time.tv_\(sec\|usec\): *//p' | tr '\n' ' ' > sync.txt
        echo "KLAB-SYNC" > $TR/trace_marker
        sleep 0.5
        echo "KLAB-EVENT $event" > $TR/trace_marker; echo "KLAB-EVENT $name $event" > /dev/kmsg
      else
        sleep $event_at
        snap stat.ev
        adjtimex | sed -n 's/.*time.tv_\(sec\|usec\): *//p' | tr '\n' ' ' > event.txt
      fi
      case $event in
        ana:*) p=$(echo $event | cut -d: -f2); st=$(echo $event | cut -d: -f3)
               echo $st > $CFG/ports/$p/ana_groups/1/ana_state;;
        rmport:*) p=$(echo $event | cut -d: -f2); rm $CFG/ports/$p/subsystems/$NQN;;
      esac
      [ -n "$tracing" ] && sleep 1.5
      echo "$event" >> event.txt
      snap stat.ev2 ) &
  fi
  # the started requests on each path (/sys/block/X/inflight: reads, writes) twice a second (not while
  # a transition is traced: the reads fork)
  [ -z "$tracing" ] && ( k=0; while [ $k -lt $((runtime * 2 - 1)) ]; do
      sleep 0.5; k=$((k + 1))
      while read port ctrl disk; do
        echo "$k $port $(cat /sys/class/nvme/$ctrl/$disk/inflight 2>/dev/null)"
      done < map.txt
    done > inflight.txt ) &
  fio --name=c --filename=/dev/$HEAD --ioengine=libaio --direct=1 --rw=randread --bs=4k --iodepth=$iodepth \
      --runtime=$runtime --time_based --continue_on_error=all --output-format=json --output=fio.json $lat \
      > fio.stdout 2>&1
  wait
  if [ -n "$reqtrace" ]; then
    # "ctrl microseconds" per I/O command: setup (queue_rq) to completion, matched on ctrl, queue, command id
    echo 0 > $TR/tracing_on; echo 0 > $TR/events/nvme/nvme_setup_cmd/enable
    echo 0 > $TR/events/nvme/nvme_complete_rq/enable
    awk '/ nvme_setup_cmd: | nvme_complete_rq: / {
           for (i = 1; i <= NF; i++) { if ($i ~ /^[0-9]+\.[0-9]+:$/) t = $i + 0; if ($i ~ /^nvme[0-9]+:$/) c = $i;
                                      if ($i ~ /^qid=/) q = $i; if ($i ~ /^cmdid=/) id = $i }
           if (q == "qid=0,") next
           k = c q id
           if ($0 ~ / nvme_setup_cmd: /) s[k] = t
           else if (k in s) { printf "%s %d\n", c, (t - s[k]) * 1e6; delete s[k] } }' $TR/trace > reqtime.txt
    echo > $TR/trace
  fi
  if [ -n "$tracing" ]; then
    # the completions from 1 s before the event to 1.5 s after it, as "seconds ctrl qid status", and
    # the markers and the kernel's messages from the event on
    echo 0 > $TR/tracing_on; echo 0 > $TR/events/nvme/nvme_complete_rq/enable
    awk '/KLAB-SYNC|KLAB-EVENT/ { for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+\.[0-9]+:$/) t = $i + 0;
                                  printf "%.6f mark %s\n", t, $NF; next }
         / nvme_complete_rq: / { for (i = 1; i <= NF; i++) { if ($i ~ /^[0-9]+\.[0-9]+:$/) t = $i + 0;
                                   if ($i ~ /^nvme[0-9]+:$/) c = $i; if ($i ~ /^qid=/) q = $i;
                                   if ($i ~ /^status=/) st = $i }
                                 printf "%.6f %s %s %s\n", t, c, q, st }' $TR/trace > trace.all
    ev=$(awk '$2 == "mark" && $3 ~ /:/ { print $1; exit }' trace.all)
    [ -n "$ev" ] && awk -v e=$ev '$1 >= e - 1 && $1 <= e + 1.5' trace.all > trace.txt
    rm -f trace.all; echo > $TR/trace
    dmesg | sed -n "/KLAB-EVENT $name /,\$p" | grep -iE 'KLAB|nvme' > dmesg.event
  fi
  snap stat.post
  dmesg | grep -iE 'nvme|nvmet' | tail -n 30 > dmesg.tail
  cd /out
  teardown
done < /exp/cells.txt
echo "KLAB-NVME done"
