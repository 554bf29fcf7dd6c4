#!/bin/bash
# One-time setup of a kernel lab (idempotent; run as root on Debian 12 "bookworm" with its package mirror).
#
#   KLAB_KERNEL=6.1|6.12  the kernel series (default 6.1); 6.12 is bookworm's backport kernel
#   KLAB_DIR=DIR          where the lab goes (default: klab-<series> in $TMPDIR or /tmp); one series per folder
#
# Fetches Debian's unsigned kernel image of that series whose version equals the linux-source-<series>
# package, builds the path selectors Debian does not ship (historical-service-time, io-affinity) as
# out-of-tree modules from that source package, and builds the initramfs tree (build-initramfs.sh).
# The kernel source is read from /usr/src at setup time and unpacked under $KLAB_DIR, never into the repository.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
KV=${KLAB_KERNEL:-6.1}
case $KV in
  6.1)  IMGRE='^linux-image-6\.1\.0-[0-9]+-amd64-unsigned$';;          # release 6.1.0-<abi>-amd64
  6.12) IMGRE='^linux-image-6\.12\.[0-9]+\+deb12-amd64-unsigned$';;   # release 6.12.<n>+deb12-amd64
  *) echo "setup.sh: KLAB_KERNEL must be 6.1 or 6.12, not '$KV'" >&2; exit 3;;
esac
KL=${KLAB_DIR:-${TMPDIR:-/tmp}/klab-$KV}
mkdir -p "$KL"; KL=$(cd "$KL" && pwd)
if [ -f "$KL/kernel-release" ]; then
  case $(cat "$KL/kernel-release") in
    "$KV".[0-9]*) ;;
    *) echo "setup.sh: $KL holds kernel $(cat "$KL/kernel-release"), not a $KV one: use another KLAB_DIR" >&2; exit 3;;
  esac
fi

export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends qemu-system-x86 busybox-static fio dmsetup cpio kmod xz-utils \
  make gcc "linux-source-$KV" >/dev/null

# the image package of the same version as the source package (its modules match the source we build from)
V=$(dpkg-query -W -f='${Version}' "linux-source-$KV")
PKG=""
for p in $(apt-cache search --names-only "$IMGRE" | awk '{print $1}'); do
  if [ "$(apt-cache policy "$p" | awk '/Candidate:/ {print $2}')" = "$V" ]; then PKG=$p; break; fi
done
[ -n "$PKG" ] || { echo "setup.sh: no unsigned $KV amd64 image of version $V on the mirror" >&2; exit 1; }
K=${PKG#linux-image-}; K=${K%-unsigned}
echo "$K" > "$KL/kernel-release"
echo "$KV" > "$KL/kernel-series"

# headers for the out-of-tree build; 6.12's headers depend on an image package: take the unsigned one the guest
# boots (INITRD=No: initramfs-tools' hook skips it, the host does not boot it)
HDR=("linux-headers-$K")
[ "$KV" = 6.1 ] || HDR+=("linux-image-$K-unsigned")
INITRD=No apt-get install -y -qq --no-install-recommends "${HDR[@]}" >/dev/null

# the guest's kernel and modules: the image package unpacked (not installed) into $KL/img
cd "$KL"
compgen -G "linux-image-$K-unsigned_*.deb" >/dev/null || apt-get download -qq "linux-image-$K-unsigned"
if [ ! -d img/boot ]; then
  mkdir -p img
  dpkg-deb -x "$(compgen -G "linux-image-$K-unsigned_*.deb" | head -1)" img
fi

# out-of-tree selectors from the source package's drivers/md
MD=src/linux-source-$KV/drivers/md
[ -d "$MD" ] || { mkdir -p src; tar -C src -xaf "/usr/src/linux-source-$KV.tar.xz" "linux-source-$KV/drivers/md"; }
rm -rf oot; mkdir -p oot
cp "$MD"/*.h "$MD/dm-ps-historical-service-time.c" "$MD/dm-ps-io-affinity.c" oot/
# a variant of HST with the DM_PS_USE_HR_TIMER feature flag cleared (bio-based start times from jiffies, as
# before 5.19); not loaded by default: insmod /opt/dm-historical-service-time-orig.ko in the guest
sed 's/\.features\s*= DM_PS_USE_HR_TIMER,/.features\t= 0,/' oot/dm-ps-historical-service-time.c \
  > oot/dm-ps-historical-service-time-orig.c
grep -q '\.features\s*= 0,' oot/dm-ps-historical-service-time-orig.c || {
  echo "setup.sh: could not clear DM_PS_USE_HR_TIMER in $MD/dm-ps-historical-service-time.c" >&2; exit 1; }
cp "$HERE/oot/Makefile" oot/
make -s -C "/lib/modules/$K/build" M="$KL/oot" modules

KLAB_DIR="$KL" "$HERE/build-initramfs.sh"
echo "kernel lab ready in $KL (kernel $K)"
