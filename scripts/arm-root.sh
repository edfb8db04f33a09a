#!/usr/bin/env bash
# Raspberry Pi userlands on an x86_64 Linux host: an arm64 or armhf Debian root run under
# QEMU user-mode emulation, with a Raspberry Pi 4 persona taken from the project's own
# captured fixtures (tests/fixtures/platforms/rpi4-64, rpi4-32).
#
#   scripts/arm-root.sh ARCH COMMAND [ARGS]     ARCH: arm64 | armhf   (run as root)
#
#   build            make the root (mmdebstrap --variant=extract: nothing runs emulated)
#   mount            binfmt on, /proc /sys /dev, the persona, DNS / CA / pip configuration
#   install          copy this project into the root, make a venv there, pip install it
#   run -- CMD...    run CMD inside the root (as root, in the project copy); unmounts after
#   shell            an interactive shell inside the root; unmounts after
#   job              the main job inside the root: README.md's first set-up command (armhf:
#                    lenet-digits-tflite instead, in a --system-site-packages venv), then cr platform
#   tests [ARGS]     a pytest subset inside the root (pytest ARGS; after job or install)
#   results DEST     copy the root's stored results (CR_HOME/results) to DEST
#   umount           unmount everything under the root, deepest first
#   delete           delete the root; refused while anything is mounted under it
#   binfmt-restore   put binfmt_misc back as it was before the first `mount`
#   status           what is built, mounted and enabled
#
# Environment: ARM_ROOTS (where roots live, default /var/tmp/reefkit-arm-roots; never
# inside a checkout), ARM_SUITE and ARM_MIRROR (default: this host's Debian suite and
# deb.debian.org). Every command is idempotent: build on a built root, mount on a mounted
# one, umount on an unmounted one do nothing. `run`, `shell`, `job` and `tests` unmount
# from a trap whatever they mounted themselves, on success, failure or Ctrl-C.
set -euo pipefail

PROG=$(basename "$0")
HERE=$(cd "$(dirname "$0")/.." && pwd)

die() { printf 'Error: %s\nHint: %s\n' "$1" "${2:-run $PROG --help}" >&2; exit 1; }
say() { printf '== %s\n' "$*" >&2; }

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }

[[ ${1:-} == -h || ${1:-} == --help || $# -eq 0 ]] && { usage; exit 0; }
ARCH=$1; shift
CMD=${1:-}; shift || true
case $ARCH in
  arm64) QEMU=qemu-aarch64; UNAME=aarch64; TRIPLET=aarch64-linux-gnu; PERSONA=rpi4-64 ;;
  armhf) QEMU=qemu-arm; UNAME=armv7l; TRIPLET=arm-linux-gnueabihf; PERSONA=rpi4-32 ;;
  *) die "unknown architecture '$ARCH'" "give arm64 or armhf" ;;
esac

