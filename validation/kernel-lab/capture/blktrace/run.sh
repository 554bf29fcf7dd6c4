#!/bin/bash
# One boot recording a real blktrace (guest: guest/main.sh) into runs/<kernel>-<UTC stamp>/.
#   KLAB_DIR=<lab with blktrace and blkparse in its initramfs> validation/kernel-lab/capture/blktrace/run.sh
# The lab's build-initramfs.sh copies blktrace and blkparse when the host has them (Debian package blktrace).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../../../.." && pwd)
KL=${KLAB_DIR:?set KLAB_DIR to the lab folder setup.sh made}
[ -x "$KL/base/bin/blktrace" ] || { echo "run.sh: $KL/base has no blktrace (install blktrace, run build-initramfs.sh)" >&2; exit 3; }
OUT=$HERE/runs/$(cat "$KL/kernel-series")-$(date -u +%Y%m%dT%H%M%S)
mkdir -p "$OUT"
cat /proc/loadavg > "$OUT/loadavg_start.txt"
KLAB_TIMEOUT=${KLAB_TIMEOUT:-400} "$ROOT/validation/kernel-lab/lab/run.sh" "$HERE/guest" "$OUT"
rm -f "$OUT"/dmesg.txt
echo "$OUT"
