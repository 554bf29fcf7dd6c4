#!/bin/bash
# Builds the initramfs tree $KLAB_DIR/base: busybox, dmsetup and fio with their libraries, and the kernel
# modules the guest loads (dm-multipath and its selectors, null_blk, dm-delay, scsi_debug with sd_mod for its
# disks, nvmet, the qdiscs for netem delays, ...) with their dependencies, decompressed for busybox's modprobe. Run by setup.sh; run again
# after changing the module list. run.sh packs the tree (with the guest's /init) into a cpio archive.
set -euo pipefail
KL=${KLAB_DIR:-${TMPDIR:-/tmp}/klab-${KLAB_KERNEL:-6.1}}
K=$(cat "$KL/kernel-release")
IMG=$KL/img
B=$KL/base
MS=$IMG/lib/modules/$K
[ -d "$MS" ] || { echo "build-initramfs.sh: no modules in $MS (run setup.sh)" >&2; exit 1; }

rm -rf "$B"
mkdir -p "$B"/{bin,sbin,proc,sys,dev,tmp,out,etc,run,opt,lib64} "$B/lib/modules/$K"
cp /bin/busybox "$B/bin/busybox"
for a in $(/bin/busybox --list); do [ "$a" = busybox ] || ln -sf busybox "$B/bin/$a"; done
# tc (iproute2): per-port netem delays for the NVMe/TCP lab (validation/kernel-lab/nvme)
# blktrace and blkparse (Debian package blktrace), when the host has them: the recorded traces of
# validation/kernel-lab/capture/blktrace
EXES="/usr/sbin/dmsetup /usr/bin/fio /usr/sbin/tc"
for exe in /usr/sbin/blktrace /usr/bin/blkparse; do [ ! -x "$exe" ] || EXES="$EXES $exe"; done
for exe in $EXES; do
  rm -f "$B/bin/$(basename "$exe")"     # busybox's own tc applet is a symlink: cp would write through it
  cp "$exe" "$B/bin/"
  for l in $(ldd "$exe" | awk '/=>/ {print $3} /ld-linux/ {print $1}'); do
    mkdir -p "$B$(dirname "$l")"; cp -L "$l" "$B$l"
  done
done

# modules: the image's own dependency data (depmod on the unpacked image), then each wanted module and
# everything it depends on, decompressed into the tree
depmod -b "$IMG" "$K"
MD=$B/lib/modules/$K
# (nvme-loop is not built in Debian's 6.1: there nvmet-tcp with nvme-tcp over the loopback interface is the
# NVMe-oF path)
WANT="configfs virtio_pci virtio_blk dm_mod dm_multipath dm_round_robin dm_queue_length dm_service_time
      dm_delay dm_zero dm_flakey null_blk scsi_debug sd_mod nvmet nvme_loop nvmet_tcp nvme_tcp
      sch_prio sch_netem cls_u32"
for m in $WANT; do
  deps=$(modprobe -d "$IMG" -S "$K" --show-depends "$m" 2>/dev/null) || {
    echo "build-initramfs.sh: $m is not in $K (left out)" >&2; continue; }
  for f in $(echo "$deps" | awk '$1 == "insmod" {print $2}'); do
    rel=${f#"$MS"/}; rel=${rel%.xz}; rel=${rel%.zst}
    [ -f "$MD/$rel" ] && continue
    mkdir -p "$MD/$(dirname "$rel")"
    case $f in
      *.xz) xz -dc "$f" > "$MD/$rel";;
      *.zst) zstd -qdc "$f" > "$MD/$rel";;
      *) cp "$f" "$MD/$rel";;
    esac
  done
done
mkdir -p "$MD/extra"
cp "$KL/oot/dm-historical-service-time.ko" "$KL/oot/dm-io-affinity.ko" "$MD/extra/"
cp "$KL/oot/dm-historical-service-time-orig.ko" "$B/opt/"   # outside modules.dep: insmod by hand
cp "$MS/modules.builtin" "$MS/modules.order" "$MD/"
[ ! -f "$MS/modules.builtin.modinfo" ] || cp "$MS/modules.builtin.modinfo" "$MD/"
depmod -b "$B" "$K"
echo "initramfs tree $B: $(du -sh "$B" | cut -f1), $(find "$MD" -name '*.ko' | wc -l) modules"
