#!/usr/bin/env bash
# Raspberry Pi userlands in CI: the main job natively, then in an emulated arm64 root (plus a
# test subset there) and the LiteRT solution in an emulated armhf root, the results of all
# three in one dashboard, and the emulated / native latency ratios.
#
#   scripts/ci-arm.sh [OUT]       OUT: where results, dashboard and times go
#                                 (default /var/tmp/reefkit-ci-arm; never inside the checkout)
#
# Needs an x86_64 Debian-like Linux host, root (mount, chroot, binfmt_misc) and the package
# registries (apt mirror, PyPI). Where root or binfmt_misc is not available it says so and
# exits 0 (skipped); otherwise its exit status is that of the runs. Roots are built under
# ARM_ROOTS (default /var/tmp/reefkit-arm-roots) by scripts/arm-root.sh; binfmt_misc is left
# as it was found. Whole run on a shared 2-core machine: 13.6 min (load ~5) and 24.8 min
# (load ~10) measured (docs/platforms.md).
set -euo pipefail
cd "$(dirname "$0")/.."
HERE=$PWD
OUT=${1:-/var/tmp/reefkit-ci-arm}
ARM=scripts/arm-root.sh
export ARM_ROOTS=${ARM_ROOTS:-/var/tmp/reefkit-arm-roots}

skip() { echo "== ci-arm: skipped: $*"; exit 0; }
[[ $(uname -s) == Linux && $(uname -m) == x86_64 ]] || skip "needs an x86_64 Linux host (this is $(uname -sm))"
[[ $(id -u) -eq 0 ]] || skip "needs root (mount, chroot, binfmt_misc)"
case $(realpath -m "$OUT")/ in "$HERE"/*) echo "Error: OUT=$OUT is inside the checkout"; echo "Hint: give a folder outside it"; exit 1 ;; esac

if ! command -v mmdebstrap >/dev/null || ! command -v update-binfmts >/dev/null || ! [[ -x /usr/bin/qemu-aarch64-static ]]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq qemu-user-static binfmt-support mmdebstrap >/dev/null
fi
if ! mountpoint -q /proc/sys/fs/binfmt_misc; then  # can it be mounted? (arm-root.sh records and restores the state itself)
  mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc 2>/dev/null || skip "binfmt_misc cannot be mounted here (a container without CAP_SYS_ADMIN?)"
  umount /proc/sys/fs/binfmt_misc
fi

rm -rf "$OUT"; mkdir -p "$OUT/results"
TIMES=$OUT/times.txt; : > "$TIMES"
step() {  # step NAME CMD...: run, time, log
  local name=$1 t0=$SECONDS; shift
  echo "== ci-arm: $name"
  if "$@" > >(tee "$OUT/$name.log") 2>&1; then
    printf '%-16s %5d s  ok\n' "$name" $((SECONDS - t0)) | tee -a "$TIMES"
  else
    local rc=$?
    printf '%-16s %5d s  FAILED (exit %d, log %s)\n' "$name" $((SECONDS - t0)) "$rc" "$OUT/$name.log" | tee -a "$TIMES"
    return "$rc"
  fi
}
trap '"$ARM" arm64 umount >/dev/null 2>&1 || true; "$ARM" armhf umount >/dev/null 2>&1 || true; "$ARM" arm64 binfmt-restore || true' EXIT

# Native: the same solutions on this host, for the ratios (cr from CI's .venv where it exists).
CR=$HERE/.venv/bin/cr
if [[ ! -x $CR ]]; then
  step native-install sh -c "python3 -m venv '$OUT/native-venv' && '$OUT/native-venv/bin/pip' install -q ."
  CR=$OUT/native-venv/bin/cr
fi
native() {
  export CR_HOME=$OUT/native-home
  "$CR" platform
  for s in lenet-digits-onnxruntime lenet-digits-tflite; do "$CR" init solution "$s" && "$CR" benchmark solution "$s"; done
}
step native native

SUBSET=(tests/test_platform.py tests/test_platform_emulated.py tests/test_resolver.py tests/test_recipes.py tests/test_detect.py
        -q -p no:cacheprovider -k "not test_cli_detect_of_every_shipped_recipe_is_fast")
rc=0
{ step arm64-build "$ARM" arm64 build && step arm64-job "$ARM" arm64 job && step arm64-results "$ARM" arm64 results "$OUT/results/arm64" &&
  step arm64-tests "$ARM" arm64 tests "${SUBSET[@]}"; } || rc=1
# The arm64 OCI image of lenet-digits-onnxruntime from the lock the job above made: exported
# inside the arm64 root, then benchmarked unpacked under QEMU with no network (docs/containers.md).
# Costs 3.0-3.9 min on the shared 2-core machine (load ~3): export 1.7-1.9 min, the benchmark 1.4-1.9 min.
if [[ -d $OUT/results/arm64 ]] && "$(dirname "$CR")/python" -c 'import pytest' 2>/dev/null; then
  step arm64-image env REEFKIT_ARM64_IMAGE_LATER=0 "$(dirname "$CR")/python" -m pytest -q -p no:cacheprovider -m slow tests/test_export_image.py -k arm64 || rc=1
fi
{ step armhf-build "$ARM" armhf build && step armhf-job "$ARM" armhf job && step armhf-results "$ARM" armhf results "$OUT/results/armhf"; } || rc=1

# One dashboard of the three platforms; the ratios of the same solutions.
args=(--results "$OUT/native-home/results")
for a in arm64 armhf; do [[ -d $OUT/results/$a ]] && args+=(--results "$OUT/results/$a"); done
step dashboard env CR_HOME="$OUT/native-home" "$CR" dashboard build "${args[@]}" --out "$OUT/dashboard" || rc=1
"$(dirname "$CR")/python" benchmarks/bench_emulation.py --json "$OUT/ratios.json" "$OUT/native-home/results" "$OUT/results" | tee "$OUT/ratios.txt" || rc=1
echo "== ci-arm: times (also in $TIMES)"; cat "$TIMES"
echo "== ci-arm: dashboard $OUT/dashboard/index.html; exit $rc"
exit "$rc"
