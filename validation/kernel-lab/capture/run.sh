#!/bin/bash
# One boot of the capture loop: the guest (guest/main.sh) runs fio on dm-multipath, mpathlab's capture script
# during each run and fio's write_iolog; the results come back to runs/<kernel>-<UTC stamp>/.
#   KLAB_DIR=<lab> validation/kernel-lab/capture/run.sh [CELLS_FILE]
# Needs the lab's setup (../README.md). Hold one qemu at a time on a shared machine (e.g. under flock).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
KL=${KLAB_DIR:?set KLAB_DIR to the lab folder setup.sh made}
CELLS=${1:-$HERE/guest/cells.txt}
EXP=$(mktemp -d); trap 'rm -rf "$EXP"' EXIT
cp -r "$HERE/guest/." "$EXP/"
cp "$CELLS" "$EXP/cells.txt"
cp "$ROOT/src/mpathlab/capture/capture.sh" "$EXP/capture.sh"
OUT=$HERE/runs/$(cat "$KL/kernel-series")-$(date -u +%Y%m%dT%H%M%S)
mkdir -p "$OUT"
cat /proc/loadavg > "$OUT/loadavg_start.txt"
KLAB_TIMEOUT=${KLAB_TIMEOUT:-700} "$ROOT/validation/kernel-lab/lab/run.sh" "$EXP" "$OUT"
rm -f "$OUT"/dmesg.txt
echo "$OUT"
