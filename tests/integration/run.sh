#!/usr/bin/env bash
# Runs the mrun integration suite twice: rootless as the unprivileged user
# mrun-test and rootful as root. Called as root by scripts/test.sh after the
# build.
#
#   MRUN_BUILD_DIR    build dir holding src/mrun and tests/probe/mrun-probe (default: build)
#   MRUN_RESULTS_DIR  where the JUnit XML goes (default: build/test-results):
#                     integration-rootless.xml, integration-rootful.xml
#   MRUN_IT_USER      the unprivileged user (default: mrun-test)
#   MRUN_IT_MODES     "rootless rootful" (default), or one of them
#   MRUN_IT_OVERLAY   native or fuse: the overlay of every `mrun run` that names
#                     none (default: mrun's own choice); tests/vm/integration-suite.sh
#   MRUN_IT_TEST_TIMEOUT  seconds one test may take (default 120)
#   extra arguments   passed to pytest (e.g. -k tty, -x)
#
# The clone may sit where the unprivileged user cannot enter (/root/...), so
# the binaries and the suite are staged into a fresh world-readable dir under
# /var/tmp, removed at the end. Exits non-zero if either run failed.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
cd "$repo"

build=${MRUN_BUILD_DIR:-build}
results=${MRUN_RESULTS_DIR:-build/test-results}
user=${MRUN_IT_USER:-mrun-test}
modes=${MRUN_IT_MODES:-rootless rootful}
case $build in /*) ;; *) build=$repo/$build ;; esac
case $results in /*) ;; *) results=$repo/$results ;; esac

say() { echo "integration: $*"; }
die() { echo "integration: $*" >&2; exit 2; }

[ "$(id -u)" -eq 0 ] || die "run me as root (I create $user and run the suite as it and as root)"
[ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import pytest' 2>/dev/null ||
  die "python3-pytest is missing: run scripts/install-deps.sh"
mrun_bin=$build/src/mrun
probe_bin=$build/tests/probe/mrun-probe
[ -x "$mrun_bin" ] || die "$mrun_bin not built: meson setup build && meson compile -C build"
[ -x "$probe_bin" ] || die "$probe_bin not built (tests/meson.build needs subdir('probe'))"

bash "$repo/tests/setup-user.sh" "$user" || die "tests/setup-user.sh failed"

stage=$(mktemp -d /var/tmp/mrun-it.XXXXXX) || die "cannot make a stage dir under /var/tmp"
cleanup() {
  # Never follow a mount a buggy run may have left: --one-file-system.
  grep -q " $stage" /proc/self/mountinfo &&
    echo "integration: WARNING: mounts left under $stage:" >&2 &&
    grep " $stage" /proc/self/mountinfo >&2
  rm -rf --one-file-system "$stage"
}
trap cleanup EXIT
chmod 0755 "$stage"
mkdir -p "$stage/bin" "$stage/out"
install -m 0755 "$mrun_bin" "$probe_bin" "$stage/bin/"
# hog: test_cgroups.py, where the host has cgroup v2 controllers.
[ -x "$build/tests/probe/hog" ] && install -m 0755 "$build/tests/probe/hog" "$stage/bin/"
# mrun-gpu-helper: test_devices.py makes a setuid copy of it in a root-owned dir.
[ -x "$build/helpers/mrun-gpu-helper" ] && install -m 0755 "$build/helpers/mrun-gpu-helper" "$stage/bin/"
cp -r "$here" "$stage/integration"
# test_readme.py runs the README's walk-throughs as written.
cp "$repo/README.md" "$stage/README.md"
# policy/ for test_isolation.py (mrun itself uses the copy compiled into it).
cp -r "$repo/policy" "$stage/policy"
rm -rf "$stage/integration/__pycache__"
chmod -R a+rX "$stage/bin" "$stage/integration" "$stage/policy" "$stage/README.md"
mkdir -p "$results"

path=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
common=(-p no:cacheprovider -q -rfEs --tb=short)
# The suite's own knobs travel through env -i.
knobs=()
for knob in MRUN_IT_OVERLAY MRUN_IT_TEST_TIMEOUT; do
  [ -n "${!knob:-}" ] && knobs+=("$knob=${!knob}")
done
status=0

run_mode() {
  local mode=$1; shift
  local basetemp=$stage/tmp-$mode out=$stage/out/integration-$mode.xml rc
  if [ "$mode" = rootless ]; then
    install -d -m 0755 -o "$user" "$stage/tmp-$mode"
    chown "$user" "$stage/out"
    local home
    home=$(getent passwd "$user" | cut -d: -f6)
    # XDG_RUNTIME_DIR is left unset, as in CI: mrun must use /tmp/mrun-<uid>
    # (the suite itself also runs a case with it set).
    (cd "$stage" && runuser -u "$user" -- env -i HOME="$home" PATH="$path" LANG=C.UTF-8 \
      MRUN="$stage/bin/mrun" MRUN_PROBE="$stage/bin/mrun-probe" MRUN_IT_POLICY_DIR="$stage/policy" "${knobs[@]+"${knobs[@]}"}" \
      /usr/bin/python3 -m pytest "${common[@]}" --basetemp="$basetemp/pytest" \
      --junitxml="$out" -o junit_suite_name=integration-rootless "$stage/integration" "$@")
    rc=$?
  else
    install -d -m 0755 "$stage/tmp-$mode"
    (cd "$stage" && env -i HOME=/root PATH="$path" LANG=C.UTF-8 \
      MRUN="$stage/bin/mrun" MRUN_PROBE="$stage/bin/mrun-probe" MRUN_IT_POLICY_DIR="$stage/policy" "${knobs[@]+"${knobs[@]}"}" \
      /usr/bin/python3 -m pytest "${common[@]}" --basetemp="$basetemp/pytest" \
      --junitxml="$out" -o junit_suite_name=integration-rootful "$stage/integration" "$@")
    rc=$?
  fi
  [ -f "$out" ] && cp "$out" "$results/integration-$mode.xml"
  say "$mode: pytest exit $rc"
  [ $rc -eq 0 ] || status=1
}

for mode in $modes; do
  case $mode in
    rootless|rootful) run_mode "$mode" "$@" ;;
    *) die "unknown mode $mode in MRUN_IT_MODES (rootless, rootful)" ;;
  esac
done
exit $status
