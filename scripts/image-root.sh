#!/usr/bin/env bash
# The Debian base root of `cr export solution --oci` images: a minimal userland with Python,
# built once per architecture and suite and cached (docs/containers.md).
#
#   scripts/image-root.sh [ARCH]        ARCH: amd64 (default) | arm64    (run as root)
#
# Prints the root's path on stdout. Like scripts/arm-root.sh it uses mmdebstrap
# --variant=extract (no maintainer script runs, so a foreign architecture builds without
# emulation) and then makes by hand what those scripts would have made. A root that is
# already built is reused: delete it to rebuild. Environment: IMAGE_ROOTS (where roots
# live, default /var/tmp/reefkit-image-roots; never inside a checkout), IMAGE_SUITE and
# IMAGE_MIRROR (default: this host's Debian suite and deb.debian.org).
set -euo pipefail

die() { printf 'Error: %s\nHint: %s\n' "$1" "$2" >&2; exit 1; }
say() { printf '== %s\n' "$*" >&2; }

[[ ${1:-} == -h || ${1:-} == --help ]] && { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0; }
ARCH=${1:-amd64}
case $ARCH in
  amd64) TRIPLET=x86_64-linux-gnu ;;
  arm64) TRIPLET=aarch64-linux-gnu ;;
  *) die "unknown architecture '$ARCH'" "give amd64 or arm64" ;;
esac
SUITE=${IMAGE_SUITE:-$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")}
SUITE=${SUITE:-bookworm}
MIRROR=${IMAGE_MIRROR:-http://deb.debian.org/debian}
ROOT=${IMAGE_ROOTS:-/var/tmp/reefkit-image-roots}/$SUITE-$ARCH
# Python and the C/C++ runtime libraries the wheels of numpy/onnxruntime link against;
# nothing for networking or package management (the image runs without network).
PACKAGES=bash,dash,coreutils,grep,sed,libc-bin,procps,base-passwd,python3,libstdc++6,libgomp1,zlib1g

if [[ -e $ROOT/.reefkit-root ]]; then echo "$ROOT"; exit 0; fi
[[ $(id -u) -eq 0 ]] || die "building a root needs root (mmdebstrap extracts device nodes and owners)" "run: sudo $0 $ARCH"
command -v mmdebstrap >/dev/null || die "mmdebstrap is not installed" "apt-get install -y mmdebstrap"
mkdir -p "$(dirname "$ROOT")"
TMP=$ROOT.part
rm -rf --one-file-system "$TMP"
trap 'rm -rf --one-file-system "$TMP"' EXIT
t0=$SECONDS
say "building the $ARCH image root ($SUITE from $MIRROR) at $ROOT"
mmdebstrap --quiet --variant=extract --architectures="$ARCH" --include="$PACKAGES" "$SUITE" "$TMP" "$MIRROR" >&2
cp "$TMP/usr/share/base-passwd/passwd.master" "$TMP/etc/passwd"
cp "$TMP/usr/share/base-passwd/group.master" "$TMP/etc/group"
[[ -e $TMP/bin/sh || -L $TMP/bin/sh ]] || ln -s dash "$TMP/bin/sh"
[[ -e $TMP/usr/bin/python3 ]] || die "python3 is missing from the built root" "check the mirror $MIRROR"
# What apt and dpkg keep for themselves is no part of a read-only image.
rm -rf "$TMP/var/cache/apt" "$TMP/var/lib/apt/lists" "$TMP/var/log"/* "$TMP/usr/share/doc" "$TMP/usr/share/man" "$TMP/usr/share/info" "$TMP/usr/share/locale"
mkdir -p "$TMP/proc" "$TMP/sys" "$TMP/dev" "$TMP/tmp" "$TMP/root" "$TMP/run" "$TMP/var/tmp"
chmod 1777 "$TMP/tmp" "$TMP/var/tmp"
echo "$ARCH $SUITE" > "$TMP/.reefkit-root"
mv "$TMP" "$ROOT"
trap - EXIT
say "built in $((SECONDS - t0)) s"
echo "$ROOT"
