#!/usr/bin/env bash
# The README's test command: installs what is missing, builds, and runs every suite:
#   unit (Catch2), man-page coverage, formatting, fuzz (libFuzzer, each parser for a
#   bounded time: tests/fuzz/run.sh), integration (rootless as a real unprivileged
#   user, and rootful), and the VM suites (fakegpu.ko in Debian's kernel).
# Closes with "mrun-tests: N passed, N failed, N skipped"; exits non-zero on any failure.
# Must run as root: it creates the test user and runs the rootful and VM suites.
#
#   sudo scripts/test.sh            # everything
#   MRUN_SUITES="unit integration" sudo -E scripts/test.sh   # a subset
set -uo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
if [ "$(id -u)" -ne 0 ]; then
  echo "test.sh: run as root (it creates the unprivileged test user and runs rootful and VM tests): sudo $0" >&2
  exit 2
fi

suites=${MRUN_SUITES:-unit man format fuzz integration vm}
export MRUN_BUILD_DIR=${MRUN_BUILD_DIR:-$repo/build}
export MRUN_RESULTS_DIR=${MRUN_RESULTS_DIR:-$MRUN_BUILD_DIR/test-results}

bash scripts/install-deps.sh || exit 2
scripts/build.sh || exit 2

rm -rf "$MRUN_RESULTS_DIR"
mkdir -p "$MRUN_RESULTS_DIR"
crashed=()
want() { [[ " $suites " == *" $1 "* ]]; }

# The README's two commands in order: scripts/demo.sh (as root) installs mrun and its
# setuid mrun-gpu-helper into /usr/local, then this script runs. Once, the tests' mrun
# found that installed helper and vm-gpu failed. So install here too, as
# demo.sh does, before the suites that start containers: they must use the build
# dir's binaries and pass with an install present. The TAP line makes a missing
# install (no setuid helper to trip over) a failure rather than a proof of nothing.
if want integration || want vm; then
  echo "=== meson install -C $MRUN_BUILD_DIR (as scripts/demo.sh does: /usr/local)"
  installed_helper=/usr/local/libexec/mrun/mrun-gpu-helper
  if meson install -C "$MRUN_BUILD_DIR" --quiet --strip &&
    [ -u "$installed_helper" ] && [ "$(stat -c %u "$installed_helper")" = 0 ] && [ -x /usr/local/bin/mrun ]; then
    echo "ok 1 - meson install put /usr/local/bin/mrun and a setuid-root $installed_helper before the suites" \
      >"$MRUN_RESULTS_DIR/installed-first.tap"
  else
    echo "not ok 1 - meson install put /usr/local/bin/mrun and a setuid-root $installed_helper before the suites" \
      >"$MRUN_RESULTS_DIR/installed-first.tap"
  fi
  echo "1..1" >>"$MRUN_RESULTS_DIR/installed-first.tap"
fi
# Runs one suite; a non-zero exit with no failure in its results still fails the run.
run_suite() {
  local name=$1; shift
  echo "=== $name"
  local start=$SECONDS
  "$@"
  local rc=$?
  echo "=== $name: exit $rc after $((SECONDS - start))s"
  [ $rc -eq 0 ] || crashed+=("$name(exit $rc)")
}

if want unit; then
  # one binary per folder of src/ (tests/unit/meson.build)
  for unit in "$MRUN_BUILD_DIR"/tests/unit/unit-*; do
    [[ -f $unit && -x $unit ]] || continue
    run_suite "${unit##*/}" "$unit" -r junit -o "$MRUN_RESULTS_DIR/${unit##*/}.xml"
  done
  # the strace reducer behind docs/COMPARE-RUNC.md, on committed real traces
  run_suite unit-tools /usr/bin/python3 -m pytest -q -p no:cacheprovider tests/tools \
    --junitxml="$MRUN_RESULTS_DIR/unit-tools.xml" -o junit_suite_name=unit-tools
  if [ -x "$MRUN_BUILD_DIR/tests/unit/gpu/unit-gpu" ]; then
    run_suite unit-gpu "$MRUN_BUILD_DIR/tests/unit/gpu/unit-gpu" -r junit -o "$MRUN_RESULTS_DIR/unit-gpu.xml"
  fi
fi
if want man; then
  run_suite man-options /usr/bin/python3 tests/man/check_options.py "$MRUN_BUILD_DIR/src/mrun" man "$MRUN_RESULTS_DIR/man-options.tap"
  # meson install strips what it installs (into a scratch DESTDIR)
  run_suite install bash tests/install/check_install.sh "$MRUN_BUILD_DIR" "$MRUN_RESULTS_DIR/install.tap"
fi
if want format; then
  run_suite format scripts/check-format.sh "$MRUN_RESULTS_DIR/format.tap"
  # and the layering rules the compiler cannot see (only src/sys mounts, setns, ...)
  run_suite layers scripts/check-layers.sh "$MRUN_RESULTS_DIR/layers.tap"
fi
if want fuzz; then
  # Its own clang build (build-fuzz), then each target for $MRUN_FUZZ_SECONDS (20).
  run_suite fuzz bash tests/fuzz/run.sh
