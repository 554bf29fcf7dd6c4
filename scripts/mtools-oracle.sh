#!/usr/bin/env bash
# Run a real multipath binary's `multipath -t` with a given multipath.conf and capture what it prints.
#
#   scripts/mtools-oracle.sh MULTIPATH CONF OUT
#     MULTIPATH  /sbin/multipath (the distribution's, reads /etc/multipath.conf) or PREFIX/sbin/multipath
#                built by scripts/build-mtools-upstream.sh (reads PREFIX/etc/multipath.conf)
#     CONF       the multipath.conf to load ("-" or an empty file: no configuration file)
#     OUT        writes OUT.stdout, OUT.stderr and OUT.rc
#
# stderr is kept as multipath prints it less the leading timestamp ("1102.246204 | "), with the path of the
# configuration file replaced by CONF's base name, so that goldens do not depend on where they were made.
# The distribution's binary is given CONF through a private overlay on /etc in a mount namespace
# (unshare, root): the host's /etc is never written.
set -euo pipefail
MP=$1 CONF=$2 OUT=$3
name=$(basename "$CONF")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
bindir=$(cd "$(dirname "$MP")" && pwd)
prefix=$(dirname "$bindir")
if [ -e "$prefix/.mpathlab-private-build" ]; then
  read_path="$prefix/etc/multipath.conf"
  # one private configuration file per build: serialise concurrent runs
  exec 9>"$prefix/.oracle.lock"
  flock 9
  if [ "$CONF" = - ]; then : > "$read_path"; else cp "$CONF" "$read_path"; fi
  set +e
  LD_LIBRARY_PATH="$prefix/lib" "$MP" -t >"$work/out" 2>"$work/err"
  echo $? >"$work/rc"
  set -e
else
  read_path=/etc/multipath.conf
  mkdir -p "$work/u" "$work/w"
  [ "$CONF" = - ] || cp "$CONF" "$work/conf"
  set +e
  unshare -m sh -c '
    mount -t overlay overlay -o "lowerdir=/etc,upperdir=$1/u,workdir=$1/w" /etc || exit 99
    rm -f /etc/multipath.conf; rm -rf /etc/multipath/conf.d
    [ -e "$1/conf" ] && cp "$1/conf" /etc/multipath.conf
    "$2" -t >"$1/out" 2>"$1/err"; echo $? >"$1/rc"' sh "$work" "$MP"
  rc=$?
  set -e
  [ "$rc" = 99 ] && { echo "mtools-oracle: cannot overlay /etc (needs root and unshare)" >&2; exit 2; }
fi
cp "$work/out" "$OUT.stdout"
# a private build names its own prefix in built-in paths: print them as a build for / would
read_re=$(printf '%s' "$read_path" | sed 's/[.[\*^$]/\\&/g')
strip_prefix=
[ -e "$prefix/.mpathlab-private-build" ] && strip_prefix="s|$prefix/|/|g"
sed -E 's/^[0-9]+\.[0-9]+ \| //' "$work/err" | sed "s|$read_re|$name|g" | sed "$strip_prefix" >"$OUT.stderr"
cp "$work/rc" "$OUT.rc"
