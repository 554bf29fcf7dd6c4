#!/usr/bin/env bash
# Build upstream multipath-tools from source into a private prefix, so that its `multipath -t` reads a
# private multipath.conf (PREFIX/etc/multipath.conf) and never the host's. Used to regenerate the 0.14
# hardware table (scripts/gen-mtools-tables.py) and the 0.14 goldens of tests/data/mtools-corpus/
# (scripts/mtools-oracle.sh). The build is not part of the repository.
#
#   scripts/build-mtools-upstream.sh [VERSION [PREFIX]]
#     VERSION  a tag of https://github.com/opensvc/multipath-tools (default 0.14.3)
#     PREFIX   where to build and install (default /tmp/mpathlab-mtools-VERSION)
#   MTOOLS_SRC=/path/to/a/clone   use this git repository instead of cloning
#
# Needs root only to apt-get the build dependencies when they are missing.
set -euo pipefail
VERSION=${1:-0.14.3}
PREFIX=${2:-/tmp/mpathlab-mtools-$VERSION}
SRC=${MTOOLS_SRC:-}
DEPS="libdevmapper-dev libudev-dev libaio-dev liburcu-dev libjson-c-dev libsystemd-dev libmount-dev pkg-config gcc make"

missing=()
for p in $DEPS; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "build-mtools-upstream: missing build dependencies: ${missing[*]} (install them as root)" >&2
    exit 1
  fi
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

mkdir -p "$PREFIX"
PREFIX=$(cd "$PREFIX" && pwd)
if [ -z "$SRC" ]; then
  SRC="$PREFIX/git"
  [ -d "$SRC" ] || git clone -q --bare https://github.com/opensvc/multipath-tools "$SRC"
fi
rm -rf "$PREFIX/src"
mkdir -p "$PREFIX/src"
git --git-dir="$SRC" archive "refs/tags/$VERSION" 2>/dev/null | tar -x -C "$PREFIX/src" \
  || git -C "$SRC" archive "refs/tags/$VERSION" | tar -x -C "$PREFIX/src"

# Every path prefix points into PREFIX: the binary's compiled-in multipath.conf, conf.d, plugin directory
# and libraries are all private. WARN_ONLY: newer compilers warn where the release did not expect it.
MAKEVARS=(prefix="$PREFIX" etc_prefix="$PREFIX" usr_prefix="$PREFIX" systemd_prefix="$PREFIX"
          sys_execprefix="$PREFIX" LIB=lib READLINE= WARN_ONLY=1)
cd "$PREFIX/src"
nice -n 19 make -s -j"$(nproc)" "${MAKEVARS[@]}" >"$PREFIX/build.log" 2>&1 \
  || { tail -30 "$PREFIX/build.log" >&2; exit 1; }
nice -n 19 make -s "${MAKEVARS[@]}" install >>"$PREFIX/build.log" 2>&1 \
  || { tail -30 "$PREFIX/build.log" >&2; exit 1; }
mkdir -p "$PREFIX/etc/multipath/conf.d"
: > "$PREFIX/etc/multipath.conf"
echo "$VERSION" > "$PREFIX/.mpathlab-private-build"
echo "built multipath-tools $VERSION: $PREFIX/sbin/multipath (reads $PREFIX/etc/multipath.conf)"
