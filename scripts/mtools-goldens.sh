#!/usr/bin/env bash
# Regenerate the goldens of tests/data/mtools-corpus/ for one multipath-tools version:
#   scripts/mtools-goldens.sh VERSION MULTIPATH     e.g. 0.9.4 /sbin/multipath
#                                                      0.14.3 /tmp/mpathlab-mtools-0.14.3/sbin/multipath
# Writes tests/data/mtools-corpus/golden/VERSION/NAME.{stdout,stderr,rc} (scripts/mtools-oracle.sh).
set -euo pipefail
VERSION=$1 MP=$2
here=$(cd "$(dirname "$0")/.." && pwd)
corpus="$here/tests/data/mtools-corpus"
out="$corpus/golden/$VERSION"
mkdir -p "$out"
bash "$here/scripts/mtools-oracle.sh" "$MP" - "$out/_empty"
for conf in "$corpus"/*.conf; do
  name=$(basename "$conf" .conf)
  bash "$here/scripts/mtools-oracle.sh" "$MP" "$conf" "$out/$name"
done
echo "goldens for $VERSION in $out"