fi
if want integration; then
  run_suite integration bash tests/integration/run.sh
  # A shareProcessNamespace pod through containerd's CRI under rootlesskit, as mrun-test.
  run_suite cri-rootless /usr/bin/python3 tests/cri/rootless_pod_test.py \
    --mrun "$MRUN_BUILD_DIR/src/mrun" --pause "$MRUN_BUILD_DIR/tests/probe/pause" \
    --tap "$MRUN_RESULTS_DIR/cri-rootless.tap"
  # The same kind of pod, rootful, on this host's cgroups (v1 or hybrid: the limits, the
  # update and the stats in the v1 hierarchies), runc beside mrun. Its own mount and
  # network namespace keep CNI's bridge and iptables rules off the host's network.
  run_suite cri-host unshare -m -n --propagation private sh -c 'ip link set lo up &&
    exec /usr/bin/python3 tests/cri/pod_test.py --mrun "$1" --pause "$2" --tap "$3" \
      --pods pod --workdir-base /tmp' cri-host "$MRUN_BUILD_DIR/src/mrun" \
    "$MRUN_BUILD_DIR/tests/probe/pause" "$MRUN_RESULTS_DIR/cri-host.tap"
fi
# copy_checkout DEST: this checkout's files (tracked and new, not ignored; without
# git, everything but the build dirs) into DEST.
copy_checkout() {
  if git -C "$repo" rev-parse --git-dir >/dev/null 2>&1; then
    git -C "$repo" ls-files -z --cached --others --exclude-standard |
      tar -C "$repo" --null --ignore-failed-read -T - -cf - | tar -C "$1" -xf -
  else
    tar -C "$repo" --exclude=./build --exclude=./build-fuzz -cf - . | tar -C "$1" -xf -
  fi
}
# The fakegpu VM suite again, from a copy of the checkout under /tmp. Such a checkout
# once failed every VM suite: the guest mounts its own tmpfs on
# /tmp, which hid the scripts the host named by absolute path. The copy gets the
# suite's programs from the build dir (not the whole build: seconds, not minutes)
# and builds fakegpu.ko itself; the fuzzer runs 5 s instead of 20 to keep this cheap.
# TAP: vm-fakegpu-tmp-checkout.tap; on failure the VM's logs stay in
# $MRUN_BUILD_DIR/vm-fakegpu-tmp-checkout.
fakegpu_from_tmp_checkout() {
  local ci rc f
  ci=$(mktemp -d /tmp/mrun-ci.XXXXXX) || return 2
  copy_checkout "$ci" || { rm -rf "$ci"; return 2; }
  mkdir -p "$ci/build/src/gpu" "$ci/build/tests/kmod"
  for f in "$MRUN_BUILD_DIR"/src/gpu/fakegpu-* "$MRUN_BUILD_DIR"/src/gpu/libfakegpu.so*; do
    [ -f "$f" ] && cp -P "$f" "$ci/build/src/gpu/"
  done
  for f in "$MRUN_BUILD_DIR"/tests/kmod/fakegpu-*; do
    [ -f "$f" ] && cp -P "$f" "$ci/build/tests/kmod/"
  done
  echo "fakegpu from a checkout under /tmp: $ci"
  (cd "$ci" && MRUN_BUILD_DIR=$ci/build MRUN_RESULTS_DIR=$ci/results bash tests/vm/fakegpu-suite.sh --fuzz-seconds 5)
  rc=$?
  if [ -f "$ci/results/vm-fakegpu.tap" ]; then
    cp "$ci/results/vm-fakegpu.tap" "$MRUN_RESULTS_DIR/vm-fakegpu-tmp-checkout.tap"
  else
    printf 'not ok 1 - the fakegpu VM suite from a checkout under /tmp wrote its TAP (exit %d)\n1..1\n' "$rc" \
      >"$MRUN_RESULTS_DIR/vm-fakegpu-tmp-checkout.tap"
  fi
  if [ $rc -ne 0 ]; then
    rm -rf "$MRUN_BUILD_DIR/vm-fakegpu-tmp-checkout"
    cp -a "$ci/build/vm-fakegpu" "$MRUN_BUILD_DIR/vm-fakegpu-tmp-checkout" 2>/dev/null
  fi
  rm -rf --one-file-system "$ci"
  return $rc
}

if want vm; then
  for suite in tests/vm/selftest.sh tests/vm/fakegpu-suite.sh tests/vm/cgroup-suite.sh tests/vm/containerd-suite.sh tests/vm/cri-suite.sh tests/vm/docker-suite.sh tests/vm/integration-suite.sh tests/vm/gpu-suite.sh tests/vm/gpu-matrix-suite.sh; do
    [ -x "$suite" ] || [ -f "$suite" ] || continue
    run_suite "$(basename "$suite" .sh)" bash "$suite"
  done
  run_suite fakegpu-tmp-checkout fakegpu_from_tmp_checkout
fi

# A crashed suite whose results were written still shows its failures there; count
# the crash itself only when it left no failing test behind.
extra=()
for c in "${crashed[@]+"${crashed[@]}"}"; do extra+=("$c"); done
/usr/bin/python3 scripts/summarize-results.py "$MRUN_RESULTS_DIR" "${extra[@]+"${extra[@]}"}"