ROOTS=${ARM_ROOTS:-/var/tmp/reefkit-arm-roots}
ROOT=$ROOTS/$ARCH
SUITE=${ARM_SUITE:-$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")}
SUITE=${SUITE:-bookworm}
MIRROR=${ARM_MIRROR:-http://deb.debian.org/debian}
FIXTURE=$HERE/tests/fixtures/platforms/$PERSONA
STATE=$ROOTS/.binfmt-state          # binfmt as found before the first mount
BINFMT=/proc/sys/fs/binfmt_misc
PROJECT=/opt/reefkit/src             # the project copy, inside the root
VENV=/opt/reefkit/venv               # cr's venv, inside the root
CR_HOME_IN=/root/.local/share/reefkit
# Debian packages: what a Raspberry Pi OS Lite image has that cr and pip need. armhf also
# gets Debian's numpy and scikit-learn: PyPI has no armv7l wheels of them and the root has
# no compiler; the venv sees them through --system-site-packages.
PACKAGES=bash,dash,coreutils,grep,sed,findutils,tar,gzip,diffutils,libc-bin,procps,python3,python3-venv,python3-pip,git,ca-certificates,libstdc++6,libgomp1,zlib1g,libjpeg62-turbo,base-passwd
[[ $ARCH == armhf ]] && PACKAGES+=,python3-numpy,python3-sklearn,python3-scipy,libopenblas0-pthread

MADE=$ROOTS/.$ARCH.made-by-arm-root  # written before a build starts: only such a root is ever deleted

real_root() { realpath -m "$ROOT"; }

# Mount points at or below the root, NUL-separated, in /proc/self/mountinfo order (mount
# order; --deepest-first reverses it). The kernel writes a space, tab, newline and backslash
# in a mount point as octal escapes (\040 \011 \012 \134): every escape is decoded, so a
# root whose path holds any of them still sees its mounts.
mounts_under() {
  python3 - "$(real_root)" "${1:-}" <<'PY'
import re, sys
root, order = sys.argv[1].rstrip("/") or "/", sys.argv[2]
out = open(1, "w", encoding="utf-8", errors="surrogateescape")
points = []
with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as f:
    for line in f:
        m = re.sub(r"\\([0-7]{3})", lambda e: chr(int(e.group(1), 8)), line.split(" ")[4])
        if m == root or m.startswith(root + "/"):
            points.append(m)
out.write("".join(p + "\0" for p in (points[::-1] if order == "--deepest-first" else points)))
PY
}
mount_count() { mounts_under | tr -cd '\0' | wc -c; }
mount_list() { mounts_under | tr '\0' ' '; }   # for messages only

need_root() { [[ $(id -u) -eq 0 ]] || die "$PROG $CMD needs root (mount, chroot, binfmt_misc)" "run it with sudo, or as root"; }
need_built() { [[ -x $ROOT/usr/bin/python3 ]] || die "no $ARCH root at $ROOT" "run: $PROG $ARCH build"; }

check_roots_dir() {
  local r; r=$(real_root)
  if git -C "$(dirname "$r")" rev-parse --show-toplevel >/dev/null 2>&1 || [[ $r == "$HERE"/* ]]; then
    die "ARM_ROOTS=$ROOTS is inside a git checkout" "put roots outside any checkout, e.g. ARM_ROOTS=/var/tmp/reefkit-arm-roots"
  fi
}

# Whether the root at $ROOT is this script's: its marker beside it, or a finished root's stamp.
made_here() { [[ -e $MADE || -e $ROOT/.reefkit-root ]]; }

cmd_build() {
  need_root; check_roots_dir
  if [[ -x $ROOT/usr/bin/python3 && -e $ROOT/.reefkit-root ]]; then say "$ARCH root already built at $ROOT"; return; fi
  [[ $(mount_count) -eq 0 ]] || die "$ROOT has mounts but no finished root: $(mount_list)" "run: $PROG $ARCH umount, then build again"
  if [[ -e $ROOT || -L $ROOT ]] && ! made_here; then
    die "$ROOT exists and was not made by $PROG (no $MADE): it is not deleted" "move it away, or choose another ARM_ROOTS"
  fi
  command -v mmdebstrap >/dev/null || die "mmdebstrap is not installed" "apt-get install -y mmdebstrap qemu-user-static binfmt-support"
  mkdir -p "$ROOTS"; : > "$MADE"
  [[ -e $ROOT || -L $ROOT ]] && rm -rf --one-file-system "$ROOT"
  local t0=$SECONDS
  say "building the $ARCH root ($SUITE from $MIRROR) at $ROOT"
  mmdebstrap --variant=extract --architectures="$ARCH" --include="$PACKAGES" "$SUITE" "$ROOT" "$MIRROR"
  # What maintainer scripts would have made (extract runs none of them).
  cp "$ROOT/usr/share/base-passwd/passwd.master" "$ROOT/etc/passwd"
  cp "$ROOT/usr/share/base-passwd/group.master" "$ROOT/etc/group"
  [[ -e $ROOT/bin/sh || -L $ROOT/bin/sh ]] || ln -s dash "$ROOT/bin/sh"
  [[ -L $ROOT/proc ]] && rm -f "$ROOT/proc"
  mkdir -p "$ROOT/proc" "$ROOT/sys" "$ROOT/dev" "$ROOT/tmp" "$ROOT/root" "$ROOT/run"
  chmod 1777 "$ROOT/tmp"
  local lib=$ROOT/usr/lib/$TRIPLET so alt
  for so in libblas.so.3 liblapack.so.3 libopenblas.so.0; do   # update-alternatives' links
    [[ -e $lib/$so ]] && continue
    for alt in openblas-pthread blas lapack; do
      if [[ -e $lib/$alt/$so ]]; then ln -sf "$alt/$so" "$lib/$so"; break; fi
    done
  done
  echo "$ARCH $SUITE $(date -u +%FT%TZ)" > "$ROOT/.reefkit-root"
  say "built in $((SECONDS - t0)) s"
}

binfmt_on() {
  command -v update-binfmts >/dev/null || die "update-binfmts is not installed" "apt-get install -y qemu-user-static binfmt-support"
  [[ -x /usr/bin/$QEMU-static || -x /usr/libexec/qemu-binfmt/$QEMU-binfmt-P ]] || die "$QEMU-static is not installed" "apt-get install -y qemu-user-static"
  mkdir -p "$ROOTS"
  if [[ ! -e $STATE ]]; then   # remember what we found, once
    local mounted=no enabled=no
    mountpoint -q "$BINFMT" && mounted=yes
    [[ $mounted == yes && -e $BINFMT/$QEMU ]] && grep -qx enabled "$BINFMT/$QEMU" && enabled=yes
    printf 'mounted=%s\n%s=%s\n' "$mounted" "${QEMU//-/_}" "$enabled" > "$STATE"
  elif ! grep -q "^${QEMU//-/_}=" "$STATE"; then
    local enabled=no
    [[ -e $BINFMT/$QEMU ]] && grep -qx enabled "$BINFMT/$QEMU" && enabled=yes
    printf '%s=%s\n' "${QEMU//-/_}" "$enabled" >> "$STATE"
  fi
  mountpoint -q "$BINFMT" || mount -t binfmt_misc binfmt_misc "$BINFMT"
  [[ -e $BINFMT/$QEMU ]] && grep -qx enabled "$BINFMT/$QEMU" || update-binfmts --enable "$QEMU"
  grep -qx enabled "$BINFMT/$QEMU" || die "binfmt_misc would not enable $QEMU" "check: update-binfmts --display $QEMU"
}

cmd_binfmt_restore() {
  need_root
  [[ -e $STATE ]] || { say "binfmt state was never changed by $PROG"; return; }
  local key val
  while IFS='=' read -r key val; do
    case $key in
      mounted) ;;
      qemu_*) [[ $val == no && -e $BINFMT/${key//_/-} ]] && update-binfmts --disable "${key//_/-}" || true ;;
    esac
  done < "$STATE"
  if grep -qx 'mounted=no' "$STATE" && mountpoint -q "$BINFMT"; then umount "$BINFMT"; fi
  rm -f "$STATE"
  say "binfmt_misc restored"
}

bind_file() {  # bind_file SRC DEST: a read-only bind of one file over another
  [[ -e $2 ]] || { mkdir -p "$(dirname "$2")"; : > "$2"; }
  mount --bind "$1" "$2"; mount -o remount,bind,ro "$2"
}

cmd_mount() {
  need_root; need_built
  if mountpoint -q "$ROOT/proc"; then say "$ARCH root already mounted"; MOUNTED_HERE=no; binfmt_on; return; fi
  [[ -d $FIXTURE ]] || die "persona fixture $FIXTURE is missing" "run this from a full checkout of the project"
  binfmt_on
  MOUNTED_HERE=yes  # before the first mount: a failure halfway is unmounted by with_mounts' trap
  mount -t proc proc "$ROOT/proc"
  mount -t sysfs sysfs "$ROOT/sys"
  mount --rbind /dev "$ROOT/dev"; mount --make-rslave "$ROOT/dev"
  mount -t tmpfs -o size=256m,mode=1777 tmpfs "$ROOT/dev/shm" 2>/dev/null || true
  # The persona: the Pi's cpuinfo and meminfo over QEMU's (which are the host's x86 ones),
  # and its device tree where a Pi's kernel puts it. In place before anything runs cr.
  bind_file "$FIXTURE/proc/cpuinfo" "$ROOT/proc/cpuinfo"
  bind_file "$FIXTURE/proc/meminfo" "$ROOT/proc/meminfo"
  mount -t tmpfs -o size=1m tmpfs "$ROOT/sys/firmware"
  mkdir -p "$ROOT/sys/firmware/devicetree/base"
  cp "$FIXTURE/proc/device-tree/model" "$FIXTURE/proc/device-tree/compatible" "$ROOT/sys/firmware/devicetree/base/"
  mount -o remount,ro "$ROOT/sys/firmware"
  # Network: this host's resolver and CA bundle; pip told where the bundle is.
  cp -L /etc/resolv.conf "$ROOT/etc/resolv.conf"
  mkdir -p "$ROOT/etc/ssl/certs"
  cp -L /etc/ssl/certs/ca-certificates.crt "$ROOT/etc/ssl/certs/ca-certificates.crt"
  printf '[global]\ncert = /etc/ssl/certs/ca-certificates.crt\ntimeout = 120\nretries = 5\ndisable-pip-version-check = true\n' > "$ROOT/etc/pip.conf"
  say "$ARCH root mounted: persona $PERSONA, binfmt $QEMU"
}

cmd_umount() {
  local m n=0
  while IFS= read -r -d '' m; do
    [[ -n $m ]] || continue
    umount "$m" 2>/dev/null || umount -l "$m"
    n=$((n + 1))
  done < <(mounts_under --deepest-first)
  [[ $(mount_count) -eq 0 ]] || die "some mounts under $ROOT would not go: $(mount_list)" "close shells and processes using the root, then: $PROG $ARCH umount"
  say "$ARCH root: $n mounts removed"
}

# Unmount on exit only what this invocation mounted itself (a mounted root stays mounted).
# The trap is set before the first mount, so a mount that fails halfway is undone too.
unmount_own() { [[ $MOUNTED_HERE == yes ]] && cmd_umount; return 0; }
with_mounts() { trap 'unmount_own' EXIT; trap 'exit 130' INT TERM; cmd_mount; }

in_root() {  # in_root CMD...: run CMD in the root with a clean environment
  chroot "$ROOT" /usr/bin/env -i HOME=/root USER=root LANG=C.UTF-8 TERM="${TERM:-dumb}" \
    PATH=$VENV/bin:$PROJECT/.venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    PIP_DEFAULT_TIMEOUT=120 PYTHONUNBUFFERED=1 "$@"
}

copy_project() {  # this checkout's files (tracked and untracked, not ignored) into the root
  local dest=$ROOT$PROJECT
  say "copying the project into $dest"
  rm -rf --one-file-system "$dest"; mkdir -p "$dest"
  if git -C "$HERE" rev-parse >/dev/null 2>&1; then
    # one tar reads every name (a list split into several commands makes several archives, and the
    # reader stops at the first one's end)
    (cd "$HERE" && git ls-files -co --exclude-standard -z | tar --null --no-recursion -T - -cf -) | tar -xf - -C "$dest"
  else
    tar -C "$HERE" --exclude=.venv --exclude=.git --exclude='__pycache__' -cf - . | tar -xf - -C "$dest"
  fi
}

cmd_install() {
  need_root; need_built
  local test=no; [[ ${1:-} == --test ]] && test=yes
  with_mounts
  local t0=$SECONDS
  copy_project
  local site=""; [[ $ARCH == armhf ]] && site=--system-site-packages
  [[ -x $ROOT$VENV/bin/python ]] || in_root python3 -m venv $site "$VENV"
  say "pip install the project (emulated)"
  in_root sh -c "cd $PROJECT && pip install -q ."
  if [[ $test == yes ]]; then in_root pip install -q pytest hypothesis; fi
  say "installed in $((SECONDS - t0)) s"
}

cmd_run() {
  need_root; need_built
  [[ ${1:-} == -- ]] && shift
  [[ $# -gt 0 ]] || die "run needs a command" "$PROG $ARCH run -- cr platform"
  with_mounts
  in_root sh -c 'cd "$0" 2>/dev/null || cd /root; exec "$@"' "$PROJECT" "$@"
}

readme_main_job() {  # README.md's first set-up command, as written there
  awk '/^## Set up on a fresh machine/ { on = 1; next } /^## / { on = 0 } on && /^    python3 -m venv/ { sub(/^    /, ""); print; exit }' "$HERE/README.md"
}

cmd_job() {
  need_root; need_built
  local job; job=$(readme_main_job)
  [[ $job == *"cr init solution lenet-digits-onnxruntime"* ]] || die "README.md's main job is not where it was expected" "see README.md, section 'Set up on a fresh machine'"
  if [[ $ARCH == armhf ]]; then
    # 32-bit Arm: no onnxruntime wheel exists for armv7l (cr init refuses it cleanly), and
    # numpy / scikit-learn are Debian's (the venv sees them): the LiteRT solution instead.
    job=${job//python3 -m venv .venv/python3 -m venv --system-site-packages .venv}
    job=${job//lenet-digits-onnxruntime/lenet-digits-tflite}
  fi
  with_mounts
  local t0=$SECONDS
  copy_project
  say "$ARCH job: $job"
  in_root sh -c "cd $PROJECT && rm -rf .venv && $job"
  say "$ARCH job passed in $((SECONDS - t0)) s"
  in_root sh -c "cd $PROJECT && .venv/bin/cr platform"
}

cmd_tests() {
  need_root; need_built
  # the job's venv (the project copy's .venv) where there is one, else install's
  local py=$VENV/bin/python
  [[ -x $ROOT$PROJECT/.venv/bin/python ]] && py=$PROJECT/.venv/bin/python
  [[ -x $ROOT$py && -d $ROOT$PROJECT/tests ]] || die "cr is not installed in the $ARCH root" "run: $PROG $ARCH job (or install)"
  with_mounts
  in_root "$py" -c 'import pytest, hypothesis' 2>/dev/null || in_root "$py" -m pip install -q pytest hypothesis
  local args=("$@")
  [[ ${#args[@]} -gt 0 ]] || args=(tests/test_platform.py tests/test_platform_emulated.py tests/test_resolver.py tests/test_recipes.py -q -p no:cacheprovider)
  in_root sh -c 'cd "$0" && exec "$@"' "$PROJECT" "$py" -m pytest "${args[@]}"
}

cmd_results() {
  local dest=${1:-}; [[ -n $dest ]] || die "results needs a destination folder" "$PROG $ARCH results DIR"
  local src=$ROOT$CR_HOME_IN/results
  [[ -d $src ]] || die "no stored results in the $ARCH root ($src)" "run: $PROG $ARCH job"
  mkdir -p "$dest"; cp -a "$src/." "$dest/"
  say "results of the $ARCH root copied to $dest"
}

cmd_delete() {
  need_root
  [[ -e $ROOT ]] || { say "no $ARCH root at $ROOT"; return; }
  # A root with /dev bound in: rm -rf would delete the host's device nodes through it.
  [[ $(mount_count) -eq 0 ]] || die "$ROOT still has mounts: $(mount_list)" "run: $PROG $ARCH umount (then delete)"
  made_here || die "$ROOT was not made by $PROG (no $MADE, no .reefkit-root): it is not deleted" "delete it yourself if it is yours"
  rm -rf --one-file-system "$ROOT"
  rm -f "$MADE"
  say "$ARCH root deleted"
}

cmd_status() {
  printf 'root: %s (%s)\n' "$ROOT" "$([[ -e $ROOT/.reefkit-root ]] && cat "$ROOT/.reefkit-root" || echo 'not built')"
  printf 'mounts: %s\n' "$(mount_count)"
  if mountpoint -q "$BINFMT" 2>/dev/null && [[ -e $BINFMT/$QEMU ]]; then printf 'binfmt %s: %s\n' "$QEMU" "$(head -1 "$BINFMT/$QEMU")"
  else printf 'binfmt %s: off\n' "$QEMU"; fi
}

MOUNTED_HERE=no
case $CMD in
  build) cmd_build ;;
  mount) cmd_mount ;;
  install) cmd_install "$@" ;;
  run) cmd_run "$@" ;;
  shell) need_root; need_built; with_mounts; in_root sh -c "cd $PROJECT 2>/dev/null; exec bash -i" ;;
  job) cmd_job ;;
  tests) cmd_tests "$@" ;;
  results) cmd_results "$@" ;;
  umount|unmount) cmd_umount ;;
  delete) cmd_delete ;;
  binfmt-restore) cmd_binfmt_restore ;;
  status) cmd_status ;;
  '') die "no command given" "$PROG $ARCH build|mount|install|run|shell|job|tests|results|umount|delete|binfmt-restore|status" ;;
  *) die "unknown command '$CMD'" "$PROG $ARCH build|mount|install|run|shell|job|tests|results|umount|delete|binfmt-restore|status" ;;
esac
