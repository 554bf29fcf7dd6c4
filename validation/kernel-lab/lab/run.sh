#!/bin/bash
# Boots the lab's kernel in qemu once and runs one experiment in the guest.
#
#   run.sh EXPDIR OUTDIR [extra qemu arguments...]
#
# EXPDIR holds main.sh (run in the guest as /exp/main.sh, cwd /out) and whatever it reads; everything the guest
# writes under /out comes back to OUTDIR, with the serial console in OUTDIR/console.log.
# Environment: KLAB_DIR (the lab setup.sh made; default klab-$KLAB_KERNEL in $TMPDIR or /tmp),
# KLAB_MEM (default 4G), KLAB_SMP (guest CPUs, default 2), KLAB_TIMEOUT (seconds, default 1500),
# KLAB_APPEND (extra guest kernel command line), KLAB_ACCEL (tcg, the default; icount, the deterministic lab,
# with KLAB_SMP=1 and KLAB_ICOUNT_SHIFT, default 0; or kvm).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 2 ] || { echo "usage: run.sh EXPDIR OUTDIR [qemu arguments...]" >&2; exit 3; }
[ -f "$1/main.sh" ] || { echo "run.sh: $1/main.sh: no such file" >&2; exit 3; }
EXP=$(cd "$1" && pwd); OUT=$2; shift 2
KL=${KLAB_DIR:-${TMPDIR:-/tmp}/klab-${KLAB_KERNEL:-6.1}}
[ -d "$KL/base" ] || { echo "run.sh: no lab in $KL: run setup.sh first (or set KLAB_DIR)" >&2; exit 3; }
K=$(cat "$KL/kernel-release")
mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
W=$(mktemp -d "$KL/run.XXXXXX")
trap 'rm -rf "$W"' EXIT

# the base archive is cached and rebuilt when /init or the tree is newer
BCPIO=$KL/base.cpio
if [ ! -f "$BCPIO" ] || [ "$HERE/init" -nt "$BCPIO" ] || [ "$KL/base" -nt "$BCPIO" ]; then
  cp "$HERE/init" "$KL/base/init"; chmod +x "$KL/base/init"
  (cd "$KL/base" && find . | cpio -o -H newc --quiet > "$BCPIO")
fi
mkdir -p "$W/root/exp"; cp -r "$EXP/." "$W/root/exp/"
(cd "$W/root" && find . | cpio -o -H newc --quiet > "$W/exp.cpio")
cat "$BCPIO" "$W/exp.cpio" > "$W/initrd.cpio"
truncate -s 512M "$W/out.img"     # the guest writes /out onto it as a tar archive

# Software emulation by default: with the host's /dev/kvm under another hypervisor the guest may hang at boot
# icount: one emulation thread whose guest clock counts executed instructions (2^shift ns each) and jumps
# over idle time, so timers fire when due and the host's load does not move the guest's timing
case "${KLAB_ACCEL:-tcg}" in
  kvm) ACC=(-enable-kvm -cpu host) ;;
  icount) ACC=(-accel "tcg,thread=single" -cpu max -icount "shift=${KLAB_ICOUNT_SHIFT:-0},sleep=off") ;;
  *) ACC=(-accel "tcg,thread=multi" -cpu max) ;;
esac
for attempt in 1 2; do
  t0=$(date +%s.%N)
  timeout "${KLAB_TIMEOUT:-1500}" qemu-system-x86_64 "${ACC[@]}" -m "${KLAB_MEM:-4G}" -smp "${KLAB_SMP:-2}" \
    -nographic -no-reboot -kernel "$KL/img/boot/vmlinuz-$K" -initrd "$W/initrd.cpio" \
    -append "console=ttyS0 panic=-1 quiet ${KLAB_APPEND:-}" \
    -drive "file=$W/out.img,format=raw,if=virtio" "$@" < /dev/null > "$OUT/console.log" 2>&1 \
    || echo "run.sh: qemu exited $?" >&2
  t1=$(date +%s.%N)
  # an early-boot failure under TCG is rare: boot once more if the guest never reached /init
  grep -q "=====KLAB-BEGIN=====" "$OUT/console.log" && break
  echo "run.sh: the guest did not reach /init (attempt $attempt), see console.failed$attempt.log" >&2
  cp "$OUT/console.log" "$OUT/console.failed$attempt.log"
done
echo "wall seconds (qemu start->exit): $(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.1f", b - a}')" | tee "$OUT/wall.txt"
tar -xf "$W/out.img" -C "$OUT" 2>/dev/null || echo "run.sh: the guest wrote no results" >&2
sed -n '/=====KLAB-BEGIN=====/,/=====KLAB-END=====/p' "$OUT/console.log" | tail -n 40
