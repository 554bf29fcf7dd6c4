#!/usr/bin/env bash
# Debian packages that some tests need (fio's tools, the kernel source for the C selectors, a browser for
# the report tests, multipath-tools whose multipath -t is the oracle of the multipath.conf corpus, blktrace
# whose blkparse reads and merges the trace tests' blktrace files). Installed with apt-get when running as root and missing; elsewhere the tests that need
# them skip (and fail under CI=true, see tests/conftest.py require()).
# One package per line of DEBIAN_PACKAGES: "package  command-or-file-that-proves-it-is-installed".
set -uo pipefail
DEBIAN_PACKAGES=(
  "fio /usr/bin/fio"
  "shellcheck /usr/bin/shellcheck"
  "linux-source-6.1 /usr/src/linux-source-6.1.tar.xz"
  "python3-six /usr/lib/python3/dist-packages/six.py"
  "chromium /usr/bin/chromium"
  "multipath-tools /sbin/multipath"
  "blktrace /usr/bin/blkparse"
)
missing=()
for entry in "${DEBIAN_PACKAGES[@]}"; do
  set -- $entry
  [ -e "$2" ] || missing+=("$1")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "note: not root or no apt-get; tests needing ${missing[*]} will skip" >&2
  exit 0
fi
echo "installing Debian packages for the tests: ${missing[*]}" >&2
apt-get update -qq >/dev/null 2>&1
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null \
  || echo "warning: apt-get install ${missing[*]} failed" >&2
exit 0
